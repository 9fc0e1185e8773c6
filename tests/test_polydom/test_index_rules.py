"""The lookup rules "best" and "one_se" against full scans of the candidates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polydom import Candidate, IndexAll, NaiveLookup, PolyDomIndex
from polydom.index.built import Index
from tests.index_oracle import full_scan_one_se
from tests.strategies import candidate_pools, domains
from tests.test_polydom.test_index_properties import query_budgets, query_sizes

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: standard errors: none, the gaps between the strategy's sampled accuracies, wide, any
ses = st.one_of(st.sampled_from([0.0, 0.05, 0.1, 0.2, 1.0]), st.floats(0.0, 0.5))


@st.composite
def pools_with_errors(draw):
    """Candidate pools whose accuracies carry standard errors."""
    return [dataclasses.replace(c, accuracy_se=draw(ses)) for c in draw(candidate_pools())]


def assert_rule_answer(index, cands, size: float, budget: float) -> None:
    """``one_se`` answers as the scan does; at a floating tie (a size on a breakpoint, a
    budget equal to a cost up to rounding) the scan at budget -/+ 1e-9 relative may be
    the one matched."""
    got = index.lookup(size, budget, rule="one_se")
    best = index.lookup(size, budget)
    want = full_scan_one_se(cands, size, budget)
    slack = 1e-9 * (abs(budget) + 1.0)
    if got is not None:
        assert got.cost(size) <= budget + slack
        assert got.accuracy >= best.accuracy - best.accuracy_se
        assert got.cost(size) <= best.cost(size) + slack
    key = got and got.key
    if key == (want and want.key):
        return
    near = [full_scan_one_se(cands, size, b) for b in (budget - slack, budget + slack)
            if b >= 0]
    near_break = np.min(np.abs(index.breakpoints - size)) <= 1e-9 * max(1.0, size)
    assert key in [c and c.key for c in near] or near_break


@SETTINGS
@given(pools_with_errors(), domains)
def test_one_se_lookup_equals_full_scan_everywhere(cands, domain):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    every = IndexAll.build(cands, lo, hi)
    naive = NaiveLookup.build(cands, lo, hi)
    for size in query_sizes(index, lo, hi):
        for budget in query_budgets(cands, size):
            assert_rule_answer(index, cands, size, budget)
            assert_rule_answer(every, cands, size, budget)
            got = naive.lookup(size, budget, rule="one_se")
            want = full_scan_one_se(cands, size, budget)
            assert (got and got.key) == (want and want.key)


@SETTINGS
@given(pools_with_errors(), domains, st.randoms(use_true_random=False))
def test_lookup_many_one_se_equals_lookup(cands, domain, rnd):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    pairs = [(s, b) for s in query_sizes(index, lo, hi) for b in query_budgets(cands, s)]
    rnd.shuffle(pairs)
    s = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    for rule in ("best", "one_se"):
        many = index.lookup_many(s, b, rule=rule)
        assert many.tolist() == [index.lookup_position(x, y, rule) for x, y in pairs]


@SETTINGS
@given(candidate_pools(), domains)
def test_one_se_without_standard_errors_is_best(cands, domain):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    for size in query_sizes(index, lo, hi):
        for budget in query_budgets(cands, size):
            a = index.lookup(size, budget, rule="one_se")
            b = index.lookup(size, budget)
            assert (a and a.key) == (b and b.key)


def test_one_se_takes_the_cheapest_within_one_standard_error():
    cands = [Candidate("cheap", 0.80, "1"), Candidate("mid", 0.86, "5"),
             Candidate("best", 0.90, "10", accuracy_se=0.05)]
    index = PolyDomIndex.build(cands)
    assert index.lookup(0.0, 20.0).key == "best"
    assert index.lookup(0.0, 20.0, rule="one_se").key == "mid"  # 0.86 >= 0.90 - 0.05
    assert index.lookup(0.0, 4.0, rule="one_se").key == "cheap"  # the best that fits: cheap
    assert index.lookup(0.0, 0.5, rule="one_se") is None


def test_one_se_uses_the_standard_error_of_the_best_that_fits():
    cands = [Candidate("cheap", 0.80, "1"), Candidate("mid", 0.86, "5", accuracy_se=0.1),
             Candidate("best", 0.90, "10")]
    index = PolyDomIndex.build(cands)
    assert index.lookup(0.0, 20.0, rule="one_se").key == "best"
    assert index.lookup(0.0, 6.0, rule="one_se").key == "cheap"


def test_index_passes_the_rule_to_its_table():
    cands = [Candidate("cheap", 0.80, "1", features={"a"}),
             Candidate("best", 0.90, "10", features={"a"}, accuracy_se=0.2)]
    index = Index(PolyDomIndex.build(cands), {"a": "1"})
    assert index.lookup(0.0, 20.0).key == "best"
    assert index.lookup(0.0, 20.0, rule="one_se").key == "cheap"
    assert index.lookup_many(np.zeros(2), np.array([20.0, 0.5]), rule="one_se").tolist() == [0, -1]


@pytest.mark.parametrize("rule", ["cheapest", None, 1, "ONE_SE"])
def test_an_unknown_rule_is_named(rule):
    index = PolyDomIndex.build([Candidate("a", 0.5, "1")])
    naive = NaiveLookup.build([Candidate("a", 0.5, "1")])
    for call in (lambda: index.lookup(0.0, 2.0, rule=rule),
                 lambda: index.lookup(0.0, 0.5, rule=rule),
                 lambda: index.lookup_many(np.zeros(1), np.ones(1), rule=rule),
                 lambda: naive.lookup(0.0, 2.0, rule=rule)):
        with pytest.raises(ValueError, match="rule must be one of"):
            call()
