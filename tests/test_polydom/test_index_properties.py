"""PolyDomIndex against brute force (spec section 7: I3, I7, I8, I9, I17, I18, I20)."""

from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from polydom import Candidate, IndexAll, NaiveLookup, PolyDomIndex
from polydom.index.dominance import prune_dominated
from polydom.index.sweep import kinetic_sweep
from tests.index_oracle import (
    all_crossings,
    canonical_index,
    full_scan,
    full_scan_many,
    min_gap,
    skyline_at,
)
from tests.strategies import candidate_pools, domains, examples, large_pools, small_int_coefs

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def query_sizes(index, lo: float, hi: float) -> list[float]:
    top = hi if math.isfinite(hi) else max(lo + 50.0, 2.0 * float(index.breakpoints[-1]) + 5.0)
    sizes = {lo, top, *np.linspace(lo, top, 23).tolist()}
    for b in index.breakpoints.tolist():
        for x in (b, b - 1e-6, b + 1e-6):
            if lo <= x <= top:
                sizes.add(x)
    return sorted(sizes)


def query_budgets(cands: list[Candidate], size: float) -> list[float]:
    out = {0.0, 1e12}
    for c in cands:
        v = c.cost(size)
        out.update({v, v * (1 + 1e-9) + 1e-12, max(0.0, v * (1 - 1e-9) - 1e-12)})
    return sorted(out)


def assert_same_answer(index, cands, size: float, budget: float) -> None:
    """The index answers as the full scan does; at an exact floating tie (a size on a
    breakpoint, a budget equal to a cost up to rounding) any answer between the scans at
    budget -/+ 1e-9 relative is accepted."""
    got = index.lookup(size, budget)
    want = full_scan(cands, size, budget)
    if got is not None:
        assert got.cost(size) <= budget
    if (got and got.key) == (want and want.key):
        return
    slack = 1e-9 * (abs(budget) + 1.0)
    below = full_scan(cands, size, budget - slack) if budget >= slack else None
    above = full_scan(cands, size, budget + slack)
    got_acc = got.accuracy if got else -1.0
    assert (below.accuracy if below else -1.0) <= got_acc <= (above.accuracy if above else -1.0)
    near_break = np.min(np.abs(index.breakpoints - size)) <= 1e-9 * max(1.0, size)
    assert got_acc == (want.accuracy if want else -1.0) or near_break


@SETTINGS
@given(candidate_pools(), domains)
def test_lookup_equals_full_scan_everywhere(cands, domain):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    index._check()
    naive = NaiveLookup.build(cands, lo, hi)
    every = IndexAll.build(cands, lo, hi)
    every._check()
    for size in query_sizes(index, lo, hi):
        for budget in query_budgets(cands, size):
            assert_same_answer(index, cands, size, budget)
            assert_same_answer(naive, cands, size, budget)
            a, b = index.lookup(size, budget), every.lookup(size, budget)
            assert (a.key if a else None) == (b.key if b else None)


@SETTINGS
@given(candidate_pools(), domains, st.randoms(use_true_random=False))
def test_lookup_many_equals_lookup(cands, domain, rnd):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    sizes = np.array(query_sizes(index, lo, hi))
    pairs = [(s, b) for s in sizes for b in query_budgets(cands, s)]
    rnd.shuffle(pairs)
    s = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    many = index.lookup_many(s, b)
    assert many.tolist() == [index.lookup_position(x, y) for x, y in pairs]


@SETTINGS
@given(candidate_pools(coefs=small_int_coefs), domains)
def test_breaks_and_skylines_are_canonical(cands, domain):
    """I7/I8: breaks are crossings where the brute-force skyline changes; minimal ranges."""
    lo, hi = domain
    crossings = all_crossings(cands, lo, hi)
    assume(min_gap([lo, *crossings]) > 1e-3)
    index = PolyDomIndex.build(cands, lo, hi)
    index._check()
    breaks, skylines, _ = canonical_index(cands, lo, hi)
    # multiple roots (e.g. (n - 1)**3) are only located to about 1e-5 in double precision
    assert len(index.breakpoints) == len(breaks)
    assert np.allclose(index.breakpoints, breaks, rtol=1e-5, atol=1e-9)
    assert [[c.key for c in s] for s in index.skylines] == skylines
    every = IndexAll.build(cands, lo, hi)
    assert len(index) <= len(every) and index.entries <= every.entries
    # Index-All has one range per crossing among the undominated candidates
    kept = [cands[i] for i in prune_dominated(cands, lo, hi)]
    assert len(every) == 1 + len(all_crossings(kept, lo, hi))


