"""Fitted CEGB models stored as arrays + JSON (no pickle) and loaded back unchanged."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from learners import CEGBClassifier, GreedyMiserClassifier
from learners.budgeted.contract import ColumnSubsetModel
from polydom.index import resolve_payload


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    return X[:500], y[:500] % 3, X[500:600]


@pytest.mark.parametrize("cls", [CEGBClassifier, GreedyMiserClassifier])
def test_to_arrays_round_trip_keeps_predictions_and_usage(cls, data):
    X, y, X_new = data
    groups = {"top": list(range(32)), "bottom": list(range(32, 64))}
    model = cls({"top": 1.0, "bottom": 3.0}, tradeoff=0.01, feature_groups=groups,
                n_estimators=5, min_child_samples=10).fit(X, y)
    arrays, meta = model.to_arrays()
    assert all(a.dtype != object for a in arrays.values())
    back = cls.from_arrays(arrays, meta)
    assert back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.predict_proba(X_new), model.predict_proba(X_new))
    np.testing.assert_array_equal(back.feature_usage(X_new), model.feature_usage(X_new))
    np.testing.assert_array_equal(back.used_features_, model.used_features_)


def test_string_classes_and_subset_model_round_trip(data):
    X, y, X_new = data
    labels = np.array(["a", "b", "c"], dtype=object)[y]
    model = CEGBClassifier(np.ones(64), tradeoff=0.01, n_estimators=5).fit(X, labels)
    sub = model.subset_model()
    arrays, meta = sub.to_arrays()
    back = ColumnSubsetModel.from_arrays(arrays, meta)
    np.testing.assert_array_equal(back.predict(X_new[:, sub.columns]),
                                  model.predict(X_new))
    assert back.estimator.classes_.tolist() == ["a", "b", "c"]


def test_subset_model_refuses_classes_outside_learners(data):
    X, y, _ = data
    arrays, meta = CEGBClassifier(n_estimators=2).fit(X, y).subset_model().to_arrays()
    with pytest.raises(ValueError, match="refusing"):
        ColumnSubsetModel.from_arrays(arrays, {**meta, "estimator": "os:system"})


def test_storage_array_format_stores_and_loads_without_trust(data):
    storage = pytest.importorskip("storage")
    from storage.blobs import dump_model, load_model, sha256_hex

    X, y, X_new = data
    for cls in (CEGBClassifier, GreedyMiserClassifier, ColumnSubsetModel):
        storage.register_array_model(cls)
    model = GreedyMiserClassifier(np.ones(64), tradeoff=0.1, n_estimators=5).fit(X, y)
    sub = model.subset_model()
    blob, fmt = dump_model(sub)
    assert fmt == "arrays"
    back = load_model(blob, fmt, sha256_hex(blob))
    np.testing.assert_array_equal(back.predict(X_new[:, sub.columns]), model.predict(X_new))


def test_build_index_with_cegb_extra_candidates_persists_and_reopens(tmp_path):
    storage = pytest.importorskip("storage")
    import lightgbm as lgb
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    import polydom
    from learners import SklearnLearner, sweep

    for cls in (CEGBClassifier, GreedyMiserClassifier, ColumnSubsetModel):
        storage.register_array_model(cls)
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    groups = {"a": list(range(10)), "b": list(range(10, 20)), "c": list(range(20, 30))}
    costs = {"a": "1 + 0.01*n", "b": "2 + 0.01*n", "c": "4 + 0.02*n"}
    extra = sweep(CEGBClassifier(feature_groups=groups, n_estimators=10), [0.001, 0.01], X_tr,
                  y_tr, costs, evaluation=(X_va, y_va), sizes=[100.0])
    learner = SklearnLearner(lgb.LGBMClassifier(n_estimators=10, verbosity=-1, num_threads=1),
                             X_tr, y_tr, features=groups, cv=(X_va, y_va))
    url = f"sqlite:///{tmp_path / 'index.db'}"
    built = polydom.build_index(costs, learner, extra_candidates=extra, store=url)
    reopened = polydom.open_index(url)
    for size, budget in [(100.0, 3.0), (100.0, 10.0), (1000.0, 40.0), (1000.0, 1e4)]:
        a, b = built.lookup(size, budget), reopened.lookup(size, budget)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.key == b.key
            np.testing.assert_array_equal(reopened.predict(X_va, size, budget),
                                          built.predict(X_va, size, budget))
    assert any(isinstance(resolve_payload(c.payload), ColumnSubsetModel)
               for c in reopened.candidates)
