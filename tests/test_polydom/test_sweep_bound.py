"""An up-front bound on the sweep's work (issue 31 item 6): 10^5 candidates whose curves all
cross each other ran past 60 s with no refusal.  Crossing pairs are counted in O(K log K)
from the candidates' orders at both ends of the domain, before the O(K * S) pruning; the
sweep itself stops at the same limit when curves cross back and forth; every refusal is one
line naming ``max_crossings`` and how to raise it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
import polydom
from polydom import Candidate, CostCurve, IndexAll, PolyDomIndex
from polydom.errors import InvalidArgumentError
from polydom.index import dominance, polydom_index
from polydom.index.sweep import (
    MAX_CROSSINGS,
    coefficient_matrix,
    crossing_lower_bound,
    kinetic_sweep,
)
from tests.index_oracle import full_scan, pair_crossings


def _all_crossing(k: int, seed: int = 0) -> list[Candidate]:
    """``k`` lines, intercepts rising and slopes falling: every pair crosses once on
    ``(0, inf)``, each at its own size."""
    rng = np.random.default_rng(seed)
    a = np.sort(rng.uniform(0, 100, k))
    b = np.sort(rng.uniform(0, 100, k))[::-1]
    return [Candidate(f"c{i}", 0.5 + 0.4 * i / k, [a[i], b[i]]) for i in range(k)]


def test_the_probe_is_refused_before_pruning_or_sweeping(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the work the bound is there to avoid was started")

    monkeypatch.setattr(polydom_index, "prune_columns", never)
    monkeypatch.setattr(polydom_index, "kinetic_sweep", never)
    cands = _all_crossing(3000)  # 4,498,500 crossings: about 400 s of sweep
    with pytest.raises(InvalidArgumentError) as caught:
        PolyDomIndex.build(cands, 0.0, math.inf)
    message = str(caught.value)
    counted = int(message.split("cross at least ")[1].split(" times")[0].replace(",", ""))
    assert MAX_CROSSINGS < counted <= 4_498_500  # the count stops once past the limit
    assert message == (
        f"the cost curves of the 3,000 candidates cross at least {counted:,} times on the "
        f"domain; the sweep's limit is max_crossings={MAX_CROSSINGS:,} (about 90 microseconds "
        "each): pass a larger max_crossings to polydom.build_index or PolyDomIndex.build, or "
        "give fewer candidates")
    with pytest.raises(InvalidArgumentError, match="max_crossings=100"):
        IndexAll.build(_all_crossing(30), 0.0, math.inf, max_crossings=100)


def test_a_raised_limit_builds_and_answers_as_the_full_scan():
    cands = _all_crossing(40)  # 780 crossings
    with pytest.raises(InvalidArgumentError, match="cross at least 780 times"):
        PolyDomIndex.build(cands, 0.0, math.inf, max_crossings=779)
    index = PolyDomIndex.build(cands, 0.0, math.inf, max_crossings=780)
    for size in (0.0, 0.3, 1.0, 7.5, 100.0):
        for budget in (50.0, 120.0, 1000.0):
            got, want = index.lookup(size, budget), full_scan(cands, size, budget)
            assert (got and got.key) == (want and want.key)


def test_curves_that_cross_back_are_counted_up_front_and_stop_the_sweep():
    """i (n - 5)**2 + 50 - i**3 / 100: the same order at 0 and 10, the reverse at 5: every
    pair crosses twice, at (n - 5)**2 = (i*i + i*j + j*j) / 100, 2 * 66 = 132 times in all.
    The orders compared at sizes inside the domain see them (the ends alone saw none); the
    sweep stops at its own limit too."""
    cands = [Candidate(f"q{i}", 0.5 + i / 100,
                       CostCurve.parse(f"{i}*(n - 5)**2 + 50 - {i}**3 / 100"))
             for i in range(1, 13)]
    coefs = coefficient_matrix([c.cost for c in cands])
    assert 66 <= crossing_lower_bound(coefs, 0.0, 10.0) <= 132
    with pytest.raises(InvalidArgumentError, match="cross at least [0-9]+ times on the "
                                                   "domain; the sweep's limit is "
                                                   "max_crossings=20"):
        PolyDomIndex.build(cands, 0.0, 10.0, max_crossings=20)
    with pytest.raises(InvalidArgumentError, match="cross more than 20 times on the domain; "
                                                   "the sweep's limit is max_crossings=20"):
        kinetic_sweep(list(coefs), [c.accuracy for c in cands][::-1], 0.0, 10.0,
                      max_crossings=20)
    index = PolyDomIndex.build(cands, 0.0, 10.0, max_crossings=1000)
    assert 20 < index.stats_["events"] <= 132
    for size in (0.0, 2.0, 4.2, 5.0, 6.1, 9.0):
        for budget in (20.0, 45.0, 49.9, 100.0, 400.0):
            got, want = index.lookup(size, budget), full_scan(cands, size, budget)
            assert (got and got.key) == (want and want.key)


def test_build_index_refuses_crossing_extra_candidates_before_training():
    class NoTraining:
        def expand(self, features):
            raise AssertionError("trained before the bound was checked")

    extra = [Candidate(("x", i), c.accuracy, c.cost, ["a"]) for i, c in
             enumerate(_all_crossing(60))]
    with pytest.raises(InvalidArgumentError, match="max_crossings=1,000"):
        polydom.build_index({"a": "1"}, NoTraining(), extra_candidates=extra, max_crossings=1000)
    with pytest.raises(InvalidArgumentError, match="max_crossings must be an integer >= 0"):
        polydom.build_index({"a": "1"}, learners.SyntheticLearner(lambda s: 0.5),
                            max_crossings=-1)


coefficients = st.lists(st.integers(0, 9).map(float), min_size=1, max_size=4)


@settings(deadline=None, max_examples=60)
@given(st.lists(coefficients, min_size=2, max_size=12),
       st.sampled_from([(0.0, 10.0), (1.0, 50.0), (0.0, math.inf), (3.0, math.inf)]))
def test_the_bound_never_exceeds_the_pairs_that_cross(rows, domain):
    """Every pair counted crosses on the domain (the brute-force roots confirm a sign
    change); for lines the count is exact."""
    lo, hi = domain
    curves = [CostCurve(r) for r in rows]
    coefs = coefficient_matrix(curves)
    bound = crossing_lower_bound(coefs, lo, hi)
    top = hi if math.isfinite(hi) else 1e7
    crossing = sum(
        1 for i in range(len(curves)) for j in range(i + 1, len(curves))
        if pair_crossings(curves[i].coefficients, curves[j].coefficients, lo, top))
    assert bound <= crossing
    if coefs.shape[1] <= 2:
        assert bound == crossing


def test_pruning_tests_only_candidates_no_dearer_at_the_domain_start(monkeypatch):
    """Undominated curves that never cross (each cheaper and less accurate than the next)
    pruned in O(K * S) exact tests on main (25 s at K = 4,000): a curve dearer at ``n_min``
    cannot dominate, so none is tested now, and all are kept."""
    calls = []
    tested = dominance.cost_le_many

    def counting(coefs, *args, **kwargs):
        calls.append(len(coefs))
        return tested(coefs, *args, **kwargs)

    monkeypatch.setattr(dominance, "cost_le_many", counting)
    k = 2000
    cands = [Candidate(f"c{i}", 0.5 + 0.4 * i / k, [float(i), 1.0]) for i in range(k)]
    assert sorted(dominance.prune_dominated(cands, 0.0, math.inf)) == list(range(k))
    assert sum(calls) == 0
    # a dominated one is still found: as cheap at the start, dearer later, less accurate
    cands.append(Candidate("worse", 0.1, [0.0, 2.0]))
    assert len(dominance.prune_dominated(cands, 0.0, math.inf)) == k


@settings(deadline=None, max_examples=80)
@given(st.lists(st.tuples(coefficients, st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9])),
                min_size=1, max_size=12),
       st.sampled_from([(0.0, 10.0), (1.0, 50.0), (0.0, math.inf), (3.0, math.inf)]))
def test_the_curves_counted_for_the_bound_are_all_kept_by_pruning(rows, domain):
    """The bound counts crossings only among curves on the front at an end of the domain;
    pruning keeps every one of them (ties and duplicates included), so the count stays a
    lower bound of the crossings the sweep meets."""
    from polydom.index.sweep import surviving_pruning

    lo, hi = domain
    cands = [Candidate(f"c{i}", acc, r) for i, (r, acc) in enumerate(rows)]
    sure = surviving_pruning(coefficient_matrix([c.cost for c in cands]),
                             np.array([c.accuracy for c in cands]), lo, hi)
    kept = set(dominance.prune_dominated(cands, lo, hi))
    assert set(np.flatnonzero(sure).tolist()) <= kept


def test_many_crossing_curves_that_pruning_removes_are_not_refused():
    """2,000 random cubic curves cross each other over a million times, but pruning keeps a
    few dozen: examples/index_demo.py builds them (the bound over the whole pool refused
    it)."""
    rng = np.random.default_rng(7)
    cands = [Candidate(f"m{i}", float(rng.uniform(0.5, 1.0)),
                       (rng.uniform(0, 3, 4) ** 3 * [2, 3, 5, 0.05]).tolist())
             for i in range(2000)]
    assert crossing_lower_bound(coefficient_matrix([c.cost for c in cands]), 0.0, 500.0) \
        > MAX_CROSSINGS
    index = PolyDomIndex.build(cands, 0.0, 500.0)
    assert index.stats_["undominated"] < 200
    for size, budget in [(286.0, 13713.0), (15.6, 6780.0), (412.0, 3363.0)]:
        got, want = index.lookup(size, budget), full_scan(cands, size, budget)
        assert (got and got.key) == (want and want.key)
