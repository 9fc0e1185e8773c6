"""Per-row usage and split counts from tree structure, against a direct per-row traversal."""

import lightgbm as lgb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learners import CEGBClassifier
from learners.budgeted.tree_paths import TreeEnsemble
from tests.strategies import examples


def _direct_walk(node, x, used):
    """Reference: walk one row down one dumped tree (LightGBM's decision rules), recursively."""
    if "split_feature" not in node:
        return node.get("leaf_index", 0), 0, node["leaf_value"]
    f = node["split_feature"]
    used.add(f)
    v = x[f]
    if node["decision_type"] == "==":
        cats = {int(c) for c in str(node["threshold"]).split("||")}
        left = (not np.isnan(v)) and int(v) >= 0 and int(v) in cats
    else:
        if np.isnan(v) and node["missing_type"] != "NaN":
            v = 0.0
        missing = (node["missing_type"] == "Zero" and abs(v) <= 1e-35) or (
            node["missing_type"] == "NaN" and np.isnan(v)
        )
        left = node["default_left"] if missing else v <= node["threshold"]
    leaf, depth, value = _direct_walk(node["left_child" if left else "right_child"], x, used)
    return leaf, depth + 1, value


def _direct(booster, X):
    dump = booster.dump_model()
    n, T = X.shape[0], len(dump["tree_info"])
    used = np.zeros((n, X.shape[1]), dtype=bool)
    splits = np.zeros(n, dtype=np.int64)
    leaves = np.zeros((n, T), dtype=np.int64)
    for i in range(n):
        cols = set()
        for t, info in enumerate(dump["tree_info"]):
            leaf, depth, _ = _direct_walk(info["tree_structure"], X[i], cols)
            leaves[i, t] = leaf
            splits[i] += depth
        used[i, list(cols)] = True
    return leaves, used, splits


def _data(seed, n, m, nan_rate):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, m)).astype(float)
    X[:, 0] = rng.normal(size=n)
    X[rng.random((n, m)) < nan_rate] = np.nan
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1 % m]) + rng.normal(size=n)
    return X, score


@settings(max_examples=examples(12), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 6),
    n_classes=st.sampled_from([2, 3]),
    nan_rate=st.sampled_from([0.0, 0.1]),
    categorical=st.booleans(),
    zero_as_missing=st.booleans(),
)
def test_path_usage_equals_direct_traversal(
    seed, m, n_classes, nan_rate, categorical, zero_as_missing
):
    X, score = _data(seed, 200, m, nan_rate)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    params = (
        {"objective": "multiclass", "num_class": n_classes}
        if n_classes > 2
        else {"objective": "binary"}
    )
    params.update(
        verbosity=-1,
        num_leaves=8,
        min_data_in_leaf=5,
        num_threads=1,
        zero_as_missing=zero_as_missing,
        min_data_per_group=5,
        cat_smooth=1.0,
    )
    data = lgb.Dataset(X, y, categorical_feature=[m - 1] if categorical else "auto")
    booster = lgb.train(params, data, num_boost_round=4)
    ens = TreeEnsemble.from_booster(booster)
    X_test, _ = _data(seed + 1, 60, m, nan_rate)
    leaves, used, splits = _direct(booster, X_test)
    lgb_leaves = booster.predict(X_test, pred_leaf=True)
    np.testing.assert_array_equal(leaves, lgb_leaves)
    np.testing.assert_array_equal(ens.apply(X_test), lgb_leaves)
    np.testing.assert_array_equal(ens.column_usage(lgb_leaves), used)
    np.testing.assert_array_equal(ens.split_evaluations(lgb_leaves), splits)
    for i in range(10):  # the scalar decision used by predict_item
        for t, tree in enumerate(ens.trees):
            node = 0
            while tree.feature[node] >= 0:
                go = tree.goes_left(node, float(X_test[i, tree.feature[node]]))
                node = tree.left[node] if go else tree.right[node]
            assert tree.leaf_index[node] == lgb_leaves[i, t]
    raw = booster.predict(X_test, raw_score=True).reshape(len(X_test), -1)
    np.testing.assert_allclose(ens.raw_score(lgb_leaves), raw, rtol=1e-12, atol=1e-12)


def test_classifier_usage_and_split_counts_equal_direct_traversal_on_digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    clf = CEGBClassifier(np.ones(64), tradeoff=0.02, n_estimators=5, num_leaves=16).fit(
        X[:600], y[:600]
    )
    _, used, splits = _direct(clf.booster_, X[600:700])
    np.testing.assert_array_equal(clf.column_usage(X[600:700]), used)
    np.testing.assert_array_equal(clf.split_evaluations(X[600:700]), splits)
    np.testing.assert_array_equal(clf.prediction_cost(X[600:700]), used.sum(axis=1))


def test_single_leaf_trees_use_nothing():
    X = np.arange(40, dtype=float).reshape(20, 2)
    y = np.arange(20) % 2
    clf = CEGBClassifier([1.0, 1.0], tradeoff=1e6, n_estimators=3).fit(X, y)
    assert not clf.feature_usage(X).any()
    assert (clf.split_evaluations(X) == 0).all()
    assert not clf.used_features_.any()


def test_leaves_of_wrong_shape_are_rejected():
    X = np.arange(40, dtype=float).reshape(20, 2)
    clf = CEGBClassifier(n_estimators=2, min_child_samples=2).fit(X, np.arange(20) % 2)
    with pytest.raises(ValueError, match="leaves"):
        clf.ensemble_.column_usage(np.zeros((3, 5), dtype=int))
