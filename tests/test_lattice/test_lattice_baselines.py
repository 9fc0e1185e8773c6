"""Greedy / Greedy-Acc / Greedy-Cost (I16), Naive-Expand-All, and estimate_delta."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import lattice.baselines
import lattice.delta
import learners
import polydom
from tests.lattice_oracle import (
    ACC_TOL,
    Optimum,
    all_sets,
    check_greedy_chain,
    greedy_choices,
    greedy_retrieve,
    greedy_skyline,
    instances,
    lattice_order,
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
    assert lattice.delta.estimate_delta(exp) == pytest.approx(violation(acc), abs=1e-12)


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([0.01, 0.05]).flatmap(lambda d: instances(max_m=5, delta=d)),
       st.sampled_from([1.0, 1.2]))
def test_estimate_delta_is_the_largest_violation_among_expanded_pairs(inst, alpha):
    acc, costs = inst
    exp = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), alpha=alpha)
    expected = max([0.0, *[acc[g] - acc[f] for g in exp.expanded for f in exp.expanded
                           if g < f]])
    assert lattice.delta.estimate_delta(exp) == pytest.approx(expected, abs=1e-12)
    assert lattice.delta.estimate_delta(exp) <= violation(acc) + 1e-12


# ---------------------------------------------------------------------------- skyline, retrieval
@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5, ints=True), st.sampled_from([0.0, 1.0, 7.0]),
       st.sampled_from([LAMBDAS, (0.5, 0.0, math.inf), (math.inf, 0.01, 0.01, 0.0)]))
def test_greedy_skyline_and_retrieval_equal_the_spec_oracle(inst, n0, lambdas):
    """The skyline (with each row's lambda and prefix length) and every retrieval, at
    budgets on, just above and just below every set's cost, equal the spec's oracle
    (``lattice_oracle.greedy_skyline`` / ``greedy_retrieve``); the chains are the
    library's, checked against the brute-force Greedy."""
    acc, costs = inst
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=n0,
                       lambdas=lambdas)
    g._check()
    assert g.lambdas == tuple(float(x) for x in lambdas) and g.size == n0
    for lam in lambdas:
        check_greedy_chain(acc, costs, n0, lam, g.sequences[lam])
    assert g.skyline == greedy_skyline(acc, costs, n0, g.lambdas, g.sequences)
    opt = Optimum(acc, costs)
    for n, b in opt.grid([0.0, 1.0, n0, 50.0]):
        got = g.retrieve(n, b)
        want = greedy_retrieve(acc, costs, n0, g.lambdas, g.sequences, n, b)
        assert got.features == want, (n, b)
        assert got.accuracy == acc[want]


def retrieval_fixture():
    """Two features, f1 (cost n) and f2 (cost n^2): at n0 = 10 the chains are
    lambda = inf: f1, f1f2 (10 < 100); lambda = 0: f2 first (it gains 0.3, f1 0.1)."""
    acc = {frozenset(): 0.5, frozenset({"f1"}): 0.6, frozenset({"f2"}): 0.8,
           frozenset({"f1", "f2"}): 0.9}
    costs = {"f1": "n", "f2": "n**2"}
    return acc, costs


