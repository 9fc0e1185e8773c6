"""Cost curves far from 1 (issue 31 item 6): coefficients near 1e-300 gave 29 lookups of
6,260 edge queries that differed from brute force, because the closed-form roots squared
them (``b*b`` underflows to 0, or overflows near 1e250).  Roots are now found on the
difference scaled by a power of two; subnormal coefficients (below about 2.2e-308, too few
digits to compare) are refused when a curve is made, naming the coefficient."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polydom import Candidate, CostCurve, PolyDomIndex
from polydom.curves.poly import candidate_roots, sign_change_roots
from polydom.errors import InvalidArgumentError
from tests.index_oracle import full_scan
from tests.strategies import candidate_pools, domains, examples

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    max_examples=examples(60))
#: Scales whose products with the pools' coefficients (1e-9 to 1e6, sizes up to 1e5, degree
#: up to 4) stay normal floats and finite.
SCALES = st.sampled_from([1e-295, 2.0**-970, 3.7e-280, 1e250])


def _edge_queries(index, cands, lo, hi):
    """Sizes on, just left and just right of every break, and a grid; budgets at every
    candidate's cost there and a relative hair either side (no absolute slack)."""
    top = hi if math.isfinite(hi) else max(lo + 50.0, 2.0 * float(index.breakpoints[-1]) + 5.0)
    sizes = {lo, top, *np.linspace(lo, top, 9).tolist()}
    for b in index.breakpoints.tolist():
        for x in (b, b - 1e-6 * max(1.0, b), b + 1e-6 * max(1.0, b)):
            if lo <= x <= top:
                sizes.add(x)
    for size in sorted(sizes):
        budgets = {0.0}
        for c in cands:
            v = c.cost(size)
            budgets.update({v, v * (1 + 1e-9), v * (1 - 1e-9)})
        # a cost that rounds below 0 near a double root is no budget (refused, rightly)
        for budget in sorted(b for b in budgets if b >= 0.0):
            yield size, budget


@SETTINGS
@given(candidate_pools(), domains, SCALES)
def test_lookups_over_scaled_curves_answer_as_the_full_scan(cands, domain, scale):
    lo, hi = domain
    scaled = [Candidate(c.key, c.accuracy, c.cost * scale) for c in cands]
    index = PolyDomIndex.build(scaled, lo, hi)
    for size, budget in _edge_queries(index, scaled, lo, hi):
        got = index.lookup(size, budget)
        want = full_scan(scaled, size, budget)
        if got is not None:
            assert got.cost(size) <= budget
        if (got and got.key) == (want and want.key):
            continue
        # an exact floating tie: a size on a break
        on_break = np.min(np.abs(index.breakpoints - size)) <= 1e-9 * max(1.0, size)
        assert on_break or (got and got.accuracy) == (want and want.accuracy), (
            size, budget, got, want)


@pytest.mark.parametrize("scale", [1e-300, 1e-250, 1e250, 1e300])
def test_roots_do_not_depend_on_a_scale_of_the_coefficients(scale):
    # (n - 2)(n - 3) = n**2 - 5 n + 6: its squares 25 * scale**2 under/overflow
    d = np.array([6.0, -5.0, 1.0]) * scale
    np.testing.assert_allclose(candidate_roots(d), [2.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(sign_change_roots(d, 0.0, 10.0), [2.0, 3.0], rtol=1e-12)
    cubic = np.array([-6.0, 11.0, -6.0, 1.0]) * scale  # (n - 1)(n - 2)(n - 3)
    np.testing.assert_allclose(sign_change_roots(cubic, 0.0, 10.0), [1.0, 2.0, 3.0], rtol=1e-9)


def test_a_tiny_constant_below_a_tiny_line_is_found_by_lookup():
    """The probe's case: c4 = 3.7e-300 is the only curve under 3.7e-300 at n = 10; the sweep
    found no crossing of 1.85e-299 n + 5e-300 n**2 with it (b*b underflowed) and said None."""
    costs = [[5e-300, 3e-300, 1.85e-299], [5e-300, 1.85e-299, 1e-300], [5e-300, 3e-300],
             [0.0, 1.85e-299, 5e-300], [3.7e-300]]
    accs = [0.9, 0.8, 0.7, 0.6, 0.5]
    cands = [Candidate(f"c{i}", a, CostCurve(c))
             for i, (c, a) in enumerate(zip(costs, accs, strict=True))]
    index = PolyDomIndex.build(cands, 0.0, 100.0)
    assert index.lookup(10.0, 3.7e-300).key == "c4"


@pytest.mark.parametrize(
    ("make", "where"),
    [(lambda: CostCurve([1.0, 1e-320]), "coefficient of n**1 is 1e-320"),
     (lambda: CostCurve.parse("1 + 3e-310*n**2"), "coefficient of n**2 is 3e-310"),
     (lambda: CostCurve.from_rows([[1.0, 2.0], [5e-324, 1.0]]),
      "coefficient of n**0 in row 1 is 5e-324")],
)
def test_subnormal_coefficients_are_refused_naming_them(make, where):
    with pytest.raises(InvalidArgumentError, match="must be 0 or at least 2.2250738585072014e-308"
                       ) as caught:
        make()
    assert where in str(caught.value) and "\n" not in str(caught.value)
