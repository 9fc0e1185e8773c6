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

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score

from lattice.executor import map_in_order
from learners.budgeted.contract import sweep_features
from polydom.curves.candidate import Candidate
from polydom.curves.cost_model import CostModel

__all__ = [
    "BUILD_P_FULLS",
    "SweepPoint",
    "efficient_frontier",
    "select",
    "sweep_adapt",
    "sweep_adapt_build",
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
    thresholds = _check_thresholds(thresholds)
    grid = [(float(t), float(p), 0) for t in tradeoffs for p in p_fulls]
    sweep = _AdaptSweep(estimator, X_train, y_train, X_eval, y_eval, tuple(thresholds),
                        _with_high_cost_proba(estimator, X_train, y_train, params), ({},))
    return [point for points in _run(sweep, grid, executor) for point in points]


def _check_thresholds(thresholds: Iterable[float | str]) -> list[float | str]:
    thresholds = list(thresholds)
    for tau in thresholds:
        if tau != "quantile" and not (isinstance(tau, int | float) and np.isfinite(tau)):
            raise ValueError(f"thresholds must be finite numbers or 'quantile', got {tau!r}")
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
            tau = _routing_threshold(fitted.gate_score(sweep.X_eval), p)
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


def _routing_threshold(g: np.ndarray, fraction: float) -> float:
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


def sweep_adapt_candidates(
    estimator: Any,
    tradeoffs: Iterable[float],
    p_fulls: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    costs: CostModel | Mapping[str, Any],
    sizes: Iterable[float] = (1.0,),
    frontier: bool = True,
    cost: str = "expected",
    key: str | None = None,
    thresholds: Iterable[float | str] = (0.0,),
    learner: str | None = "adapt",
    executor: Any = None,
) -> list[Candidate]:
    """Index candidates from the sweep: per reference size, the frontier (or every point).

    For each size ``s`` the grid is fitted with ``feature_costs = {f: cost_model.cost([f])(s)}``
    (features as :func:`learners.budgeted.contract.sweep_features` resolves them: the
    prototype's ``feature_groups``, or the atoms of a CostModel whose columns partition the
    rows); each kept model becomes a Candidate whose ``needs`` are the fraction of eval rows
    that needed each atom (a shared atom once per row) and whose cost curve is
    ``sum_a P(a needed) c_a(n)`` (``cost="worst"``: every atom it may need, at 1), with
    :meth:`subset_model` as payload.

    Parameters
    ----------
    estimator : AdaptClassifier
        Prototype; its features must be atoms or bundles of ``costs``.
    tradeoffs, p_fulls : iterables of float
    X_train, y_train, X_eval, y_eval : arrays
    costs : polydom.CostModel or mapping of str to CostCurve or str
    sizes : iterable of float, default (1.0,)
    frontier : bool, default True
        Keep only the efficient frontier of each size's grid (on the eval rows).
    cost : {"expected", "worst"}
    key : str, optional
        Key prefix (default ``"ADAPT-LIN"`` / ``"ADAPT-GBRT"``).
    thresholds : iterable of float or "quantile", default (0.0,)
        Routing thresholds scored per fitted model (see :func:`sweep_adapt`).
    learner : str, optional
        Learner name recorded on every candidate (default ``"adapt"``, its registry name).
    executor : None, str, lattice.Executor or distributed.Client
        Where the fits run (see :func:`lattice.make_executor`): one task per (trade-off,
        p_full, reference size), the data shipped to each worker once.  The candidates are
        the same, in the same order, with every executor.

    Returns
    -------
    list of Candidate
        Keys ``"{key}(tradeoff=..., p_full=..., threshold=..., n=...)"``.

    Runtime complexity: ``len(sizes) * len(tradeoffs) * len(p_fulls)`` fits, ``workers`` at
    a time.
    """
    prefix = key or f"ADAPT-{str(estimator.method).upper()}"
    model, params, names = sweep_features(estimator, costs, np.asarray(X_train).shape[1])
    sizes = [float(s) for s in sizes]
    grid = [(float(t), float(p), k) for k in range(len(sizes)) for t in tradeoffs
            for p in p_fulls]
    per_size = tuple({"feature_costs": {n: float(model.cost([n])(s)) for n in names}}
                     for s in sizes)
    sweep = _AdaptSweep(estimator, X_train, y_train, X_eval, y_eval,
                        tuple(_check_thresholds(thresholds)),
                        _with_high_cost_proba(estimator, X_train, y_train, params), per_size)
    fitted = _run(sweep, grid, executor)
    out = []
    for k, s in enumerate(sizes):
        points = [p for (_, _, size), pts in zip(grid, fitted, strict=True) if size == k
                  for p in pts]
        kept = efficient_frontier(points) if frontier else points
        for p in kept:
            out.append(
                p.model.to_candidate(
                    X_eval,
                    y_eval,
                    model,
                    f"{prefix}(tradeoff={p.tradeoff:g}, p_full={p.p_full:g}, "
                    f"threshold={p.threshold:.4g}, n={s:g})",
                    cost=cost,
                    learner=learner,
                )
            )
    return out


#: The ``p_full`` grid of a build's ADAPT sweep (spec 2.6: dense around (0.4, 0.8), pitfall 1).
BUILD_P_FULLS = (0.2, 0.4, 0.6, 0.8)


def sweep_adapt_build(
    prototype: Any,
    tradeoffs: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    cost_model: CostModel | Mapping[str, Any],
    *,
    sizes: Iterable[float] = (1.0,),
    key: str | None = None,
    learner: str | None = "adapt",
    cost: str = "expected",
    p_fulls: Iterable[float] = BUILD_P_FULLS,
    thresholds: Iterable[float | str] = (0.0, "quantile"),
    executor: Any = None,
) -> list[Candidate]:
    """The learner registry's sweep for ADAPT (a build config gives only trade-offs).

    A prototype with ``fit_high_cost=True`` (a build names an unfitted high-cost model) gets
    its high-cost model fitted once on the training rows; then
    :func:`sweep_adapt_candidates` runs ``tradeoffs x p_fulls`` with the routing
    ``thresholds`` (through ``executor``) and keeps each size's frontier.

    Runtime complexity: one high-cost fit plus those of :func:`sweep_adapt_candidates`.
    """
    proto = clone(prototype)
    if proto.fit_high_cost:
        X_train = np.asarray(X_train, dtype=np.float64)
        cols = proto.high_cost_columns
        cols = list(range(X_train.shape[1])) if cols is None else [int(c) for c in cols]
        fitted = clone(proto.high_cost_model).fit(X_train[:, cols], y_train)
        proto.set_params(high_cost_model=fitted, fit_high_cost=False)
    return sweep_adapt_candidates(
        proto,
        tradeoffs,
        p_fulls,
        X_train,
        y_train,
        X_eval,
        y_eval,
        cost_model,
        sizes=sizes,
        key=key,
        learner=learner,
        cost=cost,
        thresholds=thresholds,
        executor=executor,
    )
