"""`polydom browse` against a crafted store and a hostile browser user (issue 31): no native
pointers (``fts3_tokenizer``), no store with virtual tables, bounded results and memory, the
store's texts escaped in every page, bounded start-up work.

One browse server (module scope) serves a crafted store: its cost unit is a script.  A store
holding a view calling ``fts3_tokenizer`` is not served at all (its schema is not polydom's,
issue 35).  The crash is shown in subprocesses: the same two statements that segfault a
plain connection are refused on a guarded one.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the serve extra (datasette) is not installed")
pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
pytest.importorskip("matplotlib", reason="matplotlib is not installed")

import polydom  # noqa: E402
from polydom.app.commands.browse import check_store_text  # noqa: E402
from polydom.errors import InvalidArgumentError  # noqa: E402
from storage import IndexStore  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests import storage_support as S  # noqa: E402

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>alert(1)</script>"
#: The crafted store's unit: a script, then matplotlib mathematics that does not parse.
UNIT = SCRIPT + r" $\frac{$"


def _publish(path: Path, unit: str) -> Path:
    """A store of one build of model-less random candidates whose cost unit is ``unit``."""
    index = S.index_of(S.random_candidates(12, seed=3), {"alpha": 1.0, "cost_unit": unit})
    with IndexStore(f"sqlite:///{path}") as store:
        build_id = store.begin_build(S.BUILD_PARAMS, S.COSTS, S.GROUPS)
        store.publish(build_id, index)
    return path


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _server_pid(store: Path) -> int:
    """The process id of the `polydom browse` serving ``store``."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"browse" in command and str(store).encode() in command:
                return int(entry.name)
    raise AssertionError(f"no browse process serves {store}")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """A live browse of a crafted store: its unit is a script and broken mathematics (the
    plots are drawn at start: they draw it as text)."""
    store = _publish(tmp_path_factory.mktemp("crafted") / "crafted.db", UNIT)
    with V.live_server(str(store), verb="browse") as address:
        with httpx.Client(timeout=120) as client:
            yield address, client, store


def _query(client, address: str, sql: str):
    return client.get(f"{address}.json", params={"sql": sql, "_shape": "array"})


def test_no_sql_function_hands_out_or_takes_a_pointer(crafted):
    address, client, _ = crafted
    for sql in ("select fts3_tokenizer('simple') as p",
                "select fts3_tokenizer('simple', x'4141414141414141') as p",
                "select FTS3_Tokenizer('porter') as p",
                "select fts5(NULL) as p",
                "select load_extension('/tmp/x.so') as p"):
        got = _query(client, address, sql)
        assert got.status_code == 400, (sql, got.status_code, got.text[:300])
        assert "not authorized" in got.text, sql
    # no other database of the server takes SQL from a browser (Datasette's own is root's)
    root = address.rsplit("/", 1)[0]
    for other, status in (("_internal", 403), ("_memory", 404)):
        got = client.get(f"{root}/{other}.json", params={"sql": "select fts3_tokenizer('simple')"})
        assert got.status_code == status, (other, got.text[:300])
    # the server lives on and still answers a plain query
    assert _query(client, address, "select count(*) as n from builds").json() == [{"n": 1}]


#: Requests of a few dozen bytes that would each make hundreds of MB to GB of answer.
AMPLIFIERS = [
    "select zeroblob(100000000) as b",
    "select randomblob(100000000) as b",
    "select replace(printf('%.*c', 10000, 'x'), 'x', printf('%.*c', 10000, 'y')) as t",
    "select group_concat(printf('%.*c', 1000000, 'x')) as t "
    "from candidates a, candidates b, candidates c",
    "with recursive r(x) as (select 1 union all select x + 1 from r) select count(*) from r",
    "select printf('%.*c', 15000000, 'x') as a, printf('%.*c', 15000000, 'y') as b "
    "from candidates a, candidates b, candidates c",
]


def test_large_answers_are_refused_and_memory_stays_bounded(crafted):
    address, client, store = crafted
    pid = _server_pid(store)
    before = _peak_rss_mb(pid)
    for sql in AMPLIFIERS:
        got = _query(client, address, sql)
        assert got.status_code == 400, (sql, got.status_code, len(got.content))
        assert len(got.content) < 2**20, sql
    # a value just under the bound is served
    fits = _query(client, address, "select length(printf('%.*c', 1000000, 'x')) as n")
    assert fits.json() == [{"n": 1000000}]
    assert _peak_rss_mb(pid) - before < 300, (before, _peak_rss_mb(pid))


