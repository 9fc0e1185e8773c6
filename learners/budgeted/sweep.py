"""sweep: any budgeted learner over its trade-off grid, scored on the build's evaluation
protocol, as index candidates (the one sweep of every budgeted learner).

For every setting of the grid (a trade-off, and whatever else the learner's
:meth:`~learners.budgeted.contract.BudgetedClassifierMixin.sweep_settings` adds, such as
ADAPT's ``p_full``) and every reference size ``s`` (training costs ``c_f(s)``), the learner is
fitted on the training rows of each split of the protocol and scored on its evaluation
rows; the candidate's accuracy is the mean over the splits, with its standard error and the
per-split scores, exactly as the lattice's :class:`learners.SklearnLearner` scores a feature
set on the same protocol.  The served model is then refitted on all rows (unless the
protocol says ``refit=False``).

Accuracy needs labels, so it is estimated out of fold; cost does not, so it is measured on
the model that is served: the candidate's *needs* (the probability that each atom is
computed) and split evaluations are the served model's own usage on every row of ``X`` (its
training rows; the fold models may read other features than the refit, and their usage
would describe a model nobody serves).  When the scored model is the one served (held-out
rows, or ``refit=False``), its usage on the rows it was scored on.

What a learner shares between the settings of one split (the DAG's classifier bank, ADAPT's
high-cost model) is fitted once per split from its training rows
(:meth:`~learners.budgeted.contract.BudgetedClassifierMixin.sweep_shared`), never from rows
it is scored on; one fit may give several models (ADAPT's routing thresholds,
:meth:`~learners.budgeted.contract.BudgetedClassifierMixin.sweep_variants`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from lattice.executor import map_in_order
from learners.budgeted.contract import check_budgeted, sweep_features
from learners.evaluation import EvaluationError, EvaluationProtocol, FoldEstimate
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["sweep"]


def sweep(
    prototype: Any,
    tradeoffs: Iterable[float],
    X: np.ndarray,
    y: np.ndarray,
    cost_model: CostModel | Mapping[str, Any],
    *,
    evaluation: EvaluationProtocol | tuple[np.ndarray, np.ndarray] | None = None,
    sizes: Iterable[float] = (1.0,),
    cost: str = "expected",
    key: str | None = None,
    learner: str | None = None,
    split_cost: CostCurve | str | float | None = None,
    executor: Any = None,
    **options: Any,
) -> list[Candidate]:
    """Fit ``prototype`` over its grid and reference sizes; one Candidate per model.

    Parameters
    ----------
    prototype : budgeted classifier
        Satisfies the budgeted-learner contract
        (:func:`learners.budgeted.contract.check_budgeted`).  Its features
        (``feature_groups`` names) must be atoms or bundles of ``cost_model``; without
        ``feature_groups``, the atoms of a CostModel whose columns partition the columns
        of ``X``, else ``"x{j}"`` per column (:func:`~learners.budgeted.contract.sweep_features`).
    tradeoffs : iterable of float
        The accuracy/cost trade-offs.
    X, y : arrays
        The rows the protocol splits (all columns), or the training rows when
        ``evaluation`` is a held-out ``(X_eval, y_eval)``.
    cost_model : polydom.CostModel or mapping of str to CostCurve or str
        Training costs of a feature are ``cost_model.cost([feature])(s)``; candidates'
        curves come from their needs.
    evaluation : EvaluationProtocol or tuple (X_eval, y_eval), optional
        How every setting is scored: the build's protocol (default
        ``EvaluationProtocol()``, 5 stratified folds, seed 0), or held-out rows (one split;
        the model fitted on ``X`` is the one served).
    sizes : iterable of float, default (1.0,)
        Reference sizes at which the training costs are taken.
    cost : {"expected", "worst"}
        Candidates' cost: the served model's expected needs (the share of the rows of
        ``X`` for which it computes each atom), or every atom it may use at probability 1.
    key : str, optional
        Key prefix (default: the learner name).
    learner : str, optional
        Learner name recorded on every candidate (default: the prototype's
        ``learner_name``, its name in :mod:`learners.registry`).
    split_cost : CostCurve or str or float, optional
        Per-row cost of one split evaluation (learners with ``split_evaluations``): added
        to the candidates' curves (the served model's mean over the rows of ``X``, or the
        maximum with ``"worst"``), and
        set as the training parameter ``split_cost`` at each reference size.
    executor : None, str, lattice.executor.Executor or distributed.Client
        Where the fits run (:func:`lattice.make_executor`): one task per (reference size,
        setting, split); the data shipped to each worker once.  The candidates are the
        same, in the same order, with every executor.
    **options
        The learner's own sweep options (its ``sweep_options``: ADAPT's ``p_fulls`` and
        ``thresholds``, ...), and ``frontier`` (keep, per reference size, only candidates
        that no other candidate of the sweep beats at that size).

    Returns
    -------
    list of Candidate
        Keys ``"{key}(tradeoff=..., [other settings, ]n=...)"``, sizes outer, settings
        then variants inner; payloads are the served models
        (:meth:`~learners.budgeted.contract.BudgetedClassifierMixin.subset_model`).

    Runtime complexity: ``len(sizes) * len(settings) * (splits + refit)`` fits (plus one
    shared fit per split for learners that share one), ``workers`` at a time.

    Raises
    ------
    TypeError
        If ``prototype`` does not satisfy the contract (naming what it lacks).
    ValueError
        On an unknown option, a bad ``cost``, a feature the cost model lacks, or rows the
        protocol cannot split.
    """
    check_budgeted(prototype)
    if cost not in ("expected", "worst"):
        raise InvalidArgumentError(f"cost must be 'expected' or 'worst', got {cost!r}")
    opts = _options(prototype, options)
    frontier = bool(opts.pop("frontier"))
    name = learner or prototype.learner_name
    prefix = key or name
    X, y = np.asarray(X), np.asarray(y)
    model, params, names = sweep_features(prototype, cost_model, X.shape[1])
    splits, final_rows, Xe, ye = _splits(evaluation, X, y)
    repeats = evaluation.repeats if isinstance(evaluation, EvaluationProtocol) else 1
    settings = prototype.sweep_settings([float(t) for t in tradeoffs], **opts)
    sizes = [float(s) for s in sizes]
    if not settings or not sizes:
        return []
    per_size = [_size_params(model, names, params, s, split_cost) for s in sizes]
    fits = [*splits, (final_rows, None)] if final_rows is not None else list(splits)
    first = {**per_size[0], **settings[0]}
    shared = [prototype.sweep_shared(X[train], y[train], first, **opts) for train, _ in fits]
    job = _SweepJob(prototype, X, y, Xe, ye, tuple(fits), tuple(shared), tuple(per_size),
                    tuple(settings), opts, split_cost is not None)
    grid = [(k, j, f) for k in range(len(sizes)) for j in range(len(settings))
            for f in range(len(fits))]
    results = dict(zip(grid, map_in_order(executor, job, _fit_point, grid), strict=True))
    served = len(fits) - 1  # the refit on all rows, or the one held-out split's model
    out = []
    for k, s in enumerate(sizes):
        made = []
        for j, setting in enumerate(settings):
            for v, (label, final_model) in enumerate(results[(k, j, served)].models):
                scored = [results[(k, j, f)].scores[v] for f in range(len(splits))]
                costed = results[(k, j, served)].scores[v]
                label_text = ", ".join(f"{p}={_text(x)}" for p, x in {**setting,
                                                                      **label}.items())
                made.append(_candidate(
                    final_model, scored, costed, model, f"{prefix}({label_text}, n={s:g})",
                    cost, split_cost, name, repeats))
        out.extend(_frontier(made, s) if frontier else made)
    return out


def _options(prototype: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The learner's sweep options with ``options`` applied (unknown ones refused)."""
    defaults = {"frontier": False, **dict(prototype.sweep_options)}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise InvalidArgumentError(
            f"unknown sweep option(s) {unknown} for learner "
            f"{prototype.learner_name!r}; known: {sorted(defaults)}")
    return {**defaults, **options}


