"""CostCurve: parsing never executes input, printing round-trips, crossings and dominance."""

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from polydom import CostCurve
from polydom.curves import poly
from tests.curve_oracle import (
    coefficients_from_roots,
    exact_order_right,
    exact_real_roots,
    exact_sign_changes,
    exact_taylor,
    exact_value,
    exactly_le,
    root_rounding_bound,
)
from tests.strategies import examples


def test_parse_expands_and_normalises():
    assert CostCurve.parse("3 + 0.5*n + 1e-4*n**2") == CostCurve([3, 0.5, 1e-4])
    assert CostCurve.parse("(n + 1)**2 / 4 - n/2").coefficients.tolist() == [0.25, 0.0, 0.25]
    assert CostCurve.parse("-(-n)") == CostCurve([0, 1])
    assert CostCurve.parse("7") == CostCurve([7])


def test_trailing_zeros_do_not_change_identity():
    assert CostCurve([1, 2, 0, 0]) == CostCurve([1, 2])
    assert hash(CostCurve([1, 2, 0])) == hash(CostCurve([1.0, 2.0]))
    assert CostCurve([0, 0]).degree == 0


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("sin(n)", "function call"),
        ("x + 1", "unknown symbol 'x'"),
        ("__import__('os').system('true')", "not allowed"),
        ("n.real", "attribute access"),
        ("n**-1", "non-negative integer"),
        ("n**0.5", "non-negative integer"),
        ("n**n", "non-negative integer"),
        ("n**99", "exponent 99"),
        ("1/n", "denominator"),
        ("1/(n-n)", "division by zero"),
        ("n^2", "use ** for powers"),
        ("3n", "malformed"),
        ("", "empty"),
        ("[n]", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("'n'", "is not a number"),
        ("1e999", "not finite"),
    ],
)
def test_parse_rejects_what_is_not_a_polynomial(text, fragment):
    with pytest.raises(ValueError, match="cost expression|empty") as err:
        CostCurve.parse(text)
    assert fragment in str(err.value)


def test_parse_rejects_non_strings_and_huge_input():
    with pytest.raises(ValueError, match="must be a string"):
        CostCurve.parse(3)
    with pytest.raises(ValueError, match="longer than"):
        CostCurve.parse("n+" * 6000 + "1")


@pytest.mark.parametrize("bad", [[], [math.nan], [1.0, math.inf], [[1.0, 2.0]]])
def test_constructor_rejects_bad_coefficients(bad):
    with pytest.raises(ValueError, match="coefficients"):
        CostCurve(bad)


@pytest.mark.parametrize("bad", ["abc", ["1", "2"], [True, 2.0], [1j]])
def test_constructor_rejects_coefficients_that_are_not_real_numbers(bad):
    with pytest.raises(TypeError, match="coefficients must be real numbers"):
        CostCurve(bad)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False), min_size=1,
                max_size=5))
def test_str_round_trips_through_parse(coefs):
    c = CostCurve(coefs)
    back = CostCurve.parse(str(c))
    np.testing.assert_allclose(back.coefficients, c.coefficients, rtol=1e-15, atol=0)


@given(
    st.lists(st.floats(-100, 100, allow_nan=False, allow_subnormal=False), min_size=1,
             max_size=5),
    st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=20),
)
def test_vectorised_evaluation_matches_scalar(coefs, xs):
    c = CostCurve(coefs)
    arr = c(np.array(xs))
    ref = np.polynomial.polynomial.polyval(np.array(xs), c.coefficients)
    np.testing.assert_allclose(arr, ref, rtol=1e-12, atol=1e-9)
    assert [c(x) for x in xs] == pytest.approx(arr.tolist(), rel=1e-12, abs=1e-9)


def test_addition_and_scaling():
    a, b = CostCurve([1, 2]), CostCurve([0, 0, 3])
    assert a + b == CostCurve([1, 2, 3])
    assert sum([a, b]) == a + b
    assert CostCurve.total([a, b, a]) == CostCurve([2, 4, 3])
    assert CostCurve.total([]) == CostCurve([0])
    assert 0.5 * b == CostCurve([0, 0, 1.5])


def test_crossings_examples():
    # the paper's 2n^2 vs 3n + 32 cross near 4.82
    x = CostCurve([0, 0, 2]).crossings(CostCurve([32, 3]))
    assert x.tolist() == pytest.approx([(3 + math.sqrt(9 + 256)) / 4])
    cubic = CostCurve([-6, 11, -6, 1])  # (n-1)(n-2)(n-3)
    assert cubic.crossings(CostCurve([0])).tolist() == pytest.approx([1, 2, 3])
    assert cubic.crossings(CostCurve([0]), 1.5, 2.5).tolist() == pytest.approx([2])


def test_touching_is_not_crossing():
    square = CostCurve([4, -4, 1])  # (n - 2)^2
    assert square.crossings(CostCurve([0])).size == 0
    quartic = CostCurve([1, -4, 6, -4, 1])  # (n - 1)^4
    assert quartic.crossings(CostCurve([0])).size == 0
    assert CostCurve([3, 1]).crossings(CostCurve([3, 1])).size == 0


