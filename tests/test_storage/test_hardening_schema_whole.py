"""A store's schema is what polydom wrote, or it is refused (issue 35, item 1).

Each attack alters an object the earlier check (object kinds, triggers, virtual tables)
let through: a view redefined with a recursive CTE (``builds list`` hung), a view that
invents rows, ``schema_info`` rebuilt with a generated column (a huge ``printf`` computed
on every read), an expression index on ``served_timings`` (computed on every insert).  Each
runs in a subprocess with a time limit and its peak memory is read: on the old code they
hung, printed invented rows, or took 13-47 s and 436 MB; now each is refused in one line,
fast, before any statement reads a view, and reading writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

import polydom
import storage
from polydom.errors import ForeignDatabaseError
from tests.storage_support import ROOT, execute_sql

ATOMS = {"a": "1", "b": "n"}
LIMIT_S = 30  # a hang is a failure, not a stuck suite
#: The worker's own peak RSS (``VmHWM`` is per address space, so it starts afresh at exec,
#: unlike ``ru_maxrss``, which a forked child inherits from the test process).
_PEAK = ("print('peak_rss_kb', [line.split()[1] for line in open('/proc/self/status') "
         "if line.startswith('VmHWM')][0], file=sys.stderr)")
_WORKER = (
    "import sys\n"
    "from polydom.app.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    f"{_PEAK}\n"
    "sys.exit(rc)\n"
)
_STORE_WORKER = (
    "import sys\n"
    "import polydom\n"
    "from polydom.errors import PolydomError\n"
    "try:\n"
    "    polydom.store_timings(sys.argv[1], [('a', 1.0, 0.001)] * 40)\n"
    "    rc = 0\n"
    "except PolydomError as exc:\n"
    "    print(f'refused: {exc}', file=sys.stderr)\n"
    "    rc = 2\n"
    f"{_PEAK}\n"
    "sys.exit(rc)\n"
)


def _publish(url: str) -> str:
    cands = [polydom.Candidate("a", 0.5, "1", frozenset({"a"})),
             polydom.Candidate("b", 0.7, "n", frozenset({"b"}))]
    with storage.IndexStore(url) as st:
        build = st.begin_build({}, ATOMS)
        index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), ATOMS,
                              info={"cost_unit": "s"})
        st.publish(build, index)
    return url


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "index.db"
    _publish(f"sqlite:///{path}")
    return path


def _run(script: str, *args: str) -> tuple[int, str, str, float]:
    """Run ``script`` with ``args`` in a fresh interpreter under :data:`LIMIT_S`; return its
    exit status, stdout, stderr (without the memory line) and peak RSS in MB."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                              text=True, timeout=LIMIT_S, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} ran past {LIMIT_S} s (a hang)")
    lines = done.stderr.splitlines()
    peak = [float(line.split()[1]) / 1024 for line in lines if line.startswith("peak_rss_kb")]
    err = "\n".join(line for line in lines if not line.startswith("peak_rss_kb"))
    return done.returncode, done.stdout, err, (peak[0] if peak else float("nan"))


def _refused_in_one_line(rc: int, out: str, err: str, peak_mb: float) -> str:
    assert rc == 2, (rc, out[:300], err[-600:])
    assert out == "" and err.count("\n") == 0 and "altered outside polydom" in err, err
    assert peak_mb < 300, f"peak RSS {peak_mb:.0f} MB"  # the generated column took 436 MB
    return err


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sqlite(path, *statements: str) -> str:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    return _digest(path)


def _view_sql(path, name: str) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]


_RECURSIVE = """CREATE VIEW build_summary AS
WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)
SELECT x AS build_id, 'complete' AS status, 1 AS is_current, 1.0 AS alpha, 0.0 AS delta,
       'lattice' AS learner, 0.0 AS n_min, 10.0 AS n_max, '' AS created_at,
       '' AS completed_at, 0 AS n_features, 0 AS n_bundles, 0 AS n_expansions,
       0 AS n_candidates, 0 AS n_ranges, 0 AS n_entries FROM r"""


