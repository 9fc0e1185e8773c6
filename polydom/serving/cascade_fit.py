"""Fitting cascades from an index's skyline on held-out data, and indexing them as candidates.

:func:`fit_cascade` takes the skyline models of a size range, calibrates each on held-out rows
(temperature scaling), and searches stage sequences and confidence thresholds for the most
accurate cascade whose expected cost stays within a mean budget per item over the range.
:func:`cascade_candidates` does it for many budgets and ranges, :func:`with_cascades` adds the
result to an index so that lookups return a cascade where it is the best choice.

Accuracy of a cascade
    The index's candidates carry accuracies estimated on training data (cross-validation),
    while a cascade is measured on the calibration rows.  To put both on one scale, a cascade's
    accuracy is its last stage's index accuracy plus what the cascade loses or gains against
    that last stage on the calibration rows: ``acc_index(last) + acc_cal(cascade) -
    acc_cal(last)`` (a difference estimator: the two differ only on items that stop early),
    where :func:`fit_cascade` measures ``acc_cal(cascade)`` out of fold (thresholds chosen on
    the other folds).  A one-stage cascade is its model, with the model's accuracy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_budget, check_size
from polydom.errors import InvalidArgumentError
from polydom.index.built import Index
from polydom.index.lazy_payload import resolve_payload
from polydom.index.polydom_index import PolyDomIndex
from polydom.serving.cascade import Cascade, calibrated_proba

__all__ = [
    "StageScores",
    "cascade_candidates",
    "cascade_from_stages",
    "fit_cascade",
    "fit_temperature",
    "score_stages",
    "with_cascades",
]

#: Largest number of threshold combinations evaluated per stage sequence.
MAX_COMBINATIONS = 1 << 15
#: Sizes at which the budget is checked inside a range (besides its ends), before the exact
#: check of the chosen cascade's expected cost curve.
_CHECK_POINTS = 9
#: How many of the best stage sequences (by calibration accuracy) get the out-of-fold estimate.
_HONEST_TOP = 5


def fit_temperature(proba: np.ndarray, y_index: np.ndarray) -> float:
    """The temperature ``T`` minimising the log-loss of ``softmax(log p / T)`` on rows.

    ``y_index`` holds each row's true class as a column of ``proba`` (-1: a class the model
    never saw; such rows are left out).  ``T`` is searched in ``[0.05, 20]`` (bounded
    Brent on ``log T``); 1 when no row is usable.

    Runtime complexity: O(rows * classes) per evaluation, about 30 evaluations.

    >>> p = np.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.1, 0.9]])
    >>> round(fit_temperature(p, np.array([0, 1, 0, 1])), 1) > 1.0   # overconfident: soften
    True
    """
    ok = y_index >= 0
    if not ok.any():
        return 1.0
    logp = np.log(np.maximum(np.asarray(proba, dtype=np.float64)[ok], 1e-12))
    rows = np.arange(int(ok.sum()))
    y = y_index[ok]

    def loss(log_t: float) -> float:
        z = logp / math.exp(log_t)
        z -= z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[rows, y]))

    res = minimize_scalar(loss, bounds=(math.log(0.05), math.log(20.0)), method="bounded",
                          options={"xatol": 1e-4})
    return float(math.exp(res.x))


@dataclass(frozen=True)
class StageScores:
    """One skyline model scored on the calibration rows.

    Attributes
    ----------
    candidate : Candidate
    columns : list of int
        Columns of a full row the model takes.
    atoms : tuple of str
        The atomic features it needs.
    temperature : float
        Its calibration temperature.
    confidence : ndarray
        Calibrated top probability per calibration row.
    correct : ndarray of bool
        Whether its prediction is right, per row.
    """

    candidate: Candidate
    columns: list
    atoms: tuple
    temperature: float
    confidence: np.ndarray
    correct: np.ndarray


def _atoms(candidate: Candidate) -> tuple:
    """The atoms a stage computes: every atom its candidate may need (probability > 0)."""
    return tuple(sorted(a for a, p in candidate.needs.items() if p > 0.0))


def _stage_name(candidate: Candidate) -> str:
    return "+".join(sorted(candidate.features)) or str(candidate.key)


def _check_rows(index: Index, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
    y = np.asarray(y)
    width = index.n_columns
    if X.ndim != 2 or X.shape[1] != width:
        raise InvalidArgumentError(
            f"X_cal must have shape (rows, {width}) (full rows), got {X.shape}")
    if X.shape[0] == 0:
        raise InvalidArgumentError("X_cal must not be empty")
    if y.shape != (X.shape[0],):
        raise InvalidArgumentError(
            f"y_cal must have one label per row ({X.shape[0]}), got {y.shape}")
    return X, y


def score_stages(
    index: Index, candidates: Iterable[Candidate], X_cal: Any, y_cal: Any
) -> list[StageScores]:
    """Calibrate and score each candidate's model on held-out full rows.

    Runtime complexity: one ``predict_proba`` and ``predict`` per candidate over the rows,
    plus the temperature fit.

    Raises
    ------
    ValueError
        If ``X_cal`` is not full rows of the index, or a candidate has no model with
        ``predict_proba`` and ``classes_``.
    """
    X, y = _check_rows(index, X_cal, y_cal)
    out = []
    for cand in candidates:
        model = resolve_payload(cand.payload)
        if model is None or not callable(getattr(model, "predict_proba", None)):
            raise InvalidArgumentError(
                f"candidate {cand.key!r} has no model with predict_proba to cascade")
        classes = np.asarray(getattr(model, "classes_", []))
        cols = index.model_columns(cand.needs)
        Xk = X[:, cols]
        proba = np.asarray(model.predict_proba(Xk), dtype=np.float64)
        if classes.size != proba.shape[1]:
            raise InvalidArgumentError(
                f"model of candidate {cand.key!r} has no classes_ matching its "
                "predict_proba columns")
        lookup = {c: i for i, c in enumerate(classes.tolist())}
        y_index = np.array([lookup.get(v, -1) for v in y.tolist()], dtype=np.intp)
        t = fit_temperature(proba, y_index)
        conf = calibrated_proba(proba, t).max(axis=1)
        correct = np.asarray(model.predict(Xk)) == y
        out.append(StageScores(cand, cols, _atoms(cand), t, conf, correct))
    return out


def _range(index: Index, sizes: Any) -> tuple[float, float]:
    lo, hi = index.table.domain
    if isinstance(sizes, Sequence) or isinstance(sizes, np.ndarray):
        if len(sizes) != 2:
            raise InvalidArgumentError(
                f"sizes must be a size or a range (n_lo, n_hi), got {sizes!r}")
        n_lo, n_hi = check_size(sizes[0], lo, hi), check_size(sizes[1], lo, hi)
        if n_hi < n_lo:
            raise InvalidArgumentError(f"sizes must be a range with n_lo <= n_hi, got {sizes!r}")
        return n_lo, n_hi
    n = check_size(sizes, lo, hi)
    return n, n


def _pool(index: Index, n_lo: float, n_hi: float) -> list[Candidate]:
    """Skyline candidates of every range meeting [n_lo, n_hi] that can be cascaded."""
    table = index.table
    seen: dict[Any, Candidate] = {}
    for (lo, hi), sky in zip(table.ranges, table.skylines, strict=True):
        if lo <= n_hi and (n_lo < hi or (n_lo == hi == table.domain[1])):
            for c in sky:
                model = resolve_payload(c.payload)
                if model is not None and callable(getattr(model, "predict_proba", None)):
                    seen.setdefault(c.key, c)
    return sorted(seen.values(), key=lambda c: (float(c.cost(n_hi)), -c.accuracy))


def _threshold_grid(conf: np.ndarray, grid: int) -> np.ndarray:
    values = np.unique(conf)
    if values.size > grid:
        values = np.unique(np.quantile(conf, np.linspace(0.0, 1.0, grid), method="lower"))
    return values


@dataclass
class _Choice:
    score: float
    accuracy: float
    cost: np.ndarray
    stages: tuple
    thresholds: tuple


def _search_sequence(
    conf: np.ndarray, correct: np.ndarray, deltas: np.ndarray, budget: float, grid: int,
    z: float,
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The best feasible thresholds of one stage sequence on rows, by counting in bins.

    ``conf`` and ``correct`` are stages x rows, ``deltas`` stages x check sizes (the cost of
    the atoms each stage adds).  Returns ``(accuracy, mean cost per check size,
    thresholds)`` of the most accurate choice (ties: lower cost at the last check size)
    whose mean cost plus ``z`` standard errors fits ``budget`` at every check size and whose
    last stage is reached by some row; accuracy is ``-inf`` when none is feasible.

    Method.  A row stops at non-final stage ``k`` under threshold ``grids[k][j]`` exactly
    when its bin ``b_k`` (how many of the stage's grid values are ``<=`` its confidence)
    exceeds ``j``; so the rows reaching stage ``k`` under thresholds ``(j_1, ..., j_{k-1})``
    are those with ``b_i <= j_i`` for every earlier stage.  One (L-1)-dimensional histogram
    of the rows' bins per weight (rows, and each stage's correct rows), cumulated along every
    axis, gives every stage's reach count and correct count for every threshold combination
    at once: accuracy ``sum_k (R_k[c_k] - R_{k+1}[c_k]) + R_L[c_L]`` and the reach fractions
    that give the mean cost and its second moment (each row pays the cumulative cost of the
    stages it reached).  Same numbers as counting row by row.

    Runtime complexity: O(L * (N + G**(L-1))) for L stages, N rows and G thresholds per
    stage (the combinations are capped by :data:`MAX_COMBINATIONS`).
    """
    L, n = conf.shape
    per = min(grid, max(2, int(MAX_COMBINATIONS ** (1.0 / (L - 1))))) if L > 1 else 1
    grids = [_threshold_grid(conf[k], per) for k in range(L - 1)]
    sizes = [g.size for g in grids]
    cum_delta = np.cumsum(deltas, axis=0)
    if L == 1:
        mean = deltas[0][None, :]
        acc = np.array([correct[0].mean()])
        spread = np.zeros_like(mean)
        last_reached = np.array([n > 0])
    else:
        bins = [np.searchsorted(grids[k], conf[k], side="right") for k in range(L - 1)]
        flat = np.ravel_multi_index(bins, [s + 1 for s in sizes])
        shape = tuple(s + 1 for s in sizes)
        cells = int(np.prod(shape))

        def cumulated(weights: np.ndarray | None) -> np.ndarray:
            h = np.bincount(flat, weights=weights, minlength=cells).reshape(shape)
            for axis in range(L - 1):
                h = np.cumsum(h, axis=axis)
            return h

        def reach(table: np.ndarray, k: int) -> np.ndarray:
            # Rows reaching stage k (0-based): b_i <= j_i for i < k, any bin after.
            index = tuple(slice(0, sizes[i]) if i < k else slice(sizes[i], sizes[i] + 1)
                          for i in range(L - 1))
            return table[index]

        count = cumulated(None)
        frac = [reach(count, k) / n for k in range(L)]
        acc = np.zeros(tuple(sizes))
        for k in range(L):
            right = cumulated(correct[k].astype(np.float64))
            acc = acc + reach(right, k)
            if k < L - 1:
                acc = acc - reach(right, k + 1)
        acc = acc.reshape(-1) / n
        mean = np.zeros((acc.size, deltas.shape[1]))
        square = np.zeros_like(mean)
        prev = np.zeros(deltas.shape[1])
        for k in range(L):
            f = np.broadcast_to(frac[k], tuple(sizes)).reshape(-1, 1)
            mean += f * deltas[k][None, :]
            square += f * (cum_delta[k] ** 2 - prev ** 2)[None, :]
            prev = cum_delta[k]
        spread = np.sqrt(np.maximum(square - mean ** 2, 0.0) / n)
        last_reached = np.broadcast_to(frac[L - 1], tuple(sizes)).reshape(-1) > 0
    feasible = np.all(mean + z * spread <= budget * (1 + 1e-12), axis=1) & last_reached
    if not feasible.any():
        return -np.inf, mean[0], ()
    j = int(np.lexsort((mean[:, -1], -np.where(feasible, acc, -np.inf)))[0])
    idx = np.unravel_index(j, sizes) if grids else ()
    thresholds = tuple(float(grids[k][i]) for k, i in enumerate(idx)) + (0.0,)
    return float(acc[j]), mean[j], thresholds