def test_odd_multiplicity_root_is_a_crossing():
    triple = CostCurve([-1, 3, -3, 1])  # (n - 1)^3
    x = triple.crossings(CostCurve([0]))
    assert x.size == 1 and x[0] == pytest.approx(1.0, abs=1e-4)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=5),
    st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=5),
)
def test_crossings_are_sign_changes_found_by_dense_sampling(a, b):
    ca, cb = CostCurve(a), CostCurve(b)
    xs = ca.crossings(cb, 0.0, 12.0)
    grid = np.linspace(0.0, 12.0, 24001)
    d = ca(grid) - cb(grid)
    sign = np.sign(d)
    nonzero = sign != 0
    s, g = sign[nonzero], grid[nonzero]
    flips = g[1:][s[1:] != s[:-1]]
    # every sampled sign flip is near a reported crossing, and vice versa
    for f in flips:
        if f > 1e-3 and f < 12 - 1e-3:
            assert np.min(np.abs(xs - f)) < 2e-3 if xs.size else False
    for x in xs:
        assert np.min(np.abs(flips - x)) < 2e-3 if flips.size else False


def test_le_on_domains():
    a = CostCurve([8])
    b = CostCurve([0, 3, 0.2])
    assert not a.le(b)  # b(0) = 0 < 8
    assert a.le(b, 3, 10)
    assert b.le(a, 0, 2)
    assert not b.le(a, 0, 3)
    assert CostCurve([1, 1]).le(CostCurve([1, 1]))
    assert CostCurve([0, 0, 1]).le(CostCurve([0, 0, 1, 1e-9]))  # tiny leading term decides at inf
    assert not CostCurve([0, 0, 1, 1e-9]).le(CostCurve([0, 0, 1]))


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.integers(-4, 6).map(float), min_size=1, max_size=4),
    st.lists(st.integers(-4, 6).map(float), min_size=1, max_size=4),
    st.integers(0, 5),
    st.integers(0, 6),
)
def test_le_agrees_with_dense_sampling_on_finite_domains(a, b, lo, width):
    ca, cb = CostCurve(a), CostCurve(b)
    hi = lo + width
    grid = np.linspace(lo, hi, 4001)
    sampled = bool(np.all(ca(grid) <= cb(grid) + 1e-9))
    exact = ca.le(cb, lo, hi)
    if exact:
        assert sampled
    else:
        # a violation exists; dense sampling may only miss it when it is tiny
        d = cb.coefficients
        assert not sampled or np.min(cb(grid) - ca(grid)) > -1e-6, (d, lo, hi)


def test_is_nonnegative():
    assert CostCurve([4, -4, 1]).is_nonnegative()
    assert not CostCurve([4, -4.1, 1]).is_nonnegative()
    assert CostCurve([4, -4.1, 1]).is_nonnegative(3, 10)
    assert not CostCurve([1, -1]).is_nonnegative()
    assert CostCurve([1, -1]).is_nonnegative(0, 1)


def test_compare_right_breaks_ties_by_derivatives():
    a, b = CostCurve([1, 1]), CostCurve([1, 2])
    assert a.compare_right(b, 0.0) == -1
    assert b.compare_right(a, 0.0) == 1
    assert a.compare_right(CostCurve([1, 1]), 5.0) == 0
    # (n-1)^2 vs 0: equal value and slope at 1, then the square is dearer
    assert CostCurve([1, -2, 1]).compare_right(CostCurve([0]), 1.0) == 1


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=5),
    st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=5),
    st.integers(0, 8),
    st.one_of(st.integers(0, 12).map(float), st.just(math.inf)),
)
def test_le_equals_the_exact_rational_answer_in_both_directions(a, b, lo, width):
    """``le`` says True exactly when ``a <= b`` holds everywhere on the domain, and False
    exactly when it fails somewhere: touching (a double root of b - a) counts as <=."""
    hi = lo + width
    ca, cb = CostCurve(a), CostCurve(b)
    assert ca.le(cb, lo, hi) == exactly_le(a, b, lo, hi)
    assert cb.le(ca, lo, hi) == exactly_le(b, a, lo, hi)


@given(
    st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=5),
    st.integers(-3, 3).map(float),
)
def test_a_curve_is_le_itself_plus_a_constant_exactly_when_the_constant_is_nonnegative(a, k):
    ca = CostCurve(a)
    assert ca.le(ca + k, 0.0, math.inf) == (k >= 0)
    assert (ca + k).le(ca, 0.0, math.inf) == (k <= 0)


@given(
    st.lists(
        st.one_of(st.just(0.0), st.floats(-1e6, 1e6, allow_nan=False).filter(
            lambda c: c == 0 or abs(c) > 1e-9)),
        min_size=1, max_size=9,
    ),
    st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e6)), min_size=1, max_size=8),
)
def test_evaluation_matches_exact_rational_arithmetic(coefs, xs):
    """Horner in floats against the exact value of the same binary floats (Fractions): the
    error stays within a few ulps of the sum of absolute terms."""
    c = CostCurve(coefs)
    for x in xs:
        exact = sum(Fraction(ck) * Fraction(x) ** k for k, ck in enumerate(c.coefficients))
        scale = sum(abs(Fraction(ck)) * Fraction(x) ** k for k, ck in enumerate(c.coefficients))
        assert abs(Fraction(c(x)) - exact) <= Fraction(1, 2**48) * scale