@pytest.mark.parametrize("verb", [["builds", "list"], ["inspect"]])
def test_a_build_summary_with_a_recursive_cte_is_refused_not_run(store, verb):
    digest = _sqlite(store, "DROP VIEW build_summary", _RECURSIVE)
    got = _run(_WORKER, *verb, str(store))
    assert "view 'build_summary' other than polydom writes it" in _refused_in_one_line(*got)
    assert _digest(store) == digest  # reading wrote nothing


def test_a_redefined_view_that_invents_rows_is_refused(store):
    forged = _view_sql(store, "build_summary").replace(
        "b.status AS status", "'failed' AS status").replace(
        "b.learner AS learner", "'made-up' AS learner")
    _sqlite(store, "DROP VIEW build_summary", forged)
    rc, out, err, peak = _run(_WORKER, "builds", "list", str(store), "--json")
    assert "made-up" not in out
    assert "view 'build_summary'" in _refused_in_one_line(rc, out, err, peak)


def test_schema_info_with_a_generated_column_is_refused_before_it_is_read(store):
    _sqlite(store, "ALTER TABLE schema_info RENAME TO schema_info_old",
            'CREATE TABLE schema_info ("key" VARCHAR(64) NOT NULL, value VARCHAR(256) NOT NULL,'
            " pad TEXT GENERATED ALWAYS AS (printf('%.*c', 40000000, 'x')) VIRTUAL,"
            ' PRIMARY KEY ("key"))',
            "INSERT INTO schema_info (key, value) SELECT key, value FROM schema_info_old",
            "DROP TABLE schema_info_old")
    got = _run(_WORKER, "lookup", str(store), "--size", "5", "--budget", "20")
    assert "table 'schema_info' other than polydom writes it" in _refused_in_one_line(*got)


def test_an_expression_index_on_served_timings_is_refused_before_any_insert(store):
    _sqlite(store, "CREATE INDEX slow ON served_timings "
                   "(length(printf('%.*c', 50000000, 'x')))")
    rc, out, err, peak = _run(_STORE_WORKER, f"sqlite:///{store}")
    assert rc == 2 and "index 'slow' on polydom's table 'served_timings'" in err, err
    assert peak < 300
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM served_timings").fetchone()[0] == 0


@pytest.mark.parametrize("statement, named", [
    ("ALTER TABLE builds ADD COLUMN extra TEXT", "table 'builds' other than polydom"),
    ("CREATE TABLE notes (body TEXT)", "table 'notes', which polydom never writes"),
    ("CREATE VIEW notes AS SELECT 1 AS x", "view 'notes', which polydom never writes"),
    ("DROP VIEW skyline", "no view 'skyline'"),
    ("DROP INDEX ix_ranges_build_n_lo", "no index 'ix_ranges_build_n_lo'"),
    ("CREATE INDEX ix_extra ON builds (status)", "index 'ix_extra' on polydom's table"),
    ("ANALYZE", "which polydom never writes"),
])
def test_any_other_change_to_the_schema_is_refused_naming_it(store, statement, named):
    digest = _sqlite(store, statement)
    with pytest.raises(ForeignDatabaseError, match="altered outside polydom") as caught:
        polydom.list_builds(f"sqlite:///{store}")
    assert named in str(caught.value) and "\n" not in str(caught.value)
    assert _digest(store) == digest


