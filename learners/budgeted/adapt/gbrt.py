"""ADAPT-GBRT: a boosted gate and a boosted low-cost model on LightGBM's cost-penalised trees.

Nan and Saligrama (NIPS 2017), Algorithm 2.  Each outer iteration solves the q-step
(:func:`learners.budgeted.adapt.qstep.solve_q`) and then rebuilds both ensembles from scratch
(as the authors' code does), ``n_estimators`` rounds of one low-cost tree and one gate tree.
Tree ``t`` fits the negative gradient of the (OPT) loss by least squares (hessian 1, as
GreedyMiser), with the paper's impurities (1) and (2):

    1/2 sum_i (r_i - tree(x_i))^2 + gamma * sum_a u_a c_a [a appears in the tree]

``r_f = (1 - q) y sigmoid(-y f1)``, ``r_g = q sigmoid(-g) - (1 - q) sigmoid(g)``; ``u_a = 0``
once feature ``a`` appears in any earlier tree of *either* ensemble (paid once, shared).

How this maps onto LightGBM (what can be expressed, and what differs):

* LightGBM's coupled CEGB penalty ``cegb_tradeoff * cegb_penalty_feature_coupled[m]`` is
  subtracted from a split's gain the first time the booster uses column ``m``; its gain has no
  factor 1/2, so the penalty passed is ``2 * gamma * c_a * u_a``.  The state ``u`` is shared
  between the two boosters by re-setting the penalties before every tree
  (``Booster.reset_parameter``): the booster that did not use a feature still sees it free once
  the other one has.  A feature used at one node of a tree is free at the others, which is the
  paper's impurity (the cost counts once per tree, ``V_{a,t}``).
* Trees grow leaf-wise (best first) up to ``max_depth`` (``num_leaves = 2**max_depth``) rather
  than layer by layer, and a split whose penalised gain is ``<= 0`` is not made.  The authors'
  builder always splits; that variant (the spec's ``allow_no_split=False``) has no LightGBM
  form and is not offered.
* When no split pays (e.g. every penalty is huge), LightGBM adds no tree.  The paper's CART
  would add a one-leaf tree whose value is the mean residual; this module keeps that constant
  as the ensemble's own ``intercept`` (moved by ``learning_rate * mean(r)``), so the gate can
  still shift all rows towards or away from the high-cost model.
* Multi-column features (``feature_groups``): every column of a feature carries the feature's
  full cost until any column of it is used; then all its columns are free.

Many classes (spec section 2.10): the low-cost model is a softmax over ``M`` raw scores, one
LightGBM multiclass booster (``num_class = M``: one tree per class per round), fitting
``r_f = (1 - q) (onehot(y) - softmax(f1))`` with hessian 1; its constant terms are a vector of
``M``.  The gate, the q-step and the shared feature state are the binary ones (a feature one
class tree used is free for every later tree of either ensemble).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import lightgbm as lgb
import numpy as np
from scipy.special import expit, softmax

from learners.budgeted.adapt.qstep import lpc_branch_losses, lpc_loss, solve_q

__all__ = ["BoostedGatePair", "fit_adapt_gbrt"]


@dataclass
class BoostedGatePair:
    """The two fitted ensembles: LightGBM boosters plus their constant terms.

    ``g(x) = gate.predict(x, raw) + gate_intercept`` (``> 0``: high-cost model);
    ``f1(x) = lpc.predict(x, raw) + lpc_intercept`` (with many classes, rows x classes and a
    vector of intercepts).  ``history`` holds, per outer iteration,
    ``(mean q, training composite accuracy)``.
    """

    gate: lgb.Booster
    gate_intercept: float
    lpc: lgb.Booster
    lpc_intercept: float | np.ndarray
    history: list = field(default_factory=list)


def _column_costs(groups: Sequence[np.ndarray], costs: np.ndarray, n_columns: int) -> np.ndarray:
    out = np.zeros(n_columns)
    for cols, c in zip(groups, costs, strict=True):
        out[cols] = c
    return out


class _Rounds:
    """Alternating boosting of the gate and the low-cost model with a shared feature state."""

    def __init__(self, X, data, params, groups, costs, gamma):
        n_columns = X.shape[1]
        self.X = X
        self.data = data
        self.params = params
        self.groups = groups
        self.col_cost = 2.0 * float(gamma) * _column_costs(groups, costs, n_columns)
        self.group_of = np.empty(n_columns, dtype=np.int64)
        for a, cols in enumerate(groups):
            self.group_of[cols] = a
        self.used = np.zeros(len(groups), dtype=bool)

    def booster(self, n_classes: int = 2) -> lgb.Booster:
        params = dict(self.params, cegb_penalty_feature_coupled=self._penalty())
        if n_classes > 2:
            params["num_class"] = int(n_classes)
        return lgb.Booster(params, self.data)

    def _penalty(self) -> list:
        return np.where(self.used[self.group_of], 0.0, self.col_cost).tolist()

    def step(self, booster: lgb.Booster, grad: Callable, intercept, lr: float):
        """One round on ``booster`` (a tree per class, or a constant); the new intercept."""
        resid = {}

        def fobj(preds, _data):
            r = grad(preds + intercept)
            resid["r"] = r
            return -r, np.ones_like(r)

        try:
            booster.reset_parameter({"cegb_penalty_feature_coupled": self._penalty()})
            finished = booster.update(fobj=fobj)
        except lgb.basic.LightGBMError as exc:
            # LightGBM refuses to grow a tree when binning left no splittable column (tiny
            # data): no split is possible, as when none pays.
            if "num_features()) > (0)" not in str(exc):
                raise
            resid["r"] = grad(_scores(booster, intercept, self.X))
            finished = True
        if finished:
            intercept = intercept + lr * np.asarray(resid["r"]).mean(axis=0)
        else:
            split = np.asarray(booster.feature_importance("split", iteration=None)) > 0
            self.used[np.unique(self.group_of[split])] = True
        return intercept


def _lpc_gradient(y, q, n_classes):
    """Negative gradient of the low-cost loss weighted by ``1 - q`` (binary or softmax)."""
    if n_classes <= 2:
        return lambda f: (1.0 - q) * y * expit(-y * f)
    onehot = np.eye(n_classes)[y]
    return lambda f: (1.0 - q)[:, None] * (onehot - softmax(f, axis=1))


def _boost(rounds: _Rounds, y, q, n_estimators, lr, fit_gate=True, n_classes=2):
    gate, lpc = rounds.booster(), rounds.booster(n_classes)
    bg = 0.0
    bf = 0.0 if n_classes <= 2 else np.zeros(n_classes)
    lpc_grad = _lpc_gradient(y, q, n_classes)
    for _ in range(n_estimators):
        bf = rounds.step(lpc, lpc_grad, bf, lr)
        if fit_gate:
            bg = rounds.step(gate, lambda g: q * expit(-g) - (1.0 - q) * expit(g), bg, lr)
    return gate, bg, lpc, bf


def _scores(booster: lgb.Booster, intercept, X: np.ndarray) -> np.ndarray:
    if booster.current_iteration() == 0:
        return np.broadcast_to(intercept, (X.shape[0], *np.shape(intercept))).astype(np.float64)
    return booster.predict(X, raw_score=True) + intercept


def fit_adapt_gbrt(
    X: np.ndarray,
    y: np.ndarray,
    p0_true: np.ndarray,
    hpc_correct: np.ndarray,
    groups: Sequence[np.ndarray],
    costs: np.ndarray,
    gamma: float,
    p_full: float,
    *,
    mode: str = "le",
    threshold: float = 0.0,
    n_estimators: int = 50,
    learning_rate: float = 0.1,
    max_depth: int = 3,
    min_child_samples: int = 5,
    max_iter: int = 10,
    random_state: int = 0,
    n_classes: int = 2,
) -> BoostedGatePair:
    """Algorithm 2: alternate the q-step and a from-scratch rebuild of both ensembles.

    The first q-step sees ``g = 0`` and a GreedyMiser ``f1`` (ADAPT-GBRT with ``q = 0``, the
    authors' initialisation).  Stops when the training composite accuracy moves by less than
    1e-5 and ``q`` by less than ``1e-4 * rows`` (L1), or after ``max_iter`` iterations.

    Parameters
    ----------
    X : ndarray (rows, columns)
    y : ndarray of {-1, +1}, or of class indices when ``n_classes > 2``
    p0_true : ndarray
        High-cost model's probability of each row's true label.
    hpc_correct : ndarray of bool
        Whether the high-cost model classifies each training row correctly (for the
        convergence test).
    groups, costs : columns and cost of every feature
    gamma, p_full : float
    mode : {"le", "eq"}
    threshold : float
        Routing rule for the convergence test: high-cost model iff ``g > threshold``.
    n_estimators, learning_rate, max_depth, min_child_samples : tree parameters
    max_iter : int
    random_state : int
    n_classes : int, default 2
        More than 2: a softmax low-cost model (spec section 2.10).

    Returns
    -------
    BoostedGatePair

    Runtime complexity: O(max_iter * n_estimators * LightGBM tree cost).
    """
    n, k = X.shape
    params = {
        "objective": "none",
        "verbosity": -1,
        "num_threads": 1,
        "learning_rate": float(learning_rate),
        "max_depth": int(max_depth),
        "num_leaves": 2 ** int(max_depth),
        "min_data_in_leaf": int(min_child_samples),
        "min_sum_hessian_in_leaf": 0.0,
        "boost_from_average": False,
        "cegb_tradeoff": 1.0,
        "seed": int(random_state),
        "deterministic": True,
    }
    data = lgb.Dataset(
        X,
        free_raw_data=False,
        params={"verbosity": -1, "min_data_in_leaf": int(min_child_samples)},
    ).construct()
    rounds = _Rounds(X, data, params, groups, costs, gamma)
    _, _, lpc, bf = _boost(rounds, y, np.zeros(n), n_estimators, learning_rate, fit_gate=False,
                           n_classes=n_classes)
    f_score = _scores(lpc, bf, X)
    g_score = np.zeros(n)
    q_old = acc_old = None
    history = []
    pair = None
    for _ in range(max(1, int(max_iter))):
        A, B = lpc_branch_losses(lpc_loss(y, f_score), g_score, p0_true)
        q, _ = solve_q(A, B, p_full, mode)
        rounds = _Rounds(X, data, params, groups, costs, gamma)
        gate, bg, lpc, bf = _boost(rounds, y, q, n_estimators, learning_rate,
                                   n_classes=n_classes)
        pair = BoostedGatePair(gate, bg, lpc, bf)
        g_score, f_score = _scores(gate, bg, X), _scores(lpc, bf, X)
        lpc_right = y * f_score > 0 if f_score.ndim == 1 else np.argmax(f_score, axis=1) == y
        acc = float(np.mean(np.where(g_score > threshold, hpc_correct, lpc_right)))
        history.append((float(q.mean()), acc))
        if (
            q_old is not None
            and abs(acc - acc_old) < 1e-5
            and float(np.abs(q - q_old).sum()) < 1e-4 * n
        ):
            break
        q_old, acc_old = q, acc
    pair.history = history
    return pair