# ---------------------------------------------------------------- the numerics (poly.py)
# Integer coefficients keep every oracle exact: values, Taylor shifts at halves and the
# signs of small integer polynomials are exact in binary floating point and in rationals.
int_coefs = st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=6)
halves = st.integers(-4, 16).map(lambda k: k / 2)


def test_two_sizes_are_one_point_within_1e_9_relative_above_one():
    assert poly.tol_x(0.0) == 1e-9 and poly.tol_x(0.5) == 1e-9 and poly.tol_x(-1.0) == 1e-9
    assert poly.tol_x(-3.0) == pytest.approx(3e-9, rel=1e-15)
    assert poly.tol_x(1e6) == pytest.approx(1e-3, rel=1e-15)


@given(int_coefs, int_coefs)
def test_coefficient_differences_and_magnitudes_are_numpys(a, b):
    ca, cb = np.array(a), np.array(b)
    size = max(ca.size, cb.size)

    def padded(v: np.ndarray) -> np.ndarray:
        return np.pad(v, (0, size - v.size))

    want = padded(np.polynomial.polynomial.polysub(ca, cb))
    np.testing.assert_array_equal(poly.difference(ca, cb), want)
    assert poly.coef_difference(a, b) == want.tolist()
    np.testing.assert_array_equal(poly.magnitude_coefs(ca, cb),
                                  padded(np.abs(ca)) + padded(np.abs(cb)))


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=9),
    st.floats(-1e3, 1e3, allow_nan=False),
)
def test_horner_matches_exact_rational_arithmetic_for_lists_and_arrays(coefs, x):
    exact = exact_value(coefs, x)
    scale = sum(abs(Fraction(c)) * abs(Fraction(x)) ** k for k, c in enumerate(coefs))
    # relative rounding per step, plus an absolute 2**-1074 per step where a partial sum
    # is subnormal (5e-324 * 1.5 rounds to 1e-323: off by a third of itself)
    bound = Fraction(1, 2**48) * scale + len(coefs) * Fraction(1, 2**1074)
    for given_as in (coefs, np.array(coefs)):
        assert abs(Fraction(poly.horner(given_as, x)) - exact) <= bound


@given(int_coefs, halves)
def test_taylor_shift_is_the_exact_taylor_expansion(coefs, x):
    want = [float(t) for t in exact_taylor(coefs, x)]
    assert poly.taylor(coefs, x) == want
    assert poly.taylor(np.array(coefs), x) == want
    assert CostCurve(coefs).taylor(x).tolist() == want[: CostCurve(coefs).degree + 1]


@given(int_coefs, int_coefs, halves)
def test_compare_right_is_the_sign_of_the_difference_just_right_of_x(a, b, x):
    want = exact_order_right(a, b, x)
    assert poly.compare_right(a, b, x) == want
    assert CostCurve(a).compare_right(CostCurve(b), x) == want


@given(int_coefs, int_coefs, st.integers(-5, 8).map(float))
def test_values_equal_and_sign_are_exact_for_integer_polynomials(a, b, x):
    equal = exact_value(a, x) == exact_value(b, x)
    assert poly.values_equal(a, b, x) == equal
    d = poly.coef_difference(a, b)
    exact = exact_value(d, x)
    assert poly.sign(d, [poly.ZERO_TOL * abs(v) for v in d], x) == (exact > 0) - (exact < 0)


@given(int_coefs)
def test_derivative_is_numpys(coefs):
    d = np.array(coefs)
    want = np.polynomial.polynomial.polyder(d) if d.size > 1 else np.zeros(1)
    np.testing.assert_array_equal(poly.derivative(d), want)