@SETTINGS
@given(candidate_pools(coefs=small_int_coefs), domains)
def test_sweep_equals_the_brute_force_skylines(cands, domain):
    """I9: the sweep keeps exactly the crossings where the skyline, recomputed from scratch
    by the oracle (dense sign checks, no Taylor orders), changes; Index-All keeps every
    crossing of the undominated curves."""
    lo, hi = domain
    kept = prune_dominated(cands, lo, hi)
    pool = [cands[i] for i in kept]
    crossings = all_crossings(pool, lo, hi)
    assume(min_gap([lo, *crossings]) > 1e-3)
    coefs = [c.cost.coefficients for c in pool]
    accs = [c.accuracy for c in pool]
    minimal = kinetic_sweep(coefs, accs, lo, hi)
    breaks, skylines, _ = canonical_index(pool, lo, hi)
    assert np.allclose(minimal.breaks, breaks, rtol=1e-5, atol=1e-9)
    assert [[pool[k].key for k in sky] for sky in minimal.skylines] == skylines
    every = kinetic_sweep(coefs, accs, lo, hi, keep_all=True)
    assert np.allclose(every.breaks, [lo, *crossings], rtol=1e-5, atol=1e-9)
    # counts: one reordering per crossing point, one event per point where neighbours meet
    assert minimal.crossings == every.crossings == len(crossings)
    assert minimal.events == every.events == len(crossings)
    for x, sky in zip(every.breaks, every.skylines, strict=True):
        probe = x + 1e-4 * max(1.0, abs(x))
        assert [pool[k].key for k in sky] == skyline_at(pool, probe)


@SETTINGS
@given(candidate_pools(), domains)
def test_accuracy_is_monotone_in_budget_and_size(cands, domain):
    """I17: more budget never hurts; with non-negative costs a larger size never helps."""
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    sizes = query_sizes(index, lo, hi)
    for size in sizes:
        accs = [
            (index.lookup(size, b).accuracy if index.lookup(size, b) else -1.0)
            for b in query_budgets(cands, size)
        ]
        assert accs == sorted(accs)
    monotone_costs = all(np.all(c.cost.coefficients >= 0) for c in cands)
    if monotone_costs:
        for budget in (1.0, 10.0, 100.0):
            accs = [
                (index.lookup(s, budget).accuracy if index.lookup(s, budget) else -1.0)
                for s in sizes
            ]
            assert accs == sorted(accs, reverse=True)


@SETTINGS
@given(candidate_pools(), domains, st.randoms(use_true_random=False))
def test_index_does_not_depend_on_input_order(cands, domain, rnd):
    """I18: permuting the candidates gives the same ranges and skylines."""
    lo, hi = domain
    a = PolyDomIndex.build(cands, lo, hi)
    shuffled = list(cands)
    rnd.shuffle(shuffled)
    b = PolyDomIndex.build(shuffled, lo, hi)
    assert a.breakpoints.tolist() == b.breakpoints.tolist()
    assert [[c.key for c in s] for s in a.skylines] == [[c.key for c in s] for s in b.skylines]


@SETTINGS
@given(candidate_pools(), st.integers(0, 30).map(float))
def test_fixed_size_index_is_that_sizes_skyline(cands, n0):
    """I20 (Problem 2): a one-point domain holds exactly the brute-force n0-skyline."""
    index = PolyDomIndex.build(cands, n0, n0)
    assert len(index) == 1
    assert [c.key for c in index.skylines[0]] == skyline_at(cands, n0)
    for budget in query_budgets(cands, n0):
        assert_same_answer(index, cands, n0, budget)


