"""CSTC / CSCC as scikit-learn estimators and budgeted learners (issue 10)."""


import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks

from learners import CSCCClassifier, CSTCClassifier, sweep
from learners.budgeted.contract import ColumnSubsetModel
from learners.budgeted.cstc import QUADRANT_COSTS, QUADRANT_GROUPS, quadrant_regression
from learners.budgeted.cstc.tree import CSTCRegressor
from polydom.index import resolve_payload


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    return X[idx[:400]], y[idx[:400]], X[idx[400:]], y[idx[400:]]


@parametrize_with_checks([
    CSTCClassifier(tradeoff=0.01, depth=2, max_sweeps=2),
    CSCCClassifier(tradeoff=0.01, n_stages=2, max_sweeps=2, class_weight="balanced"),
    CSTCRegressor(tradeoff=0.01, depth=2, max_sweeps=2),
])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_the_three_deviations_alone_reach_zero_error_at_the_minimum_cost_of_12():
    X, y = quadrant_regression(1000, 0)
    X_te, y_te = quadrant_regression(2000, 1)
    model = CSTCRegressor(QUADRANT_COSTS, tradeoff=0.02, feature_groups=QUADRANT_GROUPS,
                          rho=0.01, depth=3, structure="full", max_sweeps=4,
                          routing_temperature=5.0, support_threshold=0.05,
                          finetune_routing="hard", router_init="leaf", random_state=0)
    model.fit(X, y)
    assert np.mean((model.predict(X_te) - y_te) ** 2) < 0.05
    assert model.predict_cost(X_te).mean() == pytest.approx(12.0)
    st, B, _ = model.trees_[0]
    assert st.heap == tuple(range(7))
    for k in range(3):                                  # routing nodes: cheap features only
        assert not B[k, :4].any()
    leaves = [set(np.flatnonzero(B[k, :6])) for k in range(3, 7)]
    assert all(len(s) == 1 for s in leaves) and set.union(*leaves) == {0, 1, 2, 3}
    model._check()


def test_paper_default_keeps_tiny_expensive_weights_at_full_cost():
    X, y = quadrant_regression(600, 0)
    model = CSTCRegressor(QUADRANT_COSTS, tradeoff=0.02, feature_groups=QUADRANT_GROUPS,
                          rho=0.01, paper_defaults=True, random_state=0).fit(X, y)
    assert model.predict_cost(X).mean() > 12.0          # spec 5.1: the deviations are needed


def brute_force_usage(model, X):
    """Walk every row down every output's tree in Python; collect the atoms once."""
    names = list(model.feature_groups_)
    out = np.zeros((len(X), len(names)), dtype=bool)
    for fmap, (st, B, theta) in zip(model.maps_, model.trees_, strict=True):
        cm = fmap.cost_arrays(model.feature_costs_)
        Phi = fmap.transform(X)
        for i, phi in enumerate(Phi):
            k = 0
            while True:
                for t in np.flatnonzero(B[k]):
                    out[i, np.flatnonzero(cm.F[:, t])] = True
                if st.is_leaf[k]:
                    break
                nxt = st.up[k] if phi @ B[k] > theta[k] else st.low[k]
                if nxt < 0:
                    break
                k = nxt
    return out


@pytest.mark.parametrize("cls", [CSTCClassifier, CSCCClassifier])
@pytest.mark.parametrize("fmap", ["standard", "boosted"])
def test_feature_usage_is_the_atoms_on_each_rows_path(cls, fmap, cancer):
    X, y, X_te, _ = cancer
    groups = {"mean": list(range(10)), "se": list(range(10, 20)), "worst": list(range(20, 30))}
    costs = {"mean": 1.0, "se": 5.0, "worst": 20.0}
    model = cls(costs, tradeoff=0.01, feature_groups=groups, feature_map=fmap, n_trees=20,
                random_state=0).fit(X, y)
    usage = model.feature_usage(X_te)
    np.testing.assert_array_equal(usage, brute_force_usage(model, X_te))
    np.testing.assert_allclose(model.predict_cost(X_te), usage @ np.array([1.0, 5.0, 20.0]))
    assert (usage.any(axis=0) <= model.used_features_).all()
    model._check()


def test_multiclass_pays_the_union_of_the_one_vs_rest_paths():
    X, y = load_digits(return_X_y=True)
    X, y = X[:400] / 16, y[:400] % 3
    model = CSTCClassifier(np.ones(64), tradeoff=0.02, depth=2, max_sweeps=2,
                           random_state=0).fit(X, y)
    assert len(model.trees_) == 3 and model.decision_function(X).shape == (400, 3)
    np.testing.assert_array_equal(model.feature_usage(X), brute_force_usage(model, X))
    assert (model.predict(X) == y).mean() > 0.8


