"""An index over a given list of feature subsets: train one model per subset, no lattice search.

For small feature banks, tests and benchmarks: every listed subset is trained on its columns
and scored on a held-out split, and the candidates (cost = sum of the subset's feature
curves) go into a :class:`polydom.PolyDomIndex` wrapped as a :class:`polydom.Index`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from learners.sklearn_learner import estimator_name
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.errors import InvalidArgumentError
from polydom.index.built import Index
from polydom.index.polydom_index import PolyDomIndex

__all__ = ["all_subsets", "index_over_subsets", "subset_key", "with_costs"]


def subset_key(features: Iterable[str], order: Sequence[str]) -> str:
    """Key of a candidate on ``features``: names in ``order`` joined by ``+`` ("{}" if empty)."""
    chosen = set(features)
    return "+".join(f for f in order if f in chosen) or "{}"


def all_subsets(names: Sequence[str], max_size: int | None = None) -> list[frozenset]:
    """Every non-empty subset of ``names`` with at most ``max_size`` members (all when None).

    Runtime complexity: O(2**len(names)).
    """
    top = len(names) if max_size is None else min(int(max_size), len(names))
    return [frozenset(c) for k in range(1, top + 1) for c in itertools.combinations(names, k)]


def index_over_subsets(
    X: np.ndarray,
    y: np.ndarray,
    columns: Mapping[str, Sequence[int]],
    costs: Mapping[str, CostCurve | str],
    subsets: Iterable[Iterable[str]],
    estimator: Any,
    n_min: float = 0.0,
    n_max: float = float("inf"),
    test_size: float = 0.3,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> Index:
    """Train ``estimator`` on each subset's columns, score it held out, and index the models.

    Each subset becomes a candidate: key from :func:`subset_key`, accuracy on a stratified
    held-out split of ``(X, y)`` (the model kept is the one fitted on the rest), cost the
    sum of its features' curves, payload the fitted model.  A model receives the sorted
    union of its subset's columns (as :meth:`polydom.Index.model_columns` cuts them).

    Runtime complexity: one fit per subset, then the index build.

    Parameters
    ----------
    X : ndarray of shape (rows, columns)
        Every feature computed (full rows, the layout of ``columns``).
    y : ndarray of shape (rows,)
    columns : mapping of str to sequence of int
        Columns of each feature (e.g. ``Featurizer.columns``).
    costs : mapping of str to CostCurve or str
        Cost curve of each feature.
    subsets : iterable of iterables of str
        The feature sets to train (non-empty, known names).
    estimator : scikit-learn classifier
        Cloned for every subset; every candidate's ``learner`` is its
        :func:`learners.sklearn_learner.estimator_name` (``"sklearn:DecisionTreeClassifier"``).
    n_min, n_max : float
        Size domain of the index.
    test_size : float, default 0.3
    seed : int, default 0
    groups : ndarray of shape (rows,), optional
        Group of each row (e.g. the source image of an item rendered at several sizes):
        a group is never split between training and held-out rows, so the accuracy is not
        inflated by near-copies.  Rows are split stratified by label when None.

    Returns
    -------
    polydom.Index

    Raises
    ------
    ValueError
        On unknown feature names, an empty subset list or subset, or mismatched X and y.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise InvalidArgumentError(
            f"X must be 2-D with one row per label, got {X.shape} and {y.shape}")
    order = list(columns)
    curves = {name: CostCurve.coerce(costs[name]) for name in order if name in costs}
    sets = [frozenset(s) for s in subsets]
    if not sets:
        raise InvalidArgumentError("subsets must not be empty")
    for s in sets:
        if not s:
            raise InvalidArgumentError("every subset must name at least one feature")
        unknown = s - set(curves)
        if unknown:
            raise InvalidArgumentError(
                f"subset {sorted(s)} has features without columns or costs: "
                f"{sorted(unknown)}")
    rows = np.arange(len(y))
    if groups is None:
        train, test = train_test_split(rows, test_size=test_size, random_state=seed, stratify=y)
    else:
        groups = np.asarray(groups)
        if groups.shape[0] != y.shape[0]:
            raise InvalidArgumentError(f"groups must have one entry per row, got {groups.shape[0]}")
        split = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=seed)
        train, test = next(split.split(rows, y, groups))
    name = estimator_name(estimator)
    cands = []
    seen = set()
    for s in sets:
        key = subset_key(s, order)
        if key in seen:
            continue
        seen.add(key)
        cols = sorted({c for name in s for c in columns[name]})
        model = clone(estimator).fit(X[np.ix_(train, cols)], y[train])
        acc = float(np.mean(model.predict(X[np.ix_(test, cols)]) == y[test]))
        cost = CostCurve.total(curves[name] for name in s)
        cands.append(Candidate(key, acc, cost, features=s, payload=model, learner=name))
    table = PolyDomIndex.build(cands, n_min=n_min, n_max=n_max)
    info = {"subsets": len(cands), "test_size": test_size, "seed": seed}
    return Index(table, curves, columns={k: list(columns[k]) for k in curves}, info=info)


def with_costs(
    index: Index, costs: Mapping[str, CostCurve | str], keys: Iterable[Any] | None = None
) -> Index:
    """The same models re-indexed under other feature cost curves (e.g. a p90 fit).

    Every candidate (or those whose key is in ``keys``) keeps its key, accuracy (with its
    standard error and fold scores), features, model and learner; its cost becomes the sum of its
    features' new curves.  The domain is kept.

    Runtime complexity: the index build over the kept candidates.

    Raises
    ------
    ValueError
        If a candidate's feature has no curve in ``costs``, or no candidate is kept.
    """
    curves = {name: CostCurve.coerce(c) for name, c in costs.items()}
    wanted = None if keys is None else set(keys)
    cands = []
    for c in index.candidates:
        if wanted is not None and c.key not in wanted:
            continue
        missing = sorted(c.features - set(curves))
        if missing:
            raise InvalidArgumentError(f"costs has no curve for feature(s) {missing} of {c.key!r}")
        cost = CostCurve.total(curves[f] for f in c.features)
        cands.append(Candidate(c.key, c.accuracy, cost, features=c.features, payload=c.payload,
                               accuracy_se=c.accuracy_se, fold_scores=c.fold_scores,
                               learner=c.learner))
    lo, hi = index.table.domain
    table = PolyDomIndex.build(cands, n_min=lo, n_max=hi)
    return Index(table, curves, columns=index.columns, info=dict(index.info))