def _exits(conf: np.ndarray, thresholds: tuple) -> np.ndarray:
    """Exit stage of each row (stages x rows confidences) under ``thresholds``."""
    L, n = conf.shape
    out = np.full(n, L - 1, dtype=np.intp)
    alive = np.ones(n, dtype=bool)
    for k in range(L - 1):
        stop = alive & (conf[k] >= thresholds[k])
        out[stop] = k
        alive &= ~stop
    return out


def _out_of_fold_accuracy(
    conf: np.ndarray, correct: np.ndarray, deltas: np.ndarray, budget: float, grid: int,
    z: float, folds: int,
) -> float:
    """Accuracy of choosing thresholds on ``folds - 1`` folds, measured on the held fold."""
    L, n = conf.shape
    if L == 1 or n < 2 * folds:
        return float(correct[-1].mean())
    fold = np.arange(n) % folds
    right = 0
    for f in range(folds):
        fit, held = fold != f, fold == f
        acc, _, thresholds = _search_sequence(conf[:, fit], correct[:, fit], deltas, budget,
                                              grid, z)
        if not thresholds:
            thresholds = (math.inf,) * (L - 1) + (0.0,)
        exits = _exits(conf[:, held], thresholds)
        right += int(correct[:, held][exits, np.arange(int(held.sum()))].sum())
    return right / n


