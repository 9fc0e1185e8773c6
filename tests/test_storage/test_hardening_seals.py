"""Swaps and edits that keep every blob digest (issue 25): features' columns, names and
costs, expansions' blobs and accuracies, the current build; and the one definition of a
stored candidate (every field it marks as deciding answers is sealed and checked)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import storage
from storage import schema as S
from storage.candidate_fields import CANDIDATE_FIELDS, sealed_fields

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150], Y[:150]
FEATURES = {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]}
COSTS = {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}
KEY = "s3cret"


def _build(path: Path, depth: int = 2, alpha: float = 1.0, key: str | None = KEY):
    learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=depth, random_state=0),
                                      X, Y, features=FEATURES, cv=2)
    return polydom.build_index(COSTS, learner, alpha=alpha, n_max=100.0, store=str(path),
                               store_key=key)


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


def _predictions(index: polydom.Index) -> np.ndarray:
    return index.predict(X[:40, :22], 50.0, 1000.0)


@pytest.fixture(params=[KEY, None], ids=["signed", "unsigned"])
def key(request):
    return request.param


# ------------------------------------------------------------------- features and costs
@pytest.mark.parametrize("sql", [
    # two features' columns swapped: the models would read the other feature's columns
    "UPDATE features SET columns = CASE feature_id WHEN 0 THEN '[10,11]' WHEN 1 THEN '[0,1]' "
    "ELSE columns END",
    "UPDATE features SET name = 'renamed' WHERE feature_id = 2",
    "UPDATE feature_costs SET coefficient = 0.0 WHERE feature_id = 2 AND degree = 0",
    "DELETE FROM feature_costs WHERE feature_id = 2 AND degree = 2",
], ids=["columns swapped", "name", "cost", "cost term deleted"])
def test_edits_of_features_columns_names_or_costs_are_refused(tmp_path, key, sql):
    path = tmp_path / "s.db"
    _build(path, key=key)
    expected = polydom.open_index(path, key=key)
    assert expected.info["sealed"]
    _sql(path, sql)
    with pytest.raises(storage.IndexIntegrityError, match="cost model"):
        polydom.open_index(path, key=key)
    _sql(path, "DELETE FROM build_arrays")  # the rows path recomputes the seal: refused too
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        polydom.open_index(path, key=key)


# ------------------------------------------------------------------- expansions
def test_two_expansions_blobs_of_equal_width_swapped_are_refused(tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, key=key)
    with sqlite3.connect(path) as conn:
        (a, fa), (b, fb) = conn.execute(
            "SELECT id, features FROM expansions WHERE n_features = 1 ORDER BY id LIMIT 2")
        assert fa != fb  # two single features of two columns each: blobs of equal width
        conn.execute(
            "UPDATE expansions SET (model_blob, model_sha256) = (SELECT e.model_blob, "
            "e.model_sha256 FROM expansions e WHERE e.id = "
            f"CASE expansions.id WHEN {a} THEN {b} ELSE {a} END) WHERE id IN ({a}, {b})")
    with pytest.raises(storage.IndexIntegrityError, match="its expansions"):
        polydom.open_index(path, key=key)
    _sql(path, "DELETE FROM build_arrays")
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        polydom.open_index(path, key=key)


def test_an_edited_accuracy_of_a_stored_expansion_is_not_reused_by_the_next_build(
        tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, key=key)
    _sql(path, "UPDATE expansions SET accuracy = 0.999 WHERE n_features = 1")
    # another alpha reuses the stored expansions: they are verified, not trusted
    with pytest.raises(storage.IndexIntegrityError, match="edited after it was stored"):
        _build(path, alpha=1.3, key=key)
    assert [b.status for b in polydom.list_builds(path)] == ["complete", "failed"]
    with pytest.raises(storage.IndexIntegrityError, match="its expansions"):
        polydom.open_index(path, key=key, build=1)


def test_an_expansion_moved_to_another_feature_set_is_refused(tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, key=key)
    with sqlite3.connect(path) as conn:
        (a, ma), (b, mb) = conn.execute(
            "SELECT id, feature_mask FROM expansions WHERE n_features = 1 ORDER BY id LIMIT 2")
        conn.execute(f"UPDATE expansions SET feature_mask = 'ff' WHERE id = {a}")
        conn.execute(f"UPDATE expansions SET feature_mask = '{ma}' WHERE id = {b}")
        conn.execute(f"UPDATE expansions SET feature_mask = '{mb}' WHERE id = {a}")
    with pytest.raises(storage.IndexIntegrityError, match="its expansions"):
        polydom.open_index(path, key=key)


# ------------------------------------------------------------------- the current build
def test_moving_the_current_flag_back_is_refused(tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, depth=1, key=key)
    newest = _build(path, depth=3, key=key)
    assert polydom.open_index(path, key=key).info["publication"] == 2
    _sql(path, "UPDATE builds SET is_current = 0", "UPDATE builds SET is_current = 1 WHERE id = 1")
    with pytest.raises(storage.IndexIntegrityError,
                       match="build 1 is marked current, but build 2 was published after it"):
        polydom.open_index(path, key=key)
    pinned = polydom.open_index(path, key=key, build=1)  # asked for explicitly: fine
    assert pinned.info["build_id"] == 1
    _sql(path, "UPDATE builds SET is_current = 0", "UPDATE builds SET is_current = 1 WHERE id = 2")
    assert (_predictions(polydom.open_index(path, key=key)) == _predictions(newest)).all()


def test_a_reader_that_saw_a_publication_refuses_a_rollback_that_deleted_it(tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, depth=1, key=key)
    index = polydom.open_index(path, key=key)
    with sqlite3.connect(path) as conn:  # the head record of publication 1, kept
        (old_head,) = conn.execute(
            "SELECT value FROM schema_info WHERE key = 'publication_head'").fetchone()
    _build(path, depth=3, key=key)
    assert index.refresh() and index.info["publication"] == 2
    # deleting the newer publication, moving the flag back and putting back the kept head
    # record: a fresh reader cannot tell this store from one that never had publication 2
    # (tests/test_storage/test_hardening_rollback.py), but this reader saw it
    _sql(path, "DELETE FROM publications WHERE sequence = 2",
         "UPDATE builds SET is_current = 0", "UPDATE builds SET is_current = 1 WHERE id = 1",
         f"UPDATE schema_info SET value = '{old_head}' WHERE key = 'publication_head'")
    with pytest.raises(storage.IndexIntegrityError, match="rolled back"):
        index.refresh()
    assert index.info["build_id"] == 2


def test_an_unsealed_build_of_a_signed_store_is_refused(tmp_path):
    path = tmp_path / "s.db"
    _build(path)
    _sql(path, "DELETE FROM build_arrays", "DELETE FROM build_seals",
         "UPDATE candidates SET accuracy = 0.999")
    with pytest.raises(storage.IndexIntegrityError, match="has no seal"):
        polydom.open_index(path, key=KEY)


# ------------------------------------------------------------------- one candidate definition
def test_the_candidates_table_is_the_one_definition():
    assert [c.name for c in S.candidates.columns] == [
        "build_id", "candidate_id", *(f.name for f in CANDIDATE_FIELDS)]
    assert {f.name for f in sealed_fields(S.SCHEMA_VERSION)} == {
        "key_json", "accuracy", "accuracy_se", "fold_scores", "features_json", "expansion_id",
        "learner", "model_format", "model_sha256"}
    assert {f.name for f in sealed_fields(2)} == {
        "key_json", "accuracy", "features_json", "expansion_id", "learner", "model_format",
        "model_sha256"}


_EDITS = {"key": "'\"zzz\"'", "float": "0.123", "id": "NULL", "text": "'x'"}


@pytest.mark.parametrize("field", [f.name for f in sealed_fields(S.SCHEMA_VERSION)])
def test_an_edit_of_any_sealed_candidate_field_is_refused(tmp_path, field):
    path = tmp_path / "s.db"
    _build(path, key=None)
    kind = next(f.array for f in CANDIDATE_FIELDS if f.name == field)
    with sqlite3.connect(path) as conn:  # an expansion-linked candidate: its own model is NULL
        cid = conn.execute("SELECT candidate_id FROM candidates WHERE expansion_id IS NOT NULL"
                           " ORDER BY candidate_id LIMIT 1").fetchone()[0]
        conn.execute(f"UPDATE candidates SET {field} = {_EDITS[kind]} "
                     f"WHERE candidate_id = {cid}")
    with pytest.raises(storage.IndexIntegrityError, match="candidates"):
        polydom.open_index(path)
    _sql(path, "DELETE FROM build_arrays")
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        polydom.open_index(path)


def test_a_display_only_field_edit_changes_no_answer(tmp_path):
    path = tmp_path / "s.db"
    expected = _build(path, key=None)
    _sql(path, "UPDATE candidates SET key = 'shown', cost = '0', features = 'x'")
    index = polydom.open_index(path)
    assert [c.key for c in index.candidates] == [c.key for c in expected.candidates]
    assert (_predictions(index) == _predictions(expected)).all()


def test_import_storage_loads_no_lattice_explorer_nor_learners():
    from tests.test_layout import _loaded_after, _under

    loaded = _loaded_after("import storage")
    for heavy in ("lattice", "learners", "sklearn.ensemble", "lightgbm"):
        assert not _under(loaded, heavy), heavy
    loaded = _loaded_after("from storage.expansion_cache import ExpansionCache")
    assert _under(loaded, "lattice.expansion")


def test_engine_of_a_published_store_has_one_current_build_index(tmp_path):
    path = tmp_path / "s.db"
    _build(path, key=None)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        _sql(path, "UPDATE builds SET is_current = 1 WHERE id = 1",
             "INSERT INTO builds (params_key, expansion_key, params, status, is_current, "
             "created_at) VALUES ('k', 'k', '{}', 'complete', 1, 'now')")
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        names = {i["name"] for i in sa.inspect(conn).get_indexes("builds")}
    engine.dispose()
    assert "uq_builds_one_current" in names


def test_a_build_id_handed_out_again_after_a_delete_can_be_published(tmp_path):
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    atoms = {"a": "1"}
    cands = [polydom.Candidate("a", 0.5, polydom.CostCurve([1.0]), frozenset({"a"}))]
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 1.0), atoms)
    with storage.IndexStore(url) as st:
        first, last = (st.begin_build({"alpha": a}, atoms) for a in (1.0, 2.0))
        st.publish(last, index)
        st.publish(first, index)  # published last: current, and build 2 is not
        st.delete_builds([last], vacuum=False)
        again = st.begin_build({"alpha": 3.0}, atoms)
        assert again == last  # SQLite hands the largest id out again
        st.publish(again, index)
    reopened = polydom.open_index(path)
    assert reopened.info["build_id"] == again and reopened.info["publication"] == 3
