"""Check a stored scikit-learn decision tree's arrays before scikit-learn may run it.

scikit-learn's ``Tree`` follows ``left_child``/``right_child`` indices and reads
``X[i, feature]`` without bounds checks (compiled code): a stored tree whose child points
past the node array, back to an ancestor, or whose feature index exceeds the width of the
rows crashes or hangs the process on ``predict``.  :func:`check_tree_state` checks the
state a stored ``Tree`` is built from (``Tree(n_features, n_classes, n_outputs)`` and its
``__setstate__`` dict) before it is built:

* ``nodes`` has scikit-learn's node dtype, ``node_count`` entries, and ``values`` has shape
  ``(node_count, n_outputs, max(n_classes))`` of float64;
* node ``i`` is a leaf (both children ``-1``) or has two distinct children ``> i`` and a
  feature in ``[0, n_features)``; every node but the root is the child of exactly one node
  (so the nodes form one tree, and every walk from the root ends at a leaf within
  ``node_count`` steps);
* ``max_depth`` is at least the depth of the tree; ``missing_go_to_left`` is 0 or 1;
* ``n_features``, ``n_outputs`` and the class counts are positive and bounded.

Runtime complexity: O(node_count) numpy work.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_CLASSES", "MAX_FEATURES", "MAX_OUTPUTS", "tree_state_problem"]

#: Bounds on what a stored tree may declare.
MAX_FEATURES = 10**7
MAX_OUTPUTS = 10**4
MAX_CLASSES = 10**6


def _count(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def tree_state_problem(
    n_features: object,
    n_classes: np.ndarray,
    n_outputs: object,
    node_count: object,
    max_depth: object,
    nodes: np.ndarray,
    values: np.ndarray,
) -> str | None:
    """What is wrong with a stored tree's state (None: it is a well-formed tree).

    Runtime complexity: O(node_count).
    """
    from sklearn.tree._tree import NODE_DTYPE

    if not _count(n_features, 1, MAX_FEATURES):
        return f"n_features {n_features!r} is not in [1, {MAX_FEATURES}]"
    if not _count(n_outputs, 1, MAX_OUTPUTS):
        return f"n_outputs {n_outputs!r} is not in [1, {MAX_OUTPUTS}]"
    n_classes = np.asarray(n_classes)
    if (n_classes.dtype.kind not in "iu" or n_classes.shape != (n_outputs,)
            or n_classes.min() < 1 or n_classes.max() > MAX_CLASSES):
        return f"n_classes {n_classes[:8]} is not {n_outputs} counts in [1, {MAX_CLASSES}]"
    if nodes.dtype != NODE_DTYPE or nodes.ndim != 1:
        return f"nodes of dtype {nodes.dtype} and shape {nodes.shape} are not tree nodes"
    count = len(nodes)
    if not _count(node_count, 1, max(count, 1)) or node_count != count:
        return f"node_count {node_count!r} differs from the {count} nodes stored"
    shape = (count, n_outputs, int(n_classes.max()))
    if values.dtype != np.float64 or values.shape != shape:
        return f"values of dtype {values.dtype} and shape {values.shape}, not float64 {shape}"
    left = nodes["left_child"]
    right = nodes["right_child"]
    index = np.arange(count)
    leaf = left == -1
    if np.any(leaf != (right == -1)):
        return "a node has exactly one child"
    inner = ~leaf
    if np.any(inner & ((left <= index) | (right <= index) | (left >= count)
                       | (right >= count) | (left == right))):
        return "a node's child is out of range or not after it"
    feature = nodes["feature"]
    if np.any(inner & ((feature < 0) | (feature >= n_features))):
        return f"a node splits on a feature outside [0, {n_features})"
    children = np.concatenate([left[inner], right[inner]])
    if len(children) != count - 1 or len(np.unique(children)) != count - 1:
        return "the nodes do not form one tree (a node has two parents or none)"
    if not np.all(np.isin(nodes["missing_go_to_left"], (0, 1))):
        return "missing_go_to_left is not 0 or 1"
    depth = np.zeros(count, dtype=np.int64)
    for i in np.flatnonzero(inner).tolist():  # parents come before their children
        depth[left[i]] = depth[right[i]] = depth[i] + 1
    if not _count(max_depth, int(depth.max()), count):
        return f"max_depth {max_depth!r} is below the tree's depth {int(depth.max())}"
    return None
