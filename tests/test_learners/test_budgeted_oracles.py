"""Budgeted-learner cost accounting against oracles that share no code with it: hand-computed
fixtures for the contract's usage -> cost functions, and CEGB's usage and split counts read
from LightGBM's own tree dump and leaf assignment (not from learners.budgeted.tree_paths)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import polydom
from learners.budgeted.contract import (
    expected_cost_curve,
    group_usage,
    row_costs,
    worst_cost_curve,
)

NAMES = ["a", "b", "c"]
COSTS = {"a": "1 + 2*n", "b": "3*n**2", "c": "5"}
USAGE = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=bool)


def test_expected_cost_is_the_usage_weighted_sum_by_hand():
    # P(a) = 2/4, P(b) = 1/4, P(c) = 3/4:
    # 0.5 (1 + 2n) + 0.25 (3 n^2) + 0.75 * 5 = 4.25 + n + 0.75 n^2
    curve = expected_cost_curve(USAGE, COSTS, NAMES)
    np.testing.assert_allclose(curve.coefficients, [4.25, 1.0, 0.75], rtol=1e-15)


def test_worst_cost_is_the_sum_over_every_feature_any_row_used_by_hand():
    np.testing.assert_allclose(worst_cost_curve(USAGE, COSTS, NAMES).coefficients, [6, 2, 3])
    np.testing.assert_allclose(worst_cost_curve(USAGE[:2], COSTS, NAMES).coefficients, [6, 2])
    assert worst_cost_curve(USAGE[3:], COSTS, NAMES) == polydom.CostCurve([0])


def test_row_costs_by_hand():
    # at n = 2: a = 5, b = 12, c = 5
    np.testing.assert_allclose(row_costs(USAGE, COSTS, NAMES, 2.0), [10.0, 5.0, 22.0, 0.0])


def test_group_usage_by_hand():
    cols = np.array([[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [1, 0, 1, 0]], dtype=bool)
    got = group_usage(cols, {"x": [0, 2], "y": [1], "z": [3]})
    np.testing.assert_array_equal(got, [[0, 1, 0], [0, 0, 1], [0, 0, 0], [1, 0, 0]])


# ---------------------------------------------------------------------------- CEGB vs LightGBM
def paths_from_dump(booster) -> list[dict[int, list[int]]]:
    """For each tree: leaf index -> split columns on the root-to-leaf path (LightGBM's dump)."""
    out = []
    for tree in booster.dump_model()["tree_info"]:
        leaves: dict[int, list[int]] = {}
        stack = [(tree["tree_structure"], [])]
        while stack:
            node, path = stack.pop()
            if "leaf_index" in node or "split_feature" not in node:
                leaves[node.get("leaf_index", 0)] = path
                continue
            here = [*path, node["split_feature"]]
            stack += [(node["left_child"], here), (node["right_child"], here)]
        out.append(leaves)
    return out


@pytest.fixture(scope="module")
def cegb_model():
    lightgbm = pytest.importorskip("lightgbm")
    assert lightgbm
    from learners import CEGBClassifier

    X, y = load_breast_cancer(return_X_y=True)
    groups = {f"g{j}": [j, j + 10, j + 20] for j in range(10)}
    clf = CEGBClassifier(feature_groups=groups, n_estimators=12, num_leaves=8, tradeoff=0.002,
                         feature_costs={g: 1.0 + j for j, g in enumerate(groups)},
                         random_state=0).fit(X[:400], y[:400])
    return clf, X[400:], groups


def test_cegb_usage_and_split_counts_equal_lightgbms_own_paths(cegb_model):
    clf, X, groups = cegb_model
    leaves = clf.booster_.predict(X, pred_leaf=True).reshape(len(X), -1)
    paths = paths_from_dump(clf.booster_)
    group_of = {col: k for k, cols in enumerate(groups.values()) for col in cols}
    want_usage = np.zeros((len(X), len(groups)), dtype=bool)
    want_splits = np.zeros(len(X), dtype=int)
    for r in range(len(X)):
        for t, leaf in enumerate(leaves[r]):
            path = paths[t][int(leaf)]
            want_splits[r] += len(path)
            for col in path:
                want_usage[r, group_of[col]] = True
    assert 0 < want_usage.mean() < 1  # adaptive: the check is not vacuous
    np.testing.assert_array_equal(clf.feature_usage(X), want_usage)
    np.testing.assert_array_equal(clf.split_evaluations(X), want_splits)
    # and the expected cost of the model is the mean of the per-row sums, at any size
    costs = {g: f"{1 + k} + {0.5 * k}*n" for k, g in enumerate(groups)}
    curve = clf.expected_cost(X, costs)
    for n in (0.0, 10.0, 1e4):
        per_row = [sum(1 + k + 0.5 * k * n for k in np.flatnonzero(u)) for u in want_usage]
        assert curve(n) == pytest.approx(np.mean(per_row), rel=1e-12)


def test_a_feature_counted_twice_in_a_row_is_paid_once():
    counts = USAGE.astype(int) * 2  # e.g. a feature split on twice along one path
    np.testing.assert_allclose(expected_cost_curve(counts, COSTS, NAMES).coefficients,
                               [4.25, 1.0, 0.75], rtol=1e-15)
    np.testing.assert_allclose(worst_cost_curve(counts, COSTS, NAMES).coefficients, [6, 2, 3])


@pytest.mark.parametrize("usage", [np.ones((2, 2), bool), np.ones((0, 3), bool),
                                   np.ones(3, bool)])
def test_usage_of_the_wrong_shape_is_refused(usage):
    with pytest.raises(ValueError, match="usage|shape"):
        expected_cost_curve(usage, COSTS, NAMES)


def test_worst_cost_of_the_wrong_width_is_refused_and_of_nothing_is_zero():
    with pytest.raises(ValueError, match="cover 3 features"):
        worst_cost_curve(np.ones((2, 2), bool), COSTS, NAMES)
    assert worst_cost_curve(np.zeros((2, 3), bool), COSTS, NAMES) == polydom.CostCurve([0])