def test_a_larger_tradeoff_buys_fewer_features(cancer):
    X, y, X_te, _ = cancer
    costs = [np.mean(m.feature_usage(X_te).sum(axis=1)) for m in (
        CSTCClassifier(np.ones(30), tradeoff=t, feature_map="standard", random_state=0).fit(X, y)
        for t in (0.0, 0.05, 1.0))]
    assert costs[0] > costs[1] > costs[2]


def test_cscc_class_weights_shift_predictions_to_the_minority():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=600) > 1.6).astype(int)     # about 7% positives
    plain = CSCCClassifier(np.ones(4), tradeoff=0.001, random_state=0).fit(X, y)
    weighted = CSCCClassifier(np.ones(4), tradeoff=0.001, class_weight="balanced",
                              random_state=0).fit(X, y)
    assert weighted.predict(X).sum() > plain.predict(X).sum()


@pytest.mark.parametrize("params, match", [
    ({"feature_costs": {"x0": 1.0, "nope": 2.0}}, "unknown features.*nope"),
    ({"feature_costs": [1.0, -2.0, 1.0]}, "feature_costs.*>= 0"),
    ({"feature_costs": [1.0, float("nan"), 1.0]}, "feature_costs"),
    ({"tradeoff": -1.0}, "tradeoff"),
    ({"feature_map": "pca"}, "feature_map"),
    ({"routing_temperature": 0.0}, "routing_temperature"),
    ({"class_weight": {7: 2.0}}, "class_weight.*7"),
])
@pytest.mark.parametrize("cls", [CSTCClassifier, CSCCClassifier])
def test_bad_parameters_raise_value_errors_naming_them(cls, params, match):
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(X, y)


@pytest.mark.parametrize("cls", [CSTCClassifier, CSCCClassifier])
def test_bad_data_raises_value_errors(cls):
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="1 class"):
        cls().fit(X, np.zeros(40))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(X, np.arange(40) % 2)


@pytest.mark.parametrize("fmap", ["identity", "boosted"])
@pytest.mark.parametrize("cls", [CSTCClassifier, CSCCClassifier])
def test_to_arrays_round_trip_keeps_predictions_and_usage(cls, fmap, cancer):
    X, y, X_te, _ = cancer
    labels = np.array(["benign", "malignant"], dtype=object)[y]
    model = cls(np.linspace(1, 3, 30).tolist(), tradeoff=0.01, feature_map=fmap, n_trees=10,
                random_state=0).fit(X, labels)
    arrays, meta = model.to_arrays()
    assert all(a.dtype != object for a in arrays.values())
    back = cls.from_arrays(arrays, meta)
    assert back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.predict(X_te), model.predict(X_te))
    np.testing.assert_array_equal(back.decision_function(X_te), model.decision_function(X_te))
    np.testing.assert_array_equal(back.feature_usage(X_te), model.feature_usage(X_te))
    sub = back.subset_model()
    restored = ColumnSubsetModel.from_arrays(*sub.to_arrays())
    np.testing.assert_array_equal(restored.predict(X_te[:, sub.columns]), model.predict(X_te))


def test_sweep_indexes_cstc_with_expected_costs(cancer):
    import polydom

    X, y, X_te, y_te = cancer
    groups = {"mean": list(range(10)), "se": list(range(10, 20)), "worst": list(range(20, 30))}
    costs = {"mean": "1 + 0.01*n", "se": "5", "worst": "20 + 0.1*n"}
    cands = sweep(CSTCClassifier(feature_groups=groups, feature_map="standard", random_state=0),
                  [0.001, 0.1], X, y, costs, evaluation=(X_te, y_te), sizes=(10.0,), key="cstc")
    assert [c.key for c in cands] == ["cstc(tradeoff=0.001, n=10)", "cstc(tradeoff=0.1, n=10)"]
    for c in cands:
        usage = c.payload.estimator.feature_usage(X_te)
        p = usage.mean(axis=0)
        expected = sum(pf * polydom.CostCurve.coerce(costs[g])(50.0)
                       for pf, g in zip(p, groups, strict=True))
        assert c.cost(50.0) == pytest.approx(expected)
    index = polydom.PolyDomIndex.build(cands)
    assert index.lookup(10.0, 1e9) is not None