def test_a_store_of_another_programs_database_keeps_that_programs_objects(tmp_path):
    path = tmp_path / "shared.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
        conn.execute("CREATE VIEW names AS SELECT name FROM people")
    with storage.IndexStore(f"sqlite:///{path}", allow_foreign=True) as st:
        build = st.begin_build({}, ATOMS)
        cands = [polydom.Candidate("a", 0.5, "1", frozenset({"a"}))]
        st.publish(build, polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), ATOMS))
    _sqlite(path, "CREATE INDEX people_name ON people (name)")
    assert polydom.open_index(path).lookup(5.0, 20.0).name == "a"
    _sqlite(path, "CREATE INDEX spy ON candidates (length(key))")  # ours stay ours
    with pytest.raises(ForeignDatabaseError, match="index 'spy' on polydom's table"):
        polydom.open_index(path)


def test_an_untouched_store_and_the_older_versions_open(store, tmp_path):
    assert polydom.open_index(store).lookup(5.0, 20.0).name == "b"
    for version in (1, 2):  # copies: a WAL store read in place gets -wal/-shm beside it
        fixture = tmp_path / f"schema_v{version}.db"
        shutil.copyfile(ROOT / "tests" / "test_storage" / "data" / fixture.name, fixture)
        assert polydom.list_builds(fixture)


# --------------------------------------------------------------------------- PostgreSQL
def _pg_refused(url: str, named: str) -> None:
    with pytest.raises(ForeignDatabaseError, match="altered outside polydom") as caught:
        polydom.list_builds(url)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def _pg_view(url: str, name: str) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(f"SELECT pg_get_viewdef('{name}'::regclass)").scalar()
    finally:
        engine.dispose()


def test_postgresql_a_view_that_invents_rows_is_refused(pg_url):
    _publish(pg_url)
    assert json.dumps(polydom.list_builds(pg_url), default=str)
    forged = _pg_view(pg_url, "build_summary").rstrip().rstrip(";")
    execute_sql(pg_url, f"CREATE OR REPLACE VIEW build_summary AS {forged} UNION ALL "
                        f"SELECT * FROM ({forged}) AS f")
    _pg_refused(pg_url, "view 'build_summary' other than polydom writes it")


def test_postgresql_an_expression_index_on_served_timings_is_refused(pg_url):
    _publish(pg_url)
    execute_sql(pg_url, "CREATE INDEX slow ON served_timings ((length(repeat('x', 1000))))")
    _pg_refused(pg_url, "index 'slow' on polydom's table 'served_timings'")


def test_postgresql_schema_info_with_a_generated_column_is_refused(pg_url):
    _publish(pg_url)
    execute_sql(pg_url, "ALTER TABLE schema_info ADD COLUMN pad TEXT "
                        "GENERATED ALWAYS AS (repeat(value, 1000)) STORED")
    _pg_refused(pg_url, "table 'schema_info' other than polydom writes it")


def test_postgresql_a_function_shadowing_one_the_views_call_is_refused(pg_url):
    _publish(pg_url)
    execute_sql(pg_url,  # our own view text, now calling the shadow (an exact match)
                "CREATE FUNCTION public.power(double precision, integer) RETURNS double "
                "precision AS 'SELECT 0.0::double precision' LANGUAGE sql",
                f"CREATE OR REPLACE VIEW skyline_all AS {storage.schema.VIEWS['skyline_all']}")
    _pg_refused(pg_url, "view 'skyline_all' other than polydom writes it")


@pytest.mark.parametrize("statement, named", [
    ("CREATE TRIGGER spy BEFORE INSERT ON builds FOR EACH ROW EXECUTE FUNCTION "
     "suppress_redundant_updates_trigger()", "table 'builds' other than polydom"),
    ("ALTER TABLE candidates ALTER COLUMN learner SET DEFAULT md5('x')",
     "table 'candidates' other than polydom"),
    ("CREATE TABLE more_builds () INHERITS (builds)", "table 'builds' other than polydom"),
    ("ALTER TABLE builds ENABLE ROW LEVEL SECURITY", "table 'builds' other than polydom"),
])
def test_postgresql_any_other_change_to_our_tables_is_refused(pg_url, statement, named):
    _publish(pg_url)
    execute_sql(pg_url, statement)
    _pg_refused(pg_url, named)
