"""Served timings on their way to a store: bounded buffers per build, written off the hot path.

A service that computes the features of raw items hands every served
:class:`~polydom.index.item_prediction.ItemPrediction` to :meth:`TimingRecorder.record`
with the build that served it.  The recorder keeps the seconds of each atomic feature in a
:class:`~polydom.serving.telemetry.TimingBuffer` of that build (a timing belongs to the
build whose atoms and domain it was measured against) and does nothing else on the request
path.  Whoever runs off the path (the service's background task, periodically and at
shutdown) calls :meth:`TimingRecorder.flush`, which drains every buffer and passes each
build's records to ``sink(records, build_id)``: for a store,
``functools.partial(polydom.store_timings, url)``.  Nothing here imports storage: the sink
is passed in.

Invariants
----------
* :meth:`record` never raises and never waits on I/O: one lock held for O(features)
  appends (a timing it cannot take is counted, not raised).
* At most ``capacity * max_builds`` records are held: each build's buffer is a ring of
  ``capacity`` (the oldest dropped when full), and a record for a build beyond
  ``max_builds`` pending ones evicts the oldest pending build's records.
* Every timing offered is accounted for:
  ``recorded == stored + sum(dropped.values()) + buffered`` at any time outside a flush
  (while a flush writes, its records are in none of the three).  Drops are counted by
  reason: ``"full"`` (a ring overflowed), ``"invalid"`` (not an atom of the build, a size
  outside its domain, a value that is not finite and >= 0), ``"evicted"`` (too many builds
  pending), ``"write_error"`` (the sink raised for the batch).
* Served sets (:class:`~polydom.index.served_set.ServedSet`: the candidate, its atoms in
  the order they ran, their seconds and total) ride along: each build's buffer keeps them
  in a ring of ``capacity`` too, and a flush hands the sink one
  :class:`~polydom.serving.telemetry.TimingBatch` (the timings, with the sets in ``.sets``),
  which :func:`polydom.store_timings` stores together.  A set with an atom that is not
  the build's, or a size outside its domain, is dropped and counted in
  :attr:`TimingRecorder.sets_dropped`.
* A failing sink never reaches a request; it is logged once (with its traceback) until a
  write succeeds again, and counted in :attr:`write_errors`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from polydom.errors import ArgumentTypeError, InvalidArgumentError, TelemetryError
from polydom.index.built import Index
from polydom.index.item_prediction import ItemPrediction
from polydom.serving.telemetry import TimingBuffer, TimingRecord, served_set_of

__all__ = ["DROP_REASONS", "ServedBuild", "TimingRecorder", "TimingSink"]

LOG = logging.getLogger("polydom.telemetry")

#: Why a timing was dropped rather than stored.
DROP_REASONS = ("full", "invalid", "evicted", "write_error")

#: Where flushed records go: ``sink(records, build_id)``; raises on failure.
TimingSink = Callable[[list[TimingRecord], Any], Any]


class ServedBuild(int):
    """The id of the build that served some timings (an ``int``, what every sink takes),
    carrying that build's seal (``index.info["seal"]``, None for an unsealed build):
    :func:`polydom.store_timings` checks the store's build has that seal, so the timings
    name the build *and* the store they belong to.

    >>> b = ServedBuild(3, "ab12")
    >>> b == 3, b.seal
    (True, 'ab12')
    """

    seal: str | None

    def __new__(cls, build_id: int, seal: str | None) -> ServedBuild:
        self = super().__new__(cls, build_id)
        self.seal = seal
        return self

    def __repr__(self) -> str:
        return f"ServedBuild({int(self)}, seal={self.seal!r})"

    __str__ = int.__repr__  # in messages: the build id


class TimingRecorder:
    """Bounded per-build buffers of served feature timings, flushed to a sink on demand.

    Parameters
    ----------
    sink : callable
        ``sink(records, build_id)`` stores a list of
        :class:`~polydom.serving.telemetry.TimingRecord` for a build (``build_id`` a
        :class:`ServedBuild`: the build's id, with its seal; None for an index that came
        from no store); it raises when the write fails.
        ``functools.partial(polydom.store_timings, url, key=key)`` writes to a store.
    capacity : int, default 100000
        Records kept per build between flushes.
    max_builds : int, default 4
        Builds whose records may wait for a flush at once (a service switches builds at
        most once per refresh; more pending builds than this evict the oldest).

    Attributes
    ----------
    recorded : int
        Timings offered to :meth:`record` so far.
    stored : int
        Timings the sink accepted.
    dropped : dict of str to int
        Timings dropped, by reason (:data:`DROP_REASONS`).
    write_errors : int
        Flushes of a build's batch that the sink refused.
    """

    def __init__(self, sink: TimingSink, capacity: int = 100_000, max_builds: int = 4) -> None:
        if not callable(sink):
            raise ArgumentTypeError(
                f"sink must be callable as sink(records, build_id), got {sink!r}")
        for name, value in (("capacity", capacity), ("max_builds", max_builds)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
        self.sink = sink
        self.capacity = int(capacity)
        self.max_builds = int(max_builds)
        self._buffers: dict[Any, TimingBuffer] = {}
        self._lock = threading.Lock()        # buffers and counters (record vs flush)
        self._flushing = threading.Lock()    # one flush at a time: batches in order
        self._failing = False
        self.recorded = 0
        self.stored = 0
        self.dropped = dict.fromkeys(DROP_REASONS, 0)
        self.write_errors = 0
        #: Served sets buffered so far, and dropped (not the build's, full ring, write error).
        self.sets_recorded = 0
        self.sets_dropped = 0

    def __repr__(self) -> str:
        return (f"TimingRecorder(buffered={self.buffered}, recorded={self.recorded}, "
                f"stored={self.stored}, dropped={sum(self.dropped.values())})")

    @property
    def buffered(self) -> int:
        """Timings waiting for a flush.  O(builds)."""
        with self._lock:
            return sum(len(b) for b in self._buffers.values())

    def record(self, view: Index, prediction: ItemPrediction) -> int:
        """Buffer the feature timings of one item served from ``view`` (one build).

        Only atoms of the build (features with a cost curve in ``view.costs``) at a size
        inside its domain are kept; any other timing is counted as dropped ("invalid").
        Never raises for a bad timing and never does I/O.

        Runtime complexity: O(features computed), under one lock.

        Returns
        -------
        int
            Timings buffered.
        """
        build = view.info.get("build_id")
        if isinstance(build, int) and not isinstance(build, bool):
            build = ServedBuild(build, view.info.get("seal"))
        lo, hi = view.table.domain
        costs = view.costs
        size = prediction.size
        timings = list(prediction.feature_seconds.items())
        kept = 0
        with self._lock:
            self.recorded += len(timings)
            buf = self._buffer(build)
            for feature, seconds in timings:
                if feature not in costs or not _inside(size, lo, hi):
                    self.dropped["invalid"] += 1
                    continue
                full = len(buf) == buf.capacity
                try:
                    buf.record(feature, size, seconds)
                except TelemetryError:
                    self.dropped["invalid"] += 1
                    continue
                self.dropped["full"] += full
                kept += 1
            self._record_set(buf, prediction, costs, lo, hi)
        return kept

    def _record_set(self, buf: TimingBuffer, prediction: ItemPrediction, costs: Any,
                    lo: float, hi: float) -> None:
        """Buffer the prediction's served set (under the lock); a bad one is counted."""
        try:
            served = served_set_of(prediction)
        except TelemetryError:
            self.sets_dropped += 1
            return
        if served is None:
            return
        if not _inside(served.size, lo, hi) or any(a not in costs for a in served.atoms):
            self.sets_dropped += 1
            return
        full = buf.pending_sets == buf.capacity
        buf.append_set(served)
        self.sets_dropped += full
        self.sets_recorded += 1

    def _buffer(self, build: Any) -> TimingBuffer:
        """The buffer of ``build`` (made, evicting the oldest pending build, if new).
        Called under the lock."""
        buf = self._buffers.get(build)
        if buf is None:
            if len(self._buffers) >= self.max_builds:
                oldest = next(iter(self._buffers))
                self.sets_dropped += self._buffers[oldest].pending_sets
                self.dropped["evicted"] += len(self._buffers.pop(oldest))
            buf = self._buffers[build] = TimingBuffer(self.capacity)
        return buf

    def flush(self) -> int:
        """Drain every buffer and hand each build's records to the sink (oldest build first).

        Call it off the request path.  A batch the sink refuses is dropped and counted
        (``"write_error"``); the first failure after a success is logged with its
        traceback, the next ones only counted.  Never raises for a sink error.

        Runtime complexity: O(buffered) plus the sink's writes.

        Returns
        -------
        int
            Timings stored by this flush.
        """
        with self._flushing:
            with self._lock:
                batches: list[tuple[Any, Sequence[TimingRecord]]] = [
                    (build, buf.drain_batch()) for build, buf in self._buffers.items()
                    if len(buf) or buf.pending_sets
                ]
                self._buffers.clear()
            stored = 0
            for build, records in batches:
                try:
                    self.sink(records, build)
                except Exception:  # a telemetry write must never reach a request
                    with self._lock:
                        self.write_errors += 1
                        self.dropped["write_error"] += len(records)
                        self.sets_dropped += len(getattr(records, "sets", ()))
                    if not self._failing:
                        self._failing = True
                        LOG.exception("could not store %d served timings of build %s; "
                                      "dropping them (further failures are only counted "
                                      "until a write succeeds)", len(records), build)
                    continue
                stored += len(records)
                with self._lock:
                    self.stored += len(records)
                if self._failing:
                    self._failing = False
                    LOG.warning("served timings are stored again (build %s)", build)
            return stored


def _inside(size: float, lo: float, hi: float) -> bool:
    try:
        return lo <= float(size) <= hi
    except (TypeError, ValueError):
        return False
