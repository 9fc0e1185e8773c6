"""Cost curves: polynomials in the item size ``n`` with safe parsing, crossings and dominance.

A :class:`CostCurve` is the cost ``c(n)`` of computing a feature (or a feature set, by
addition) on an item of size ``n``.  Coefficients are float64, lowest degree first.

Numerical conventions (spec section 5):

* ``tol_x(x) = 1e-9 * max(1, |x|)``: two sizes closer than this are the same point.
* Two curves are *equal* at ``x`` when their difference polynomial there is at most
  ``REL_TOL = 1e-12`` times its rounding scale (the difference with absolute coefficients,
  evaluated at ``|x|``); orders are only trusted above that level.
* Crossings are **sign changes** of the difference: a touch without crossing is not one.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import sympy

__all__ = ["CostCurve", "tol_x", "REL_TOL"]

REL_TOL = 1e-12
#: Relative level under which a value of a difference of curves is taken as zero.
ZERO_TOL = 1e-12
MAX_PARSE_EXPONENT = 32
MAX_PARSE_LENGTH = 10_000
_INF = math.inf
_N = sympy.Symbol("n")


def tol_x(x: float) -> float:
    """Distance under which two sizes are the same point (``1e-9 * max(1, |x|)``)."""
    return 1e-9 * max(1.0, abs(x))


class CostCurve:
    """A polynomial cost ``c(n) = c0 + c1*n + c2*n**2 + ...`` in the item size ``n``.

    Immutable and hashable.  Trailing zero coefficients are dropped, so equal polynomials
    compare equal whatever their spelling.

    >>> c = CostCurve([3, 0.5])
    >>> c(10.0)
    8.0
    >>> str(CostCurve.parse("3 + 0.5*n + 1e-4*n**2"))
    '0.0001*n**2 + 0.5*n + 3'

    Parameters
    ----------
    coefficients : sequence of float
        Coefficients, lowest degree first.  Must be finite.

    Raises
    ------
    ValueError
        If the sequence is empty, not one-dimensional, or holds NaN or infinity.
    """

    __slots__ = ("_coef", "_horner", "_hash")

    def __init__(self, coefficients: Sequence[float] | np.ndarray | float) -> None:
        try:
            arr = np.array(np.atleast_1d(coefficients), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"coefficients must be a sequence of numbers, got {coefficients!r}"
            ) from exc
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(
                f"coefficients must be a non-empty 1-D sequence, got {coefficients!r}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"coefficients must be finite, got {arr.tolist()}")
        nonzero = np.flatnonzero(arr)
        arr = arr[: nonzero[-1] + 1] if nonzero.size else arr[:1]
        arr = arr + 0.0  # normalise -0.0
        arr.setflags(write=False)
        self._coef = arr
        self._horner = tuple(float(c) for c in arr[::-1])
        self._hash = hash(self._horner)

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, text: str) -> CostCurve:
        """Parse a polynomial in ``n`` from text, without ever executing it.

        Accepted: numbers, the symbol ``n``, ``+ - * / **`` (the exponent a non-negative
        integer literal at most 32) and parentheses.  The expression is walked as a Python
        syntax tree (never evaluated), turned into a sympy expression, expanded, and must be a
        polynomial in ``n`` (division only by constants).

        Runtime complexity: O(len(text)) plus sympy's expansion.

        >>> CostCurve.parse("(n + 1)**2").coefficients.tolist()
        [1.0, 2.0, 1.0]

        Raises
        ------
        ValueError
            Naming the offending part: unknown symbols, function calls, attribute access,
            non-integer or negative exponents, ``n`` in a denominator, malformed text.
        """
        if isinstance(text, CostCurve):
            return text
        if not isinstance(text, str):
            raise ValueError(f"cost expression must be a string, got {type(text).__name__}")
        if len(text) > MAX_PARSE_LENGTH:
            raise ValueError(f"cost expression is longer than {MAX_PARSE_LENGTH} characters")
        if not text.strip():
            raise ValueError("cost expression is empty")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            hint = " (use ** for powers)" if "^" in text else ""
            raise ValueError(f"malformed cost expression {text!r}{hint}: {exc.msg}") from None
        expr = _ast_to_sympy(tree.body, text)
        expr = sympy.expand(expr)
        if expr.free_symbols - {_N}:
            raise ValueError(f"cost expression {text!r} has symbols other than n")
        if not expr.is_polynomial(_N):
            raise ValueError(f"cost expression {text!r} is not a polynomial in n")
        coeffs = sympy.Poly(expr, _N).all_coeffs()[::-1] if expr.has(_N) else [expr]
        values = [float(c) for c in coeffs]
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"cost expression {text!r} has non-finite coefficients")
        return cls(values)

    @classmethod
    def coerce(cls, value: CostCurve | str | Sequence[float] | float) -> CostCurve:
        """Return ``value`` as a curve: a curve as is, text parsed, numbers as coefficients."""
        if isinstance(value, CostCurve):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        return cls(value)

    # ------------------------------------------------------------------ accessors
    @property
    def coefficients(self) -> np.ndarray:
        """Read-only float64 coefficients, lowest degree first (no trailing zeros)."""
        return self._coef

    @property
    def degree(self) -> int:
        """Degree of the polynomial (0 for constants, including the zero curve)."""
        return self._coef.size - 1

    def to_sympy(self) -> sympy.Expr:
        """The curve as a sympy expression in the symbol ``n``."""
        return sum(
            (_sympy_number(float(c)) * _N**k for k, c in enumerate(self._coef) if c != 0.0),
            sympy.Integer(0),
        )

    # ------------------------------------------------------------------ evaluation
    def __call__(self, n: float | np.ndarray) -> float | np.ndarray:
        """Evaluate at ``n`` (a number or an array) by Horner's rule.

        Runtime complexity: O(degree) per point.
        """
        if isinstance(n, np.ndarray):
            out = np.zeros(n.shape, dtype=np.float64)
            for c in self._horner:
                out = out * n + c
            return out
        value = 0.0
        for c in self._horner:
            value = value * n + c
        return float(value)

    def taylor(self, x: float) -> np.ndarray:
        """Coefficients ``t_k = c^(k)(x) / k!`` of the curve re-centred at ``x``.

        Runtime complexity: O(degree**2).
        """
        return np.array(_taylor(self._coef, x))

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other: CostCurve) -> CostCurve:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            other = CostCurve([other])
        if not isinstance(other, CostCurve):
            return NotImplemented
        a, b = self._coef, other._coef
        out = np.zeros(max(a.size, b.size))
        out[: a.size] += a
        out[: b.size] += b
        return CostCurve(out)

    def __radd__(self, other: Any) -> CostCurve:
        if isinstance(other, (int, float)) and not isinstance(other, bool) and other == 0:
            return self  # so that sum(curves) works
        return self.__add__(other)

    def __mul__(self, factor: float) -> CostCurve:
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.floating)):
            return NotImplemented
        return CostCurve(self._coef * float(factor))

    __rmul__ = __mul__

    @classmethod
    def total(cls, curves: Iterable[CostCurve]) -> CostCurve:
        """Sum of curves (the cost of a feature set); the zero curve for none.

        Runtime complexity: O(total number of coefficients).
        """
        arrays = [c._coef for c in curves]
        if not arrays:
            return cls([0.0])
        out = np.zeros(max(a.size for a in arrays))
        for a in arrays:
            out[: a.size] += a
        return cls(out)

    # ------------------------------------------------------------------ comparisons
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CostCurve):
            return NotImplemented
        return self._horner == other._horner

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"CostCurve({self._coef.tolist()!r})"

    def __str__(self) -> str:
        return sympy.sstr(self.to_sympy(), full_prec=False)

    def crossings(self, other: CostCurve, lo: float = 0.0, hi: float = _INF) -> np.ndarray:
        """Sizes in ``(lo, hi)`` where this curve and ``other`` cross (the sign of the
        difference changes).  Touching without crossing is not a crossing; identical curves
        never cross.

        Runtime complexity: O(d**3) for degree d (companion-matrix eigenvalues), O(1) for
        d <= 2.

        >>> CostCurve([0, 0, 1]).crossings(CostCurve([4])).tolist()
        [2.0]
        """
        return sign_change_roots(_difference(self._coef, other._coef), lo, hi)

    def le(self, other: CostCurve, lo: float = 0.0, hi: float = _INF) -> bool:
        """True when ``self(n) <= other(n)`` for every ``n`` in ``[lo, hi]``, up to
        ``ZERO_TOL`` relative rounding.

        Runtime complexity: O(1) when the coefficients already decide it, else O(d**3).
        """
        return difference_nonnegative(_difference(other._coef, self._coef), lo, hi,
                                      _magnitude_coefs(self._coef, other._coef))

    def is_nonnegative(self, lo: float = 0.0, hi: float = _INF) -> bool:
        """True when the curve is ``>= 0`` on ``[lo, hi]``."""
        return difference_nonnegative(self._coef, lo, hi, np.abs(self._coef))

    def compare_right(self, other: CostCurve, x: float) -> int:
        """Order of the two curves just right of ``x``: -1 if this one is cheaper, 1 if
        dearer, 0 if they are the same polynomial (up to ``REL_TOL``).

        Decided by the first Taylor coefficient of the difference at ``x`` beyond ``REL_TOL``
        of its rounding scale (:func:`compare_right`).
        """
        return compare_right(self._horner[::-1], other._horner[::-1], x)


# ---------------------------------------------------------------------------------- helpers
def _sympy_number(value: float) -> sympy.Expr:
    if value.is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(repr(value))  # shortest text that round-trips, its own precision


_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _ast_to_sympy(node: ast.AST, text: str) -> sympy.Expr:
    """Translate the whitelisted syntax tree into sympy, never evaluating Python code."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"cost expression {text!r}: {value!r} is not a number")
        if not math.isfinite(value):
            raise ValueError(f"cost expression {text!r}: {value!r} is not finite")
        return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value, 17)
    if isinstance(node, ast.Name):
        if node.id != "n":
            raise ValueError(
                f"cost expression {text!r}: unknown symbol {node.id!r} (only n is allowed)"
            )
        return _N
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _ast_to_sympy(node.operand, text)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ALLOWED_BINOPS):
        left = _ast_to_sympy(node.left, text)
        if isinstance(node.op, ast.Pow):
            exp = node.right
            if not (isinstance(exp, ast.Constant) and type(exp.value) is int):
                raise ValueError(
                    f"cost expression {text!r}: exponents must be non-negative integer literals"
                )
            if not 0 <= exp.value <= MAX_PARSE_EXPONENT:
                raise ValueError(
                    f"cost expression {text!r}: exponent {exp.value} outside "
                    f"[0, {MAX_PARSE_EXPONENT}]"
                )
            return left ** sympy.Integer(exp.value)
        right = _ast_to_sympy(node.right, text)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right.has(_N):
            raise ValueError(f"cost expression {text!r}: n in a denominator is not a polynomial")
        if right == 0:
            raise ValueError(f"cost expression {text!r}: division by zero")
        return left / right
    what = type(node).__name__
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        what = "^ (use ** for powers)"
    elif isinstance(node, ast.Call):
        what = "function call"
    elif isinstance(node, ast.Attribute):
        what = "attribute access"
    raise ValueError(
        f"cost expression {text!r}: {what} is not allowed "
        "(only numbers, n, + - * / **, parentheses)"
    )


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(max(a.size, b.size))
    out[: a.size] += a
    out[: b.size] -= b
    return out


