"""polydom.build_index end to end: exploration, candidates, index, lookup and predict."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom
from tests.lattice_oracle import ACC_TOL, Optimum, all_sets, instances
from tests.strategies import examples


@pytest.fixture(scope="module")
def cancer_index():
    X, y = load_breast_cancer(return_X_y=True)
    groups = {"worst": list(range(20, 30)), "mean": list(range(0, 10)),
              "error": list(range(10, 20))}
    costs = {"worst": "5 + 0.01*n**2", "mean": "1 + n", "error": "2"}
    learner = learners.SklearnLearner(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X, y,
        features=groups, cv=3)
    cache: dict = {}
    index = polydom.build_index(costs, learner, alpha=1.0, cache=cache)
    return X, y, groups, costs, learner, cache, index


def test_index_serves_trained_models_and_predicts_on_their_columns(cancer_index):
    X, y, groups, costs, learner, cache, index = cancer_index
    assert index.columns == groups
    hit = index.lookup(size=10.0, budget=1000.0)
    assert hit.accuracy == max(e.accuracy for e in cache.values())
    cols = sorted(c for name in hit.features for c in groups[name])  # CostModel.columns_of
    assert index.model_columns(hit.features) == cols
    np.testing.assert_array_equal(index.predict(X[:50], 10.0, 1000.0),
                                  hit.model.predict(X[:50, cols]))
    cheap = index.lookup(size=10.0, budget=2.0)
    assert cheap.features <= {"error"}
    assert cheap.cost <= 2.0
    assert (index.predict(X[:20], 10.0, 2.0) == cheap.model.predict(
        X[:20, index.model_columns(cheap.features)])).all()
    assert (index.predict(X, 10.0, 1000.0) == y).mean() > 0.9


def test_build_info_counts_and_cache(cancer_index):
    X, y, groups, costs, learner, cache, index = cancer_index
    info = index.info
    assert info["alpha"] == 1.0 and info["delta"] == 0.0
    assert info["expansions"] == info["trained"] == len(cache) == learner.calls_
    assert info["cache_hits"] == 0 and info["complete"]
    assert info["candidates"] == len(index.candidates)
    again = polydom.build_index(costs, learner, alpha=1.0, cache=cache)
    assert again.info["trained"] == 0 and again.info["cache_hits"] == info["expansions"]
    assert learner.calls_ == info["expansions"]
    assert [c.key for c in again.candidates] == [c.key for c in index.candidates]


def test_extra_candidates_join_the_pool():
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(2)}
    extra = polydom.Candidate("budgeted", 0.95, "0.5", payload="model-x")
    index = polydom.build_index({"f1": "1", "f2": "n"}, learners.SyntheticLearner(acc.get),
                                extra_candidates=[extra])
    hit = index.lookup(3.0, 1.0)
    assert hit.key == "budgeted" and hit.model == "model-x"
    assert index.info["extra_candidates"] == 1
    with pytest.raises(ValueError, match="extra_candidates"):
        polydom.build_index({"f1": "1"}, learners.SyntheticLearner(lambda fs: 0.5),
                            extra_candidates=["nope"])


def test_incomplete_exploration_warns():
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(3)}
    with pytest.warns(RuntimeWarning, match="max_expansions"):
        index = polydom.build_index({"f1": "1", "f2": "1", "f3": "1"},
                                    learners.SyntheticLearner(acc.get), max_expansions=2)
    assert not index.info["complete"]


@settings(max_examples=examples(30), deadline=None)
@given(instances(max_m=5), st.sampled_from([1.0, 1.2]),
       st.sampled_from([(0.0, math.inf), (1.0, 50.0)]))
def test_lookup_is_within_alpha_of_the_brute_force_on_the_domain(inst, alpha, domain):
    acc, costs = inst
    index = polydom.build_index(costs, learners.SyntheticLearner(acc.__getitem__), alpha=alpha,
                                n_min=domain[0], n_max=domain[1], cost_pruning=True)
    opt = Optimum(acc, costs)
    for n, b in opt.grid([domain[0], 7.0, 50.0]):
        hit = index.lookup(n, b)
        assert hit.cost <= b and alpha * hit.accuracy >= opt(n, b) - alpha * ACC_TOL
        assert hit.key == tuple(f for f in costs if f in hit.features)
    with pytest.raises(ValueError, match="size"):
        index.lookup(-1.0, 1.0)


def test_a_misspelt_keyword_is_named_with_the_closest_argument(tmp_path):
    from polydom.errors import PolydomError

    learner = learners.SyntheticLearner(lambda features: 0.5)
    with pytest.raises(TypeError, match=r"^build_index\(\) got an unexpected keyword argument "
                       r"'alpah' \(did you mean 'alpha'\?\)$") as info:
        polydom.build_index({"a": "1"}, learner, alpah=1.1, store=str(tmp_path / "x.db"))
    assert isinstance(info.value, PolydomError)
    assert list(tmp_path.iterdir()) == []  # refused before the store was touched
    with pytest.raises(TypeError, match="'_deadline'"):  # the explorer's private knob
        polydom.build_index({"a": "1"}, learner, _deadline=1.0)
    assert polydom.build_index({"a": "1"}, learner, traversal="complete").lookup(1.0, 1.0)