@pytest.mark.parametrize(
    "coefs, roots",
    [
        ([0.0], []),
        ([5.0], []),
        ([5.0, 0.0, 0.0], []),
        ([-2.0, 1.0, 0.0, 0.0], [2.0]),  # trailing zeros are not a higher degree
        ([3.0, 2.0], [-1.5]),
        ([0.0, 0.0, 1.0], [0.0]),  # n**2: the double root at 0
        ([9.0, -6.0, 1.0], [3.0]),  # (n - 3)**2: one double root
        ([6.0, -5.0, 1.0], [2.0, 3.0]),
        ([1.0, 0.0, 1.0], []),  # n**2 + 1
        ([1.0, -2.0, 1.0 + 1e-9], []),  # a discriminant of -4e-9 is no rounding error
        ([-2.0, 1.0, -2.0, 1.0], [2.0]),  # (n**2 + 1)(n - 2): the complex pair is dropped
        ([-6.0, 11.0, -6.0, 1.0], [1.0, 2.0, 3.0]),
        ([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),  # n**3: slope 0 at the root, no Newton step
    ],
)
def test_candidate_roots_of_small_polynomials(coefs, roots):
    assert poly.candidate_roots(np.array(coefs)) == pytest.approx(roots, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("scale", [1.0, 2.0**40, 2.0**-40])
def test_a_discriminant_below_zero_by_rounding_is_a_double_root(scale):
    """At any scale: the tolerance is relative to ``b**2 + |4ac|`` (scaling by a power of 2
    is exact, so the discriminant rounds below 0 at every scale)."""
    r = 3.0 / 7.0
    d = scale * np.array([3.0 * r * r, -6.0 * r, 3.0])  # 3 (n - 3/7)**2 in floats
    assert d[1] * d[1] - 4.0 * d[2] * d[0] < 0.0  # the discriminant rounds below 0
    assert poly.candidate_roots(d) == pytest.approx([r], rel=1e-12)


def _disc_ratio(c: float, b: float, a: float) -> float:
    return (b * b - 4.0 * a * c) / (b * b + abs(4.0 * a * c))


def test_the_discriminant_tolerance_is_1e_12_of_b_squared_plus_4ac():
    """A discriminant below 0 by at most ``1e-12 (b**2 + |4ac|)`` is rounding (a double
    root at ``-b / 2a``); further below the roots are complex (sympy: no real root)."""
    # exactly on the boundary, in floats (found by search): still a double root
    c, b, a = 0.2500222251458353, -1.0000444493028002, 1.0
    assert b * b - 4.0 * a * c == -1e-12 * (b * b + abs(4.0 * a * c)) < 0.0
    got = poly.candidate_roots(np.array([c, b, a]))  # -b / 2a, once or as q/a and c/q
    assert got and got == pytest.approx([-b / 2] * len(got), rel=1e-12)
    # 6 % beyond the boundary: complex
    b = -(2.0 - 2.12e-12)
    assert -1.125e-12 < _disc_ratio(1.0, b, 1.0) < -1e-12
    assert exact_real_roots([1.0, b, 1.0]) == []
    assert poly.candidate_roots(np.array([1.0, b, 1.0])) == []
    # 6 % inside: rounding
    b = -(2.0 - 1.88e-12)
    assert -1e-12 < _disc_ratio(1.0, b, 1.0) < 0.0
    got = poly.candidate_roots(np.array([1.0, b, 1.0]))
    assert got and got == pytest.approx([1.0] * len(got), rel=1e-9)
    # n**2 + 1e-8 and 1e-8 n**2 + 1: no real root, whatever the sizes of a and c
    for coefs in ([1e-8, 0.0, 1.0], [1.0, 0.0, 1e-8], [1e-8, 1e-12, 1.0]):
        assert exact_real_roots(coefs) == []
        assert poly.candidate_roots(np.array(coefs)) == []


def _assert_known_roots_located(roots: dict[int, int], coefs: list[int]) -> None:
    """Each simple root of ``coefs`` within its rounding bound, each double or triple root
    split by under 1e-7 of its size (well inside the 1e-5 that keeps a near-real
    eigenvalue) and far from the others within twice its bound, and every candidate within
    twice the bound of a real root (``curve_oracle.root_rounding_bound``)."""
    got = poly.candidate_roots(np.array(coefs, dtype=np.float64))
    bound = {r: root_rounding_bound(coefs, r, m) for r, m in roots.items()}
    for r, m in roots.items():
        miss = min((abs(g - r) for g in got), default=math.inf)
        if m == 1:
            assert miss <= bound[r], (r, got, bound[r])
        elif bound[r] <= 1e-7 * max(1, abs(r)) and all(
                abs(s - r) > 1e3 * max(bound[r], bound[s]) for s in roots if s != r):
            assert miss <= 2 * bound[r], (r, m, got, bound[r])
    for g in got:
        assert any(abs(g - r) <= 2 * bound[r] for r in roots), (g, roots, bound)


@pytest.mark.parametrize(
    "roots",
    [
        {-2: 1, 743: 1, -688: 1},  # the eigenvalue of -2 is off by 85 times the bound
        {-503: 2, 850: 2, 1: 1},  # ... of 1 by 84 times: the Newton steps close the gap
        {-11: 2, -5: 1},  # a Newton step from -11 landed exactly on -5 (|d| = 0 there)
        {16: 2, 7: 1, 0: 1},  # ... from 16 exactly on 0
        {500: 2, 3: 1},  # rounding splits the double root 8e-6 off the axis: near-real at 500
        {1000: 3},
    ],
)
def test_candidate_roots_of_polynomials_with_known_roots(roots):
    _assert_known_roots_located(roots, coefficients_from_roots(roots))


def test_a_pair_further_than_1e_5_of_its_size_off_the_axis_is_not_a_candidate():
    # (n**2 + 2**-32)(n**2 + 1): the pair +-2**-16 i = +-1.5e-5 i near 0 is complex
    coefs = [2.0**-32, 0.0, 1.0 + 2.0**-32, 0.0, 1.0]
    assert exact_real_roots(coefs) == []
    assert poly.candidate_roots(np.array(coefs)) == []


def test_candidate_roots_at_the_float_limit():
    """2**1023 (n + 1)(n**2 + 1): the derivative's coefficients overflow to inf and the Newton
    step is NaN; the eigenvalue is kept unpolished, as for the same polynomial unscaled."""
    with np.errstate(over="ignore", invalid="ignore"):
        got = poly.candidate_roots(np.array([2.0**1023] * 4))
    assert got == pytest.approx([-1.0], rel=1e-12)
    assert poly.candidate_roots(np.array([1.0] * 4)) == pytest.approx([-1.0], rel=1e-12)


@st.composite
def known_roots(draw) -> tuple[dict[int, int], list[int]]:
    """Distinct integer roots, small ones and ones up to 1000, of multiplicity 1 to 3, and
    the exact integer coefficients of ``lead * prod (n - r)**m`` (all below 2**53, so exact
    in floats): the roots are known without solving anything."""
    roots = draw(st.dictionaries(
        st.one_of(st.integers(-20, 20), st.integers(-1000, 1000)),
        st.sampled_from([1, 1, 2, 3]), min_size=1, max_size=4))
    assume(sum(roots.values()) <= 6)
    coefs = coefficients_from_roots(roots, draw(st.sampled_from([1, -2, 3])))
    assume(max(abs(c) for c in coefs) < 2**53)
    return roots, coefs


@settings(max_examples=examples(150), deadline=None)
@given(known_roots())
def test_candidate_roots_locate_known_roots_to_their_rounding_bound(case):
    """Against the known exact roots (``_assert_known_roots_located``): the eigenvalues
    alone miss simple roots by up to 85 times the rounding bound, the Newton steps must
    close the gap without jumping to another root."""
    _assert_known_roots_located(*case)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.integers(-6, 6).map(float), min_size=2, max_size=7))
