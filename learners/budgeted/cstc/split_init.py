"""Cost-aware split initialisation of CSTC's routing nodes (our method, not the paper's).

The paper initialises every node top-down as if it were the last one (a leaf solved on the
rows its ancestors send it, the threshold at the weighted median of its predictions).  A node
trained that way predicts the label from whatever is informative *overall*; when the label
depends on an expensive feature that is informative only inside one region of the cheap
features, the root buys expensive features, splits at a median that follows no region, and
block coordinate descent from there stays in that basin (0.14-0.2 test error on a
classification version of the paper's quadrants, where a depth-3 CART gets 0.06-0.2).

Here an inner node starts as a one-column split chosen as a decision tree would choose it,
but paying for features as CSTC does.  For every map column ``t`` the best split's gain (in
the units of the objective: weighted squared error / 2n) is measured by one of two criteria:

* ``"mean"``: one constant per side (CART's regression criterion): regions whose label
  *mean* differs;
* ``"model"``: one least-squares line on all map columns per side, against one line for all
  the node's rows (a model-tree criterion): also regions that differ in *which* features
  predict the label, with equal means.  Used for maps of at most
  :data:`MODEL_SEARCH_COLUMNS` columns (its cost grows as ``T^4``); wider maps use ``"mean"``.

A column may route only when its gain exceeds ``lam * pbar_k * c_new(t)`` (``pbar_k`` the
node's share of the rows, ``c_new(t)`` the cost of the atoms and column of ``t`` not yet paid
on the node's path: what the objective ``J`` charges for it), and among those the largest
gain per unit of new cost wins (an already-paid column counts as the cheapest unpaid one, so
it does not win on a sliver of gain).  The threshold is then placed by the ``"model"``
criterion on a fine grid (the boundary where the side-lines fit best, which the mean
criterion places loosely when the means differ little).  The node's weights are the
weighted least-squares line of the label on that column (every CSTC node also predicts) and
its threshold that line's value at the split, so the side with the larger mean goes up.

Neither criterion is right for every data set (on the paper's regression quadrants the
global line already explains the means, and ``"model"`` prefers an expensive column;
on an XOR of class balances ``"mean"`` sees no gain at the root), so
:func:`learners.budgeted.cstc.engine.fit_tree` runs both as restarts and keeps the fit with
the lower objective ``J``.  Block coordinate descent then optimises ``J`` from this start as
from the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["CRITERIA", "MODEL_SEARCH_COLUMNS", "RouterSplit", "best_router_split",
           "mean_split_threshold", "model_tree_threshold"]

#: the split criteria (module docstring)
CRITERIA = ("mean", "model")

#: maps with at most this many columns choose the split column by the model-tree criterion
MODEL_SEARCH_COLUMNS = 40


@dataclass(frozen=True)
class RouterSplit:
    """A routing node's start: the map column, the split value, weights ``b``, ``theta``."""

    column: int
    threshold: float
    b: np.ndarray
    theta: float


def mean_split_threshold(v: np.ndarray, y: np.ndarray, w: np.ndarray,
                         min_weight: float) -> tuple[float, float]:
    """Threshold (midpoint between distinct values) with the largest drop of the weighted
    squared error from one constant to one per side (CART's regression split), and that
    drop; ``(nan, 0)`` when no cut leaves ``min_weight`` on both sides.

    Runtime complexity: O(rows log rows).

    >>> mean_split_threshold(np.array([0., 1., 2., 3.]), np.array([0., 0., 1., 1.]),
    ...                      np.ones(4), 1.0)
    (1.5, 1.0)
    """
    order = np.argsort(v, kind="stable")
    vs, ws, ys = v[order], w[order], y[order]
    cw, cy = np.cumsum(ws), np.cumsum(ws * ys)
    total_w, total_y = cw[-1], cy[-1]
    left_w, left_y = cw[:-1], cy[:-1]
    right_w, right_y = total_w - left_w, total_y - left_y
    ok = (vs[1:] > vs[:-1]) & (left_w >= min_weight) & (right_w >= min_weight)
    if not ok.any():
        return float("nan"), 0.0
    # SSE(one constant) - SSE(one per side) = lw * rw / W * (mean_l - mean_r)^2
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(ok, (left_y / left_w - right_y / right_w) ** 2 * left_w * right_w
                        / total_w, -np.inf)
    i = int(np.argmax(gain))
    return float((vs[i] + vs[i + 1]) / 2), float(gain[i])


def _line_sse(G: np.ndarray, r: np.ndarray, yy: float, ridge: float) -> float:
    """Weighted squared error of the (ridge) least-squares line from its statistics."""
    M = G + ridge * np.eye(len(r))
    try:
        beta = np.linalg.solve(M, r)
    except np.linalg.LinAlgError:
        beta = np.linalg.lstsq(M, r, rcond=None)[0]
    return float(yy - 2 * beta @ r + beta @ G @ beta)


