"""Polynomial numerics for cost curves: tolerances, Horner, Taylor shifts, roots, signs.

The one home of the numerical conventions (spec section 5):

* ``tol_x(x) = 1e-9 * max(1, |x|)``: two sizes at most this far apart are the same point.
* Two curves are *equal* at ``x`` when their difference polynomial there is at most
  ``REL_TOL = 1e-12`` times its rounding scale (the difference with absolute coefficients,
  evaluated at ``|x|``); orders are only trusted above that level.
* Accuracies compare with ``ACC_TOL = 1e-12`` of slack in approximate pruning tests
  (``alpha * a_i >= a_k - ACC_TOL``, spec 4).
* Crossings are **sign changes** of the difference: a touch without crossing is not one.
* Every decision is about the real polynomials, also where a float evaluation overflows
  (a legal cost curve may exceed the largest float inside its domain): a sign, an order or
  an equality whose value or rounding scale is not finite in floats is settled exactly, in
  rational arithmetic (:func:`exceeds`); a difference whose coefficients would overflow is
  taken halved (:func:`difference`).

Coefficient sequences are lowest degree first unless a function says otherwise.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from fractions import Fraction
from itertools import pairwise

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = [
    "ACC_TOL",
    "MAX_DEGREE",
    "REL_TOL",
    "ZERO_TOL",
    "candidate_roots",
    "coef_difference",
    "compare_right",
    "compare_right_2",
    "derivative",
    "difference",
    "difference_nonnegative",
    "exceeds",
    "float_sign_changes",
    "halved_if_overflowing",
    "horner",
    "interval_points",
    "magnitude_coefs",
    "sign",
    "scaled",
    "sign_change_roots",
    "surely_nonnegative",
    "taylor",
    "tol_x",
    "values_equal",
    "values_equal_2",
]

REL_TOL = 1e-12
#: Tolerance of accuracy comparisons in pruning tests (spec 4: alpha * a_i >= a_k - ACC_TOL).
ACC_TOL = 1e-12
#: Highest degree of a cost curve (parsed or given as coefficients).  Root finding and the
#: sweep cost O(d**3) per pair of curves; a degree-2048 curve took 30 s to index.
MAX_DEGREE = 32
#: Relative level under which a value of a difference of curves is taken as zero.
ZERO_TOL = 1e-12
_INF = math.inf
_MAX_FLOAT = sys.float_info.max
#: Rounding scales below this (2**-960) may have lost terms to underflow: decided exactly.
_TINY = 2.0**-960


def tol_x(x: float) -> float:
    """Distance under which two sizes are the same point (``1e-9 * max(1, |x|)``)."""
    return 1e-9 * max(1.0, abs(x))


def halved_if_overflowing(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b``, both halved when a coefficient of ``a - b`` would overflow (two
    coefficients of opposite signs near the largest float): the roots and signs of the
    difference, and its order against a tolerance made from the same halves, stay those of
    ``a - b``.  O(len(a) + len(b))."""
    width = min(a.size, b.size)
    with np.errstate(over="ignore"):
        near = a[:width] - b[:width]
    if np.all(np.isfinite(near)):
        return a, b
    return np.ldexp(a, -1), np.ldexp(b, -1)


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Coefficients of ``a - b`` (both lowest degree first), or of ``(a - b) / 2`` when the
    difference would overflow (:func:`halved_if_overflowing`): a positive multiple, with
    the same roots and signs.  O(len(a) + len(b))."""
    a, b = halved_if_overflowing(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    out = np.zeros(max(a.size, b.size))
    out[: a.size] += a
    out[: b.size] -= b
    return out


def magnitude_coefs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(max(a.size, b.size))
    out[: a.size] += np.abs(a)
    out[: b.size] += np.abs(b)
    return out


def horner(coef: Sequence[float], x: float) -> float:
    """Value at ``x`` of coefficients given lowest degree first (lists are fastest)."""
    if isinstance(coef, np.ndarray):
        coef = coef.tolist()
    value = 0.0
    for c in reversed(coef):
        value = value * x + c
    return value


def _exact_horner(coef: Sequence[float], x: float) -> Fraction:
    """The exact rational value at ``x`` of finite float coefficients (lowest first)."""
    value, at = Fraction(0), Fraction(x)
    for c in reversed(coef):
        value = value * at + Fraction(c)
    return value


def _exact_taylor(coef: Sequence[float], x: float) -> list[Fraction]:
    """:func:`taylor` in exact rational arithmetic."""
    t, at = [Fraction(c) for c in coef], Fraction(x)
    for k in range(len(t) - 1):
        for j in range(len(t) - 2, k - 1, -1):
            t[j] += at * t[j + 1]
    return t


def exceeds(value: float, scale: float, d: Sequence[float], tol: Sequence[float], x: float,
            at: float) -> int:
    """Sign of ``d(x)`` beyond ``tol(at)`` (0 when ``|d(x)| <= tol(at)``), given the float
    evaluations ``value = d(x)`` and ``scale = tol(at)``.

    When both are finite the floats decide (O(1)); when either overflowed (inf or NaN:
    a value beyond the largest float says nothing about the difference's sign or size
    against its rounding scale), or the scale is below 2**-960 (terms underflowed: ``n**2 -
    1e280 n**3`` at 5e-281 was 0 within 0), both are evaluated exactly as rationals from the
    float coefficients: O(d**2) big-number work, only at the ends of the float range.
    """
    if not (math.isfinite(value) and math.isfinite(scale)) or (scale < _TINY and any(tol)):
        exact, bound = _exact_horner(d, x), _exact_horner(tol, at)
        if abs(exact) <= bound:
            return 0
        return 1 if exact > 0 else -1
    if abs(value) <= scale:
        return 0
    return 1 if value > 0 else -1


def taylor(coef: Sequence[float], x: float) -> list[float]:
    """Taylor coefficients at ``x`` by repeated synthetic division (Horner shift), in
    double precision (Python floats) whatever the dtype of ``coef``."""
    t = coef.tolist() if isinstance(coef, np.ndarray) else list(coef)
    d = len(t)
    for k in range(d - 1):
        for j in range(d - 2, k - 1, -1):
            t[j] += x * t[j + 1]
    return t


def coef_difference(ci: Sequence[float], cj: Sequence[float]) -> list[float]:
    """Coefficients of ``ci - cj`` as Python floats, halved when one would overflow (as
    :func:`difference`).  O(len(ci) + len(cj))."""
    ni, nj = len(ci), len(cj)
    out = [
        (ci[k] if k < ni else 0.0) - (cj[k] if k < nj else 0.0) for k in range(max(ni, nj))
    ]
    if all(map(math.isfinite, out)):
        return out
    return difference(np.asarray(ci, dtype=np.float64), np.asarray(cj, dtype=np.float64)).tolist()


def compare_right(ci: Sequence[float], cj: Sequence[float], x: float) -> int:
    """Order of two curves (coefficients lowest degree first) just right of ``x``.

    Works on the difference ``d = ci - cj``: the first Taylor coefficient of ``d`` at ``x``
    that exceeds ``REL_TOL`` times its rounding scale (the same coefficient of ``|d|`` at
    ``|x|``) decides.  -1 when ``ci`` is cheaper just right of ``x``, 0 for the same curve.
    Differences are taken first, so curves that differ by little stay distinguishable however
    large their values are.

    Runtime complexity: O(d**2) for degree d.
    """
    d = coef_difference(ci, cj)
    t = taylor(d, x)
    # the tolerance enters the coefficients before the sum, so the scale stays finite
    # wherever its terms are (near the largest floats the plain sum would overflow)
    scale = [REL_TOL * abs(v) for v in d]
    tol = taylor(scale, abs(x))
    if not all(map(math.isfinite, t + tol)):
        # a curve beyond the largest float at x: its order is still the real polynomials'
        t, tol = _exact_taylor(d, x), _exact_taylor(scale, abs(x))
    for tk, sk in zip(t, tol, strict=True):
        if abs(tk) > sk:
            return -1 if tk < 0 else 1
    return 0


def values_equal(ci: Sequence[float], cj: Sequence[float], x: float) -> bool:
    """Are two curves equal at ``x``: is their difference there within ``REL_TOL`` of its
    rounding scale?"""
    d = coef_difference(ci, cj)
    tol = [REL_TOL * abs(v) for v in d]
    return exceeds(horner(d, x), horner(tol, abs(x)), d, tol, x, abs(x)) == 0


def compare_right_2(ci: tuple[float, float, float], cj: tuple[float, float, float],
                    x: float) -> int:
    """:func:`compare_right` of two curves of degree <= 2 given as 3-tuples (lowest degree
    first, zero-padded), its Taylor shift written out: the same float operations in the
    same order, so the same answer, without lists; the general function where a value is
    not finite.  O(1)."""
    d0, d1, d2 = ci[0] - cj[0], ci[1] - cj[1], ci[2] - cj[2]
    s0, s1, s2 = REL_TOL * abs(d0), REL_TOL * abs(d1), REL_TOL * abs(d2)
    ax = abs(x)
    u1 = d1 + x * d2
    t0, t1 = d0 + x * u1, u1 + x * d2
    w1 = s1 + ax * s2
    k0, k1 = s0 + ax * w1, w1 + ax * s2
    if not (math.isfinite(t0) and math.isfinite(t1) and math.isfinite(k0)
            and math.isfinite(k1) and math.isfinite(d2)):
        return compare_right(ci, cj, x)
    if abs(t0) > k0:
        return -1 if t0 < 0 else 1
    if abs(t1) > k1:
        return -1 if t1 < 0 else 1
    if abs(d2) > s2:
        return -1 if d2 < 0 else 1
    return 0


def values_equal_2(ci: tuple[float, float, float], cj: tuple[float, float, float],
                   x: float) -> bool:
    """:func:`values_equal` of two curves of degree <= 2 given as 3-tuples, written out (the
    same float operations); the general function where floats do not decide.  O(1)."""
    d0, d1, d2 = ci[0] - cj[0], ci[1] - cj[1], ci[2] - cj[2]
    ax = abs(x)
    value = ((0.0 * x + d2) * x + d1) * x + d0
    scale = ((0.0 * ax + REL_TOL * abs(d2)) * ax + REL_TOL * abs(d1)) * ax + REL_TOL * abs(d0)
    if not (math.isfinite(value) and math.isfinite(scale)) or (
            scale < _TINY and (d0 != 0.0 or d1 != 0.0 or d2 != 0.0)):
        return values_equal(ci, cj, x)
    return abs(value) <= scale


def derivative(d: np.ndarray) -> np.ndarray:
    return d[1:] * np.arange(1, d.size) if d.size > 1 else np.zeros(1)


def scaled(d: np.ndarray) -> np.ndarray:
    """``d`` times the power of two that brings its largest coefficient into ``[0.5, 1)``.

    The roots and signs of a polynomial do not change with a positive factor, and a power
    of two changes no digit of a normal float; the closed forms and the companion matrix
    then square and multiply numbers near 1, where coefficients near 1e-300 (whose squares
    underflow to 0) or 1e300 (whose squares overflow) would give wrong roots.

    Runtime complexity: O(d).
    """
    top = float(np.max(np.abs(d)))
    if top == 0.0 or not math.isfinite(top):
        return d
    return np.ldexp(np.asarray(d, dtype=np.float64), -math.frexp(top)[1])


def _quadratic_roots(c: float, b: float, a: float) -> list[float]:
    """Real roots of ``a n**2 + b n + c`` (``a != 0``, the largest of ``|a|, |b|, |c|`` in
    ``[0.5, 1)``: :func:`scaled`), a double root when the discriminant is negative by at most
    1e-12 of its terms.

    The discriminant is never formed from squares, which underflow when the coefficients
    span more than about 1e154 (``b = 1e-280``: ``b * b`` is 0 and the roots ``0`` and
    ``-b / a`` came out as a double root at ``-b / 2a``): it is taken relative to ``b**2``
    when ``|b| >= sqrt(|a c|)``, else relative to ``|a c|``.  O(1).
    """
    if c == 0.0:
        return sorted({0.0, -b / a})
    # sqrt(|a c|) in one rounding where the product is a normal float, else in two
    prod = abs(a * c)
    root_ac = math.sqrt(prod) if prod > 1e-290 else math.sqrt(abs(a)) * math.sqrt(abs(c))
    if abs(b) >= root_ac:
        # 4ac / b**2, at most 4 in magnitude: |c / b| <= |b / a|, so no step overflows
        ratio = 4.0 * (a * (c / b)) / b
        rel = 1.0 - ratio  # the discriminant over b**2
        if rel < 0.0:
            if rel < -1e-12 * (1.0 + abs(ratio)):
                return []
            rel = 0.0
        q = -0.5 * b * (1.0 + math.sqrt(rel))
    else:
        r = b / root_ac  # |r| < 1; the discriminant over |a c| is r**2 - 4 sign(a c)
        if math.copysign(1.0, a) == math.copysign(1.0, c):
            return []  # r**2 - 4 < -3: no real root
        q = -0.5 * (b + math.copysign(root_ac * math.sqrt(r * r + 4.0), b))
    return sorted({q / a, c / q})


def candidate_roots(d: np.ndarray) -> list[float]:
    """Real roots (and near-real ones) of the polynomial ``d``; a superset of its sign changes.

    Closed form up to degree 2, else the eigenvalues of the companion matrix with an
    imaginary part at most 1e-5 of their size, polished by at most two Newton steps that each
    reduce ``|d|`` and stay within half the distance from the eigenvalue to its nearest other
    one.  A root of multiplicity m is located to about ``eps**(1/m)`` (1e-5 for a triple
    root) times its conditioning; one of even multiplicity may be missed when rounding splits
    it into a pair further than that off the real axis (it changes no sign).

    Roots of very different sizes (``1 - 1e280 n**2 - 1e280 n**3``: 1e-140 and -1) are found
    one size at a time: the eigenvalues place a root only to about 1e-16 of the largest, so
    the polynomial is taken at each scale its Newton polygon shows (sizes more than 2**60
    apart), ``n = 2**t m``, keeping the terms that matter there and the roots near
    ``|m| = 1``.

    Runtime complexity: O(1) up to degree 2, else O(d**3) for degree d (times the number of
    scales, at most d).
    """
    nz = np.flatnonzero(d)
    if nz.size == 0:
        return []
    d = d[: nz[-1] + 1]
    deg = d.size - 1
    if deg == 0:
        return []
    if deg >= 2:
        groups = _root_scales(d)
        if len(groups) > 1 or groups and abs(groups[0][2]) > 60:
            # each group at its own scale (also one group far from 1, whose coefficients
            # scaled by a power of two alone would leave the leading one subnormal)
            return _roots_by_scale(d, groups)
    d = scaled(d)
    if d[-1] == 0.0:
        # coefficients spanning more than the floats (1e300 - 1e-300 n**2): the leading
        # ones underflowed to 0, and so do the roots beyond about 1e154 they would give
        d = d[: np.flatnonzero(d)[-1] + 1]
        deg = d.size - 1
        if deg == 0:
            return []
    return _roots_at_one_scale(d, deg)


def _root_scales(d: np.ndarray) -> list[tuple[float, float, int, int, int]]:
    """Groups of the roots of ``d`` by size (zero roots not counted), from its Newton
    polygon: the upper hull of ``(k, log2 |d_k|)``, where an edge from ``k`` to ``j`` stands
    for ``j - k`` roots of size about ``|d_k / d_j| ** (1 / (j - k))``.  Edges whose sizes
    lie within 2**60 of the group's smallest form one group (so at its middle scale no
    coefficient of its vertices is beyond 2**(30 d) of another: the companion matrix of
    its terms stays finite).  Each is ``(lo, hi, t, k, j)``: its band of
    ``log2 |root|`` (bands meet halfway between groups), the middle ``t`` of its sizes, and
    the first and last hull vertices of its edges.  O(d)."""
    points = [(k, math.log2(abs(float(c)))) for k, c in enumerate(d) if c != 0.0]
    hull: list[tuple[int, float]] = []
    for p in points:
        while len(hull) >= 2:
            (k0, e0), (k1, e1) = hull[-2], hull[-1]
            if (e1 - e0) * (p[0] - k0) <= (p[1] - e0) * (k1 - k0):
                hull.pop()  # hull[-1] is on or below the chord: not a vertex
            else:
                break
        hull.append(p)
    groups: list[list] = []  # [smallest size, largest size, first vertex, last vertex]
    for (k0, e0), (k1, e1) in pairwise(hull):
        mu = (e0 - e1) / (k1 - k0)
        if groups and mu - groups[-1][0] <= 60.0:
            groups[-1][1], groups[-1][3] = mu, k1
        else:
            groups.append([mu, mu, k0, k1])
    if not groups:
        return []  # one term: its only roots are at 0
    cuts = [0.5 * (g[1] + h[0]) for g, h in pairwise(groups)]
    return [(lo, hi, round(0.5 * (g[0] + g[1])), g[2], g[3])
            for lo, hi, g in zip([-_INF, *cuts], [*cuts, _INF], groups, strict=True)]


def _roots_by_scale(d: np.ndarray, groups: list[tuple[float, float, int, int, int]]
                    ) -> list[float]:
    """Roots of ``d`` (degree >= 2) group by group (:func:`_root_scales`): the terms of a
    group's vertices ``k..j`` of ``d(2**t m) / m**k`` (the other terms are below 2**-60 of
    them wherever the group's roots are), scaled by one power of two so that the largest is
    about 1, give the roots ``m`` whose ``2**t m`` lies in the group's band.
    O(d**3) per group."""
    out = [0.0] if d[0] == 0.0 else []
    for lo, hi, t, first, last in groups:
        part = d[first : last + 1].tolist()
        top = max(math.log2(abs(c)) + k * t for k, c in enumerate(part) if c != 0.0)
        m = np.array([math.ldexp(c, k * t - math.ceil(top)) for k, c in enumerate(part)])
        for r in _roots_at_one_scale(m, m.size - 1):
            size = math.log2(abs(r)) + t if r != 0.0 else -_INF
            if lo <= size < hi and size < 1024.0:  # a root beyond the floats is no size
                out.append(math.ldexp(r, t))
    return sorted(out)


def _roots_at_one_scale(d: np.ndarray, deg: int) -> list[float]:
    """:func:`candidate_roots` of ``d`` (degree ``deg >= 1``, its largest coefficient near 1)
    by the closed forms or the companion matrix's eigenvalues."""
    if deg == 1:
        return [-float(d[0]) / float(d[1])]  # a root beyond the floats is inf, silently
    if deg == 2:
        return _quadratic_roots(*map(float, d))
    companion = np.zeros((deg, deg))
    companion[np.arange(1, deg), np.arange(deg - 1)] = 1.0
    companion[:, -1] = -d[:-1] / d[-1]
    raw = np.linalg.eigvals(companion)
    gaps = np.abs(raw[:, None] - raw[None, :])
    np.fill_diagonal(gaps, _INF)
    reach = (0.5 * gaps.min(axis=1)).tolist()
    deriv = derivative(d).tolist()
    dl = d.tolist()
    polished = []
    for eig, near in zip(raw, reach, strict=True):
        if abs(eig.imag) > 1e-5 * max(1.0, abs(eig.real)):
            continue
        start = r = float(eig.real)  # Python floats: an overflow is inf, silently
        value = horner(dl, r)
        for _ in range(2):
            slope = horner(deriv, r)
            if slope == 0.0:
                break
            step = value / slope
            if not math.isfinite(step):
                break
            # At a multiple root value and slope are both rounding noise and a Newton step
            # can jump far: 3 % for the double root of -3 (n + 1)**2 (n - 1), and from the
            # double root -11 of (n + 11)**2 (n + 5) exactly onto the root -5, where |d| is
            # 0.  Keep a step only when it makes |d| smaller and stays closer to the
            # eigenvalue than half its distance to the nearest other one.
            if abs(r - step - start) > near:
                break
            after = horner(dl, r - step)
            if abs(after) >= abs(value):
                break
            r, value = r - step, after
        polished.append(float(r))
    return sorted(polished)


