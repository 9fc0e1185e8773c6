"""AdaptClassifier: the spec's invariants, cost accounting, bad input, storage, on-demand, index."""

import hashlib

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import polydom
import storage
import storage.blobs
from learners import AdaptClassifier, CEGBClassifier, sweep
from learners.budgeted.adapt import efficient_frontier, sweep_adapt
from polydom import CostCurve

COSTS = {"x0": 1.0, "x1": 1.0, "x2": 2.0, "x3": 2.0, "x4": 3.0, "x5": 3.0}
LIN = dict(method="lin", n_starts=3, max_iter=6, inner_iter=150)
GBRT = dict(method="gbrt", n_estimators=15, max_iter=3)
METHODS = [pytest.param(LIN, id="lin"), pytest.param(GBRT, id="gbrt")]


def synthetic_1(n, rng):
    """Spec R1: linear labels on the right half, a checkerboard on the left; 4 noise columns."""
    X = rng.uniform(-3, 3, size=(n, 6))
    right = np.sign(X[:, 1] - 0.3 * X[:, 0])
    left = np.sign(np.sin(2 * X[:, 0]) * np.sin(2 * X[:, 1]))
    y = np.where(X[:, 0] > 0, right, left)
    return X, np.where(y > 0, 1, 0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X, y = synthetic_1(400, rng)
    X_test, y_test = synthetic_1(300, rng)
    rf = RandomForestClassifier(30, max_depth=8, random_state=0).fit(X, y)
    return X, y, X_test, y_test, rf


def _fit(data, params, **kw):
    X, y, _, _, rf = data
    return AdaptClassifier(rf, feature_costs=COSTS, **params, **kw).fit(X, y)


# ---------------------------------------------------------------- invariants (spec 6)
@pytest.mark.parametrize("params", METHODS)
def test_p_full_zero_gives_the_low_cost_model(data, params):
    model = _fit(
        data,
        dict(params, n_starts=1) if params["method"] == "lin" else params,
        p_full=0.0,
        tradeoff=0.01 if params["method"] == "lin" else 1.0,
    )
    X_test = data[2]
    assert not model.routes(X_test).any()
    lpc = np.where(model.lpc_score(X_test) > 0, model.classes_[1], model.classes_[0])
    np.testing.assert_array_equal(model.predict(X_test), lpc)
    if model.method == "lin":
        # zero-mean columns give the gate's weights a zero gradient (up to rounding)
        np.testing.assert_allclose(model.gate_coef_, 0.0, atol=1e-12)
        assert model.gate_intercept_ < 0


@pytest.mark.parametrize("params", METHODS)
def test_p_full_one_with_equality_gives_the_high_cost_model(data, params):
    model = _fit(
        data,
        dict(params, n_starts=1) if params["method"] == "lin" else params,
        p_full=1.0,
        q_constraint="eq",
    )
    X_test, rf = data[2], data[4]
    assert model.routes(X_test).all()
    np.testing.assert_array_equal(model.predict(X_test), rf.predict(X_test))
    np.testing.assert_array_equal(model.predict_proba(X_test), rf.predict_proba(X_test))


@pytest.mark.parametrize(
    "params, tradeoffs",
    [
        pytest.param(LIN, [0.0, 0.003, 0.01, 0.03, 0.1, 1.0], id="lin"),
        pytest.param(GBRT, [0.0, 0.3, 1.0, 3.0, 10.0, 100.0], id="gbrt"),
    ],
)
def test_average_cost_is_monotone_in_the_penalty(data, params, tradeoffs):
    costs = [
        _fit(data, params, p_full=0.3, tradeoff=t).prediction_cost(data[2]).mean()
        for t in tradeoffs
    ]
    assert np.all(np.diff(costs) <= 1e-12), costs


def test_lin_objective_history_never_increases(data):
    model = _fit(data, LIN, p_full=0.4, tradeoff=0.01)
    assert np.all(np.diff(model.history_) <= 1e-8)


# ---------------------------------------------------------------- cost accounting
@pytest.mark.parametrize("params", METHODS)
def test_row_cost_is_gate_plus_the_chosen_branch_each_feature_once(data, params):
    model = _fit(data, params, p_full=0.5, tradeoff=0.01 if params["method"] == "lin" else 1.0)
    X_test = data[2]
    routed = model.routes(X_test)
    assert 0 < routed.mean() < 1
    usage = model.feature_usage(X_test)
    hpc = model.high_cost_.column_usage(X_test)  # one feature per column here
    gate_lpc = usage[~routed]
    assert np.all(usage[routed] >= hpc[routed])
    costs = np.array(list(COSTS.values()))
    np.testing.assert_allclose(model.prediction_cost(X_test), usage @ costs)
    assert np.all(usage @ costs <= costs.sum())
    assert np.all(gate_lpc <= model._model_used()[None, :])
    only = clone(model).set_params(hpc_cost_mode="hpc_only").fit(data[0], data[1])
    np.testing.assert_array_equal(only.feature_usage(X_test)[routed], hpc[routed])


def test_tree_high_cost_model_pays_only_the_features_on_each_rows_paths(data):
    X, y, X_test, _, _ = data
    stump = RandomForestClassifier(3, max_depth=1, random_state=0).fit(X, y)
    model = AdaptClassifier(stump, p_full=1.0, q_constraint="eq", n_starts=1, max_iter=2).fit(X, y)
    usage = model.high_cost_.column_usage(X_test)
    assert np.all(usage.sum(axis=1) <= 3) and usage.any()


def test_used_features_cover_every_feature_a_row_needs(data):
    model = _fit(data, GBRT, p_full=0.5, tradeoff=1.0)
    assert np.all(model.feature_usage(data[2]) <= model.used_features_[None, :])


# ---------------------------------------------------------------- bad input
def test_unfitted_high_cost_model_is_rejected(data):
    with pytest.raises(ValueError, match="high_cost_model RandomForestClassifier is not fitted"):
        AdaptClassifier(RandomForestClassifier()).fit(data[0], data[1])


@pytest.mark.parametrize("bad", [-0.1, 1.01, float("nan"), "half"])
def test_p_full_outside_the_unit_interval_is_rejected(data, bad):
    with pytest.raises(ValueError, match="p_full must be a number in"):
        AdaptClassifier(data[4], p_full=bad).fit(data[0], data[1])


def test_costs_for_unknown_features_are_rejected(data):
    with pytest.raises(ValueError, match=r"unknown features \['nope'\]"):
        AdaptClassifier(data[4], feature_costs=dict(COSTS, nope=1.0)).fit(data[0], data[1])


def test_high_cost_columns_outside_the_row_are_rejected(data):
    with pytest.raises(ValueError, match=r"high_cost_columns must be distinct columns in \[0, 6\)"):
        AdaptClassifier(data[4], high_cost_columns=[0, 99]).fit(data[0], data[1])


def four_classes(n, rng):
    """Four classes: x0 > 0 gives 0/1, told apart by the cheap x1; x0 < 0 gives 2/3, told
    apart by the dear x4.  A cheap model is right on half the rows only."""
    X = rng.normal(size=(n, 6))
    y = np.where(X[:, 0] > 0, X[:, 1] > 0, 2 + (X[:, 4] > 0)).astype(int)
    return X, y


DEAR = {"x0": 1.0, "x1": 1.0, "x2": 1.0, "x3": 1.0, "x4": 10.0, "x5": 10.0}


@pytest.fixture(scope="module")
def many_classes():
    rng = np.random.default_rng(3)
    X, y = four_classes(500, rng)
    X_test, y_test = four_classes(400, rng)
    hpc = RandomForestClassifier(50, max_depth=6, random_state=0).fit(X[:, [0, 1, 4]], y)
    kw = dict(feature_costs=DEAR, high_cost_columns=[0, 1, 4], tradeoff=0.02, method="lin",
              n_starts=2, max_iter=4, inner_iter=120)
    cheap = AdaptClassifier(hpc, p_full=0.0, **kw).fit(X, y)
    gated = AdaptClassifier(hpc, p_full=0.6, **kw).fit(X, y)
    return X, y, X_test, y_test, hpc, cheap, gated


def test_one_class_is_refused(data):
    X = data[0]
    with pytest.raises(ValueError, match="needs at least two classes, got 1 class: 'a'"):
        AdaptClassifier(data[4]).fit(X, np.asarray(["a"] * len(X)))


def _check_softmax_low_cost_model(cheap, X_test, y_test):
    assert not cheap.routes(X_test).any()
    scores = cheap.lpc_score(X_test)
    assert scores.shape == (len(X_test), 4)
    np.testing.assert_array_equal(cheap.predict(X_test), cheap.classes_[scores.argmax(axis=1)])
    np.testing.assert_allclose(cheap.predict_proba(X_test).sum(axis=1), 1.0)
    np.testing.assert_array_equal(cheap.prediction_cost(X_test), 2.0)   # x0 and x1, never x4
    assert 0.65 < cheap.score(X_test, y_test) < 0.85                    # half right, half 1/2


def test_many_classes_softmax_low_cost_model_lin(many_classes):
    """Spec 2.10: with p_full = 0 the composite is the softmax low-cost model."""
    X, y, X_test, y_test, hpc, cheap, _ = many_classes
    _check_softmax_low_cost_model(cheap, X_test, y_test)


def test_many_classes_softmax_low_cost_model_gbrt(many_classes):
    X, y, X_test, y_test, hpc, _, _ = many_classes
    cheap = AdaptClassifier(hpc, feature_costs=DEAR, p_full=0.0, high_cost_columns=[0, 1, 4],
                            tradeoff=3.0, method="gbrt", n_estimators=15, max_iter=2).fit(X, y)
    _check_softmax_low_cost_model(cheap, X_test, y_test)
    assert cheap.lpc_booster_.num_model_per_iteration() == 4           # a tree per class


def test_many_classes_gate_sends_the_dear_rows_to_the_high_cost_model(many_classes):
    """One gate on the cheap features routes the x0 < 0 rows: cost and accuracy per row."""
    X, y, X_test, y_test, hpc, cheap, gated = many_classes
    routed = gated.routes(X_test)
    cost = gated.prediction_cost(X_test)
    assert 0.3 < routed.mean() < 0.9
    assert set(np.unique(cost)) == {2.0, 12.0}             # 2 on the cheap path, 12 via f0
    assert (X_test[routed, 0] < 0).mean() > 0.6             # the rows x1 cannot classify
    assert gated.score(X_test, y_test) > cheap.score(X_test, y_test) + 0.15


def test_many_classes_on_demand_and_storage_agree_with_batch(many_classes):
    X, y, X_test, _, hpc, _, model = many_classes
    assert 0 < model.routes(X_test[:8]).sum() < 8            # both paths are walked
    arrays, meta = model.to_arrays()
    back = AdaptClassifier.from_arrays(arrays, meta)
    np.testing.assert_array_equal(back.predict_proba(X_test), model.predict_proba(X_test))
    groups = model.feature_groups_

    class Rows:
        def compute(self, item, name):
            return item[groups[name]]

    for row in X_test[:8]:
        got = model.predict_item(row, Rows())
        assert got.label == model.predict(row[None, :])[0]
        np.testing.assert_allclose(got.proba, model.predict_proba(row[None, :])[0])


# ---------------------------------------------------------------- scikit-learn plumbing
def test_clone_keeps_the_fitted_high_cost_model(data):
    model = AdaptClassifier(data[4], p_full=0.2)
    assert clone(model).high_cost_model is data[4]
    refit = AdaptClassifier(data[4], fit_high_cost=True)
    assert clone(refit).high_cost_model is not data[4]


# ---------------------------------------------------------------- storage
@pytest.mark.parametrize("params", METHODS)
def test_arrays_round_trip_through_storage_without_pickle(data, params):
    X, y, X_test, _, _ = data
    hpc = CEGBClassifier(tradeoff=0.0, n_estimators=10).fit(X, y)
    for f0 in (data[4], hpc):
        model = AdaptClassifier(f0, feature_costs=COSTS, p_full=0.5, **params).fit(X, y)
        storage.register_array_model(AdaptClassifier)
        blob, fmt = storage.blobs.dump_model(model)
        assert fmt == "arrays"
        back = storage.blobs.load_model(blob, fmt, hashlib.sha256(blob).hexdigest())
        np.testing.assert_array_equal(back.predict_proba(X_test), model.predict_proba(X_test))
        np.testing.assert_array_equal(back.feature_usage(X_test), model.feature_usage(X_test))
        np.testing.assert_array_equal(back.used_features_, model.used_features_)


def test_high_cost_model_naming_foreign_types_is_refused_when_stored(data):
    lightgbm = pytest.importorskip("lightgbm")
    X, y = data[0], data[1]
    f0 = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y)
    model = AdaptClassifier(f0, n_starts=1, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="LGBMClassifier.*allow-list refuses"):
        model.to_arrays()


