"""Budgeted-learner cost accounting against oracles that share no code with it: hand-computed
fixtures for the contract's usage -> cost functions, and CEGB's usage and split counts read
from LightGBM's own tree dump and leaf assignment (not from learners.budgeted.tree_paths)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import polydom
from learners.budgeted.contract import (
    ColumnSubsetModel,
    expected_cost_curve,
    group_usage,
    row_costs,
    sweep_features,
    worst_cost_curve,
)
from learners.budgeted.sweep import sweep

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
    assert got.dtype == bool and got.shape == (4, 3)


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


def usage_from_dump(clf, X, groups) -> tuple[np.ndarray, np.ndarray, set]:
    """Rows x groups usage, split evaluations per row, and the groups split on anywhere,
    from LightGBM's own leaf assignment and tree dump."""
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
    names = list(groups)
    anywhere = {names[group_of[col]] for tree in paths for path in tree.values() for col in path}
    return want_usage, want_splits, anywhere


def test_cegb_usage_and_split_counts_equal_lightgbms_own_paths(cegb_model):
    clf, X, groups = cegb_model
    want_usage, want_splits, _ = usage_from_dump(clf, X, groups)
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
    np.testing.assert_allclose(row_costs(counts, COSTS, NAMES, 2.0), [10.0, 5.0, 22.0, 0.0])


@pytest.mark.parametrize("usage", [np.ones((2, 2), bool), np.ones((0, 3), bool),
                                   np.ones(3, bool)])
def test_usage_of_the_wrong_shape_is_refused(usage):
    with pytest.raises(ValueError, match="usage|shape"):
        expected_cost_curve(usage, COSTS, NAMES)


def test_worst_cost_of_the_wrong_width_is_refused_and_of_nothing_is_zero():
    with pytest.raises(ValueError, match="cover 3 features"):
        worst_cost_curve(np.ones((2, 2), bool), COSTS, NAMES)
    assert worst_cost_curve(np.zeros((2, 3), bool), COSTS, NAMES) == polydom.CostCurve([0])


# ---------------------------------------------------------------------------- the contract
def linear_costs(groups) -> dict:
    return {g: f"{1 + k} + {0.5 * k}*n" for k, g in enumerate(groups)}


def by_hand(groups, weights: dict, n: float) -> float:
    """sum_g weight_g * (1 + k + 0.5 k n) for the k-th group."""
    return sum(w * (1 + k + 0.5 * k * n) for k, g in enumerate(groups) if (w := weights.get(g)))


@pytest.mark.parametrize("one_row", [True, False])
def test_candidate_needs_and_to_candidate_equal_the_dump_oracle(cegb_model, one_row):
    """A candidate's needs, cost, features, model and name, from LightGBM's own paths:
    ``expected`` needs are the fraction of rows whose paths split on the group (0 for a
    group the model may use but no row of X needed, as for a single row that skips one),
    ``worst`` needs are every group split on anywhere, at 1."""
    clf, X, groups = cegb_model
    if one_row:
        usage, _, used = usage_from_dump(clf, X, groups)
        index = [list(groups).index(g) for g in used]
        r = next(r for r in range(len(X)) if not usage[r, index].all())
        X = X[r:r + 1]
    y = clf.predict(X)[::-1].copy()      # labels the model partly gets wrong
    usage, splits, used = usage_from_dump(clf, X, groups)
    names = list(groups)
    costs = linear_costs(groups)
    expected = {g: float(usage[:, names.index(g)].mean()) for g in sorted(used)}
    if one_row:
        assert 0.0 in expected.values()  # the case the default of 0 is for
    assert clf.used_feature_names_ == frozenset(used)
    assert clf.feature_names_ == names
    np.testing.assert_array_equal(clf.acquired_(X), usage)
    assert clf.candidate_needs(X, costs) == expected
    assert clf.candidate_needs(X, costs, cost="worst") == dict.fromkeys(sorted(used), 1.0)
    with pytest.raises(ValueError, match="^cost must be 'expected' or 'worst', got 'median'$"):
        clf.candidate_needs(X, costs, cost="median")
    acc = float(np.mean(clf.predict(X) == y))
    cand = clf.to_candidate(X, y, costs, "k")
    worst = clf.to_candidate(X, y, polydom.CostModel(costs, columns=groups), "w",
                             cost="worst", learner="mine")
    split = clf.to_candidate(X, y, costs, "s", split_cost="2 + n")
    worst_split = clf.to_candidate(X, y, costs, "ws", cost="worst", split_cost=3.0)
    assert (cand.key, cand.learner, worst.key, worst.learner) == ("k", "cegb", "w", "mine")
    for c in (cand, worst, split, worst_split):
        assert c.accuracy == acc and c.features == frozenset(used)
    assert cand.needs == expected and worst.needs == dict.fromkeys(sorted(used), 1.0)
    for n in (0.0, 3.0, 1e3):
        assert cand.cost(n) == pytest.approx(by_hand(groups, expected, n), rel=1e-12)
        assert clf.expected_cost(X, costs)(n) == pytest.approx(cand.cost(n), rel=1e-12)
        all_used = dict.fromkeys(used, 1.0)
        assert worst.cost(n) == pytest.approx(by_hand(groups, all_used, n), rel=1e-12)
        assert clf.worst_cost(costs)(n) == pytest.approx(worst.cost(n), rel=1e-12)
        assert split.cost(n) == pytest.approx(cand.cost(n) + splits.mean() * (2 + n),
                                              rel=1e-12)
        assert worst_split.cost(n) == pytest.approx(worst.cost(n) + 3.0 * splits.max(),
                                                    rel=1e-12)
    # the payload takes exactly the columns of the groups the model may use, sorted
    cols = sorted(c for g in used for c in groups[g])
    for c in (cand, worst):
        assert isinstance(c.payload, ColumnSubsetModel)
        assert c.payload.columns == cols and c.payload.n_columns == X.shape[1]
        np.testing.assert_array_equal(c.payload.predict(X[:, cols]), clf.predict(X))
        np.testing.assert_array_equal(c.payload.predict_proba(X[:, cols]),
                                      clf.predict_proba(X))
        np.testing.assert_array_equal(c.payload.classes_, clf.classes_)


