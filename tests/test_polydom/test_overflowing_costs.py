"""Cost curves that overflow to inf inside the domain (a legal store may hold one): a
candidate whose cost is infinite at some sizes fits no budget there, and dominance must
not take an overflowed difference for "costs no more"."""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polydom import Candidate, CostCurve, IndexAll, NaiveLookup, PolyDomIndex
from polydom.curves.poly import candidate_roots, compare_right, sign_change_roots, values_equal
from polydom.errors import InvalidArgumentError
from polydom.index.dominance import prune_dominated
from tests.index_oracle import full_scan
from tests.strategies import candidate_pools, domains, examples


def test_a_curve_that_overflows_does_not_dominate_a_constant():
    cheap = Candidate("cheap", 0.5, "1")
    dear = Candidate("dear", 0.9, "1e300*n**3")  # 1e330 at n = 1e10: inf in floats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kept = prune_dominated([cheap, dear], 0.0, 1e10)
    assert sorted(kept) == [0, 1]


# ---------------------------------------------------------------- the index over them
#: Factors that take a pool's coefficients (1e-9 to 1e6) to the top of the float range:
#: over sizes up to 1e10 and degrees up to 4 some of these curves exceed the largest float
#: (their cost is inf there), while the unscaled ones stay small.
SCALES = st.sampled_from([1.0, 1e280, 1e295, 1e300, 1e305])
DOMAINS = st.one_of(
    domains,
    st.sampled_from([(0.0, 1e10), (0.0, math.inf), (1e-3, 1e10), (3.0, math.inf),
                     (0.0, 1e3), (1e5, 1e10)]),
)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    max_examples=examples(60))
_TOP = sys.float_info.max


def _scaled(cand: Candidate, scale: float, times_n: bool) -> Candidate:
    """``cand`` with its curve times ``scale`` (times ``n`` too with ``times_n``: 0 at
    ``n = 0``, so that it crosses the small curves at tiny sizes, as ``1e300 n**3``
    crosses ``1`` at ``1e-100``), or times less where a coefficient would pass 1e307.
    Curves touching 0 (``k (n - r)**2 + base``) are not taken times ``n``: ``n (n - 1)**2``
    against ``(n - 1)**2`` is a triple root, which the eigenvalues place only to about 1e-5
    (:func:`polydom.curves.poly.candidate_roots`), a limit apart from overflow."""
    coef = cand.cost.coefficients
    if times_n and coef.size <= 4 and np.all(coef >= 0.0):
        coef = np.concatenate(([0.0], coef))
    top = float(np.max(np.abs(coef)))
    factor = min(scale, 1e307 / top) if top > 0.0 else scale
    return Candidate(cand.key, cand.accuracy, CostCurve(coef * factor))


def _pool(cands, data) -> list[Candidate]:
    return [_scaled(c, data.draw(SCALES), data.draw(st.booleans())) for c in cands]


def _sizes(index, lo: float, hi: float) -> list[float]:
    """Sizes on, just left and just right (absolutely and relatively) of every break, a
    linear grid and powers of ten over the domain (into the overflowing sizes)."""
    top = hi if math.isfinite(hi) else max(lo + 1e12, 2.0 * float(index.breakpoints[-1]))
    sizes = {lo, top, *np.linspace(lo, top, 9).tolist()}
    sizes.update(lo + 10.0**k for k in range(-300, 13, 7))
    for b in index.breakpoints.tolist():
        for x in (b, b - 1e-6 * max(1.0, b), b + 1e-6 * max(1.0, b), b * (1 - 1e-6),
                  b * (1 + 1e-6)):
            sizes.add(x)
    return sorted(x for x in sizes if lo <= x <= top)


def _budgets(cands, size: float) -> list[float]:
    """0, the largest float, and every finite cost at ``size`` and a relative hair around."""
    budgets = {0.0, _TOP}
    for c in cands:
        v = c.cost(size)
        if math.isfinite(v) and v >= 0.0:
            budgets.update(x for x in (v, v * (1 + 1e-9), v * (1 - 1e-9)) if x <= _TOP)
    return sorted(budgets)


def _tie(index, pool, size: float, budget: float, got, want) -> bool:
    """A floating tie: a size on a break, two answers of the same accuracy, or a cost equal
    to the budget within rounding (1e-11 of its terms' sum, as ``1e280 (n - 1)**2`` is 0 at
    ``n = 1`` only by cancelling terms of 1e280: 0 within 4e268, a tie with budget 0)."""
    on_break = np.min(np.abs(index.breakpoints - size)) <= 1e-9 * max(1.0, size)
    rounding = any(
        abs(c.cost(size) - budget) <= 1e-11 * CostCurve(np.abs(c.cost.coefficients))(size)
        for c in pool)
    return bool(on_break) or rounding or (got and got.accuracy) == (want and want.accuracy)


