"""Trees and cascades of linear classifiers trained under the relaxed expected feature cost.

The optimisation engine behind :class:`learners.CSTCClassifier` and
:class:`learners.CSCCClassifier` (Xu, Kusner, Weinberger, Chen, Chapelle, *Classifier
Cascades and Trees for Minimizing Feature Evaluation Cost*, JMLR 15, 2014; our spec
``specs/cstc-cscc.md``).  Everything here works on a feature map ``Phi`` (rows x map columns
``T``), the binary matrix ``F`` (atomic features x map columns: which atoms a map column
reads), atom costs ``c`` and map-column evaluation costs ``e``.

Structure (spec 2.1): classifier nodes in heap numbering (children of ``h`` are ``2h+1``,
the *upper* child taken when ``phi(x) @ beta > theta``, and ``2h+2``, the *lower* one).  A
child slot that holds no node is a *terminal*: the input exits with its parent's prediction.
A node with no child node is a *leaf* (``theta = -inf``, one terminal).  A cascade (CSCC) is
the chain ``0, 1, 3, 7, ...`` of upper children: the lower slot of every stage is its exit.

Objective (paper Eq. 12 / 19 / 22), with ``p_i^k`` the soft probability that row ``i``
reaches node ``k`` (sigmoid routing, spec 2.2) and ``p^l`` the mean probability of exiting
through terminal ``l``::

    J = sum_k [ (1/n) sum_i W_ik l(phi_i beta^k, y_i) + rho |beta^k|_1 ]
        + lam sum_l p^l [ sum_t e_t sqrt(sum_{j in pi^l} (beta^j_t)^2)
                          + sum_a c_a sqrt(sum_{j in pi^l} sum_t F_at (beta^j_t)^2) ]

``W_ik = w_i p_i^k`` for a tree (``mode="tree"``) and ``w_i * P(exit through k's terminal)``
for a cascade (``mode="cascade"``); ``w_i`` are row (class) weights; ``l`` is the squared
loss ``(r^2)/2``.  It is minimised by cyclic block coordinate descent over nodes (paper
Algorithm 1): the square roots and ``|.|`` are majorised by Lemma 1 (``sqrt(g) <=
(g/z + z)/2``), leaves are then a weighted ridge problem (Eq. 16), inner nodes are minimised
by L-BFGS with the analytic gradient of :func:`internal_surrogate`.  Every probability in the
surrogate is affine in the node's own routing probability ``s_i``, which makes the gradient a
handful of matrix products (derivation in :func:`internal_surrogate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.linalg import LinAlgError, solve
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

from learners.budgeted.cstc.split_init import CRITERIA, MODEL_SEARCH_COLUMNS, best_router_split
from polydom.errors import InvalidArgumentError

__all__ = [
    "EPS",
    "BlockConstants",
    "CostModelArrays",
    "TreeFit",
    "TreeStructure",
    "block_constants",
    "exact_objective",
    "exact_path_cost",
    "exit_terminals",
    "finetune_leaves",
    "finetune_objective",
    "fit_tree",
    "grow",
    "initialise",
    "internal_surrogate",
    "leaf_solve",
    "loss_weights",
    "objective",
    "path_atoms",
    "predict_terminals",
    "prune",
    "relaxed_path_cost",
    "routing",
    "weighted_median_threshold",
]

EPS = 1e-4
"""The paper's clamp (section 3.4): weights below it become 0, auxiliaries never go below it."""