@SETTINGS
@given(candidate_pools(), domains, st.integers(0, 60).map(float))
def test_fixed_budget_index_matches_lookup(cands, domain, budget):
    """Problem 3: the one-dimensional index over sizes answers as the full index does."""
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    fixed = index.for_budget(budget)
    points = fixed.breakpoints.tolist()
    sizes = set(query_sizes(index, lo, hi))
    for p in points:
        sizes.update(x for x in (p, p + 1e-7, p - 1e-7) if lo <= x <= hi)
    for size in sorted(sizes):
        got = fixed.lookup(size)
        want = index.lookup(size, budget)
        if (got and got.key) == (want and want.key):
            continue
        # only a floating tie (a cost equal to the budget up to rounding) may differ
        slack = 1e-9 * (budget + 1.0)
        below = index.lookup(size, budget - slack) if budget >= slack else None
        above = index.lookup(size, budget + slack)
        got_acc = got.accuracy if got else -1.0
        assert (below.accuracy if below else -1.0) <= got_acc
        assert got_acc <= (above.accuracy if above else -1.0)
        assert (below and below.key) != (above and above.key), size


def test_random_large_pool_against_full_scan():
    rng = random.Random(7)
    cands = [
        Candidate(
            i,
            round(rng.uniform(0.5, 0.95), 2),
            [rng.uniform(0, 100), rng.uniform(0, 10), rng.uniform(0, 2), rng.uniform(0, 0.01)],
        )
        for i in range(300)
    ]
    index = PolyDomIndex.build(cands, 0.0, 500.0)
    index._check()
    sizes = np.array([rng.uniform(0, 500) for _ in range(2000)])
    budgets = np.array([rng.uniform(0, 3000) for _ in range(2000)])
    got = index.lookup_many(sizes, budgets)
    want = full_scan_many(cands, sizes, budgets)
    assert [cands[g].key if g >= 0 else None for g in got] == [w and w.key for w in want]
    for s, b in zip(sizes[:100], budgets[:100], strict=True):  # the vectorised oracle's own check
        assert full_scan_many(cands, np.array([s]), np.array([b]))[0] == full_scan(cands, s, b)


@settings(max_examples=examples(8), deadline=None)
@given(large_pools(), domains, st.integers(0, 2**32 - 1))
def test_large_pools_answer_as_the_full_scan(cands, domain, seed):
    """Hundreds of candidates with coefficients over ten orders of magnitude: every method
    answers random (size, budget) queries as the brute-force full scan does."""
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    index._check()
    naive = NaiveLookup.build(cands, lo, hi)
    rng = np.random.default_rng(seed)
    top = hi if math.isfinite(hi) else lo + 10.0 ** rng.uniform(0, 6)
    sizes = rng.uniform(lo, top, 60)
    for size in sizes:
        costs = sorted(c.cost(size) for c in cands)
        for budget in (*rng.choice(costs, 4), 0.0, costs[-1] * 2):
            budget = float(budget) * (1 + float(rng.choice([-1e-6, 0.0, 1e-6])))
            assert_same_answer(index, cands, float(size), budget)
            assert_same_answer(naive, cands, float(size), budget)


@SETTINGS
@given(candidate_pools(), domains)
def test_naive_scan_answers_skylines_and_batches_as_the_oracle(cands, domain):
    """The baseline is itself checked: its skyline at any size is the brute-force one, its
    batch answers are its single answers, and it stores every candidate in one range."""
    lo, hi = domain
    naive = NaiveLookup.build(cands, lo, hi)
    assert naive.entries == len(cands) and naive.breakpoints.tolist() == [lo]
    assert naive.candidates == cands
    sizes = [lo, lo + 0.5, lo + 3.0] if math.isinf(hi) else [lo, 0.5 * (lo + hi), hi]
    for size in sizes:
        assert [c.key for c in naive.skyline(size)] == skyline_at(cands, size)
        budgets = query_budgets(cands, size)
        got = naive.lookup_many(np.full((1, len(budgets)), size), np.array([budgets]))
        assert got.shape == (1, len(budgets)) and got.dtype == np.int64
        assert got[0].tolist() == [naive.lookup_position(size, b) for b in budgets]