def _magnitude_coefs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(max(a.size, b.size))
    out[: a.size] += np.abs(a)
    out[: b.size] += np.abs(b)
    return out


def _horner(coef: Sequence[float], x: float) -> float:
    """Value at ``x`` of coefficients given lowest degree first (lists are fastest)."""
    if isinstance(coef, np.ndarray):
        coef = coef.tolist()
    value = 0.0
    for c in reversed(coef):
        value = value * x + c
    return value


def _taylor(coef: Sequence[float], x: float) -> list[float]:
    """Taylor coefficients at ``x`` by repeated synthetic division (Horner shift)."""
    t = coef.tolist() if isinstance(coef, np.ndarray) else list(coef)
    d = len(t)
    for k in range(d - 1):
        for j in range(d - 2, k - 1, -1):
            t[j] += x * t[j + 1]
    return t


def _coef_difference(ci: Sequence[float], cj: Sequence[float]) -> list[float]:
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
    d = _coef_difference(ci, cj)
    t = _taylor(d, x)
    scale = _taylor([abs(v) for v in d], abs(x))
    for tk, sk in zip(t, scale, strict=True):
        if abs(tk) > REL_TOL * sk:
            return -1 if tk < 0 else 1
    return 0


def values_equal(ci: Sequence[float], cj: Sequence[float], x: float) -> bool:
    """Are two curves equal at ``x``: is their difference there within ``REL_TOL`` of its
    rounding scale?"""
    d = _coef_difference(ci, cj)
    return abs(_horner(d, x)) <= REL_TOL * _horner([abs(v) for v in d], abs(x))


