"""CSTC finds cheap-feature routing: the cost-aware split start of its routing nodes
(learners.budgeted.cstc.split_init), its defaults against ``paper_defaults``, and the
quadrant data sets (the paper's synthetic regression and our classification variants)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeRegressor

from learners import CSTCClassifier
from learners.budgeted.cstc import (
    QUADRANT_COSTS,
    QUADRANT_GROUPS,
    quadrant_classification,
    quadrant_regression,
)
from learners.budgeted.cstc.engine import TreeStructure, exit_terminals
from learners.budgeted.cstc.split_init import (
    best_router_split,
    mean_split_threshold,
    model_tree_threshold,
)
from learners.budgeted.cstc.tree import CSTCRegressor

CHEAP = [4, 5]            # x, z
EXPENSIVE = [0, 1, 2, 3]  # one per quadrant

# positive rate per quadrant: means differing in every quadrant; only along z (the x split
# is found by the model-tree criterion); an XOR of balances (no mean gain at the root)
VARIANTS = {
    "all differ": (0.2, 0.4, 0.9, 0.65),
    "z only": (0.3, 0.3, 0.7, 0.7),
    "xor": (0.8, 0.3, 0.3, 0.6),
}


def _routes_like_the_paper(model):
    """Routers read only cheap features; every leaf one expensive feature, all four used."""
    st_, B, _ = model.trees_[0]
    routers = np.flatnonzero(~st_.is_leaf)
    leaves = np.flatnonzero(st_.is_leaf)
    assert len(routers) == 3 and len(leaves) == 4
    assert not B[np.ix_(routers, EXPENSIVE)].any()
    bought = [set(np.flatnonzero(B[k, EXPENSIVE]).tolist()) for k in leaves]
    assert all(len(s) == 1 for s in bought) and set.union(*bought) == {0, 1, 2, 3}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_classification_quadrants_reach_error_003_at_cost_135(variant):
    X, y = quadrant_classification(1000, 0, rates=VARIANTS[variant])
    X_te, y_te = quadrant_classification(3000, 1, rates=VARIANTS[variant])
    model = CSTCClassifier(QUADRANT_COSTS, tradeoff=0.01, feature_groups=QUADRANT_GROUPS,
                           random_state=0).fit(X, y)
    assert 1 - model.score(X_te, y_te) <= 0.03
    assert model.predict_cost(X_te).mean() <= 13.5
    _routes_like_the_paper(model)
    model._check()


def test_paper_defaults_do_not_find_the_routing_on_classification_quadrants():
    X, y = quadrant_classification(1000, 0)
    X_te, y_te = quadrant_classification(3000, 1)
    model = CSTCClassifier(QUADRANT_COSTS, tradeoff=0.01, feature_groups=QUADRANT_GROUPS,
                           paper_defaults=True, random_state=0).fit(X, y)
    assert 1 - model.score(X_te, y_te) > 0.1


def test_the_defaults_reproduce_the_papers_synthetic_regression():
    X, y = quadrant_regression(1000, 0)
    X_te, y_te = quadrant_regression(2000, 1)
    model = CSTCRegressor(QUADRANT_COSTS, tradeoff=0.02, feature_groups=QUADRANT_GROUPS,
                          random_state=0).fit(X, y)
    assert np.mean((model.predict(X_te) - y_te) ** 2) < 0.05
    assert model.predict_cost(X_te).mean() == pytest.approx(12.0)
    _routes_like_the_paper(model)


def test_an_explicit_setting_wins_over_paper_defaults():
    X, y = quadrant_classification(300, 0)
    model = CSTCClassifier(QUADRANT_COSTS, tradeoff=0.01, feature_groups=QUADRANT_GROUPS,
                           paper_defaults=True, router_init="split", routing_temperature=20.0,
                           support_threshold=0.05, finetune_routing="hard", random_state=0)
    ours = CSTCClassifier(QUADRANT_COSTS, tradeoff=0.01, feature_groups=QUADRANT_GROUPS,
                          random_state=0)
    a, b = model.fit(X, y), ours.fit(X, y)
    for (sa, Ba, ta), (sb, Bb, tb) in zip(a.trees_, b.trees_, strict=True):
        assert sa.heap == sb.heap
        np.testing.assert_array_equal(Ba, Bb)
        np.testing.assert_array_equal(ta, tb)


@pytest.mark.parametrize("params, match", [
    ({"router_init": "median"}, "router_init must be None, 'split' or 'leaf', got 'median'"),
    ({"paper_defaults": "yes"}, "paper_defaults must be True or False, got 'yes'"),
    ({"routing_temperature": 0.0}, "routing_temperature must be a finite number > 0"),
    ({"finetune_routing": "firm"}, "finetune_routing must be None, 'soft' or 'hard'"),
])
def test_bad_routing_settings_are_named(params, match):
    X, y = quadrant_classification(60, 0)
    with pytest.raises(ValueError, match=match):
        CSTCClassifier(**params).fit(X, y)


# ------------------------------------------------------------------- the split criteria
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(12, 40))
def test_the_mean_criterion_is_a_weighted_regression_stump(seed, n):
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 8, n).astype(float)          # ties: cuts only between values
    y, w = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    thr, gain = mean_split_threshold(v, y, w, 0.0)
    stump = DecisionTreeRegressor(max_depth=1).fit(v[:, None], y, sample_weight=w)
    tree = stump.tree_
    if tree.node_count == 1:                          # v constant: nothing to split on
        assert np.isnan(thr) and gain == 0.0
        return
    drop = (tree.weighted_n_node_samples[0] * tree.impurity[0]
            - tree.weighted_n_node_samples[1] * tree.impurity[1]
            - tree.weighted_n_node_samples[2] * tree.impurity[2])
    assert gain == pytest.approx(drop, rel=1e-7, abs=1e-9)
    assert thr in set(((np.unique(v)[:-1] + np.unique(v)[1:]) / 2).tolist())


def _line_sse_brute(P, y, w):
    sw = np.sqrt(w)
    beta = np.linalg.lstsq(P * sw[:, None], y * sw, rcond=None)[0]
    return float(w @ (y - P @ beta) ** 2)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 80))
def test_the_model_tree_threshold_is_the_best_cut_by_brute_force(seed, n):
    rng = np.random.default_rng(seed)
    v = rng.uniform(-1, 1, n)
    Phi = np.column_stack([v, rng.normal(size=n), np.ones(n)])
    y = np.where(v > rng.uniform(-0.5, 0.5), Phi[:, 1], -Phi[:, 1]) + 0.1 * rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, n)
    min_weight = 0.1 * w.sum()
    thr, gain = model_tree_threshold(v, Phi, y, w, min_weight, grid=n)  # every cut a grid cut
    vs = np.sort(v)
    best = np.inf
    for c in (vs[:-1] + vs[1:]) / 2:
        left = v <= c
        if min(w[left].sum(), w[~left].sum()) < min_weight:
            continue
        best = min(best, _line_sse_brute(Phi[left], y[left], w[left])
                   + _line_sse_brute(Phi[~left], y[~left], w[~left]))
    left = v <= thr
    got = _line_sse_brute(Phi[left], y[left], w[left]) + _line_sse_brute(Phi[~left], y[~left],
                                                                         w[~left])
    assert got == pytest.approx(best, rel=1e-6, abs=1e-8)
    assert gain == pytest.approx(_line_sse_brute(Phi, y, w) - best, rel=1e-5, abs=1e-8)


def test_a_split_that_does_not_pay_for_its_feature_is_not_made():
    rng = np.random.default_rng(0)
    v = rng.uniform(-1, 1, 400)
    y = np.where(v > 0, 1.0, -1.0)
    Phi = np.column_stack([v, np.ones(400)])
    args = (Phi, y, np.ones(400), np.array([10.0, 0.0]), np.array([1.0, 0.0]))
    gain = 0.5                                        # (1 - 0)/2: all variance explained
    assert best_router_split(*args, lam=0.9 * gain / 10).column == 0
    assert best_router_split(*args, lam=1.1 * gain / 10) is None


def test_the_cheaper_column_routes_when_both_separate_the_means():
    rng = np.random.default_rng(1)
    v = rng.uniform(-1, 1, 500)
    y = np.where(v > 0, 1.0, -1.0)
    noisy_copy = v + 0.05 * rng.normal(size=500)      # slightly worse, and 10x the price
    Phi = np.column_stack([noisy_copy, v, np.ones(500)])
    split = best_router_split(Phi, y, np.ones(500), np.array([1.0, 10.0, 0.0]),
                              np.array([1.0, 1.0, 0.0]), lam=0.0)
    assert split.column == 0
    split = best_router_split(Phi, y, np.ones(500), np.array([10.0, 1.0, 0.0]),
                              np.array([1.0, 1.0, 0.0]), lam=0.0)
    assert split.column == 1 and split.threshold == pytest.approx(0.0, abs=0.02)
    # the node's line predicts, and its threshold sends the larger mean up
    up = exit_terminals(Phi, np.vstack([split.b, np.zeros(3), np.zeros(3)]),
                        np.array([split.theta, -np.inf, -np.inf]),
                        TreeStructure.full(2))
    assert set(up[v > 0.05].tolist()) == {0} and set(up[v < -0.05].tolist()) == {1}


def test_quadrant_data_are_seeded_and_check_their_arguments():
    a, b = quadrant_classification(50, 3), quadrant_classification(50, 3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(ValueError, match=r"rates must be four numbers in \[0, 1\]"):
        quadrant_classification(10, 0, rates=(0.5, 0.5, 1.5, 0.5))
    with pytest.raises(ValueError, match="noise must be a finite number >= 0"):
        quadrant_classification(10, 0, noise=-1.0)
