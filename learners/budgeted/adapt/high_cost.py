"""The high-cost model of a gated learner: a fitted classifier, its per-row usage, storage.

ADAPT (Nan and Saligrama, NIPS 2017) puts a cheap gate in front of a given, accurate,
expensive model ``f0``.  :class:`HighCostModel` wraps that model with what the gated learner
needs from it:

* which columns of the full matrix it reads (all, or those of the features it was trained on
  when it comes out of an index), and its probabilities in the gated learner's class order;
* which columns each row *needs*: the union over the trees of the columns tested on the row's
  path for scikit-learn trees and forests, the model's own ``feature_usage`` for budgeted
  learners of this package (also behind a :class:`ColumnSubsetModel`), every column it reads
  for anything else (a dense model);
* storage without pickle: models of the ``learners`` package through their ``to_arrays``;
  scikit-learn estimators as a ``skops`` archive, written and loaded only under the one
  allow-list of stored models (:mod:`polydom.blobs.allowlist`, as ``storage``'s model blobs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from learners.budgeted.contract import ColumnSubsetModel
from learners.budgeted.former_names import current_class_path
from learners.budgeted.sklearn_blobs import dump_estimator, load_estimator
from polydom.blobs.model_registry import stored_class
from polydom.errors import InvalidArgumentError

__all__ = ["HighCostModel", "check_fitted_classifier"]



def check_fitted_classifier(model: Any, what: str = "high_cost_model") -> None:
    """Raise ``ValueError`` naming ``what`` unless ``model`` is a fitted probabilistic classifier.

    Runtime complexity: O(1).
    """
    if model is None or not callable(getattr(model, "predict_proba", None)):
        raise InvalidArgumentError(
            f"{what} must be a fitted classifier with predict_proba, got {model!r}")
    if getattr(model, "classes_", None) is None:
        raise InvalidArgumentError(
            f"{what} {type(model).__name__} is not fitted (it has no classes_)")
    if isinstance(model, BaseEstimator):
        try:
            check_is_fitted(model)
        except NotFittedError:
            raise InvalidArgumentError(f"{what} {type(model).__name__} is not fitted") from None


def _tree_column_usage(model: Any, X: np.ndarray) -> np.ndarray | None:
    """Rows x columns tested on each row's paths, for scikit-learn trees and forests."""
    estimators = getattr(model, "estimators_", None)
    if hasattr(model, "tree_"):
        trees = [model]
    elif (
        isinstance(estimators, list) and estimators and all(hasattr(e, "tree_") for e in estimators)
    ):
        trees = estimators
    else:
        return None
    usage = np.zeros(X.shape, dtype=bool)
    for tree in trees:
        path = tree.decision_path(X).tocsr()
        feature = tree.tree_.feature
        for i in range(X.shape[0]):
            nodes = path.indices[path.indptr[i] : path.indptr[i + 1]]
            cols = feature[nodes]
            usage[i, cols[cols >= 0]] = True
    return usage


