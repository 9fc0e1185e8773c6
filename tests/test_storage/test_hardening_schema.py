"""A SQLite store whose schema was altered outside polydom is refused at open (issue 31):
a virtual table (full-text tables carry ``fts3_tokenizer``, which hands out and takes
native pointers), a trigger, or one of our tables replaced by a view (which would run the
store's own SQL on every read).  The refusal is one line, and reading writes nothing."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

import polydom
import storage
import storage.database
from polydom.errors import ForeignDatabaseError, PolydomError

ATOMS = {"a": "1", "b": "n"}


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "index.db"
    cands = [polydom.Candidate("a", 0.5, "1", frozenset({"a"})),
             polydom.Candidate("b", 0.7, "n", frozenset({"b"}))]
    with storage.IndexStore(f"sqlite:///{path}") as st:
        build = st.begin_build({}, ATOMS)
        st.publish(build, polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), ATOMS))
    return path


def _alter(path, *statements: str) -> str:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _columns(path, table: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _refused(path) -> str:
    with pytest.raises(ForeignDatabaseError) as caught:
        polydom.open_index(f"sqlite:///{path}").lookup(5.0, 20.0)
    message = str(caught.value)
    assert "\n" not in message and "altered outside polydom" in message
    return message


def test_a_view_in_a_tables_place_that_calls_fts3_tokenizer_is_refused(store):
    cols = _columns(store, "features")
    digest = _alter(
        store, "ALTER TABLE features RENAME TO features_real",
        f"CREATE VIEW features AS SELECT {', '.join(cols[:-1])}, "
        f"CAST(fts3_tokenizer('simple') AS TEXT) AS {cols[-1]} FROM features_real")
    assert "view 'features' where polydom keeps a table" in _refused(store)
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest  # reading wrote nothing


def test_a_store_with_a_full_text_table_is_refused(store):
    _alter(store, "CREATE VIRTUAL TABLE notes USING fts3(body)")
    assert "virtual table 'notes'" in _refused(store)


def test_a_store_with_a_trigger_is_refused(store):
    _alter(store, "CREATE TRIGGER spy AFTER INSERT ON builds BEGIN SELECT 1; END")
    assert "trigger 'spy'" in _refused(store)


def test_an_untouched_store_opens_and_its_connections_trust_no_schema_function(store):
    index = polydom.open_index(f"sqlite:///{store}")
    assert index.lookup(5.0, 20.0).name == "b"
    db = storage.database.Database(f"sqlite:///{store}", read_only=True)
    try:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA trusted_schema").scalar() == 0
    finally:
        db.engine.dispose()


def test_the_refusal_is_a_polydom_error(store):
    _alter(store, "CREATE VIRTUAL TABLE notes USING fts3(body)")
    with pytest.raises(PolydomError):
        polydom.open_index(f"sqlite:///{store}")
    assert issubclass(ForeignDatabaseError, ValueError)
