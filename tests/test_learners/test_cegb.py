"""CEGBClassifier / GreedyMiserClassifier on LightGBM: semantics of the cost parameters."""

import lightgbm as lgb
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, make_classification

from learners import CEGBClassifier, GreedyMiserClassifier

COMMON = dict(n_estimators=20, num_leaves=8, learning_rate=0.1)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:700], y[:700] % 3


@pytest.mark.parametrize("data", ["cancer", "digits"])
@pytest.mark.parametrize("cost_kind", ["lazy", "coupled"])
def test_zero_costs_give_plain_lightgbm(request, data, cost_kind):
    X, y = request.getfixturevalue(data)
    cegb = CEGBClassifier(
        np.zeros(X.shape[1]), tradeoff=3.0, cost_kind=cost_kind, split_cost=0.0, **COMMON
    ).fit(X, y)
    plain = lgb.LGBMClassifier(verbosity=-1, num_threads=1, **COMMON).fit(X, y)
    assert cegb.train_params_["cegb_tradeoff"] == 6.0  # the CEGB code path is switched on
    assert cegb.booster_.dump_model()["tree_info"] == plain.booster_.dump_model()["tree_info"]
    np.testing.assert_array_equal(cegb.decision_function(X), plain.predict(X, raw_score=True))
    np.testing.assert_array_equal(cegb.predict(X), plain.predict(X))
    np.testing.assert_allclose(cegb.predict_proba(X), plain.predict_proba(X), rtol=1e-13)


@pytest.mark.parametrize("cost_kind", ["lazy", "coupled"])
def test_huge_cost_outside_a_set_uses_only_that_set(cancer, cost_kind):
    X, y = cancer
    S = [0, 7, 21, 27]
    costs = np.full(X.shape[1], 1e12)
    costs[S] = 0.0
    clf = CEGBClassifier(costs, tradeoff=1.0, cost_kind=cost_kind, **COMMON).fit(X, y)
    used = np.flatnonzero(clf.used_features_)
    assert used.size > 0 and set(used) <= set(S)
    assert set(np.flatnonzero(clf.feature_usage(X).any(axis=0))) <= set(S)
    assert clf.score(X, y) > 0.9


def test_huge_cost_with_groups_uses_only_the_free_group(digits):
    X, y = digits
    groups = {"top": list(range(32)), "bottom": list(range(32, 64))}
    clf = CEGBClassifier(
        {"top": 1e12, "bottom": 0.0}, tradeoff=1.0, feature_groups=groups, **COMMON
    ).fit(X, y)
    assert clf.feature_names_ == ["top", "bottom"]
    np.testing.assert_array_equal(clf.used_features_, [False, True])
    usage = clf.feature_usage(X)
    assert usage.shape == (len(X), 2) and not usage[:, 0].any() and usage[:, 1].all()


def _root_gain(clf):
    tree = clf.booster_.dump_model()["tree_info"][0]["tree_structure"]
    return tree.get("split_gain")


def test_split_penalty_is_per_row_in_leaf_and_tradeoff_is_twice_lambda(cancer):
    X, y = cancer
    one = dict(n_estimators=1, num_leaves=2)
    gain = _root_gain(CEGBClassifier(**one).fit(X, y))  # LightGBM gain, no 1/2
    n = len(X)
    # paper: split iff 1/2 * gain > lambda * alpha * |I_p|
    alpha = 1.0
    lam_half = 0.25 * gain / (alpha * n)
    penalised = _root_gain(CEGBClassifier(split_cost=alpha, tradeoff=lam_half, **one).fit(X, y))
    assert penalised == pytest.approx(gain - 2 * lam_half * alpha * n, rel=1e-5)
    lam_too_big = 0.51 * gain / (alpha * n)
    assert (
        _root_gain(CEGBClassifier(split_cost=alpha, tradeoff=lam_too_big, **one).fit(X, y)) is None
    )


def test_coupled_penalty_is_paid_once_per_model_not_per_row(cancer):
    X, y = cancer
    one = dict(n_estimators=1, num_leaves=2)
    plain = CEGBClassifier(**one).fit(X, y)
    f = plain.booster_.dump_model()["tree_info"][0]["tree_structure"]["split_feature"]
    gain = _root_gain(plain)
    costs = np.full(X.shape[1], 1e12)
    costs[f] = 0.25 * gain / len(X)
    coupled = CEGBClassifier(costs, tradeoff=0.5, cost_kind="coupled", **one).fit(X, y)
    assert _root_gain(coupled) == pytest.approx(gain - costs[f], rel=1e-5)
    lazy = CEGBClassifier(costs, tradeoff=0.5, cost_kind="lazy", **one).fit(X, y)
    assert _root_gain(lazy) == pytest.approx(0.75 * gain, rel=1e-5)