def _splits(
    evaluation: Any, X: np.ndarray, y: np.ndarray
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray | None, Any, Any]:
    """Scored splits as (training rows of X, evaluation rows: of X, or of the held-out
    ``X_eval`` when one is given), the rows of the served refit (None: the scored split's
    model is served), and the held-out ``X_eval, y_eval`` (None with a protocol)."""
    every = np.arange(len(y))
    if isinstance(evaluation, tuple):
        if len(evaluation) != 2:
            raise EvaluationError(f"evaluation as a tuple must be (X_eval, y_eval), got "
                                  f"{len(evaluation)} items")
        Xe, ye = np.asarray(evaluation[0]), np.asarray(evaluation[1])
        if Xe.ndim != 2 or Xe.shape[1] != X.shape[1] or ye.shape != (Xe.shape[0],):
            raise EvaluationError(f"evaluation rows must be X_eval (rows, {X.shape[1]}) and "
                                  f"y_eval (rows,), got {Xe.shape} and {ye.shape}")
        return [(every, np.arange(len(ye)))], None, Xe, ye
    protocol = EvaluationProtocol() if evaluation is None else evaluation
    if not isinstance(protocol, EvaluationProtocol):
        raise ArgumentTypeError(
            f"evaluation must be an EvaluationProtocol or (X_eval, y_eval), got "
            f"{type(evaluation).__name__}")
    splits = protocol.splits(y)
    return splits, (every if protocol.refit else None), None, None


