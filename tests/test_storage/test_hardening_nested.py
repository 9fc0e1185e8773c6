"""One allow-list for every stored model, nested ones included: the sub-models a budgeted
learner keeps in its arrays (the DAG's bank and filter trees, ADAPT's high-cost model) are
checked by the rule of top-level model blobs (:mod:`polydom.blobs.allowlist`)."""

from __future__ import annotations

import fractions

import numpy as np
import pytest
import skops.io
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import learners
import learners.budgeted.sklearn_blobs as sklearn_blobs
import polydom
import storage
from learners import AdaptClassifier, DAGClassifier, sweep
from learners.budgeted.sklearn_blobs import dump_estimator, load_estimator
from polydom.blobs.allowlist import (
    UntrustedModelError,
    register_model_class,
    skops_refusals,
    unregister_model_class,
)
from polydom.pipeline.open import register_learner_models
from storage.blobs import dump_model, load_model, sha256_hex
from tests.storage_support import load_models

X, Y = load_wine(return_X_y=True)
XTR, XTE, YTR, YTE = train_test_split(X, Y, test_size=0.4, stratify=Y, random_state=0)
WINE = {"chem": [0, 1, 2, 3, 4], "phenols": [5, 6, 7, 8], "colour": [9, 10, 11, 12]}
COSTS = {"chem": "1 + 0.1*n", "phenols": "2", "colour": "0.5 + 0.2*n"}

#: Hostile sub-models: what each names that the allow-list refuses.
HOSTILE = {
    "sklearn-class-not-ours": (BernoulliNB().fit(X[:20], Y[:20]),
                               "sklearn.naive_bayes.BernoulliNB"),
    "builtins.eval": (FunctionTransformer(func=eval), "builtins.eval"),
    "numpy.load": (FunctionTransformer(func=np.load), "numpy.load"),
    "class-of-another-package": ({"x": fractions.Fraction(1, 3)}, "fractions.Fraction"),
}


def _raw(model) -> np.ndarray:
    """A sub-model blob as a writer that skips the check would store it."""
    return np.frombuffer(skops.io.dumps(model), dtype=np.uint8)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_nested_blob_naming_a_refused_type_is_refused_naming_it(name):
    model, refused = HOSTILE[name]
    with pytest.raises(UntrustedModelError, match=refused.replace(".", r"\.")):
        load_estimator(_raw(model), "bank.0")
    with pytest.raises(UntrustedModelError, match="bank.0 .*allow-list refuses"):
        dump_estimator(model, "bank.0")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_top_level_and_nested_paths_give_the_same_verdict(name):
    model, _ = HOSTILE[name]
    blob = skops.io.dumps(model)
    with pytest.raises(storage.UntrustedModelError):
        load_model(blob, "skops", sha256_hex(blob))
    assert skops_refusals(blob)
    assert storage.UntrustedModelError is UntrustedModelError


def test_registered_classes_are_admitted_on_both_paths():
    nb = BernoulliNB().fit(X[:20], Y[:20])
    blob = skops.io.dumps(nb)
    storage.register_model_class(BernoulliNB)
    try:
        assert load_estimator(dump_estimator(nb)).predict(X[:3]).shape == (3,)
        assert load_model(blob, "skops", sha256_hex(blob)).predict(X[:3]).shape == (3,)
    finally:
        unregister_model_class(BernoulliNB)
    with pytest.raises(UntrustedModelError):
        load_estimator(_raw(nb))


# --------------------------------------------------------- what our learners produce round-trips
def _roundtrip(model):
    register_learner_models()
    blob, fmt = dump_model(model)
    assert fmt == "arrays"
    return load_model(blob, fmt, sha256_hex(blob))


@pytest.mark.parametrize("estimator", [
    None,  # the default: StandardScaler + LogisticRegression
    GaussianNB(),
    DecisionTreeClassifier(max_depth=3, random_state=0),
    RandomForestClassifier(5, max_depth=3, random_state=0),
])
def test_dag_with_each_kind_of_bank_estimator_round_trips(estimator):
    dag = DAGClassifier(feature_groups=WINE, cv=3, tradeoff=0.02, estimator=estimator,
                        policy_estimator=DecisionTreeClassifier(max_depth=2, random_state=0))
    dag.fit(XTR, YTR)
    back = _roundtrip(dag)
    np.testing.assert_array_equal(back.predict(XTE), dag.predict(XTE))


