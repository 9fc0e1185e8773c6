"""The budgeted-learner contract and the one sweep: every registered learner satisfies the
contract under its registry name, and the sweep scores every setting on the protocol's folds
(checked against fits made here, fold by fold)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer

import learners
import learners.budgeted.contract
import learners.registry
import polydom
from learners.budgeted.contract import check_budgeted, check_feature_costs, params_json

pytest.importorskip("lightgbm")

GROUPS = {"a": [0, 1], "b": [2, 3], "c": [4, 5]}
COSTS = {"a": "1", "b": "2 + n", "c": "5"}


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:180, :6], y[:180]


@pytest.mark.parametrize("name", learners.registry.registered_learners("budgeted"))
def test_every_registered_budgeted_learner_satisfies_the_contract_under_its_name(name):
    proto = learners.registry.get_learner(name).make(0)
    check_budgeted(proto)
    assert isinstance(proto, learners.budgeted.contract.BudgetedLearner)
    assert proto.learner_name == name
    for cls in learners.registry.get_learner(name).classes():
        assert cls.learner_name == name


def test_an_object_missing_members_is_refused_naming_them():
    class Half:
        learner_name = "half"
        sweep_options: dict = {}

        def fit(self, X, y):
            return self

    with pytest.raises(TypeError, match=r"Half is not a budgeted learner: it lacks predict, "
                                        r"get_params, .*needs_from_usage"):
        check_budgeted(Half())
    with pytest.raises(TypeError, match="not a budgeted learner"):
        learners.sweep(Half(), [0.1], np.zeros((4, 2)), np.zeros(4), {"x0": "1", "x1": "1"})


@pytest.mark.parametrize("name", learners.registry.registered_learners("budgeted"))
def test_every_learner_checks_feature_costs_the_same_way(name, data):
    X, y = data
    groups = {"a": [0, 1, 2], "b": [3, 4, 5]}
    proto = learners.registry.get_learner(name).make(0, feature_groups=groups)
    with pytest.raises(ValueError, match=r"feature_costs names unknown (feature|sensor)s "
                                         r"\['nope'\]"):
        clone(proto).set_params(feature_costs={"a": 1.0, "b": 1.0, "nope": 2.0}).fit(X, y)
    with pytest.raises(ValueError, match=r"feature_costs must be finite and >= 0; got "
                                         r"\[\('b', -1.0\)\]"):
        clone(proto).set_params(feature_costs={"a": 1.0, "b": -1.0}).fit(X, y)


def test_feature_costs_check_and_params_json():
    assert check_feature_costs([1, 2], ["a", "b"]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"one value per feature \(2\), got 3"):
        check_feature_costs([1, 2, 3], ["a", "b"])
    with pytest.raises(ValueError, match=r"none for \['b'\]"):
        check_feature_costs({"a": 1}, ["a", "b"])
    out = params_json({"feature_costs": {"a": np.float32(1.5)}, "feature_groups":
                       {"a": np.array([0, 1])}, "class_weight": {0: 2}, "depth": np.int64(3)})
    assert out == {"feature_costs": {"a": 1.5}, "feature_groups": {"a": [0, 1]},
                   "class_weight": {"0": 2.0}, "depth": 3}


def test_sweep_scores_each_setting_on_the_protocol_folds_and_serves_a_refit(data):
    """Fold scores out of fold, needs of the served refit over all rows, against fits made
    here."""
    X, y = data
    protocol = learners.EvaluationProtocol(folds=3, seed=4)
    proto = learners.CSTCClassifier(feature_groups=GROUPS, feature_map="standard", depth=2,
                                    random_state=0)
    cands = learners.sweep(proto, [0.001, 0.1], X, y, COSTS, evaluation=protocol,
                           sizes=[2.0])
    assert [c.key for c in cands] == ["cstc(tradeoff=0.001, n=2)", "cstc(tradeoff=0.1, n=2)"]
    costs_at_2 = {"a": 1.0, "b": 4.0, "c": 5.0}
    for cand, t in zip(cands, [0.001, 0.1], strict=True):
        params = {"tradeoff": t, "feature_costs": costs_at_2}
        scores = []
        for train, test in protocol.splits(y):
            fold = clone(proto).set_params(**params).fit(X[train], y[train])
            scores.append(float(np.mean(fold.predict(X[test]) == y[test])))
        assert cand.fold_scores == pytest.approx(scores, abs=0)
        assert cand.accuracy == pytest.approx(np.mean(scores))
        assert cand.accuracy_se == pytest.approx(np.std(scores, ddof=1) / np.sqrt(3))
        served = cand.payload.estimator
        refit = clone(proto).set_params(**params).fit(X, y)
        np.testing.assert_array_equal(served.predict(X), refit.predict(X))
        p = refit.feature_usage(X).mean(axis=0)  # the served model's own usage, every row
        assert {n: v for n, v in cand.needs.items() if v > 0} == pytest.approx(
            {n: float(v) for n, v in zip(GROUPS, p, strict=True) if v > 0})
        assert cand.learner == "cstc"


def test_sweep_scores_every_repeat_of_a_repeated_protocol(data):
    """Repeated folds: one score per split of every repeat, against fits made here; the
    standard error is that of one partition's folds."""
    X, y = data
    protocol = learners.EvaluationProtocol(folds=2, seed=1, repeats=3)
    proto = learners.CEGBClassifier(feature_groups=GROUPS, n_estimators=5, num_leaves=4,
                                    random_state=0)
    cand, = learners.sweep(proto, [0.01], X, y, COSTS, evaluation=protocol)
    params = {"tradeoff": 0.01, "feature_costs": {"a": 1.0, "b": 3.0, "c": 5.0}}
    scores = []
    for train, test in protocol.splits(y):
        fold = clone(proto).set_params(**params).fit(X[train], y[train])
        scores.append(float(np.mean(fold.predict(X[test]) == y[test])))
    assert len(scores) == 6 and cand.fold_scores == pytest.approx(scores, abs=0)
    assert cand.accuracy == pytest.approx(np.mean(scores))
    assert cand.accuracy_se == pytest.approx(np.std(scores, ddof=1) / np.sqrt(2))
    p = clone(proto).set_params(**params).fit(X, y).feature_usage(X).mean(axis=0)
    assert {n: v for n, v in cand.needs.items() if v > 0} == pytest.approx(
        {n: float(v) for n, v in zip(GROUPS, p, strict=True) if v > 0})