def test_high_cost_model_without_an_array_form_is_refused(data):
    class Opaque:
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            return np.full((len(X), 2), 0.5)

    model = AdaptClassifier(Opaque(), n_starts=1, max_iter=2).fit(data[0], data[1])
    with pytest.raises(ValueError, match="cannot be stored without pickle"):
        model.to_arrays()


# ---------------------------------------------------------------- on-demand prediction
class CountingFeaturizer:
    def __init__(self, row):
        self.row, self.calls = row, []

    def compute(self, item, name):
        self.calls.append(name)
        return self.row[int(name[1:])]


@pytest.mark.parametrize("params", METHODS)
def test_predict_item_computes_the_gate_first_and_the_rest_only_if_needed(data, params):
    model = _fit(data, params, p_full=0.5, tradeoff=0.01 if params["method"] == "lin" else 1.0)
    X_test = data[2][:40]
    usage = model.feature_usage(X_test)
    for i, row in enumerate(X_test):
        fz = CountingFeaturizer(row)
        item = model.predict_item(None, fz)
        assert item.label == model.predict(row[None, :])[0]
        np.testing.assert_allclose(item.proba, model.predict_proba(row[None, :])[0])
        assert len(set(fz.calls)) == len(fz.calls)
        assert set(fz.calls) <= {f"x{j}" for j in np.flatnonzero(model.used_features_)}
        if not model.routes(row[None, :])[0]:
            assert {f"x{j}" for j in np.flatnonzero(usage[i])} == set(fz.calls)


