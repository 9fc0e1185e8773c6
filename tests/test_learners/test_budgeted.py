"""The budgeted-learner contract: usage matrices -> cost curves -> candidates in the index."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import polydom
from learners import CEGBClassifier, GreedyMiserClassifier, sweep
from learners.budgeted.contract import (
    column_groups,
    expected_cost_curve,
    group_usage,
    row_costs,
    worst_cost_curve,
)
from tests.strategies import examples

NAMES = ["a", "b", "c", "d"]


@st.composite
def usage_and_costs(draw):
    rows = draw(st.integers(1, 30))
    usage = np.array(
        draw(
            st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=rows, max_size=rows)
        )
    )
    coef = st.floats(0, 100, allow_nan=False, allow_subnormal=False)  # subnormals are refused
    costs = {n: polydom.CostCurve(draw(st.lists(coef, min_size=1, max_size=3))) for n in NAMES}
    return usage, costs


@settings(max_examples=examples(60), deadline=None)
@given(data=usage_and_costs(), size=st.floats(0, 1e4))
def test_expected_and_worst_curves_equal_brute_force(data, size):
    usage, costs = data
    per_row = [sum(costs[n](size) for n, u in zip(NAMES, row, strict=True) if u) for row in usage]
    expected = expected_cost_curve(usage, costs, NAMES)
    assert expected(size) == pytest.approx(np.mean(per_row), rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(row_costs(usage, costs, NAMES, size), per_row, rtol=1e-12)
    worst = worst_cost_curve(usage, costs, NAMES)
    union = usage.any(axis=0)
    assert worst(size) == pytest.approx(
        sum(costs[n](size) for n, u in zip(NAMES, union, strict=True) if u), rel=1e-9, abs=1e-9
    )
    assert expected(size) <= worst(size) * (1 + 1e-9) + 1e-9
    assert max(per_row) <= worst(size) * (1 + 1e-9) + 1e-9


def test_group_usage_is_any_over_the_group_columns():
    cols = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(
        group_usage(cols, {"g": [0, 1], "h": [2]}), [[True, False], [False, True], [False, False]]
    )


@pytest.mark.parametrize(
    "groups, match",
    [
        ({"a": [0], "b": [0, 1, 2]}, "column 0 belongs to both 'a' and 'b'"),
        ({"a": [0, 1]}, r"columns \[2\] are in no feature"),
        ({"a": [0, 1, 2, 9]}, "outside"),
        ({"a": [], "b": [0, 1, 2]}, "empty"),
        ([0, 1, 2], "mapping"),
    ],
)
def test_bad_feature_groups_are_named(groups, match):
    with pytest.raises(ValueError, match=match):
        column_groups(groups, 3)


def test_costs_missing_a_feature_are_named():
    with pytest.raises(ValueError, match="'b'"):
        expected_cost_curve(np.ones((2, 2), bool), {"a": "1"}, ["a", "b"])


@pytest.fixture(scope="module")
def split():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.4, random_state=0, stratify=y)
    groups = {
        name: [i, i + 10, i + 20]
        for i, name in enumerate(
            [
                "radius",
                "texture",
                "perimeter",
                "area",
                "smooth",
                "compact",
                "concav",
                "points",
                "symmetry",
                "fractal",
            ]
        )
    }
    costs = {name: f"{1 + i} + {0.01 * (i + 1)}*n" for i, name in enumerate(groups)}
    return X_tr, X_te, y_tr, y_te, groups, costs


def test_sweep_measures_accuracy_and_expected_cost(split):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    proto = CEGBClassifier(feature_groups=groups, n_estimators=20, num_leaves=8)
    cands = sweep(proto, [0.0, 0.01, 10.0], X_tr, y_tr, costs, evaluation=(X_te, y_te),
                  sizes=[10.0, 1000.0])
    assert len(cands) == 6 and len({c.key for c in cands}) == 6
    for c in cands:
        model = c.payload.estimator
        assert c.accuracy == pytest.approx(model.score(X_te, y_te))
        usage = model.feature_usage(X_te)
        for n in (0.0, 10.0, 1000.0):
            assert c.cost(n) == pytest.approx(
                row_costs(usage, costs, model.feature_names_, n).mean()
            )
        assert c.features == model.used_feature_names_
    # tradeoff 10 gives the empty model: no feature, no cost
    empty = [c for c in cands if "tradeoff=10" in str(c.key)]
    assert all(c.features == frozenset() and c.cost(1e6) == 0.0 for c in empty)


def test_worst_cost_counts_every_feature_the_model_may_use(split):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    clf = CEGBClassifier(
        feature_groups=groups,
        n_estimators=20,
        tradeoff=0.005,
        feature_costs={g: 1.0 for g in groups},
    ).fit(X_tr, y_tr)
    worst = clf.to_candidate(X_te, y_te, costs, "w", cost="worst")
    exp = clf.to_candidate(X_te, y_te, costs, "e")
    total = polydom.CostCurve.total(
        [polydom.CostCurve.parse(costs[g]) for g in clf.used_feature_names_]
    )
    np.testing.assert_allclose(worst.cost.coefficients, total.coefficients, rtol=1e-12)
    assert exp.cost(100.0) < worst.cost(100.0)
    with pytest.raises(ValueError, match="cost"):
        clf.to_candidate(X_te, y_te, costs, "x", cost="median")


def test_budgeted_candidates_in_the_index_lookup_and_predict(split):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    cands = sweep(CEGBClassifier(feature_groups=groups, n_estimators=20), [0.0, 0.002, 0.02], X_tr,
                  y_tr, costs, evaluation=(X_te, y_te), sizes=[100.0])
    cands += sweep(GreedyMiserClassifier(feature_groups=groups, n_estimators=20), [1.0, 100.0],
                   X_tr, y_tr, costs, evaluation=(X_te, y_te), sizes=[100.0], key="GreedyMiser")
    table = polydom.PolyDomIndex.build(cands)
    index = polydom.Index(
        table, {g: polydom.CostCurve.parse(c) for g, c in costs.items()}, columns=groups
    )
    for size in (1.0, 100.0, 5000.0):
        for budget in np.linspace(0.0, 2 * max(c.cost(size) for c in cands), 9):
            fits = [c for c in cands if c.cost(size) <= budget]
            hit = index.lookup(size, budget)
            if not fits:
                assert hit is None
                continue
            best = max(c.accuracy for c in fits)
            assert hit.accuracy == best and hit.cost <= budget
            # Index.predict hands the model only its features' columns
            pred = index.predict(X_te, size, budget)
            np.testing.assert_array_equal(pred, hit.model.estimator.predict(X_te))


def test_subset_model_rejects_the_wrong_width(split):
    X_tr, X_te, y_tr, _, groups, _ = split
    clf = CEGBClassifier(feature_groups=groups, n_estimators=5).fit(X_tr, y_tr)
    sub = clf.subset_model()
    assert len(sub.columns) == 3 * len(clf.used_feature_names_)
    np.testing.assert_array_equal(sub.classes_, clf.classes_)
    with pytest.raises(ValueError, match="shape"):
        sub.predict(X_te)


def test_split_cost_adds_the_mean_number_of_split_evaluations(split):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    proto = CEGBClassifier(feature_groups=groups, n_estimators=10, num_leaves=8)
    (cand,) = sweep(proto, [0.001], X_tr, y_tr, costs, evaluation=(X_te, y_te), sizes=[100.0],
                    split_cost="0.01 + 0.0001*n")
    model = cand.payload.estimator
    assert model.split_cost == pytest.approx(0.02)
    splits = model.split_evaluations(X_te).mean()
    base = model.expected_cost(X_te, costs)
    for n in (0.0, 100.0, 1e4):
        assert cand.cost(n) == pytest.approx(base(n) + splits * (0.01 + 0.0001 * n))
    worst = model.to_candidate(X_te, y_te, costs, "w", cost="worst", split_cost=1.0)
    assert worst.cost(0.0) == pytest.approx(model.worst_cost(costs)(0.0)
                                            + model.split_evaluations(X_te).max())