def test_candidate_roots_are_the_real_roots(coefs):
    """Every real root of odd multiplicity (found exactly by sympy) has a candidate near it
    (simple ones to 1e-9, triple ones to the 1e-5 that double precision allows), and every
    candidate is near a real root: complex pairs are dropped, multiple roots do not drift."""
    assume(any(coefs[1:]))
    got = poly.candidate_roots(np.array(coefs))
    exact = exact_real_roots(coefs)
    for r, mult in exact:
        if mult % 2:
            tol = (1e-9 if mult == 1 else 1e-4) * max(1.0, abs(r))
            assert any(abs(g - r) <= tol for g in got), (r, mult, got)
    for g in got:
        assert any(abs(g - r) <= 1e-4 * max(1.0, abs(r)) for r, _ in exact), (g, exact)


@settings(max_examples=examples(150), deadline=None)
@given(known_roots(), st.integers(-1000, 1000), st.one_of(st.integers(0, 2000), st.just(math.inf)))
def test_sign_change_roots_are_the_known_odd_multiplicity_roots(case, lo, width):
    """The sizes where ``lead * prod (n - r)**m`` changes sign are its roots of odd
    multiplicity strictly inside ``(lo, hi)``, each within twice its rounding bound; a touch
    (a double root) after a crossing is not a second crossing."""
    roots, coefs = case
    lo, hi = float(lo), lo + width
    bound = {r: root_rounding_bound(coefs, r, m) for r, m in roots.items()}
    assume(all(min(abs(r - lo), abs(r - hi)) > 2 * bound[r] + poly.tol_x(r) for r in roots
               if roots[r] % 2))  # a crossing at an end may be absorbed by it
    want = sorted(r for r, m in roots.items() if m % 2 and lo < r < hi)
    got = poly.sign_change_roots(np.array(coefs, dtype=np.float64), lo, hi)
    assert len(got) == len(want), (got, want, roots, lo, hi)
    for g, r in zip(got, want, strict=True):
        assert abs(g - r) <= 2 * bound[r], (g, r, bound[r])


def test_interval_points_lie_inside_each_gap():
    assert poly.interval_points([1.0, 3.0], 0.0, 4.0) == [0.5, 2.0, 3.5]
    assert poly.interval_points([2.0], 0.0, math.inf) == [1.0, 4.0]
    assert poly.interval_points([], 0.25, math.inf) == [1.25]  # left + 1 beyond a small end
    assert poly.interval_points([], 5.0, math.inf) == [10.0]  # twice a large one


def test_sign_change_roots_on_the_default_domain_and_at_its_ends():
    """The default domain is ``(0, inf)`` with ends absorbing: a root at most ``tol_x`` from
    an end (exactly at it included) is at the end, not inside; without ``absorb_ends`` only
    a root exactly at an end is."""
    assert poly.sign_change_roots(np.array([-1.0, 2.0])).tolist() == [0.5]
    assert poly.sign_change_roots(np.array([1.0, 2.0])).tolist() == []  # the root -0.5
    assert CostCurve([0.0, 1.0]).crossings(CostCurve([1e-9])).size == 0
    assert poly.tol_x(0.0) == 1e-9 and poly.tol_x(10.0) == 1e-8
    for r in (1e-9, 5e-10):  # tol_x(0) and closer
        assert poly.sign_change_roots(np.array([-r, 1.0])).tolist() == []
        assert poly.sign_change_roots(np.array([-r, 1.0]), absorb_ends=False).tolist() == [r]
    assert poly.sign_change_roots(np.array([-2e-9, 1.0])).tolist() == [2e-9]
    for r in (10.0 - poly.tol_x(10.0), 10.0 - 5e-9):  # tol_x(10) below hi = 10, and closer
        assert poly.sign_change_roots(np.array([-r, 1.0]), 0.0, 10.0).tolist() == []
        assert poly.sign_change_roots(np.array([-r, 1.0]), 0.0, 10.0, False).tolist() == [r]
    assert poly.sign_change_roots(np.array([-(10.0 - 2e-8), 1.0]), 0.0, 10.0).tolist() == [
        10.0 - 2e-8]
    assert poly.sign_change_roots(np.array([-9.5, 1.0]), 0.0, 10.0, False).tolist() == [9.5]
    assert poly.sign_change_roots(np.array([-10.0, 1.0]), 0.0, 10.0, False).tolist() == []
    assert poly.sign_change_roots(np.array([0.0, 1.0]), absorb_ends=False).tolist() == []