def test_storage_stores_and_loads_cstc_without_trust(cancer):
    storage = pytest.importorskip("storage")
    from storage.blobs import dump_model, load_model, sha256_hex

    X, y, X_te, _ = cancer
    for cls in (CSTCClassifier, CSCCClassifier, ColumnSubsetModel):
        storage.register_array_model(cls)
    model = CSTCClassifier(np.ones(30), tradeoff=0.01, feature_map="boosted", n_trees=10,
                           random_state=0).fit(X, y)
    sub = model.subset_model()
    blob, fmt = dump_model(sub)
    assert fmt == "arrays"
    back = load_model(blob, fmt, sha256_hex(blob))
    np.testing.assert_array_equal(back.predict(X_te[:, sub.columns]), model.predict(X_te))


def test_cost_aware_boosting_trick_trees_read_cheaper_features(cancer):
    X, y, _, _ = cancer
    costs = np.repeat([1.0, 5.0, 20.0], 10).tolist()
    spent = []
    for tct in (0.0, 0.1):
        model = CSTCClassifier(costs, tradeoff=1e-4, feature_map="boosted", n_trees=30,
                               tree_cost_tradeoff=tct, random_state=0).fit(X, y)
        F = model.maps_[0].cost_arrays(model.feature_costs_).F
        spent.append(float(F.any(axis=1) @ np.asarray(costs)))
    assert spent[1] < spent[0]


class RowFeaturizer:
    """Computes a feature of a row index by reading its columns; records the calls."""

    def __init__(self, X, groups):
        self.X, self.groups, self.calls = X, groups, []

    def compute(self, i, name):
        self.calls.append(name)
        return self.X[i, self.groups[name]]


@pytest.mark.parametrize("cls, fmap", [(CSTCClassifier, "standard"),
                                       (CSCCClassifier, "boosted"),
                                       (CSTCClassifier, "boosted")])
def test_predict_item_computes_only_the_features_on_the_path(cls, fmap, cancer):
    X, y, X_te, _ = cancer
    groups = {"mean": list(range(10)), "se": list(range(10, 20)), "worst": list(range(20, 30))}
    model = cls({"mean": 1.0, "se": 5.0, "worst": 20.0}, tradeoff=0.003, feature_groups=groups,
                feature_map=fmap, n_trees=20, random_state=0).fit(X, y)
    usage = model.feature_usage(X_te)
    pred = model.predict(X_te)
    for i in range(25):
        fz = RowFeaturizer(X_te, groups)
        out = model.predict_item(i, fz)
        assert out.label == pred[i]
        assert len(fz.calls) == len(set(fz.calls))
        assert set(out.computed) == {g for g, u in zip(groups, usage[i], strict=True) if u}


def test_cstc_criterion_is_a_symmetric_jaccard_matrix():
    from sklearn.datasets import load_wine

    from learners.budgeted.cstc import cstc_criterion

    X, y = load_wine(return_X_y=True)
    J, monotone = cstc_criterion(X / X.max(axis=0), y, C=1.0)
    assert J.shape == (2, 2) and np.allclose(J, J.T) and (np.diag(J) == 1).all()
    assert ((J >= 0) & (J <= 1)).all() and monotone in (True, False)
    with pytest.raises(ValueError, match="3 labels"):
        cstc_criterion(X[y < 2], y[y < 2])


@pytest.mark.slow
def test_build_index_with_cstc_and_cscc_candidates_persists_and_reopens(tmp_path, cancer):
    pytest.importorskip("storage")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import polydom
    from learners import SklearnLearner

    X, y, X_va, y_va = cancer
    groups = {"a": list(range(10)), "b": list(range(10, 20)), "c": list(range(20, 30))}
    costs = {"a": "1 + 0.01*n", "b": "2 + 0.01*n", "c": "4 + 0.02*n"}
    extra = []
    for proto in (CSTCClassifier(feature_groups=groups, feature_map="standard", depth=2),
                  CSCCClassifier(feature_groups=groups, feature_map="boosted", n_trees=10)):
        extra += sweep(proto, [0.001, 0.1], X, y, costs, evaluation=(X_va, y_va), sizes=[100.0],
                       key=type(proto).__name__)
    learner = SklearnLearner(make_pipeline(StandardScaler(), LogisticRegression()), X, y,
                             features=groups, cv=(X_va, y_va))
    url = f"sqlite:///{tmp_path / 'index.db'}"
    built = polydom.build_index(costs, learner, extra_candidates=extra, store=url)
    reopened = polydom.open_index(url)
    for c in built.candidates:
        assert c.key in {r.key for r in reopened.candidates}
    for size, budget in [(100.0, 3.0), (100.0, 10.0), (1000.0, 40.0), (1000.0, 1e4)]:
        a, b = built.lookup(size, budget), reopened.lookup(size, budget)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.key == b.key
            np.testing.assert_array_equal(reopened.predict(X_va, size, budget),
                                          built.predict(X_va, size, budget))
    assert any(isinstance(resolve_payload(c.payload), ColumnSubsetModel)
               and isinstance(c.payload.estimator, CSTCClassifier | CSCCClassifier)
               for c in reopened.candidates)


