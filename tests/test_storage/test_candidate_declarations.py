"""A stored candidate stated once: every field of :data:`storage.candidate_fields.
CANDIDATE_FIELDS` is written, read back through both read paths (index arrays and rows),
sealed and shown in the views as it declares, on a store of this version and on the
stores of schema versions 1 and 2; a field added in one place shows in the rows, the
arrays, the seal and the views."""

from __future__ import annotations

import shutil
import sqlite3
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

import polydom
import storage
from polydom.errors import InvalidArgumentError
from storage import schema as S
from storage.candidate_fields import (
    CANDIDATE_FIELDS,
    CandidateField,
    fields_of,
    sealed_fields,
)
from tests.storage_support import run_isolated

DATA = Path(__file__).parent / "data"
ATOMS = {"a": "1 + n", "b": "2", "c": "0.5*n**2"}
#: The candidate attribute each reader feed gives back.
ATTRIBUTE = {"keys": "key", "accuracies": "accuracy", "accuracy_ses": "accuracy_se",
             "fold_scores": "fold_scores", "features": "features", "learners": "learner"}


def _candidates() -> list[polydom.Candidate]:
    keys = [("a",), ("c", "a"), "cegb[0.5]", ("b", "c"), 7, frozenset({"p", "q"})]
    return [polydom.Candidate(key, 0.5 + 0.07 * i, [1.0 + i, 0.1 * i, 0.001 * (i % 3)],
                              {"a", "c"} if i % 2 else {"b"}, learner=["lattice", None][i % 2],
                              accuracy_se=0.01 * i, fold_scores=(0.5, 0.15 * i))
            for i, key in enumerate(keys)]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("decl") / "s.db"
    table = polydom.PolyDomIndex.build(_candidates(), 0.0, 50.0)
    with storage.IndexStore(f"sqlite:///{path}") as st:
        build_id = st.begin_build({"alpha": 1.0}, ATOMS)
        st.publish(build_id, polydom.Index(table, ATOMS, info={"alpha": 1.0}))
    return path


def _columns(path: Path, table: str) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_every_declared_feed_reads_back_the_same_through_both_read_paths(store, tmp_path):
    want = sorted(_candidates(), key=repr)
    rows_only = tmp_path / "rows.db"
    rows_only.write_bytes(store.read_bytes())
    with closing(sqlite3.connect(rows_only)) as conn, conn:
        conn.execute("DELETE FROM build_arrays")
    from_arrays = polydom.open_index(store)
    from_rows = polydom.open_index(rows_only)
    assert from_arrays.info["read_from"] == "arrays" and from_rows.info["read_from"] == "rows"
    feeds = {f.feeds for f in CANDIDATE_FIELDS if f.feeds in ATTRIBUTE}
    assert feeds == set(ATTRIBUTE)  # every candidate feed is declared by a field
    for index in (from_arrays, from_rows):
        got = {repr(c.key): c for c in index.candidates}
        for c in want:
            for attribute in ATTRIBUTE.values():
                assert getattr(got[repr(c.key)], attribute) == getattr(c, attribute), attribute


def test_the_views_show_what_the_fields_declare(store):
    shown = [f for f in CANDIDATE_FIELDS if f.view is not None]
    with closing(sqlite3.connect(store)) as conn:
        conn.row_factory = sqlite3.Row
        view = {r["candidate_id"]: r for r in conn.execute("SELECT * FROM skyline")}
        rows = {r["candidate_id"]: r for r in conn.execute(
            "SELECT c.*, x.model_format AS x_format FROM candidates c "
            "LEFT JOIN expansions x ON x.id = c.expansion_id")}
    assert view
    for cid, entry in view.items():
        for f in shown:
            stored = rows[cid][f.name]
            if f.view.expression:  # model_format: the candidate's own or its expansion's
                stored = stored if stored is not None else rows[cid]["x_format"]
            assert entry[f.view.name] == stored


