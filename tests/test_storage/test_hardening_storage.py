"""Stores against foreign files, edits in SQL and a writer without the key (issue 14): read-only
opens, foreign databases, the store key, build seals, and the build lifecycle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import polydom.errors
import storage
from polydom.app.cli import main

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150], Y[:150]
FEATURES = {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]}
COSTS = {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}


def _learner(depth: int = 2):
    return learners.SklearnLearner(DecisionTreeClassifier(max_depth=depth, random_state=0), X, Y,
                                   features=FEATURES, cv=2)


def _build(url, depth=2, alpha=1.0, **options):
    return polydom.build_index(COSTS, _learner(depth), alpha=alpha, n_max=100.0, store=url,
                               **options)


def _foreign(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
        conn.execute("INSERT INTO people VALUES ('ada')")
    return path


def _journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]


# ------------------------------------------------------------------- read-only commands
@pytest.mark.parametrize("argv", [["inspect", "{db}"], ["lookup", "{db}", "--size", "1",
                                                        "--budget", "1"],
                                  ["plot", "{db}", "--out", "{tmp}/p"]])
def test_read_only_commands_never_write_a_foreign_sqlite_file(tmp_path, capsys, argv):
    db = _foreign(tmp_path / "other.db")
    before = db.read_bytes()
    assert main([a.format(db=db, tmp=tmp_path) for a in argv]) == 2
    assert "holds no polydom index store" in capsys.readouterr().err
    assert db.read_bytes() == before
    assert _journal_mode(db) == "delete"  # not switched to WAL
    assert not Path(f"{db}-wal").exists()
    with pytest.raises(storage.StoreNotFoundError):
        polydom.open_index(db)
    assert db.read_bytes() == before


def test_read_only_commands_never_turn_a_zero_byte_file_into_a_store(tmp_path, capsys):
    empty = tmp_path / "empty.db"
    empty.touch()
    assert main(["inspect", str(empty)]) == 2
    with pytest.raises(storage.StoreNotFoundError):
        polydom.list_builds(empty)
    assert empty.stat().st_size == 0
    capsys.readouterr()


def test_read_only_open_uses_sqlite_mode_ro(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _build(url)
    with storage.IndexStore(url, read_only=True) as store:
        assert store.load_index().lookup(10.0, 50.0) is not None
        with pytest.raises(PermissionError, match="read-only"):
            store.begin_build({"learner": "x"}, {"a": "1"})
        with store.engine.connect() as conn, pytest.raises(Exception, match="readonly"):
            conn.exec_driver_sql("DELETE FROM candidates")


# ------------------------------------------------------------------- foreign databases
def test_build_refuses_a_non_empty_foreign_database_naming_its_tables(tmp_path):
    db = _foreign(tmp_path / "other.db")
    before = db.read_bytes()
    with pytest.raises(polydom.errors.ForeignDatabaseError, match=r"tables: people"):
        _build(str(db))
    assert db.read_bytes() == before
    index = _build(str(db), allow_foreign_database=True)  # asked explicitly
    assert polydom.open_index(db).lookup(10.0, 50.0).key == index.lookup(10.0, 50.0).key


def test_build_config_into_a_foreign_database_fails_with_the_tables(tmp_path, capsys):
    import json

    db = _foreign(tmp_path / "other.db")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"data": "breast_cancer", "learner": "tree", "store": str(db),
                               "features": {"mean": [0]}, "costs": {"mean": "1"}}))
    assert main(["build", str(cfg)]) == 2
    assert "tables: people" in capsys.readouterr().err


# ------------------------------------------------------------------- seals
def _edit(db: Path, sql: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql)


@pytest.mark.parametrize("sql", [
    "UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0",
    "UPDATE candidate_costs SET coefficient = 0 WHERE candidate_id = 1",
    "DELETE FROM skyline_entries WHERE rank = 0 AND range_id = 0",
])
def test_edits_of_accuracies_or_costs_in_sql_are_refused_on_open(tmp_path, sql):
    db = tmp_path / "s.db"
    _build(str(db))
    _edit(db, sql)
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        polydom.open_index(db)


def test_edited_build_opens_with_skylines_rebuilt_from_candidates_when_asked(tmp_path):
    db = tmp_path / "s.db"
    _build(str(db))
    _edit(db, "UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0")
    index = polydom.open_index(db, rebuild=True)
    assert "rebuilt" in index.info
    index.table._check()
    naive = polydom.NaiveLookup.build(index.candidates, 0.0, 100.0)
    for n in np.linspace(0.0, 100.0, 9):
        for budget in (0.0, 3.0, 30.0, 200.0):
            assert index.table.lookup_position(float(n), budget) == naive.lookup_position(
                float(n), budget)


def test_untouched_builds_open_sealed(tmp_path):
    index = polydom.open_index(_build(str(tmp_path / "s.db")).info["store"])
    assert index.info["sealed"] is True


# ------------------------------------------------------------------- the store key
def test_store_key_signs_blobs_and_seals(tmp_path, monkeypatch):
    db = tmp_path / "k.db"
    monkeypatch.setenv(storage.blobs.KEY_ENV, "s3cret")
    _build(str(db))
    assert polydom.open_index(db).lookup(10.0, 50.0).model is not None
    monkeypatch.delenv(storage.blobs.KEY_ENV)
    with pytest.raises(storage.StoreKeyError, match="signed with key id"):
        polydom.open_index(db)
    with pytest.raises(storage.StoreKeyError, match="not with this key"):
        polydom.open_index(db, key="guess")
    assert polydom.open_index(db, key="s3cret").lookup(10.0, 50.0).model is not None


def test_store_key_refuses_a_blob_rewritten_with_a_recomputed_sha256(tmp_path):
    from sklearn.preprocessing import FunctionTransformer

    from storage.blobs import dump_model, sha256_hex

    db = tmp_path / "k.db"
    _build(str(db), store_key="s3cret")
    blob, _ = dump_model(FunctionTransformer().fit(X, Y))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE expansions SET model_blob = ?, model_sha256 = ?",
                     (blob, sha256_hex(blob)))
    with pytest.raises(storage.IndexIntegrityError, match="its expansions"):
        polydom.open_index(db, key="s3cret")  # the build's seal binds the expansion's digest


def test_a_key_holder_refuses_an_unsigned_store(tmp_path):
    db = tmp_path / "plain.db"
    _build(str(db))
    with pytest.raises(storage.StoreKeyError, match="not signed"):
        polydom.open_index(db, key="s3cret")


# ------------------------------------------------------------------- build lifecycle
class _Failing:
    """A learner that fails after ``after`` trainings."""

    def __init__(self, after: int, depth: int = 2) -> None:
        self.inner, self.after, self.calls = _learner(depth), after, 0

    def expand(self, features):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("the learner broke")
        return self.inner.expand(features)

    def describe(self):
        return self.inner.describe()

    def feature_columns(self):
        return self.inner.feature_columns()


def test_failed_builds_are_marked_failed_with_the_error(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'f.db'}"
    with pytest.raises(RuntimeError, match="the learner broke"):
        polydom.build_index(COSTS, _Failing(2), n_max=100.0, store=url)
    [build] = polydom.list_builds(url)
    assert build.status == "failed" and build.error == "RuntimeError: the learner broke"
    assert main(["inspect", url]) == 0
    assert "build 1 failed: RuntimeError: the learner broke" in capsys.readouterr().out
    with sqlite3.connect(tmp_path / "f.db") as conn:
        info = conn.execute("SELECT info FROM builds").fetchone()[0]
    assert "RuntimeError: the learner broke" in info


def test_failed_builds_are_resumed_or_cleaned_up_on_the_next_start(tmp_path):
    url = f"sqlite:///{tmp_path / 'f.db'}"
    with pytest.raises(RuntimeError):
        polydom.build_index(COSTS, _Failing(2), n_max=100.0, store=url)
    # started again with the same arguments: the failed build resumes (2 trainings reused)
    index = polydom.build_index(COSTS, _learner(), n_max=100.0, store=url)
    assert index.info["build_id"] == 1 and index.info["cache_hits"] >= 2
    with pytest.raises(RuntimeError):  # another learner: nothing to share with build 1
        polydom.build_index(COSTS, _Failing(1, depth=5), n_max=100.0, store=url)
    assert [b.status for b in polydom.list_builds(url)] == ["complete", "failed"]
    # the next start of another build deletes the failed one
    polydom.build_index(COSTS, _learner(3), n_max=100.0, store=url)
    assert [(b.build_id, b.status) for b in polydom.list_builds(url)] == [
        (1, "complete"), (3, "complete")]


def test_builds_delete_keeps_what_the_current_build_uses_and_vacuum_shrinks(tmp_path, capsys):
    db = tmp_path / "d.db"
    _build(str(db), depth=3)
    _build(str(db), depth=4)
    _build(str(db), depth=2, alpha=1.2)
    _build(str(db), depth=2, alpha=1.0)  # current: reuses the expansions of the alpha=1.2 one
    expected = polydom.open_index(db)
    assert main(["builds", "delete", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("deleted builds 1, 2, 3 and ") and "(VACUUM)" in out
    mb = [float(w) for w in out.split("file ")[1].split() if w.replace(".", "").isdigit()]
    assert mb[1] < mb[0]
    [left] = polydom.list_builds(db)
    assert left.build_id == 4 and left.is_current
    reopened = polydom.open_index(db)
    for n in (1.0, 50.0):
        for budget in (3.0, 40.0):
            assert reopened.lookup(n, budget).key == expected.lookup(n, budget).key
            rows = X[:20, :22]  # every feature's columns
            assert (reopened.predict(rows, n, budget) == expected.predict(rows, n, budget)).all()


def test_builds_delete_refuses_the_current_build(tmp_path, capsys):
    db = tmp_path / "d.db"
    _build(str(db))
    assert main(["builds", "delete", str(db), "1"]) == 2
    assert "is the current build" in capsys.readouterr().err
    assert polydom.open_index(db) is not None
