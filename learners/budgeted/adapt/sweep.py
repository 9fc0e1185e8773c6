"""ADAPT's own cost/accuracy sweep (the paper's protocol): a grid of (tradeoff, p_full) and
its efficient frontier.

The paper (section 4) sweeps its two cost knobs, ``gamma`` (``tradeoff``) and ``P_full``, and
picks, for a budget ``B``, the configuration with the best validation accuracy among those whose
validation cost is at most ``B``.  :func:`sweep_adapt` fits the grid and scores every model on
held-out rows; :func:`efficient_frontier` keeps the points no other point beats (cheaper or
equal cost and higher accuracy); :func:`select` answers a budget.  Index candidates come from
the one sweep of every budgeted learner, :func:`learners.budgeted.sweep.sweep`, through
ADAPT's hooks (:meth:`AdaptClassifier.sweep_settings` and the others).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score

from lattice.executor import map_in_order
from polydom.errors import InvalidArgumentError

__all__ = [
    "BUILD_P_FULLS",
    "SweepPoint",
    "check_thresholds",
    "efficient_frontier",
    "routing_threshold",
    "select",
    "sweep_adapt",
]


@dataclass(frozen=True)
class SweepPoint:
    """One fitted configuration scored on held-out rows (cost at the training costs)."""

    tradeoff: float
    p_full: float
    accuracy: float
    cost: float
    routed: float
    model: Any = field(repr=False, compare=False)
    threshold: float = 0.0


def sweep_adapt(
    estimator: Any,
    tradeoffs: Iterable[float],
    p_fulls: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    thresholds: Iterable[float | str] = (0.0,),
    *,
    executor: Any = None,
    **params: Any,
) -> list[SweepPoint]:
    """Fit a clone of ``estimator`` for every (tradeoff, p_full); score each on the eval rows.

    ``params`` are set on every clone (e.g. ``feature_costs`` at a reference size).  ``cost`` is
    the mean of ``prediction_cost`` over the eval rows, ``routed`` the fraction sent to the
    high-cost model.

    ``thresholds`` (an extension of the paper, spec 2.6 and pitfall 1): each fitted model is
    also scored with the routing rule ``g(x) > threshold`` for every value given, without
    refitting (a copy shares the fitted state); ``"quantile"`` stands for the threshold that
    routes the fraction of eval rows closest to ``p_full`` (the ``1 - p_full`` quantile of
    ``g`` when scores do not tie).

    ``executor`` (see :func:`lattice.make_executor`): where the fits run, one task per
    (tradeoff, p_full), the data shipped to each worker once; the points are the same, in
    grid order, with every executor.

    Runtime complexity: ``len(tradeoffs) * len(p_fulls)`` fits, times ``len(thresholds)``
    evaluations.
    """
    thresholds = check_thresholds(thresholds)
    grid = [(float(t), float(p), 0) for t in tradeoffs for p in p_fulls]
    sweep = _AdaptSweep(estimator, X_train, y_train, X_eval, y_eval, tuple(thresholds),
                        _with_high_cost_proba(estimator, X_train, y_train, params), ({},))
    return [point for points in _run(sweep, grid, executor) for point in points]


def check_thresholds(thresholds: Iterable[float | str]) -> list[float | str]:
    """The routing thresholds, checked: finite numbers or ``"quantile"``."""
    thresholds = list(thresholds)
    for tau in thresholds:
        if tau != "quantile" and not (isinstance(tau, int | float) and np.isfinite(tau)):
            raise InvalidArgumentError(
                f"thresholds must be finite numbers or 'quantile', got {tau!r}")
    return thresholds


def _with_high_cost_proba(
    estimator: Any, X_train: np.ndarray, y_train: np.ndarray, params: dict[str, Any]
) -> dict[str, Any]:
    """``params``, plus the high-cost model's training probabilities when the estimator
    would compute them in every fit (they do not depend on the grid: once here)."""
    params = dict(params)
    proba = estimator.get_params()["high_cost_proba"]
    if isinstance(proba, str) and not estimator.fit_high_cost and "high_cost_proba" not in params:
        params["high_cost_proba"] = estimator.high_cost_train_proba(X_train, y_train)
    return params


@dataclass(frozen=True)
class _AdaptSweep:
    """What every fit of an ADAPT sweep shares (shipped to each worker once): the data, the
    thresholds, the parameters of every fit and those of each reference size."""

    estimator: Any
    X_train: np.ndarray
    y_train: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    thresholds: tuple
    params: dict[str, Any]
    per_size: tuple[dict[str, Any], ...]


def _fit_adapt_point(sweep: _AdaptSweep, t: float, p: float, size: int) -> list[SweepPoint]:
    """One fit of an ADAPT sweep (an executor task): ``tradeoff=t``, ``p_full=p`` and the
    parameters of reference size number ``size``, scored at every threshold."""
    fitted = clone(sweep.estimator).set_params(
        tradeoff=t, p_full=p, **sweep.params, **sweep.per_size[size]
    )
    fitted.fit(sweep.X_train, sweep.y_train)
    out = []
    for tau in sweep.thresholds:
        if tau == "quantile":
            tau = routing_threshold(fitted.gate_score(sweep.X_eval), p)
        model = copy.copy(fitted)
        model.threshold = float(tau)
        acc = float(accuracy_score(sweep.y_eval, model.predict(sweep.X_eval)))
        cost = float(model.prediction_cost(sweep.X_eval).mean())
        routed = float(model.routes(sweep.X_eval).mean())
        out.append(SweepPoint(t, p, acc, cost, routed, model, float(tau)))
    return out


def _run(sweep: _AdaptSweep, grid: list[tuple], executor: Any) -> list[list[SweepPoint]]:
    """Every grid point's fit through ``executor``, in grid order."""
    return map_in_order(executor, sweep, _fit_adapt_point, grid)


