"""What every serving door shares, whatever carries its requests: one :class:`ServingCore`.

A door (HTTP in :mod:`polydom.app.service`, a JSON-lines loop, a batch job, gRPC) turns a
request into a mapping of fields, calls :meth:`ServingCore.lookup`, :meth:`~ServingCore.
explain` or :meth:`~ServingCore.predict`, and writes the record it gets back; a
:class:`polydom.errors.QueryError` names the field at fault (``.status``: 400, or 409 for a
model that cannot predict).  The core holds what a door would otherwise rebuild: one
snapshot of the index per call (a build published meanwhile never mixes into an answer),
the item server of the newest build (raw items with a featurizer), the Prometheus counters,
the served timings on their way to the store, and :meth:`~ServingCore.refresh`.

Runtime complexity: each call is the serving core's (:mod:`polydom.serving.query`) plus,
for raw items, the featurizer's work.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from polydom.curves.names import candidate_name
from polydom.errors import DamagedStoreError, InvalidArgumentError, QueryError
from polydom.index.built import Index
from polydom.serving.drift_recalibration import DriftRecalibration
from polydom.serving.item_serving import ItemServer
from polydom.serving.measured_size import MeasuredSize
from polydom.serving.provenance import info_proven
from polydom.serving.query import explain_answer, lookup_answer, predict_answer, read_query
from polydom.serving.timing_recorder import TimingRecorder

__all__ = ["ServingCore", "ServiceMetrics", "flush_periodically", "item_record"]

#: Latency buckets of the request histograms (seconds).
BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)

#: What a featurizer raises on an item it cannot take: a 400 naming the item.
_ITEM_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


class _TimingsCollector(Collector):
    """The counts of a :class:`TimingRecorder`, read when ``/metrics`` is scraped."""

    def __init__(self, recorder: TimingRecorder) -> None:
        self.recorder = recorder

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        r = self.recorder
        yield CounterMetricFamily("polydom_timings_recorded",
                                  "Feature timings of served items offered to telemetry",
                                  value=r.recorded)
        yield CounterMetricFamily("polydom_timings_stored",
                                  "Feature timings written to the telemetry store",
                                  value=r.stored)
        dropped = CounterMetricFamily("polydom_timings_dropped",
                                      "Feature timings dropped, by reason", labels=["reason"])
        for reason, n in r.dropped.items():
            dropped.add_metric([reason], n)
        yield dropped
        yield CounterMetricFamily("polydom_timings_write_errors",
                                  "Telemetry writes that failed (their timings dropped)",
                                  value=r.write_errors)
        yield GaugeMetricFamily("polydom_timings_buffered",
                                "Feature timings waiting for the next telemetry write",
                                value=r.buffered)


class _DriftCollector(Collector):
    """The steps of a :class:`DriftRecalibration`, read when ``/metrics`` is scraped."""

    def __init__(self, drift: DriftRecalibration) -> None:
        self.drift = drift

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        d = self.drift
        steps = CounterMetricFamily(
            "polydom_drift_steps", "Recalibrate on drift: timings monitored, alarms, "
            "alarms deferred by the rate limit, recalibrations published, alarms "
            "dismissed (no change left to publish), failed",
            labels=["step"])
        for step, n in d.counts.items():
            steps.add_metric([step], n)
        yield steps
        yield GaugeMetricFamily("polydom_drift_last_build",
                                "Build published by the last recalibration (-1: none yet)",
                                value=-1 if d.last_build is None else d.last_build)
        yield GaugeMetricFamily("polydom_drift_last_seconds",
                                "Seconds the last recalibration took", value=d.last_seconds)


class ServiceMetrics:
    """The Prometheus metrics of one service, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 timings: TimingRecorder | None = None,
                 drift: DriftRecalibration | None = None) -> None:
        self.registry = registry = registry or CollectorRegistry()
        if timings is not None:
            registry.register(_TimingsCollector(timings))
        if drift is not None:
            registry.register(_DriftCollector(drift))
        self.requests = Counter("polydom_requests", "HTTP requests answered",
                                ["endpoint", "status"], registry=registry)
        self.latency = Histogram("polydom_request_seconds", "Time to answer a request",
                                 ["endpoint"], buckets=BUCKETS, registry=registry)
        self.items = Counter("polydom_items", "Raw items served", registry=registry)
        self.over_budget = Counter("polydom_items_over_budget",
                                   "Raw items whose measured feature time exceeded the budget",
                                   registry=registry)
        self.feature_seconds = Histogram("polydom_item_feature_seconds",
                                         "Measured feature time of a served item",
                                         buckets=BUCKETS, registry=registry)
        self.build = Gauge("polydom_current_build", "Build id the service answers from",
                           registry=registry)
        self.info_sealed = Gauge("polydom_build_info_sealed", "1 when the seal of the build "
                                 "answered from covers its info, 0 when it is unproven",
                                 registry=registry)
        self.switches = Counter("polydom_build_switches", "Switches to a newer build",
                                registry=registry)
        self.refresh_errors = Counter("polydom_refresh_errors",
                                      "Refreshes that failed (the old build kept serving)",
                                      registry=registry)