def test_retrieval_by_hand_at_budgets_exactly_on_the_costs():
    acc, costs = retrieval_fixture()
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=10.0,
                       lambdas=(math.inf, 0.0))
    f1, f2, f12 = frozenset({"f1"}), frozenset({"f2"}), frozenset({"f1", "f2"})
    assert g.sequences == {math.inf: [f1, f12], 0.0: [f2, f12]}
    # at n0 = 10: {} costs 0 (lambda inf, 0), f1 10 (inf, 1), f2 100 (0, 1), f1f2 110 (inf, 2)
    assert g.skyline == [(0.0, 0.5, math.inf, 0, frozenset()), (10.0, 0.6, math.inf, 1, f1),
                         (100.0, 0.8, 0.0, 1, f2), (110.0, 0.9, math.inf, 2, f12)]
    assert g.retrieve(10.0, 10.0).features == f1         # exactly f1's cost
    assert g.retrieve(10.0, 9.99).features == frozenset()
    assert g.retrieve(10.0, 100.0).features == f2        # exactly f2's cost: lambda 0's chain
    assert g.retrieve(10.0, 110.0).features == f12
    assert g.retrieve(3.0, 12.0).features == f12         # 3 + 9, exactly, on lambda inf's chain
    assert g.retrieve(3.0, 11.99).features == f1
    # budget 0 at n0 names the empty set's lambda (inf); at n = 0 its whole chain is free
    assert g.retrieve(0.0, 0.0).features == f12
    h = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=10.0,
                       lambdas=(0.0, math.inf))
    assert h.skyline[0] == (0.0, 0.5, 0.0, 0, frozenset())
    assert h.skyline[1] == (10.0, 0.6, math.inf, 1, f1)
    assert h.skyline[3] == (110.0, 0.9, 0.0, 2, f12)   # f1f2 keeps the first lambda, 0
    assert h.retrieve(0.0, 0.0).features == f12
    assert h.retrieve(1.0, 1.0).features == f2         # lambda 0's chain: f2 costs 1 at n=1
    assert g.retrieve(1.0, 1.0).features == f1         # lambda inf's chain: f1 costs 1 at n=1


def test_greedy_with_repeated_lambdas_builds_each_chain_once():
    acc, costs = retrieval_fixture()
    calls = []
    learner = learners.SyntheticLearner(lambda fs: calls.append(fs) or acc[fs])
    g = lattice.greedy(costs, learner, size=10.0, lambdas=(0.0, 0.0, math.inf, 0.0))
    assert g.lambdas == (0.0, 0.0, math.inf, 0.0)
    assert set(g.sequences) == {0.0, math.inf}
    assert g.sequences[0.0] == [frozenset({"f2"}), frozenset({"f1", "f2"})]
    assert g.sequences[math.inf] == [frozenset({"f1"}), frozenset({"f1", "f2"})]
    assert len(calls) == len(set(calls)) == 4 == g.n_expanded


def test_greedy_cost_breaks_cost_ties_by_the_larger_gain():
    """lambda = inf: f1, f2 and f3 all cost 2; f3 gains most, then f2 (hand-computed)."""
    acc = {s: 0.5 + sum({"f1": 0.01, "f2": 0.1, "f3": 0.2, "f4": 0.05}[f] for f in s)
           for s in all_sets(4)}
    costs = {"f1": "2", "f2": "2", "f3": "2", "f4": "1"}
    g = lattice.greedy_cost(costs, learners.SyntheticLearner(acc.__getitem__))
    added = [next(iter(b - a)) for a, b in zip([frozenset(), *g.sequences[math.inf]],
                                               g.sequences[math.inf], strict=False)]
    assert added == ["f4", "f3", "f2", "f1"]
    two = {s: a for s, a in acc.items() if s <= {"f1", "f2"}}
    h = lattice.greedy_cost({"f1": "2", "f2": "2"}, learners.SyntheticLearner(two.__getitem__))
    assert h.sequences[math.inf][0] == frozenset({"f2"})   # two tied: the larger gain


def test_greedy_finite_lambda_breaks_score_ties_by_cost_then_gain():
    """lambda = 1/8 (dyadic numbers: exact ties): f1 scores 1/4 - 1/8 * 1, f2 3/8 - 1/8 * 2,
    f3 1/8 - 0, all 1/8: the smallest marginal cost wins, f3; then f1 (cost 1) before f2
    (cost 2).  lambda = 0: f2 (largest gain); equal gains and costs: the earlier feature."""
    gain = {"f1": 0.25, "f2": 0.375, "f3": 0.125}
    acc = {s: 0.125 + sum(gain[f] for f in s) for s in all_sets(3)}
    costs = {"f1": "1", "f2": "2", "f3": "0"}
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), lambdas=(0.125, 0.0))
    added = [next(iter(b - a)) for a, b in zip([frozenset(), *g.sequences[0.125]],
                                               g.sequences[0.125], strict=False)]
    assert added == ["f3", "f1", "f2"]
    assert g.sequences[0.0][0] == frozenset({"f2"})
    flat = {s: 0.5 + 0.125 * len(s) for s in all_sets(3)}
    h = lattice.greedy({"f1": "1", "f2": "1", "f3": "1"},
                       learners.SyntheticLearner(flat.__getitem__), lambdas=(0.5,))
    assert h.sequences[0.5] == [frozenset({"f1"}), frozenset({"f1", "f2"}),
                                frozenset({"f1", "f2", "f3"})]


