"""Budgeted serving of raw items: only the chosen features, any-time fallbacks, adherence."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import polydom
from polydom.app.workloads.images import load_digits_workload
from polydom.pipeline.subsets import index_over_subsets, with_costs
from polydom.serving.adherence import measure_adherence
from polydom.serving.featurizer import Featurizer
from polydom.serving.item_serving import ItemServer, predict_item
from tests.strategies import examples

FEATURES = ["thumbnail", "zones", "projections", "hog", "spectrum"]
# Known cost curves (seconds, n = side), so that lookups do not depend on this machine.
COSTS = {
    "thumbnail": "2e-5",
    "zones": "1e-5 + 1e-8*n**2",
    "projections": "1e-5 + 1e-8*n**2",
    "hog": "3e-4 + 1e-7*n**2",
    "spectrum": "5e-5 + 2e-8*n**2",
}
SUBSETS = [
    {"thumbnail"},
    {"zones"},
    {"hog"},
    {"thumbnail", "zones"},
    {"thumbnail", "hog"},
    {"zones", "spectrum"},
    {"zones", "projections", "hog"},
    set(FEATURES),
]


class Counted:
    """Wraps a routine and counts its calls."""

    def __init__(self, routine):
        self.routine = routine
        self.calls = 0

    def __call__(self, item):
        self.calls += 1
        return self.routine(item)


@pytest.fixture(scope="module")
def served():
    """A real index over a few feature subsets of digits at sides 8 and 16."""
    wl = load_digits_workload(sides=(8, 16), digits=300, features=FEATURES, seed=0)
    fz = wl.featurizer
    X = fz.transform(wl.items)
    train = np.isin(wl.digit, np.unique(wl.digit)[:220])
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    index = index_over_subsets(X[train], wl.labels[train], fz.columns, COSTS, SUBSETS, est,
                               n_min=8, n_max=16, groups=wl.digit[train])
    held = np.flatnonzero(~train)
    return index, wl, X, held


def counting(fz: Featurizer, timer=time.perf_counter) -> tuple[Featurizer, dict[str, Counted]]:
    """A copy of ``fz`` whose routines count their calls."""
    out = Featurizer(size=fz.size_function, timer=timer)
    counters = {}
    for name in fz.names:
        counters[name] = Counted(fz._routines[name])
        out.add(name, counters[name], len(fz.columns[name]))
    return out, counters


BUDGETS = [1e-5, 2.5e-5, 4e-5, 1e-4, 3.5e-4, 4e-4, 6e-4, 1e-3, 1.0]


def test_the_index_has_a_real_skyline(served):
    index, *_ = served
    accs = [c.accuracy for c in index.table.skyline(16.0)]
    assert len(accs) >= 3 and accs == sorted(accs)
    assert max(accs) > 0.9


def test_predict_item_computes_exactly_the_chosen_features(served):
    index, wl, _, held = served
    fz, counters = counting(wl.featurizer)
    for k, i in enumerate(held[:: 7]):
        budget = BUDGETS[k % len(BUDGETS)]
        before = {n: c.calls for n, c in counters.items()}
        p = predict_item(index, wl.items[i], budget, fz)
        hit = index.lookup(wl.sizes[i], budget)
        called = {n for n, c in counters.items() if c.calls > before[n]}
        assert all(counters[n].calls - before[n] == 1 for n in called)
        if hit is None:
            assert p.label is None and p.computed == () and called == set()
        else:
            assert called == set(hit.features) == set(p.computed) == set(p.model_features)
            assert p.key == hit.key == p.planned_key
            assert p.predicted_cost == pytest.approx(hit.cost)
            assert p.seconds == pytest.approx(sum(p.feature_seconds.values()))


def test_predict_item_label_is_the_index_prediction_on_full_rows(served):
    index, wl, X, held = served
    for i in held[:40]:
        size = wl.sizes[i]
        p = predict_item(index, wl.items[i], 1e-3, wl.featurizer)
        assert p.label == index.predict(X[i : i + 1], size, 1e-3)[0]


def test_index_method_delegates_to_predict_item(served):
    index, wl, _, held = served
    i = held[0]
    a = index.predict_item(wl.items[i], 4e-4, wl.featurizer)
    b = predict_item(index, wl.items[i], 4e-4, wl.featurizer)
    assert (a.key, a.label, a.computed) == (b.key, b.label, b.computed)


def test_nothing_fits_gives_no_label_and_computes_nothing(served):
    index, wl, _, held = served
    fz, counters = counting(wl.featurizer)
    for anytime in (False, True):
        p = predict_item(index, wl.items[held[0]], 1e-6, fz, anytime=anytime)
        assert p.label is None and p.key is None and p.computed == ()
    assert sum(c.calls for c in counters.values()) == 0


def on_predicted_clock(index, featurizer: Featurizer, slower: dict[str, float] | None = None):
    """A copy of ``featurizer`` on a fake clock where each feature "takes" its predicted cost
    (times ``slower[name]``)."""
    clock = [0.0]
    fz, counters = counting(featurizer, timer=lambda: clock[0])
    for name, routine in list(fz._routines.items()):
        curve = index.costs[name]
        factor = (slower or {}).get(name, 1.0)

        def timed(item, routine=routine, curve=curve, factor=factor):
            clock[0] += factor * float(curve(featurizer.size(item)))
            return routine(item)

        fz._routines[name] = timed
    return fz, counters


def test_anytime_with_time_to_spare_answers_like_the_plain_mode(served):
    """When each feature takes exactly its predicted cost, the any-time walk reaches the
    index's choice and stops there."""
    index, wl, _, held = served
    fz, _ = on_predicted_clock(index, wl.featurizer)
    for i in held[:30]:
        for budget in (4e-5, 3.5e-4, 1.0):
            plain = predict_item(index, wl.items[i], budget, wl.featurizer)
            if plain.key is None:
                continue
            p = predict_item(index, wl.items[i], budget, fz, anytime=True)
            assert p.key == plain.key and set(p.computed) == set(plain.computed)
            assert p.label == plain.label and not p.fallback