# ---------------------------------------------------------------- sweep and index
def test_sweep_frontier_and_candidates(data):
    X, y, X_test, y_test, rf = data
    proto = AdaptClassifier(rf, method="lin", n_starts=2, max_iter=3, inner_iter=50)
    points = sweep_adapt(proto, [0.003, 0.1], [0.2, 0.6], X, y, X_test, y_test, feature_costs=COSTS)
    front = efficient_frontier(points)
    assert [p.cost for p in front] == sorted(p.cost for p in front)
    assert all(a.accuracy < b.accuracy for a, b in zip(front, front[1:], strict=False))
    curves = {k: CostCurve([0.0, v]) for k, v in COSTS.items()}  # cost v * n
    cands = sweep(proto, [0.003, 0.1], X, y, curves, evaluation=(X_test, y_test),
                  p_fulls=[0.2, 0.6], sizes=(1.0,), thresholds=(0.0,))
    assert len(cands) == len(front)
    for cand, point in zip(cands, front, strict=True):
        assert cand.cost(1.0) == pytest.approx(point.cost)
        assert cand.cost(2.0) == pytest.approx(2 * point.cost)
        assert cand.accuracy == pytest.approx(point.accuracy)


def test_from_index_gates_the_indexed_model(data):
    import learners

    X, y, X_test, y_test, _ = data
    costs = {name: f"{c}*n" for name, c in COSTS.items()}
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, y, cv=3)
    index = polydom.build_index(costs, learner, alpha=1.0)
    best = index.lookup(size=1.0, budget=1e9)
    model = AdaptClassifier.from_index(index, 1.0, 1e9, p_full=0.5, n_starts=2, max_iter=4)
    model.fit(X, y)
    cols = index.model_columns(best.features)
    assert model.high_cost_columns == cols
    routed = model.routes(X_test)
    np.testing.assert_array_equal(
        model.predict(X_test)[routed], best.model.predict(X_test[:, cols])[routed]
    )


