"""Recalibrate on drift: a drift monitor on the stored timings that publishes refitted curves.

``polydom serve --recalibrate-on-drift`` (opt-in) wraps the telemetry sink of its
:class:`~polydom.serving.timing_recorder.TimingRecorder` with :meth:`DriftRecalibration.sink`.
Off the request path (in the recorder's flush), each batch of served timings is stored and
then fed to a :class:`~polydom.serving.telemetry.DriftMonitor` (timings of the build being
served only; seconds converted to the build's cost unit).  The policy for a machine that is
not stationary:

1. **Alarm.** When the monitor flags a feature (its false alarms stay below ``alpha`` per
   served item while the timings are exchangeable), the id before the batch that raised it
   becomes ``since``: the timings from there on are the evidence.
2. **Collect.** The recalibration waits for ``collect`` timings stored after ``since`` (the
   monitor's window is mostly drifted when it fires; the wait lets the refit see the new
   state, not the transition).
3. **Rate limit.** At most one recalibration per ``min_interval`` seconds: an alarm that
   comes sooner waits (counted as ``deferred``, once per alarm); a machine that changes
   faster than that is served by the last build meanwhile.
4. **Refit, re-sweep, publish.** ``index.recalibrate(since_id=since, min_records=...,
   relative=True)`` (:func:`polydom.recalibrate`: every atom's curve scaled by the change
   of its served timings against the build's own before the alarm;
   every candidate re-derived with its guard factor and offset kept; re-swept; published
   as a new build; never a model retrained); the index follows its store, so it switches,
   and the monitor is reset on the new curves (a fresh reference).  **Dismiss.** When no
   atom's scale lies outside ``[1 / slowdown, slowdown]`` (the monitor's tolerance), the
   change had passed by the time the evidence was collected (a transient: another
   process's burst): nothing is published (``min_change``), the alarm is counted as
   ``dismissed`` and the monitor takes a fresh reference on the same build.
5. **Bounded.** A step is at most ``max_step`` (default :data:`MAX_DRIFT_STEP`) up or
   down per atom: a recalibration that would scale a curve further publishes nothing and
   is counted ``refused`` (logged in one line); a larger change waits for an operator
   (``polydom recalibrate --max-step``).  With the rate limit, no stream of items moves a
   curve faster than ``max_step`` per ``min_interval``.  What is learnt is what the server
   measured: timings on its own clock, and, with a
   :class:`~polydom.serving.measured_size.MeasuredSize` (``serve --measure``), only items
   served at the size the server measures (a client's claimed size is counted, not learnt).
6. **Failure.** A recalibration that raises otherwise is counted (``failed``) and logged;
   the alarm is dropped and the monitor reset, so the next alarm tries again
   (rate-limited).

Every step is counted in :attr:`DriftRecalibration.counts` (``/metrics`` shows them).
Nothing here imports storage: the index's own :meth:`polydom.Index.recalibrate` publishes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from polydom.curves.units import seconds_to_store, unit_name
from polydom.errors import InvalidArgumentError, PolydomError, TelemetryError
from polydom.index.built import Index
from polydom.serving.telemetry import DriftMonitor, TimingRecord

__all__ = ["MAX_DRIFT_STEP", "STEPS", "DriftRecalibration"]

LOG = logging.getLogger("polydom.drift")

#: What :attr:`DriftRecalibration.counts` counts.
STEPS = ("monitored", "alarms", "deferred", "recalibrations", "dismissed", "refused",
         "failed")

#: The largest factor one recalibration on drift may scale a curve by, up or down: a
#: machine that drifts (throttling, a noisy neighbour) changes by 1.2-3x; a bigger step is
#: more likely forged or broken timings, and waits for an operator.
MAX_DRIFT_STEP = 4.0


class DriftRecalibration:
    """A drift monitor on served timings that recalibrates the followed index when it fires.

    Parameters
    ----------
    index : Index
        An index from :func:`polydom.open_index` that follows its store (it publishes
        through :meth:`Index.recalibrate` and switches with :meth:`Index.refresh`).
    min_interval : float, default 300
        Seconds between two recalibrations, at least.
    collect : int, default 300
        Timings stored after the alarm before the recalibration runs.
    min_records : int, default 20
        Timings an atom needs to be rescaled on its own (:func:`polydom.recalibrate`).
    monitor : dict, optional
        Keyword arguments of :class:`DriftMonitor` (``window``, ``alpha``, ``reference``,
        ``slowdown``); the quantile is the build's (``info["insitu"]``, else 0.95).
    clock : callable, default time.monotonic
        Seconds, for the rate limit.
    max_step : float, default MAX_DRIFT_STEP
        The largest factor one recalibration may scale a curve by (module docstring).

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If the index does not follow a store, or an argument is out of range.
    """

    def __init__(self, index: Index, min_interval: float = 300.0, collect: int = 300,
                 min_records: int = 20, monitor: dict[str, Any] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 max_step: float = MAX_DRIFT_STEP) -> None:
        if not isinstance(index, Index) or not index.follows_store:
            raise InvalidArgumentError(
                "recalibrate on drift needs an index that follows its store (opened with "
                f"polydom.open_index(url) without build=...), got {index!r}")
        if isinstance(min_interval, bool) or not isinstance(min_interval, (int, float)) \
                or not 0 <= min_interval < float("inf"):
            raise InvalidArgumentError(
                f"min_interval must be a finite number of seconds >= 0, got {min_interval!r}")
        for name, value in (("collect", collect), ("min_records", min_records)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(max_step, bool) or not isinstance(max_step, (int, float)) \
                or not 1 <= max_step < float("inf"):
            raise InvalidArgumentError(
                f"max_step must be a finite number >= 1, got {max_step!r}")
        self.index = index
        self.max_step = float(max_step)
        self.min_interval = float(min_interval)
        self.collect = collect
        self.min_records = min_records
        self.clock = clock
        self._options = dict(monitor or {})
        self._lock = threading.Lock()
        #: Counts of every step (:data:`STEPS`).
        self.counts = dict.fromkeys(STEPS, 0)
        #: Build published by the last recalibration (None before the first).
        self.last_build: int | None = None
        #: Seconds the last recalibration took.
        self.last_seconds = 0.0
        #: What the last recalibration did (a :class:`polydom.RecalibrationReport`; None
        #: before the first).
        self.last_report: Any = None
        self._last_run: float | None = None
        self._since: int | None = None
        self._collected = 0
        self._deferred = False
        self._watch(index.snapshot())

    def _watch(self, view: Index) -> None:
        """Monitor ``view``'s build from scratch: its curves, its unit, a fresh reference."""
        insitu = view.info.get("insitu")
        quantile = insitu.get("quantile", 0.95) if isinstance(insitu, dict) else 0.95
        self.build = view.info.get("build_id")
        try:
            self._scale = seconds_to_store(unit_name(view.info), "recalibrate on drift")
        except PolydomError:
            self._scale = 1.0  # not a unit of time: the shift test is scale-free anyway
        self.monitor = DriftMonitor(view.costs, quantile=quantile, **self._options)

    def sink(self, store: Callable[[list[TimingRecord], Any], Any]
             ) -> Callable[[list[TimingRecord], Any], Any]:
        """``store`` (``sink(records, build_id) -> (first_id, last_id)``, as
        ``functools.partial(polydom.store_timings, url)``) followed by :meth:`observe`."""
        def stored_then_observed(records: list[TimingRecord], build: Any) -> Any:
            ids = store(records, build)
            self.observe(records, build, ids)
            return ids
        return stored_then_observed

    def observe(self, records: Sequence[TimingRecord], build: Any,
                ids: tuple[int, int] | None) -> int | None:
        """Feed stored timings of ``build`` (store ids ``ids``) to the policy (module
        docstring); returns the build a recalibration published, else None.

        Runtime complexity: O(records * log reference), plus a recalibration when one runs.
        """
        with self._lock:
            view = self.index.snapshot()
            if view.info.get("build_id") != self.build:
                self._watch(view)  # the store moved on (another publisher): start again
                self._since = None
            if build != self.build:
                return None
            fired = False
            for rec in records:
                self.counts["monitored"] += 1
                fired |= self.monitor.update(rec.feature, rec.size, rec.seconds * self._scale)
            if fired and self._since is None and ids is not None:
                self.counts["alarms"] += 1
                self._since = max(0, int(ids[0]) - 1)
                self._collected = 0
                self._deferred = False
            if self._since is None:
                return None
            self._collected += len(records)
            if self._collected < self.collect:
                return None
            now = self.clock()
            if self._last_run is not None and now - self._last_run < self.min_interval:
                if not self._deferred:
                    self.counts["deferred"] += 1
                    self._deferred = True
                return None
            return self._recalibrate(now)

    def _recalibrate(self, now: float) -> int | None:
        since, self._since = self._since, None
        self._last_run = now
        t0 = time.perf_counter()
        try:
            report = self.index.recalibrate(
                since_id=since, min_records=self.min_records, relative=since > 0,
                min_change=self.monitor.slowdown if since > 0 else None,
                max_step=self.max_step)
        except TelemetryError as exc:  # a step beyond the bound (or bad stored timings)
            self.counts["refused"] += 1
            LOG.warning("drift: recalibration refused, still serving build %s: %s",
                        self.build, str(exc).splitlines()[0] if str(exc) else exc)
            self._watch(self.index.snapshot())
            return None
        except Exception:  # never reaches the flush that called it: counted and logged
            self.counts["failed"] += 1
            LOG.exception("recalibration after a drift alarm failed; still serving build %s",
                          self.build)
            self._watch(self.index.snapshot())
            return None
        self.last_seconds = time.perf_counter() - t0
        self.last_report = report
        if not report.published:  # the change had passed: no build, a fresh reference
            self.counts["dismissed"] += 1
            LOG.warning("drift: the timings after the alarm show no change beyond x%.3g; "
                        "still serving build %s", self.monitor.slowdown, report.from_build)
            self._watch(self.index.snapshot())
            return None
        self.counts["recalibrations"] += 1
        self.last_build = int(report.build_id)
        self._watch(self.index.snapshot())
        LOG.warning("drift: recalibrated from build %s, published build %s (%d timings)",
                    report.from_build, report.build_id, report.records)
        return self.last_build