def sign(d: list[float], tol: list[float], x: float) -> int:
    """Sign of ``d(x)``, 0 within ``tol(|x|)`` (``tol``: ``ZERO_TOL`` times the absolute
    coefficients, scaled before the sum so that it cannot overflow where its terms do not);
    exact where the float evaluation overflows (:func:`exceeds`)."""
    return exceeds(horner(d, x), horner(tol, abs(x)), d, tol, x, abs(x))


def interval_points(roots: list[float], lo: float, hi: float) -> list[float]:
    """One sample point inside each gap of ``lo < roots... < hi``: its midpoint, or for
    the unbounded last gap ``max(2 left, left + 1)``; written so that neither overflows
    near the largest floats (there the unbounded gap's point is halfway to the largest)."""
    edges = [lo, *roots, hi]
    points = []
    for left, right in zip(edges[:-1], edges[1:], strict=True):
        if math.isinf(right):
            far = max(2.0 * left, left + 1.0)
            points.append(far if math.isfinite(far) else left + 0.5 * (_MAX_FLOAT - left))
        else:
            points.append(left + 0.5 * (right - left))
    return points


def sign_change_roots(
    d: np.ndarray, lo: float = 0.0, hi: float = _INF, absorb_ends: bool = True
) -> np.ndarray:
    """Sizes in ``(lo, hi)`` where the polynomial ``d`` changes sign, ascending.

    Roots at most ``tol_x`` from the first of a cluster are merged (one point, as the sweep
    batches events; a crossing is placed at the cluster's last root, the signs are sampled
    between clusters), and
    with ``absorb_ends`` roots at most ``tol_x`` from ``lo`` or ``hi`` are absorbed by it
    (dropped); a root counts only when the signs of ``d`` sampled in the gaps on either side
    differ, so even-multiplicity touches are dropped.  Coefficients of any real dtype are
    taken as float64.  ``hi <= lo`` has no crossing; an infinite or NaN ``lo`` or a NaN
    ``hi`` raises ``ValueError`` (the signs sampled at an infinite size are meaningless).
    """
    if not math.isfinite(lo) or math.isnan(hi):
        raise InvalidArgumentError(
            f"the domain must have a finite lo and a hi, got lo={lo!r}, hi={hi!r}")
    mag = np.abs(d)
    clusters: list[list[float]] = []  # [first, last] of roots within tol_x of the first
    margin_lo = tol_x(lo) if absorb_ends else 0.0
    margin_hi = tol_x(hi) if absorb_ends and math.isfinite(hi) else 0.0
    for r in candidate_roots(np.asarray(d, dtype=np.float64)):
        if r <= lo + margin_lo or r >= hi - margin_hi:
            continue
        if clusters and r - clusters[-1][0] <= tol_x(r):
            clusters[-1][1] = r
            continue
        clusters.append([r, r])
    if not clusters:
        return np.empty(0)
    dl, tl = list(map(float, d)), (ZERO_TOL * mag).tolist()
    # the signs in the gaps between clusters; a crossing is placed at its cluster's last
    # root, so the order just right of it is the order after every root of the cluster
    # (a real root at 1.8e-74 after the near-real pair 1e-90 +- 1.8e-74j was lost when the
    # cluster was placed at its first, where the curves had not crossed yet)
    gaps = zip([lo, *(c[1] for c in clusters)], [*(c[0] for c in clusters), hi], strict=True)
    signs = [sign(dl, tl, interval_points([], left, right)[0]) for left, right in gaps]
    out = []
    previous = signs[0]
    for k, s in enumerate(signs[1:]):
        if s == 0:
            continue
        if previous != 0 and s != previous:
            out.append(clusters[k][1])
        previous = s
    return np.array(out, dtype=np.float64)


