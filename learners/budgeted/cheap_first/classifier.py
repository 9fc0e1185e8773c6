"""CheapFirstClassifier: the toy budgeted learner of docs/budgeted_learners.md.

Two logistic regressions: every row gets the
one on the cheapest feature; a row whose top class there has probability below
``1 - tradeoff`` also buys every other feature and gets the one on all features.  A larger
``tradeoff`` lets more rows stop early: cheaper, less accurate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from learners.budgeted.contract import BudgetedClassifierMixin, check_feature_costs, params_json
from learners.columns import column_groups
from polydom.errors import InvalidArgumentError

__all__ = ["CheapFirstClassifier"]


class CheapFirstClassifier(BudgetedClassifierMixin, ClassifierMixin, BaseEstimator):
    """Cheapest feature first; every feature for the rows it is unsure of.

    Parameters
    ----------
    feature_costs : sequence or mapping of float, optional
        Cost of each feature (column group); None: all 0.
    tradeoff : float in [0, 1], default 0.1
        A row stops after the cheap model when its top class has probability >= 1 - tradeoff.
    feature_groups : mapping of str to list of int, optional
        Named column groups; default one feature ``"x{j}"`` per column.

    Fit: two logistic regressions; predict and ``feature_usage``: O(rows * columns).
    """

    learner_name = "cheap-first"  # its name in learners.registry

    def __init__(self, feature_costs: Sequence[float] | Mapping[str, float] | None = None,
                 tradeoff: float = 0.1,
                 feature_groups: Mapping[str, Sequence[int]] | None = None) -> None:
        self.feature_costs = feature_costs
        self.tradeoff = tradeoff
        self.feature_groups = feature_groups

    def fit(self, X: np.ndarray, y: np.ndarray) -> CheapFirstClassifier:
        """Fit the cheap model and the full one.  Returns self."""
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        if not (isinstance(self.tradeoff, int | float) and 0 <= self.tradeoff <= 1):
            raise InvalidArgumentError(
                f"tradeoff must be a number in [0, 1], got {self.tradeoff!r}")
        self.feature_groups_ = column_groups(self.feature_groups, X.shape[1])
        self.cheap_ = int(np.argmin(self._costs()))
        self.mean_, self.scale_ = X.mean(axis=0), X.std(axis=0) + 1e-12
        Z = (X - self.mean_) / self.scale_
        first = LogisticRegression(max_iter=1000).fit(Z[:, self._cheap_columns()], y)
        full = LogisticRegression(max_iter=1000).fit(Z, y)
        self.classes_ = first.classes_
        self.coefs_ = [first.coef_, first.intercept_, full.coef_, full.intercept_]
        self.used_features_ = np.ones(len(self.feature_groups_), dtype=bool)
        return self

    def _costs(self) -> np.ndarray:
        """One cost per feature, in the order of ``feature_groups_``: the contract's check."""
        return check_feature_costs(self.feature_costs, list(self.feature_groups_))

    def _cheap_columns(self) -> list[int]:
        return list(self.feature_groups_.values())[self.cheap_]

    @staticmethod
    def _proba(Z: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
        scores = Z @ coef.T + intercept
        if scores.shape[1] == 1:  # binary: one score, for classes_[1]
            return np.column_stack([expit(-scores[:, 0]), expit(scores[:, 0])])
        return softmax(scores, axis=1)

    def _stages(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Standardised rows, the cheap model's probabilities, and which rows stop there."""
        check_is_fitted(self)
        Z = (validate_data(self, X, reset=False) - self.mean_) / self.scale_
        first = self._proba(Z[:, self._cheap_columns()], *self.coefs_[:2])
        return Z, first, first.max(axis=1) >= 1.0 - self.tradeoff

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """The cheap model's probabilities where a row stops, the full model's elsewhere."""
        Z, first, stops = self._stages(X)
        return np.where(stops[:, None], first, self._proba(Z, *self.coefs_[2:]))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted classes."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x features: the cheapest feature always, every feature where a row goes on."""
        _, _, stops = self._stages(X)
        usage = np.repeat(~stops[:, None], len(self.feature_groups_), axis=1)
        usage[:, self.cheap_] = True
        return usage

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as arrays + JSON: how an index store keeps it (no pickle)."""
        arrays = {f"coef{i}": a for i, a in enumerate(self.coefs_)}
        arrays.update(mean=self.mean_, scale=self.scale_, classes=self.classes_)
        params = params_json({"tradeoff": float(self.tradeoff),  # the parameters, as JSON
                              "feature_costs": self.feature_costs,
                              "feature_groups": self.feature_groups})
        return arrays, {"params": params, "cheap": self.cheap_,
                        "groups": [[k, v] for k, v in self.feature_groups_.items()]}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray],
                    meta: Mapping[str, Any]) -> CheapFirstClassifier:
        """The fitted model :meth:`to_arrays` describes."""
        model = cls(**meta["params"])
        model.feature_groups_ = {str(k): [int(c) for c in v] for k, v in meta["groups"]}
        model.cheap_ = int(meta["cheap"])
        model.mean_, model.scale_ = arrays["mean"], arrays["scale"]
        model.n_features_in_ = len(model.mean_)
        model.classes_ = arrays["classes"]
        model.coefs_ = [arrays[f"coef{i}"] for i in range(4)]
        model.used_features_ = np.ones(len(model.feature_groups_), dtype=bool)
        return model