def test_sweep_options_are_the_learners_own(data):
    X, y = data
    proto = learners.CEGBClassifier(feature_groups=GROUPS, n_estimators=2)
    with pytest.raises(ValueError, match=r"unknown sweep option\(s\) \['p_fulls'\] for "
                                         r"learner 'cegb'; known: \['frontier'\]"):
        learners.sweep(proto, [0.1], X, y, COSTS, p_fulls=[0.5])


def test_frontier_keeps_the_candidates_no_other_beats(data):
    X, y = data
    proto = learners.CEGBClassifier(feature_groups=GROUPS, n_estimators=5, num_leaves=4)
    protocol = learners.EvaluationProtocol(folds=2, seed=0)
    every = learners.sweep(proto, [0.0, 0.01, 0.1, 1.0], X, y, COSTS, evaluation=protocol)
    kept = learners.sweep(proto, [0.0, 0.01, 0.1, 1.0], X, y, COSTS, evaluation=protocol,
                          frontier=True)
    beaten = {c.key for c in every for d in every
              if d.cost(1.0) <= c.cost(1.0) and d.accuracy > c.accuracy}
    assert {c.key for c in kept} == {c.key for c in every} - beaten
    assert [c.cost(1.0) for c in kept] == sorted(c.cost(1.0) for c in kept)


def test_build_index_compares_repeated_protocols_split_for_split(data):
    """A lattice and a sweep on one repeated protocol build silently; a sweep scored on
    the unrepeated folds is named (its accuracies are not comparable)."""
    X, y = data
    model = polydom.CostModel({"a": [1.0], "b": [2.0], "c": [5.0]}, columns=GROUPS)
    repeated = learners.EvaluationProtocol(folds=2, seed=0, repeats=2)
    proto = learners.CEGBClassifier(feature_groups=GROUPS, n_estimators=3, num_leaves=4)
    lattice_learner = learners.SklearnLearner(
        learners.registry.get_learner("logistic").make(0), X, y, features=model, cv=repeated)
    same = learners.sweep(proto, [0.01], X, y, model, evaluation=repeated)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        index = polydom.build_index(model, lattice_learner, extra_candidates=same)
    assert index.info["evaluation"]["repeats"] == 2
    assert all(len(c.fold_scores) == 4 for c in index.candidates)
    once = learners.sweep(proto, [0.01], X, y, model,
                          evaluation=learners.EvaluationProtocol(folds=2, seed=0))
    with pytest.warns(RuntimeWarning, match="candidates of cegb were scored on other splits"):
        polydom.build_index(model, lattice_learner, extra_candidates=once)