def _size_params(model: CostModel, names: list[str], params: dict[str, Any], s: float,
                 split_cost: Any) -> dict[str, Any]:
    """Parameters of every fit at reference size ``s``: training costs at ``s``."""
    out = dict(params)
    out["feature_costs"] = {n: float(model.cost([n])(s)) for n in names}
    if "feature_atoms" in out:  # shared atoms paid once: the atoms' own costs at s
        used = sorted({a for atoms in out["feature_atoms"].values() for a in atoms})
        units = model.units  # atoms, shared steps and the start
        out["atom_costs"] = {a: float(units[a](s)) for a in used}
    if split_cost is not None:
        out["split_cost"] = float(CostCurve.coerce(split_cost)(s))
    return out


@dataclass(frozen=True)
class _SweepJob:
    """What every fit of a sweep shares (shipped to each worker once)."""

    prototype: Any
    X: np.ndarray
    y: np.ndarray
    X_eval: Any
    y_eval: Any
    fits: tuple
    shared: tuple
    per_size: tuple
    settings: tuple
    options: dict
    splits_cost: bool


@dataclass(frozen=True)
class _Score:
    """One model scored on one split's evaluation rows."""

    accuracy: float
    rows: int
    usage: np.ndarray
    split_evaluations: np.ndarray | None


@dataclass(frozen=True)
class _Point:
    """One fit: its variants' models (kept for the served fit only) and, per variant, its
    score on the split's evaluation rows (the refit: its usage on its own rows, no score)."""

    models: list
    scores: list


def _fit_point(job: _SweepJob, k: int, j: int, f: int) -> _Point:
    """Fit setting ``j`` at reference size ``k`` on split ``f`` (an executor task)."""
    train, test = job.fits[f]
    est = clone(job.prototype).set_params(**job.shared[f], **job.per_size[k],
                                          **job.settings[j])
    est.fit(job.X[train], job.y[train])
    if test is None:  # the refit on all rows: served, not scored; costed on its rows
        variants = est.sweep_variants(job.X[train], **job.options)
        return _Point(variants, [_usage(model, job.X[train], job.splits_cost, 0.0, 0)
                                 for _, model in variants])
    if job.X_eval is not None:
        Xt, yt = job.X_eval[test], job.y_eval[test]
    else:
        Xt, yt = job.X[test], job.y[test]
    variants = est.sweep_variants(Xt, **job.options)
    scores = [_usage(model, Xt, job.splits_cost, float(np.mean(model.predict(Xt) == yt)),
                     len(yt)) for _, model in variants]
    served = f == len(job.fits) - 1
    return _Point(variants if served else [], scores)


def _usage(model: Any, X: np.ndarray, splits_cost: bool, accuracy: float, rows: int) -> _Score:
    """``model``'s accuracy (given) and its usage and split evaluations on the rows ``X``."""
    splits = (np.asarray(model.split_evaluations(X), dtype=np.float64) if splits_cost
              else None)
    return _Score(accuracy, rows, np.asarray(model.feature_usage(X), dtype=bool), splits)


def _candidate(final: Any, scored: list[_Score], costed: _Score, model: CostModel,
               key: Hashable, cost: str, split_cost: Any, learner: str,
               repeats: int) -> Candidate:
    """The served model as a Candidate: out-of-fold accuracy (``scored``), needs and split
    evaluations of the served model itself (``costed``)."""
    estimate = FoldEstimate.of([s.accuracy for s in scored], [s.rows for s in scored],
                               repeats)
    needs = final.needs_from_usage(costed.usage, model, cost)
    curve = model.expected_cost(needs)
    if split_cost is not None:
        per_row = costed.split_evaluations
        mean = float(per_row.mean() if cost == "expected" else per_row.max(initial=0.0))
        curve = curve + mean * CostCurve.coerce(split_cost)
    columns = model.columns_of(needs) if model.has_columns and model.atoms else None
    return Candidate(key, estimate.mean, curve, final.used_feature_names_,
                     final.subset_model(columns), needs=needs, learner=learner,
                     accuracy_se=estimate.se, fold_scores=estimate.scores)


def _frontier(cands: list[Candidate], size: float) -> list[Candidate]:
    """The candidates no other beats at ``size`` (cost there no higher and accuracy
    higher), by increasing cost with strictly increasing accuracy (ties in cost keep the
    most accurate, ties in both the first).  O(K log K)."""
    order = sorted(range(len(cands)), key=lambda i: (cands[i].cost(size), -cands[i].accuracy,
                                                     i))
    out: list[Candidate] = []
    for i in order:
        if not out or cands[i].accuracy > out[-1].accuracy:
            out.append(cands[i])
    return out


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
