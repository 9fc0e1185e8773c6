"""Argument checks of the public entry points, with errors that name the argument and value.

The one home of input validation: sizes, budgets, the size domain, numbers given where a
real is expected (cast to float64, so a numpy float32 answers as the same Python float),
arrays of queries, feature names and column indices.  A wrong *type* raises ``TypeError``,
a wrong *value* ``ValueError``; both name the argument and show the value.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = [
    "check_budget",
    "check_budgets",
    "check_column",
    "check_domain",
    "check_feature_name",
    "check_queries",
    "check_real",
    "check_size",
    "check_sizes",
    "shown",
]


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_real(value: Any, name: str) -> float:
    """``value`` as a Python float when it is one real number, else ``TypeError``.

    Accepted: ``int``, ``float``, numpy integers and floats, ``fractions.Fraction``, 0-d
    numeric arrays.  Refused: ``bool`` (``True`` is not a size), strings, complex numbers,
    arrays with more than one element, ``None``.  NaN and infinity pass (range checks are
    the caller's).

    Runtime complexity: O(1).

    >>> check_real(2, "size")
    2.0
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray):
            raise ArgumentTypeError(
                f"{name} must be a single real number, got an array of shape {value.shape}"
            )
        raise ArgumentTypeError(
            f"{name} must be a real number, got {shown(value)} ({type(value).__name__})"
        )
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def check_domain(n_min: float, n_max: float) -> tuple[float, float]:
    """Return ``(n_min, n_max)`` as floats; ``0 <= n_min <= n_max``, ``n_min`` finite."""
    lo, hi = check_real(n_min, "n_min"), check_real(n_max, "n_max")
    if not (math.isfinite(lo) and lo >= 0.0):
        raise InvalidArgumentError(f"n_min must be finite and >= 0, got {n_min!r}")
    if math.isnan(hi) or hi < lo:
        raise InvalidArgumentError(f"n_max must be >= n_min={lo!r}, got {n_max!r}")
    return lo, hi


def check_size(size: float, lo: float, hi: float) -> float:
    """Return ``size`` as a float, or raise naming it when NaN, infinite or outside ``[lo, hi]``."""
    n = check_real(size, "size")
    if not math.isfinite(n) or n < 0.0:
        raise InvalidArgumentError(f"size must be finite and >= 0, got {size!r}")
    if not lo <= n <= hi:
        raise InvalidArgumentError(f"size {size!r} is outside the index domain [{lo!r}, {hi!r}]")
    return n


def check_budget(budget: float) -> float:
    """Return ``budget`` as a float, or raise naming it when NaN, infinite or negative."""
    b = check_real(budget, "budget")
    if not (math.isfinite(b) and b >= 0.0):
        raise InvalidArgumentError(f"budget must be finite and >= 0, got {budget!r}")
    return b


def _real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array of real numbers (``TypeError`` / ``ValueError`` else)."""
    if isinstance(values, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be an array of real numbers, got {shown(values)}")
    try:
        arr = np.asarray(values)
    except ValueError:
        raise InvalidArgumentError(
            f"{name} must be a rectangular array of real numbers (not ragged), "
            f"got {shown(values)}"
        ) from None
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(
            f"{name} must be an array of real numbers, got dtype {arr.dtype} "
            f"({shown(values)})"
        )
    return arr.astype(np.float64, copy=False)


def check_sizes(sizes: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Vector form of :func:`check_size` (float64); the error names the first bad element."""
    n = _real_array(sizes, "sizes")
    bad = ~(np.isfinite(n) & (n >= lo) & (n <= hi))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise InvalidArgumentError(
            f"sizes[{k}] must be finite and inside the index domain [{lo!r}, {hi!r}], "
            f"got {n.ravel()[k]!r}"
        )
    return n


def check_budgets(budgets: np.ndarray) -> np.ndarray:
    """Vector form of :func:`check_budget` (float64); the error names the first bad element."""
    b = _real_array(budgets, "budgets")
    bad = ~(np.isfinite(b) & (b >= 0.0))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise InvalidArgumentError(f"budgets[{k}] must be finite and >= 0, got {b.ravel()[k]!r}")
    return b


def check_queries(sizes: Any, budgets: Any, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``sizes`` and ``budgets`` broadcast to one shape (float64 arrays).

    Runtime complexity: O(Q) for Q queries.

    Raises
    ------
    TypeError
        When either is not an array of real numbers (strings, complex, objects).
    ValueError
        When either is ragged, a value is out of range, or the shapes do not broadcast.
    """
    n = check_sizes(sizes, lo, hi)
    b = check_budgets(budgets)
    try:
        return np.broadcast_arrays(n, b)
    except ValueError:
        raise InvalidArgumentError(
            f"sizes of shape {n.shape} and budgets of shape {b.shape} do not broadcast "
            "to one shape"
        ) from None


def check_feature_name(name: Any, what: str = "feature name") -> str:
    """``name`` when it is a non-blank string, else ``TypeError`` / ``ValueError``.

    Runtime complexity: O(len(name)).
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"{what} must be a string, got {shown(name)} ({type(name).__name__})")
    if not name.strip():
        raise InvalidArgumentError(f"{what} must be a non-empty string, got {name!r}")
    return name


def check_column(value: Any, what: str) -> int:
    """``value`` as an int when it is an integer column index (not bool, not 2.0 or "3")."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{what} must be an integer column index, got {shown(value)} "
            f"({type(value).__name__})"
        )
    return int(value)
