"""Out-of-fold predictions kept with the expansions: a DAG's classifier bank fed a store's
expansions trains nothing for a stored subset; an edited predictions blob is refused."""

from __future__ import annotations

import itertools
import sqlite3

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import lattice.expansion
import polydom
import storage
from learners import SklearnLearner
from learners.budgeted.dag import DAGClassifier
from storage.blobs import sha256_hex
from tests.storage_support import reseal_expansions

SENSORS = {"odd": [1, 3, 5, 7, 9, 11], "even": [0, 2, 4, 6], "rest": [8, 10, 12]}
COSTS = {name: "1" for name in SENSORS}


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def _estimator():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _every_subset() -> list[frozenset]:
    return [frozenset(c) for r in range(len(SENSORS) + 1)
            for c in itertools.combinations(SENSORS, r)]


@pytest.fixture(scope="module")
def stored(wine, tmp_path_factory):
    """A store holding every sensor subset's expansion, trained with 5-fold CV."""
    Xtr, _, ytr, _ = wine
    path = tmp_path_factory.mktemp("pred") / "s.db"
    learner = SklearnLearner(_estimator(), Xtr, ytr, features=SENSORS, cv=5)
    with storage.IndexStore(path) as st:
        build_id = st.begin_build({"alpha": 1.0, "learner": learner.describe()}, COSTS,
                                  SENSORS)
        cache = st.expansion_cache(build_id)
        for fs in _every_subset():
            cache[fs] = learner.expand(fs)
    return path, build_id, learner


def _cache(path, build_id):
    return storage.IndexStore(path, create=False).expansion_cache(build_id)


def test_stored_expansions_return_their_out_of_fold_predictions(stored, wine):
    path, build_id, learner = stored
    cache = _cache(path, build_id)
    for fs in _every_subset():
        got = cache[fs].predictions
        assert got is not None and got.dtype == wine[2].dtype
        np.testing.assert_array_equal(got, learner.expand(fs).predictions)


def test_a_dag_fed_the_stores_expansions_trains_no_bank_model(stored, wine):
    path, build_id, _ = stored
    Xtr, Xte, ytr, _ = wine
    fresh = DAGClassifier(feature_groups=SENSORS, tradeoff=0.02, estimator=_estimator())
    fresh.fit(Xtr, ytr)
    reused = DAGClassifier(feature_groups=SENSORS, tradeoff=0.02, estimator=_estimator(),
                           bank=_cache(path, build_id)).fit(Xtr, ytr)
    assert fresh.bank_fits_ == 6 * 8 and reused.bank_fits_ == 0
    np.testing.assert_array_equal(reused.route(Xte), fresh.route(Xte))
    np.testing.assert_array_equal(reused.predict(Xte), fresh.predict(Xte))


def test_a_dag_after_a_stored_lattice_build_trains_only_what_the_build_did_not_store(
        wine, tmp_path):
    Xtr, _, ytr, _ = wine
    url = f"sqlite:///{tmp_path / 'b.db'}"
    learner = SklearnLearner(_estimator(), Xtr, ytr, features=SENSORS, cv=5)
    index = polydom.build_index(COSTS, learner, alpha=1.05, store=url)
    cache = _cache(url, index.info["build_id"])
    reused = DAGClassifier(feature_groups=SENSORS, tradeoff=0.02, estimator=_estimator(),
                           bank=cache).fit(Xtr, ytr)
    assert len(cache) >= 1
    assert reused.bank_fits_ == 6 * (8 - len(cache))


def _copy(stored, tmp_path):
    path = tmp_path / "copy.db"
    with sqlite3.connect(stored[0]) as src, sqlite3.connect(path) as dst:
        src.backup(dst)
    return path


