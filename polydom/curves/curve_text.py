"""Text of numbers, cost curves and name lists: exact (round-tripping) or rounded for people,
and the natural order of feature names (``x2`` before ``x13``).  No sympy, no numpy.

A curve prints in sympy's order and notation (highest degree first, ``c*n**k`` terms, a
coefficient of 1 left out), written directly: printing must not load sympy (about half a
second of imports) and sympy's printer costs about 10 ms a curve.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

__all__ = ["curve_text", "natural_key", "number_text"]

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple:
    """Sort key putting ``x2`` before ``x13``: runs of digits compare as numbers.  O(len).

    >>> sorted(["x13", "x2", "x1", "b", "a10b", "a9b"], key=natural_key)
    ['a9b', 'a10b', 'b', 'x1', 'x2', 'x13']
    """
    parts = _DIGITS.split(name)
    return tuple((int(p), p) if i % 2 else (p,) for i, p in enumerate(parts))


def number_text(value: float, digits: int | None = None) -> str:
    """``value`` as short text: integral values without a decimal point (below 1e16), others
    as the shortest text that round-trips (``digits=None``) or rounded to ``digits``
    significant digits, which drops float noise: ``54.00000000000001`` -> ``54``.

    Runtime complexity: O(1).

    >>> number_text(0.1 + 0.2), number_text(0.1 + 0.2, digits=12)
    ('0.30000000000000004', '0.3')
    >>> number_text(54.00000000000001, digits=6), number_text(-3.0), number_text(1e20)
    ('54', '-3', '1e+20')
    >>> number_text(float("inf")), number_text(2.5e-7, digits=6)
    ('inf', '2.5e-07')
    """
    value = float(value)
    if not math.isfinite(value):
        return repr(value)
    if digits is not None:
        value = float(f"{value:.{digits}g}")
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if digits is None else f"{value:.{digits}g}"


def curve_text(coefficients: Sequence[float], digits: int | None = None) -> str:
    """The polynomial with ``coefficients`` (lowest degree first) as text in ``n``.

    ``digits=None`` gives the exact text (:meth:`polydom.CostCurve.parse` of it gives back
    the same coefficients); ``digits=k`` rounds every coefficient to ``k`` significant digits
    for people (:func:`number_text`).  Zero terms are left out; the zero polynomial is ``0``.

    Runtime complexity: O(len(coefficients)).

    >>> curve_text([9.0, 0.12000000000000001])
    '0.12000000000000001*n + 9'
    >>> curve_text([9.0, 0.12000000000000001], digits=6)
    '0.12*n + 9'
    >>> curve_text([-1.0, 0.0, 1.0]), curve_text([0.0])
    ('n**2 - 1', '0')
    """
    out = ""
    for k in range(len(coefficients) - 1, -1, -1):
        c = float(coefficients[k])
        magnitude = number_text(abs(c), digits)
        if magnitude == "0" and (k or out):
            continue
        power = "" if k == 0 else ("n" if k == 1 else f"n**{k}")
        term = magnitude if not power else (power if magnitude == "1" else
                                            f"{magnitude}*{power}")
        if not out:
            out = ("-" if c < 0 and magnitude != "0" else "") + term
        else:
            out += (" - " if c < 0 else " + ") + term
    return out or "0"
