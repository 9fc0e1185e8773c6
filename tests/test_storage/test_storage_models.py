"""Model blobs: each format round-trips, and nothing runs code from the database unasked."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import polydom
import polydom.blobs.model_registry
import storage
from polydom.index import resolve_payload
from storage import IndexStore
from storage.blobs import dump_model, load_model, sha256_hex
from tests.storage_support import COSTS, GROUPS, index_of, load_models

X, Y = load_breast_cancer(return_X_y=True)


def round_trip(model, trusted=False):
    blob, fmt = dump_model(model)
    return fmt, load_model(blob, fmt, sha256_hex(blob), trusted=trusted)


@storage.register_array_model(name="tests.NearestMean")
class NearestMean:
    """A tiny model of our own: predicts the class whose mean is nearest."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.stack([X[y == c].mean(axis=0) for c in self.classes_])
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)
        return self.classes_[d.argmin(axis=1)]

    def to_arrays(self):
        return {"classes": self.classes_, "means": self.means_}, {"kind": "nearest-mean"}

    @classmethod
    def from_arrays(cls, arrays, meta):
        assert meta == {"kind": "nearest-mean"}
        model = cls()
        model.classes_, model.means_ = arrays["classes"], arrays["means"]
        return model


def test_scikit_learn_models_round_trip_through_skops():
    model = make_pipeline(StandardScaler(), DecisionTreeClassifier(random_state=0)).fit(X, Y)
    fmt, back = round_trip(model)
    assert fmt == "skops"
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_skops_blob_naming_a_function_is_refused_unless_trusted():
    model = make_pipeline(
        FunctionTransformer(np.nan_to_num), StandardScaler(), LogisticRegression(max_iter=200)
    )
    model.fit(X, Y)
    blob, fmt = dump_model(model)
    with pytest.raises(storage.UntrustedModelError, match="numpy.nan_to_num"):
        load_model(blob, fmt, sha256_hex(blob))
    back = load_model(blob, fmt, sha256_hex(blob), trusted=True)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_lightgbm_models_round_trip_as_text():
    import lightgbm

    clf = lightgbm.LGBMClassifier(n_estimators=15, verbose=-1, random_state=0, n_jobs=1)
    clf.fit(X, np.where(Y == 1, "benign", "malignant"))
    fmt, back = round_trip(clf)
    assert fmt == "lightgbm" and isinstance(back, lightgbm.LGBMClassifier)
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), clf.predict_proba(X))
    fmt, booster = round_trip(clf.booster_)
    assert fmt == "lightgbm"
    np.testing.assert_allclose(booster.predict(X), clf.booster_.predict(X))
    reg = lightgbm.LGBMRegressor(n_estimators=10, verbose=-1, n_jobs=1).fit(X, Y * 2.0)
    np.testing.assert_allclose(round_trip(reg)[1].predict(X), reg.predict(X))


def test_registered_models_round_trip_as_arrays_without_pickle():
    model = NearestMean().fit(X, Y)
    blob, fmt = dump_model(model)
    assert fmt == "arrays" and b"pickle" not in blob
    back = load_model(blob, fmt, sha256_hex(blob))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_unregistered_array_model_class_is_refused_with_its_name():
    model = NearestMean().fit(X, Y)
    blob, fmt = dump_model(model)
    saved = polydom.blobs.model_registry._ARRAY_MODELS.pop("tests.NearestMean")
    try:
        with pytest.raises(ValueError, match="'tests.NearestMean' is not registered"):
            load_model(blob, fmt, sha256_hex(blob))
    finally:
        polydom.blobs.model_registry._ARRAY_MODELS["tests.NearestMean"] = saved


def test_registering_a_class_without_the_protocol_is_refused():
    with pytest.raises(ValueError, match="to_arrays"):
        storage.register_array_model(object)


def test_other_objects_are_pickled_and_need_trusted_to_load(tmp_path):
    model = {"threshold": 0.5}  # not an estimator: only pickle can store it
    fmt, _ = round_trip(model, trusted=True)
    assert fmt == "pickle"
    url = f"sqlite:///{tmp_path / 'p.db'}"
    cand = polydom.Candidate("odd", 0.9, "1 + n", frozenset({"g0"}), model)
    with IndexStore(url) as store:
        build_id = store.begin_build({"alpha": 1.0}, COSTS, GROUPS)
        store.publish(build_id, index_of([cand]))
    with pytest.raises(storage.UntrustedModelError, match="pickle"):
        load_models(polydom.open_index(url))
    assert resolve_payload(polydom.open_index(url, trusted=True).candidates[0].payload) == model


def test_digest_mismatch_is_refused_before_decoding():
    blob, fmt = dump_model(NearestMean().fit(X, Y))
    with pytest.raises(storage.ModelIntegrityError, match="fails its sha256 check"):
        load_model(blob + b"x", fmt, sha256_hex(blob), trusted=True)