def test_split_cost_needs_a_learner_that_counts_split_evaluations(cegb_model):
    from learners import CEGBClassifier

    class NoSplitCounts(CEGBClassifier):
        split_evaluations = None

    clf, X, groups = cegb_model
    other = NoSplitCounts(**clf.get_params()).fit(X, clf.predict(X))
    other.to_candidate(X, clf.predict(X), linear_costs(groups), "fine")
    with pytest.raises(ValueError, match="^split_cost needs a learner with split_evaluations"
                                         r"\(X\); NoSplitCounts has none$"):
        other.to_candidate(X, clf.predict(X), linear_costs(groups), "k", split_cost=1.0)


def test_column_subset_model_puts_the_columns_back_and_stores_as_arrays(cegb_model):
    clf, X, groups = cegb_model
    cols = [29, 3, 0, 17]               # any order: the model receives them in this order
    sub = clf.subset_model(cols)
    assert sub.columns == cols and sub.n_columns == 30 and sub.estimator is clf
    np.testing.assert_array_equal(sub._full(X[:, cols])[:, cols], X[:, cols])
    assert np.isnan(np.delete(sub._full(X[:, cols]), cols, axis=1)).all()
    used_cols = sorted(c for g in clf.used_feature_names_ for c in groups[g])
    default = clf.subset_model()
    assert default.columns == used_cols
    np.testing.assert_array_equal(default.predict(X[:, used_cols]), clf.predict(X))
    shape = rf"^X must have shape \(rows, {len(used_cols)}\), got"
    for bad in (X[:, used_cols][0], X[:, used_cols][:, :-1], X):
        with pytest.raises(ValueError, match=shape):
            default.predict(bad)
    assert default.predict_item == clf.predict_item     # on-demand serving passes through
    with pytest.raises(AttributeError, match="^'ColumnSubsetModel' object has no attribute "
                                             "'predict_items'$"):
        default.predict_items  # noqa: B018
    arrays, meta = default.to_arrays()
    assert meta["n_columns"] == 30
    assert meta["estimator"] == "learners.budgeted.cegb.classifier:CEGBClassifier"
    np.testing.assert_array_equal(arrays["columns"], used_cols)
    assert arrays["columns"].dtype == np.int64
    assert all(k == "columns" or k.startswith("estimator.") for k in arrays)
    back = ColumnSubsetModel.from_arrays(arrays, meta)
    assert back.columns == used_cols and back.n_columns == 30
    np.testing.assert_array_equal(back.predict_proba(X[:, used_cols]), clf.predict_proba(X))
    for name in ("os:system", "learners.budgeted.cegb:CEGBClassifier.mro", "builtins:dict",
                 "learners.budgeted.cegb:CEGBClassifier:x", "learners.budgeted.cegb:",
                 "learners.budgeted.cegb"):
        with pytest.raises(ValueError, match=f"stored class path '{re.escape(name)}' is not a "
                                             "registered model class; refusing it before"):
            ColumnSubsetModel.from_arrays(arrays, {**meta, "estimator": name})