@SETTINGS
@given(candidate_pools(), st.data(), DOMAINS)
def test_lookups_over_overflowing_curves_answer_as_the_full_scan(cands, data, domain):
    lo, hi = domain
    pool = _pool(cands, data)
    index = PolyDomIndex.build(pool, lo, hi)
    every = IndexAll.build(pool, lo, hi)
    naive = NaiveLookup.build(pool, lo, hi)
    queries = [(n, b) for n in _sizes(index, lo, hi) for b in _budgets(pool, n)]
    for size, budget in queries:
        got = index.lookup(size, budget)
        want = full_scan(pool, size, budget)
        if got is not None:
            assert got.cost(size) <= budget  # never an infinite cost
        same = (got and got.key) == (want and want.key)
        assert same or _tie(index, pool, size, budget, got, want), (
            size, budget, got, want, index.ranges)
        assert every.lookup(size, budget) == got, (size, budget)
        assert naive.lookup(size, budget) == want, (size, budget)
    sizes = np.array([q[0] for q in queries])
    budgets = np.array([q[1] for q in queries])
    many = index.lookup_many(sizes, budgets)
    assert many.tolist() == [index.lookup_position(n, b) for n, b in queries]


@SETTINGS
@given(candidate_pools(), st.data(), DOMAINS, st.floats(0.0, 1e3, allow_subnormal=False))
def test_a_fixed_budget_answers_as_the_index_over_overflowing_curves(cands, data, domain,
                                                                      budget):
    lo, hi = domain
    pool = _pool(cands, data)
    index = PolyDomIndex.build(pool, lo, hi)
    fixed = index.for_budget(budget)
    sizes = set(_sizes(index, lo, hi))
    for p in fixed.breakpoints.tolist():
        sizes.update(x for x in (p, p * (1 - 1e-7), p * (1 + 1e-7)) if lo <= x <= hi)
    for size in sorted(sizes):
        got, want = fixed.lookup(size), index.lookup(size, budget)
        if got == want:
            continue
        # only a floating tie (a cost equal to the budget up to rounding, or to the rounding
        # of its terms: 1e280 (n - 1)**2 at 1 + 1e-13 is 1e254 but evaluates to noise of
        # 1e264) may differ
        near = [c for c in pool if abs(c.cost(size) - budget) <= max(
            1e-9 * budget, 1e-11 * CostCurve(np.abs(c.cost.coefficients))(size))]
        assert near, (size, budget, got, want)


def test_the_reported_lookups_answer_as_the_full_scan():
    """The report: with n_max = 1e10 the sweep missed the crossing at n = 1e-100 (the sign
    of 1 - 1e300 n**3 sampled at 5e9 overflowed to -inf against an infinite rounding scale,
    so it counted as 0) and kept one range holding only 'dear' (inf at 1e9)."""
    cheap = Candidate("cheap", 0.5, "1")
    dear = Candidate("dear", 0.9, "1e300*n**3")
    for hi in (1e10, math.inf):
        index = PolyDomIndex.build([cheap, dear], n_min=0.0, n_max=hi)
        assert index.breakpoints.tolist() == [0.0, 1e-100]
        assert [[c.key for c in s] for s in index.skylines] == [["dear"], ["cheap", "dear"]]
        assert index.lookup(1e9, 5.0).key == "cheap"  # dear costs inf there
        assert index.lookup(1e-99, 5.0).key == "cheap"  # dear costs 1e3
        assert index.lookup(1e-101, 5.0).key == "dear"  # dear costs 1e-3
        assert index.lookup(1e9, _TOP).key == "cheap"  # inf fits not even the largest
        assert index.lookup_many(np.array([1e9, 1e-99, 1e-101]), 5.0).tolist() == [0, 0, 1]
        assert IndexAll.build([cheap, dear], 0.0, hi).lookup(1e9, 5.0).key == "cheap"
        assert index.for_budget(5.0).lookup(1e9).key == "cheap"