@pytest.mark.parametrize("method", ["lin", "gbrt"])
def test_adapt_with_a_forest_high_cost_model_round_trips(method):
    rf = RandomForestClassifier(10, max_depth=3, random_state=0).fit(XTR, YTR == 0)
    model = AdaptClassifier(rf, method=method, n_starts=1, max_iter=2, n_estimators=5)
    model.fit(XTR, YTR == 0)
    back = _roundtrip(model)
    np.testing.assert_array_equal(back.predict_proba(XTE), model.predict_proba(XTE))


def test_cstc_and_cegb_round_trip():
    for model in (
        learners.CSTCClassifier(feature_groups=WINE, feature_costs={"chem": 1.0, "phenols": 2.0,
                                                                   "colour": 0.5},
                                n_trees=10, random_state=0),
        learners.CEGBClassifier(feature_groups=WINE, n_estimators=10),
    ):
        model.fit(XTR, YTR == 0)
        back = _roundtrip(model)
        np.testing.assert_array_equal(back.predict(XTE), model.predict(XTE))


# --------------------------------------------------------- hostile stores, through open_index
def _permissive_writer(monkeypatch):
    """A writer that stores sub-models without the allow-list check (an older or hostile
    polydom, or anyone writing the database): digests and seals are then all valid."""
    monkeypatch.setattr(sklearn_blobs, "skops_refusals", lambda data: [])


def _dag_store(tmp_path, estimator) -> str:
    extra = sweep(DAGClassifier(feature_groups=WINE, cv=3, estimator=estimator), [0.02], XTR, YTR,
                  COSTS, evaluation=(XTE, YTE))
    learner = learners.SklearnLearner(make_pipeline(StandardScaler(),
                                                    LogisticRegression(max_iter=300)),
                                      XTR, YTR, features=WINE, cv=3)
    url = f"sqlite:///{tmp_path / 'dag.db'}"
    polydom.build_index(COSTS, learner, alpha=1.5, n_max=100.0, store=url,
                        extra_candidates=extra)
    return url


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sklearn-class-not-ours", "numpy-function"])
def test_open_index_refuses_a_store_whose_dag_bank_names_a_refused_type(
        tmp_path, monkeypatch, name):
    estimator = {
        "sklearn-class-not-ours": BernoulliNB(),
        "numpy-function": make_pipeline(FunctionTransformer(np.abs), GaussianNB()),
    }[name]
    refused = {"sklearn-class-not-ours": "BernoulliNB", "numpy-function": "numpy.absolute"}[name]
    with monkeypatch.context() as patch:
        _permissive_writer(patch)
        url = _dag_store(tmp_path, estimator)
    db = tmp_path / "dag.db"
    before = db.read_bytes()
    with pytest.raises(UntrustedModelError, match=rf"model of candidate .*bank\.\d.*{refused}"):
        load_models(polydom.open_index(url))
    assert db.read_bytes() == before
    if name == "sklearn-class-not-ours":  # registering the class admits it here too
        register_model_class(BernoulliNB)
        try:
            assert polydom.open_index(url).lookup(10.0, 100.0) is not None
        finally:
            unregister_model_class(BernoulliNB)
        assert db.read_bytes() == before


@pytest.mark.slow
def test_open_index_refuses_a_store_whose_adapt_high_cost_model_names_another_package(
        tmp_path, monkeypatch):
    lightgbm = pytest.importorskip("lightgbm")
    costs = {f"x{j}": "1" for j in range(X.shape[1])}
    y = YTR == 0
    f0 = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(XTR, y)
    proto = AdaptClassifier(f0, n_starts=1, max_iter=2)
    with monkeypatch.context() as patch:
        _permissive_writer(patch)
        cands = sweep(proto, [1.0], XTR, y, costs, evaluation=(XTE, YTE == 0), p_fulls=[0.5],
                      thresholds=(0.0,))
        url = f"sqlite:///{tmp_path / 'adapt.db'}"
        learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=1), XTR, y, cv=3)
        polydom.build_index(costs, learner, alpha=1.0, n_max=10.0, store=url,
                            extra_candidates=cands)
    db = tmp_path / "adapt.db"
    before = db.read_bytes()
    with pytest.raises(UntrustedModelError, match=r"high_cost_model.*lightgbm.*LGBMClassifier"):
        load_models(polydom.open_index(url))
    assert db.read_bytes() == before