def _derivative(d: np.ndarray) -> np.ndarray:
    return d[1:] * np.arange(1, d.size) if d.size > 1 else np.zeros(1)


def _candidate_roots(d: np.ndarray) -> list[float]:
    """Real roots (and near-real ones) of the polynomial ``d``; a superset of its sign changes."""
    nz = np.flatnonzero(d)
    if nz.size == 0:
        return []
    d = d[: nz[-1] + 1]
    deg = d.size - 1
    if deg == 0:
        return []
    if deg == 1:
        return [-d[0] / d[1]]
    if deg == 2:
        c, b, a = d
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
    real = [r.real for r in raw if abs(r.imag) <= 1e-5 * max(1.0, abs(r.real))]
    deriv = _derivative(d).tolist()
    dl = d.tolist()
    polished = []
    for r in real:
        for _ in range(2):
            slope = _horner(deriv, r)
            if slope == 0.0:
                break
            step = _horner(dl, r) / slope
            if not math.isfinite(step):
                break
            r -= step
        polished.append(float(r))
    return sorted(polished)


def _sign(d: list[float], mag: list[float], x: float) -> int:
    value = _horner(d, x)
    if abs(value) <= ZERO_TOL * _horner(mag, abs(x)):
        return 0
    return 1 if value > 0 else -1