def test_anytime_keeps_a_stored_model_on_every_prefix(served):
    """After the first stored model is complete, every prefix of the computed features
    holds some candidate's feature set; the answer only uses computed features."""
    index, wl, _, held = served
    sets = [c.features for c in index.candidates]
    for i in held[:20]:
        for budget in BUDGETS:
            p = predict_item(index, wl.items[i], budget, wl.featurizer, anytime=True)
            assert p.model_features <= set(p.computed)
            seen: set[str] = set()
            covered = False
            for name in p.computed:
                seen.add(name)
                has = any(s <= seen for s in sets)
                assert has or not covered
                covered = covered or has


def test_anytime_falls_back_when_a_feature_runs_over(served):
    """hog "takes" 10x its predicted cost: the walk stops and a model on what was computed
    answers, sooner than the plain mode, which overruns."""
    index, wl, _, held = served
    fz, _ = on_predicted_clock(index, wl.featurizer, slower={"hog": 10.0})
    budget = 1.0e-3
    fallbacks = 0
    for i in held[:20]:
        plain = predict_item(index, wl.items[i], budget, fz)
        assert "hog" in plain.computed and plain.over_budget
        p = predict_item(index, wl.items[i], budget, fz, anytime=True)
        assert p.key is not None
        assert p.model_features <= set(p.computed)
        assert p.seconds < plain.seconds
        fallbacks += p.fallback
    assert fallbacks == 20


def test_adherence_rows_summarise_the_predictions(served):
    index, wl, _, held = served
    items = [wl.items[i] for i in held[:30]]
    labels = wl.labels[held[:30]]
    rows = measure_adherence(index, items, labels, [2.5e-5, 1.0], wl.featurizer, anytime=True)
    assert [(r.size, r.budget) for r in rows] == sorted((r.size, r.budget) for r in rows)
    assert sum(r.count for r in rows) == 2 * len(items)
    for r in rows:
        assert 0.0 <= r.accuracy <= r.answered <= 1.0
        assert r.mean_slack == pytest.approx(r.budget - r.mean_seconds)
        assert r.method == "any-time poly-dom"
    assert max(r.accuracy for r in rows if r.budget == 1.0) > 0.7


def test_featurizer_must_fit_the_index(served):
    index, *_ = served
    with pytest.raises(ValueError, match="does not have"):
        ItemServer(index, Featurizer().add("thumbnail", len, 64))
    wrong = Featurizer()
    for name in reversed(FEATURES):
        wrong.add(name, len, len(index.columns[name]))
    with pytest.raises(ValueError, match="columns of feature"):
        ItemServer(index, wrong)


