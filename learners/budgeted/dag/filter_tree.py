"""Cost-sensitive learning over k actions by a filter tree of importance-weighted binaries.

Beygelzimer, Langford & Ravikumar (2007), the ``Learn`` of Wang et al.'s Eq. 8 (spec 2.3).
The k actions are the leaves of a balanced tournament.  Internal matches are trained level by
level from the leaves up, each on **all** examples: for example ``i`` with cost vector
``w_i``, let ``a`` and ``b`` be the winners of the two sub-tournaments on ``x_i`` (from the
classifiers already trained below); the binary label is ``1[w_i[b] < w_i[a]]`` ("the right
side wins") and the importance weight ``|w_i[a] - w_i[b]|``; examples of weight 0 are dropped.
A match left with no example, or with one label only, is the constant with the larger total
weight.  Prediction runs the tournament from the leaves up.

Weights are divided by their mean before a binary fit: the cost-sensitive problem is
unchanged by scaling, and the binary learner's regularisation then does not depend on the
units of the costs (a design decision, not in the paper: with tiny sensor costs, raw weights
would let the regulariser flatten every policy).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

__all__ = ["ConstantPolicy", "FilterTree", "fit_weighted"]


def fit_weighted(estimator: Any, X: np.ndarray, y: np.ndarray, weight: np.ndarray) -> Any:
    """Fit ``estimator`` with per-row importance weights (a Pipeline's last step gets them).

    Runtime complexity: that of the estimator's fit.
    """
    if isinstance(estimator, Pipeline):
        return estimator.fit(X, y, **{f"{estimator.steps[-1][0]}__sample_weight": weight})
    return estimator.fit(X, y, sample_weight=weight)


class ConstantPolicy:
    """The policy that always takes one action (the root, which sees no features).

    Parameters
    ----------
    action : int
    """

    def __init__(self, action: int) -> None:
        self.action = int(action)

    @classmethod
    def fit(cls, W: np.ndarray) -> ConstantPolicy:
        """The action of least total cost, ``argmin_a sum_i W[i, a]`` (ties: the lowest a).

        Runtime complexity: O(n k).
        """
        return cls(int(np.argmin(np.asarray(W, dtype=np.float64).sum(axis=0))))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The action for every row.  Runtime complexity: O(rows)."""
        return np.full(len(X), self.action, dtype=np.int64)

    def possible_actions(self) -> set[int]:
        """The actions some row may get: the constant one."""
        return {self.action}


class FilterTree:
    """A filter tree over ``k`` actions with a binary classifier per match.

    Parameters
    ----------
    estimator : scikit-learn classifier
        Cloned for every match; fitted with ``sample_weight`` (:func:`fit_weighted`).

    Attributes
    ----------
    n_actions_ : int
    levels_ : list of list of (int, int, object)
        Per level, the matches ``(left slot, right slot, model)``; ``model`` is a fitted
        classifier or the constant ``0`` (left wins) / ``1`` (right wins).  A slot left
        unpaired at a level passes to the next.
    n_fits_ : int
        Binary classifiers fitted (at most ``k - 1``).
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    @staticmethod
    def _pairs(n_slots: int) -> list[tuple[int, int]]:
        return [(i, i + 1) for i in range(0, n_slots - 1, 2)]

    def fit(self, X: np.ndarray, W: np.ndarray) -> FilterTree:
        """Learn the tournament on rows ``X`` with cost vectors ``W`` (rows x k).

        Runtime complexity: ``k - 1`` weighted binary fits on at most n rows, plus
        O(n k) predictions.
        """
        X = np.asarray(X, dtype=np.float64)
        W = np.asarray(W, dtype=np.float64)
        n, k = W.shape
        rows = np.arange(n)
        self.n_actions_ = k
        self.levels_ = []
        self.n_fits_ = 0
        winners = np.tile(np.arange(k), (n, 1))
        while winners.shape[1] > 1:
            level, nxt = [], []
            for left, right in self._pairs(winners.shape[1]):
                a, b = winners[:, left], winners[:, right]
                wa, wb = W[rows, a], W[rows, b]
                label = (wb < wa).astype(np.int64)
                weight = np.abs(wa - wb)
                keep = weight > 0
                model: Any
                if not keep.any():
                    model = 0
                elif label[keep].min() == label[keep].max():
                    model = int(label[keep][0])
                else:
                    model = fit_weighted(
                        clone(self.estimator),
                        X[keep],
                        label[keep],
                        weight[keep] / weight[keep].mean(),
                    )
                    self.n_fits_ += 1
                level.append((left, right, model))
                nxt.append(np.where(self._right_wins(model, X), b, a))
            if winners.shape[1] % 2:
                nxt.append(winners[:, -1])
            self.levels_.append(level)
            winners = np.column_stack(nxt)
        return self

    @staticmethod
    def _right_wins(model: Any, X: np.ndarray) -> np.ndarray:
        if isinstance(model, int):
            return np.full(len(X), bool(model))
        return np.asarray(model.predict(X)) == 1

    def possible_actions(self) -> set[int]:
        """The actions some row may get: a constant match passes one side's winners on.

        Runtime complexity: O(k log k).
        """
        slots = [{a} for a in range(self.n_actions_)]
        for level in self.levels_:
            nxt = []
            for left, right, model in level:
                if isinstance(model, int):
                    nxt.append(slots[right] if model else slots[left])
                else:
                    nxt.append(slots[left] | slots[right])
            if len(slots) % 2:
                nxt.append(slots[-1])
            slots = nxt
        return slots[0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The winning action of every row.

        Runtime complexity: ``k - 1`` binary predictions on the rows.
        """
        X = np.asarray(X, dtype=np.float64)
        winners = np.tile(np.arange(self.n_actions_), (len(X), 1))
        for level in self.levels_:
            nxt = [
                np.where(self._right_wins(model, X), winners[:, r], winners[:, left])
                for left, r, model in level
            ]
            if winners.shape[1] % 2:
                nxt.append(winners[:, -1])
            winners = np.column_stack(nxt)
        return winners[:, 0]