def _interval_points(roots: list[float], lo: float, hi: float) -> list[float]:
    """One sample point inside each gap of ``lo < roots... < hi``."""
    edges = [lo, *roots, hi]
    points = []
    for left, right in zip(edges[:-1], edges[1:], strict=True):
        if math.isinf(right):
            points.append(max(2.0 * left, left + 1.0))
        else:
            points.append(0.5 * (left + right))
    return points


def sign_change_roots(
    d: np.ndarray, lo: float = 0.0, hi: float = _INF, absorb_ends: bool = True
) -> np.ndarray:
    """Sizes in ``(lo, hi)`` where the polynomial ``d`` changes sign, ascending.

    Roots closer together than ``tol_x`` are merged, and with ``absorb_ends`` so are roots
    within ``tol_x`` of ``lo`` or ``hi`` (dropped); a root counts only when the signs of
    ``d`` sampled in the gaps on either side differ, so even-multiplicity touches are dropped.
    """
    mag = np.abs(d)
    inside: list[float] = []
    margin_lo = tol_x(lo) if absorb_ends else 0.0
    margin_hi = tol_x(hi) if absorb_ends and math.isfinite(hi) else 0.0
    for r in _candidate_roots(np.asarray(d, dtype=np.float64)):
        if r <= lo + margin_lo or r >= hi - margin_hi:
            continue
        if inside and r - inside[-1] <= tol_x(r):
            continue
        inside.append(r)
    if not inside:
        return np.empty(0)
    dl, ml = list(map(float, d)), mag.tolist()
    signs = [_sign(dl, ml, p) for p in _interval_points(inside, lo, hi)]
    out = []
    previous = signs[0]
    for k, s in enumerate(signs[1:]):
        if s == 0:
            continue
        if previous != 0 and s != previous:
            out.append(inside[k])
        previous = s
    return np.array(out, dtype=np.float64)


def difference_nonnegative(d: np.ndarray, lo: float, hi: float, mag: np.ndarray) -> bool:
    """True when ``d(n) >= -ZERO_TOL * mag(|n|)`` for all ``n`` in ``[lo, hi]``.

    The minimum of a polynomial on an interval is at an end or at a critical point, so ``d``
    is tested at ``lo``, at ``hi`` (its leading sign when ``hi`` is infinite) and at the real
    roots of ``d'`` inside: closed form up to a cubic ``d``.
    """
    nz = np.flatnonzero(d)
    if nz.size == 0:
        return True
    if lo >= 0.0 and np.all(d >= 0.0):
        return True
    if math.isinf(hi) and d[nz[-1]] < 0.0 and nz[-1] > 0:
        return False

    dl, ml = d.tolist(), np.asarray(mag).tolist()

    def ok(x: float) -> bool:
        return _horner(dl, x) >= -ZERO_TOL * _horner(ml, abs(x))

    if not ok(lo) or (math.isfinite(hi) and not ok(hi)):
        return False
    return all(ok(r) for r in _candidate_roots(_derivative(d[: nz[-1] + 1])) if lo < r < hi)