def test_lazy_cost_is_paid_once_per_row_across_trees():
    # only column 0 is allowed; the first root split makes every row pay it, so every later
    # split on it is free: the trees equal the zero-cost ones, only the first gain differs
    X, y = make_classification(
        400, 4, n_informative=1, n_redundant=0, n_clusters_per_class=1, random_state=0
    )
    kw = dict(n_estimators=6, num_leaves=2, tradeoff=0.5)
    free = CEGBClassifier([0.0, 1e12, 1e12, 1e12], **kw).fit(X, y)
    free_roots = [t["tree_structure"] for t in free.booster_.dump_model()["tree_info"]]
    beta = 0.25 * free_roots[0]["split_gain"] / len(X)
    lazy = CEGBClassifier([beta, 1e12, 1e12, 1e12], **kw).fit(X, y)
    roots = [t["tree_structure"] for t in lazy.booster_.dump_model()["tree_info"]]
    assert roots[0]["split_gain"] == pytest.approx(0.75 * free_roots[0]["split_gain"], rel=1e-5)
    for r, f in zip(roots[1:], free_roots[1:], strict=True):
        assert r["split_feature"] == 0
        assert r["split_gain"] == pytest.approx(f["split_gain"], rel=1e-5)
    np.testing.assert_allclose(lazy.decision_function(X), free.decision_function(X))


def test_tradeoff_grid_trades_accuracy_for_cost(cancer):
    X, y = cancer
    costs = np.random.default_rng(0).choice([1, 5, 20, 50, 100], X.shape[1]).astype(float)
    mean_cost = [
        CEGBClassifier(costs, tradeoff=t, **COMMON).fit(X, y).prediction_cost(X).mean()
        for t in (0.0, 0.001, 0.01, 10.0)
    ]
    assert mean_cost[0] > mean_cost[1] > mean_cost[2] > mean_cost[3] == 0.0


def test_greedymiser_defaults_are_coupled_shallow_first_order(cancer):
    X, y = cancer
    gm = GreedyMiserClassifier(np.ones(X.shape[1]), tradeoff=1.0, n_estimators=10).fit(X, y)
    assert gm.cost_kind == "coupled" and gm.max_depth == 4 and gm.num_leaves == 16
    assert callable(gm.train_params_["objective"])
    depths = [t.depth.max() for t in gm.ensemble_.trees]
    assert max(depths) <= 4
    assert gm.score(X, y) > 0.9
    np.testing.assert_allclose(gm.predict_proba(X).sum(axis=1), 1.0)


def test_greedymiser_multiclass(digits):
    X, y = digits
    gm = GreedyMiserClassifier(np.ones(64), tradeoff=0.1, n_estimators=10).fit(X, y)
    assert gm.predict_proba(X).shape == (len(X), 3)
    assert gm.score(X, y) > 0.8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cost_kind="eager"), "cost_kind"),
        (dict(tradeoff=-1.0), "tradeoff"),
        (dict(split_cost=float("nan")), "split_cost"),
        (dict(feature_costs=[1.0, 2.0]), "feature_costs"),
        (dict(feature_costs=[-1.0] * 30), "feature_costs"),
        (dict(feature_groups={"a": [0, 1]}), "feature_groups"),
        (dict(group_penalty="half"), "group_penalty"),
        (dict(cegb_tradeoff=1.0), "cegb_tradeoff"),
    ],
)
def test_bad_parameters_are_named(cancer, kwargs, match):
    X, y = cancer
    with pytest.raises(ValueError, match=match):
        CEGBClassifier(**kwargs).fit(X, y)


def test_lightgbm_params_pass_through_and_clone(cancer):
    from sklearn.base import clone

    X, y = cancer
    clf = CEGBClassifier(min_child_samples=50, reg_lambda=2.0, n_estimators=3)
    assert clf.get_params()["min_child_samples"] == 50
    c2 = clone(clf).set_params(reg_lambda=3.0, tradeoff=0.5)
    assert c2.get_params()["reg_lambda"] == 3.0 and c2.tradeoff == 0.5
    c2.fit(X, y)
    assert c2.train_params_["reg_lambda"] == 3.0 and c2.train_params_["min_child_samples"] == 50


def test_shared_group_penalty_divides_the_group_cost(digits):
    X, y = digits
    groups = {"a": list(range(16)), "b": list(range(16, 64))}
    clf = CEGBClassifier(
        {"a": 16.0, "b": 48.0}, feature_groups=groups, group_penalty="shared", n_estimators=2
    ).fit(X, y)
    assert set(clf.train_params_["cegb_penalty_feature_lazy"]) == {1.0}


def test_first_order_leaves_are_least_squares_fits_of_the_negative_gradient(cancer):
    X, y = cancer
    clf = CEGBClassifier(first_order=True, n_estimators=1, num_leaves=4,
                         learning_rate=0.3).fit(X, y)
    leaves = clf.leaves(X)[:, 0]
    tree = clf.ensemble_.trees[0]
    grad = 0.5 - y  # sigmoid(0) - y: the custom objective starts from 0
    for leaf in np.unique(leaves):
        value = tree.value[clf.ensemble_.leaf_node[0][leaf]]
        assert value == pytest.approx(-0.3 * grad[leaves == leaf].mean(), rel=1e-6)


def test_acquired_is_feature_usage_and_decision_function_shapes(cancer, digits):
    X, y = cancer
    clf = CEGBClassifier(n_estimators=3).fit(X, y)
    np.testing.assert_array_equal(clf.acquired_(X[:5]), clf.feature_usage(X[:5]))
    assert clf.decision_function(X[:5]).shape == (5,)
    Xd, yd = digits
    clf = CEGBClassifier(n_estimators=3).fit(Xd, yd)
    assert clf.decision_function(Xd[:5]).shape == (5, 3)
