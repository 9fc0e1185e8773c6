"""Per-row decision paths of a LightGBM model: which columns each row needed, and how many splits.

LightGBM does not report the prediction cost of a row (its issue #3044).  This module reads the
trees out of ``Booster.dump_model()`` into flat arrays and derives, for every row,

* the set of columns tested on its root-to-leaf path in at least one tree (the *lazy* cost of
  the paper: a feature is paid once per row, the first time any tree needs it), and
* the number of split nodes it passes through over all trees (the evaluation cost,
  ``sum_k depth_k(leaf_k(x))``).

The per-row work reduces to leaf lookups: every leaf of every tree carries the mask of columns
on its path and its depth, so once the leaf of each (row, tree) is known (from LightGBM's own
``pred_leaf`` or from :meth:`TreeEnsemble.apply`), a row's usage is the OR of ``T`` leaf masks.

Decision rules follow LightGBM's ``Tree::NumericalDecision`` / ``CategoricalDecision``:

* numerical (``decision_type "<="``): NaN becomes 0 unless the missing type is ``NaN``; a
  *missing* value (``|x| <= 1e-35`` for missing type ``Zero``, NaN for ``NaN``) goes to the
  default side, anything else goes left when ``x <= threshold``;
* categorical (``"=="``): NaN or a negative value goes right, otherwise left when ``int(x)``
  is in the node's category set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["TreeArrays", "TreeEnsemble"]

_MISSING = {"None": 0, "Zero": 1, "NaN": 2}
_ZERO_THRESHOLD = 1e-35


@dataclass(frozen=True)
class TreeArrays:
    """One tree as flat arrays over its nodes (pre-order; the root is node 0).

    Attributes
    ----------
    feature : ndarray of int
        Split column of each node, -1 at leaves.
    threshold : ndarray of float
        Numerical threshold (NaN for categorical nodes and leaves).
    categories : tuple of (frozenset of int or None)
        Categories going left at categorical nodes; None elsewhere.
    missing : ndarray of int8
        0 = None, 1 = Zero, 2 = NaN (LightGBM's missing type).
    default_left : ndarray of bool
    left, right : ndarray of int
        Child node ids (-1 at leaves).
    value : ndarray of float
        Leaf value (0 at split nodes).
    leaf_index : ndarray of int
        LightGBM's leaf index at leaves (what ``pred_leaf`` returns), -1 at split nodes.
    depth : ndarray of int
        Number of split nodes above the node.
    """

    feature: np.ndarray
    threshold: np.ndarray
    categories: tuple
    missing: np.ndarray
    default_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf_index: np.ndarray
    depth: np.ndarray

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int((self.feature < 0).sum())

    @classmethod
    def from_dump(cls, structure: Mapping[str, Any]) -> TreeArrays:
        """Flatten one ``tree_structure`` of ``Booster.dump_model()``.

        Runtime complexity: O(nodes).
        """
        feature, threshold, cats, missing, dleft = [], [], [], [], []
        left, right, value, leaf_index, depth = [], [], [], [], []
        stack = [(structure, 0, -1, False)]
        while stack:
            node, d, parent, is_right = stack.pop()
            me = len(feature)
            if parent >= 0:
                (right if is_right else left)[parent] = me
            depth.append(d)
            left.append(-1)
            right.append(-1)
            if "split_feature" not in node:
                if node.get("leaf_coeff"):
                    raise InvalidArgumentError("booster: linear trees are not supported")
                feature.append(-1)
                threshold.append(np.nan)
                cats.append(None)
                missing.append(0)
                dleft.append(False)
                value.append(float(node["leaf_value"]))
                leaf_index.append(int(node.get("leaf_index", 0)))
                continue
            feature.append(int(node["split_feature"]))
            if node["decision_type"] == "<=":
                threshold.append(float(node["threshold"]))
                cats.append(None)
            elif node["decision_type"] == "==":
                threshold.append(np.nan)
                cats.append(frozenset(int(c) for c in str(node["threshold"]).split("||")))
            else:
                raise InvalidArgumentError(f"unknown decision_type {node['decision_type']!r}")
            missing.append(_MISSING[node["missing_type"]])
            dleft.append(bool(node["default_left"]))
            value.append(0.0)
            leaf_index.append(-1)
            # push right first so that the left subtree is numbered first (pre-order)
            stack.append((node["right_child"], d + 1, me, True))
            stack.append((node["left_child"], d + 1, me, False))
        return cls(
            np.asarray(feature, dtype=np.int64),
            np.asarray(threshold, dtype=np.float64),
            tuple(cats),
            np.asarray(missing, dtype=np.int8),
            np.asarray(dleft, dtype=bool),
            np.asarray(left, dtype=np.int64),
            np.asarray(right, dtype=np.int64),
            np.asarray(value, dtype=np.float64),
            np.asarray(leaf_index, dtype=np.int64),
            np.asarray(depth, dtype=np.int64),
        )

    @cached_property
    def lists(self) -> tuple[list, ...]:
        """The node arrays as Python lists (fast scalar access for single-item walks):
        ``(feature, threshold, categories, missing, default_left, left, right, value)``."""
        return (
            self.feature.tolist(),
            self.threshold.tolist(),
            list(self.categories),
            self.missing.tolist(),
            self.default_left.tolist(),
            self.left.tolist(),
            self.right.tolist(),
            self.value.tolist(),
        )

    def goes_left(self, node: int, x: float) -> bool:
        """LightGBM's decision at split ``node`` for the value ``x`` of its column.

        Runtime complexity: O(1).
        """
        _, threshold, categories, missing, default_left, _, _, _ = self.lists
        cats = categories[node]
        if cats is not None:
            if math.isnan(x):
                return False
            ix = int(x)
            return ix >= 0 and ix in cats
        miss = missing[node]
        if miss != 2 and math.isnan(x):
            x = 0.0
        if (miss == 1 and abs(x) <= _ZERO_THRESHOLD) or (miss == 2 and math.isnan(x)):
            return default_left[node]
        return x <= threshold[node]

    def _goes_left_many(self, node: int, x: np.ndarray) -> np.ndarray:
        cats = self.categories[node]
        miss = self.missing[node]
        if cats is not None:
            ix = np.trunc(np.where(np.isnan(x), -1.0, x))
            return np.isin(ix, np.fromiter(cats, dtype=np.float64)) & (ix >= 0)
        if miss != 2:
            x = np.where(np.isnan(x), 0.0, x)
        if miss == 1:
            is_missing = np.abs(x) <= _ZERO_THRESHOLD
        elif miss == 2:
            is_missing = np.isnan(x)
        else:
            is_missing = np.zeros(x.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            le = x <= self.threshold[node]
        return np.where(is_missing, self.default_left[node], le)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Node id of the leaf each row of ``X`` reaches (vectorised, level by level).

        Runtime complexity: O(rows * depth).
        """
        node = np.zeros(X.shape[0], dtype=np.int64)
        active = np.flatnonzero(self.feature[node] >= 0)
        while active.size:
            cur = node[active]
            nxt = np.empty_like(cur)
            for nd in np.unique(cur):
                sel = cur == nd
                go = self._goes_left_many(int(nd), X[active[sel], self.feature[nd]])
                nxt[sel] = np.where(go, self.left[nd], self.right[nd])
            node[active] = nxt
            active = active[self.feature[nxt] >= 0]
        return node


class TreeEnsemble:
    """The trees of a LightGBM booster with per-leaf path masks, for per-row cost accounting.

    Parameters
    ----------
    trees : list of TreeArrays
        In LightGBM's order (iteration-major, class-minor).
    n_columns : int
        Number of input columns.
    n_tree_per_iteration : int
        1 for binary/regression, the number of classes for multiclass.

    Attributes
    ----------
    leaf_columns : list of ndarray of bool, shape (n_leaves_t, n_columns)
        For tree ``t`` and LightGBM leaf index ``l``: the columns tested on the path to ``l``.
    leaf_depth : list of ndarray of int, shape (n_leaves_t,)
        Number of split nodes on the path to each leaf.
    used_columns : ndarray of bool, shape (n_columns,)
        Columns tested by any split of any tree (the model's worst-case feature set: every
        split node is reached by at least ``min_data_in_leaf`` training rows).
    """

    def __init__(
        self, trees: list[TreeArrays], n_columns: int, n_tree_per_iteration: int = 1
    ) -> None:
        self.trees = list(trees)
        self.n_columns = int(n_columns)
        self.n_tree_per_iteration = int(n_tree_per_iteration)
        self.leaf_columns: list[np.ndarray] = []
        self.leaf_depth: list[np.ndarray] = []
        self.leaf_node: list[np.ndarray] = []
        self.used_columns = np.zeros(self.n_columns, dtype=bool)
        for tree in self.trees:
            self._index_leaves(tree)

    def _index_leaves(self, tree: TreeArrays) -> None:
        n_leaves = tree.n_leaves
        masks = np.zeros((n_leaves, self.n_columns), dtype=bool)
        depths = np.zeros(n_leaves, dtype=np.int64)
        nodes = np.zeros(n_leaves, dtype=np.int64)
        # walk down, carrying the set of columns seen on the path
        stack = [(0, frozenset())]
        while stack:
            nd, seen = stack.pop()
            f = tree.feature[nd]
            if f < 0:
                leaf = tree.leaf_index[nd]
                masks[leaf, list(seen)] = True
                depths[leaf] = tree.depth[nd]
                nodes[leaf] = nd
                continue
            self.used_columns[f] = True
            stack.append((tree.left[nd], seen | {int(f)}))
            stack.append((tree.right[nd], seen | {int(f)}))
        self.leaf_columns.append(masks)
        self.leaf_depth.append(depths)
        self.leaf_node.append(nodes)

    @classmethod
    def from_booster(cls, booster: Any) -> TreeEnsemble:
        """Read the trees of a fitted ``lightgbm.Booster``.

        Runtime complexity: O(total nodes * n_columns / 64) (path masks).

        Raises
        ------
        ValueError
            For linear trees or ``average_output`` (random forest) models.
        """
        dump = booster.dump_model()
        if dump.get("average_output"):
            raise InvalidArgumentError(
                "booster: random-forest (average_output) models are not supported")
        trees = []
        for info in dump["tree_info"]:
            trees.append(TreeArrays.from_dump(info["tree_structure"]))
        return cls(trees, dump["max_feature_idx"] + 1, dump["num_tree_per_iteration"])

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.trees)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """LightGBM leaf index of every (row, tree), by our own traversal.

        Equals ``booster.predict(X, pred_leaf=True)``.

        Runtime complexity: O(rows * total depth).
        """
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros((X.shape[0], self.n_trees), dtype=np.int64)
        for t, tree in enumerate(self.trees):
            out[:, t] = tree.leaf_index[tree.apply(X)]
        return out

    def column_usage(self, leaves: np.ndarray) -> np.ndarray:
        """Columns each row needed over all trees, from its leaves (rows x trees).

        Runtime complexity: O(rows * trees * n_columns / 8) (byte-wise OR of leaf masks).
        """
        leaves = np.asarray(leaves, dtype=np.int64)
        self._check_leaves(leaves)
        used = np.zeros((leaves.shape[0], self.n_columns), dtype=bool)
        for t in range(self.n_trees):
            used |= self.leaf_columns[t][leaves[:, t]]
        return used

    def split_evaluations(self, leaves: np.ndarray) -> np.ndarray:
        """Number of split nodes each row passes over all trees (``sum_k depth_k``).

        Runtime complexity: O(rows * trees).
        """
        leaves = np.asarray(leaves, dtype=np.int64)
        self._check_leaves(leaves)
        total = np.zeros(leaves.shape[0], dtype=np.int64)
        for t in range(self.n_trees):
            total += self.leaf_depth[t][leaves[:, t]]
        return total

    def raw_score(self, leaves: np.ndarray) -> np.ndarray:
        """Raw (margin) scores, shape (rows, n_tree_per_iteration), from the leaves.

        Runtime complexity: O(rows * trees).
        """
        leaves = np.asarray(leaves, dtype=np.int64)
        self._check_leaves(leaves)
        out = np.zeros((leaves.shape[0], self.n_tree_per_iteration))
        for t, tree in enumerate(self.trees):
            out[:, t % self.n_tree_per_iteration] += tree.value[self.leaf_node[t][leaves[:, t]]]
        return out

    def _check_leaves(self, leaves: np.ndarray) -> None:
        if leaves.ndim != 2 or leaves.shape[1] != self.n_trees:
            raise InvalidArgumentError(
                f"leaves must have shape (rows, {self.n_trees}), got {leaves.shape}")