def surely_nonnegative(coefs: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """For each row of a ``(K, L)`` coefficient matrix: is the polynomial surely ``>= 0`` on
    ``[lo, hi]`` (a finite ``lo <= hi``)?  True when every coefficient is ``>= 0`` and
    ``lo >= 0``, or, for degree <= 2, when its minimum on the domain (at an end, at the
    vertex, or its leading sign on an unbounded domain) exceeds 4 times the tolerance
    :func:`difference_nonnegative` grants; False means undecided (check that row exactly).

    Runtime complexity: O(K * L) vectorised.

    >>> surely_nonnegative(np.array([[1.0, 2.0, 0.0], [4.0, -4.0, 1.0], [5.0, -4.0, 1.0],
    ...                              [1.0, -1.0, 0.0]]), 0.0, 10.0).tolist()
    [True, False, True, False]
    """
    sure = np.all(coefs >= 0.0, axis=1) if lo >= 0.0 else np.zeros(coefs.shape[0], bool)
    if coefs.shape[1] > 3 or sure.all() or not math.isfinite(lo):
        return sure
    rest = np.flatnonzero(~sure)
    c = np.zeros((rest.size, 3))
    c[:, : coefs.shape[1]] = coefs[rest]
    mag = np.abs(c)
    with np.errstate(all="ignore"):
        points = [np.full(rest.size, lo)]
        if math.isfinite(hi):
            points.append(np.full(rest.size, hi))
        vertex = -c[:, 1] / (2.0 * c[:, 2])
        inside = (c[:, 2] > 0.0) & (vertex > lo) & (vertex < hi)
        points.append(np.where(inside, vertex, lo))
        ok = np.ones(rest.size, dtype=bool)
        for x in points:
            value = c[:, 0] + x * (c[:, 1] + x * c[:, 2])
            scale = mag[:, 0] + np.abs(x) * (mag[:, 1] + np.abs(x) * mag[:, 2])
            ok &= np.isfinite(value) & np.isfinite(scale) & (value > 4.0 * ZERO_TOL * scale)
        if math.isinf(hi):  # the leading coefficient must be positive (or all zero past it)
            top = np.where(c[:, 2] != 0.0, c[:, 2], np.where(c[:, 1] != 0.0, c[:, 1], c[:, 0]))
            ok &= top > 0.0
    sure[rest[ok]] = True
    return sure


def float_sign_changes(ci: Sequence[float], cj: Sequence[float], lo: float,
                       hi: float) -> list[float] | None:
    """:func:`sign_change_roots` of ``ci - cj`` on ``(lo, hi)`` with ``absorb_ends=False``,
    for curves of degree <= 2 (Python float lists, lowest degree first), in plain floats.

    The same steps as the general path (the closed form :func:`_quadratic_roots` on the
    difference scaled by a power of two, roots merged within :func:`tol_x`, signs sampled
    between them against ``ZERO_TOL``), taken only where floats decide them: None (take the
    general path) for a degree above 2, a coefficient or value beyond the floats, a
    rounding scale below 2**-960 (:func:`exceeds` would go exact), or coefficients more
    than 2**28 apart in size (the general path may then find roots of very different sizes
    one scale at a time).

    Runtime complexity: O(1), a few microseconds.

    >>> float_sign_changes([0.0, 0.0, 1.0], [1.0], 0.0, 10.0)
    [1.0]
    >>> float_sign_changes([1.0, -2.0, 1.0], [0.0], 0.0, 10.0)  # a touch: no sign change
    []
    """
    ni, nj = len(ci), len(cj)
    if ni > 3 or nj > 3:
        return None
    # 0.0 + c first, as the general path's difference does (a -0.0 there becomes 0.0)
    d0 = (0.0 + ci[0]) - cj[0] if nj else 0.0 + ci[0]
    d1 = (0.0 + (ci[1] if ni > 1 else 0.0)) - (cj[1] if nj > 1 else 0.0)
    d2 = (0.0 + (ci[2] if ni > 2 else 0.0)) - (cj[2] if nj > 2 else 0.0)
    if d2 == 0.0:
        if d1 == 0.0:
            return []
        deg = 1
    else:
        deg = 2
    if not (math.isfinite(d0) and math.isfinite(d1) and math.isfinite(d2)):
        return None
    frexp = math.frexp
    e1 = frexp(d1)[1] if d1 != 0.0 else None
    e2 = frexp(d2)[1] if d2 != 0.0 else None
    e0 = frexp(d0)[1] if d0 != 0.0 else None
    exps = [e for e in (e0, e1, e2) if e is not None]
    top, low = max(exps), min(exps)
    if top - low > 28 or top > 1000 or low < -1000:
        return None
    ldexp = math.ldexp
    if deg == 1:
        roots = [-ldexp(d0, -top) / ldexp(d1, -top)]
    else:
        roots = _quadratic_roots(ldexp(d0, -top), ldexp(d1, -top), ldexp(d2, -top))
    clusters: list[list[float]] = []
    for r in roots:
        if r <= lo or r >= hi:
            continue
        if clusters and r - clusters[-1][0] <= 1e-9 * (r if r > 1.0 else 1.0 if r >= -1.0
                                                        else -r):
            clusters[-1][1] = r
            continue
        clusters.append([r, r])
    if not clusters:
        return []
    t0, t1, t2 = ZERO_TOL * abs(d0), ZERO_TOL * abs(d1), ZERO_TOL * abs(d2)
    signs = []
    left = lo
    for c in [*clusters, None]:
        right = hi if c is None else c[0]
        if right == _INF:
            x = max(2.0 * left, left + 1.0)
            if not math.isfinite(x):
                return None
        else:
            x = left + 0.5 * (right - left)
        ax = abs(x)
        value = ((0.0 * x + d2) * x + d1) * x + d0
        scale = ((0.0 * ax + t2) * ax + t1) * ax + t0
        if not (math.isfinite(value) and math.isfinite(scale)) or scale < _TINY:
            return None
        signs.append(0 if abs(value) <= scale else (1 if value > 0 else -1))
        if c is not None:
            left = c[1]
    out = []
    previous = signs[0]
    for k, sgn in enumerate(signs[1:]):
        if sgn == 0:
            continue
        if previous != 0 and sgn != previous:
            out.append(clusters[k][1])
        previous = sgn
    return out


def difference_nonnegative(d: np.ndarray, lo: float, hi: float, tol: np.ndarray) -> bool:
    """True when ``d(n) >= -tol(|n|)`` for all ``n`` in ``[lo, hi]``.

    ``tol`` is ``ZERO_TOL`` times the absolute coefficients of the curves ``d`` is the
    difference of (:func:`magnitude_coefs` of the scaled curves): scaled before any sum, so
    it stays finite wherever its terms are, even where the unscaled sum would overflow.
    Both must be finite (take the difference of :func:`halved_if_overflowing` curves);
    values beyond the largest float are compared exactly (:func:`exceeds`).

    The minimum of a polynomial on an interval is at an end or at a critical point, so ``d``
    is tested at ``lo``, at ``hi`` (its leading sign when ``hi`` is infinite) and at the real
    roots of ``d'`` inside: closed form up to a cubic ``d``.  A domain without a finite
    ``lo <= hi`` (empty, NaN, or starting at an infinity, where every value is "within
    rounding" of an infinite scale) raises ``ValueError``.
    """
    if not (math.isfinite(lo) and lo <= hi):
        raise InvalidArgumentError(
            f"the domain must have a finite lo <= hi, got lo={lo!r}, hi={hi!r}")
    nz = np.flatnonzero(d)
    if nz.size == 0:
        return True
    if lo >= 0.0 and np.all(d >= 0.0):
        return True
    if math.isinf(hi) and d[nz[-1]] < 0.0 and nz[-1] > 0:
        return False

    dl, tl = d.tolist(), np.asarray(tol).tolist()

    def ok(x: float) -> bool:
        return exceeds(horner(dl, x), horner(tl, abs(x)), dl, tl, x, abs(x)) >= 0

    if not ok(lo) or (math.isfinite(hi) and not ok(hi)):
        return False
    # the critical points of a positive multiple (its derivative cannot overflow)
    critical = candidate_roots(derivative(scaled(d[: nz[-1] + 1])))
    return all(ok(r) for r in critical if lo < r < hi)
