"""ADAPT-LIN: a linear gate and a linear low-cost model by alternating minimisation.

Nan and Saligrama (NIPS 2017), Algorithm 1.  Given the high-cost model's probability of the
true label on every training row, alternate

* the q-step (:func:`learners.budgeted.adapt.qstep.solve_q`, closed form), and
* the (g, f1)-step (OPT2): a logistic regression ``f1`` weighted by ``1 - q`` and a logistic
  regression ``g`` on the soft labels ``q``, coupled by the cost-weighted group norm
  ``gamma * sum_a c_a * ||(g_a, f1_a)||_2`` (group ``a`` = the columns of feature ``a`` in both
  models), solved by FISTA with block soft-thresholding that returns its best iterate, so no
  step ever increases the (OPT) value (spec invariant 12).

The problem is not jointly convex (spec pitfall 2): :func:`fit_adapt_lin` runs several starts
(zero, a logistic-regression ``f1``, and random ones) and keeps the lowest (OPT) value.
Features are the caller's standardised columns; intercepts are not penalised.

Many classes (spec section 2.10).  With ``M > 2`` classes the low-cost model is a softmax:
``wf`` is ``columns x M`` and ``bf`` a vector of ``M`` intercepts, ``y`` holds class indices,
and its loss is the cross-entropy ``-log softmax_y(f1(x))``; the group of feature ``a`` is its
columns' gate weights *and* all ``M`` class weights, so one norm decides whether the feature is
paid.  The q-step, the gate and the branch loss ``B`` are the binary ones.  The binary model
(``wf`` a vector, ``y`` in ``{-1, +1}``) is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, softmax

from learners.budgeted.adapt.qstep import entropy, lpc_branch_losses, lpc_loss, solve_q
from polydom.errors import InvalidArgumentError

__all__ = [
    "LinearGatePair",
    "fit_adapt_lin",
    "group_index",
    "group_norms",
    "lin_objective",
    "smooth_loss",
]


@dataclass
class LinearGatePair:
    """Weights of the linear gate ``g`` and low-cost model ``f1`` on standardised columns.

    ``g(z) = z @ wg + bg`` (``> 0``: send to the high-cost model), ``f1(z) = z @ wf + bf``.
    ``objective`` is the (OPT) value on the training rows, ``history`` its value after every
    outer iteration of the selected start, ``start`` which start was selected.
    """

    wg: np.ndarray
    bg: float
    wf: np.ndarray
    bf: float
    objective: float = float("nan")
    history: list = field(default_factory=list)
    start: int = 0

    def copy(self) -> LinearGatePair:
        """An independent copy."""
        return LinearGatePair(
            self.wg.copy(),
            self.bg,
            self.wf.copy(),
            np.copy(self.bf) if np.ndim(self.bf) else self.bf,
            self.objective,
            list(self.history),
            self.start,
        )


def group_index(groups: Sequence[np.ndarray], n_columns: int) -> np.ndarray:
    """Group of every column (columns in no group get ``len(groups)``, never penalised)."""
    gid = np.full(n_columns, len(groups), dtype=np.int64)
    for a, cols in enumerate(groups):
        gid[np.asarray(cols, dtype=np.int64)] = a
    return gid


def group_norms(wg: np.ndarray, wf: np.ndarray, groups: Sequence[np.ndarray]) -> np.ndarray:
    """``||(wg[cols], wf[cols])||_2`` for every group of columns.  O(columns)."""
    return _norms(wg, wf, group_index(groups, len(wg)), len(groups))


def _square(wg, wf):
    """Per column: ``wg**2`` plus the squares of its low-cost weights (every class)."""
    return wg * wg + (wf * wf if wf.ndim == 1 else (wf * wf).sum(axis=1))


def _norms(wg, wf, gid, n_groups):
    return np.sqrt(np.bincount(gid, _square(wg, wf), minlength=n_groups + 1)[:n_groups])


def smooth_loss(Z, y, q, wg, bg, wf, bf):
    """Smooth part of (OPT2) and its gradients ``(value, d/dwg, d/dbg, d/dwf, d/dbf)``.

    ``mean_i (1 - q_i)(loss_i(f1) + softplus(g_i)) + q_i softplus(-g_i)``, ``loss_i`` the
    logistic loss (binary) or the softmax cross-entropy (``wf`` columns x classes).
    Runtime complexity: O(rows * columns * classes).
    """
    zg = Z @ wg + bg
    zf = Z @ wf + bf
    loss = np.mean(
        (1.0 - q) * (lpc_loss(y, zf) + np.logaddexp(0.0, zg)) + q * np.logaddexp(0.0, -zg)
    )
    rg = (expit(zg) - q) / len(y)
    if zf.ndim == 1:
        rf = -(1.0 - q) * y * expit(-y * zf) / len(y)
        return float(loss), Z.T @ rg, float(rg.sum()), Z.T @ rf, float(rf.sum())
    p = softmax(zf, axis=1)
    p[np.arange(len(y)), y] -= 1.0
    rf = (1.0 - q)[:, None] * p / len(y)
    return float(loss), Z.T @ rg, float(rg.sum()), Z.T @ rf, rf.sum(axis=0)


def lin_objective(
    Z: np.ndarray,
    y: np.ndarray,
    p0_true: np.ndarray,
    pair: LinearGatePair,
    groups: Sequence[np.ndarray],
    weights: np.ndarray,
    p_full: float,
    mode: str = "le",
) -> tuple[float, np.ndarray]:
    """(OPT) value at ``pair`` with the optimal q, and that q.

    ``mean((1-q) A + q B - H(q)) + sum_a weights[a] * ||(g_a, f1_a)||`` where
    ``weights = gamma * costs``.

    Runtime complexity: O(rows * columns).
    """
    loss = lpc_loss(y, Z @ pair.wf + pair.bf)
    A, B = lpc_branch_losses(loss, Z @ pair.wg + pair.bg, p0_true)
    q, _ = solve_q(A, B, p_full, mode)
    value = np.mean((1.0 - q) * A + q * B - entropy(q))
    return float(value + weights @ group_norms(pair.wg, pair.wf, groups)), q


def _m_step(Z, y, q, groups, weights, pair, lip, n_iter, tol, frozen=None):
    """FISTA with adaptive restart on (OPT2) from ``pair``; returns the best iterate.

    Groups with ``frozen[a]`` stay at zero.  Runtime: O(n_iter * rows * columns).
    """
    n_groups = len(groups)
    gid = group_index(groups, Z.shape[1])
    keep = np.ones(n_groups + 1)
    if frozen is not None:
        keep[:n_groups][np.asarray(frozen, dtype=bool)] = 0.0
    step_thr = np.append(weights / lip, 0.0)  # prox threshold per group: step * weight
    penalised = step_thr > 0

    def value(wg, bg, wf, bf):
        norms = _norms(wg, wf, gid, n_groups)
        return smooth_loss(Z, y, q, wg, bg, wf, bf)[0] + weights @ norms

    col_keep = keep[gid] if pair.wf.ndim == 1 else keep[gid][:, None]
    x = (pair.wg * keep[gid], pair.bg, pair.wf * col_keep, pair.bf)
    best, best_val = x, value(*x)
    v = x
    t = 1.0
    step = 1.0 / lip
    prev_val = best_val
    for _ in range(n_iter):
        _, gwg, gbg, gwf, gbf = smooth_loss(Z, y, q, *v)
        wg = v[0] - step * gwg
        wf = v[2] - step * gwf
        bg = v[1] - step * gbg
        bf = v[3] - step * gbf
        norms = np.sqrt(np.bincount(gid, _square(wg, wf), minlength=n_groups + 1))
        shrink = (
            np.where(
                penalised,
                np.where(norms > step_thr, 1.0 - step_thr / np.where(norms > 0, norms, 1.0), 0.0),
                1.0,
            )
            * keep
        )
        wg = wg * shrink[gid]
        wf = wf * (shrink[gid] if wf.ndim == 1 else shrink[gid][:, None])
        new = (wg, bg, wf, bf)
        new_val = value(*new)
        if new_val < best_val:
            best, best_val = new, new_val
        if new_val > prev_val:  # adaptive restart: drop the momentum
            t = 1.0
            v = new
        else:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            mom = (t - 1.0) / t_next
            v = tuple(a + mom * (a - b) for a, b in zip(new, x, strict=True))
            t = t_next
        done = abs(prev_val - new_val) <= tol * max(1.0, abs(new_val))
        x, prev_val = new, new_val
        if done:
            break
    bf = float(best[3]) if np.ndim(best[3]) == 0 else np.asarray(best[3], dtype=np.float64)
    return LinearGatePair(best[0], float(best[1]), best[2], bf)


def fit_adapt_lin(
    Z: np.ndarray,
    y: np.ndarray,
    p0_true: np.ndarray,
    groups: Sequence[np.ndarray],
    costs: np.ndarray,
    gamma: float,
    p_full: float,
    *,
    mode: str = "le",
    starts: Sequence[LinearGatePair] = (),
    max_iter: int = 20,
    inner_iter: int = 300,
    tol: float = 1e-7,
) -> LinearGatePair:
    """Alternating minimisation of (OPT) from every start; the lowest (OPT) value wins.

    Parameters
    ----------
    Z : ndarray (rows, columns)
        Standardised training columns.
    y : ndarray of {-1, +1}, or of class indices
        Binary labels as signs; with a softmax start (``wf`` columns x classes), the class
        index of each row.
    p0_true : ndarray
        High-cost model's probability of each row's true label.
    groups : sequence of int arrays
        Columns of each feature (one group-norm term each).
    costs : ndarray
        Cost of each feature.
    gamma, p_full : float
        Cost trade-off and the fraction allowed to the high-cost model.
    mode : {"le", "eq"}
        q-step constraint (see :func:`solve_q`).
    starts : sequence of LinearGatePair
        Initial weights (at least one).
    max_iter : int
        Outer iterations per start; a start stops early once q moves by less than
        ``1e-4 * rows`` in L1 norm.
    inner_iter : int
        FISTA iterations per (g, f1)-step.

    Returns
    -------
    LinearGatePair
        With ``objective``, ``history`` (non-increasing) and ``start`` set.

    Runtime complexity: O(starts * max_iter * inner_iter * rows * columns * classes).
    """
    if not starts:
        raise InvalidArgumentError("starts must hold at least one initial LinearGatePair")
    weights = float(gamma) * np.asarray(costs, dtype=np.float64)
    Z1 = np.column_stack([Z, np.ones(len(Z))])
    # The logistic losses' curvature is at most 1/4, the softmax cross-entropy's 1/2.
    curvature = 4.0 if np.ndim(starts[0].wf) == 1 else 2.0
    lip = max(float(np.linalg.norm(Z1, 2)) ** 2 / (curvature * len(Z)), 1e-12)
    best = None
    for s, start in enumerate(starts):
        pair = start.copy()
        obj, q = lin_objective(Z, y, p0_true, pair, groups, weights, p_full, mode)
        history = [obj]
        for _ in range(max_iter):
            pair = _m_step(Z, y, q, groups, weights, pair, lip, inner_iter, tol)
            obj, q_new = lin_objective(Z, y, p0_true, pair, groups, weights, p_full, mode)
            history.append(obj)
            moved = float(np.abs(q_new - q).sum())
            q = q_new
            if moved < 1e-4 * len(y):
                break
        pair.objective, pair.history, pair.start = obj, history, s
        if best is None or obj < best.objective:
            best = pair
    return _prune(Z, y, p0_true, groups, weights, best, p_full, mode, lip, inner_iter, tol)


def _prune(Z, y, p0_true, groups, weights, pair, p_full, mode, lip, inner_iter, tol):
    """Drop features, smallest group norm first, while the paper's unrelaxed (OPT) improves.

    The group norm is a relaxation of ``gamma * sum_a c_a * 1[a used by g or f1]``; its optimum
    can keep a feature with a tiny weight (the loss is flat along it), which makes the feature
    *needed* at full cost.  Each trial freezes one more group at zero, re-fits (one (g, f1)-step
    and one q-step) and is kept when ``loss + gamma * sum_{a used} c_a`` (loss = the (OPT)
    value without the penalty) is lower; the first trial that is not ends the pruning.
    """
    frozen = np.zeros(len(groups), dtype=bool)

    def l0_value(p):
        obj, q = lin_objective(Z, y, p0_true, p, groups, weights, p_full, mode)
        norms = group_norms(p.wg, p.wf, groups)
        return obj - weights @ norms + weights @ (norms > 0.0), q

    current, q = l0_value(pair)
    while True:
        norms = group_norms(pair.wg, pair.wf, groups)
        active = [a for a in np.argsort(norms, kind="stable") if norms[a] > 0.0 and weights[a] > 0]
        if not active:
            return pair
        trial_frozen = frozen.copy()
        trial_frozen[active[0]] = True
        trial = _m_step(Z, y, q, groups, weights, pair, lip, inner_iter, tol, trial_frozen)
        value, q_trial = l0_value(trial)
        if not value < current:
            return pair
        trial.objective = lin_objective(Z, y, p0_true, trial, groups, weights, p_full, mode)[0]
        trial.history, trial.start = pair.history, pair.start
        pair, current, q, frozen = trial, value, q_trial, trial_frozen
