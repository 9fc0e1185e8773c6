"""Fitted CEGB models stored as arrays + JSON (no pickle) and loaded back unchanged."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from learners import CEGBClassifier, ColumnSubsetModel, GreedyMiserClassifier


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
    from storage.models import dump_model, load_model, sha256_hex

    X, y, X_new = data
    for cls in (CEGBClassifier, GreedyMiserClassifier, ColumnSubsetModel):
        storage.register_array_model(cls)
    model = GreedyMiserClassifier(np.ones(64), tradeoff=0.1, n_estimators=5).fit(X, y)
    sub = model.subset_model()
    blob, fmt = dump_model(sub)
    assert fmt == "arrays"
    back = load_model(blob, fmt, sha256_hex(blob))
    np.testing.assert_array_equal(back.predict(X_new[:, sub.columns]), model.predict(X_new))