def test_column_subset_model_of_a_foreign_estimator_is_not_stored(cegb_model):
    """Stored as arrays only: a class of the learners package that has ``to_arrays`` (not
    a foreign class, not a learners class without it); a subclass defined elsewhere is
    refused although it inherits ``to_arrays``."""
    from sklearn.linear_model import LogisticRegression

    from learners import CEGBClassifier, SyntheticLearner

    class Elsewhere(CEGBClassifier):
        pass

    X, y = load_breast_cancer(return_X_y=True)
    clf = cegb_model[0]
    outside = Elsewhere(**clf.get_params()).fit(X[:100], y[:100])
    for estimator, name in ((LogisticRegression(max_iter=50).fit(X[:, :2], y),
                             "LogisticRegression"),
                            (SyntheticLearner(len), "SyntheticLearner"),
                            (outside, "Elsewhere")):
        sub = ColumnSubsetModel(estimator, [0, 1], 2)
        with pytest.raises(ValueError, match=f"^estimator {name} cannot be stored as arrays "
                                             r"\(needs to_arrays and a class of the learners "
                                             r"package\)$"):
            sub.to_arrays()


def test_sweep_features_names_the_features_a_sweep_trains_on():
    from learners import CEGBClassifier

    plain = {"p": "1", "q": "2*n", "r": "3"}
    model, params, names = sweep_features(CEGBClassifier(), plain, 3)
    assert (params, names) == ({}, ["p", "q", "r"]) and model == polydom.CostModel(plain)
    # a CostModel whose atoms' columns partition the columns: its atoms, and the groups set
    cm = polydom.CostModel({"a": "1", "b": "n"}, columns={"a": [2, 0], "b": [1]})
    model, params, names = sweep_features(CEGBClassifier(), cm, 3)
    assert names == ["a", "b"] and params == {"feature_groups": {"a": [2, 0], "b": [1]}}
    assert model is cm
    # columns that do not partition 4 columns: one feature per column, x0..x3, which the
    # model must cost (here it does not: named)
    with pytest.raises(ValueError, match="x0"):
        sweep_features(CEGBClassifier(), cm, 4)
    cols4 = polydom.CostModel({f"x{j}": "1" for j in range(4)}, columns={"x0": [0, 1]})
    assert sweep_features(CEGBClassifier(), cols4, 4)[2] == ["x0", "x1", "x2", "x3"]
    # the estimator's own groups win, and must be costed
    est = CEGBClassifier(feature_groups={"b": [1], "a": [0, 2]})
    model, params, names = sweep_features(est, cm, 3)
    assert (params, names) == ({}, ["b", "a"])
    with pytest.raises(ValueError, match="'c'"):
        sweep_features(CEGBClassifier(feature_groups={"c": [0, 1, 2]}), cm, 3)
    with pytest.raises(ValueError, match="'c'"):
        sweep_features(CEGBClassifier(feature_groups={"c": [0, 1, 2]}), {"a": "1"}, 3)


def test_sweep_fits_at_each_size_in_order_with_exact_keys():
    from lattice.executor import InProcessExecutor
    from learners import CEGBClassifier

    class Recording(InProcessExecutor):
        closed = 0
        sessions = 0

        def session(self, shared):
            self.sessions += 1
            return super().session(shared)

        def close(self):
            self.closed += 1

    X, y = load_breast_cancer(return_X_y=True)
    groups = {"g0": [0, 1], "g1": [2, 3], "g2": [4, 5]}
    X = X[:, :6]
    costs = {"g0": "1 + n", "g1": "2", "g2": "n**2"}
    ex = Recording()
    cands = sweep(CEGBClassifier(feature_groups=groups, n_estimators=3, num_leaves=4),
                  [0.0, 0.5], X[:300], y[:300], costs, evaluation=(X[300:], y[300:]),
                  sizes=[2.0, 10.0], key="C", split_cost="0.5*n", learner="cegb", executor=ex)
    assert ex.closed == 0 and ex.sessions == 1
    assert [c.key for c in cands] == ["C(tradeoff=0, n=2)", "C(tradeoff=0.5, n=2)",
                                      "C(tradeoff=0, n=10)", "C(tradeoff=0.5, n=10)"]
    for c, (t, s) in zip(cands, [(0.0, 2.0), (0.5, 2.0), (0.0, 10.0), (0.5, 10.0)],
                         strict=True):
        est = c.payload.estimator
        assert est.tradeoff == t and est.split_cost == 0.5 * s
        assert est.feature_costs == {"g0": 1 + s, "g1": 2.0, "g2": s * s}
        assert c.learner == "cegb"
        assert c.accuracy == float(np.mean(est.predict(X[300:]) == y[300:]))
    default = sweep(CEGBClassifier(feature_groups=groups, n_estimators=2), [0.0], X[:300], y[:300],
                    costs, evaluation=(X[300:], y[300:]))
    assert default[0].key == "cegb(tradeoff=0, n=1)"  # the registry's name, everywhere
    assert default[0].learner == "cegb"
    assert default[0].payload.estimator.feature_costs == {"g0": 2.0, "g1": 2.0, "g2": 1.0}
    # no groups: a CostModel whose atoms' columns partition X's columns names the features
    by_columns = polydom.CostModel(costs, columns=groups)
    (cand,) = sweep(CEGBClassifier(n_estimators=2), [0.0], X[:300], y[:300], by_columns,
                    evaluation=(X[300:], y[300:]))
    assert cand.payload.estimator.feature_groups == groups
    assert cand.payload.estimator.feature_costs == {"g0": 2.0, "g1": 2.0, "g2": 1.0}