def test_an_edited_predictions_blob_is_refused_and_nothing_is_written(stored, tmp_path):
    path = _copy(stored, tmp_path)
    with sqlite3.connect(path) as conn:
        blob = bytearray(conn.execute("SELECT blob FROM expansion_predictions "
                                      "ORDER BY expansion_id LIMIT 1").fetchone()[0])
        blob[-1] ^= 1
        conn.execute("UPDATE expansion_predictions SET blob = ? WHERE expansion_id = "
                     "(SELECT MIN(expansion_id) FROM expansion_predictions)", (bytes(blob),))
    before = path.read_bytes()
    cache = _cache(path, stored[1])
    with pytest.raises(storage.ModelIntegrityError, match="fails its sha256 check"):
        [cache[fs] for fs in _every_subset()]
    assert path.read_bytes() == before


def test_a_predictions_blob_that_is_not_an_array_is_refused(stored, tmp_path):
    path = _copy(stored, tmp_path)
    garbage = b"\x93NUMPY garbage"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE expansion_predictions SET blob = ?, digest = ?",
                     (garbage, sha256_hex(garbage)))
    with pytest.raises(storage.IndexIntegrityError, match="edited after it was stored"):
        _cache(path, stored[1])[frozenset({"odd"})]  # the expansion's seal covers the digest
    reseal_expansions(str(path))  # a writer without a key reseals it: the decoder refuses
    with pytest.raises(storage.ModelIntegrityError, match="does not decode"):
        _cache(path, stored[1])[frozenset({"odd"})]


@pytest.mark.parametrize("labels, kept", [
    (np.array(["cat", "dog", "cat"], dtype=object), np.array(["cat", "dog", "cat"])),
    (np.array([1, 2.5, 3], dtype=object), np.array([1.0, 2.5, 3.0])),
    (np.array(["cat", 2, None], dtype=object), None),  # mixed objects: not stored
    (np.array([True, False]), np.array([True, False])),
])
def test_labels_are_stored_without_pickle_or_not_at_all(tmp_path, labels, kept):
    with storage.IndexStore(tmp_path / "s.db") as st:
        cache = st.expansion_cache(st.begin_build({"alpha": 1.0}, {"a": "1"}))
        cache[frozenset({"a"})] = lattice.Expansion(frozenset({"a"}), 0.5, None, 0.0, labels)
        got = cache[frozenset({"a"})].predictions
    if kept is None:
        assert got is None
    else:
        np.testing.assert_array_equal(got, kept)
        assert got.dtype == kept.dtype


def test_reassigning_or_deleting_an_expansion_replaces_or_removes_its_predictions(tmp_path):
    fs = frozenset({"a"})
    with storage.IndexStore(tmp_path / "s.db") as st:
        cache = st.expansion_cache(st.begin_build({"alpha": 1.0}, {"a": "1"}))
        cache[fs] = lattice.Expansion(fs, 0.5, None, 0.0, np.array([0, 1]))
        cache[fs] = lattice.Expansion(fs, 0.5, None, 0.0, np.array([1, 1, 1]))
        np.testing.assert_array_equal(cache[fs].predictions, [1, 1, 1])
        cache[fs] = lattice.Expansion(fs, 0.5, None, 0.0, None)
        assert cache[fs].predictions is None
        cache[fs] = lattice.Expansion(fs, 0.5, None, 0.0, np.array([0, 1]))
        del cache[fs]
        assert fs not in cache
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM expansion_predictions").fetchone()[0] == 0


def test_deleting_a_build_deletes_its_arrays_and_the_predictions_of_its_expansions(tmp_path):
    path = tmp_path / "s.db"
    fs = frozenset({"a"})
    with storage.IndexStore(path) as st:
        for learner in ("first", "second"):  # other training parameters: own expansions
            build_id = st.begin_build({"alpha": 1.0, "learner": learner}, {"a": "1"})
            st.expansion_cache(build_id)[fs] = lattice.Expansion(
                fs, 0.5, None, 0.0, np.array([0, 1]))
            table = polydom.PolyDomIndex.build([polydom.Candidate(learner, 0.5, "1", fs)])
            st.publish(build_id, polydom.Index(table, {"a": "1"}))
        report = st.delete_builds()
    assert report["deleted"] == [1] and report["expansions_deleted"] == 1
    with sqlite3.connect(path) as conn:
        counts = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("build_arrays", "expansion_predictions")]
    assert counts == [1, 1]
    assert polydom.open_index(path).info["read_from"] == "arrays"