def routing_threshold(g: np.ndarray, fraction: float) -> float:
    """The threshold ``tau`` for which ``mean(g > tau)`` is closest to ``fraction`` (scores of
    tree ensembles tie, so an exact quantile may route far fewer rows).  O(rows log rows)."""
    values = np.unique(g)
    taus = np.concatenate([[values[0] - 1.0], values])
    routed = 1.0 - np.searchsorted(np.sort(g), taus, side="right") / len(g)
    return float(taus[int(np.argmin(np.abs(routed - fraction)))])


def efficient_frontier(points: Iterable[SweepPoint]) -> list[SweepPoint]:
    """Points not beaten by another, by increasing cost with strictly increasing accuracy.

    Ties in cost keep the most accurate; ties in both keep the first in grid order.

    Runtime complexity: O(P log P).

    >>> pts = [SweepPoint(0, 0, .9, 2.0, 0, None), SweepPoint(1, 0, .8, 1.0, 0, None),
    ...        SweepPoint(2, 0, .8, 1.5, 0, None)]
    >>> [(p.cost, p.accuracy) for p in efficient_frontier(pts)]
    [(1.0, 0.8), (2.0, 0.9)]
    """
    ordered = sorted(enumerate(points), key=lambda ip: (ip[1].cost, -ip[1].accuracy, ip[0]))
    out: list[SweepPoint] = []
    for _, p in ordered:
        if not out or p.accuracy > out[-1].accuracy:
            out.append(p)
    return out


def select(points: Iterable[SweepPoint], budget: float) -> SweepPoint | None:
    """The most accurate point with ``cost <= budget`` (ties: lower cost); None if none fits.

    Runtime complexity: O(P).
    """
    fits = [p for p in points if p.cost <= budget]
    if not fits:
        return None
    return max(fits, key=lambda p: (p.accuracy, -p.cost))


#: The ``p_full`` grid of a build's ADAPT sweep (spec 2.6: dense around (0.4, 0.8), pitfall 1).
BUILD_P_FULLS = (0.2, 0.4, 0.6, 0.8)
