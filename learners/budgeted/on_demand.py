"""On-demand features: compute a feature of one item only when a model's path needs it.

A budgeted tree model served item by item (:meth:`CEGBClassifier.predict_item`) walks its
trees node by node; at a split on a column whose feature is not computed yet, it asks an
:class:`OnDemandFeaturizer` for that feature (timed) and caches its values for the remaining
trees.  Features off the item's paths are never computed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from learners.budgeted.tree_paths import TreeEnsemble
from polydom.errors import InvalidArgumentError

__all__ = ["OnDemandFeaturizer", "OnDemandRow", "compute_feature", "walk_on_demand"]


@runtime_checkable
class OnDemandFeaturizer(Protocol):
    """What on-demand prediction needs to compute features one at a time.

    ``compute(item, name)`` returns the values of feature ``name`` for ``item``: one number per
    column of the feature, in the order of the model's ``feature_groups_[name]`` (a scalar for
    a one-column feature), or an object with ``.vector`` (those values) and ``.seconds`` (its
    own timing of the routine), as ``polydom.Featurizer.compute`` returns.  Feature names are
    the model's ``feature_names_`` (``"x{j}"`` for column ``j`` without ``feature_groups``).
    """

    def compute(self, item: Any, name: str) -> np.ndarray:  # pragma: no cover - protocol
        ...


def compute_feature(
    featurizer: OnDemandFeaturizer, item: Any, name: str, width: int
) -> tuple[np.ndarray, float]:
    """Compute feature ``name`` of ``item``: its ``width`` values and the seconds it took.

    The featurizer's own timing (``.seconds`` of its result, as ``polydom.Featurizer``
    gives) is used when present, else the wall time of the call.

    Runtime complexity: that of the feature's routine.

    >>> class Twice:
    ...     def compute(self, item, name):
    ...         return [2 * item, 3 * item]
    >>> compute_feature(Twice(), 1.5, "f", 2)[0].tolist()
    [3.0, 4.5]

    Raises
    ------
    ValueError
        If the result does not hold ``width`` numbers.
    """
    start = time.perf_counter()
    result = featurizer.compute(item, name)
    elapsed = time.perf_counter() - start
    values = np.asarray(getattr(result, "vector", result), dtype=np.float64).ravel()
    if values.shape != (width,):
        raise InvalidArgumentError(
            f"featurizer.compute(item, {name!r}) must return {width} values, "
            f"got shape {values.shape}"
        )
    return values, float(getattr(result, "seconds", elapsed))


@dataclass(frozen=True)
class OnDemandRow:
    """What walking a tree ensemble on demand produced for one item.

    Attributes
    ----------
    raw_score : ndarray
        Summed leaf values, one per tree of a boosting iteration.
    computed : tuple of str
        Features computed, in the order they were first needed.
    feature_seconds : dict of str to float
        Seconds of each computed feature.
    split_evaluations : int
        Split nodes evaluated over all trees.
    """

    raw_score: np.ndarray
    computed: tuple
    feature_seconds: dict
    split_evaluations: int


def walk_on_demand(
    ensemble: TreeEnsemble,
    groups: Mapping[str, Sequence[int]],
    n_columns: int,
    item: Any,
    featurizer: OnDemandFeaturizer,
) -> OnDemandRow:
    """Walk every tree of ``ensemble`` for ``item``, computing features as splits need them.

    ``groups`` maps each feature to its columns (a partition of the ``n_columns`` columns
    the ensemble was trained on).  The leaf values are summed per tree of an iteration, so
    the raw score equals the batch prediction on the item's full feature row.

    Runtime complexity: O(total depth) plus the computed features.

    Raises
    ------
    ValueError
        If ``featurizer`` has no ``compute`` method or returns the wrong number of values.
    """
    if not callable(getattr(featurizer, "compute", None)):
        raise InvalidArgumentError(
            f"featurizer must have a compute(item, name) method, got {featurizer!r}"
        )
    owner = np.empty(n_columns, dtype=object)
    for name, cols in groups.items():
        owner[list(cols)] = name
    x = [math.nan] * n_columns
    seconds: dict[str, float] = {}
    order: list[str] = []
    K = ensemble.n_tree_per_iteration
    raw = np.zeros(K)
    n_splits = 0
    for t, tree in enumerate(ensemble.trees):
        feature, _, _, _, _, left, right, value = tree.lists
        node = 0
        while feature[node] >= 0:
            col = feature[node]
            name = owner[col]
            if name not in seconds:
                cols = groups[name]
                values, seconds[name] = compute_feature(featurizer, item, name, len(cols))
                for c, v in zip(cols, values.tolist(), strict=True):
                    x[c] = v
                order.append(name)
            n_splits += 1
            node = left[node] if tree.goes_left(node, x[col]) else right[node]
        raw[t % K] += value[node]
    return OnDemandRow(raw, tuple(order), seconds, n_splits)