def test_greedy_reports_its_inputs_stats_and_uses_the_cache():
    acc, costs = retrieval_fixture()
    learner = learners.SyntheticLearner(acc.__getitem__)
    cache: dict = {}
    g = lattice.greedy(costs, learner, size=10.0, lambdas=[0.0, math.inf], cache=cache)
    assert repr(g) == "GreedyResult(lambdas=2, expanded=4, size=10.0)"
    assert g.costs == {"f1": polydom.CostCurve([0.0, 1.0]), "f2": polydom.CostCurve([0, 0, 1])}
    assert g.cost_of(frozenset({"f1", "f2"})) == polydom.CostCurve([0.0, 1.0, 1.0])
    assert set(g.expanded) == set(acc) and g.n_expanded == 4
    assert all(g.expanded[s].accuracy == acc[s] for s in acc)
    assert {k: v for k, v in g.stats.items() if k != "fit_seconds"} == {
        "expanded": 4, "trained": 4, "cache_hits": 0}
    assert g.stats["fit_seconds"] >= 0.0
    assert set(cache) == set(acc) and learner.calls_ == 4
    for again in (lattice.greedy(costs, learner, size=10.0, lambdas=(0.0, math.inf),
                                 cache=cache),
                  lattice.greedy_acc(costs, learner, 10.0, cache),
                  lattice.greedy_cost(costs, learner, 10.0, cache)):
        assert again.stats["trained"] == 0 and again.stats["cache_hits"] == again.n_expanded
    assert learner.calls_ == 4
    acc_only = lattice.greedy_acc(costs, learner, size=10.0)
    assert acc_only.lambdas == (0.0,) and acc_only.size == 10.0
    assert acc_only.sequences == {0.0: g.sequences[0.0]}
    cost_only = lattice.greedy_cost(costs, learner, size=10.0)
    assert cost_only.lambdas == (math.inf,) and cost_only.sequences[math.inf] == \
        g.sequences[math.inf]


def test_greedy_refuses_empty_lambdas_and_curves_negative_below_one():
    learner = learners.SyntheticLearner(lambda fs: 0.5)
    with pytest.raises(ValueError, match="^lambdas must not be empty$"):
        lattice.greedy({"a": [1.0]}, learner, lambdas=[])
    with pytest.raises(ValueError, match=r"^lambdas must be >= 0 \(inf allowed\), got nan$"):
        lattice.greedy({"a": [1.0]}, learner, lambdas=[0.0, math.nan])
    # retrieval may be asked at any size >= 0, so costs must be non-negative on all of it
    with pytest.raises(ValueError, match="a"):
        lattice.greedy({"a": "n - 0.5"}, learner)
    with pytest.raises(ValueError, match=r"^costs name features \['a'\] but the learner has "
                                         r"\['b'\]$"):
        lattice.greedy({"a": [1.0]}, FixedFeatures(["b"]))


class FixedFeatures(learners.SyntheticLearner):
    """A synthetic learner that declares its feature columns."""

    def __init__(self, names):
        super().__init__(lambda fs: 0.5)
        self._names = names

    def feature_columns(self):
        return list(self._names)


