"""The DAG's classifier bank: one fitted model per sensor subset and its out-of-fold losses.

The paper assumes the bank ``f_s`` "given and pre-trained" (section 2).  Its per-row 0/1
losses on the training rows are the stop-and-classify costs of Graph Reduce; they must be
out-of-fold (spec 3): in-sample errors of a flexible ``f_s`` are near 0 and make every policy
stop early.  A subset's entry is therefore a model fitted on all rows plus the out-of-fold
predictions of k-fold cross-validation (k + 1 fits).

The bank can reuse what the Poly-Dom lattice already trained: an ``Exploration.expanded``
mapping (or a store's expansions) of ``frozenset(names) -> Expansion``.  An expansion whose
``predictions`` hold out-of-fold predictions of the same training rows (what
:class:`learners.SklearnLearner` records with k-fold ``cv``) costs no training at all; one
with a model only (e.g. from a store written before predictions were kept) needs the k
fold fits for its losses, not the final fit.  Every model reads its subset's columns as the
sorted union of its sensors' columns (the column order of ``SklearnLearner`` and
``polydom.CostModel``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from polydom.errors import InvalidArgumentError

__all__ = ["BankEntry", "SubsetBank", "train_bank"]


@dataclass(frozen=True)
class BankEntry:
    """One subset's classifier.

    Attributes
    ----------
    model : fitted classifier
        Trained on all training rows, reading the sorted union of the subset's columns.
    predictions : ndarray of shape (n,)
        Out-of-fold predictions on the training rows (the source of the SC losses).
    fits : int
        Estimator fits this entry cost (0 when reused whole from the lattice).
    """

    model: Any = field(repr=False)
    predictions: np.ndarray = field(repr=False)
    fits: int = 0


class SubsetBank:
    """Classifiers for sensor subsets, with their out-of-fold predictions on the training rows.

    A bank is immutable once built; copies (``copy.deepcopy``, ``sklearn.clone`` of an
    estimator holding it) share it, so a budget sweep trains the bank once.

    Parameters
    ----------
    entries : mapping of frozenset to BankEntry
    n_rows : int
        Number of training rows the predictions cover.
    fit_seconds : float
        Wall time spent training entries.
    """

    def __init__(
        self, entries: Mapping[frozenset, BankEntry], n_rows: int, fit_seconds: float = 0.0
    ) -> None:
        self._entries = dict(entries)
        self.n_rows = int(n_rows)
        self.fit_seconds = float(fit_seconds)
        #: Block selections made on these rows (``subsets="greedy"``/``"forward"``), by the
        #: settings that decide them: a fit given this bank reuses a matching one instead of
        #: selecting again (:meth:`DAGClassifier.fit`).
        self.selections: dict[tuple, Any] = {}

    def __deepcopy__(self, memo: dict) -> SubsetBank:
        return self

    def __contains__(self, subset: Iterable[str]) -> bool:
        return frozenset(subset) in self._entries

    def __getitem__(self, subset: Iterable[str]) -> BankEntry:
        return self._entries[frozenset(subset)]

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def subsets(self) -> list[frozenset]:
        """The subsets the bank holds."""
        return list(self._entries)

    @property
    def fits(self) -> int:
        """Estimator fits spent on the bank (reused entries count what they cost here)."""
        return sum(e.fits for e in self._entries.values())

    def losses(self, subsets: Sequence[frozenset], y: np.ndarray) -> np.ndarray:
        """0/1 out-of-fold losses, rows x subsets: ``1[f_s(x_i) != y_i]``.

        Runtime complexity: O(n * len(subsets)).
        """
        y = np.asarray(y)
        return np.column_stack(
            [(self._entries[frozenset(s)].predictions != y).astype(np.float64) for s in subsets]
        )


def _folds(y: np.ndarray, cv: int) -> int:
    _, counts = np.unique(y, return_counts=True)
    return int(min(cv, counts.min()))


def _oof_and_model(estimator: Any, X: np.ndarray, y: np.ndarray, cv: int) -> tuple:
    """Out-of-fold predictions (k fits, stratified) and the model on all rows (1 fit)."""
    k = _folds(y, cv)
    if k >= 2:
        oof = cross_val_predict(
            clone(estimator), X, y, cv=StratifiedKFold(n_splits=k)
        )
        fits = k
    else:  # a class with one row: nothing to hold out, in-sample losses
        oof, fits = None, 0
    model = clone(estimator).fit(X, y)
    if oof is None:
        oof = model.predict(X)
    return np.asarray(oof), model, fits + 1


def _oof_only(estimator: Any, X: np.ndarray, y: np.ndarray, cv: int, model: Any) -> tuple:
    k = _folds(y, cv)
    if k < 2:
        return np.asarray(model.predict(X)), 0
    oof = cross_val_predict(clone(estimator), X, y, cv=StratifiedKFold(n_splits=k))
    return np.asarray(oof), k


def train_bank(
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    sensor_columns: Mapping[str, Sequence[int]],
    subsets: Iterable[Iterable[str]],
    cv: int = 5,
    reuse: SubsetBank | Mapping[frozenset, Any] | None = None,
) -> SubsetBank:
    """Train (or reuse) a classifier and out-of-fold predictions for every subset.

    Parameters
    ----------
    estimator : scikit-learn classifier
        Cloned per subset; the empty subset (and any subset when ``y`` has one class) gets
        ``DummyClassifier(strategy="most_frequent")``.
    X, y : training rows and labels
    sensor_columns : mapping of str to list of int
        Columns of every sensor; a subset's model reads the sorted union of its sensors'
        columns.
    subsets : iterable of iterable of str
    cv : int, default 5
        Folds of the (stratified) out-of-fold predictions; fewer when a class has fewer rows,
        in-sample predictions when a class has one row.
    reuse : SubsetBank or mapping of frozenset to Expansion / BankEntry / model, optional
        Already trained subsets.  An entry with out-of-fold ``predictions`` over the same
        ``n`` rows is taken whole; a bare model (or an Expansion without predictions) is kept
        and only its out-of-fold predictions are computed.

    Returns
    -------
    SubsetBank

    Runtime complexity: ``cv + 1`` fits per subset that is not reused.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    single = len(np.unique(y)) < 2
    names = list(sensor_columns)
    entries: dict[frozenset, BankEntry] = {}
    start = time.perf_counter()
    for s in subsets:
        s = frozenset(s)
        if s in entries:
            continue
        unknown = sorted(s - set(names))
        if unknown:
            raise InvalidArgumentError(f"subset {sorted(s)} names unknown sensors {unknown}")
        cols = sorted({int(c) for m in names if m in s for c in sensor_columns[m]})
        est = (
            DummyClassifier(strategy="most_frequent") if single or not cols else estimator
        )
        Xs = X[:, cols]
        found = _reused(reuse, s)
        if found is None:
            oof, model, fits = _oof_and_model(est, Xs, y, cv)
        else:
            model, oof = found
            fits = 0
            if oof is None or len(oof) != len(y):
                oof, fits = _oof_only(est, Xs, y, cv, model)
        entries[s] = BankEntry(model, np.asarray(oof), fits)
    return SubsetBank(entries, len(y), time.perf_counter() - start)


def _reused(reuse: Any, s: frozenset) -> tuple[Any, np.ndarray | None] | None:
    if reuse is None or s not in reuse:
        return None
    item = reuse[s]
    if isinstance(item, BankEntry):
        return item.model, item.predictions
    model = getattr(item, "model", item)
    if model is None:  # an Expansion of a scoring-only learner: nothing to reuse
        return None
    preds = getattr(item, "predictions", None)
    return model, None if preds is None else np.asarray(preds)


