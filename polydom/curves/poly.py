"""Polynomial numerics for cost curves: tolerances, Horner, Taylor shifts, roots, signs.

The one home of the numerical conventions (spec section 5):

* ``tol_x(x) = 1e-9 * max(1, |x|)``: two sizes at most this far apart are the same point.
* Two curves are *equal* at ``x`` when their difference polynomial there is at most
  ``REL_TOL = 1e-12`` times its rounding scale (the difference with absolute coefficients,
  evaluated at ``|x|``); orders are only trusted above that level.
* Accuracies compare with ``ACC_TOL = 1e-12`` of slack in approximate pruning tests
  (``alpha * a_i >= a_k - ACC_TOL``, spec 4).
* Crossings are **sign changes** of the difference: a touch without crossing is not one.

Coefficient sequences are lowest degree first unless a function says otherwise.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

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
    "derivative",
    "difference",
    "difference_nonnegative",
    "horner",
    "interval_points",
    "magnitude_coefs",
    "sign",
    "scaled",
    "sign_change_roots",
    "taylor",
    "tol_x",
    "values_equal",
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


def tol_x(x: float) -> float:
    """Distance under which two sizes are the same point (``1e-9 * max(1, |x|)``)."""
    return 1e-9 * max(1.0, abs(x))


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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
    ni, nj = len(ci), len(cj)
    return [
        (ci[k] if k < ni else 0.0) - (cj[k] if k < nj else 0.0) for k in range(max(ni, nj))
    ]


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
    tol = taylor([REL_TOL * abs(v) for v in d], abs(x))
    for tk, sk in zip(t, tol, strict=True):
        if abs(tk) > sk:
            return -1 if tk < 0 else 1
    return 0


def values_equal(ci: Sequence[float], cj: Sequence[float], x: float) -> bool:
    """Are two curves equal at ``x``: is their difference there within ``REL_TOL`` of its
    rounding scale?"""
    d = coef_difference(ci, cj)
    return abs(horner(d, x)) <= horner([REL_TOL * abs(v) for v in d], abs(x))


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


def candidate_roots(d: np.ndarray) -> list[float]:
    """Real roots (and near-real ones) of the polynomial ``d``; a superset of its sign changes.

    Closed form up to degree 2, else the eigenvalues of the companion matrix with an
    imaginary part at most 1e-5 of their size, polished by at most two Newton steps that each
    reduce ``|d|`` and stay within half the distance from the eigenvalue to its nearest other
    one.  A root of multiplicity m is located to about ``eps**(1/m)`` (1e-5 for a triple
    root) times its conditioning; one of even multiplicity may be missed when rounding splits
    it into a pair further than that off the real axis (it changes no sign).

    Runtime complexity: O(1) up to degree 2, else O(d**3) for degree d.
    """
    nz = np.flatnonzero(d)
    if nz.size == 0:
        return []
    d = d[: nz[-1] + 1]
    deg = d.size - 1
    if deg == 0:
        return []
    d = scaled(d)
    if deg == 1:
        return [-float(d[0]) / float(d[1])]  # a root beyond the floats is inf, silently
    if deg == 2:
        c, b, a = map(float, d)
        disc = b * b - 4.0 * a * c
        if disc < 0.0:
            if disc < -1e-12 * (b * b + abs(4.0 * a * c)):
                return []
            disc = 0.0
        q = -0.5 * (b + math.copysign(math.sqrt(disc), b))
        if q == 0.0:
            return [0.0]  # b == 0 and disc == 0, so c == 0 too: double root at 0
        return sorted({q / a, c / q})
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
        start = r = eig.real
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
    coefficients, scaled before the sum so that it cannot overflow where its terms do not)."""
    value = horner(d, x)
    if abs(value) <= horner(tol, abs(x)):
        return 0
    return 1 if value > 0 else -1


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

    Roots at most ``tol_x`` apart are merged (one point, as the sweep batches events), and
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
    inside: list[float] = []
    margin_lo = tol_x(lo) if absorb_ends else 0.0
    margin_hi = tol_x(hi) if absorb_ends and math.isfinite(hi) else 0.0
    for r in candidate_roots(np.asarray(d, dtype=np.float64)):
        if r <= lo + margin_lo or r >= hi - margin_hi:
            continue
        if inside and r - inside[-1] <= tol_x(r):
            continue
        inside.append(r)
    if not inside:
        return np.empty(0)
    dl, tl = list(map(float, d)), (ZERO_TOL * mag).tolist()
    signs = [sign(dl, tl, p) for p in interval_points(inside, lo, hi)]
    out = []
    previous = signs[0]
    for k, s in enumerate(signs[1:]):
        if s == 0:
            continue
        if previous != 0 and s != previous:
            out.append(inside[k])
        previous = s
    return np.array(out, dtype=np.float64)


def difference_nonnegative(d: np.ndarray, lo: float, hi: float, tol: np.ndarray) -> bool:
    """True when ``d(n) >= -tol(|n|)`` for all ``n`` in ``[lo, hi]``.

    ``tol`` is ``ZERO_TOL`` times the absolute coefficients of the curves ``d`` is the
    difference of (:func:`magnitude_coefs` of the scaled curves): scaled before any sum, so
    it stays finite wherever its terms are, even where the unscaled sum would overflow.

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
        return horner(dl, x) >= -horner(tl, abs(x))

    if not ok(lo) or (math.isfinite(hi) and not ok(hi)):
        return False
    return all(ok(r) for r in candidate_roots(derivative(d[: nz[-1] + 1])) if lo < r < hi)