def model_tree_threshold(v: np.ndarray, Phi: np.ndarray, y: np.ndarray, w: np.ndarray,
                         min_weight: float, grid: int = 64,
                         fine: bool = True) -> tuple[float, float]:
    """The split of ``v`` after which one least-squares line per side (on all of ``Phi``)
    leaves the least weighted squared error; returns ``(threshold, gain)``, the gain against
    one line for all rows, or ``(nan, 0)`` when no cut leaves ``min_weight`` on both sides.

    Cuts: ``grid`` weighted quantiles, then (``fine``) every distinct value between the
    best one's neighbours.

    Runtime complexity: O(rows * T^2 + (grid + rows / grid) * T^3).

    >>> v = np.linspace(-1, 1, 200)
    >>> Phi = np.column_stack([v, np.ones(200)])
    >>> y = np.where(v > 0.3, 1.0, -1.0)
    >>> round(model_tree_threshold(v, Phi, y, np.ones(200), 10.0)[0], 2)
    0.3
    """
    order = np.argsort(v, kind="stable")
    vs, ws, ys, Ps = v[order], w[order], y[order], Phi[order]
    n, T = Ps.shape
    cw = np.cumsum(ws)
    total = float(cw[-1])
    ridge = 1e-6 * (1.0 + float(ws @ (Ps * Ps).sum(axis=1)) / max(total, 1e-300))
    Gt, rt, yyt = (Ps.T * ws) @ Ps, Ps.T @ (ws * ys), float(ws @ (ys * ys))

    def sse_at(cuts: np.ndarray) -> np.ndarray:
        out = np.full(len(cuts), np.inf)
        G, r, yy, start = np.zeros((T, T)), np.zeros(T), 0.0, 0
        for j, c in enumerate(cuts):          # ascending cuts: rows [0, c) go to one side
            blk = slice(start, c)
            G += (Ps[blk].T * ws[blk]) @ Ps[blk]
            r += Ps[blk].T @ (ws[blk] * ys[blk])
            yy += float(ws[blk] @ (ys[blk] ** 2))
            start = c
            if vs[c - 1] < vs[c] and min_weight <= cw[c - 1] <= total - min_weight:
                out[j] = _line_sse(G, r, yy, ridge) + _line_sse(Gt - G, rt - r, yyt - yy,
                                                                ridge)
        return out

    cuts = np.unique(np.searchsorted(cw, np.linspace(0, total, grid + 1)[1:-1]).clip(1, n - 1))
    sse = sse_at(cuts)
    if fine and cuts.size:
        j = int(np.argmin(sse))
        lo = cuts[j - 1] if j > 0 else 1
        hi = cuts[j + 1] if j + 1 < len(cuts) else n - 1
        cuts = np.arange(lo, hi + 1)
        sse = sse_at(cuts)
    if not cuts.size or not np.isfinite(sse.min()):
        return float("nan"), 0.0
    k = int(np.argmin(sse))
    gain = _line_sse(Gt, rt, yyt, ridge) - float(sse[k])
    return float((vs[cuts[k] - 1] + vs[cuts[k]]) / 2), gain


def best_router_split(Phi: np.ndarray, y: np.ndarray, weights: np.ndarray,
                      new_cost: np.ndarray, penalised: np.ndarray, lam: float,
                      criterion: str = "mean", min_fraction: float = 0.05
                      ) -> RouterSplit | None:
    """The best cost-aware one-column split of the rows reaching a node (module docstring).

    Parameters
    ----------
    Phi : array (rows, T)
        The feature map.
    y : array (rows,)
        Targets.
    weights : array (rows,)
        Row weight times the node's reach (0/1: the rows its ancestors send it).
    new_cost : array (T,)
        Cost of each column's atoms (and its own evaluation cost) not yet paid on the path.
    penalised : array (T,)
        1 for a column under the l1 term, 0 for the bias (never split on; it carries the
        intercept of the node's line when present).
    lam : float
        The objective's trade-off ``lambda``.
    criterion : {"mean", "model"}, default "mean"
        How a column's gain is measured (module docstring).
    min_fraction : float, default 0.05
        Least share of the node's weight on each side of a split.

    Returns
    -------
    RouterSplit or None
        None when no split's gain exceeds its cost (or no column varies).

    Runtime complexity: O(T * rows * log rows) for ``"mean"``, O(T * (rows * T^2 + 16 T^3))
    for ``"model"``; plus one :func:`model_tree_threshold`.
    """
    if criterion not in CRITERIA:
        raise InvalidArgumentError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    n = len(y)
    total = float(weights.sum())
    if total <= 0:
        return None
    min_weight = min_fraction * total
    pbar = total / n
    unpaid = new_cost[(new_cost > 0) & (penalised > 0)]
    floor = float(unpaid.min()) if unpaid.size else 1.0
    by_model = criterion == "model" and Phi.shape[1] <= MODEL_SEARCH_COLUMNS
    best: tuple[float, int] | None = None
    for t in np.flatnonzero(penalised > 0):
        if by_model:
            thr, gain = model_tree_threshold(Phi[:, t], Phi, y, weights, min_weight, 16, False)
        else:
            thr, gain = mean_split_threshold(Phi[:, t], y, weights, min_weight)
        gain /= 2 * n
        if not (np.isfinite(thr) and gain > lam * pbar * float(new_cost[t])):
            continue
        score = gain / max(float(new_cost[t]), floor)
        if best is None or score > best[0]:
            best = (score, int(t))
    if best is None:
        return None
    t = best[1]
    v = Phi[:, t]
    thr, _ = model_tree_threshold(v, Phi, y, weights, min_weight)
    if not np.isfinite(thr):
        thr, _ = mean_split_threshold(v, y, weights, min_weight)
    b = np.zeros(Phi.shape[1])
    bias = np.flatnonzero(penalised == 0)
    if bias.size:  # the weighted least-squares line; the bias column is constant
        mv, my = float(weights @ v) / total, float(weights @ y) / total
        den = float(weights @ (v - mv) ** 2)
        slope = float(weights @ ((v - mv) * (y - my))) / den if den > 0 else 0.0
        b[bias[0]] = (my - slope * mv) / Phi[0, bias[0]]
        offset = my - slope * mv
    else:          # through the origin
        den = float(weights @ (v * v))
        slope = float(weights @ (v * y)) / den if den > 0 else 0.0
        offset = 0.0
    if slope == 0.0:
        return None
    b[t] = slope
    return RouterSplit(t, thr, b, slope * thr + offset)