# ---------------------------------------------------------------- spec R2 (Synthetic-2)
def synthetic_2(n, rng):
    """Spec R2 layout: four clusters, 25% each; cluster 2 is an XOR of four sub-blobs."""
    k = n // 4
    c1 = rng.normal([-4, 2], 0.25, (k, 2))
    centers = np.array([(1, 1.5), (2, 1.5), (1, 2.5), (2, 2.5)])
    pick = rng.integers(0, 4, k)
    c2 = centers[pick] + rng.normal(0, 0.15, (k, 2))
    c3 = rng.normal([0, -1], 0.25, (k, 2))
    c4 = rng.normal([0, -3], 0.25, (k, 2))
    X = np.vstack([c1, c2, c3, c4])
    y = np.concatenate([np.ones(k), np.array([1, 0, 0, 1])[pick], np.zeros(k), np.ones(k)])
    return X, y.astype(int)


def test_adapt_lin_finds_the_feature_2_solution_of_synthetic_2():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    X, y = synthetic_2(800, rng)
    X_test, y_test = synthetic_2(2000, rng)
    f0 = CalibratedClassifierCV(SVC(C=10, gamma=3.0), ensemble=False).fit(X, y)
    f0_acc = (f0.predict(X_test) == y_test).mean()
    model = AdaptClassifier(f0, p_full=0.5, tradeoff=0.01, n_starts=12).fit(X, y)
    assert (model.predict(X_test) == y_test).mean() >= f0_acc - 0.01
    assert model.prediction_cost(X_test).mean() <= 1.55
    assert model.gate_coef_[0] == 0 and model.lpc_coef_[0] == 0