@pytest.mark.parametrize("version", [1, 2])
def test_older_stores_have_the_fields_their_version_declares(version, tmp_path):
    path = tmp_path / f"schema_v{version}.db"  # a copy: a WAL store read in place gets -shm
    shutil.copyfile(DATA / f"schema_v{version}.db", path)
    assert [c for c in _columns(path, "candidates") if c not in ("build_id", "candidate_id")
            ] == [f.name for f in fields_of(version)]
    view = S.skyline_all_sql(version)
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        fixture = [d[0] for d in conn.execute("SELECT * FROM skyline_all LIMIT 0").description]
        generated_columns = [d[0] for d in conn.execute(
            f"SELECT * FROM ({view}) LIMIT 0").description]
    assert generated_columns == fixture
    index = polydom.open_index(f"sqlite:///{path}?mode=ro")
    assert all(c.accuracy_se == 0.0 and c.fold_scores == () for c in index.candidates)
    if version == 1:
        assert all(c.learner is None for c in index.candidates)


def test_a_field_states_its_versions():
    later = CandidateField("later", S.sa.Double, lambda s: 1.0, "float", since_version=4)
    dropped = CandidateField("dropped", S.sa.Text, lambda s: "", "text", until_version=2)
    assert not later.stored_in(3) and later.stored_in(4)
    assert dropped.stored_in(1) and dropped.stored_in(2) and not dropped.stored_in(3)
    with pytest.raises(InvalidArgumentError, match="until_version 1"):
        CandidateField("x", S.sa.Text, lambda s: "", since_version=2, until_version=1)
    assert {f.name for f in sealed_fields(2)} < {f.name for f in sealed_fields(3)}


def test_a_field_added_in_one_place_shows_in_rows_arrays_seal_and_views(tmp_path):
    """One new entry in CANDIDATE_FIELDS (in a fresh interpreter; the schema module is made
    again from it, as a new version of the code would): publish writes it, the arrays and
    the seal cover it, the views show it, and an edit of it in SQL is refused."""
    code = textwrap.dedent(f"""
        import importlib, sqlite3
        import sqlalchemy as sa
        import storage.candidate_fields as F
        F.CANDIDATE_FIELDS = (*F.CANDIDATE_FIELDS, F.CandidateField(
            "doubled", sa.Double, lambda s: 2 * float(s.candidate.accuracy), "float",
            nullable=False, view=F.ViewColumn("doubled", 9)))
        importlib.reload(importlib.import_module("storage.schema"))
        import polydom, storage
        from storage import index_arrays
        path = {str(tmp_path / "new.db")!r}
        cands = [polydom.Candidate(f"c{{i}}", 0.5 + 0.1 * i, [1.0 + i], {{"a"}}) for i in range(3)]
        table = polydom.PolyDomIndex.build(cands, 0.0, 10.0)
        with storage.IndexStore(path) as st:
            b = st.begin_build({{"alpha": 1.0}}, {{"a": "1"}})
            st.publish(b, polydom.Index(table, {{"a": "1"}}))
        conn = sqlite3.connect(path)
        rows = conn.execute("SELECT key, doubled FROM candidates ORDER BY candidate_id").fetchall()
        assert rows == [("c0", 1.0), ("c1", 1.2), ("c2", 1.4)], rows
        view = conn.execute("SELECT candidate, doubled FROM skyline ORDER BY rank").fetchall()
        assert sorted(view) == [("c0", 1.0), ("c1", 1.2), ("c2", 1.4)], view
        blob = conn.execute("SELECT blob FROM build_arrays").fetchone()[0]
        arrays = index_arrays.decode(blob, b, ["a"], F.sealed_fields(3))
        assert arrays.columns["doubled"] == [1.0, 1.2, 1.4], arrays.columns
        polydom.open_index(path)
        with conn:
            conn.execute("UPDATE candidates SET doubled = 9.0 WHERE candidate_id = 1")
        for rows_only in (False, True):
            if rows_only:
                with conn:
                    conn.execute("DELETE FROM build_arrays")
            try:
                polydom.open_index(path)
            except storage.IndexIntegrityError as exc:
                print("refused:", exc)
            else:
                raise SystemExit("an edited new field was not refused")
    """)
    done = run_isolated(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("refused:") == 2
