"""Cascades over the skyline: stages, thresholds, shared atoms, expected cost, lookups, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from polydom import Candidate, CostModel, Featurizer, Index, PolyDomIndex
from polydom.serving.cascade import Cascade, calibrated_proba
from polydom.serving.cascade_fit import (
    cascade_candidates,
    cascade_from_stages,
    fit_cascade,
    fit_temperature,
    with_cascades,
)
from tests.cascade_support import COLUMNS, small_index, synthetic_rows


@pytest.fixture(scope="module")
def data():
    return synthetic_rows()


@pytest.fixture(scope="module")
def index(data):
    return small_index(*data)


@pytest.fixture(scope="module")
def cal(data):
    X, y = data
    return X[600:], y[600:]


def by_key(index, key):
    return next(c for c in index.candidates if c.key == key)


def measured_mean_cost(index, cand, X, size):
    cascade = cand.payload
    exits = cascade.exit_stages(X[:, cascade.input_columns])
    computed = cascade.computed_atoms(exits)
    per_row = sum(computed[a] * index.costs[a](size) for a in computed)
    return float(np.mean(per_row))


class CountingFeaturizer(Featurizer):
    """A featurizer whose items are rows; counts the routine calls per atom."""

    def __init__(self):
        super().__init__(size=lambda item: item[1])
        self.calls = dict.fromkeys(COLUMNS, 0)
        for name, cols in COLUMNS.items():
            self.add(name, self._routine(name, cols), len(cols))

    def _routine(self, name, cols):
        def routine(item):
            self.calls[name] += 1
            return item[0][cols]
        return routine


def test_calibrated_proba_keeps_the_argmax():
    p = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    for t in (0.3, 1.0, 4.0):
        assert (calibrated_proba(p, t).argmax(axis=1) == p.argmax(axis=1)).all()
        assert np.allclose(calibrated_proba(p, t).sum(axis=1), 1.0)


def test_temperature_softens_an_overconfident_model():
    p = np.tile([[0.99, 0.01]], (10, 1))
    y = np.array([0] * 6 + [1] * 4)
    assert fit_temperature(p, y) > 1.0


def test_one_stage_cascade_equals_the_plain_lookup(index, cal, data):
    X, _ = data
    for size, budget in [(5.0, 3.5), (10.0, 6.0), (20.0, 30.0)]:
        hit = index.lookup(size, budget)
        cand = fit_cascade(index, *cal, budget, size, max_stages=1)
        assert cand.payload.n_stages == 1
        assert cand.payload.models[0] is hit.model
        assert cand.accuracy == pytest.approx(hit.accuracy)
        for n in (0.0, size, 20.0):
            assert cand.cost(n) == pytest.approx(hit.candidate.cost(n))
        rows = X[:50]
        ours = cand.payload.predict(rows[:, cand.payload.input_columns])
        assert (ours == index.predict(rows, size, budget)).all()


def test_threshold_zero_gives_the_cheapest_model(index, cal, data):
    X, _ = data
    first, last = by_key(index, "a"), by_key(index, "a+b+c+d")
    cand = cascade_from_stages(index, [first, by_key(index, "b+c"), last], [0.0, 0.0, 0.0], *cal)
    cascade = cand.payload
    assert (cascade.exit_stages(X[:, cascade.input_columns]) == 0).all()
    expected = first.payload.predict(X[:, index.model_columns(first.features)])
    assert (cascade.predict(X[:, cascade.input_columns]) == expected).all()
    for n in (0.0, 7.0, 20.0):
        assert cand.cost(n) == pytest.approx(first.cost(n))


def test_threshold_above_one_gives_the_most_expensive_model(index, cal, data):
    X, _ = data
    first, last = by_key(index, "a"), by_key(index, "a+b+c+d")
    cand = cascade_from_stages(index, [first, by_key(index, "b+c"), last], [1.5, 1.5, 0.0], *cal)
    cascade = cand.payload
    assert (cascade.exit_stages(X[:, cascade.input_columns]) == 2).all()
    expected = last.payload.predict(X[:, index.model_columns(last.features)])
    assert (cascade.predict(X[:, cascade.input_columns]) == expected).all()
    for n in (0.0, 7.0, 20.0):
        assert cand.cost(n) == pytest.approx(last.cost(n))
    assert cand.accuracy == pytest.approx(last.accuracy)


def test_a_shared_atom_is_computed_and_paid_once(index, cal, data):
    X, _ = data
    stages = [by_key(index, "a+b"), by_key(index, "b+c")]  # share atom b
    cand = cascade_from_stages(index, stages, [1.5, 0.0], *cal)
    cascade = cand.payload
    assert cascade.new_atoms == [("a", "b"), ("c",)]
    fz = CountingFeaturizer()
    out = cascade.predict_item((X[0], 4.0), fz)
    assert out.stage == 1
    assert fz.calls == {"a": 1, "b": 1, "c": 1, "d": 0}
    assert sorted(out.computed) == ["a", "b", "c"]
    paid = sum(index.costs[a](4.0) for a in "abc")
    assert cand.cost(4.0) == pytest.approx(paid)
    assert out.label == stages[1].payload.predict(X[:1, index.model_columns(frozenset("bc"))])[0]


def test_expected_cost_curve_equals_the_measured_mean_on_calibration_rows(index, cal):
    X, _ = cal
    for budget in (2.0, 5.0, 12.0):
        cand = fit_cascade(index, *cal, budget, (2.0, 12.0))
        for n in (2.0, 7.0, 12.0):
            assert cand.cost(n) == pytest.approx(measured_mean_cost(index, cand, X, n))


def test_fitted_cascade_fits_the_budget_over_the_range(index, cal):
    for budget in (1.5, 4.0, 9.0, 20.0):
        cand = fit_cascade(index, *cal, budget, (0.0, 15.0))
        assert cand.cost.le(type(cand.cost)([budget]), 0.0, 15.0)


def test_more_budget_never_gives_a_less_accurate_cascade(index, cal):
    accs = [fit_cascade(index, *cal, b, 10.0, folds=1).accuracy for b in (2.0, 5.0, 10.0, 40.0)]
    assert accs == sorted(accs)


def test_lookup_returns_a_cascade_where_it_is_best_and_predicts_full_rows(index, cal, data):
    X, _ = data
    cands = cascade_candidates(index, *cal, budgets=[3.0, 6.0, 12.0], ranges=[(0.0, 20.0)])
    assert cands and all(c.payload.n_stages > 1 for c in cands)
    both = with_cascades(index, cands)
    both.table._check()
    best = max(cands, key=lambda c: c.accuracy - c.cost(10.0) * 1e-9)
    hit = both.lookup(10.0, best.cost(10.0))
    assert isinstance(hit.model, Cascade)
    labels = both.predict(X[:20], 10.0, best.cost(10.0))
    assert (labels == hit.model.predict(X[:20][:, hit.model.input_columns])).all()


def test_predict_item_stops_when_the_budget_runs_out(index, cal, data):
    X, _ = data
    stages = [by_key(index, "a"), by_key(index, "a+b+c+d")]
    cascade = cascade_from_stages(index, stages, [1.5, 0.0], *cal).payload
    fz = CountingFeaturizer()
    out = cascade.predict_item((X[0], 10.0), fz, budget=1e-9)
    assert out.stage == 0 and out.anytime
    assert out.computed == ("a",)
    out = cascade.predict_item((X[0], 10.0), fz, budget=math.inf)
    assert out.stage == 1 and not out.anytime


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"budget": 0.5, "sizes": 5.0}, "budget 0.5 is below the cheapest"),
        ({"budget": -1.0, "sizes": 5.0}, "budget"),
        ({"budget": 5.0, "sizes": 25.0}, "size 25.0 is outside"),
        ({"budget": 5.0, "sizes": (3.0, 1.0)}, "n_lo <= n_hi"),
        ({"budget": 5.0, "sizes": 5.0, "max_stages": 0}, "max_stages"),
    ],
)
def test_bad_input_is_named(index, cal, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_cascade(index, *cal, **kwargs)


def test_empty_calibration_rows_are_named(index, cal):
    X, y = cal
    with pytest.raises(ValueError, match="X_cal must not be empty"):
        fit_cascade(index, X[:0], y[:0], 5.0, 5.0)


def test_cascade_to_arrays_round_trip(index, cal, data):
    X, _ = data
    cand = fit_cascade(index, *cal, 6.0, 10.0)
    arrays, meta = cand.payload.to_arrays()
    again = Cascade.from_arrays(arrays, meta)
    rows = X[:, cand.payload.input_columns]
    assert (again.predict(rows) == cand.payload.predict(rows)).all()
    assert again.expected_cost() == cand.payload.expected_cost()


def test_cascade_candidate_states_its_needs_with_probabilities(index, cal):
    cand = fit_cascade(index, *cal, 6.0, 10.0)
    cascade = cand.payload
    assert cand.learner == "cascade"
    assert cand.needs == cascade.atom_probabilities()
    assert cand.needs[cascade.atoms[0][0]] == 1.0
    expected = sum(p * index.costs[a] for a, p in cand.needs.items())
    assert cand.cost == index.cost_model.expected_cost(cand.needs)
    assert cand.cost(10.0) == pytest.approx(expected(10.0))


def test_index_predict_item_serves_a_cascade_on_demand(index, cal, data):
    X, _ = data
    cands = cascade_candidates(index, *cal, budgets=[3.0, 6.0, 12.0], ranges=[(0.0, 20.0)])
    both = with_cascades(index, cands)
    best = max(cands, key=lambda c: c.accuracy)
    budget = best.cost(10.0)
    assert both.lookup(10.0, budget).key == best.key
    fz = CountingFeaturizer()
    stages = []
    for row in X[:40]:
        out = both.predict_item((row, 10.0), budget, fz)
        assert out.key == best.key
        assert set(out.computed) <= set(best.needs)
        stages.append(out.stage)
    assert min(stages) == 0
    labels = best.payload.predict(X[:40][:, best.payload.input_columns])
    served = [both.predict_item((row, 10.0), budget, fz).label for row in X[:40]]
    assert list(labels) == served


def test_bundles_sharing_an_atom_pay_it_once():
    X, y = synthetic_rows()
    X = X[:, :6]
    cm = CostModel({"e": "1", "h": "2", "l": "4"}, bundles={"shape": ["e", "h"],
                   "texture": ["e", "l"]}, columns={"e": [0, 1], "h": [2, 3], "l": [4, 5]})
    cands = []
    for bundle, acc in (("shape", 0.6), ("texture", 0.7)):
        needs = dict.fromkeys(cm.atoms_of([bundle]), 1.0)
        model = LogisticRegression(max_iter=300).fit(X[:400, cm.columns_of(needs)], y[:400])
        cands.append(Candidate(bundle, acc, cm.cost([bundle]), {bundle}, model, needs=needs))
    index = Index(PolyDomIndex.build(cands, 0.0, 20.0), cm)
    cand = cascade_from_stages(index, cands, [1.5, 0.0], X[600:], y[600:])
    assert cand.payload.new_atoms == [("e", "h"), ("l",)]
    assert cand.cost(5.0) == pytest.approx(7.0)  # e + h + l, e once
    assert cand.features == {"shape", "texture"}
