"""ADAPT's cost/accuracy sweep: a grid of (tradeoff, p_full), its efficient frontier, candidates.

The paper (section 4) sweeps its two cost knobs, ``gamma`` (``tradeoff``) and ``P_full``, and
picks, for a budget ``B``, the configuration with the best validation accuracy among those whose
validation cost is at most ``B``.  :func:`sweep_adapt` fits the grid and scores every model on
held-out rows; :func:`efficient_frontier` keeps the points no other point beats (cheaper or
equal cost and higher accuracy); :func:`select` answers a budget; :func:`sweep_adapt_candidates`
turns the frontier into :class:`polydom.Candidate` objects with expected cost curves, ready for
``polydom.build_index(..., extra_candidates=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve

__all__ = [
    "SweepPoint",
    "efficient_frontier",
    "select",
    "sweep_adapt",
    "sweep_adapt_candidates",
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


def sweep_adapt(
    estimator: Any,
    tradeoffs: Iterable[float],
    p_fulls: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    **params: Any,
) -> list[SweepPoint]:
    """Fit a clone of ``estimator`` for every (tradeoff, p_full); score each on the eval rows.

    ``params`` are set on every clone (e.g. ``feature_costs`` at a reference size).  ``cost`` is
    the mean of ``prediction_cost`` over the eval rows, ``routed`` the fraction sent to the
    high-cost model.

    Runtime complexity: ``len(tradeoffs) * len(p_fulls)`` fits.
    """
    p_fulls = [float(p) for p in p_fulls]
    out = []
    for t in tradeoffs:
        for p in p_fulls:
            model = clone(estimator).set_params(tradeoff=float(t), p_full=p, **params)
            model.fit(X_train, y_train)
            acc = float(accuracy_score(y_eval, model.predict(X_eval)))
            cost = float(model.prediction_cost(X_eval).mean())
            routed = float(model.routes(X_eval).mean())
            out.append(SweepPoint(float(t), p, acc, cost, routed, model))
    return out


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


def sweep_adapt_candidates(
    estimator: Any,
    tradeoffs: Iterable[float],
    p_fulls: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    costs: Mapping[str, Any],
    sizes: Iterable[float] = (1.0,),
    frontier: bool = True,
    cost: str = "expected",
    key: str | None = None,
) -> list[Candidate]:
    """Index candidates from the sweep: per reference size, the frontier (or every point).

    For each size ``s`` the grid is fitted with ``feature_costs = {f: c_f(s)}``; each kept
    model becomes a Candidate whose cost curve is its expected cost
    ``sum_f P(f needed) c_f(n)`` over the eval rows (``cost="worst"``: every feature it may
    need), with :meth:`subset_model` as payload.

    Parameters
    ----------
    estimator : AdaptClassifier
        Prototype (``feature_groups`` names = keys of ``costs``).
    tradeoffs, p_fulls : iterables of float
    X_train, y_train, X_eval, y_eval : arrays
    costs : mapping of str to CostCurve or str
    sizes : iterable of float, default (1.0,)
    frontier : bool, default True
        Keep only the efficient frontier of each size's grid (on the eval rows).
    cost : {"expected", "worst"}
    key : str, optional
        Key prefix (default ``"ADAPT-LIN"`` / ``"ADAPT-GBRT"``).

    Returns
    -------
    list of Candidate
        Keys ``"{key}(tradeoff=..., p_full=..., n=...)"``.

    Runtime complexity: ``len(sizes) * len(tradeoffs) * len(p_fulls)`` fits.
    """
    prefix = key or f"ADAPT-{str(estimator.method).upper()}"
    names = list(costs)
    tradeoffs, p_fulls = list(tradeoffs), list(p_fulls)
    out = []
    for s in sizes:
        ref = {n: float(CostCurve.coerce(costs[n])(float(s))) for n in names}
        points = sweep_adapt(
            estimator, tradeoffs, p_fulls, X_train, y_train, X_eval, y_eval, feature_costs=ref
        )
        kept = efficient_frontier(points) if frontier else points
        for p in kept:
            out.append(
                p.model.to_candidate(
                    X_eval,
                    y_eval,
                    costs,
                    f"{prefix}(tradeoff={p.tradeoff:g}, p_full={p.p_full:g}, n={float(s):g})",
                    cost=cost,
                )
            )
    return out
