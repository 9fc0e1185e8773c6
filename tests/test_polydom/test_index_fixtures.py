"""The paper's Figure 3/5 index, bad input, and what a rejected call leaves behind."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from polydom import Candidate, CostCurve, IndexAll, NaiveLookup, PolyDomIndex
from polydom.index import SkylineTable, dominance
from polydom.index.dominance import canonical_order, cost_le_many, prune_dominated
from polydom.index.sweep import kinetic_sweep
from tests.curve_oracle import exactly_le
from tests.index_oracle import full_scan
from tests.strategies import candidate_pools, domains, examples

# every test here takes at most seconds: an endless loop (a mutant of the sweep or of a
# binary search) fails at 60 s instead of the suite's 300 s, before mutmut's own limit
pytestmark = pytest.mark.timeout(60)

FIG5 = [
    Candidate("F1", 0.70, "3*n + 0.2*n**2"),
    Candidate("F2", 0.75, "2 + 0.1*n**2"),
    Candidate("F3", 0.65, "8"),
    Candidate("F4", 0.80, "10"),
]


def test_figure_5_ranges_and_skylines():
    index = PolyDomIndex.build(FIG5)
    index._check()
    assert index.breakpoints.tolist() == pytest.approx([0, 0.652476, 7.745967, 8.944272], abs=1e-6)
    assert [[c.key for c in s] for s in index.skylines] == [
        ["F1", "F2", "F4"],
        ["F2", "F4"],
        ["F3", "F2", "F4"],
        ["F3", "F4"],
    ]
    assert index.entries == 10
    assert index.ranges[-1] == (pytest.approx(math.sqrt(80)), math.inf)


def test_figure_5_index_all_stores_every_crossing():
    every = IndexAll.build(FIG5)
    assert len(every) == 1 + 5
    assert every.stats_["crossings"] == 5
    assert every.entries > PolyDomIndex.build(FIG5).entries


def test_figure_5_lookups():
    index = PolyDomIndex.build(FIG5)
    assert index.lookup(5.0, 9.0).key == "F2"  # F2 costs 4.5, F4 10
    assert index.lookup(5.0, 10.0).key == "F4"
    assert index.lookup(9.0, 9.0).key == "F3"  # F2 costs 10.1 there
    assert index.lookup(0.5, 1.6).key == "F1"  # F1 costs 1.55, F2 2.025
    assert index.lookup(0.5, 1.0) is None
    assert index.lookup_position(5.0, 10.0) == 3


def test_skyline_at_size():
    index = PolyDomIndex.build(FIG5)
    assert [c.key for c in index.skyline(8.0)] == ["F3", "F2", "F4"]


def test_one_candidate_and_constant_curves():
    index = PolyDomIndex.build([Candidate("only", 0.5, "0")])
    assert index.lookup(1e9, 0.0).key == "only"
    assert len(index) == 1


@pytest.mark.parametrize(
    "size, budget, fragment",
    [
        (math.nan, 1.0, "size"),
        (-1.0, 1.0, "size"),
        (math.inf, 1.0, "size"),
        (1.0, math.nan, "budget"),
        (1.0, -0.5, "budget"),
        (1.0, math.inf, "budget"),
    ],
)
def test_bad_size_or_budget_is_named(size, budget, fragment):
    index = PolyDomIndex.build(FIG5)
    with pytest.raises(ValueError, match=fragment):
        index.lookup(size, budget)
    with pytest.raises(ValueError, match=fragment):
        NaiveLookup.build(FIG5).lookup(size, budget)


def test_size_outside_domain_is_rejected():
    index = PolyDomIndex.build(FIG5, 1.0, 10.0)
    with pytest.raises(ValueError, match=r"outside the index domain \[1.0, 10.0\]"):
        index.lookup(10.5, 5.0)
    with pytest.raises(ValueError, match=r"sizes\[1\]"):
        index.lookup_many(np.array([2.0, 0.5]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"budgets\[0\]"):
        index.lookup_many(np.array([2.0]), np.array([np.nan]))


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: PolyDomIndex.build([]), "empty"),
        (lambda: PolyDomIndex.build([FIG5[0], FIG5[0]]), "duplicate candidate key 'F1'"),
        (lambda: PolyDomIndex.build([Candidate("neg", 0.5, "5 - n")]), "negative somewhere"),
        (lambda: PolyDomIndex.build(FIG5, n_min=-1.0), "n_min"),
        (lambda: PolyDomIndex.build(FIG5, n_min=5.0, n_max=2.0), "n_max"),
        (lambda: PolyDomIndex.build(FIG5, n_min=math.nan), "n_min"),
        (lambda: Candidate("a", 1.5, "n"), r"accuracy of candidate 'a' must be in \[0, 1\]"),
        (lambda: Candidate("a", math.nan, "n"), "accuracy"),
        (lambda: Candidate("a", 0.5, [math.nan]), "finite"),
        (lambda: Candidate("a", 0.5, "cos(n)"), "function call"),
        (lambda: Candidate(["unhashable"], 0.5, "n"), "hashable"),
    ],
)
def test_bad_candidates_are_named(make, fragment):
    with pytest.raises(ValueError, match=fragment):
        make()


def test_negative_curve_is_fine_where_the_domain_excludes_it():
    index = PolyDomIndex.build([Candidate("late", 0.5, "n - 5")], n_min=5.0, n_max=9.0)
    assert index.lookup(6.0, 1.0).key == "late"


def test_rejected_calls_leave_everything_as_it_was():
    cands = list(FIG5)
    index = PolyDomIndex.build(cands)
    before = (index.breakpoints.tolist(), index.skyline_positions, repr(index))
    with pytest.raises(ValueError):
        PolyDomIndex.build([*cands, Candidate("F1", 0.9, "1")])
    for bad in [(math.nan, 1.0), (1.0, -1.0)]:
        with pytest.raises(ValueError):
            index.lookup(*bad)
        with pytest.raises(ValueError):
            index.lookup_many(np.array([bad[0]]), np.array([bad[1]]))
    assert cands == FIG5
    assert (index.breakpoints.tolist(), index.skyline_positions, repr(index)) == before
    assert index.lookup(5.0, 9.0).key == "F2"


def brute_dominates(
    r: Candidate, s: Candidate, lo: float, hi: float, rank, rel: float = 1e-12
) -> bool:
    """Def. 3.1 with the key tie-break, cost order checked on a dense grid plus the ends."""
    top = hi if math.isfinite(hi) else lo + 1e4
    grid = np.concatenate(
        [
            np.linspace(lo, min(top, lo + 20), 4001),
            np.linspace(lo, top, 3001),
            lo + np.geomspace(1e-7, 1e4, 3001),
            np.geomspace(1e4, 1e40, 400),
        ]
    )
    # add the extrema of the difference (numpy's roots of its derivative): a dip between
    # grid points would otherwise go unseen
    d = np.zeros(max(r.cost.coefficients.size, s.cost.coefficients.size))
    d[: s.cost.coefficients.size] += s.cost.coefficients
    d[: r.cost.coefficients.size] -= r.cost.coefficients
    if d.size > 2:
        extrema = np.polynomial.polynomial.polyroots(np.polynomial.polynomial.polyder(d))
        grid = np.concatenate([grid, extrema.real[np.abs(extrema.imag) < 1e-9]])
    grid = grid[grid >= lo]
    if math.isfinite(hi):
        grid = grid[grid <= hi]
    cr, cs = r.cost(grid), s.cost(grid)
    # rounding scale: the curves with absolute coefficients (what cancels in evaluation)
    scale = np.polynomial.polynomial.polyval(np.abs(grid), np.abs(r.cost.coefficients))
    scale += np.polynomial.polynomial.polyval(np.abs(grid), np.abs(s.cost.coefficients))
    tol = rel * scale
    le = bool(np.all(cr <= cs + tol))
    ge = bool(np.all(cs <= cr + tol))
    if not le or r.accuracy < s.accuracy:
        return False
    return r.accuracy > s.accuracy or not ge or rank[r.key] < rank[s.key]


@given(candidate_pools(max_size=8), domains)
def test_prune_dominated_keeps_exactly_the_undominated(cands, domain):
    lo, hi = domain
    rank = {c.key: i for i, c in enumerate(sorted(cands, key=lambda c: c.key))}
    kept = {cands[i].key for i in prune_dominated(cands, lo, hi)}

    def undominated(rel: float) -> set:
        return {
            s.key
            for s in cands
            if not any(r is not s and brute_dominates(r, s, lo, hi, rank, rel) for r in cands)
        }

    strict, loose = undominated(1e-14), undominated(1e-10)
    # a dominance decided only at the level of rounding is a floating tie: skip it
    assume(strict == loose)
    assert kept == strict


@given(candidate_pools(max_size=8), domains, st.sampled_from([1.0, 1.1, 1.2, 1.5]))
def test_pruning_loses_at_most_alpha_at_any_query(cands, domain, alpha):
    """Scanning only the kept candidates answers within alpha of scanning all of them
    (exactly, with alpha = 1)."""
    lo, hi = domain
    kept = [cands[i] for i in prune_dominated(cands, lo, hi, alpha=alpha)]
    top = hi if math.isfinite(hi) else lo + 100
    for size in np.linspace(lo, top, 13):
        for c in cands:
            budget = c.cost(size)
            full = full_scan(cands, size, budget)
            mine = full_scan(kept, size, budget)
            assert mine is not None
            assert alpha * mine.accuracy >= full.accuracy - 1e-12


def test_prune_with_alpha_is_bounded_by_alpha():
    cands = [
        Candidate("a", 0.80, "10"),
        Candidate("b", 0.85, "11"),
        Candidate("c", 0.95, "12"),
    ]
    assert {cands[i].key for i in prune_dominated(cands, alpha=1.1)} == {"a", "c"}
    assert {cands[i].key for i in prune_dominated(cands, alpha=1.2)} == {"a"}
    assert {cands[i].key for i in prune_dominated(cands, alpha=1.0)} == {"a", "b", "c"}
    with pytest.raises(ValueError, match="alpha"):
        prune_dominated(cands, alpha=0.9)


def test_prune_defaults_to_the_whole_half_line():
    """Without a domain, dominance is judged on [0, inf): ``b`` is cheaper below n = 0.5."""
    cands = [Candidate("a", 0.5, "1"), Candidate("b", 0.4, "2*n")]
    assert prune_dominated(cands) == [0, 1]
    assert prune_dominated(cands, n_min=1.0) == [0]


def test_accuracy_differences_below_acc_tol_count_when_alpha_is_one():
    """alpha == 1 is exact: a candidate more accurate by 1e-13 and dearer is not dominated."""
    cands = [Candidate("a", 0.8, "1"), Candidate("b", 0.8 + 1e-13, "2")]
    assert prune_dominated(cands) == [1, 0]


def test_safe_mode_drops_a_candidate_at_exactly_alpha_in_any_input_order():
    """1.5 * 0.5 == 0.75 exactly: ``b`` is within alpha of the cheaper ``a`` and goes; ``c``
    is not within alpha of ``a`` and stays.  Given most accurate first, as here, the safe
    mode must still take the candidates by accuracy ascending."""
    cands = [Candidate("c", 0.9, "3"), Candidate("b", 0.75, "2"), Candidate("a", 0.5, "1")]
    assert prune_dominated(cands, alpha=1.5) == [0, 2]
    # cheaper on [0, 1] but not beyond (10 vs 11 - n + n**2 / 20): decided by the roots, on
    # the domain asked for
    pair = [Candidate("a", 0.5, "10"), Candidate("b", 0.75, "11 - n + 0.05*n**2")]
    assert prune_dominated(pair, alpha=1.5) == [1, 0]
    assert prune_dominated(pair, 0.0, 1.0, alpha=1.5) == [0]
    assert prune_dominated(pair, 19.0, 30.0, alpha=1.5) == [0]
    assert prune_dominated(cands, alpha=1.0) == [0, 1, 2]
    # ACC_TOL of slack: 1.5 * 0.5 == 0.750000000001 - 1e-12 exactly, so b still goes
    cands[1] = Candidate("b", 0.750000000001, "2")
    assert 1.5 * 0.5 == 0.750000000001 - 1e-12
    assert prune_dominated(cands, alpha=1.5) == [0, 2]


def test_canonical_order_sorts_keys_naturally_and_mixed_types_by_type_then_repr():
    assert canonical_order([3, 1, 2]) == [1, 2, 0]
    assert canonical_order([10, 9, 100]) == [1, 0, 2]  # not by repr ("10" < "100" < "9")
    assert canonical_order(["b", "a"]) == [1, 0]
    assert canonical_order([2, "a", 1]) == [2, 0, 1]  # int 1, int 2, then str
    assert canonical_order([]) == []


int_rows = st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=4)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(int_rows, min_size=1, max_size=6),
    int_rows,
    st.integers(-3, 6).map(float),
    st.one_of(st.integers(0, 8).map(float), st.just(math.inf)),
)
def test_cost_le_many_answers_every_row_as_the_exact_oracle(rows, target, lo, width):
    """Row by row, ``cost_le_many`` is the exact ``row <= target`` on ``[lo, hi]`` (sympy
    root isolation), negative ``lo`` and one-point domains included; with ``first`` it
    still finds whether any row holds, and every row it marks does hold."""
    hi = lo + width
    size = max(len(target), *(len(r) for r in rows))
    coefs = np.array([r + [0.0] * (size - len(r)) for r in rows])
    padded = np.array(target + [0.0] * (size - len(target)))
    want = [exactly_le(r, target, lo, hi) for r in rows]
    got = cost_le_many(coefs, padded, lo, hi)
    assert got.dtype == bool and got.tolist() == want
    first = cost_le_many(coefs, padded, lo, hi, first=True)
    assert first.any() == any(want)
    assert all(w for f, w in zip(first.tolist(), want, strict=True) if f)


def test_cost_le_many_checks_the_points_a_coefficient_test_cannot_decide():
    """Rows that touch the target at the domain's start or end, or cross it just outside
    the domain, are decided on the domain only."""
    target = np.array([0.0, 0.0, 1.0])  # n**2
    rows = np.array([
        [2.0, -2.0, 1.0],   # n**2 - 2n + 2: equal at n = 1, below after
        [-1.0, 2.0, 0.0],   # 2n - 1: touches n**2 at n = 1, below it elsewhere
        [0.0, 6.0, 0.0],    # 6n: above n**2 until n = 6
        [30.0, 0.0, 0.0],   # 30: above n**2 until sqrt(30)
    ])
    assert cost_le_many(rows, target, 1.0, math.inf).tolist() == [True, True, False, False]
    assert cost_le_many(rows, target, 6.0, 9.0).tolist() == [True, True, True, True]
    assert cost_le_many(rows, target, 5.0, 5.0).tolist() == [True, True, False, False]
    assert cost_le_many(rows, target, 0.0, 5.0).tolist() == [False, True, False, False]
    assert cost_le_many(rows, target, -2.0, 0.5).tolist() == [False, True, False, False]
    # n**2 + n - 8 <= n**2 up to n = 8 only: sampled and settled on [0, 5], not beyond
    late = np.array([[-8.0, 1.0, 1.0]])
    assert cost_le_many(late, target, 0.0, 5.0).tolist() == [True]
    assert cost_le_many(late, target, 0.0, 10.0).tolist() == [False]


def test_index_is_identical_across_hash_seeds():
    code = (
        "from polydom import Candidate, PolyDomIndex\n"
        "import random\n"
        "rng = random.Random(3)\n"
        "cands = [Candidate(('k', i), round(rng.random(), 2), "
        "[rng.uniform(0, 50), rng.uniform(0, 5), rng.uniform(0, 1)], "
        "features={f'f{j}' for j in range(i % 4)}) for i in range(60)]\n"
        "ix = PolyDomIndex.build(cands)\n"
        "print(ix.breakpoints.tolist(), ix.skyline_positions)\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(out.stdout)
    assert len(outputs) == 1


def test_curves_keep_their_identity_through_the_index():
    c = CostCurve.parse("1 + n")
    index = PolyDomIndex.build([Candidate("x", 0.5, c)])
    assert index.candidates[0].cost is c


# ---------------------------------------------------------------- the skyline table itself
def table(breaks, skylines, cands=FIG5, lo=0.0, hi=math.inf) -> SkylineTable:
    return SkylineTable(cands, lo, hi, breaks, skylines)


FIG5_BREAKS = [0.0, 0.652476, 7.745967, 8.944272]
FIG5_SKYLINES = [[0, 1, 3], [1, 3], [2, 1, 3], [2, 3]]  # F1 = 0, F2 = 1, F3 = 2, F4 = 3


@pytest.mark.parametrize(
    "breaks, skylines, lo, hi",
    [
        ([1.0, 7.745967, 8.944272], FIG5_SKYLINES[1:], 0.0, math.inf),  # starts after n_min
        ([0.0, 2.0, 2.0, 9.0], FIG5_SKYLINES, 0.0, math.inf),  # a repeated break
        ([0.0, 3.0, 6.0], [[0, 1, 3], [1, 3], [2, 3]], 0.0, 5.0),  # a break past n_max
        ([0.0, 0.652476], FIG5_SKYLINES[:1], 0.0, math.inf),  # a range without a skyline
        ([0.0], [[3, 1]], 0.0, math.inf),  # accuracy falls along the skyline
        ([0.0], [[1, 3, 0]], 0.0, math.inf),  # accuracy falls at the third entry only
        ([8.944272], [[1, 3]], 8.944272, math.inf),  # F2 dearer than F4 inside the range
    ],
)
def test_check_refuses_a_corrupt_table(breaks, skylines, lo, hi):
    with pytest.raises(AssertionError):
        table(breaks, skylines, lo=lo, hi=hi)._check()


def test_check_refuses_a_repeated_break_alone():
    """Figure 5's table with its second break repeated and every other invariant kept (the
    repeated skyline is allowed without ``minimal``): only the break order can fail."""
    breaks = [0.0, 0.652476, 0.652476, 7.745967, 8.944272]
    skylines = [[0, 1, 3], [1, 3], [1, 3], [2, 1, 3], [2, 3]]
    table(FIG5_BREAKS, FIG5_SKYLINES)._check(minimal=False)
    with pytest.raises(AssertionError):
        table(breaks, skylines)._check(minimal=False)


def test_check_probes_inside_each_range():
    # 2n (acc 0.5) is dearer than 5 (acc 0.6) inside [3, inf) though not at n = 2
    cands = [Candidate("u", 0.5, "2*n"), Candidate("v", 0.6, "5")]
    with pytest.raises(AssertionError):
        table([3.0], [[0, 1]], cands, 3.0)._check()
    # 100 (acc 0.5) is dearer than n (acc 0.6) at n = 1, not at infinity
    cands = [Candidate("u", 0.5, "100"), Candidate("v", 0.6, "n")]
    with pytest.raises(AssertionError):
        table([0.0], [[0, 1]], cands)._check()
    # n (acc 0.5) meets 8 - n (acc 0.6) at the range start n = 4 and is dearer after it
    cands = [Candidate("u", 0.5, "n"), Candidate("v", 0.6, "8 - n")]
    with pytest.raises(AssertionError):
        table([4.0], [[0, 1]], cands, 4.0)._check()
    with pytest.raises(AssertionError):  # equal accuracies are not a skyline either
        table([0.0], [[0, 1]], [Candidate("u", 0.5, "1"), Candidate("v", 0.5, "2")])._check()


def test_check_accepts_valid_tables_and_refuses_repeats_only_when_minimal():
    table(FIG5_BREAKS, FIG5_SKYLINES)._check()
    table([4.0], [[1, 3]], lo=4.0, hi=4.0)._check()  # a one-point domain
    repeated = table([0.0, 9.0], [[2, 3], [2, 3]])
    repeated._check(minimal=False)
    IndexAll(FIG5, 0.0, math.inf, [0.0, 9.0], [[2, 3], [2, 3]])._check()
    with pytest.raises(AssertionError):
        repeated._check()
    with pytest.raises(AssertionError):
        table([0.0, 8.0, 9.0], [[2, 3], [3], [3]])._check()


def test_table_properties_and_repr():
    index = PolyDomIndex.build(FIG5, 0.0, 100.0)
    assert index.domain == (0.0, 100.0)
    assert [r[1] for r in index.ranges][-1] == 100.0
    assert index.skyline_positions == FIG5_SKYLINES
    assert index.candidates == FIG5 and index.candidates is not index.candidates
    assert repr(index) == "PolyDomIndex(candidates=4, ranges=4, entries=10, domain=[0.0, 100.0])"
    assert [c.key for c in index.skyline(index.breakpoints[1])] == ["F2", "F4"]
    assert [c.key for c in index.skyline(0.0)] == ["F1", "F2", "F4"]
    assert [c.key for c in index.skyline(100.0)] == ["F3", "F4"]


def test_lookup_takes_numbers_of_any_real_type_but_not_bools():
    index = PolyDomIndex.build(FIG5)
    assert index.lookup(5, 10).key == "F4"  # F4 costs exactly 10
    assert index.lookup(np.float32(5.0), np.int64(9)).key == "F2"
    assert index.lookup_position(9.0, 8.0) == 2
    for size, budget in [(True, 10.0), (5.0, True), ("5", 10.0), (5.0, "10")]:
        with pytest.raises(TypeError):
            index.lookup(size, budget)
    with pytest.raises(ValueError, match="size"):
        index.lookup(-0.5, 10.0)
    with pytest.raises(ValueError, match="budget"):
        index.lookup(5.0, 2e308 * 0.9 * 10)


def test_lookups_with_quartic_curves_and_budgets_equal_to_a_cost():
    """Curves above degree 3 take the general Horner path; a budget equal to a cost fits."""
    cands = [
        Candidate("q", 0.9, "1 + n**4"),
        Candidate("c", 0.6, "2 + n"),
        Candidate("z", 0.3, "1"),
    ]
    index = PolyDomIndex.build(cands)
    naive = NaiveLookup.build(cands)
    for size in (0.0, 0.5, 1.0, 2.0, 3.0):
        for c in cands:
            budget = c.cost(size)
            want = full_scan(cands, size, budget)
            assert index.lookup(size, budget) == want == naive.lookup(size, budget)
            many = index.lookup_many(np.array([size, size]), np.array([budget, budget * 0.5]))
            assert many.tolist() == [index.lookup_position(size, budget),
                                     index.lookup_position(size, budget * 0.5)]
    assert index.lookup(2.0, 16.999).key == "c" and index.lookup(2.0, 17.0).key == "q"
    assert index.lookup(2.0, 0.5) is None
    assert index.lookup_many(np.array([[2.0], [0.0]]), np.array([[0.5], [1.0]])).tolist() == [
        [-1], [0]]


# ------------------------------------------- both binary searches and _check at the edges
# Hand-made tables whose answers a scan over the table's rows gives in exact arithmetic (no
# sweep involved), and tables the invariant checker must accept or refuse.
MAX = sys.float_info.max


def exact_cost(cand: Candidate, size: float) -> Fraction:
    """The cost at ``size`` in rational arithmetic (not the library's Horner)."""
    return sum(Fraction(c) * Fraction(size) ** k for k, c in enumerate(cand.cost.coefficients))


def row_scan(table: SkylineTable, size: float, budget: float) -> int:
    """Position of the most accurate candidate whose exact cost is <= ``budget`` in the row
    of the range holding ``size`` (-1: none): linear scans over ranges and over the row."""
    row = [sky for (n_lo, _), sky in zip(table.ranges, table.skyline_positions, strict=True)
           if n_lo <= size][-1]
    cands = table.candidates
    fitting = [i for i in row if exact_cost(cands[i], size) <= Fraction(budget)]
    return max(fitting, key=lambda i: cands[i].accuracy, default=-1)


def staircase(length: int, quartic: bool) -> SkylineTable:
    """One range over [0, inf): ``length`` candidates, candidate i costing ``2 + 2i + n``
    (``+ n**4`` for the general Horner loop), accuracy rising with the cost."""
    tail = " + n**4" if quartic else ""
    cands = [Candidate(f"c{i}", 0.1 + 0.1 * i, f"{2 + 2 * i} + n{tail}") for i in range(length)]
    return SkylineTable(cands, 0.0, math.inf, [0.0], [list(range(length))])


@pytest.mark.parametrize("quartic", [False, True], ids=["cubic-loop", "general-loop"])
def test_both_binary_searches_find_the_last_fitting_entry_of_every_skyline_length(quartic):
    """Every skyline length 1-9, every number of fitting entries, budgets exactly on a cost
    and half below it; the first query (two entries, the cheaper one fits) comes first on
    purpose: a search that probes from the wrong end gets it wrong instead of looping."""
    queries = [(2, 1.0, 3.0 + (2.0 if quartic else 0.0))]
    for length in range(1, 10):
        for size in (0.0, 1.0, 2.0):
            costs = [float(exact_cost(c, size)) for c in staircase(length, quartic).candidates]
            budgets = [0.0, *costs, *(c - 0.5 for c in costs), costs[-1] + 0.5]
            queries += [(length, size, b) for b in budgets]
    for length, size, budget in queries:
        table = staircase(length, quartic)
        want = row_scan(table, size, budget)
        assert table.lookup_position(size, budget) == want, (length, size, budget)
        assert table.lookup(size, budget) is (None if want < 0 else table.candidates[want])
    for length in range(1, 10):
        table = staircase(length, quartic)
        mine = [(s, b) for n, s, b in queries if n == length]
        sizes = np.array([s for s, _ in mine])
        budgets = np.array([b for _, b in mine])
        want = [row_scan(table, s, b) for s, b in mine]
        assert table.lookup_many(sizes, budgets).tolist() == want
        assert table.lookup_many(sizes.reshape(-1, 1), budgets.reshape(-1, 1)).shape == (
            len(mine), 1)


def test_lookups_exactly_at_the_ends_of_the_domain_and_of_the_budgets():
    """Sizes exactly ``n_min`` and ``n_max``, budgets 0, -0.0 and the largest float, as
    Python floats, ints and numpy scalars: the same answers as the row scan."""
    cands = [Candidate("a", 0.5, "n - 2"), Candidate("b", 0.7, "2*n - 4"),
             Candidate("c", 0.9, "10")]
    table = SkylineTable(cands, 2.0, 8.0, [2.0, 7.0], [[0, 1, 2], [0, 2]])
    table._check()
    for size in (2.0, 2, np.float64(2.0), 7.0, 8.0, 8, np.float32(8.0)):
        for budget in (0.0, -0.0, 0, 6.0, 9.999, 10.0, MAX, np.float64(MAX)):
            want = row_scan(table, float(size), float(budget))
            assert table.lookup_position(size, budget) == want, (size, budget)
            assert table.lookup_many(np.array([size]), np.array([budget])).tolist() == [want]
    assert table.lookup_position(2.0, 0.0) == 1  # b costs 0 at n = 2 and is more accurate
    assert table.lookup_position(8.0, 6.0) == 0 and table.lookup_position(8.0, MAX) == 2
    for size, budget in [(math.nextafter(2.0, 0.0), 1.0), (math.nextafter(8.0, 9.0), 1.0),
                         (5.0, math.inf), (5.0, -1e-300), (math.nan, 1.0), (5.0, math.nan)]:
        with pytest.raises(ValueError):
            table.lookup_position(size, budget)


def test_a_table_at_the_largest_floats_is_answered_and_accepted():
    """A range above half the largest float (its midpoint overflows if taken as
    ``(n_lo + n_hi) / 2``) and a one-point domain next to the largest float."""
    cands = [Candidate("u", 0.5, "n"), Candidate("v", 0.6, "1.7e308")]
    wide = SkylineTable(cands, 1e308, 1.6e308, [1e308], [[0, 1]])
    wide._check()  # u <= v on the whole range; probed at inf, u would look dearer
    assert wide.lookup_position(1.2e308, 1.3e308) == 0
    assert wide.lookup_position(1.6e308, MAX) == 1
    assert wide.lookup_many(np.array([1.2e308, 1.5e308]), np.array([1.3e308, 1.4e308])
                            ).tolist() == [0, -1]
    point = SkylineTable(cands, 1.5e308, 1.5e308, [1.5e308], [[0, 1]])
    point._check()
    assert point.lookup_position(1.5e308, 1.5e308) == 0
    assert point.lookup_position(1.5e308, MAX) == 1
    # v before u, though v is dearer all over the range (sizes where the rounding scale of
    # their difference, 0.5 n + 1e308, stays finite)
    swapped = [Candidate("u", 0.6, "0.5*n"), Candidate("v", 0.5, "1e308")]
    with pytest.raises(AssertionError):
        SkylineTable(swapped, 1e308, 1.6e308, [1e308], [[1, 0]])._check()


# Two curves ordered u <= v on the range [4, 8] and crossing outside it, at 3 and 9
# (v - u = -(n - 3)(n - 9)): the table is valid, whatever the order outside.
INSIDE_ONLY = [Candidate("u", 0.5, "30"), Candidate("v", 0.6, "3 + 12*n - n**2")]
# v is cheaper than u only on (5, 7), in the middle of [4, 8] (v - u = (n - 5)(n - 7)).
MIDDLE_WRONG = [Candidate("u", 0.5, "40"), Candidate("v", 0.6, "75 - 12*n + n**2")]
# On [0, inf) v = 3.5 + n is cheaper than u = 5 until n = 1.5: a break placed 1.5 too early.
START_WRONG = [Candidate("u", 0.5, "5"), Candidate("v", 0.6, "3.5 + n")]
# On [4, inf) u = 10 <= v = n + 6 (equal at 4), though not below 4.
BELOW_WRONG = [Candidate("u", 0.5, "10"), Candidate("v", 0.6, "n + 6")]


def test_check_probes_a_bounded_range_inside_and_not_beyond_its_ends():
    table([4.0], [[0, 1]], INSIDE_ONLY, 4.0, 8.0)._check()
    table([0.0, 4.0, 8.0], [[0], [0, 1], [0]], INSIDE_ONLY, 0.0, 8.0)._check()
    with pytest.raises(AssertionError):
        table([4.0], [[0, 1]], MIDDLE_WRONG, 4.0, 8.0)._check()
    with pytest.raises(AssertionError):
        table([0.0, 4.0], [[0], [0, 1]], MIDDLE_WRONG, 0.0, 8.0)._check()


def test_check_probes_an_unbounded_range_just_past_its_start_and_not_before_it():
    table([4.0], [[0, 1]], BELOW_WRONG, 4.0, math.inf)._check()
    with pytest.raises(AssertionError):
        table([0.0], [[0, 1]], START_WRONG, 0.0, math.inf)._check()


def test_check_accepts_curves_equal_at_the_probe_to_the_last_bit():
    """``n`` and ``n + 1e-20`` (accuracy rising) are equal in floating point at the probes
    (n = 1 and n = 4), though their difference is no rounding error there; ``u <= v`` holds,
    so the table is valid, and the sweep builds the same one."""
    cands = [Candidate("u", 0.5, "n"), Candidate("v", 0.6, "n + 1e-20")]
    assert cands[1].cost.coefficients.tolist() == [1e-20, 1.0]
    table([0.0], [[0, 1]], cands, 0.0, math.inf)._check()
    table([2.0], [[0, 1]], cands, 2.0, 6.0)._check()
    built = PolyDomIndex.build(cands)
    assert built.skyline_positions == [[0, 1]]
    built._check()
    assert built.lookup_position(1.0, 1.0) == 1  # both cost 1.0 at n = 1 in floating point


# ---------------------------------------------------------------- the kinetic sweep by hand
def sweep(curves: list[str], accs: list[float], lo: float = 0.0, hi: float = math.inf,
          keep_all: bool = False):
    return kinetic_sweep([CostCurve.parse(c).coefficients for c in curves], accs, lo, hi,
                         keep_all=keep_all)


def test_sweep_orders_curves_equal_at_the_start_by_their_order_just_right_of_it():
    # 2n (acc 0.9) and n (acc 0.5) both cost 0 at n = 0; n is cheaper right after
    result = sweep(["2*n", "n"], [0.9, 0.5])
    assert (result.breaks, result.skylines) == ([0.0], [[1, 0]])
    assert (result.events, result.crossings) == (0, 0)


def test_sweep_on_one_size_orders_by_the_values_there_only():
    # both cost 10 at n = 5: the more accurate (curve 0) alone is the skyline
    result = sweep(["2*n", "n + 5"], [0.9, 0.5], 5.0, 5.0)
    assert (result.breaks, result.skylines) == ([5.0], [[0]])
    assert sweep(["2*n", "n + 5"], [0.9, 0.5], 4.0, 4.0).skylines == [[0]]
    assert sweep(["2*n", "n + 5"], [0.9, 0.5], 6.0, 6.0).skylines == [[1, 0]]


def test_sweep_keeps_a_crossing_that_changes_nothing_only_with_keep_all():
    # n and 2 + n/2 cross at n = 4 below the constant 0 that beats them both
    curves, accs = ["0", "n", "2 + 0.5*n"], [0.9, 0.5, 0.4]
    minimal = sweep(curves, accs)
    assert (minimal.breaks, minimal.skylines) == ([0.0], [[0]])
    every = sweep(curves, accs, keep_all=True)
    assert every.breaks == pytest.approx([0.0, 4.0]) and every.skylines == [[0], [0]]
    assert (minimal.events, minimal.crossings) == (every.events, every.crossings) == (1, 1)


def test_sweep_reorders_three_curves_meeting_at_one_point():
    # n, 2n - 2 and 1 + n/2 all cost 2 at n = 2: order (by cost) B A C before, C A B after
    curves, accs = ["1 + 0.5*n", "n", "2*n - 2"], [0.7, 0.6, 0.5]  # C = 0, A = 1, B = 2
    result = sweep(curves, accs, 1.0, 10.0)
    assert result.breaks == pytest.approx([1.0, 2.0]) and result.skylines == [[2, 1, 0], [0]]
    assert (result.events, result.crossings) == (1, 1)
    every = sweep(curves, accs, 1.0, 10.0, keep_all=True)
    assert every.breaks == pytest.approx([1.0, 2.0]) and every.skylines == [[2, 1, 0], [0]]


def test_sweep_handles_several_crossings_in_one_event():
    """n = 2 - n and 10 + n = 12 - n at n = 1: two pairs far apart in the order swap in one
    event; then n = 3 at n = 3, n = 12 - n at n = 6 and 12 - n = 3 at n = 9.  Only the
    swaps at 1 and 9 change the skyline."""
    curves = ["12 - n", "10 + n", "3", "2 - n", "n"]
    accs = [0.9, 0.8, 0.7, 0.6, 0.5]
    every = sweep(curves, accs, 0.0, 20.0, keep_all=True)
    assert every.breaks == pytest.approx([0.0, 1.0, 3.0, 6.0, 9.0])
    brute = [skyline_position(curves, accs, x + 1e-3) for x in every.breaks]
    assert every.skylines == brute
    assert (every.events, every.crossings) == (4, 4)
    minimal = sweep(curves, accs, 0.0, 20.0)
    changed = [k for k in range(len(brute)) if k == 0 or brute[k] != brute[k - 1]]
    assert minimal.skylines == [brute[k] for k in changed]
    assert minimal.breaks == pytest.approx([every.breaks[k] for k in changed])
    assert minimal.breaks == pytest.approx([0.0, 1.0, 9.0])


def skyline_position(curves: list[str], accs: list[float], x: float) -> list[int]:
    values = [CostCurve.parse(c)(x) for c in curves]
    order = sorted(range(len(curves)), key=lambda i: (values[i], -accs[i], i))
    best, out = -1.0, []
    for i in order:
        if accs[i] > best:
            out.append(i)
            best = accs[i]
    return out


# ---------------------------------------------------------------- building: checks and stats
@pytest.mark.parametrize(
    "bad, message",
    [
        ("F1", r"candidates must be an iterable of polydom.Candidate, got 'F1' \(str\)"),
        ({"F1": 1}, r"got \{'F1': 1\} \(dict\)"),
        (5, r"got 5 \(int\)"),
        ([FIG5[0], "x"], r"candidates\[1\] must be a polydom.Candidate, got 'x' \(str\)"),
    ],
)
def test_what_is_not_a_list_of_candidates_is_named(bad, message):
    for build in (PolyDomIndex.build, IndexAll.build, NaiveLookup.build):
        with pytest.raises(TypeError, match=message):
            build(bad)


def test_empty_and_negative_pools_get_their_own_messages():
    with pytest.raises(ValueError, match=r"^candidates must not be empty$"):
        PolyDomIndex.build([])
    with pytest.raises(ValueError, match=r"candidate 'neg' \(-n \+ 5\) is negative somewhere on "
                                         r"\[0.0, inf\]"):
        PolyDomIndex.build([FIG5[0], Candidate("neg", 0.5, "5 - n")])
    # negative only between 1.18 and 3.82: fine below
    assert len(IndexAll.build([Candidate("dip", 0.5, "n**2 - 5*n + 4.5")], 0.0, 1.0)) == 1
    with pytest.raises(ValueError, match="negative"):
        IndexAll.build([Candidate("dip", 0.5, "n**2 - 5*n + 4.5")], 0.0, 1.5)


def test_build_defaults_to_the_whole_half_line_and_reports_its_counts():
    dominated = Candidate("F5", 0.6, "9 + 3*n + 0.2*n**2")  # F1 plus 9: dominated by F1
    for cls, ranges in ((PolyDomIndex, 4), (IndexAll, 6)):
        start = time.perf_counter()
        index = cls.build([*FIG5, dominated])
        took = time.perf_counter() - start
        assert index.domain == (0.0, math.inf) and len(index) == ranges
        stats = index.stats_
        assert (stats["candidates"], stats["undominated"]) == (5, 4)
        assert (stats["events"], stats["crossings"]) == (5, 5)
        assert 0.0 <= stats["prune_seconds"] <= stats["build_seconds"] <= took
    naive = NaiveLookup.build(FIG5)
    assert naive.breakpoints.tolist() == [0.0] and naive.lookup(0.5, 1.6).key == "F1"


def test_cost_le_many_settles_exactly_only_what_coefficients_and_samples_cannot(monkeypatch):
    """The documented decision path: coefficients decide a row that is below everywhere
    term by term, a violation at a sampled size rejects a row, and only the rest pays for
    the exact root-based check (the real one, counted); with ``first`` the exact checks stop
    at the first row that holds."""
    exact_checks = count_exact_checks(monkeypatch)
    target = np.array([30.0, -10.0, 1.0])  # (n - 5)**2 + 5
    rows = np.array([
        [1.0, -10.0, 1.0],  # 29 below the target term by term (zero differences included)
        [10.0, 0.0, 0.0],  # above it on (2.76, 7.24) only: rejected at the sample n = 3.16
        [31.0, -10010.0, 1.0],  # above it on [0, 1e-4) only: rejected at n = 0
        [17.5, -5.0, 0.5],  # 0.5 (n - 5)**2 below it, touching at n = 5: needs the roots
    ])
    assert cost_le_many(rows, target, 0.0, math.inf).tolist() == [True, False, False, True]
    assert len(exact_checks) == 1
    exact_checks.clear()
    assert cost_le_many(rows[[3, 3]], target, 0.0, math.inf, first=True).tolist() == [
        True, False]
    assert len(exact_checks) == 1


def count_exact_checks(monkeypatch) -> list:
    """Calls of the exact check made by :mod:`polydom.index.dominance` (it still runs)."""
    calls: list = []
    real = dominance.difference_nonnegative

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(dominance, "difference_nonnegative", counted)
    return calls


def test_pruning_stops_at_the_first_dominating_candidate(monkeypatch):
    """Both B and A cost no more than X everywhere, each touching it at n = 5 (only the
    roots can tell): one exact check is enough to drop X.  In the safe mode, C is below Y
    term by term, so the coefficients alone drop Y."""
    exact_checks = count_exact_checks(monkeypatch)
    cands = [
        Candidate("B", 0.9, [20.0, -6.0, 0.6]),  # X - 0.4 (n - 5)**2
        Candidate("A", 0.8, [17.5, -5.0, 0.5]),  # X - 0.5 (n - 5)**2
        Candidate("X", 0.5, [30.0, -10.0, 1.0]),
    ]
    assert prune_dominated(cands) == [0, 1]
    assert len(exact_checks) == 1
    exact_checks.clear()
    cands = [
        Candidate("A", 0.8, [17.5, -5.0, 0.5]),  # Y - 0.5 (n - 5)**2
        Candidate("C", 0.81, [25.0, -10.0, 1.0]),  # Y - 5; crosses A
        Candidate("Y", 0.9, [30.0, -10.0, 1.0]),
    ]
    assert prune_dominated(cands, alpha=1.2) == [1, 0]
    assert len(exact_checks) == 0


def test_equal_accuracies_go_to_the_cheaper_then_to_the_smaller_key():
    cands = [
        Candidate("a", 0.8, "5"),
        Candidate("b", 0.8, "3"),
        Candidate("z", 0.7, "1"),
        Candidate("y", 0.7, "1"),
    ]
    for method in (NaiveLookup, PolyDomIndex, IndexAll):
        index = method.build(cands)
        assert index.lookup(1.0, 10.0).key == "b"
        assert index.lookup(1.0, 2.0).key == "y"
        assert index.lookup(1.0, 0.5) is None


# ---- lookups at their edges, each answer worked out by hand: the property tests compare
# with a full scan up to floating ties; these pin what a tie tolerance would hide (a size
# exactly on a point where the answer changes, a domain from 0 with no later point, a
# one-point domain, nothing that fits, no queries).
# EDGE_A pays n, EDGE_B pays 1: with budget 4, A (the better) fits up to n = 4, then only B.
EDGE_A = Candidate("A", 0.9, "n")
EDGE_B = Candidate("B", 0.5, "1")


def test_fixed_budget_answers_exactly_on_the_root_and_just_after_it():
    fixed = PolyDomIndex.build([EDGE_A, EDGE_B], 0.0, 100.0).for_budget(4.0)
    assert 4.0 in fixed.breakpoints.tolist()
    assert fixed.lookup(4.0).key == "A"  # cost 4 <= 4
    assert fixed.lookup(np.nextafter(4.0, 5.0)).key == "B"
    assert fixed.lookup(np.nextafter(4.0, 0.0)).key == "A"
    assert fixed.lookup(100.0).key == "B"


def test_fixed_budget_on_an_unbounded_domain_from_zero_with_no_later_point():
    # cost n with budget 0: it fits at n = 0 only; the root 0 is the domain's start, so the
    # only point is 0 and the answer after it comes from a probe beyond 0.
    fixed = PolyDomIndex.build([EDGE_A], 0.0, float("inf")).for_budget(0.0)
    assert fixed.breakpoints.tolist() == [0.0]
    assert fixed.lookup(0.0).key == "A"
    assert fixed.lookup(1e-9) is None
    assert fixed.lookup(1e12) is None


def test_fixed_budget_at_the_end_of_the_domain_where_a_falling_cost_meets_the_budget():
    # A costs 10 - n: above the budget 4 until n = 6, the end of the domain, where it fits
    falling = Candidate("A", 0.9, "10 - n")
    fixed = PolyDomIndex.build([falling, EDGE_B], 0.0, 6.0).for_budget(4.0)
    assert fixed.breakpoints.tolist()[-1] == 6.0
    assert fixed.lookup(6.0).key == "A"
    assert fixed.lookup(np.nextafter(6.0, 0.0)).key == "B"
    assert fixed.lookup(0.0).key == "B"


def test_dominance_is_pruned_on_the_index_domain_not_beyond_it():
    # v (n) is cheaper than u (10) on [0, 5] only: pruned there, kept on [0, inf)
    u, v = Candidate("u", 0.5, "10"), Candidate("v", 0.6, "n")
    bounded, unbounded = PolyDomIndex.build([u, v], 0.0, 5.0), PolyDomIndex.build([u, v])
    assert bounded.stats_["undominated"] == 1
    assert unbounded.stats_["undominated"] == 2
    assert [[c.key for c in s] for s in bounded.skylines] == [["v"]]


def test_fixed_budget_on_a_one_point_domain():
    index = PolyDomIndex.build([EDGE_A, EDGE_B], 3.0, 3.0)
    assert index.for_budget(3.0).lookup(3.0).key == "A"
    assert index.for_budget(2.0).lookup(3.0).key == "B"
    assert index.for_budget(0.5).lookup(3.0) is None


def test_naive_lookup_position_is_minus_one_when_nothing_fits():
    naive = NaiveLookup.build([EDGE_A, EDGE_B], 0.0, 100.0)
    assert naive.lookup_position(10.0, 0.5) == -1
    assert naive.lookup(10.0, 0.5) is None
    assert naive.lookup_many(np.array([10.0, 2.0]), np.array([0.5, 3.0])).tolist() == [-1, 0]


@pytest.mark.parametrize("build", [NaiveLookup.build, PolyDomIndex.build])
def test_lookup_many_on_no_queries_gives_an_empty_int64_array(build):
    index = build([EDGE_A, EDGE_B], 0.0, 100.0)
    out = index.lookup_many(np.array([]), np.array([]))
    assert out.shape == (0,)
    assert out.dtype == np.int64
    out = index.lookup_many(np.zeros((0, 3)), 1.0)
    assert out.shape == (0, 3)
    assert out.dtype == np.int64


def test_costs_near_the_largest_floats_are_indexed_as_a_full_scan_sees_them():
    """Rounding scales are summed after the tolerance is applied, so they stay finite where
    the costs are: here |c_u| + |c_v| at n overflows while every cost is finite (u was pruned
    as dominated by v, and FixedBudgetIndex probed at inf, when the scale was summed first)."""
    cands = [
        Candidate("u", 0.5, "n"),
        Candidate("v", 0.6, "1.6e308"),
        Candidate("w", 0.7, "0.5*n + 0.7e308"),  # crosses u at 1.4e308 and v at 1.8e308
        Candidate("x", 0.4, "1e308"),
    ]
    lo, hi = 1e308, 1.7e308
    sizes = [lo, 1.2e308, 1.4e308, np.nextafter(1.4e308, 2e308), 1.6e308, hi]
    budgets = [0.9e308, 1e308, 1.2e308, 1.3e308, 1.5e308, 1.6e308, 1.79e308]
    index, naive = PolyDomIndex.build(cands, lo, hi), NaiveLookup.build(cands, lo, hi)
    index._check()
    assert sorted(c.key for c in index.candidates) == ["u", "v", "w", "x"]
    for budget in budgets:
        fixed = index.for_budget(budget)
        for size in sizes:
            want = full_scan(cands, size, budget)
            for got in (index.lookup(size, budget), naive.lookup(size, budget),
                        fixed.lookup(size)):
                assert (got and got.key) == (want and want.key), (size, budget)
    # an unbounded domain starting near the top: the probe past the last point stays finite
    top = PolyDomIndex.build(cands, 1.5e308, math.inf).for_budget(1.5e308)
    assert top.lookup(1.5e308).key == "w"  # w costs 1.45e308
    assert top.lookup(1.7e308).key == "x"  # w 1.55e308, u 1.7e308, v 1.6e308: only x fits
    assert top.lookup(1.79e308).key == "x"