def test_a_curve_negative_beyond_the_largest_float_is_refused():
    """1e300 n**3 - 1e300 n**4 is -inf at 1e10 and was taken as >= 0 (-inf >= -inf, an
    infinite rounding scale): the index built, and the curve 'fit' every budget there."""
    neg = CostCurve([0.0, 0.0, 0.0, 1e300, -1e300])
    assert not neg.is_nonnegative(0.0, 1e10)
    assert neg.is_nonnegative(0.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="negative somewhere on") as caught:
        PolyDomIndex.build([Candidate("neg", 0.9, neg)], 0.0, 1e10)
    assert "\n" not in str(caught.value)


def test_differences_of_coefficients_near_the_largest_float():
    """Coefficients of opposite signs near the largest float: their difference overflows
    unless taken halved (the same roots and order)."""
    big, low = CostCurve([1.5e308, -1.5e308, 1e308]), CostCurve([-1e308, 1e308, 1e308])
    # big - low = 2.5e308 - 2.5e308 n: they cross at n = 1, big dearer before
    np.testing.assert_allclose(big.crossings(low, 0.0, 10.0), [1.0])
    assert big.compare_right(low, 0.0) == 1 and big.compare_right(low, 2.0) == -1
    assert low.le(big, 0.0, 1.0) and not low.le(big, 0.0, 2.0)
    assert big.le(low, 1.0, math.inf) and not big.le(low, 0.5, math.inf)


def test_orders_beyond_the_largest_float_are_exact():
    """Two curves both beyond the largest float at a size still have an order there."""
    a, b = CostCurve([0.0, 0.0, 1e300]), CostCurve([1e300, 0.0, 1e300])
    assert a.compare_right(b, 1e10) == -1 and b.compare_right(a, 1e10) == 1
    assert not values_equal(a.coefficients.tolist(), b.coefficients.tolist(), 1e10)
    # 2**996 n**2 and 2**996 n + (2**996 - 2**963) n**2 meet at n = 2**33, both near 2**1062
    a, b = [0.0, 0.0, 2.0**996], [0.0, 2.0**996, 2.0**996 - 2.0**963]
    assert values_equal(a, b, 2.0**33) and not values_equal(a, b, 2.0**34)
    assert compare_right(a, b, 2.0**33) == 1 and compare_right(b, a, 2.0**33) == -1
    np.testing.assert_allclose(CostCurve(a).crossings(CostCurve(b), 1.0, math.inf), [2.0**33])


@pytest.mark.parametrize(
    ("d", "want"),
    [([0.0, -1.0, 1e280], [0.0, 1e-280]),  # n against 1e280 n**2: b*b underflowed
     ([0.0, -3.2689573155827696e-40, 1.09540486412657e178],
      [0.0, 3.2689573155827696e-40 / 1.09540486412657e178]),
     ([-1e-200, 1e-170, 1.0], [-1e-100, 1e-100]),
     ([-1e300, 1e-300, 1e-10], [-1e155, 1e155]),
     ([1e-200, 1e-170, 1.0], []),
     # spans beyond the floats: scaled by a power of two alone, one end underflowed to 0
     ([1e300, 0.0, -1e-300], [-1e300, 1e300]),
     ([-2.2250738585072014e-308, 0.0, 1e280],
      [-math.sqrt(2.2250738585072014e-28) * 1e-280, math.sqrt(2.2250738585072014e-28) * 1e-280])],
)
def test_quadratic_roots_over_coefficients_spanning_the_floats(d, want):
    """The closed form squared ``b`` after scaling by a power of two: with coefficients
    1e280 apart ``b*b`` (and ``4ac``) underflowed to 0, the two roots 0 and 1e-280 became a
    double root at 5e-281, and the sweep lost the crossing of ``n`` and ``1e280 n**2``."""
    np.testing.assert_allclose(candidate_roots(np.array(d)), want, rtol=1e-12)


def test_a_crossing_behind_a_near_real_pair_of_roots_is_kept():
    """``1 - 1e295 n**4`` has the real root 1.8e-74 and the pair 1e-90 +- 1.8e-74j, taken as
    near-real (within 1e-5): merged as one point placed at the first, 1e-90, the order just
    right of it was still the old one and the crossing was lost; the index said 'zero' at
    n = 1e-6 for budget 1 where 'one' (and not 1e295 n**4, 1e271 there) fits."""
    d = np.array([1.0, 0.0, 0.0, 0.0, -1e295])
    np.testing.assert_allclose(sign_change_roots(d, 0.0, math.inf, absorb_ends=False),
                               [1e-295 ** 0.25], rtol=1e-12)
    pool = [Candidate("zero", 0.0, "0"), Candidate("one", 0.5, "1"),
            Candidate("steep", 0.5, CostCurve([0.0, 0.0, 0.0, 0.0, 1e295]))]
    index = PolyDomIndex.build(pool, 0.0, math.inf)
    assert index.lookup(1e-6, 1.0).key == "one"
    assert index.lookup(1e-80, 1.0).key == "steep"  # 1e-25 there: cheaper than one