def block_cost_model():
    """Breast cancer with per-column atoms (mean 1, error 5, worst 20) and three bundles."""
    import polydom

    price = {"mean": 1.0, "error": 5.0, "worst": 20.0}
    atoms, columns, bundles = {}, {}, {}
    for b, (block, cost) in enumerate(price.items()):
        bundles[block] = [f"x{j}" for j in range(10 * b, 10 * b + 10)]
        for j in range(10 * b, 10 * b + 10):
            atoms[f"x{j}"], columns[f"x{j}"] = [cost], [j]
    return polydom.CostModel(atoms, bundles=bundles, columns=columns)


@pytest.mark.slow
def test_cstc_and_cscc_join_a_mixed_pool_over_a_cost_model(tmp_path, cancer):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import polydom
    from learners import SklearnLearner

    X, y, X_va, y_va = cancer
    model = block_cost_model()
    extra = sweep(CSTCClassifier(feature_map="standard", depth=2, random_state=0), [0.003, 0.03],
                  X, y, model, evaluation=(X_va, y_va), learner="cstc")
    extra += sweep(CSCCClassifier(feature_map="boosted", n_trees=10, random_state=0), [1e-4], X, y,
                   model, evaluation=(X_va, y_va), learner="cscc")
    for cand in extra:
        assert cand.learner in ("cstc", "cscc") and set(cand.needs) <= set(model.atoms)
        assert cand.cost == model.expected_cost(cand.needs)
        assert list(cand.payload.estimator.feature_groups_) == list(model.atoms)
    learner = SklearnLearner(make_pipeline(StandardScaler(), LogisticRegression()), X, y,
                             features=model, cv=(X_va, y_va))
    url = f"sqlite:///{tmp_path / 'mixed.db'}"
    built = polydom.build_index(model, learner, extra_candidates=extra, store=url)
    reopened = polydom.open_index(url)
    assert {c.learner for c in built.candidates} >= {"sklearn:StandardScaler+LogisticRegression"}
    for budget in (5.0, 12.0, 60.0, 300.0):
        a, b = built.lookup(1.0, budget), reopened.lookup(1.0, budget)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.key == b.key
            np.testing.assert_array_equal(reopened.predict(X_va, 1.0, budget),
                                          built.predict(X_va, 1.0, budget))


def test_predict_item_of_a_one_vs_rest_model_and_a_regressor_match_predict():
    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16, y[:300] % 3
    groups = {f"row{r}": list(range(8 * r, 8 * r + 8)) for r in range(8)}
    clf = CSTCClassifier(np.ones(8).tolist(), tradeoff=0.01, feature_groups=groups, depth=2,
                         random_state=0).fit(X, y)
    reg = CSTCRegressor(np.ones(8).tolist(), tradeoff=0.01, feature_groups=groups, depth=2,
                        random_state=0).fit(X, y.astype(float))
    for model in (clf, reg):
        pred, usage = model.predict(X[:15]), model.feature_usage(X[:15])
        for i in range(15):
            out = model.predict_item(i, RowFeaturizer(X, groups))
            assert out.label == pytest.approx(pred[i])
            assert set(out.computed) == {g for g, u in zip(groups, usage[i], strict=True) if u}


def test_cstc_and_cscc_are_registered_budgeted_learners():
    from learners.registry import get_learner, registered_learners

    assert {"cstc", "cscc"} <= set(registered_learners("budgeted"))
    proto = get_learner("cstc").make(seed=3, tradeoff=0.1, depth=2)
    assert isinstance(proto, CSTCClassifier) and proto.random_state == 3 and proto.depth == 2
    assert CSCCClassifier in get_learner("cscc").classes()


@pytest.mark.slow
def test_polydom_build_runs_cstc_and_cscc_from_a_config(tmp_path, capsys):
    import shutil
    from pathlib import Path

    import polydom
    from polydom.app.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "breast_cancer_cstc.toml"
    shutil.copy(example, tmp_path / "cfg.toml")
    assert main(["build", str(tmp_path / "cfg.toml")]) == 0
    out = capsys.readouterr().out
    assert "cstc" in out and "cscc" in out
    index = polydom.open_index(tmp_path / "breast_cancer_cstc.db")
    names = {c.learner for c in index.candidates}
    assert names <= {"logistic", "cegb", "cstc", "cscc"} and "logistic" in names
    hit = index.lookup(1.0, 1e6)
    assert hit is not None