def fit_cascade(
    index: Index,
    X_cal: Any,
    y_cal: Any,
    budget: float,
    sizes: Any,
    max_stages: int = 3,
    grid: int = 64,
    margin: float = 1.0,
    folds: int = 5,
    key: Any = None,
    scores: list[StageScores] | None = None,
) -> Candidate:
    """The most accurate cascade of skyline models whose mean cost fits ``budget`` on a range.

    Method.  The pool is the skyline of every index range meeting ``sizes``, in cost order
    (models with ``predict_proba``).  Each model is calibrated on the held-out rows by
    temperature scaling (one temperature per model, fitted by minimising the log-loss on
    ``X_cal``; not ``CalibratedClassifierCV``: one parameter per stage is robust on a few
    hundred rows, keeps each model's argmax, and stores as a number).  For every increasing
    sequence of at most ``max_stages`` pool models (cost order kept) and every combination of
    thresholds of its non-final stages, the exit stage of each calibration row, the accuracy,
    the mean cost and its standard error (each row pays the atoms it computed, each once)
    are computed by vectorised counting.  A stage's thresholds range over the distinct
    calibrated confidences on the calibration rows (exact: every achievable split of the rows)
    or, when there are more, over ``grid`` quantiles of them (fewer when a sequence's
    combinations would exceed :data:`MAX_COMBINATIONS`).  A choice is feasible when its mean
    cost plus ``margin`` standard errors is within ``budget`` at both ends of the range and at
    :data:`_CHECK_POINTS` sizes inside, and its last stage is reached.  The best choice per
    sequence is ranked by accuracy (on the index's scale, see the module docstring); the top
    :data:`_HONEST_TOP` sequences are re-scored by ``folds``-fold cross-validation of the
    threshold choice (thresholds chosen on the other folds, accuracy measured on the held
    fold), which removes most of the optimism of choosing and scoring on the same rows, and
    the best of them wins (ties: lower cost at ``n_hi``, then fewer stages).  Its expected
    cost curve is finally checked exactly on the whole range (:meth:`CostCurve.le`); a choice
    failing that falls back to the next.

    Runtime complexity: O(P**L * N * G**(L-1)) for a pool of P models, L = ``max_stages``,
    N calibration rows and G thresholds per stage (the sum over sequences of one vectorised
    pass each), plus ``_HONEST_TOP * folds`` passes and one prediction per pool model over
    the rows.

    Parameters
    ----------
    index : polydom.Index
        A built index whose candidates' payloads are fitted classifiers.
    X_cal, y_cal : array-like
        Held-out full rows (every feature's columns, as in training) and labels, not used to
        train the models.
    budget : float
        Mean cost per item allowed, at every size of the range.
    sizes : float or (float, float)
        The size (or range of sizes) the cascade is for; inside the index's domain, finite.
    max_stages : int, default 3
    grid : int, default 64
        Most thresholds tried per stage.
    margin : float, default 1.0
        Standard errors of the mean cost kept under the budget (0: the plain mean).
    folds : int, default 5
        Folds of the cross-validated accuracy (1: report the calibration accuracy).
    key : hashable, optional
        Key of the returned candidate (default ``cascade[stage@threshold > ... > stage]``).
    scores : list of StageScores, optional
        Pool models already scored on these rows (:func:`score_stages`), to reuse.

    Returns
    -------
    Candidate
        Its payload is the :class:`Cascade`, its cost the expected cost curve (each atom
        weighted by the fraction of calibration rows that computed it), its needs those
        fractions (``{atom: P(computed)}``), its features the union of the stages' features,
        its learner ``"cascade"``.

    Raises
    ------
    ValueError
        Naming the argument: a negative or NaN budget, or one below the cheapest model's cost
        on the range; sizes outside the domain or infinite; an empty ``X_cal``; no model
        with ``predict_proba``; ``max_stages``, ``grid`` or ``folds`` below 1; a negative
        ``margin``.
    """
    budget = check_budget(budget)
    n_lo, n_hi = _range(index, sizes)
    if not math.isfinite(n_hi):
        raise InvalidArgumentError(f"sizes must be finite, got {sizes!r}")
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise InvalidArgumentError(f"margin must be a finite number >= 0, got {margin!r}")
    for name, value in (("max_stages", max_stages), ("grid", grid), ("folds", folds)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    pool = _pool(index, n_lo, n_hi)
    if not pool:
        raise InvalidArgumentError(
            f"no skyline model with predict_proba on sizes [{n_lo!r}, {n_hi!r}]")
    checks = np.unique(np.concatenate([[n_lo, n_hi], np.linspace(n_lo, n_hi, _CHECK_POINTS)]))
    cheapest = min(float(np.max(c.cost(checks))) for c in pool)
    if budget < cheapest * (1 - 1e-12):
        raise InvalidArgumentError(
            f"budget {budget!r} is below the cheapest model's cost {cheapest:g} on sizes "
            f"[{n_lo:g}, {n_hi:g}]"
        )
    if scores is None:
        scores = score_stages(index, pool, X_cal, y_cal)
    else:
        have = {s.candidate.key: s for s in scores}
        scores = [have[c.key] if c.key in have else score_stages(index, [c], X_cal, y_cal)[0]
                  for c in pool]
    atom_curves = index.costs
    atoms = sorted({a for s in scores for a in s.atoms})
    atom_cost = {a: np.asarray(atom_curves[a](checks), dtype=np.float64) for a in atoms}
    conf = np.array([s.confidence for s in scores])
    correct = np.array([s.correct for s in scores])
    ranked: list[_Choice] = []
    for length in range(1, min(max_stages, len(scores)) + 1):
        for seq in itertools.combinations(range(len(scores)), length):
            deltas = _deltas([scores[i].atoms for i in seq], atom_cost, checks.size)
            acc, cost, thresholds = _search_sequence(conf[list(seq)], correct[list(seq)],
                                                     deltas, budget, grid, margin)
            if thresholds:
                anchor = scores[seq[-1]].candidate.accuracy - correct[seq[-1]].mean()
                ranked.append(_Choice(acc + anchor, acc + anchor, cost, seq, thresholds))
    ranked.sort(key=lambda c: (-c.score, float(c.cost[-1]), len(c.stages)))
    if folds > 1:
        head = ranked[:_HONEST_TOP]
        for choice in head:
            seq = list(choice.stages)
            deltas = _deltas([scores[i].atoms for i in seq], atom_cost, checks.size)
            honest = _out_of_fold_accuracy(conf[seq], correct[seq], deltas, budget, grid,
                                           margin, folds)
            choice.accuracy = honest + scores[seq[-1]].candidate.accuracy - correct[seq[-1]].mean()
        head.sort(key=lambda c: (-c.accuracy, float(c.cost[-1]), len(c.stages)))
        ranked = head + ranked[_HONEST_TOP:]
    limit = CostCurve([budget])
    for choice in ranked:
        cascade = _make_cascade(index, [scores[i] for i in choice.stages], choice.thresholds)
        curve = cascade.expected_cost()
        if curve.le(limit, n_lo, n_hi):
            accuracy = float(min(1.0, max(0.0, choice.accuracy)))
            return _as_candidate(cascade, curve, accuracy, key,
                                 [scores[i] for i in choice.stages])
    raise InvalidArgumentError(
          # pragma: no cover - a single cheapest stage always fits
        f"budget {budget!r}: no cascade fits on sizes [{n_lo:g}, {n_hi:g}]"
    )


def _deltas(stage_atoms: list[tuple], atom_cost: dict, width: int) -> np.ndarray:
    """Cost (at each check size) of the atoms each stage adds to those computed before it."""
    seen: set[str] = set()
    out = np.zeros((len(stage_atoms), width))
    for k, atoms in enumerate(stage_atoms):
        for a in atoms:
            if a not in seen:
                out[k] += atom_cost[a]
                seen.add(a)
    return out


def cascade_from_stages(
    index: Index,
    stages: Sequence[Candidate],
    thresholds: Sequence[float],
    X_cal: Any,
    y_cal: Any,
    key: Any = None,
) -> Candidate:
    """A cascade of given candidates and thresholds, calibrated and measured on held-out rows.

    No search: the stages (cheapest first, as given) and their thresholds are taken as they
    are (the last stage's threshold is ignored); each stage is calibrated by temperature
    scaling on ``X_cal`` and the reach of each stage is measured there.  The candidate's
    accuracy is the cascade's accuracy on the rows, put on the index's scale as in
    :func:`fit_cascade` (for one stage: the candidate's own accuracy).

    Runtime complexity: one prediction per stage over the rows.

    Raises
    ------
    ValueError
        If ``stages`` is empty, ``thresholds`` has another length, or as
        :func:`score_stages`.
    """
    stages = list(stages)
    thresholds = [float(t) for t in thresholds]
    if not stages:
        raise InvalidArgumentError("stages must not be empty")
    if len(thresholds) != len(stages):
        raise InvalidArgumentError(
            f"thresholds must have one value per stage ({len(stages)}), "
            f"got {len(thresholds)}")
    scores = score_stages(index, stages, X_cal, y_cal)
    thresholds[-1] = 0.0
    conf = np.array([s.confidence for s in scores])
    correct = np.array([s.correct for s in scores])
    exits = _exits(conf, tuple(thresholds))
    acc = float(correct[exits, np.arange(exits.size)].mean())
    accuracy = acc + stages[-1].accuracy - float(correct[-1].mean())
    cascade = _make_cascade(index, scores, tuple(thresholds))
    return _as_candidate(cascade, cascade.expected_cost(), min(1.0, max(0.0, accuracy)), key,
                         scores)


def _make_cascade(index: Index, stages: list[StageScores], thresholds: tuple) -> Cascade:
    input_atoms = sorted({a for s in stages for a in s.atoms})
    input_columns = index.model_columns(input_atoms)
    where = {col: i for i, col in enumerate(input_columns)}
    reach = []
    alive = np.ones(stages[0].confidence.size, dtype=bool)
    for s, t in zip(stages, thresholds, strict=True):
        reach.append(float(alive.mean()))
        alive = alive & (s.confidence < t)
    return Cascade(
        models=[resolve_payload(s.candidate.payload) for s in stages],
        atoms=[s.atoms for s in stages],
        positions=[[where[c] for c in s.columns] for s in stages],
        input_columns=input_columns,
        thresholds=thresholds,
        temperatures=[s.temperature for s in stages],
        atom_costs={a: index.costs[a] for a in input_atoms},
        stage_keys=[_stage_name(s.candidate) for s in stages],
        reach=reach,
    )


def _as_candidate(
    cascade: Cascade, curve: CostCurve, accuracy: float, key: Any, stages: list[StageScores]
) -> Candidate:
    if key is None:
        parts = [
            name if i == cascade.n_stages - 1 else f"{name}@{t:.4g}"
            for i, (name, t) in enumerate(zip(cascade.stage_keys, cascade.thresholds,
                                              strict=True))
        ]
        key = "cascade[" + " > ".join(parts) + "]"
    features = frozenset().union(*(s.candidate.features for s in stages))
    return Candidate(key, accuracy, curve, features, cascade,
                     needs=cascade.atom_probabilities(), learner="cascade")


def cascade_candidates(
    index: Index,
    X_cal: Any,
    y_cal: Any,
    budgets: Iterable[float],
    ranges: Iterable[tuple[float, float]] | None = None,
    max_stages: int = 3,
    grid: int = 64,
    margin: float = 1.0,
    folds: int = 5,
) -> list[Candidate]:
    """Cascades for every (range, budget): the multi-stage ones, each key once.

    ``ranges`` defaults to the index's ranges (the last one must be finite).  A budget below
    a range's cheapest model is skipped there; a cascade that is a single model is left out
    (that model is a candidate already).

    Other arguments as :func:`fit_cascade`.

    Runtime complexity: ranges * budgets calls of :func:`fit_cascade` (the pool models are
    scored once per range).
    """
    budgets = [check_budget(b) for b in budgets]
    ranges = list(index.table.ranges if ranges is None else ranges)
    out: dict[Any, Candidate] = {}
    for n_lo, n_hi in ranges:
        pool = _pool(index, n_lo, n_hi)
        if not pool:
            continue
        scores = score_stages(index, pool, X_cal, y_cal)
        cheapest = min(float(np.max(c.cost(np.array([n_lo, n_hi])))) for c in pool)
        for b in budgets:
            if b < cheapest:
                continue
            try:
                cand = fit_cascade(index, X_cal, y_cal, b, (n_lo, n_hi), max_stages, grid,
                                   margin, folds, scores=scores)
            except ValueError as exc:
                if "below the cheapest" in str(exc):
                    continue
                raise
            if isinstance(cand.payload, Cascade) and cand.payload.n_stages > 1:
                out.setdefault(cand.key, cand)
    return list(out.values())


def with_cascades(index: Index, cascades: Iterable[Candidate]) -> Index:
    """A new index over the index's candidates plus ``cascades`` (same domain and costs).

    Runtime complexity: that of :meth:`PolyDomIndex.build` over all the candidates.

    Raises
    ------
    ValueError
        If a cascade's key is already a candidate key (as :meth:`PolyDomIndex.build`).
    """
    cascades = list(cascades)
    n_min, n_max = index.table.domain
    table = PolyDomIndex.build([*index.candidates, *cascades], n_min=n_min, n_max=n_max)
    info = dict(index.info)
    info["cascades"] = len(cascades)
    return Index(table, index.cost_model, info=info)