def test_sign_change_roots_merge_roots_at_most_tol_x_apart():
    # n (n - 1e-9): two simple roots tol_x(1e-9) = 1e-9 apart are one point, touched
    assert poly.sign_change_roots(np.array([0.0, -1e-9, 1.0]), -1.0, 1.0).tolist() == []
    # n (n - 2e-9): two crossings
    assert poly.sign_change_roots(np.array([0.0, -2e-9, 1.0]), -1.0, 1.0).tolist() == [
        0.0, 2e-9]
    # n**2 (n - 3): the double root 0 comes as two equal candidates; merging them does not
    # end the scan before the crossing at 3
    assert poly.sign_change_roots(np.array([0.0, 0.0, -3.0, 1.0]), -1.0).tolist() == (
        pytest.approx([3.0], rel=1e-12))
    # (n - 1)(n - 2)**2: a touch after a crossing is not a second crossing
    assert poly.sign_change_roots(np.array([-4.0, 8.0, -5.0, 1.0]), 0.0, 10.0).tolist() == (
        pytest.approx([1.0], rel=1e-12))


def test_coefficients_of_any_real_dtype_are_computed_in_double_precision():
    # -1 + 3 n and n**2 in float32 (exact): root and Taylor shift to double precision
    assert poly.sign_change_roots(np.array([-1.0, 3.0], dtype=np.float32)).tolist() == [1 / 3]
    t = poly.taylor(np.array([0.0, 0.0, 1.0], dtype=np.float32), 0.1)
    assert t == [float(v) for v in exact_taylor([0.0, 0.0, 1.0], 0.1)]
    assert all(type(v) is float for v in t)


def test_an_empty_domain_is_refused():
    """``[lo, hi]`` with ``hi < lo`` (or NaN) has no sizes: refused, not answered True by the
    coefficient shortcut and False by the general check.  Nor may it start at an infinity,
    where every value is within rounding of an infinite scale (``n >= 0`` held on
    ``[-inf, inf]``, and ``n`` did not cross 0 there)."""
    with pytest.raises(ValueError, match=r"^the domain must have a finite lo <= hi, got "
                                         r"lo=0\.0, hi=-1\.0$"):
        CostCurve([0.0]).le(CostCurve([0.0, 1.0]), 0.0, -1.0)
    with pytest.raises(ValueError, match=r"lo <= hi, got lo=5.0, hi=0.0"):
        CostCurve([-1.0, 1.0]).is_nonnegative(5.0, 0.0)
    with pytest.raises(ValueError, match=r"lo <= hi, got lo=nan"):
        poly.difference_nonnegative(np.array([1.0]), math.nan, 1.0, np.array([1.0]))
    for lo, hi in ((-math.inf, math.inf), (math.inf, math.inf)):
        with pytest.raises(ValueError, match=r"finite lo <= hi, got lo=-?inf, hi=inf"):
            CostCurve([0.0, 1.0]).is_nonnegative(lo, hi)
    with pytest.raises(ValueError, match=r"^the domain must have a finite lo and a hi, got "
                                         r"lo=-inf, hi=inf$"):
        CostCurve([0.0, 1.0]).crossings(CostCurve([0.0]), -math.inf)
    with pytest.raises(ValueError, match=r"finite lo and a hi, got lo=0.0, hi=nan"):
        poly.sign_change_roots(np.array([-1.0, 1.0]), 0.0, math.nan)
    assert CostCurve([0.0, 1.0]).crossings(CostCurve([1.0]), 2.0, 0.0).size == 0  # no sizes
    assert CostCurve([1.0]).le(CostCurve([1.0, 1.0]), 2.0, 2.0)  # one point is a domain


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=6),
    st.integers(-3, 8).map(float),
    st.one_of(st.integers(0, 12).map(float), st.just(math.inf)),
)
def test_sign_change_roots_are_the_exact_odd_multiplicity_roots(coefs, lo, width):
    """The sizes where the polynomial changes sign are its real roots of odd multiplicity
    strictly inside the domain (sympy, exact); touches of even multiplicity are not."""
    hi = lo + width
    want = exact_sign_changes(coefs, lo, hi)
    got = poly.sign_change_roots(np.array(coefs), lo, hi)
    assert got.dtype == np.float64
    assert got.tolist() == pytest.approx(want, rel=1e-4, abs=1e-4)
    if lo == 0.0 and math.isinf(hi):
        assert poly.sign_change_roots(np.array(coefs)).tolist() == got.tolist()