async def flush_periodically(recorder: TimingRecorder, stop: asyncio.Event,
                             seconds: float) -> None:
    """Flush ``recorder`` in a worker thread every ``seconds`` until ``stop`` is set, then
    once more and return.

    The last flush starts after ``stop`` was set, so it takes every timing recorded before
    that, including those recorded while an earlier flush was writing (the app sets ``stop``
    at shutdown, after its last request).  Flushes never overlap.
    """
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
        if not stop.is_set():
            await asyncio.to_thread(recorder.flush)
    await asyncio.to_thread(recorder.flush)


def item_record(p: Any, unit: str) -> dict[str, Any]:
    """One served raw item as every door answers it (the prediction record): the label
    with the type the model gave it, the model and the one planned, size, budget, predicted
    and measured cost in ``unit`` (the store's), measured seconds, whether it went over the
    budget and the features computed.  O(features)."""
    label = p.label.item() if isinstance(p.label, np.generic) else p.label
    return {
        "label": label, "key": None if p.key is None else candidate_name(p.key),
        "planned_key": None if p.planned_key is None else candidate_name(p.planned_key),
        "size": p.size, "budget": p.budget, "unit": unit,
        "predicted_cost": p.predicted_cost, "measured_cost": p.measured_cost,
        "measured_seconds": p.seconds, "over_budget": p.over_budget,
        "computed": list(p.computed),
    }


