"""The normalised area under an accuracy-vs-mean-cost curve: one number per method.

A method run at several budgets gives points (realised mean cost per item, accuracy).  At a
mean cost ``x`` the method can deliver the best accuracy among its points that cost at most
``x`` (a step function, non-decreasing); :func:`normalized_area` averages that function over a
stated cost range, linearly or on a log scale, so methods measured at different budgets
compare on one scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["normalized_area"]


def normalized_area(
    costs: Sequence[float] | np.ndarray,
    accuracies: Sequence[float] | np.ndarray,
    lo: float,
    hi: float,
    log: bool = False,
    floor: float = 0.0,
) -> float:
    """Mean over ``[lo, hi]`` of the best accuracy reachable within each mean cost.

    ``A(x) = max{accuracies[i] : costs[i] <= x}`` (``floor`` where no point costs that
    little); the result is ``integral of A over [lo, hi] / (hi - lo)``, or with ``log=True``
    the same in ``log10`` of the cost.  It lies between ``floor`` and the best accuracy; 1
    would be a perfect method that costs nothing.

    Runtime complexity: O(m log m) for m points.

    >>> normalized_area([1.0, 3.0], [0.5, 0.9], lo=0.0, hi=4.0)  # (0*1 + .5*2 + .9*1) / 4
    0.475
    >>> round(normalized_area([1.0, 10.0], [0.5, 0.9], lo=1.0, hi=100.0, log=True), 3)
    0.7

    Raises
    ------
    ValueError
        If the lengths differ, there are no points, a value is NaN, ``hi <= lo``, or
        ``log`` with ``lo <= 0``.
    """
    c = np.asarray(costs, dtype=np.float64).ravel()
    a = np.asarray(accuracies, dtype=np.float64).ravel()
    if c.shape != a.shape or c.size == 0:
        raise InvalidArgumentError(
            f"costs and accuracies must be non-empty and of one length, got "
            f"{c.size} and {a.size}")
    if np.isnan(c).any() or np.isnan(a).any():
        raise InvalidArgumentError("costs and accuracies must not be NaN")
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise InvalidArgumentError(
            f"the cost range must be finite with lo < hi, got [{lo!r}, {hi!r}]")
    if log and lo <= 0:
        raise InvalidArgumentError(f"a log-scale cost range needs lo > 0, got lo={lo!r}")
    order = np.argsort(c, kind="stable")
    c, a = c[order], np.maximum.accumulate(a[order])
    scale = np.log10 if log else (lambda v: v)
    left, right = scale(lo), scale(hi)
    edges = np.concatenate([[lo], np.clip(c, lo, hi), [hi]])
    levels = np.concatenate([[floor], np.maximum(a, floor)])
    x = scale(edges)
    widths = np.diff(x)
    return float(np.dot(widths, levels) / (right - left))