@settings(max_examples=examples(150), deadline=None)
@given(int_coefs, st.integers(-3, 8).map(float),
       st.one_of(st.integers(0, 12).map(float), st.just(math.inf)))
def test_is_nonnegative_equals_the_exact_answer(coefs, lo, width):
    hi = lo + width
    assert CostCurve(coefs).is_nonnegative(lo, hi) == exactly_le([0.0], coefs, lo, hi)
    if lo == 0.0 and math.isinf(hi):
        assert CostCurve(coefs).is_nonnegative() == exactly_le([0.0], coefs, lo, hi)


def test_nonnegativity_with_a_small_positive_leading_term_and_touching_rounding():
    # 0.5 n**2 - n + 1 > 0 everywhere: a leading coefficient below 1 is still positive
    assert CostCurve([1.0, -1.0, 0.5]).is_nonnegative()
    assert CostCurve([1.0, -1.0, 0.5]).is_nonnegative(2.0, math.inf)
    # 1e6 (n - 1/3)**2 in floats touches 0 up to rounding: within ZERO_TOL of its scale
    third = 1.0 / 3.0
    big = CostCurve([1e6 * third * third, -2e6 * third, 1e6])
    assert big.is_nonnegative() and big.is_nonnegative(0.0, 1.0)
    assert CostCurve([0.0, 0.0, 1.0]).le(big + CostCurve([0.0, 0.0, 1.0]))