def test_greedy_check_rejects_broken_chains_and_skylines():
    acc, costs = retrieval_fixture()
    g = lattice.greedy(costs, learners.SyntheticLearner(acc.__getitem__), size=10.0,
                       lambdas=(0.0, math.inf))
    g._check()
    broken = [
        ("_seq", {0.0: [2, 3], math.inf: [1]}),           # a chain one set short
        ("_seq", {0.0: [3, 3], math.inf: [1, 3]}),        # adds two features at once
        ("_seq", {0.0: [2, 1], math.inf: [1, 3]}),        # not nested
        ("_seq", {0.0: [2, 3], math.inf: [1, 1]}),        # ends short of the full set
        ("_sky", list(reversed(g._sky))),                 # most expensive first
        ("_sky", [(g._sky[1][0], *g._sky[0][1:]), (g._sky[0][0], *g._sky[1][1:])]),  # costs
        ("_sky", [g._sky[0], (g._sky[1][0], 0.5, *g._sky[1][2:])]),  # accuracy not rising
    ]
    for attr, value in broken:
        saved = getattr(g, attr)
        setattr(g, attr, value)
        with pytest.raises(AssertionError):
            g._check()
        setattr(g, attr, saved)


# ---------------------------------------------------------------------------- Naive-Expand-All
def test_expand_all_trains_every_set_in_lattice_order_and_reports_it():
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(3)}
    costs = {"f1": "1 + n", "f2": "2", "f3": "n**2"}
    exp = lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__))
    exp._check()
    assert list(exp.expanded) == sorted(acc, key=lambda s: lattice_order(costs, s))
    assert all(exp.expanded[s].accuracy == acc[s] for s in acc)
    assert exp.pruned == {} and exp.complete
    assert (exp.alpha, exp.delta, exp.candidate_alpha) == (1.0, 0.0, 1.0)
    assert exp.domain == (0.0, math.inf)
    assert {k: v for k, v in exp.stats.items() if k != "fit_seconds"} == {
        "expanded": 8, "trained": 8, "cache_hits": 0, "checks": 0, "sandwiched": 0,
        "cost_pruned": 0, "covering_skips": 0, "traversal": "all", "scope": "expanded",
        "covering": False, "cost_pruning": False}
    assert exp.stats["fit_seconds"] >= 0.0
    assert lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__),
                              candidate_alpha="same").candidate_alpha == 1.0
    assert lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__),
                              candidate_alpha=2.0).candidate_alpha == 2.0


def test_expand_all_costs_hold_on_the_given_domain_and_use_the_cache():
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(2)}
    costs = {"f1": "n - 1", "f2": "5 - n"}         # non-negative on [1, 5] only
    with pytest.raises(ValueError, match="f1"):
        lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__))
    with pytest.raises(ValueError, match="f2"):
        lattice.expand_all(costs, learners.SyntheticLearner(acc.__getitem__), n_min=1.0)
    learner = learners.SyntheticLearner(acc.__getitem__)
    cache: dict = {}
    exp = lattice.expand_all(costs, learner, cache, n_min=1.0, n_max=5.0)
    assert exp.domain == (1.0, 5.0)
    again = lattice.expand_all(costs, learner, cache, n_min=1.0, n_max=5.0)
    assert again.stats["cache_hits"] == 4 and again.stats["trained"] == 0
    assert learner.calls_ == 4
    with pytest.raises(ValueError, match=r"^costs name features \['a'\] but the learner has "
                                         r"\['b'\]$"):
        lattice.expand_all({"a": [1.0]}, FixedFeatures(["b"]))


def test_greedy_defaults_and_the_empty_lattice():
    acc, costs = retrieval_fixture()
    learner = learners.SyntheticLearner(acc.__getitem__)
    for g in (lattice.greedy(costs, learner), lattice.greedy_acc(costs, learner),
              lattice.greedy_cost(costs, learner)):
        assert g.size == 1.0
    assert lattice.greedy(costs, learner).lambdas == lattice.baselines.PAPER_LAMBDAS
    # at n0 = 1 both features cost 1: Greedy-Cost breaks the tie by the larger gain (f2)
    assert lattice.greedy_cost(costs, learner).sequences[math.inf][0] == frozenset({"f2"})
    empty = lattice.greedy({}, learners.SyntheticLearner(lambda fs: 0.5), lambdas=(0.0, 1.0))
    empty._check()
    assert empty.sequences == {0.0: [], 1.0: []} and empty.n_expanded == 1
    assert empty.skyline == [(0.0, 0.5, 0.0, 0, frozenset())]
    assert empty.retrieve(5.0, 0.0).features == frozenset()
