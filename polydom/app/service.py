"""The HTTP service over an index: a Starlette app answering lookups, predictions, explanations.

:func:`make_app` wraps a :class:`polydom.Index` (usually ``polydom.open_index(url)``, which
follows the store) in an ASGI app; ``polydom serve`` runs it under uvicorn.  Endpoints:

``GET /lookup?size=&budget=[&rule=]``
    The model for (size, budget): :meth:`polydom.index.built.Hit.to_dict` (name, features,
    accuracy, accuracy_se, learner, build, cost at the size and its unit: what ``polydom
    lookup --json`` and ``Index.lookup`` give), and ``key`` (the name, as before);
    ``rule`` is a lookup rule of :data:`polydom.index.table.RULES` (default ``"best"``).
    A budget may carry its unit (``5ms``, ``2.5e-3s``; a bare number is in the store's
    unit), everywhere a budget is taken.
``POST /predict``
    JSON ``{"size": n, "budget": b, "rows": [[...], ...]}``: labels of full feature rows from
    the model chosen for (size, budget).  With a featurizer, ``{"budget": b, "items": [...]}``
    serves raw items (each item's size is the featurizer's): per item the label, the chosen
    model, predicted and measured feature cost (in the store's unit, with ``unit``; the
    measured seconds too) and whether it went over the budget.
``GET /explain?size=&budget=[&rule=]``
    :meth:`polydom.Index.explain`: the skyline at the size, the chosen entry under the rule,
    the most accurate entry that fits (``best``), the next dearer one and what it would
    cost, why nothing better fits.
``GET /healthz``, ``GET /metrics``
    Liveness with the current build; Prometheus text (prometheus-client).

With a :class:`polydom.serving.timing_recorder.TimingRecorder` (``timings=``), the seconds
each atomic feature of a served raw item took are buffered per build (bounded, on the
request path only an O(features) append) and written by a background task every
``timings_seconds`` and once more at shutdown, in a worker thread: no request waits on a
database write, and a failing write is logged once and counted, never answered.

Every answer comes from one snapshot of the index (:meth:`polydom.Index.snapshot`, taken
once per request) and names its build, so a build published while a request runs never
mixes into it.  A background task calls :meth:`polydom.Index.refresh` every
``refresh_seconds`` (in a worker thread; a failed refresh is counted and the old build goes
on serving).  A malformed request gets a 4xx JSON body ``{"error": ..., "field": ...}``
naming the field (every number checked once, by :mod:`polydom.curves.domain`); anything
else is the server's fault: a 500 whose body says nothing of it (the log does); answers are
strict JSON (a number beyond the float range is ``null``); the worker never dies of a
request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import numpy as np
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from polydom.app.output import json_ready
from polydom.curves.curve_text import natural_key
from polydom.curves.domain import check_budget, check_rows, check_size, real_from_text
from polydom.curves.names import candidate_name
from polydom.curves.units import cost_unit_for, parse_budget, unit_name
from polydom.errors import (
    ArgumentTypeError,
    DamagedStoreError,
    InvalidArgumentError,
    PolydomError,
)
from polydom.index.built import Index
from polydom.index.explanation import Explanation, SkylineEntry
from polydom.index.table import RuleUnavailableError
from polydom.serving.drift_recalibration import DriftRecalibration
from polydom.serving.item_serving import ItemServer
from polydom.serving.measured_size import MeasuredSize
from polydom.serving.provenance import info_proven, unproven_field
from polydom.serving.timing_recorder import TimingRecorder

__all__ = ["DEFAULT_MAX_BODY", "RequestError", "flush_periodically", "make_app", "key_text"]

LOG = logging.getLogger("polydom.serve")

#: Largest request body accepted by default (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 1 << 20

#: Latency buckets of the request histograms (seconds).
_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)

#: What a featurizer raises on an item it cannot take: a 400 naming the item.
_ITEM_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)

_ENDPOINTS = ("/lookup", "/predict", "/explain", "/healthz", "/metrics")


class RequestError(PolydomError):
    """A request the service refuses: HTTP status, the field at fault, a one-line reason."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message


