"""A cascade candidate is stored without pickle, reopened with the same answers, seen in SQL."""

from __future__ import annotations

import pytest

import polydom
from polydom.index import resolve_payload
from polydom.pipeline.open import register_learner_models
from polydom.serving.cascade import Cascade
from polydom.serving.cascade_fit import cascade_candidates, with_cascades
from storage import IndexStore, UntrustedModelError
from tests.cascade_support import small_index, synthetic_rows
from tests.storage_support import load_models


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    X, y = synthetic_rows()
    index = small_index(X, y)
    cands = cascade_candidates(index, X[600:], y[600:], budgets=[3.0, 6.0], ranges=[(0.0, 20.0)])
    both = with_cascades(index, cands)
    url = f"sqlite:///{tmp_path_factory.mktemp('cascade') / 'index.db'}"
    register_learner_models()
    with IndexStore(url) as store:
        build = store.begin_build({"learner": "test"}, both.costs, both.columns)
        store.publish(build, both)
    return url, both, cands, X


def test_reopened_cascade_predicts_the_same(stored):
    url, both, cands, X = stored
    again = polydom.open_index(url)
    for cand in cands:
        stored_cand = next(c for c in again.candidates if c.key == cand.key)
        assert stored_cand.learner == "cascade"
        assert stored_cand.needs == pytest.approx(cand.needs)
        model = resolve_payload(stored_cand.payload)
        assert isinstance(model, Cascade)
        rows = X[:, model.input_columns]
        assert (model.predict(rows) == cand.payload.predict(rows)).all()
        assert model.expected_cost() == cand.payload.expected_cost()
    for size, budget in [(5.0, 3.0), (10.0, 6.0), (20.0, 40.0)]:
        assert again.lookup(size, budget).key == both.lookup(size, budget).key
        assert (again.predict(X[:30], size, budget) == both.predict(X[:30], size, budget)).all()


def test_cascade_rows_appear_in_the_skyline_view(stored):
    url, both, cands, _ = stored
    with IndexStore(url, create=False) as store:
        rows = store.skyline_rows()
    keys = {r["candidate"] for r in rows}
    on_sky = {c.key for sky in both.table.skylines for c in sky}
    assert {c.key for c in cands if c.key in on_sky} <= keys
    cascade_rows = [r for r in rows if r["candidate"].startswith("cascade[")]
    assert cascade_rows
    assert all(r["learner"] == "cascade" and r["model_format"] == "arrays"
               for r in cascade_rows)


def test_a_pickled_stage_is_refused_without_trust(tmp_path):
    X, y = synthetic_rows()
    index = small_index(X, y)
    cand = cascade_candidates(index, X[600:], y[600:], budgets=[6.0], ranges=[(0.0, 20.0)])[0]
    cand.payload.models[0] = _Opaque(cand.payload.models[0])
    url = f"sqlite:///{tmp_path / 'p.db'}"
    both = with_cascades(index, [cand])
    register_learner_models()
    with IndexStore(url) as store:
        build = store.begin_build({"learner": "test"}, both.costs, both.columns)
        store.publish(build, both)
    opened = polydom.open_index(url)  # models load on first use
    with pytest.raises(UntrustedModelError, match="nested model 'model0'"):
        load_models(opened)
    assert isinstance(resolve_payload(polydom.open_index(url, trusted=True).candidates[-1].payload),
                      Cascade)


class _Opaque:
    """A wrapper that only pickle can store."""

    def __init__(self, model):
        self.model = model
        self.classes_ = model.classes_

    def predict(self, X):
        return self.model.predict(X)

    def predict_proba(self, X):
        return self.model.predict_proba(X)
