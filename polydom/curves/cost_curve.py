"""CostCurve: a polynomial cost ``c(n)`` in the item size ``n`` (immutable, hashable).

A :class:`CostCurve` is the cost of computing a feature (or a feature set, by addition) on
an item of size ``n``.  Coefficients are float64, lowest degree first.  Parsing lives in
:mod:`polydom.curves.parse` (imported, with sympy, the first time text is parsed: ``import
polydom`` stays light), text output in :mod:`polydom.curves.curve_text`, the numerics
(tolerances, roots, signs) in :mod:`polydom.curves.poly`.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from polydom.curves.curve_text import curve_text
from polydom.curves.domain import shown
from polydom.curves.poly import (
    MAX_DEGREE,
    ZERO_TOL,
    compare_right,
    difference,
    difference_nonnegative,
    halved_if_overflowing,
    magnitude_coefs,
    sign_change_roots,
    taylor,
)
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["CostCurve", "flush_subnormal"]

_INF = math.inf
#: Smallest positive normal float64 (about 2.2e-308).
_SMALLEST_NORMAL = sys.float_info.min


def _holds_a_bool(values: Any) -> bool:
    """Does a list or tuple of numbers, or of rows of numbers, hold a boolean?  numpy casts
    ``[True, 2.0]`` and ``[[True, 2.0]]`` to floats silently.  O(size)."""
    if not isinstance(values, (list, tuple)):
        return False
    return any(
        isinstance(c, (bool, np.bool_))
        for v in values for c in (v if isinstance(v, (list, tuple)) else (v,))
    )


def _real_dtype(raw: np.ndarray) -> bool:
    """Are the values numpy read into ``raw`` real numbers (integers or floats, or objects
    that are real numbers and not booleans)?  O(1), or O(size) for an object array."""
    return raw.dtype.kind in "iuf" or raw.dtype.kind == "O" and all(
        isinstance(c, numbers.Real) and not isinstance(c, bool) for c in raw.ravel()
    )


def _refuse_subnormal(coef: np.ndarray, where: str) -> None:
    """Refuse a coefficient that is not 0 but smaller than the smallest normal float.

    Such a (subnormal) float carries fewer digits than the tolerances of
    :mod:`polydom.curves.poly` assume: at 1e-320 the sweep's crossings and orders no longer
    match a brute-force scan.  O(len(coef)).
    """
    tiny = (coef != 0.0) & (np.abs(coef) < _SMALLEST_NORMAL)
    if tiny.any():
        k = int(np.flatnonzero(tiny)[0])
        raise InvalidArgumentError(
            f"coefficient of n**{k}{where} is {float(coef[k])!r}: a cost coefficient must be "
            f"0 or at least {_SMALLEST_NORMAL!r} in magnitude (smaller floats are subnormal "
            "and carry too few digits to compare curves); rescale the cost unit")


def flush_subnormal(coef: np.ndarray) -> np.ndarray:
    """``coef`` with its subnormal entries (not 0, below about 2.2e-308) set to 0.

    For coefficients that polydom computes (a fit, a sum, a scaled curve), not for those a
    user gives (refused, see :class:`CostCurve`): a computed coefficient that fell below the
    normal floats is 0 to every tolerance of :mod:`polydom.curves.poly`.  O(len(coef)).

    >>> flush_subnormal(np.array([1e-310, 2.0])).tolist()
    [0.0, 2.0]
    """
    coef = np.asarray(coef, dtype=np.float64)
    tiny = (coef != 0.0) & (np.abs(coef) < _SMALLEST_NORMAL)
    return np.where(tiny, 0.0, coef) if tiny.any() else coef


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
    TypeError
        If the coefficients are not real numbers (strings, bools, complex).
    ValueError
        If the sequence is empty, not one-dimensional, holds NaN, infinity, an integer
        beyond the floats or a subnormal float (not 0, below about 2.2e-308 in magnitude),
        or the degree exceeds :data:`polydom.curves.poly.MAX_DEGREE` (32).
    """

    __slots__ = ("_coef", "_horner", "_hash")

    def __init__(self, coefficients: Sequence[float] | np.ndarray | float) -> None:
        try:
            raw = np.atleast_1d(coefficients)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"coefficients must be a sequence of numbers, got {shown(coefficients)}"
            ) from None
        if _holds_a_bool(coefficients) or not _real_dtype(raw):
            raise ArgumentTypeError(
                f"coefficients must be real numbers, got {shown(coefficients)} "
                f"(dtype {raw.dtype})"
            )
        try:
            arr = np.array(raw, dtype=np.float64)
        except OverflowError:  # an int beyond the floats, say 10**400
            raise InvalidArgumentError(
                f"coefficients must be finite, got {shown(coefficients)}") from None
        if arr.ndim != 1 or arr.size == 0:
            raise InvalidArgumentError(
                f"coefficients must be a non-empty 1-D sequence, got {coefficients!r}"
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidArgumentError(f"coefficients must be finite, got {arr.tolist()}")
        _refuse_subnormal(arr, "")
        nonzero = np.flatnonzero(arr)
        arr = arr[: nonzero[-1] + 1] if nonzero.size else arr[:1]
        if arr.size - 1 > MAX_DEGREE:
            raise InvalidArgumentError(
                f"a cost curve has degree at most {MAX_DEGREE}, got degree {arr.size - 1}"
            )
        arr = arr + 0.0  # normalise -0.0
        arr.setflags(write=False)
        self._coef = arr
        self._horner = tuple(float(c) for c in arr[::-1])
        self._hash = hash(self._horner)

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, text: str) -> CostCurve:
        """Parse a polynomial in ``n`` from text, without ever executing it.

        See :func:`polydom.curves.parse.parse_coefficients` for the accepted grammar.

        Runtime complexity: O(len(text)) plus sympy's expansion.

        >>> CostCurve.parse("(n + 1)**2").coefficients.tolist()
        [1.0, 2.0, 1.0]

        Raises
        ------
        ValueError
            Naming the offending part of the text.
        """
        if isinstance(text, CostCurve):
            return text
        from polydom.curves.parse import parse_coefficients  # sympy: loaded when text is parsed

        return cls(parse_coefficients(text))

    @classmethod
    def from_rows(cls, coefficients: np.ndarray) -> list[CostCurve]:
        """One curve per row of a ``(k, L)`` coefficient matrix (lowest degree first).

        What ``[CostCurve(row) for row in coefficients]`` gives, validated and normalised
        for the whole matrix at once: the fast way to rebuild many stored curves.

        Runtime complexity: O(k * L) vectorised plus O(L) per curve.

        >>> [c.coefficients.tolist() for c in CostCurve.from_rows([[1, 2, 0], [0, 0, 0]])]
        [[1.0, 2.0], [0.0]]

        Raises
        ------
        ValueError
            If the matrix is not 2-D with at least one column, holds something other than
            real numbers (booleans and number strings included, which numpy would cast
            silently), NaN, infinity or a subnormal float, or a row of degree above
            :data:`polydom.curves.poly.MAX_DEGREE` (naming the first bad row).
        """
        try:
            raw = np.asarray(coefficients)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"coefficients must be a matrix of numbers: {exc}") from None
        if _holds_a_bool(coefficients):
            raise InvalidArgumentError("coefficients must be a matrix of numbers, got a boolean")
        if not _real_dtype(raw):
            raise InvalidArgumentError(
                f"coefficients must be a matrix of numbers, got dtype {raw.dtype}"
            )
        try:
            arr = np.array(raw, dtype=np.float64)
        except OverflowError:  # an int beyond the floats, say 10**400
            raise InvalidArgumentError(
                "coefficients must be finite, got an int beyond the floats") from None
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise InvalidArgumentError(
                f"coefficients must be a (k, L) matrix with L >= 1, got {arr.shape}")
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise InvalidArgumentError(
                f"coefficients must be finite, got {arr[bad].tolist()} in row {bad}")
        arr += 0.0  # normalise -0.0
        tiny = ((arr != 0.0) & (np.abs(arr) < _SMALLEST_NORMAL)).any(axis=1)
        if tiny.any():
            bad = int(np.flatnonzero(tiny)[0])
            _refuse_subnormal(arr[bad], f" in row {bad}")
        nonzero = arr != 0.0
        lengths = np.where(
            nonzero.any(axis=1), arr.shape[1] - np.argmax(nonzero[:, ::-1], axis=1), 1
        )
        if arr.shape[0] and lengths.max() - 1 > MAX_DEGREE:
            bad = int(np.flatnonzero(lengths - 1 > MAX_DEGREE)[0])
            raise InvalidArgumentError(
                f"a cost curve has degree at most {MAX_DEGREE}, got degree "
                f"{int(lengths[bad]) - 1} in row {bad}"
            )
        arr.setflags(write=False)
        out = []
        new = object.__new__
        width = arr.shape[1]
        for row, values, length in zip(arr, arr.tolist(), lengths.tolist(), strict=True):
            curve = new(cls)
            horner = tuple(values[length - 1 :: -1])
            curve._coef = row if length == width else row[:length]
            curve._horner = horner
            curve._hash = hash(horner)
            out.append(curve)
        return out

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

    def to_sympy(self) -> Any:
        """The curve as a sympy expression in the symbol ``n`` (imports sympy)."""
        import sympy

        from polydom.curves.parse import N as _N
        from polydom.curves.parse import sympy_number

        return sum(
            (sympy_number(float(c)) * _N**k for k, c in enumerate(self._coef) if c != 0.0),
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
        return np.array(taylor(self._coef, x))

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
        return CostCurve(flush_subnormal(out))

    def __radd__(self, other: Any) -> CostCurve:
        if isinstance(other, (int, float)) and not isinstance(other, bool) and other == 0:
            return self  # so that sum(curves) works
        return self.__add__(other)

    def __mul__(self, factor: float) -> CostCurve:
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.floating)):
            return NotImplemented
        return CostCurve(flush_subnormal(self._coef * float(factor)))

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
        return cls(flush_subnormal(out))

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
        """Exact text in sympy's notation: ``CostCurve.parse(str(c)) == c``; see
        :meth:`text` for rounded text."""
        return curve_text(self._horner[::-1])

    def text(self, digits: int = 6) -> str:
        """The curve for people: coefficients to ``digits`` significant digits, no float
        noise.  Runtime complexity: O(degree).

        >>> CostCurve([9, 0.12000000000000001]).text()
        '0.12*n + 9'
        """
        return curve_text(self._horner[::-1], digits)

    def crossings(self, other: CostCurve, lo: float = 0.0, hi: float = _INF) -> np.ndarray:
        """Sizes in ``(lo, hi)`` where this curve and ``other`` cross (the sign of the
        difference changes).  Touching without crossing is not a crossing; identical curves
        never cross.

        Runtime complexity: O(d**3) for degree d (companion-matrix eigenvalues), O(1) for
        d <= 2.

        >>> CostCurve([0, 0, 1]).crossings(CostCurve([4])).tolist()
        [2.0]

        Raises ``ValueError`` for an infinite or NaN ``lo`` or a NaN ``hi``; ``hi <= lo`` has
        no crossing.
        """
        return sign_change_roots(difference(self._coef, other._coef), lo, hi)

    def le(self, other: CostCurve, lo: float = 0.0, hi: float = _INF) -> bool:
        """True when ``self(n) <= other(n)`` for every ``n`` in ``[lo, hi]``, up to
        ``ZERO_TOL`` relative rounding.  Raises ``ValueError`` unless ``lo`` is finite and
        ``lo <= hi``.

        Runtime complexity: O(1) when the coefficients already decide it, else O(d**3).
        """
        mine, theirs = halved_if_overflowing(self._coef, other._coef)
        return difference_nonnegative(
            difference(theirs, mine), lo, hi, magnitude_coefs(ZERO_TOL * mine, ZERO_TOL * theirs)
        )

    def is_nonnegative(self, lo: float = 0.0, hi: float = _INF) -> bool:
        """True when the curve is ``>= 0`` on ``[lo, hi]`` (a finite ``lo <= hi``, else
        ``ValueError``)."""
        return difference_nonnegative(self._coef, lo, hi, ZERO_TOL * np.abs(self._coef))

    def compare_right(self, other: CostCurve, x: float) -> int:
        """Order of the two curves just right of ``x``: -1 if this one is cheaper, 1 if
        dearer, 0 if they are the same polynomial (up to ``REL_TOL``).

        Decided by the first Taylor coefficient of the difference at ``x`` beyond ``REL_TOL``
        of its rounding scale (:func:`compare_right`).
        """
        return compare_right(self._horner[::-1], other._horner[::-1], x)