def test_bad_budgets_are_named(served):
    index, wl, _, held = served
    with pytest.raises(ValueError, match="budget must be finite"):
        predict_item(index, wl.items[held[0]], -1.0, wl.featurizer)
    with pytest.raises(ValueError, match="outside the index domain"):
        predict_item(index, np.zeros((64, 64)), 1.0, wl.featurizer)


def test_with_costs_reindexes_the_same_models_under_new_curves(served):
    index, *_ = served
    doubled = {name: 2.0 * curve for name, curve in index.costs.items()}
    again = with_costs(index, doubled)
    by_key = {c.key: c for c in index.candidates}
    for c in again.candidates:
        assert c.payload is by_key[c.key].payload
        assert c.cost(16.0) == pytest.approx(2.0 * by_key[c.key].cost(16.0))
    hit = index.lookup(16.0, 4e-4)
    assert again.lookup(16.0, 8e-4).key == hit.key
    chain = with_costs(index, index.costs, keys=["thumbnail", "thumbnail+hog"])
    assert {c.key for c in chain.candidates} == {"thumbnail", "thumbnail+hog"}


class ConstantModel:
    """Predicts its own key: enough to see which stored model answered."""

    def __init__(self, key):
        self.key = key

    def predict(self, X):
        return np.array([self.key] * len(X), dtype=object)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 4), min_size=1, max_size=3), min_size=1, max_size=8,
             unique_by=frozenset),
    st.lists(st.floats(0.05, 1.0), min_size=8, max_size=8),
    st.lists(st.floats(1e-3, 1.0), min_size=5, max_size=5),
    st.lists(st.sampled_from([1.0, 1.0, 0.5, 3.0]), min_size=5, max_size=5),
    st.floats(0.0, 3.0),
    st.integers(1, 10),
)
def test_anytime_invariants_on_random_indexes(sets, accs, unit, slow, budget, size):
    """Random candidates over 5 features, a fake clock where feature f takes slow[f] times
    its predicted cost: the answer uses only computed features, every computed feature
    belongs to some candidate, and once a stored model is complete one stays available."""
    names = [f"f{i}" for i in range(5)]
    clock = [0.0]
    costs = {names[i]: polydom.CostCurve([0.0, unit[i]]) for i in range(5)}
    fz = Featurizer(size=len, timer=lambda: clock[0])
    for i, name in enumerate(names):
        def routine(x, i=i):
            clock[0] += slow[i] * unit[i] * len(x)
            return [float(i)]
        fz.add(name, routine, 1)
    cands = []
    for k, s in enumerate(sets):
        feats = frozenset(names[i] for i in s)
        key = "+".join(sorted(feats))
        cands.append(polydom.Candidate(key, accs[k], polydom.CostCurve.total(
            costs[f] for f in feats), features=feats, payload=ConstantModel(key)))
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), costs,
                          columns=fz.columns)
    item = [0] * size
    p = predict_item(index, item, budget, fz, anytime=True)
    plain = predict_item(index, item, budget, fz)
    used = set().union(*(c.features for c in cands))
    assert set(p.computed) <= used and len(set(p.computed)) == len(p.computed)
    assert p.model_features <= set(p.computed)
    if p.key is not None:
        assert p.label == p.key
        best_on_computed = max(c.accuracy for c in cands if c.features <= set(p.computed))
        assert p.accuracy == best_on_computed
    if plain.key is None:
        assert p.key is None and p.computed == ()
    else:
        assert p.key is not None
    seen: set[str] = set()
    covered = False
    for name in p.computed:
        seen.add(name)
        has = any(c.features <= seen for c in cands)
        assert has or not covered
        covered = covered or has
    if all(s == 1.0 for s in slow) and plain.key is not None:
        assert p.accuracy >= plain.accuracy  # on time: the planned model or a better one


def test_index_over_subsets_rejects_bad_subsets(served):
    index, wl, X, _ = served
    fz = wl.featurizer
    est = LogisticRegression(max_iter=50)
    with pytest.raises(ValueError, match="without columns or costs"):
        index_over_subsets(X, wl.labels, fz.columns, COSTS, [{"sift"}], est)
    with pytest.raises(ValueError, match="at least one feature"):
        index_over_subsets(X, wl.labels, fz.columns, COSTS, [set()], est)
    with pytest.raises(ValueError, match="subsets must not be empty"):
        index_over_subsets(X, wl.labels, fz.columns, COSTS, [], est)
    with pytest.raises(ValueError, match="costs has no curve"):
        with_costs(index, {"thumbnail": "1"})