def test_a_worst_case_sweep_and_the_split_cost_of_a_model_without_splits():
    """``cost="worst"`` reaches every candidate of a sweep (needs at 1, the curve the sum of
    the used groups); a model that uses no feature has no split on any row, so its
    worst-case split cost is 0, not any floor."""
    from learners import CEGBClassifier

    X, y = load_breast_cancer(return_X_y=True)
    groups = {"g0": [0, 1], "g1": [2, 3], "g2": [4, 5]}
    X = X[:, :6]
    costs = {"g0": "1 + n", "g1": "2", "g2": "n**2"}
    cands = sweep(CEGBClassifier(feature_groups=groups, n_estimators=3, num_leaves=4),
                  [0.0, 1e6], X[:300], y[:300], costs, evaluation=(X[300:], y[300:]),
                  cost="worst", split_cost=1.0)
    used = cands[0].payload.estimator.used_feature_names_
    assert used and cands[0].needs == dict.fromkeys(sorted(used), 1.0)
    empty = cands[1].payload.estimator
    assert empty.used_feature_names_ == frozenset() and cands[1].needs == {}
    assert (empty.split_evaluations(X[300:]) == 0).all()
    assert cands[1].cost == polydom.CostCurve([0.0])


def test_split_cost_on_a_learner_without_a_split_count_at_all_is_named():
    """CSTC (a real learner) has no ``split_evaluations`` attribute: asking for a split cost
    is the same ``ValueError`` as for a learner whose count is None, not an AttributeError."""
    from learners import CSTCClassifier

    X, y = load_breast_cancer(return_X_y=True)
    groups = {f"g{j}": [j, j + 10, j + 20] for j in range(10)}
    clf = CSTCClassifier(feature_groups=groups, tradeoff=0.01, depth=2, max_sweeps=2,
                         feature_map="standard", random_state=0).fit(X[:300], y[:300])
    assert not hasattr(clf, "split_evaluations")
    costs = linear_costs(groups)
    clf.to_candidate(X[300:], y[300:], costs, "fine")
    with pytest.raises(ValueError, match="^split_cost needs a learner with split_evaluations"
                                         r"\(X\); CSTCClassifier has none$"):
        clf.to_candidate(X[300:], y[300:], costs, "k", split_cost=1.0)


def test_the_payload_takes_the_cost_models_columns_where_they_differ_from_the_groups(
        cegb_model):
    """One sensor ``s{k}`` yields the columns of two of the learner's groups (``g{2k}`` and
    ``g{2k+1}``, bundles of that one atom): a model that uses ``g0`` only needs ``s0`` and is
    handed all of ``s0``'s columns, in ``CostModel.columns_of`` order, by the index.  Its
    payload must take exactly those (not only ``g0``'s), and predict as the learner does."""
    clf, X, groups = cegb_model
    names = list(groups)
    sensors = {f"s{k}": sorted(groups[names[2 * k]] + groups[names[2 * k + 1]])
               for k in range(5)}
    cm = polydom.CostModel({s: f"{1 + k} + n" for k, s in enumerate(sensors)},
                           bundles={g: [f"s{j // 2}"] for j, g in enumerate(names)},
                           columns=sensors)
    used = clf.used_feature_names_
    needed = sorted({f"s{names.index(g) // 2}" for g in used})
    want = sorted(c for s in needed for c in sensors[s])
    own = sorted(c for g in used for c in groups[g])
    assert want != own  # some group is used without its partner: the columns differ
    y = clf.predict(X)
    for cost in ("expected", "worst"):
        cand = clf.to_candidate(X, y, cm, "k", cost=cost)
        assert sorted(cand.needs) == needed
        assert cand.payload.columns == want and cand.payload.n_columns == X.shape[1]
        np.testing.assert_array_equal(cand.payload.predict(X[:, want]), y)
        index = polydom.Index(polydom.PolyDomIndex.build([cand]), cm)
        np.testing.assert_array_equal(index.predict(X, 1.0, 1e9), y)
    # without columns in the cost model the payload keeps the learner's own groups
    plain = clf.to_candidate(X, y, polydom.CostModel(linear_costs(groups)), "p")
    assert plain.payload.columns == own
