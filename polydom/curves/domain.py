"""Validation of the size domain, sizes and budgets, with errors that name the argument."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["check_domain", "check_size", "check_budget", "check_sizes", "check_budgets"]


def check_domain(n_min: float, n_max: float) -> tuple[float, float]:
    """Return ``(n_min, n_max)`` as floats; ``0 <= n_min <= n_max``, ``n_min`` finite."""
    try:
        lo, hi = float(n_min), float(n_max)
    except (TypeError, ValueError):
        raise ValueError(f"n_min and n_max must be numbers, got {n_min!r}, {n_max!r}") from None
    if not (math.isfinite(lo) and lo >= 0.0):
        raise ValueError(f"n_min must be finite and >= 0, got {n_min!r}")
    if math.isnan(hi) or hi < lo:
        raise ValueError(f"n_max must be >= n_min={lo!r}, got {n_max!r}")
    return lo, hi


def check_size(size: float, lo: float, hi: float) -> float:
    """Return ``size`` as a float, or raise naming it when NaN, infinite or outside ``[lo, hi]``."""
    try:
        n = float(size)
    except (TypeError, ValueError):
        raise ValueError(f"size must be a number, got {size!r}") from None
    if not math.isfinite(n) or n < 0.0:
        raise ValueError(f"size must be finite and >= 0, got {size!r}")
    if not lo <= n <= hi:
        raise ValueError(f"size {size!r} is outside the index domain [{lo!r}, {hi!r}]")
    return n


def check_budget(budget: float) -> float:
    """Return ``budget`` as a float, or raise naming it when NaN, infinite or negative."""
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise ValueError(f"budget must be a number, got {budget!r}") from None
    if not (math.isfinite(b) and b >= 0.0):
        raise ValueError(f"budget must be finite and >= 0, got {budget!r}")
    return b


def check_sizes(sizes: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Vector form of :func:`check_size`; the error names the first bad element."""
    n = np.asarray(sizes, dtype=np.float64)
    bad = ~(np.isfinite(n) & (n >= lo) & (n <= hi))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"sizes[{k}] must be finite and inside the index domain [{lo!r}, {hi!r}], "
            f"got {n.ravel()[k]!r}"
        )
    return n


def check_budgets(budgets: np.ndarray) -> np.ndarray:
    """Vector form of :func:`check_budget`; the error names the first bad element."""
    b = np.asarray(budgets, dtype=np.float64)
    bad = ~(np.isfinite(b) & (b >= 0.0))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"budgets[{k}] must be finite and >= 0, got {b.ravel()[k]!r}")
    return b