def test_sweep_thresholds_reuse_the_fit_and_quantile_routes_p_full(data):
    X, y, X_test, y_test, rf = data
    proto = AdaptClassifier(rf, method="gbrt", n_estimators=10, max_iter=2)
    points = sweep_adapt(
        proto, [1.0], [0.3], X, y, X_test, y_test, thresholds=(0.0, "quantile", 0.5)
    )
    assert [p.threshold for p in points][::2] == [0.0, 0.5]
    assert points[0].model.gate_booster_ is points[1].model.gate_booster_
    g = points[1].model.gate_score(X_test)
    achievable = [(g > v).mean() for v in np.unique(g)] + [1.0]
    assert abs(points[1].routed - 0.3) == pytest.approx(min(abs(a - 0.3) for a in achievable))
    assert points[2].routed <= points[0].routed
    with pytest.raises(ValueError, match="thresholds must be finite numbers or 'quantile'"):
        sweep_adapt(proto, [1.0], [0.3], X, y, X_test, y_test, thresholds=("median",))


def test_precomputed_high_cost_probabilities_give_the_same_model(data):
    X, y, X_test, _, rf = data
    proto = AdaptClassifier(rf, **LIN, p_full=0.4, tradeoff=0.01)
    proba = proto.high_cost_train_proba(X, y)
    assert proba.shape == (len(y), 2)
    a = clone(proto).fit(X, y)
    b = clone(proto).set_params(high_cost_proba=proba).fit(X, y)
    assert (a.high_cost_proba_, b.high_cost_proba_) == ("oof", "given")
    np.testing.assert_array_equal(a.predict_proba(X_test), b.predict_proba(X_test))
    with pytest.raises(ValueError, match=r"high_cost_proba as an array must hold"):
        clone(proto).set_params(high_cost_proba=proba[:10]).fit(X, y)


def test_index_with_adapt_candidates_is_stored_and_reopened_without_pickle(data, tmp_path):
    import learners

    X, y, X_test, y_test, rf = data
    costs = {name: f"{c}" for name, c in COSTS.items()}
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, y, cv=3)
    proto = AdaptClassifier(rf, method="gbrt", n_estimators=10, max_iter=2)
    cands = sweep(proto, [1.0], X, y, costs, evaluation=(X_test, y_test), p_fulls=[0.5],
                  thresholds=(0.0,))
    url = f"sqlite:///{tmp_path / 'adapt.db'}"
    built = polydom.build_index(costs, learner, alpha=1.0, extra_candidates=cands, store=url)
    reopened = polydom.open_index(url)
    stored = {c.key: c for c in reopened.candidates}
    assert cands[0].key in stored  # ADAPT is on the skyline of these data
    back, orig = stored[cands[0].key].payload, cands[0].payload
    assert isinstance(back.estimator, AdaptClassifier)
    cols = back.columns
    np.testing.assert_array_equal(back.predict(X_test[:, cols]), orig.predict(X_test[:, cols]))
    assert built.lookup(1.0, 1e9).key == reopened.lookup(1.0, 1e9).key


def test_sweep_over_a_cost_model_gives_candidates_with_needs_and_learner(data):
    X, y, X_test, y_test, rf = data
    model = polydom.CostModel(
        {n: f"{c}*n" for n, c in COSTS.items()}, columns={n: [j] for j, n in enumerate(COSTS)}
    )
    proto = AdaptClassifier(rf, method="gbrt", n_estimators=10, max_iter=2)
    cands = sweep(proto, [1.0], X, y, model, evaluation=(X_test, y_test), p_fulls=[0.4],
                  thresholds=(0.0,))
    assert cands and all(c.learner == "adapt" for c in cands)
    for cand in cands:
        assert set(cand.needs) <= set(COSTS) and all(0 <= p <= 1 for p in cand.needs.values())
        assert cand.cost(2.0) == pytest.approx(model.expected_cost(cand.needs)(2.0))
        assert cand.payload.estimator.feature_groups == model.columns


def test_build_sweep_fits_an_unfitted_high_cost_model_once(data):
    from learners import sweep

    X, y, X_test, y_test, _ = data
    proto = AdaptClassifier(
        RandomForestClassifier(20, random_state=0),
        fit_high_cost=True,
        method="gbrt",
        n_estimators=10,
        max_iter=2,
    )
    cands = sweep(proto, [1.0], X, y, COSTS, evaluation=(X_test, y_test), p_fulls=(0.4,))
    assert cands and all(c.learner == "adapt" for c in cands)
    hpcs = {id(c.payload.estimator.high_cost_model) for c in cands}
    assert len(hpcs) == 1 and proto.high_cost_model not in [
        c.payload.estimator.high_cost_model for c in cands
    ]