# ---------------------------------------------------------------- construction and algebra
def test_errors_name_the_value_that_was_wrong():
    with pytest.raises(ValueError, match=r"sequence of numbers, got \[\[1\], \[1, 2\]\]"):
        CostCurve([[1], [1, 2]])  # ragged
    with pytest.raises(TypeError, match=r"real numbers, got \['1', '2'\] \(dtype <U1\)"):
        CostCurve(["1", "2"])
    with pytest.raises(ValueError, match=r"non-empty 1-D sequence, got \[\[1.0, 2.0\]\]"):
        CostCurve([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"finite, got \[1.0, inf\]"):
        CostCurve([1.0, math.inf])


def test_degree_is_limited_to_max_degree():
    assert CostCurve([0.0] * 32 + [1.0]).degree == 32
    with pytest.raises(ValueError, match="degree at most 32, got degree 33"):
        CostCurve([0.0] * 33 + [1.0, 0.0])


@pytest.mark.parametrize(
    "given_as, coefficients",
    [
        (3, [3.0]),
        ([1, 2], [1.0, 2.0]),
        (np.array([1, 2], dtype=np.uint8), [1.0, 2.0]),
        (np.array([Fraction(1, 2), 3], dtype=object), [0.5, 3.0]),
        ((0.0, 0.0), [0.0]),
    ],
)
def test_real_numbers_of_any_type_are_coefficients(given_as, coefficients):
    assert CostCurve(given_as).coefficients.tolist() == coefficients


@pytest.mark.parametrize(
    "bad",
    [(1.0, True), np.array([True, False]), np.array([True, 2.0], dtype=object),
     np.array(["a"], dtype=object)],
)
def test_bools_and_other_objects_are_not_coefficients(bad):
    with pytest.raises(TypeError, match="real numbers"):
        CostCurve(bad)


def test_coefficients_are_normalised_and_read_only():
    c = CostCurve([-0.0, 1.0])
    assert not np.signbit(c.coefficients[0]) and repr(c) == "CostCurve([0.0, 1.0])"
    assert not np.signbit(CostCurve([-0.0]).coefficients).any()
    assert not c.coefficients.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        c.coefficients[0] = 5.0


def test_sympy_form_and_text():
    expr = CostCurve([3.0, 0.0, 0.5]).to_sympy()
    assert [float(c) for c in sympy.Poly(expr).all_coeffs()] == [0.5, 0.0, 3.0]
    assert CostCurve([0.0]).to_sympy() == 0
    assert isinstance(CostCurve([0.0]).to_sympy(), sympy.Expr)  # a sympy zero, not int 0
    assert str(CostCurve([3.0, 0.0, 0.5])) == "0.5*n**2 + 3"
    assert str(CostCurve([0.1, 1.0])) == "n + 0.1"
    # a constant prints as short as inside a sum (sympy's default pads a lone Float)
    assert str(CostCurve([0.1])) == "0.1" and str(CostCurve([-1e-20])) == "-1e-20"


def test_evaluation_returns_python_floats_and_keeps_array_shapes():
    c = CostCurve([1.0, 2.0, 3.0])
    assert type(c(2)) is float and c(2) == 17.0
    assert c(np.array([[0.0, 1.0], [2.0, -1.0]])).tolist() == [[1.0, 6.0], [17.0, 2.0]]


def test_adding_numbers_and_curves():
    c = CostCurve([1.0, 2.0])
    assert c + 2 == CostCurve([3.0, 2.0]) and c + 0.5 == CostCurve([1.5, 2.0])
    assert 1 + c == CostCurve([2.0, 2.0]) and 0 + c == c
    assert c + CostCurve([0.0, 0.0, 4.0]) == CostCurve([1.0, 2.0, 4.0])
    assert CostCurve([0.0, 0.0, 4.0]) + c == CostCurve([1.0, 2.0, 4.0])
    for bad in (True, False, "1"):
        with pytest.raises(TypeError):
            c + bad
        with pytest.raises(TypeError):
            bad + c


def test_scaling_by_numbers_only():
    c = CostCurve([1.0, 2.0])
    assert c * 2 == CostCurve([2.0, 4.0]) and np.float64(0.5) * c == CostCurve([0.5, 1.0])
    for bad in (True, "2", c):
        with pytest.raises(TypeError):
            c * bad


def test_a_curve_equals_only_curves():
    c = CostCurve([1.0, 2.0])
    assert c == CostCurve([1, 2, 0]) and c != CostCurve([1.0, 2.5])
    assert c != "1 + 2*n" and c != [1.0, 2.0]


def test_domains_default_to_the_whole_half_line():
    # crossing at n = 0.5, and the order there, fall inside [0, inf) but not [1, inf)
    assert CostCurve([0.0, 1.0]).crossings(CostCurve([0.5])).tolist() == [0.5]
    assert not CostCurve([1.0]).le(CostCurve([0.0, 1.0]))
    assert CostCurve([1.0]).le(CostCurve([0.0, 1.0]), 1.0)
    assert not CostCurve([-1.0, 2.0]).is_nonnegative()


@given(
    st.lists(
        st.lists(st.one_of(st.just(0.0), st.just(-0.0),
                           st.floats(-1e6, 1e6, allow_subnormal=False)), min_size=3,
                 max_size=3),
        min_size=1, max_size=6,
    )
)
def test_from_rows_equals_one_constructor_call_per_row(rows):
    """The fast path gives the curves the constructor gives: same coefficients (trailing
    zeros dropped, -0.0 normalised), equality, hash, values and read-only arrays."""
    got = CostCurve.from_rows(np.array(rows))
    want = [CostCurve(r) for r in rows]
    assert got == want
    for g, w in zip(got, want, strict=True):
        assert g.coefficients.tolist() == w.coefficients.tolist()
        assert not np.signbit(g.coefficients).any() or np.signbit(w.coefficients).any()
        assert hash(g) == hash(w) and g.degree == w.degree
        assert g(1.5) == w(1.5) and g(-2.0) == w(-2.0)
        assert not g.coefficients.flags.writeable


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ([1.0, 2.0], r"\(k, L\) matrix with L >= 1, got \(2,\)"),
        (np.zeros((2, 0)), r"got \(2, 0\)"),
        ([[1.0], [math.nan], [math.inf]], r"finite, got \[nan\] in row 1"),
        ([["a"]], "matrix of numbers"),
        # numpy would cast these silently; the constructor refuses them, so must from_rows
        ([["1.5"]], r"matrix of numbers, got dtype <U3"),
        ([[1.0, 2.0], [np.True_, 2.0]],
         "^coefficients must be a matrix of numbers, got a boolean$"),
        ([[1.0], [1.0, 2.0]], "^coefficients must be a matrix of numbers: .*inhomogeneous"),
        ([[1.0, 10**400]], "^coefficients must be finite, got an int beyond the floats$"),
        (np.array([[1, 0], [0, 1]], dtype=bool), "matrix of numbers, got dtype bool"),
        ([[1.0, None]], "matrix of numbers, got dtype object"),
        # degree 33 in row 1 (row 0 is padded with zeros to the same width: degree 0)
        (np.array([[1.0] + [0.0] * 33, [0.0] * 33 + [1.0]]),
         r"degree at most 32, got degree 33 in row 1$"),
        # the first row of degree 32 (allowed) and 31 must not be named
        (np.array([[0.0] * 32 + [1.0, 0.0], [0.0] * 31 + [1.0, 0.0, 0.0], [0.0] * 33 + [1.0]]),
         r"^a cost curve has degree at most 32, got degree 33 in row 2$"),
    ],
)
def test_from_rows_names_what_is_wrong(bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        CostCurve.from_rows(bad)


def test_an_integer_beyond_the_floats_is_refused_as_not_finite():
    with pytest.raises(ValueError, match=r"^coefficients must be finite, got \[1, 10{30}"):
        CostCurve([1, 10**400])


def test_from_rows_takes_degree_32_and_wide_rows_of_low_degree():
    wide = np.zeros((2, 40))
    wide[0, 32] = 1.0  # degree 32: the limit
    wide[1, :3] = [1.0, 2.0, 3.0]
    top, low = CostCurve.from_rows(wide)
    assert top == CostCurve([0.0] * 32 + [1.0]) and top.degree == 32
    assert low == CostCurve([1.0, 2.0, 3.0])
    assert CostCurve.from_rows([[1, 2]]) == [CostCurve([1, 2])]  # integers are numbers
    assert CostCurve.from_rows(np.zeros((0, 40))) == []  # no rows: no degree to check
    assert CostCurve.from_rows(np.array([[1.0, 2]], dtype=object)) == [CostCurve([1, 2])]