def test_the_stores_texts_are_escaped_in_every_page(crafted):
    address, client, _ = crafted
    root = address.rsplit("/", 1)[0]
    pages = [root + "/", address, f"{address}/builds", f"{address}/build_summary",
             f"{address}/skyline", f"{address}/skyline_at_size?n=5",
             f"{address}/candidates_by_learner?learner="]
    for url in pages:
        got = client.get(url)
        assert got.status_code == 200, url
        assert SCRIPT not in got.text, url
    # the unit is shown, escaped
    assert "costs in &lt;script&gt;alert(1)&lt;/script&gt; $\\frac{$." in client.get(address).text
    plot = client.get(f"{root}/plots/serving_map.png")
    assert plot.status_code == 200 and plot.content[:4] == b"\x89PNG"


def test_a_huge_feature_or_learner_name_is_refused_before_drawing():
    long = "f" * 300
    for candidate in (polydom.Candidate(long, 0.9, polydom.CostCurve([1.0]),
                                        frozenset({long})),
                      polydom.Candidate("a", 0.9, polydom.CostCurve([1.0]), frozenset({"a"}),
                                        learner=long)):
        feature = next(iter(candidate.features))
        index = polydom.Index(polydom.PolyDomIndex.build([candidate], 0.0, 10.0),
                              {feature: polydom.CostCurve([1.0])}, {feature: [0]},
                              {"alpha": 1.0})
        with pytest.raises(InvalidArgumentError, match="name of 300 bytes"):
            check_store_text(index, "ms")
    with pytest.raises(InvalidArgumentError, match="cost unit .* of 65 bytes"):
        check_store_text(index, "u" * 65)
    with pytest.raises(InvalidArgumentError, match="cost unit .* of 68 bytes"):
        check_store_text(index, "\U0001F600" * 17)  # 17 characters, 68 bytes of UTF-8


def _browse(store: Path, timeout: float) -> subprocess.CompletedProcess:
    """`polydom browse STORE --port 0`, expected to refuse (exit 2) before serving."""
    return subprocess.run(
        [sys.executable, "-m", "polydom.app.cli", "browse", str(store), "--port", "0"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=timeout)


def test_a_store_with_a_view_that_hands_out_a_pointer_is_not_served(tmp_path):
    store = _publish(tmp_path / "leak.db", "ms")
    _sql(store, "CREATE VIEW leak AS SELECT fts3_tokenizer('simple') AS pointer")
    done = _browse(store, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "view 'leak'" in done.stderr


def test_a_store_with_a_virtual_table_is_not_served(tmp_path):
    store = _publish(tmp_path / "fts.db", "ms")
    _sql(store, "CREATE VIRTUAL TABLE notes USING fts3(text)",
         "INSERT INTO notes VALUES ('hello world')")
    done = _browse(store, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "notes (USING fts3)" in done.stderr


def test_a_huge_unit_is_refused_before_drawing(tmp_path):
    store = _publish(tmp_path / "long.db", "x" * 100_000)
    start = time.perf_counter()
    done = _browse(store, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "cost unit" in done.stderr
    assert "100000 bytes" in done.stderr
    assert time.perf_counter() - start < 30


_ATTACK = textwrap.dedent("""
    import sqlite3, sys
    from polydom.app.browse_guard import guard_connection, read_schema
    path = sys.argv[1]
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    if sys.argv[2] == "guarded":
        guard_connection(conn, read_schema(path)[0] | {"notes"})
    refused = 0
    for sql in ("select fts3_tokenizer('simple', x'4141414141414141')",
                "select * from notes where notes match 'hello'"):
        try:
            conn.execute(sql).fetchall()
        except sqlite3.DatabaseError as error:
            refused += 1
            print(error)
    print("refused", refused)
""")


def test_the_pointer_attack_segfaults_a_plain_connection_not_a_guarded_one(tmp_path):
    store = tmp_path / "fts.db"
    _sql(store, "CREATE VIRTUAL TABLE notes USING fts3(text)",
         "INSERT INTO notes VALUES ('hello world')")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {how: subprocess.run([sys.executable, "-c", _ATTACK, str(store), how], env=env,
                                capture_output=True, text=True, timeout=60)
            for how in ("plain", "guarded")}
    assert runs["plain"].returncode < 0, runs["plain"]  # killed by a signal: the attack is real
    guarded = runs["guarded"]
    assert guarded.returncode == 0, guarded.stderr[-2000:]
    assert "refused 2" in guarded.stdout and "not authorized" in guarded.stdout

