"""The any-time explorer: the guarantee without a binding cap, the cap, the proved bound under
a cap (all against brute force), and 100 features."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
import polydom
from tests.lattice_oracle import ACC_TOL, Optimum, instances
from tests.strategies import examples

SIZES = [0.0, 1.0, 3.7, 100.0]


def synthetic(acc):
    return learners.SyntheticLearner(acc.__getitem__)


@settings(max_examples=examples(20), deadline=None)
@given(instances(max_m=5), st.sampled_from([1.0, 1.1, 1.5]))
def test_without_a_binding_cap_the_guarantee_holds(inst, alpha):
    """No cap (or one of 2**m trainings): seeds, best first, then the complete traversal;
    the index is within alpha of the brute-force optimum at every size and budget."""
    acc, costs = inst
    cap = None if alpha == 1.0 else 1 << len(costs)
    exp = lattice.explore(costs, synthetic(acc), alpha=alpha, traversal="anytime",
                          max_expansions=cap)
    exp._check()
    assert exp.complete
    plain = lattice.explore(costs, synthetic(acc), alpha=alpha)
    assert {c.key for c in plain.candidates} <= {e for e in map(exp.key_of, exp.expanded)}
    index = polydom.build_index(costs, synthetic(acc), alpha=alpha, traversal="anytime",
                                max_expansions=cap)
    opt = Optimum(acc, costs)
    for n, b in opt.grid(SIZES):
        hit = index.lookup(n, b)
        assert alpha * hit.accuracy >= opt(n, b) - alpha * ACC_TOL, (n, b, hit)


@settings(max_examples=examples(12), deadline=None)
@given(instances(max_m=5), st.integers(1, 20), st.booleans())
def test_under_a_cap_the_bound_holds_and_nothing_trains_twice(inst, cap, cost_pruning):
    """Under a cap: at most cap trainings, every set once, and the proved upper bound is
    above every set that fits (brute force) and the served one is below it."""
    acc, costs = inst
    calls = []
    learner = learners.SyntheticLearner(lambda fs: calls.append(fs) or acc[fs])
    exp = lattice.explore(costs, learner, traversal="anytime", max_expansions=cap,
                          cost_pruning=cost_pruning)
    exp._check()
    assert len(calls) == len(set(calls)) == exp.stats["trained"] <= cap
    assert exp.stats["cap"] == cap
    opt = Optimum(acc, costs)
    cands = exp.candidates
    for n, b in opt.grid([1.0, 3.7])[::3]:
        bound = lattice.cap_bound(exp, n, b)
        assert bound >= opt(n, b) - 1e-9, (n, b, bound, opt(n, b))
        served = max((c.accuracy for c in cands if c.cost(n) <= b), default=-math.inf)
        assert served <= bound + 1e-9


def test_cap_bound_is_exact_once_everything_is_trained():
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.7, frozenset({"b"}): 0.6,
           frozenset({"a", "b"}): 0.9}
    exp = lattice.expand_all({"a": "1", "b": "2"}, synthetic(acc))
    assert lattice.cap_bound(exp, 1.0, 0.5) == 0.5
    assert lattice.cap_bound(exp, 1.0, 1.0) == 0.7
    assert lattice.cap_bound(exp, 1.0, 2.5) == 0.7
    assert lattice.cap_bound(exp, 1.0, 3.0) == 0.9


def additive_problem(m, informative, seed=0):
    rng = np.random.default_rng(seed)
    w = np.zeros(m)
    w[rng.choice(m, informative, replace=False)] = rng.uniform(0.3, 1.0, informative)
    names = [f"f{i:03d}" for i in range(m)]

    def acc(fs):
        return 0.5 + 0.45 * (1.0 - math.exp(-sum(w[int(f[1:])] for f in fs)))

    return names, w, acc


def test_a_lazy_forward_path_is_the_forward_selection_path():
    """With diminishing gains the lazy path takes forward selection's features, in order,
    with far fewer trainings (all of a step's candidates are not re-trained)."""
    names, w, acc = additive_problem(30, 8)
    costs = {f: "1" for f in names}
    greedy = lattice.greedy_acc(costs, learners.SyntheticLearner(acc))
    exp = lattice.explore(costs, learners.SyntheticLearner(acc), traversal="anytime",
                          max_expansions=200, seed_weights=(0.0,), seed_share=1.0)
    chain = greedy.sequences[0.0][:8]
    assert all(fs in exp.expanded for fs in chain)
    assert exp.stats["seed_trained"] < 100 < greedy.stats["trained"]


@pytest.mark.parametrize("m", [50, 100])
def test_many_features_under_a_cap(m):
    """50 and 100 features (past the 62 of the complete traversal): the cap holds and the
    index at each budget holds the best informative features."""
    names, w, acc = additive_problem(m, 6, seed=m)
    costs = {f: "1" for f in names}
    with pytest.warns(RuntimeWarning, match="no approximation guarantee"):
        index = polydom.build_index(costs, learners.SyntheticLearner(acc),
                                    traversal="anytime", max_expansions=400)
    assert index.info["trained"] <= 400 and not index.info["complete"]
    order = np.argsort(-w)
    for b in range(1, 7):
        best = frozenset(names[i] for i in order[:b])
        assert index.lookup(1.0, float(b)).accuracy == pytest.approx(acc(best))
    if m > 62:
        with pytest.raises(ValueError, match="complete traversal takes at most 62 features"):
            lattice.explore(costs, learners.SyntheticLearner(acc), max_expansions=10)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"seed_weights": ()}, "weights must be a non-empty sequence"),
    ({"seed_weights": (-1.0,)}, "weights must be numbers >= 0"),
    ({"seed_share": 1.5}, r"seed_share must be a number in \[0, 1\]"),
    ({"fresh": 0}, "fresh must be an integer >= 1"),
    ({"reference_size": 5.0, "n_max": 2.0}, "reference_size must lie in the domain"),
])
def test_bad_anytime_options_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lattice.explore({"a": "1"}, synthetic({frozenset(): 0.5, frozenset({"a"}): 0.6}),
                        traversal="anytime", **kwargs)