class HighCostModel:
    """A fitted classifier reading some columns of the full matrix, with per-row usage.

    Parameters
    ----------
    estimator : fitted classifier
        Has ``predict_proba`` and ``classes_``.
    columns : sequence of int
        Columns of the full matrix it takes, in the order it takes them.
    n_columns : int
        Width of the full matrix.

    Runtime complexity of the constructor: O(columns).
    """

    def __init__(self, estimator: Any, columns: Sequence[int], n_columns: int) -> None:
        self.estimator = estimator
        self.columns = np.asarray(columns, dtype=np.int64)
        self.n_columns = int(n_columns)

    def _own(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64)[:, self.columns]

    def proba_of(self, X: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Probabilities of ``classes`` (rows x len(classes)), in that order.

        Raises ``ValueError`` when the model does not know one of ``classes``.
        Runtime complexity: that of ``predict_proba``.
        """
        known = list(np.asarray(self.estimator.classes_).tolist())
        missing = [c for c in np.asarray(classes).tolist() if c not in known]
        if missing:
            raise InvalidArgumentError(
                f"high_cost_model knows classes {known}, not {missing} (the labels of y)"
            )
        proba = np.asarray(self.estimator.predict_proba(self._own(X)), dtype=np.float64)
        return proba[:, [known.index(c) for c in np.asarray(classes).tolist()]]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The model's predictions.  Runtime complexity: that of its ``predict``."""
        return self.estimator.predict(self._own(X))

    def column_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x full-matrix columns: what the model needed for each row.

        Runtime complexity: O(rows * columns) plus the model's own path or usage computation.
        """
        X = np.asarray(X, dtype=np.float64)
        own = self._own(X)
        usage = np.zeros((X.shape[0], self.n_columns), dtype=bool)
        local = self._local_usage(own)
        usage[:, self.columns] = local
        return usage

    def _local_usage(self, own: np.ndarray) -> np.ndarray:
        est = self.estimator
        inner, inner_cols, width = est, None, own.shape[1]
        if isinstance(est, ColumnSubsetModel):
            inner, inner_cols, width = est.estimator, est.columns, est.n_columns
        if callable(getattr(inner, "feature_usage", None)) and hasattr(inner, "feature_groups_"):
            full = own
            if inner_cols is not None:
                full = np.full((own.shape[0], width), np.nan)
                full[:, inner_cols] = own
            by_group = np.asarray(inner.feature_usage(full), dtype=bool)
            cols_used = np.zeros((own.shape[0], width), dtype=bool)
            for g, cols in enumerate(inner.feature_groups_.values()):
                cols_used[:, list(cols)] |= by_group[:, [g]]
            return cols_used if inner_cols is None else cols_used[:, inner_cols]
        tree_usage = _tree_column_usage(est, own)
        if tree_usage is not None:
            return tree_usage
        return np.ones(own.shape, dtype=bool)

    # ---- storage without pickle ----
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """State as arrays + JSON: a ``learners`` model's own arrays or a skops archive.

        Runtime complexity: linear in the size of the model.

        Raises
        ------
        ValueError
            If the estimator is neither a ``learners`` model with ``to_arrays`` nor a
            scikit-learn estimator.
        """
        est = self.estimator
        cls = type(est)
        arrays: dict[str, np.ndarray] = {"columns": self.columns}
        meta: dict[str, Any] = {"n_columns": self.n_columns}
        if cls.__module__.startswith("learners.") and callable(getattr(est, "to_arrays", None)):
            inner, inner_meta = est.to_arrays()
            arrays.update({f"estimator.{k}": np.asarray(v) for k, v in inner.items()})
            meta.update(format="arrays", estimator=f"{cls.__module__}:{cls.__qualname__}")
            meta["estimator_meta"] = inner_meta
        elif isinstance(est, BaseEstimator):
            arrays["estimator.skops"] = dump_estimator(est, "high_cost_model")
            meta["format"] = "skops"
        else:
            raise InvalidArgumentError(
                f"high_cost_model {cls.__name__} cannot be stored without pickle: it must be a "
                "scikit-learn estimator or a learners model with to_arrays"
            )
        return arrays, meta

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
    ) -> HighCostModel:
        """Rebuild from :meth:`to_arrays`; refuses a class path nobody registered
        (before any import: :func:`polydom.blobs.model_registry.stored_class`) and skops
        archives naming what the allow-list of stored models refuses.

        Runtime complexity: linear in the size of the model.
        """
        inner = {k[len("estimator.") :]: v for k, v in arrays.items() if k.startswith("estimator.")}
        if meta["format"] == "arrays":
            est_cls = stored_class(current_class_path(str(meta["estimator"])),
                                   "its high-cost model")
            estimator = est_cls.from_arrays(inner, meta["estimator_meta"])
        elif meta["format"] == "skops":
            estimator = load_estimator(inner["skops"], "high_cost_model")
        else:
            raise InvalidArgumentError(f"unknown high-cost model format {meta['format']!r}")
        return cls(estimator, arrays["columns"], int(meta["n_columns"]))
