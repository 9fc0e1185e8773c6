"""Exact oracles for polynomial cost curves: rational arithmetic and sympy root isolation.

Written apart from :mod:`polydom.curves.poly` and sharing none of its numerics: values and
Taylor coefficients are computed in :class:`fractions.Fraction` (exact for the binary floats
given), roots are isolated by sympy in rational intervals, and signs are evaluated exactly.
Coefficients are lowest degree first, as in the library.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from math import comb

import sympy

_N = sympy.Symbol("n")


def exact_value(coefs: Sequence[float], x: float | Fraction) -> Fraction:
    """The exact value at ``x`` of the polynomial with these (binary float) coefficients."""
    fx = Fraction(x)
    return sum((Fraction(c) * fx**k for k, c in enumerate(coefs)), Fraction(0))


def exact_taylor(coefs: Sequence[float], x: float | Fraction) -> list[Fraction]:
    """Exact Taylor coefficients at ``x``: ``t_k = sum_j C(j, k) c_j x**(j - k)``."""
    fx = Fraction(x)
    d = len(coefs)
    return [
        sum((comb(j, k) * Fraction(coefs[j]) * fx ** (j - k) for j in range(k, d)), Fraction(0))
        for k in range(d)
    ]


def exact_order_right(ci: Sequence[float], cj: Sequence[float], x: float) -> int:
    """-1, 0 or 1: the sign of ``ci - cj`` just right of ``x``, decided by the first
    non-zero exact Taylor coefficient of the difference there (0: the same polynomial)."""
    width = max(len(ci), len(cj))
    d = [
        (Fraction(ci[k]) if k < len(ci) else 0) - (Fraction(cj[k]) if k < len(cj) else 0)
        for k in range(width)
    ]
    for t in exact_taylor(d, x):
        if t != 0:
            return -1 if t < 0 else 1
    return 0


def _poly(coefs: Sequence[float]) -> sympy.Poly:
    return sympy.Poly([sympy.Rational(Fraction(c)) for c in reversed(coefs)], _N)


def _root_multiplicities(coefs: Sequence[float]) -> Counter:
    """sympy's exact real roots of the polynomial, each with its multiplicity."""
    p = _poly(coefs)
    if p.is_zero or p.degree() <= 0:
        return Counter()
    return Counter(sympy.real_roots(p))


def exact_real_roots(coefs: Sequence[float]) -> list[tuple[float, int]]:
    """Every distinct real root with its multiplicity, ascending, isolated exactly by sympy
    (then rounded to a float)."""
    return sorted((float(sympy.N(r, 30)), m) for r, m in _root_multiplicities(coefs).items())


def exact_sign_changes(coefs: Sequence[float], lo: float, hi: float) -> list[float]:
    """Real roots of odd multiplicity strictly inside ``(lo, hi)``, ascending (as floats).

    A root changes the sign of the polynomial exactly when its multiplicity is odd.  The
    comparison with ``lo`` and ``hi`` is exact (sympy's isolated root against a rational).
    """
    out = []
    for root, mult in _root_multiplicities(coefs).items():
        inside_lo = math.isinf(lo) or root > sympy.Rational(Fraction(lo))
        inside_hi = math.isinf(hi) or root < sympy.Rational(Fraction(hi))
        if mult % 2 == 1 and inside_lo and inside_hi:
            out.append(float(sympy.N(root, 30)))
    return sorted(out)


def exactly_le(a: Sequence[float], b: Sequence[float], lo: float, hi: float) -> bool:
    """Is ``a <= b`` everywhere on ``[lo, hi]`` (``hi`` may be infinite), exactly?

    sympy finds the distinct real roots of ``d = b - a`` exactly; ``d`` keeps its sign
    between consecutive roots, so ``d >= 0`` on the domain iff it holds at the ends, at a
    rational point strictly between each pair of consecutive roots and at one point beyond
    each outer root, all evaluated exactly in rationals.
    """
    d = _poly(b) - _poly(a)
    if d.is_zero:
        return True
    flo = sympy.Rational(Fraction(lo))
    roots = sorted(set(sympy.real_roots(d))) if d.degree() > 0 else []
    # 40-digit rational approximations: consecutive distinct roots of these small
    # polynomials are far further apart, so each midpoint lies strictly between them
    approx = [sympy.Rational(str(sympy.N(r, 40))) for r in roots]
    points = [flo]
    if not math.isinf(hi):
        points.append(sympy.Rational(Fraction(hi)))
    if approx:
        points += [approx[0] - 1, approx[-1] + 1]
        points += [(x + y) / 2 for x, y in zip(approx, approx[1:], strict=False)]
    else:
        points.append(abs(flo) + 1)
    inside = [
        p for p in points if p >= flo and (math.isinf(hi) or p <= sympy.Rational(Fraction(hi)))
    ]
    return all(d.eval(p) >= 0 for p in inside)


def coefficients_from_roots(roots: dict[int, int], lead: int = 1) -> list[int]:
    """The exact integer coefficients (lowest degree first) of ``lead * prod (n - r)**m``
    over ``roots = {r: m}``: a polynomial whose real roots and multiplicities are known."""
    c = [lead]
    for r, m in roots.items():
        for _ in range(m):
            c = [0, *c]  # times n ...
            for k in range(len(c) - 1):
                c[k] -= r * c[k + 1]  # ... minus r times the old polynomial
    return c


def root_rounding_bound(coefs: Sequence[int], r: int, m: int) -> float:
    """How far a root ``r`` of multiplicity ``m`` can move when the polynomial is evaluated
    in double precision: ``(noise / |T_m|)**(1/m)``.

    ``noise = 2 deg u sum_k |c_k| |r|**k`` is the textbook bound on the rounding error of
    Horner's rule at ``r`` (``u = 2**-53``), and ``T_m = d^(m)(r) / m!`` the first non-zero
    Taylor coefficient there (exact, integers): near ``r`` the polynomial is ``T_m (n - r)**m``
    plus rounding, so no floating-point method can locate the root better than where that
    term falls under the noise (a simple root: ``noise / |d'(r)|``).  At least 4 ulps.
    """
    deg = len(coefs) - 1
    noise = 2 * deg * 2.0**-53 * float(sum(abs(c) * abs(r) ** k for k, c in enumerate(coefs)))
    t_m = abs(sum(comb(k, m) * c * r ** (k - m) for k, c in enumerate(coefs) if k >= m))
    return max((noise / float(t_m)) ** (1.0 / m), 4 * 2.0**-53 * max(1, abs(r)))
