"""TimingRecorder: served timings buffered per build (bounded) and flushed to a sink.

Every timing offered is accounted for (stored, dropped by reason, or still buffered); a
failing sink is counted and logged once, never raised; recording from many threads while
another flushes loses and duplicates nothing.
"""

from __future__ import annotations

import logging
import math
import threading

import pytest

from polydom.index.item_prediction import ItemPrediction
from polydom.serving.telemetry import TimingRecord
from polydom.serving.timing_recorder import TimingRecorder
from tests import storage_support as S


class ListSink:
    """Keeps what it is given: ``(build, records)`` per call; fails while ``failing``."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, list[TimingRecord]]] = []
        self.failing = False

    def __call__(self, records, build):
        if self.failing:
            raise OSError("disk full")
        self.calls.append((build, list(records)))

    @property
    def records(self) -> list[TimingRecord]:
        return [r for _, batch in self.calls for r in batch]


def view(build: int | None):
    """An index of the storage-support groups (domain [0, N_MAX]) as build ``build``."""
    info = {"alpha": 1.0} if build is None else {"alpha": 1.0, "build_id": build}
    return S.index_of(S.random_candidates(5, seed=1), info)


def item(size: float, **seconds: float) -> ItemPrediction:
    return ItemPrediction(label=0, computed=tuple(seconds), feature_seconds=seconds, size=size)


def accounted(rec: TimingRecorder) -> int:
    return rec.stored + sum(rec.dropped.values()) + rec.buffered


def test_flush_hands_each_builds_records_to_the_sink_in_order():
    sink = ListSink()
    rec = TimingRecorder(sink)
    one, two = view(1), view(2)
    assert rec.record(one, item(10.0, g0=0.5, g1=0.25)) == 2
    assert rec.record(two, item(20.0, g2=0.125)) == 1
    assert rec.record(one, item(30.0, g0=1.0)) == 1
    assert rec.buffered == 4 and sink.calls == []  # nothing written before a flush
    assert rec.flush() == 4
    assert sink.calls == [
        (1, [TimingRecord("g0", 10.0, 0.5), TimingRecord("g1", 10.0, 0.25),
             TimingRecord("g0", 30.0, 1.0)]),
        (2, [TimingRecord("g2", 20.0, 0.125)]),
    ]
    assert (rec.recorded, rec.stored, rec.buffered) == (4, 4, 0)
    assert rec.flush() == 0 and len(sink.calls) == 2  # nothing left: the sink is not called


def test_an_index_from_no_store_flushes_under_build_none():
    sink = ListSink()
    rec = TimingRecorder(sink)
    rec.record(view(None), item(5.0, g0=0.1))
    rec.flush()
    assert sink.calls == [(None, [TimingRecord("g0", 5.0, 0.1)])]


def test_a_full_buffer_keeps_the_newest_and_counts_the_oldest_dropped():
    sink = ListSink()
    rec = TimingRecorder(sink, capacity=3)
    v = view(1)
    for k in range(5):
        rec.record(v, item(float(k), g0=float(k + 1)))
    assert rec.buffered == 3 and rec.dropped["full"] == 2
    rec.flush()
    assert [r.seconds for r in sink.records] == [3.0, 4.0, 5.0]
    assert accounted(rec) == rec.recorded == 5


def test_timings_the_build_cannot_take_are_counted_never_raised():
    sink = ListSink()
    rec = TimingRecorder(sink)
    v = view(1)
    assert rec.record(v, item(10.0, g0=math.nan, g1=-1.0, other=0.5, g2=0.25)) == 1
    assert rec.record(v, item(S.N_MAX + 1, g0=0.5)) == 0  # outside the domain
    assert rec.record(v, item(math.nan, g0=0.5)) == 0
    assert rec.dropped["invalid"] == 5
    rec.flush()
    assert sink.records == [TimingRecord("g2", 10.0, 0.25)]
    assert accounted(rec) == rec.recorded == 6


def test_more_pending_builds_than_allowed_evict_the_oldest():
    sink = ListSink()
    rec = TimingRecorder(sink, max_builds=2)
    rec.record(view(1), item(1.0, g0=0.1, g1=0.1))
    rec.record(view(2), item(2.0, g0=0.2))
    rec.record(view(3), item(3.0, g0=0.3))
    assert rec.dropped["evicted"] == 2
    rec.flush()
    assert [b for b, _ in sink.calls] == [2, 3]
    assert accounted(rec) == rec.recorded == 4


def test_a_failing_sink_is_counted_and_logged_once_until_it_recovers(caplog):
    sink = ListSink()
    rec = TimingRecorder(sink)
    v = view(1)
    sink.failing = True
    with caplog.at_level(logging.WARNING, logger="polydom.telemetry"):
        for _ in range(3):
            rec.record(v, item(1.0, g0=0.1, g1=0.2))
            assert rec.flush() == 0  # never raises
        assert (rec.write_errors, rec.dropped["write_error"]) == (3, 6)
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1 and "disk full" in errors[0].exc_text
        sink.failing = False
        rec.record(v, item(1.0, g0=0.3))
        assert rec.flush() == 1
        assert any("stored again" in r.getMessage() for r in caplog.records)
        sink.failing = True
        rec.record(v, item(1.0, g0=0.4))
        rec.flush()
        assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 2
    assert sink.records == [TimingRecord("g0", 1.0, 0.3)]
    assert accounted(rec) == rec.recorded == 8


def test_recording_threads_and_a_flushing_thread_lose_and_duplicate_nothing():
    sink = ListSink()
    rec = TimingRecorder(sink)
    v = view(1)
    threads, per_thread = 4, 500
    stop = threading.Event()

    def serve(t: int) -> None:
        for k in range(per_thread):
            rec.record(v, item(float(t), g0=float(t * per_thread + k + 1)))

    def flush() -> None:
        while not stop.is_set():
            rec.flush()

    flusher = threading.Thread(target=flush)
    servers = [threading.Thread(target=serve, args=(t,)) for t in range(threads)]
    flusher.start()
    for s in servers:
        s.start()
    for s in servers:
        s.join()
    stop.set()
    flusher.join()
    rec.flush()
    seconds = [r.seconds for r in sink.records]
    assert sorted(seconds) == [float(k + 1) for k in range(threads * per_thread)]
    for t in range(threads):  # each thread's records in the order it made them
        mine = [s for s in seconds if t * per_thread < s <= (t + 1) * per_thread]
        assert mine == sorted(mine)
    assert rec.stored == rec.recorded == threads * per_thread
    assert sum(rec.dropped.values()) == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"capacity": 0}, "capacity must be a positive integer"),
    ({"capacity": True}, "capacity must be a positive integer"),
    ({"max_builds": 0}, "max_builds must be a positive integer"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimingRecorder(ListSink(), **kwargs)


def test_a_sink_that_cannot_be_called_is_refused():
    with pytest.raises(TypeError, match="sink must be callable"):
        TimingRecorder("sqlite:///x.db")