# ----------------------------------------------------------------------------- structure
@dataclass(frozen=True, eq=False)
class TreeStructure:
    """Classifier nodes of a tree or cascade, from the set of their heap indices.

    Parameters
    ----------
    heap : sequence of int
        Heap indices of the classifier nodes; must contain 0 and the parent of every index.

    Attributes (all derived, numpy arrays over nodes ``k`` in level order or terminals ``l``)
    ------------------------------------------------------------------------------------------
    parent, side : parent node (-1 at the root); +1 upper child, -1 lower child, 0 root.
    up, low : child node in the upper / lower slot, -1 where the slot is a terminal.
    is_leaf : no child node (``theta = -inf``; one terminal).
    term_node, term_side : the node a terminal hangs from, and its side (0: a leaf's sole one).
    term_of : (K, 3) terminal index of node ``k`` on side -1 / 0 / +1 (columns 0 / 1 / 2), or -1.
    A : (L, K) path membership, ``A[l, j] = 1`` when node ``j`` is on the root path of ``l``.
    path : (K, K) ``path[k, j] = 1`` when node ``j`` is on the root path of node ``k`` (or is k).
    depth : level of each node (the root is 0).
    """

    heap: tuple

    @classmethod
    def full(cls, depth: int) -> TreeStructure:
        """Complete binary tree with ``depth`` levels (``2**depth - 1`` nodes).

        >>> TreeStructure.full(2).heap
        (0, 1, 2)
        """
        return cls(tuple(range(2 ** int(depth) - 1)))

    @classmethod
    def cascade(cls, stages: int) -> TreeStructure:
        """Chain of ``stages`` nodes through upper children; lower slots are early exits.

        >>> TreeStructure.cascade(3).heap
        (0, 1, 3)
        """
        return cls(tuple(2**k - 1 for k in range(int(stages))))

    def __post_init__(self) -> None:
        heap = tuple(sorted({int(h) for h in self.heap}))
        if not heap or heap[0] != 0:
            raise InvalidArgumentError(f"heap must contain the root 0, got {self.heap!r}")
        present = set(heap)
        for h in heap[1:]:
            if (h - 1) // 2 not in present:
                raise InvalidArgumentError(
                    f"heap index {h} has no parent {(h - 1) // 2} in the tree")
        object.__setattr__(self, "heap", heap)

    @cached_property
    def _arrays(self) -> dict:
        heap = self.heap
        K = len(heap)
        pos = {h: k for k, h in enumerate(heap)}
        parent = np.full(K, -1)
        side = np.zeros(K, dtype=np.int64)
        up = np.array([pos.get(2 * h + 1, -1) for h in heap])
        low = np.array([pos.get(2 * h + 2, -1) for h in heap])
        for k, h in enumerate(heap[1:], start=1):
            parent[k] = pos[(h - 1) // 2]
            side[k] = 1 if h % 2 == 1 else -1
        is_leaf = (up < 0) & (low < 0)
        term_node, term_side = [], []
        term_of = np.full((K, 3), -1)
        for k in range(K):
            sides = (0,) if is_leaf[k] else tuple(s for s, c in ((1, up[k]), (-1, low[k])) if c < 0)
            for s in sides:
                term_of[k, s + 1] = len(term_node)
                term_node.append(k)
                term_side.append(s)
        L = len(term_node)
        A = np.zeros((L, K))
        for l_, k in enumerate(term_node):
            while k >= 0:
                A[l_, k] = 1.0
                k = parent[k]
        depth = np.array([int(np.floor(np.log2(h + 1))) for h in heap])
        path = np.zeros((K, K))
        for k in range(K):
            j = k
            while j >= 0:
                path[k, j] = 1.0
                j = parent[j]
        return dict(parent=parent, side=side, up=up, low=low, is_leaf=is_leaf,
                    term_node=np.array(term_node, dtype=np.int64),
                    term_side=np.array(term_side, dtype=np.int64),
                    term_of=term_of, A=A, depth=depth, path=path)

    def __getattr__(self, name: str):
        if name in ("parent", "side", "up", "low", "is_leaf", "term_node", "term_side",
                    "term_of", "A", "depth", "path"):
            return self._arrays[name]
        raise AttributeError(name)

    @property
    def n_nodes(self) -> int:
        """Number of classifier nodes ``K``."""
        return len(self.heap)

    @property
    def n_terminals(self) -> int:
        """Number of terminals ``L``."""
        return len(self.term_node)

    def without(self, h: int) -> TreeStructure:
        """This structure with the subtree of heap index ``h`` removed (``h`` not the root)."""
        if h == 0:
            raise InvalidArgumentError("the root cannot be removed")
        drop = {h}
        for g in self.heap:
            a = g
            while a > h:
                a = (a - 1) // 2
            if a == h:
                drop.add(g)
        return TreeStructure(tuple(g for g in self.heap if g not in drop))

    def _check(self) -> None:
        """Assert the internal invariants: one terminal per leaf, paths rooted, level order."""
        assert list(self.heap) == sorted(self.heap)
        assert np.all(self.A[:, 0] == 1.0)
        for l_, k in enumerate(self.term_node):
            assert self.A[l_, k] == 1.0
        assert (self.term_side[self.is_leaf[self.term_node]] == 0).all()
        n_slots = 2 * self.n_nodes - (self.n_nodes - 1) - self.is_leaf.sum()
        assert self.n_terminals == n_slots


# ----------------------------------------------------------------------------- cost model
@dataclass(frozen=True, eq=False)
class CostModelArrays:
    """Costs in map space: ``F`` (atoms x map columns, 0/1), atom costs ``c``, column costs ``e``.

    ``penalised`` marks the map columns under the l1 term (all but the bias column).
    """

    F: np.ndarray
    c: np.ndarray
    e: np.ndarray
    penalised: np.ndarray

    def __post_init__(self) -> None:
        F = np.asarray(self.F, dtype=np.float64)
        T = F.shape[1]
        for name, v, size in (("c", self.c, F.shape[0]), ("e", self.e, T),
                              ("penalised", self.penalised, T)):
            if np.shape(v) != (size,):
                raise InvalidArgumentError(f"{name} must have shape ({size},), got {np.shape(v)}")
        object.__setattr__(self, "F", F)
        object.__setattr__(self, "c", np.asarray(self.c, dtype=np.float64))
        object.__setattr__(self, "e", np.asarray(self.e, dtype=np.float64))
        object.__setattr__(self, "penalised", np.asarray(self.penalised, dtype=np.float64))


# ----------------------------------------------------------------------------- routing
def _route(S: np.ndarray, st: TreeStructure) -> tuple[np.ndarray, np.ndarray]:
    n, K = S.shape
    P = np.empty((n, K))
    P[:, 0] = 1.0
    parent, side = st.parent, st.side
    for k in range(1, K):
        pa = parent[k]
        P[:, k] = P[:, pa] * (S[:, pa] if side[k] > 0 else 1.0 - S[:, pa])
    tn, ts = st.term_node, st.term_side
    factor = np.where(ts > 0, S[:, tn], np.where(ts < 0, 1.0 - S[:, tn], 1.0))
    return P, P[:, tn] * factor


def routing(
    Z: np.ndarray, st: TreeStructure, tau: float = 1.0, hard: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reach probabilities of nodes and terminals (paper Eq. 4-5).

    ``Z = Phi @ B.T - theta`` (rows x nodes).  Soft: ``P(upper | k) = sigmoid(tau * Z[:, k])``;
    hard: ``1[Z[:, k] > 0]``.  Leaves send everything to their terminal.

    Returns ``P`` (rows x nodes), ``PT`` (rows x terminals; each row sums to 1) and ``S``.

    Runtime complexity: O(rows * (nodes + terminals)).

    >>> P, PT, S = routing(np.zeros((1, 3)), TreeStructure.full(2))
    >>> PT.tolist()
    [[0.5, 0.5]]
    """
    S = (Z > 0).astype(np.float64) if hard else expit(tau * Z)
    S[:, st.is_leaf] = 1.0
    P, PT = _route(S, st)
    return P, PT, S


def loss_weights(P: np.ndarray, PT: np.ndarray, st: TreeStructure, mode: str,
                 w: np.ndarray) -> np.ndarray:
    """Loss weight of every (row, node): ``w * P`` (tree) or ``w * P(exit at node)`` (cascade).

    Runtime complexity: O(rows * (nodes + terminals)).
    """
    if mode == "tree":
        return P * w[:, None]
    W = np.zeros_like(P)
    np.add.at(W.T, st.term_node, PT.T)
    return W * w[:, None]


def relaxed_path_cost(B: np.ndarray, st: TreeStructure, cm: CostModelArrays) -> np.ndarray:
    """Mixed-norm cost of every terminal's path (paper Eq. 22, the square-root side).

    Runtime complexity: O(terminals * nodes * T + terminals * atoms * T).
    """
    SQ = st.A @ (B * B)
    return np.sqrt(SQ) @ cm.e + np.sqrt(SQ @ cm.F.T) @ cm.c


def path_atoms(B: np.ndarray, st: TreeStructure, cm: CostModelArrays) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """Per terminal: map columns with a non-zero weight on its path, and the atoms they read.

    Returns boolean arrays (terminals x T) and (terminals x atoms).
    """
    cols = (st.A @ (B != 0)) > 0
    return cols, (cols.astype(np.float64) @ cm.F.T) > 0


def exact_path_cost(B: np.ndarray, st: TreeStructure, cm: CostModelArrays) -> np.ndarray:
    """Exact (l0) cost of every terminal's path: each column and atom paid once (Eq. 20-21).

    Runtime complexity: O(terminals * (nodes + atoms) * T).
    """
    cols, atoms = path_atoms(B, st, cm)
    return cols @ cm.e + atoms @ cm.c


def objective(Phi: np.ndarray, y: np.ndarray, w: np.ndarray, B: np.ndarray,
              theta: np.ndarray, st: TreeStructure, cm: CostModelArrays, lam: float,
              rho: float, tau: float = 1.0, mode: str = "tree") -> float:
    """The relaxed objective ``J`` (module docstring) at ``(B, theta)``.

    Runtime complexity: O(rows * nodes * T).
    """
    n = Phi.shape[0]
    Yhat = Phi @ B.T
    P, PT, _ = routing(Yhat - theta, st, tau)
    W = loss_weights(P, PT, st, mode, w)
    loss = float((W * 0.5 * (Yhat - y[:, None]) ** 2).sum()) / n
    reg = rho * float(np.abs(B * cm.penalised).sum())
    return loss + reg + lam * float(PT.mean(axis=0) @ relaxed_path_cost(B, st, cm))


def exit_terminals(Phi: np.ndarray, B: np.ndarray, theta: np.ndarray,
                   st: TreeStructure) -> np.ndarray:
    """Terminal reached by every row under hard routing (go up when ``phi @ beta > theta``).

    Runtime complexity: O(rows * depth) after one (rows x nodes) product.
    """
    Z = Phi @ B.T - theta
    n = Phi.shape[0]
    out = np.empty(n, dtype=np.int64)
    rows = np.arange(n)
    node = np.zeros(n, dtype=np.int64)
    while rows.size:
        goes_up = Z[rows, node] > 0
        leaf = st.is_leaf[node]
        nxt = np.where(goes_up, st.up[node], st.low[node])
        col = np.where(leaf, 1, np.where(goes_up, 2, 0))
        done = leaf | (nxt < 0)
        out[rows[done]] = st.term_of[node[done], col[done]]
        rows, node = rows[~done], nxt[~done]
    return out


# ----------------------------------------------------------------------------- node updates
def _ridge(G: np.ndarray, r: np.ndarray, diag: np.ndarray) -> np.ndarray:
    M = G + np.diag(diag)
    M.flat[:: M.shape[0] + 1] += 1e-12 * (1.0 + np.trace(G) / len(r))
    try:
        return solve(M, r, assume_a="pos", check_finite=False)
    except (LinAlgError, ValueError):
        return np.linalg.lstsq(M, r, rcond=None)[0]


def _clamp(b: np.ndarray, pen: np.ndarray) -> np.ndarray:
    b = b.copy()
    b[(np.abs(b) < EPS) & (pen > 0)] = 0.0
    return b


def leaf_solve(Phi: np.ndarray, y: np.ndarray, wk: np.ndarray, pbar: float, a_ev: np.ndarray,
               cm: CostModelArrays, lam: float, rho: float, b: np.ndarray | None,
               iters: int, tol: float) -> np.ndarray:
    """Minimise a leaf's part of ``J`` by Lemma 1 + the closed form of paper Eq. 16.

    ``wk``: loss weights of the rows; ``pbar``: mean probability of the leaf's terminal;
    ``a_ev``: sum over the other nodes of its path of ``beta_t^2``.  ``b=None`` starts from
    the weighted ridge solution (spec 2.5: never start from zero, it is absorbing).

    Runtime complexity: O(rows * T^2 + iters * T^3).
    """
    n = Phi.shape[0]
    G = (Phi.T * wk) @ Phi / n
    r = Phi.T @ (wk * y) / n
    pen = cm.penalised
    if b is None:
        b = _ridge(G, r, np.full(len(r), 1e-3))
    a_f = cm.F @ a_ev
    for _ in range(max(1, int(iters))):
        gam = np.maximum(np.abs(b), EPS)
        eta_ev = np.maximum(np.sqrt(a_ev + b * b), EPS)
        eta_f = np.maximum(np.sqrt(a_f + cm.F @ (b * b)), EPS)
        diag = rho * pen / gam + lam * pbar * (cm.e / eta_ev + (cm.c / eta_f) @ cm.F)
        new = _clamp(_ridge(G, r, diag), pen)
        change = np.abs(new - b).max() / max(np.abs(b).max(), 1e-12)
        b = new
        if change < tol:
            break
    return b


@dataclass(frozen=True, eq=False)
class BlockConstants:
    """What node ``k``'s surrogate needs from the other nodes (constant during the block)."""

    w0: np.ndarray      # own loss weight at s = 0          (rows,)
    dw: np.ndarray      # own loss weight slope in s        (rows,)
    g: np.ndarray       # slope in s of the others' losses  (rows,)
    pt0: np.ndarray     # mean terminal probability at s=0  (terminals below k,)
    dPT: np.ndarray     # terminal probability slopes       (rows, terminals below k)
    a_ev: np.ndarray    # other path nodes' squared weights (terminals below k, T)


def block_constants(Phi, y, w, B, theta, st, k, tau, mode) -> BlockConstants:
    """The parts of node ``k``'s surrogate fixed by the other nodes: every weight and
    probability evaluated at ``s_k = 0`` and ``s_k = 1`` (they are affine in ``s_k``).

    Runtime complexity: O(rows * nodes * T).
    """
    n = Phi.shape[0]
    Yhat = Phi @ B.T
    S = expit(tau * (Yhat - theta))
    S[:, st.is_leaf] = 1.0
    parts = []
    for s in (0.0, 1.0):
        Sk = S.copy()
        Sk[:, k] = s
        P, PT = _route(Sk, st)
        parts.append((loss_weights(P, PT, st, mode, w), PT))
    (W0, PT0), (W1, PT1) = parts
    dW = W1 - W0
    L = 0.5 * (Yhat - y[:, None]) ** 2
    dW[:, k] = 0.0
    g = (dW * L).sum(axis=1) / n
    below = np.flatnonzero(st.A[:, k])
    others = st.A[below].copy()
    others[:, k] = 0.0
    return BlockConstants(W0[:, k], W1[:, k] - W0[:, k], g, PT0[:, below].mean(axis=0),
                  PT1[:, below] - PT0[:, below], others @ (B * B))


def internal_surrogate(Phi: np.ndarray, y: np.ndarray, blk: BlockConstants, cm: CostModelArrays,
                       lam: float, rho: float, tau: float, b0: np.ndarray):
    """Lemma-1 surrogate ``Q_k(b, theta)`` of an inner node, majorising ``J`` and equal at ``b0``.

    With ``s_i = sigmoid(tau (phi_i b - theta))``, every probability below node ``k`` is
    affine in ``s_i`` (a path below ``k`` takes exactly one of its branches), so::

        Q = (1/n) sum_i (w0_i + s_i dw_i) r_i^2/2 + sum_i s_i g_i
            + lam sum_l pbar_l(s) chat_l(b) + rho sum_t pen_t (b_t^2/gam_t + gam_t)/2

    with ``pbar_l(s) = pt0_l + (1/n) sum_i s_i dPT_il`` and ``chat_l(b) = const_l +
    b^2 @ H_l / 2``, ``H_l = e/eta_ev_l + F^T (c/eta_f_l)`` (spec 2.5).  Hence
    ``dQ/ds_i = dw_i r_i^2/(2n) + g_i + (lam/n) sum_l dPT_il chat_l``, ``dz = tau s (1-s) dQ/ds``,
    ``grad_b = Phi^T (dz + (w0 + s dw) r / n) + lam (pbar @ H) b + rho pen b / gam`` and
    ``dQ/dtheta = -sum_i dz_i``.

    Returns ``f(x) -> (value, gradient)`` over ``x = [b, theta]``.
    """
    n = Phi.shape[0]
    pen = cm.penalised
    gam = np.maximum(np.abs(b0), EPS)
    a_f = blk.a_ev @ cm.F.T
    eta_ev = np.maximum(np.sqrt(blk.a_ev + b0 * b0), EPS)
    eta_f = np.maximum(np.sqrt(a_f + cm.F @ (b0 * b0)), EPS)
    H = cm.e / eta_ev + (cm.c / eta_f) @ cm.F
    const = 0.5 * ((blk.a_ev / eta_ev + eta_ev) @ cm.e + (a_f / eta_f + eta_f) @ cm.c)
    rpen = rho * pen / gam
    rconst = 0.5 * rho * float((pen * gam).sum())

    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        b, th = x[:-1], x[-1]
        yk = Phi @ b
        r = yk - y
        s = expit(tau * (yk - th))
        half_r2 = 0.5 * r * r
        wk = blk.w0 + s * blk.dw
        chat = const + 0.5 * (H @ (b * b))
        pbar = blk.pt0 + (s @ blk.dPT) / n
        val = (float(wk @ half_r2) / n + float(s @ blk.g) + lam * float(pbar @ chat)
               + 0.5 * float(rpen @ (b * b)) + rconst)
        dqds = blk.dw * half_r2 / n + blk.g + (lam / n) * (blk.dPT @ chat)
        dz = tau * s * (1.0 - s) * dqds
        gb = Phi.T @ (dz + wk * r / n) + (lam * (pbar @ H) + rpen) * b
        return val, np.concatenate([gb, [-dz.sum()]])

    return f


def _update_internal(Phi, y, w, B, theta, st, k, cm, lam, rho, tau, mode, iters, tol):
    blk = block_constants(Phi, y, w, B, theta, st, k, tau, mode)
    x = np.concatenate([B[k], [theta[k]]])
    for _ in range(max(1, int(iters))):
        f = internal_surrogate(Phi, y, blk, cm, lam, rho, tau, x[:-1])
        f0 = f(x)[0]
        res = minimize(f, x, jac=True, method="L-BFGS-B", options={"maxiter": 50})
        if not res.fun < f0:
            break
        new = np.concatenate([_clamp(res.x[:-1], cm.penalised), res.x[-1:]])
        change = abs(f0 - res.fun) / max(abs(f0), 1e-12)
        x = new
        if change < tol:
            break
    return x[:-1], x[-1]


def _update_leaf(Phi, y, w, B, theta, st, k, cm, lam, rho, tau, mode, iters, tol):
    P, PT, _ = routing(Phi @ B.T - theta, st, tau)
    W = loss_weights(P, PT, st, mode, w)
    term = st.term_of[k, 1]
    others = st.A[term].copy()
    others[k] = 0.0
    b = leaf_solve(Phi, y, W[:, k], float(PT[:, term].mean()), others @ (B * B), cm, lam,
                   rho, B[k], iters, tol)
    return b, theta[k]


# ----------------------------------------------------------------------------- whole fit
def weighted_median_threshold(v: np.ndarray, weights: np.ndarray) -> float:
    """Split point sending about half the weight up (spec 2.6): the weighted median, moved to
    the midpoint with the next larger distinct value so that ties stay together.

    >>> weighted_median_threshold(np.array([0., 0., 1., 1.]), np.ones(4))
    0.5
    """
    order = np.argsort(v, kind="stable")
    vs, ws = v[order], weights[order]
    total = ws.sum()
    if total <= 0:
        return float(np.median(v))
    i = int(np.searchsorted(np.cumsum(ws), 0.5 * total))
    m = vs[min(i, len(vs) - 1)]
    larger = vs[vs > m]
    return float((m + larger[0]) / 2) if larger.size else float(m)


def initialise(Phi, y, w, st, cm, lam, rho, tau, mode, iters, tol, router_init="leaf"):
    """Top-down initialisation.  ``router_init="leaf"`` (paper 3.4.2): each node solved as if
    it were the last one, its threshold at the weighted median of its predictions.
    ``"mean"`` or ``"model"`` (a tree only): an inner node starts as the cost-aware one-column
    split of :func:`learners.budgeted.cstc.split_init.best_router_split` by that criterion
    (the paper's start where no split pays for itself), and every node is solved on the rows
    its ancestors send it at test time (hard routing).
    """
    K, T = st.n_nodes, Phi.shape[1]
    B = np.zeros((K, T))
    theta = np.where(st.is_leaf, -np.inf, 0.0)
    for k in range(K):
        if router_init in CRITERIA and mode == "tree" and not st.is_leaf[k]:
            split = _split_node(Phi, y, w, B, theta, st, k, cm, lam, tau, router_init)
            if split is not None:
                B[k], theta[k] = split.b, split.theta
                continue
        B[k], pk = _init_node(Phi, y, w, B, theta, st, k, cm, lam, rho, tau, iters, tol,
                              hard=router_init in CRITERIA)
        if not st.is_leaf[k]:
            theta[k] = weighted_median_threshold(Phi @ B[k], w * pk)
    return B, theta


def _split_node(Phi, y, w, B, theta, st, k, cm, lam, tau, criterion):
    """Node ``k``'s cost-aware split below its (fixed) ancestors, or None."""
    P, _, _ = routing(Phi @ B.T - theta, st, tau, hard=True)
    anc = st.path[k].copy()
    anc[k] = 0.0
    paid_cols = (anc @ (B != 0)) > 0
    paid_atoms = (cm.F @ paid_cols) > 0
    new_cost = cm.e * ~paid_cols + (cm.c * ~paid_atoms) @ cm.F
    return best_router_split(Phi, y, w * P[:, k], new_cost, cm.penalised, lam, criterion)


def _init_node(Phi, y, w, B, theta, st, k, cm, lam, rho, tau, iters, tol, hard=False):
    """Node ``k`` solved as a leaf below its (fixed) ancestors: initialisation's step (on the
    rows its ancestors send it at test time with ``hard``, else by soft reach)."""
    P, _, _ = routing(Phi @ B.T - theta, st, tau, hard=hard)
    anc = st.path[k].copy()
    anc[k] = 0.0
    pk = P[:, k]
    return leaf_solve(Phi, y, w * pk, float(pk.mean()), anc @ (B * B), cm, lam, rho, None,
                      iters, tol), pk


def grow(Phi, y, w, cm, lam, rho, tau, mode, iters, tol, Phi_va, y_va, metric,
         max_depth: int):
    """Greedy structure building (paper 3.6.2): add the potential node that helps most.

    Starts from the root alone.  A potential node is a free child slot of a classifier node
    (a cascade: only the next stage), within ``max_depth`` levels; it is initialised as a
    leaf with everything else fixed, and when its parent was a leaf the parent's threshold
    is set to send half of the validation rows up.  Each round keeps the potential node that
    raises the validation metric most; growth stops when none raises it.

    Runtime complexity: O(nodes^2) leaf solves, each O(rows * T^2 + iters * T^3).
    """
    st = TreeStructure((0,))
    B, theta = initialise(Phi, y, w, st, cm, lam, rho, tau, mode, iters, tol)
    best = metric(predict_terminals(Phi_va, B, theta, st), y_va)
    while True:
        slots = [c for h in st.heap for c in ((2 * h + 1,) if mode == "cascade"
                                              else (2 * h + 1, 2 * h + 2))
                 if c not in st.heap and int(np.log2(c + 1)) < max_depth]
        if mode == "cascade":
            slots = slots[-1:]
        choice = None
        for c in slots:
            cand = TreeStructure((*st.heap, c))
            pos = {h: k for k, h in enumerate(cand.heap)}
            Bc = np.zeros((cand.n_nodes, B.shape[1]))
            tc = np.where(cand.is_leaf, -np.inf, 0.0)
            for k, h in enumerate(st.heap):
                Bc[pos[h]] = B[k]
                if not cand.is_leaf[pos[h]]:
                    tc[pos[h]] = theta[k] if np.isfinite(theta[k]) else float(
                        np.median(Phi_va @ B[k]))
            k = pos[c]
            Bc[k], _ = _init_node(Phi, y, w, Bc, tc, cand, k, cm, lam, rho, tau, iters, tol)
            m = metric(predict_terminals(Phi_va, Bc, tc, cand), y_va)
            if m > best + 1e-12 and (choice is None or m > choice[0]):
                choice = (m, cand, Bc, tc)
        if choice is None:
            return B, theta, st
        best, st, B, theta = choice


def predict_terminals(Phi, B, theta, st):
    """Prediction of every row: its exit node's linear score (hard routing)."""
    node = st.term_node[exit_terminals(Phi, B, theta, st)]
    return np.einsum("ij,ij->i", Phi, B[node])


def subset(B, theta, st_from: TreeStructure, st_to: TreeStructure):
    """Parameters of ``st_to``'s nodes (a subset of ``st_from``'s); new leaves get -inf."""
    pos = {h: k for k, h in enumerate(st_from.heap)}
    idx = [pos[h] for h in st_to.heap]
    th = theta[idx].copy()
    th[st_to.is_leaf] = -np.inf
    return B[idx].copy(), th


def prune(B, theta, st, Phi_va, y_va, metric):
    """Bottom-up pruning on validation (paper 3.6.1): drop a leaf while the metric does not drop."""
    best = metric(predict_terminals(Phi_va, B, theta, st), y_va)
    changed = True
    while changed:
        changed = False
        for k in np.flatnonzero(st.is_leaf)[::-1]:
            h = st.heap[k]
            if h == 0:
                continue
            cand = st.without(h)
            Bc, tc = subset(B, theta, st, cand)
            m = metric(predict_terminals(Phi_va, Bc, tc, cand), y_va)
            if m >= best:
                B, theta, st, best = Bc, tc, cand, m
                changed = True
                break
    return B, theta, st


@dataclass
class TreeFit:
    """Result of :func:`fit_tree`: parameters, structure and the optimisation trace."""

    B: np.ndarray
    theta: np.ndarray
    structure: TreeStructure
    objective_trace: list
    validation_trace: list


def fit_tree(Phi, y, w, cm: CostModelArrays, *, structure: TreeStructure, lam: float,
             rho: float, tau: float = 1.0, mode: str = "tree", prune_structure: bool = True,
             grow_structure: bool = False,
             validation=None, metric=None, max_sweeps: int = 5, irls_iters: int = 5,
             tol: float = 1e-4, support_threshold: float = 0.0, finetune: bool = True,
             finetune_routing: str = "soft", router_init: str = "leaf") -> TreeFit:
    """Initialise, prune, optimise (Algorithm 1 with early stopping), threshold, fine-tune.

    ``validation = (Phi_va, y_va)`` and ``metric(pred, y) -> float`` (higher is better) drive
    pruning (or, with ``grow_structure``, greedy growth up to the depth of ``structure``)
    and early stopping; without them none of these happens.  ``router_init="leaf"`` starts
    from the paper's initialisation; ``"split"`` (ours) fits once from each split criterion
    of :mod:`learners.budgeted.cstc.split_init` and keeps the fit of lower
    :func:`exact_objective` on the validation rows (on the training rows without them):
    restarts, one fit when the map is too wide for ``"model"``.

    Runtime complexity: O(sweeps * nodes * irls_iters * L-BFGS evaluations * rows * T).
    """
    # the products are small: BLAS threads cost far more than they save (10x measured)
    if router_init not in ("leaf", "split"):
        raise InvalidArgumentError(f"router_init must be 'leaf' or 'split', got {router_init!r}")
    inits = ["leaf"]
    if router_init == "split" and mode == "tree" and not grow_structure:
        inits = list(CRITERIA) if Phi.shape[1] <= MODEL_SEARCH_COLUMNS else ["mean"]
    best = None
    with threadpool_limits(1, user_api="blas"):
        for init in inits:
            fit = _fit_tree(Phi, y, w, cm, structure, lam, rho, tau, mode, prune_structure,
                            grow_structure, validation, metric, max_sweeps, irls_iters, tol,
                            support_threshold, finetune, finetune_routing, init)
            J = (exact_objective(*validation, np.ones(len(validation[1])), fit, cm, lam)
                 if validation is not None else exact_objective(Phi, y, w, fit, cm, lam))
            if best is None or J < best[0]:
                best = (J, fit)
    return best[1]


def _fit_tree(Phi, y, w, cm, structure, lam, rho, tau, mode, prune_structure, grow_structure,
              validation, metric, max_sweeps, irls_iters, tol, support_threshold, finetune,
              finetune_routing, router_init) -> TreeFit:
    st = structure
    use_val = validation is not None and metric is not None
    if use_val and grow_structure:
        B, theta, st = grow(Phi, y, w, cm, lam, rho, tau, mode, irls_iters, tol,
                            validation[0], validation[1], metric,
                            int(st.depth.max()) + 1)
    else:
        B, theta = initialise(Phi, y, w, st, cm, lam, rho, tau, mode, irls_iters, tol,
                              router_init)
    if use_val and prune_structure and not grow_structure:
        B, theta, st = prune(B, theta, st, validation[0], validation[1], metric)
    args = (cm, lam, rho, tau, mode)
    J = objective(Phi, y, w, B, theta, st, cm, lam, rho, tau, mode)
    trace, vtrace = [J], []

    def val_metric(B_, th_):
        return metric(predict_terminals(validation[0], B_, th_, st), validation[1])

    best = (val_metric(B, theta), B.copy(), theta.copy()) if use_val else None
    if use_val:
        vtrace.append(best[0])
    for _ in range(int(max_sweeps)):
        J_start = J
        for k in range(st.n_nodes):
            update = _update_leaf if st.is_leaf[k] else _update_internal
            bk, tk = update(Phi, y, w, B, theta, st, k, *args, irls_iters, tol)
            old = B[k].copy(), theta[k]
            B[k], theta[k] = bk, tk
            J_new = objective(Phi, y, w, B, theta, st, *args)
            if J_new <= J * (1 + 1e-12) + 1e-15:
                J = J_new
            else:
                B[k], theta[k] = old
        trace.append(J)
        if use_val:
            m = val_metric(B, theta)
            vtrace.append(m)
            if m > best[0]:
                best = (m, B.copy(), theta.copy())
        if J_start - J <= tol * max(abs(J_start), 1e-12):
            break
    if use_val:
        B, theta = best[1].copy(), best[2].copy()
    if support_threshold > 0:
        B = apply_support_threshold(B, cm.penalised, support_threshold)
    if finetune:
        B = finetune_leaves(Phi, y, w, B, theta, st, cm, rho, tau, mode, finetune_routing,
                            irls_iters, tol)
    return TreeFit(B, theta, st, trace, vtrace)


def exact_objective(Phi: np.ndarray, y: np.ndarray, w: np.ndarray, fit: TreeFit,
                    cm: CostModelArrays, lam: float) -> float:
    """What the relaxed ``J`` stands for, at test time: the weighted squared loss of the hard
    routed predictions plus ``lam`` times the mean exact (l0) cost of the rows' paths.

    Runtime complexity: O(rows * nodes * T).
    """
    term = exit_terminals(Phi, fit.B, fit.theta, fit.structure)
    pred = np.einsum("ij,ij->i", Phi, fit.B[fit.structure.term_node[term]])
    loss = float(w @ (0.5 * (pred - y) ** 2)) / len(y)
    return loss + lam * float(exact_path_cost(fit.B, fit.structure, cm)[term].mean())


def apply_support_threshold(B: np.ndarray, pen: np.ndarray, fraction: float) -> np.ndarray:
    """Zero every penalised weight below ``fraction`` times its node's largest one (spec 2.5)."""
    B = B.copy()
    scale = np.abs(B * pen).max(axis=1, keepdims=True)
    B[(np.abs(B) < fraction * scale) & (pen > 0)] = 0.0
    return B


def finetune_objective(Phi, y, wk, b, rho, pen):
    """``(1/n) sum_i w_i l(phi_i b, y_i) + rho |b|_1`` of one node (paper 3.5)."""
    r = Phi @ b - y
    return float(wk @ (0.5 * r * r)) / len(y) + rho * float(np.abs(b * pen).sum())


def finetune_leaves(Phi, y, w, B, theta, st, cm, rho, tau, mode, routing_kind, iters, tol):
    """Re-fit leaf classifiers without the cost term on their support (paper 3.5)."""
    B = B.copy()
    P, PT, _ = routing(Phi @ B.T - theta, st, tau, hard=routing_kind == "hard")
    W = loss_weights(P, PT, st, mode, w)
    n = len(y)
    for k in np.flatnonzero(st.is_leaf):
        supp = np.flatnonzero(B[k] != 0)
        wk = W[:, k]
        if supp.size == 0 or wk.sum() <= 0:
            continue
        Ps, pen = Phi[:, supp], cm.penalised[supp]
        G = (Ps.T * wk) @ Ps / n
        r = Ps.T @ (wk * y) / n
        b = B[k, supp].copy()
        for _ in range(max(1, int(iters)) * 4):
            gam = np.maximum(np.abs(b), EPS)
            new = _ridge(G, r, rho * pen / gam)
            change = np.abs(new - b).max() / max(np.abs(b).max(), 1e-12)
            b = new
            if change < tol:
                break
        full = np.zeros_like(B[k])
        full[supp] = b
        if finetune_objective(Phi, y, wk, full, rho, cm.penalised) <= finetune_objective(
                Phi, y, wk, B[k], rho, cm.penalised):
            B[k] = full
    return B