class ServingCore:
    """The door-independent service over an index (see the module's docstring).

    Parameters
    ----------
    index : polydom.Index
        What to serve (one that follows its store switches on :meth:`refresh`).
    featurizer : polydom.Featurizer, optional
        Lets :meth:`predict` take raw ``items``; checked against the index now.
    on_item : callable, optional
        Called as ``on_item(snapshot, prediction)`` for every served raw item.
    timings : TimingRecorder, optional
        Records the feature timings of every served raw item.
    metrics : ServiceMetrics, optional
    measure : MeasuredSize, optional
        The server's own measure of a raw item's size: an item served at another size (the
        featurizer read what a client claims) is answered, its timings not recorded, and
        counted (``polydom_item_size_mismatches`` on ``/metrics``).

    Raises
    ------
    InvalidArgumentError
        If ``featurizer`` does not fit the index (one line naming the feature).
    """

    def __init__(self, index: Index, featurizer: Any = None,
                 on_item: Callable[[Index, Any], None] | None = None,
                 timings: TimingRecorder | None = None,
                 metrics: ServiceMetrics | None = None,
                 measure: MeasuredSize | None = None) -> None:
        self.index = index
        self.featurizer = featurizer
        self.on_item = on_item
        self.timings = timings
        self.metrics = metrics or ServiceMetrics()
        #: The server's own measure of an item's size (None: the featurizer's size is
        #: taken as measured); :mod:`polydom.serving.measured_size`.
        self.measure = measure
        if measure is not None:
            Gauge("polydom_item_size_mismatches", "Raw items served at a size other than "
                  "the server measures (their timings not learnt)",
                  registry=self.metrics.registry).set_function(lambda: measure.mismatches)
        self._servers: dict[int, ItemServer] = {}  # id(table) -> the newest build's server
        if featurizer is not None:
            self.item_server(index.snapshot(), starting=True)

    def note_build(self, view: Index) -> Any:
        """The build ``view`` answers from (set on the ``polydom_current_build`` gauge)."""
        build = view.info.get("build_id")
        if isinstance(build, (int, float)):
            self.metrics.build.set(build)
        self.metrics.info_sealed.set(1 if info_proven(view.info) else 0)
        return build

    def lookup(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The lookup record of ``fields`` (:func:`polydom.serving.query.lookup_answer`)."""
        answer = lookup_answer(self.index, fields)
        self.note_build(answer.query.index)
        return answer.to_dict()

    def explain(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The explanation record of ``fields`` (:func:`~polydom.serving.query.explain_answer`)."""
        record = explain_answer(self.index, fields)
        self.metrics.build.set(record["build"]) if isinstance(record["build"], int) else None
        self.metrics.info_sealed.set(0 if "unproven" in record else 1)
        return record

    def predict(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Labels of ``rows`` (the lookup record with ``labels``), or with ``items`` each raw
        item served within the budget (``{head..., "predictions": [item records]}``)."""
        if "items" not in fields:
            answer = predict_answer(self.index, fields)
            self.note_build(answer.query.index)
            return answer.to_dict()
        items = fields["items"]
        if self.featurizer is None:
            raise QueryError("items", "this service has no featurizer (start it with "
                                      "--featurizer module:attr); send rows")
        if not isinstance(items, list) or not items:
            raise QueryError("items", "items must be a non-empty list")
        q = read_query(self.index, {k: v for k, v in fields.items() if k != "items"},
                       ("budget",))
        self.note_build(q.index)
        server = self.item_server(q.index)
        unit = q.unit.store
        out = [self._serve_item(q.index, server, i, item, q.budget, unit)
               for i, item in enumerate(items)]
        head = q.head()
        return {"build": head["build"], "budget": head["budget"], "unit": head["unit"],
                "overrun": head["overrun"], "predictions": out,
                **({"unproven": head["unproven"]} if "unproven" in head else {})}

    def item_server(self, view: Index, starting: bool = False) -> ItemServer:
        """The :class:`ItemServer` of ``view``'s build (one kept, for the newest build)."""
        server = self._servers.get(id(view.table))
        if server is None or server.index.table is not view.table:
            try:
                server = ItemServer(view, self.featurizer)
            except InvalidArgumentError as exc:
                if not starting:
                    raise
                raise InvalidArgumentError(
                    f"featurizer does not fit build {view.info.get('build_id')} of the "
                    f"index: {exc}") from None
            self._servers.clear()
            self._servers[id(view.table)] = server
        return server

    def _serve_item(self, view: Index, server: ItemServer, i: int, item: Any, budget: float,
                    unit: str) -> dict[str, Any]:
        """One raw item's record; what the featurizer cannot take is a 400 naming
        ``items[i]``, a damaged stored model a 5xx (the store's fault, not the item's)."""
        try:
            p = server.predict(item, budget, check_input=False)
        except DamagedStoreError:
            raise
        except _ITEM_ERRORS as exc:  # the featurizer could not take this item
            reason = str(exc).splitlines()[0] if str(exc) else ""
            raise QueryError(f"items[{i}]", f"item {i}: {type(exc).__name__}: "
                                            f"{reason}") from None
        metrics = self.metrics
        metrics.items.inc()
        metrics.feature_seconds.observe(p.seconds)
        if p.over_budget:
            metrics.over_budget.inc()
        if self.on_item is not None:
            self.on_item(view, p)
        if self.timings is not None and (self.measure is None
                                         or self.measure.agrees(item, p.size)):
            self.timings.record(view, p)  # a size the server did not measure: not learnt
        return item_record(p, unit)

    def refresh(self) -> bool:
        """Switch to the store's newest build if there is one (counted).  What
        :meth:`polydom.Index.refresh` costs."""
        if self.index.refresh():
            self.metrics.switches.inc()
            self.note_build(self.index.snapshot())
            return True
        return False
