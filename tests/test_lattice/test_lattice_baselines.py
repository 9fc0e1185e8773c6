"""Greedy / Greedy-Acc / Greedy-Cost (I16), Naive-Expand-All, and estimate_delta."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
from tests.lattice_oracle import (
    ACC_TOL,
    Optimum,
    all_sets,
    check_greedy_chain,
    greedy_choices,
    instances,
    set_cost,
    violation,
    wide_instances,
)
from tests.strategies import examples

LAMBDAS = (0.0, 0.01, 0.5, 5.0)


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=6), st.sampled_from([0.0, 1.0, 7.0]))
def test_i16_greedy_sequences_are_chains_ending_at_the_full_set(inst, n0):
    acc, costs = inst
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=n0,
                       lambdas=LAMBDAS)
    g._check()
    m = len(costs)
    for seq in g.sequences.values():
        assert len(seq) == m and seq[-1] == frozenset(costs)
        assert all(a < b and len(b) == len(a) + 1 for a, b in zip(seq, seq[1:], strict=False))
    assert g.n_expanded <= len(LAMBDAS) * m * (m + 1) // 2 + 1
    assert frozenset() in g.expanded


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=6), st.sampled_from([0.0, 1.0, 7.0]))
def test_i16_greedy_cost_adds_features_cheapest_first(inst, n0):
    acc, costs = inst
    g = lattice.greedy_cost(costs, learners.SyntheticLearner(acc.__getitem__), size=n0)
    seq = g.sequences[math.inf]
    added = [next(iter(b - a)) for a, b in zip([frozenset(), *seq], seq, strict=False)]
    unit = [costs[f](n0) for f in added]
    assert unit == sorted(unit)


@settings(max_examples=examples(30), deadline=None)
@given(instances(max_m=5))
def test_i16_greedy_acc_adds_the_largest_accuracy_gain_first(inst):
    acc, costs = inst
    g = lattice.greedy_acc(costs, learners.SyntheticLearner(acc.__getitem__))
    cur = frozenset()
    for nxt in g.sequences[0.0]:
        best = max(acc[cur | {f}] for f in costs if f not in cur)
        assert acc[nxt] == best
        cur = nxt


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5), st.sampled_from(["greedy", "greedy_acc", "greedy_cost"]))
def test_i16_retrieval_fits_the_budget_and_never_beats_the_optimum(inst, variant):
    acc, costs = inst
    learner = learners.SyntheticLearner(acc.__getitem__)
    g = lattice.greedy(costs, learner, lambdas=LAMBDAS) if variant == "greedy" else (
        getattr(lattice, variant)(costs, learner))
    opt = Optimum(acc, costs)
    for n, b in opt.grid([0.0, 1.0, 50.0]):
        got = g.retrieve(n, b)
        assert set_cost(costs, got.features)(n) <= b
        assert got.accuracy <= opt(n, b) + ACC_TOL
        assert got.accuracy == acc[got.features]


@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(instances(max_m=6), wide_instances(max_m=8)),
       st.sampled_from([0.0, 1.0, 7.0, 250.0]))
def test_i16_greedy_chains_equal_a_brute_force_greedy(inst, n0):
    """Every step of every chain adds a feature the brute-force Greedy would add."""
    acc, costs = inst
    lambdas = (*LAMBDAS, 0.002, 1e3, math.inf)
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=n0,
                       lambdas=lambdas)
    for lam in lambdas:
        check_greedy_chain(acc, costs, n0, lam, g.sequences[lam])
        for s in g.sequences[lam]:
            assert g.expanded[s].accuracy == acc[s]


@settings(max_examples=examples(40), deadline=None)
@given(st.one_of(instances(max_m=6), wide_instances(max_m=8)), st.sampled_from([0.0, 3.0]))
def test_i16_greedy_acc_and_greedy_cost_equal_the_brute_force_chains(inst, n0):
    acc, costs = inst
    learner = learners.SyntheticLearner(acc.__getitem__)
    check_greedy_chain(acc, costs, n0, 0.0, lattice.greedy_acc(costs, learner, n0).sequences[0.0])
    chain = lattice.greedy_cost(costs, learner, n0).sequences[math.inf]
    check_greedy_chain(acc, costs, n0, math.inf, chain)


def test_greedy_trades_accuracy_for_cost_by_lambda():
    """Hand-computed: f1 gains 0.3 for cost 10, f2 gains 0.1 for cost 1.  lambda = 0 takes
    f1 first (0.3 > 0.1); lambda = 0.1 takes f2 (0.1 - 0.1 > 0.3 - 1.0)."""
    acc = {frozenset(): 0.5, frozenset({"f1"}): 0.8, frozenset({"f2"}): 0.6,
           frozenset({"f1", "f2"}): 0.85}
    costs = {"f1": "10", "f2": "1"}
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), lambdas=(0.0, 0.1))
    assert g.sequences[0.0][0] == frozenset({"f1"})
    assert g.sequences[0.1][0] == frozenset({"f2"})
    assert greedy_choices(acc, costs, 1.0, 0.0, frozenset()) == ["f1"]
    assert greedy_choices(acc, costs, 1.0, 0.1, frozenset()) == ["f2"]


def test_greedy_walks_past_the_looked_up_set_when_items_are_smaller():
    # At n0 = 10 the budget buys only f1; at n = 1 the whole chain fits (any-time).
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(2)}
    costs = {"f1": "n", "f2": "n**2"}
    g = lattice.greedy_cost(costs, learners.SyntheticLearner(acc.__getitem__), size=10.0)
    assert g.retrieve(1.0, 20.0).features == frozenset({"f1", "f2"})
    assert g.retrieve(10.0, 20.0).features == frozenset({"f1"})
    assert g.retrieve(10.0, 0.0).features == frozenset()


def test_greedy_rejects_bad_lambdas_and_sizes():
    learner = learners.SyntheticLearner(lambda fs: 0.5)
    with pytest.raises(ValueError, match="lambdas"):
        lattice.greedy({"a": [1.0]}, learner, lambdas=[-1.0])
    with pytest.raises(ValueError, match="size"):
        lattice.greedy({"a": [1.0]}, learner, size=float("nan"))
    g = lattice.greedy({"a": [1.0]}, learner)
    with pytest.raises(ValueError, match="budget"):
        g.retrieve(1.0, -1.0)


@settings(max_examples=examples(40), deadline=None)
@given(st.sampled_from([0.0, 0.01, 0.05]).flatmap(lambda d: instances(max_m=5, delta=d)))
def test_estimate_delta_on_all_sets_is_the_true_violation(inst):
    acc, costs = inst
    exp = lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__))
    assert lattice.estimate_delta(exp) == pytest.approx(violation(acc), abs=1e-12)


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([0.01, 0.05]).flatmap(lambda d: instances(max_m=5, delta=d)),
       st.sampled_from([1.0, 1.2]))
def test_estimate_delta_is_the_largest_violation_among_expanded_pairs(inst, alpha):
    acc, costs = inst
    exp = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), alpha=alpha)
    expected = max([0.0, *[acc[g] - acc[f] for g in exp.expanded for f in exp.expanded
                           if g < f]])
    assert lattice.estimate_delta(exp) == pytest.approx(expected, abs=1e-12)
    assert lattice.estimate_delta(exp) <= violation(acc) + 1e-12