def key_text(key: Any) -> str:
    """A candidate key as the service prints it (as the SQL views and the CLI do)."""
    return candidate_name(key)


def _checked(field: str, check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)`` (a checker of :mod:`polydom.curves.domain`, or the index's); its
    refusal as a 400 naming ``field``."""
    try:
        return check(*args)
    except (InvalidArgumentError, ArgumentTypeError, RuleUnavailableError) as exc:
        raise RequestError(400, field, str(exc)) from None


def _given(params: Mapping[str, Any], field: str) -> Any:
    """The value of ``field`` in a query string or JSON body, or a 400 saying it is missing."""
    value = params.get(field)
    if value is None:
        raise RequestError(400, field, f"{field} is missing")
    return value


def _budget(view: Index, params: Mapping[str, Any]) -> float:
    """The request's budget in the store's unit: a JSON number (in the store's unit), or
    text with an optional unit after the number (``5ms``, ``2.5e-3s``, ``1e-5``: a bare
    number is in the store's unit), as the command line reads ``--budget``
    (:func:`polydom.curves.units.parse_budget`); a finite number >= 0."""
    value = _given(params, "budget")
    if isinstance(value, str):
        unit = cost_unit_for(unit_name(view.info), None)
        value = _checked("budget", parse_budget, value, unit, "budget")
    return _checked("budget", check_budget, value)


def _query(view: Index, params: Mapping[str, Any]) -> tuple[float, float, str]:
    """The ``size``, ``budget`` and ``rule`` of a request, checked once for ``view`` (the
    index is then called with ``check_input=False``)."""
    size = _checked("size", real_from_text, _given(params, "size"), "size")
    size = _checked("size", check_size, size, *view.table.domain)
    budget = _budget(view, params)
    rule = _checked("rule", view.check_rule, params.get("rule", "best"))
    return size, budget, rule


def _at_overrun(view: Index, params: Mapping[str, Any]) -> Index:
    """``view`` at the request's ``overrun`` rate when it names one (a level the build was
    calibrated for, :meth:`Index.at_overrun`), else ``view``; a 400 naming ``overrun``."""
    value = params.get("overrun")
    if value is None:
        return view
    level = _checked("overrun", real_from_text, value, "overrun")
    return _checked("overrun", view.at_overrun, level)


def _fields(request: Request) -> Mapping[str, str]:
    """The request's query string as one value per field: a field given twice
    (``overrun=0.01&overrun=0.3``) is a 400 naming it, never silently read one way."""
    params = request.query_params
    for name in params:
        if len(params.getlist(name)) > 1:
            raise RequestError(400, name, f"{name} is given {len(params.getlist(name))} "
                                          "times; give it once")
    return params


def _level(view: Index) -> float | None:
    """The overrun level ``view``'s costs are calibrated to (None: uncalibrated)."""
    levels = view.overrun_levels()
    return view.info["overrun"]["target_overrun"] if levels else None


def _reject_constant(text: str) -> Any:
    raise InvalidArgumentError(f"{text} is not a JSON number")


def _answer(content: Any) -> JSONResponse:
    """``content`` as strict JSON (RFC 8259): a number beyond the float range (a cost that
    overflows at the size) is written as ``null``, as the command line's ``--json`` does."""
    return JSONResponse(json_ready(content))


class _Metrics:
    """The Prometheus metrics of one app, in their own registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter("polydom_requests", "HTTP requests answered",
                                ["endpoint", "status"], registry=registry)
        self.latency = Histogram("polydom_request_seconds", "Time to answer a request",
                                 ["endpoint"], buckets=_BUCKETS, registry=registry)
        self.items = Counter("polydom_items", "Raw items served", registry=registry)
        self.over_budget = Counter("polydom_items_over_budget",
                                   "Raw items whose measured feature time exceeded the budget",
                                   registry=registry)
        self.feature_seconds = Histogram("polydom_item_feature_seconds",
                                         "Measured feature time of a served item",
                                         buckets=_BUCKETS, registry=registry)
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


def _entry(entry: SkylineEntry, unit: str, se: bool = True) -> dict[str, Any]:
    cand = entry.candidate
    return {"rank": entry.rank, "key": key_text(cand.key), "learner": cand.learner,
            "features": sorted(map(str, cand.features), key=natural_key), "accuracy": cand.accuracy,
            "accuracy_se": cand.accuracy_se if se else None,
            "cost": entry.cost, "unit": unit, "fits": entry.fits}


def explanation_json(explanation: Explanation, unit: str,
                     standard_errors: bool = True) -> dict[str, Any]:
    """An :class:`Explanation` as the JSON ``/explain`` returns (each entry's
    ``accuracy_se`` null when the index has no standard errors)."""
    e = explanation
    nxt = e.next_dearer
    return {
        "build": e.build, "size": e.size, "budget": e.budget, "unit": unit,
        "range": [e.n_lo, e.n_hi],
        "skyline": [_entry(s, unit, standard_errors) for s in e.skyline],
        "chosen": None if e.chosen is None else _entry(e.chosen, unit, standard_errors),
        "next_dearer": None if nxt is None else {**_entry(nxt, unit, standard_errors),
                                                  "extra_budget": e.extra_budget},
        "reason": e.reason,
        "rule": e.rule,
        "best": None if e.best is None else _entry(e.best, unit, standard_errors),
    }


class _Service:
    """The handlers of one app: each endpoint one method, each check at the door once.

    Requests are checked here with :mod:`polydom.curves.domain` (through :func:`_query`,
    :func:`_budget`, :func:`~polydom.curves.domain.check_rows`); the index is then called
    with ``check_input=False``.
    """

    def __init__(self, index: Index, featurizer: Any, max_body: int, follows: bool,
                 on_item: Callable[[Index, Any], None] | None,
                 timings: TimingRecorder | None, metrics: _Metrics) -> None:
        self.index = index
        self.follows = follows  # whether the index follows its store (and is refreshed)
        self.featurizer = featurizer
        self.max_body = max_body
        self.on_item = on_item
        self.timings = timings
        self.measure: MeasuredSize | None = None  # set by make_app
        self.metrics = metrics
        self.servers: dict[int, ItemServer] = {}  # id(table) -> the item server of that build
        if featurizer is not None:
            self.item_server(index.snapshot(), starting=True)

    def note_build(self, view: Index) -> Any:
        """The build ``view`` answers from (set on the ``polydom_current_build`` gauge)."""
        build = view.info.get("build_id")
        if isinstance(build, (int, float)):
            self.metrics.build.set(build)
        self.metrics.info_sealed.set(1 if info_proven(view.info) else 0)
        return build

    async def read_json(self, request: Request) -> dict[str, Any]:
        """The request's body as a JSON object: 413 beyond ``max_body``, 400 when not JSON
        (NaN and Infinity refused) or not an object."""
        max_body = self.max_body
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body:
            raise RequestError(413, "body", f"body of {declared} bytes exceeds {max_body}")
        chunks, total = [], 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_body:
                raise RequestError(413, "body", f"body exceeds {max_body} bytes")
            chunks.append(chunk)
        try:
            body = json.loads(b"".join(chunks), parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise RequestError(400, "body", f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise RequestError(400, "body", "body must be a JSON object")
        return body

    async def lookup(self, request: Request) -> JSONResponse:
        """``GET /lookup``."""
        params = _fields(request)
        view = _at_overrun(self.index.snapshot(), params)
        size, budget, rule = _query(view, params)
        hit = view.lookup(size, budget, rule, check_input=False)
        model = None if hit is None else {"key": hit.name, **hit.to_dict()}
        return _answer({"build": self.note_build(view), "size": size, "budget": budget,
                        "rule": rule, "overrun": _level(view), "unit": unit_name(view.info),
                        "model": model, **unproven_field(view.info)})

    async def explain(self, request: Request) -> JSONResponse:
        """``GET /explain``."""
        params = _fields(request)
        view = _at_overrun(self.index.snapshot(), params)
        size, budget, rule = _query(view, params)
        self.note_build(view)
        explanation = view.explain(size, budget, rule, check_input=False)
        return _answer({**explanation_json(explanation, unit_name(view.info),
                                           not view.info.get("no_standard_errors")),
                        "overrun": _level(view), **unproven_field(view.info)})

    async def predict(self, request: Request) -> JSONResponse:
        """``POST /predict``: rows, or raw items with a featurizer."""
        body = await self.read_json(request)
        view = _at_overrun(self.index.snapshot(), body)
        if "items" in body:
            if self.featurizer is None:
                raise RequestError(400, "items", "this service has no featurizer (start it "
                                                 "with --featurizer module:attr); send rows")
            answer = await run_in_threadpool(self.predict_items, view, body)
        else:
            answer = await run_in_threadpool(self.predict_rows, view, body)
        self.note_build(view)
        return _answer({**answer, **unproven_field(view.info)})

    def predict_rows(self, view: Index, body: dict[str, Any]) -> dict[str, Any]:
        """Labels of full feature rows from the model chosen for the body's query."""
        size, budget, rule = _query(view, body)
        X = _checked("rows", check_rows, body.get("rows"), view.n_columns)
        hit = view.lookup(size, budget, rule, check_input=False)
        out = {"build": view.info.get("build_id"), "size": size, "budget": budget,
               "rule": rule, "overrun": _level(view), "unit": unit_name(view.info),
               "key": None, "learner": None, "cost": None, "labels": None}
        if hit is None:
            return out
        if hit.model is None:
            raise RequestError(409, "budget", f"model {key_text(hit.key)!r} chosen for this "
                                              "budget has no fitted model to predict with")
        labels = view.predict_hit(hit, X, check_input=False)
        return {**out, "key": key_text(hit.key), "learner": hit.candidate.learner,
                "cost": hit.cost, "labels": np.asarray(labels).tolist()}

    def item_server(self, view: Index, starting: bool = False) -> ItemServer:
        """The :class:`ItemServer` of ``view``'s build (one kept, for the newest build).

        Raises
        ------
        InvalidArgumentError
            When the featurizer does not fit the build (a feature missing, other columns):
            at start, refusing the service; later (a newer build) a 5xx per request.
        """
        server = self.servers.get(id(view.table))
        if server is None or server.index.table is not view.table:
            try:
                server = ItemServer(view, self.featurizer)
            except InvalidArgumentError as exc:
                if not starting:
                    raise
                raise InvalidArgumentError(
                    f"featurizer does not fit build {view.info.get('build_id')} of the "
                    f"index: {exc}") from None
            self.servers.clear()
            self.servers[id(view.table)] = server
        return server

    def predict_items(self, view: Index, body: dict[str, Any]) -> dict[str, Any]:
        """Each raw item served within the body's budget (its size the featurizer's)."""
        budget = _budget(view, body)
        items = body.get("items")
        if not isinstance(items, list) or not items:
            raise RequestError(400, "items", "items must be a non-empty list")
        unit = unit_name(view.info)
        server = self.item_server(view)
        out = [self.serve_item(view, server, i, item, budget, unit)
               for i, item in enumerate(items)]
        return {"build": view.info.get("build_id"), "budget": budget,
                "overrun": _level(view), "predictions": out}

    def serve_item(self, view: Index, server: ItemServer, i: int, item: Any, budget: float,
                   unit: str) -> dict[str, Any]:
        """One raw item's answer; what the featurizer cannot take is a 400 naming
        ``items[i]``, a damaged stored model a 5xx (the store's fault, not the item's)."""
        try:
            p = server.predict(item, budget, check_input=False)
        except DamagedStoreError:
            raise
        except _ITEM_ERRORS as exc:  # the featurizer could not take this item
            reason = str(exc).splitlines()[0] if str(exc) else ""
            raise RequestError(400, f"items[{i}]", f"item {i}: {type(exc).__name__}: "
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
            self.timings.record(view, p)
        label = p.label.item() if isinstance(p.label, np.generic) else p.label
        return {
            "label": label, "key": None if p.key is None else key_text(p.key),
            "planned_key": None if p.planned_key is None else key_text(p.planned_key),
            "size": p.size, "budget": p.budget, "unit": unit,
            "predicted_cost": p.predicted_cost, "measured_cost": p.measured_cost,
            "measured_seconds": p.seconds, "over_budget": p.over_budget,
            "computed": list(p.computed),
        }

    async def healthz(self, request: Request) -> JSONResponse:
        """``GET /healthz``."""
        view = self.index.snapshot()
        return _answer({"status": "ok", "build": self.note_build(view),
                        "follows_store": self.follows, **unproven_field(view.info)})

    async def prometheus(self, request: Request) -> Response:
        """``GET /metrics``."""
        self.note_build(self.index.snapshot())
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def refresher(self, seconds: float) -> None:
        """Refresh the index every ``seconds``; a failed refresh is counted and logged."""
        index, metrics = self.index, self.metrics
        while True:
            await asyncio.sleep(seconds)
            try:
                if await run_in_threadpool(index.refresh):
                    metrics.switches.inc()
                    self.note_build(index.snapshot())
            except Exception:  # a bad new build must not stop the service: counted, logged
                metrics.refresh_errors.inc()
                LOG.exception("refresh failed; still serving build %s",
                              index.snapshot().info.get("build_id"))


def _error(status: int, field: str | None, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "field": field}, status_code=status)


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    """A :class:`RequestError`: its status, field and reason."""
    assert isinstance(exc, RequestError)
    return _error(exc.status, exc.field, exc.message)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own refusals (404, 405) as JSON."""
    assert isinstance(exc, HTTPException)
    return _error(exc.status_code, None, str(exc.detail))


async def _crashed(request: Request, exc: Exception) -> JSONResponse:
    """Any other error is the server's fault: 500 with a generic body (no message, no
    type, nothing from the store); the details go to the server's log."""
    LOG.error("error answering %s %s", request.method, request.url.path, exc_info=exc)
    return _error(500, None, "internal error (details are in the server's log)")


def _lifespan(service: _Service, refresh_seconds: float | None, timings: TimingRecorder | None,
              timings_seconds: float) -> Callable[[Starlette], Any]:
    """The app's lifespan: the refresher and the timings writer run while it serves; the
    writer's last flush runs at shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.note_build(service.index.snapshot())
        task = (asyncio.create_task(service.refresher(refresh_seconds))
                if service.follows else None)
        stop = asyncio.Event()
        writer = (None if timings is None else
                  asyncio.create_task(flush_periodically(timings, stop, timings_seconds)))
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if writer is not None:  # not cancelled: its last flush writes what is left
                stop.set()
                await writer

    return lifespan


def make_app(
    index: Index,
    featurizer: Any = None,
    max_body: int = DEFAULT_MAX_BODY,
    refresh_seconds: float | None = 1.0,
    on_item: Callable[[Index, Any], None] | None = None,
    timings: TimingRecorder | None = None,
    timings_seconds: float = 5.0,
    drift: DriftRecalibration | None = None,
    measure: MeasuredSize | None = None,
) -> Starlette:
    """The ASGI app serving ``index``.

    Parameters
    ----------
    index : polydom.Index
        What to serve; one that follows a store (``polydom.open_index(url)``) switches to
        newer builds while serving.
    featurizer : polydom.Featurizer, optional
        Lets ``POST /predict`` take raw ``items`` (JSON values handed to the featurizer).
        Checked against the index now: a featurizer that lacks a feature of the index or
        lays out its columns otherwise is refused here, not at every item.
    max_body : int, default 1 MiB
        Largest request body in bytes (413 above it).
    refresh_seconds : float or None, default 1.0
        Seconds between refreshes; None (or an index that does not follow a store) never
        refreshes.
    on_item : callable, optional
        Called as ``on_item(snapshot, prediction)`` for every served raw item.
    timings : TimingRecorder, optional
        Records the feature timings of every served raw item (with the build that served
        it) and is flushed by a background task every ``timings_seconds`` and at shutdown
        (:mod:`polydom.serving.timing_recorder`); its counts are on ``/metrics``.  The
        flushes run in the ASGI lifespan: under a server that does not run it, call
        ``timings.flush()`` yourself.
    timings_seconds : float, default 5.0
        Seconds between two flushes of ``timings``.
    drift : DriftRecalibration, optional
        Recalibrate on drift (its sink wraps ``timings``' sink); its steps are on
        ``/metrics`` (:mod:`polydom.serving.drift_recalibration`).
    measure : MeasuredSize, optional
        The server's own measure of a raw item's size: an item served at another size (the
        featurizer's size function read what the client claims) is answered, but its
        timings are not recorded, and it is counted (``polydom_item_size_mismatches``;
        :mod:`polydom.serving.measured_size`).

    Runtime complexity: O(1) (with a featurizer, O(K * F) to check it against the K
    candidates' F features); each request is O(lookup) plus its model's work.

    Raises
    ------
    InvalidArgumentError
        If ``timings_seconds`` is not a finite number > 0, or ``featurizer`` does not fit
        the index (one line naming the feature).
    """
    if not (isinstance(timings_seconds, (int, float)) and not isinstance(timings_seconds, bool)
            and 0 < timings_seconds < math.inf):
        raise InvalidArgumentError(
            f"timings_seconds must be a finite number > 0, got {timings_seconds!r}")
    metrics = _Metrics(CollectorRegistry())
    if timings is not None:
        metrics.registry.register(_TimingsCollector(timings))
    if drift is not None:
        metrics.registry.register(_DriftCollector(drift))
    follows = refresh_seconds is not None and index.follows_store
    service = _Service(index, featurizer, max_body, follows, on_item, timings, metrics)
    service.measure = measure
    if measure is not None:
        Gauge("polydom_item_size_mismatches", "Raw items served at a size other than the "
              "server measures (their timings not learnt)", registry=metrics.registry
              ).set_function(lambda: measure.mismatches)
    routes = [
        Route("/lookup", service.lookup, methods=["GET"]),
        Route("/explain", service.explain, methods=["GET"]),
        Route("/predict", service.predict, methods=["POST"]),
        Route("/healthz", service.healthz, methods=["GET"]),
        Route("/metrics", service.prometheus, methods=["GET"]),
    ]
    app = Starlette(routes=routes,
                    lifespan=_lifespan(service, refresh_seconds, timings, timings_seconds),
                    middleware=[Middleware(_Timed, metrics=metrics)],
                    exception_handlers={RequestError: _refused, HTTPException: _http_error,
                                        Exception: _crashed})
    app.state.metrics = metrics
    return app


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
            await run_in_threadpool(recorder.flush)
    await run_in_threadpool(recorder.flush)


class _Timed:
    """ASGI middleware counting and timing every HTTP request by endpoint and status."""

    def __init__(self, app: Callable, metrics: _Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in _ENDPOINTS else "other"
        status = [500]

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        start = time.perf_counter()
        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.latency.labels(endpoint).observe(time.perf_counter() - start)
            self.metrics.requests.labels(endpoint, str(status[0])).inc()
