"""Telemetry of served sets (issue 37 item 2): which set served an item, the order its atoms
ran, each atom's time and the total; buffered (bounded), stored (checked, all or none,
sealed to its build) and checked again when read.
"""

from __future__ import annotations

import sqlite3

import pytest
from sklearn.dummy import DummyClassifier

import learners
import polydom
from polydom.errors import DamagedStoreError, TelemetryError
from polydom.index.item_prediction import ItemPrediction
from polydom.serving.telemetry import ServedSet, TimingBatch, TimingBuffer
from polydom.serving.timing_recorder import TimingRecorder
from storage import IndexStore


def _served_index():
    fz = polydom.Featurizer(size=len)
    fz.add("sum", lambda x: [sum(x)], 1).add("max", lambda x: [max(x)], 1)
    model = DummyClassifier(strategy="constant", constant=1).fit([[0.0, 0.0]], [1])
    cand = polydom.Candidate(("both",), 0.9, "1e-3*n", features={"sum", "max"},
                             payload=model)
    index = polydom.Index(polydom.PolyDomIndex.build([cand], 0.0, 100.0),
                          {"sum": "5e-4*n", "max": "5e-4*n"}, columns=fz.columns)
    return index, fz


def test_every_served_item_records_its_set_the_order_and_the_total():
    index, fz = _served_index()
    buf = TimingBuffer()
    plain = index.predict_item([1.0, 2.0, 3.0], 1.0, fz, telemetry=buf)
    anytime = polydom.serving.predict_item(index, [4.0, 5.0], 1.0, fz, anytime=True,
                                           telemetry=buf)
    sets = buf.drain_sets()
    assert len(sets) == 2
    for record, pred in zip(sets, (plain, anytime), strict=True):
        assert record.candidate == ("both",)
        assert record.atoms == pred.computed  # the order the atoms ran
        assert record.seconds == tuple(pred.feature_seconds[a] for a in pred.computed)
        assert record.total == pytest.approx(sum(pred.feature_seconds.values()))
        assert record.size == pred.size
    # an item nothing served (no set fits the budget) paid nothing: no set recorded
    index.predict_item([1.0] * 50, 1e-9, fz, telemetry=buf)
    assert buf.drain_sets() == []


def test_the_set_buffer_is_bounded_and_counts_what_it_dropped():
    buf = TimingBuffer(capacity=2)
    for k in range(3):
        buf.record_set(("s",), 1.0 + k, ["a", "b"], [0.1, 0.2])
    assert buf.pending_sets == 2 and buf.dropped_sets == 1
    assert [s.size for s in buf.drain_batch().sets] == [2.0, 3.0]
    for bad, message in [((("s",), -1.0, ["a"], [0.1]), "size"),
                         ((("s",), 1.0, ["a", "a"], [0.1, 0.1]), "twice"),
                         ((("s",), 1.0, ["a"], [0.1, 0.2]), "one time each"),
                         ((("s",), 1.0, ["a"], [float("nan")]), "a"),
                         ((3, 1.0, ["a"], [0.1]), "candidate")]:
        with pytest.raises(TelemetryError, match=message):
            buf.record_set(*bad)
    assert buf.pending_sets == 0


def test_the_recorder_hands_the_sets_with_the_timings_and_drops_foreign_ones():
    index, _ = _served_index()
    index.info["build_id"] = 1
    got = []
    rec = TimingRecorder(lambda records, build: got.append(records))
    ok = ItemPrediction(label=1, key=("both",), computed=("max", "sum"),
                        feature_seconds={"max": 0.01, "sum": 0.02}, size=3.0)
    foreign = ItemPrediction(label=1, key=("x",), computed=("other",),
                             feature_seconds={"other": 0.01}, size=3.0)
    rec.record(index, ok)
    rec.record(index, foreign)
    rec.flush()
    (batch,) = got
    assert isinstance(batch, TimingBatch) and len(batch) == 2
    assert batch.sets == [ServedSet(("both",), 3.0, ("max", "sum"), (0.01, 0.02), 0.03)]
    assert rec.sets_recorded == 1 and rec.sets_dropped == 1


@pytest.fixture
def store(tmp_path):
    model = polydom.CostModel({"a": "1e-3", "b": "2e-3*n"}, columns={"a": [0], "b": [1]},
                              start="1e-4")
    acc = {frozenset(): 0.1, frozenset({"a"}): 0.5, frozenset({"b"}): 0.6,
           frozenset({"a", "b"}): 0.7}
    url = f"sqlite:///{tmp_path / 'sets.db'}"
    index = polydom.build_index(model, learners.SyntheticLearner(acc.__getitem__), n_max=100.0,
                                store=url, cost_unit="s")
    return url, index


def test_a_store_keeps_served_sets_with_their_timings_all_or_none(store):
    url, index = store
    good = TimingBatch([("a", 2.0, 0.001), ("b", 2.0, 0.004)],
                       [ServedSet(("a", "b"), 2.0, ("b", "a"), (0.004, 0.001), 0.005)])
    polydom.store_timings(url, good, seal=index.info.get("seal"))
    with IndexStore(url, create=False) as s:
        (row,) = s.served_sets()
        assert row.record == good.sets[0] and len(s.timings()) == 2
    bad = TimingBatch([("a", 2.0, 0.001)],
                      [ServedSet(("a",), 2.0, ("zzz",), (0.001,), 0.001)])
    with pytest.raises(TelemetryError, match="unknown atom"):
        polydom.store_timings(url, bad)
    outside = TimingBatch([], [ServedSet(("a",), 500.0, ("a",), (0.001,), 0.001)])
    with pytest.raises(TelemetryError, match="outside"):
        polydom.store_timings(url, outside)
    with IndexStore(url, create=False) as s:  # nothing of the refused batches was stored
        assert len(s.served_sets()) == 1 and len(s.timings()) == 2
    with pytest.raises(TelemetryError, match="another store"):
        polydom.store_timings(url, good, seal="0" * 64)


def test_a_damaged_served_set_row_is_named_when_read(store):
    url, _ = store
    polydom.store_timings(url, TimingBatch(
        [], [ServedSet(("a",), 2.0, ("a",), (0.001,), 0.001)] * 2))
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE served_sets SET total = 5.0 WHERE id = 2")
    with IndexStore(url, create=False) as s, pytest.raises(DamagedStoreError,
                                                           match="row 2 .*total"):
        s.served_sets()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE served_sets SET total = 0.001, atoms = '[\"nope\"]' WHERE id = 2")
    with IndexStore(url, create=False) as s, pytest.raises(DamagedStoreError, match="row 2"):
        s.served_sets()
    with IndexStore(url, create=False) as s:  # a read that does not reach the damaged row
        assert s.served_sets(since_id=2) == [] and len(s.served_sets(build_id=99)) == 0
