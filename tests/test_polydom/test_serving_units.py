"""Raw-item serving in the store's unit (issue 28 item 2, issue 31): on an index whose costs
are in ms, measured seconds are compared with the budget in ms."""

from __future__ import annotations

import time

import pytest
from sklearn.dummy import DummyClassifier

import polydom
import polydom.serving.item_serving


def _index(unit: str | None) -> tuple[polydom.Index, polydom.Featurizer]:
    def slow(item):
        time.sleep(0.046)
        return [1.0]

    fz = polydom.Featurizer(size=len).add("a", lambda item: [0.0], 1).add("b", slow, 1)
    model = DummyClassifier(strategy="constant", constant=1).fit([[0.0], [0.0]], [1, 1])
    cands = [polydom.Candidate(name, acc, str(len(feats)), features=set(feats), payload=model)
             for name, acc, feats in (("a", 0.7, "a"), ("b", 0.8, "b"), ("ab", 0.9, "ab"))]
    info = {} if unit is None else {"cost_unit": unit}
    costs = {"a": "1", "b": "1"}
    return polydom.Index(polydom.PolyDomIndex.build(cands), costs, columns=fz.columns,
                         info=info), fz


def test_46_ms_of_features_against_a_25_ms_budget_is_over_budget():
    index, fz = _index("ms")
    p = polydom.serving.predict_item(index, [1.0], budget=25.0, featurizer=fz)
    assert p.key == "ab" and p.cost_unit == "ms" and p.predicted_cost == 2.0
    assert p.seconds >= 0.046 and p.measured_cost == pytest.approx(1000 * p.seconds)
    assert p.over_budget and p.slack < -20.0


def test_the_any_time_planner_counts_measured_time_in_the_store_unit():
    # b (the better single model) is computed first and takes 46 ms of a 25 ms budget:
    # nothing is left for a, so b answers.
    index, fz = _index("ms")
    p = polydom.serving.predict_item(index, [1.0], budget=25.0, featurizer=fz, anytime=True)
    assert p.computed == ("b",) and p.key == "b" and p.over_budget


def test_an_index_in_seconds_or_without_a_unit_compares_seconds():
    for unit in ("s", None):
        index, fz = _index(unit)
        p = polydom.serving.predict_item(index, [1.0], budget=25.0, featurizer=fz)
        assert p.per_second == 1.0 and not p.over_budget and p.measured_cost == p.seconds