def test_fitted_and_computed_curves_flush_subnormal_coefficients_to_zero():
    """A fit on timings of about 1e-308 s, a sum or a scaled curve may produce a
    coefficient below the normal floats: polydom's own arithmetic sets it to 0 (a user's
    subnormal coefficient is refused, naming it)."""
    import numpy as np
    import pytest

    from polydom import CostCurve
    from polydom.curves.fitting import fit_cost_curve
    from polydom.errors import InvalidArgumentError

    sizes = np.arange(7.0).repeat(2)
    seconds = np.zeros(sizes.size)
    seconds[6] = 1.1125369292536007e-308
    assert fit_cost_curve(sizes, seconds, degree=0)(3.0) == 0.0  # was refused as subnormal
    assert CostCurve([1e-300]) * 1e-10 == CostCurve([0.0])
    assert CostCurve.total([CostCurve([3e-308]), CostCurve([-2.5e-308])]) == CostCurve([0.0])
    with pytest.raises(InvalidArgumentError, match="subnormal"):
        CostCurve([1e-310])


def test_roots_of_very_different_sizes_are_each_found():
    """``1e280 n**2 + 1e280 n**3`` meets ``1`` at 1e-140: the companion matrix's eigenvalues
    place roots only to about 1e-16 of the largest (-1 here), gave 0, 0, -1, and the sweep
    lost the crossing (the index said 'zero' at n = 1e-6, budget 1, where 'one' fits).
    Each scale of the Newton polygon is now solved on its own."""
    d = np.array([-1.0, 0.0, 1e280, 1e280])
    np.testing.assert_allclose(candidate_roots(d), [-1.0, -1e-140, 1e-140], rtol=1e-12)
    # roots 1e-200 apart from 1e200 and 0: n (n**2 - 1e-400) (n + 1e200), in floats
    d = np.array([0.0, -1e-200, 0.0, 1e200, 1.0])
    np.testing.assert_allclose(candidate_roots(d), [-1e200, -1e-200, 0.0, 1e-200], rtol=1e-12)
    pool = [Candidate("zero", 0.5, "0"), Candidate("one", 0.6, "1"),
            Candidate("steep", 0.6, CostCurve([0.0, 0.0, 1e280, 1e280]))]
    index = PolyDomIndex.build(pool, 0.0, math.inf)
    assert index.lookup(1e-6, 1.0).key == "one"
    assert index.lookup(1e-141, 1.0).key == "steep"  # 1e-2 there, cheaper than one


def test_signs_of_values_that_underflow_are_exact():
    """``n**2`` and ``1e280 n**3`` cross at 1e-280; the sign of their difference sampled at
    5e-281 underflowed to 0 within a rounding scale of 0, the crossing was dropped, and the
    index answered None at n = 1e-6 where ``n**2`` fits a budget of 1e-12."""
    d = np.array([0.0, 0.0, -1.0, 1e280])
    assert sign_change_roots(d, 0.0, math.inf, absorb_ends=False).tolist() == [1e-280]
    pool = [Candidate("square", 0.0, CostCurve([0.0, 0.0, 1.0])),
            Candidate("cube", 0.5, CostCurve([0.0, 0.0, 0.0, 1e280]))]
    index = PolyDomIndex.build(pool, 0.0, math.inf)
    assert index.lookup(1e-6, 1.000000001e-12).key == "square"
    assert index.lookup(1e-290, 1e-300).key == "cube"  # 1e-590 there


def test_roots_of_a_cubic_whose_terms_span_more_than_the_floats():
    """``1e300 - 1e-300 n**3``: scaled by a power of two alone its leading coefficient was
    subnormal and the companion matrix held inf (numpy raised LinAlgError in a build)."""
    np.testing.assert_allclose(candidate_roots(np.array([1e300, 0.0, 0.0, -1e-300])), [1e200],
                               rtol=1e-12)
    np.testing.assert_allclose(candidate_roots(np.array([1e-300, 0.0, 0.0, -1e300])),
                               [1e-200], rtol=1e-12)
    # a root beyond the floats is no size (math.ldexp raised OverflowError in a build)
    big = np.array([1e-300, 1e-300, 1e300, 1e-10])  # roots near 1e-300 and -1e310
    assert all(math.isfinite(r) for r in candidate_roots(big))
