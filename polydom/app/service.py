"""The HTTP service over an index: a Starlette app answering lookups, predictions, explanations.

:func:`make_app` wraps a :class:`polydom.Index` (usually ``polydom.open_index(url)``, which
follows the store) in an ASGI app; ``polydom serve`` runs it under uvicorn.  Endpoints:

``GET /lookup?size=&budget=[&rule=]``
    The model for (size, budget): key, learner, features, accuracy, cost at the size, unit;
    ``rule`` is a lookup rule of :data:`polydom.index.table.RULES` (default ``"best"``).
``POST /predict``
    JSON ``{"size": n, "budget": b, "rows": [[...], ...]}``: labels of full feature rows from
    the model chosen for (size, budget).  With a featurizer, ``{"budget": b, "items": [...]}``
    serves raw items (each item's size is the featurizer's): per item the label, the chosen
    model, predicted and measured feature time and whether it went over the budget.
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
naming the field; the worker never dies of a request.
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

from polydom.app.tables import cost_unit
from polydom.curves.names import candidate_name
from polydom.errors import InvalidArgumentError, PolydomError
from polydom.index.built import Index
from polydom.index.explanation import Explanation, SkylineEntry
from polydom.index.table import RULES, RuleUnavailableError
from polydom.serving.item_serving import ItemServer
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


def _number(params: Mapping[str, Any], field: str) -> float:
    """A finite number >= 0 from a query string or JSON body, or a RequestError naming it."""
    raw = params.get(field)
    if raw is None:
        raise RequestError(400, field, f"{field} is missing")
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise RequestError(400, field, f"{field} must be a number, got {raw!r}")
    try:
        value = float(raw)
    except (ValueError, OverflowError):
        raise RequestError(400, field, f"{field} must be a number, got {raw!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise RequestError(400, field, f"{field} must be a finite number >= 0, got {raw!r}")
    return value


def _rule(params: Mapping[str, Any], view: Index) -> str:
    """The lookup rule of a request (default ``"best"``), one the index can answer (a store
    without standard errors answers ``"best"`` only), or a RequestError naming it."""
    rule = params.get("rule", "best")
    if not isinstance(rule, str) or rule not in RULES:
        raise RequestError(400, "rule", f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    try:
        return view.check_rule(rule)
    except RuleUnavailableError as exc:
        raise RequestError(400, "rule", str(exc)) from None


def _size_in_domain(view: Index, size: float, field: str = "size") -> float:
    lo, hi = view.table.domain
    if not lo <= size <= hi:
        raise RequestError(400, field, f"{field} {size:g} is outside the index's domain "
                                       f"[{lo:g}, {hi:g}]")
    return size


def _reject_constant(text: str) -> Any:
    raise InvalidArgumentError(f"{text} is not a JSON number")


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


def _entry(entry: SkylineEntry, unit: str, se: bool = True) -> dict[str, Any]:
    cand = entry.candidate
    return {"rank": entry.rank, "key": key_text(cand.key), "learner": cand.learner,
            "features": sorted(cand.features), "accuracy": cand.accuracy,
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


def make_app(
    index: Index,
    featurizer: Any = None,
    max_body: int = DEFAULT_MAX_BODY,
    refresh_seconds: float | None = 1.0,
    on_item: Callable[[Index, Any], None] | None = None,
    timings: TimingRecorder | None = None,
    timings_seconds: float = 5.0,
) -> Starlette:
    """The ASGI app serving ``index``.

    Parameters
    ----------
    index : polydom.Index
        What to serve; one that follows a store (``polydom.open_index(url)``) switches to
        newer builds while serving.
    featurizer : polydom.Featurizer, optional
        Lets ``POST /predict`` take raw ``items`` (JSON values handed to the featurizer).
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

    Runtime complexity: O(1); each request is O(lookup) plus its model's work.

    Raises
    ------
    ValueError
        If ``timings_seconds`` is not a finite number > 0.
    """
    if not (isinstance(timings_seconds, (int, float)) and not isinstance(timings_seconds, bool)
            and 0 < timings_seconds < math.inf):
        raise InvalidArgumentError(
            f"timings_seconds must be a finite number > 0, got {timings_seconds!r}")
    metrics = _Metrics(CollectorRegistry())
    if timings is not None:
        metrics.registry.register(_TimingsCollector(timings))
    follows = refresh_seconds is not None and index.follows_store
    servers: dict[int, ItemServer] = {}  # id(table) -> the item server of that build

    def unit_of(view: Index) -> str:
        return cost_unit(view.info)

    def note_build(view: Index) -> Any:
        build = view.info.get("build_id")
        if isinstance(build, (int, float)):
            metrics.build.set(build)
        return build

    async def read_json(request: Request) -> dict[str, Any]:
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

    async def lookup(request: Request) -> JSONResponse:
        view = index.snapshot()
        size = _size_in_domain(view, _number(request.query_params, "size"))
        budget = _number(request.query_params, "budget")
        rule = _rule(request.query_params, view)
        hit = view.lookup(size, budget, rule)
        unit = unit_of(view)
        model = None
        if hit is not None:
            model = {"key": key_text(hit.key), "learner": hit.candidate.learner,
                     "features": sorted(hit.features), "accuracy": hit.accuracy,
                     "cost": hit.cost, "unit": unit}
        return JSONResponse({"build": note_build(view), "size": size, "budget": budget,
                             "rule": rule, "unit": unit, "model": model})

    async def explain(request: Request) -> JSONResponse:
        view = index.snapshot()
        size = _size_in_domain(view, _number(request.query_params, "size"))
        budget = _number(request.query_params, "budget")
        rule = _rule(request.query_params, view)
        note_build(view)
        return JSONResponse(explanation_json(view.explain(size, budget, rule), unit_of(view),
                                             not view.info.get("no_standard_errors")))

    def predict_rows(view: Index, body: dict[str, Any]) -> dict[str, Any]:
        size = _size_in_domain(view, _number(body, "size"))
        budget = _number(body, "budget")
        rule = _rule(body, view)
        rows = body.get("rows")
        if not isinstance(rows, list) or not rows:
            raise RequestError(400, "rows", "rows must be a non-empty list of rows")
        width = view.n_columns
        try:
            X = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise RequestError(400, "rows", f"rows must be lists of {width} numbers") from None
        if X.ndim != 2 or X.shape[1] != width:
            raise RequestError(400, "rows", f"rows must each hold {width} numbers, got "
                                            f"shape {list(X.shape)}")
        hit = view.lookup(size, budget, rule)
        out = {"build": view.info.get("build_id"), "size": size, "budget": budget,
               "rule": rule, "unit": unit_of(view), "key": None, "learner": None, "cost": None,
               "labels": None}
        if hit is None:
            return out
        if hit.model is None:
            raise RequestError(409, "budget", f"model {key_text(hit.key)!r} chosen for this "
                                              "budget has no fitted model to predict with")
        labels = view.predict(X, size, budget, rule)
        return {**out, "key": key_text(hit.key), "learner": hit.candidate.learner,
                "cost": hit.cost, "labels": np.asarray(labels).tolist()}

    def predict_items(view: Index, body: dict[str, Any]) -> dict[str, Any]:
        budget = _number(body, "budget")
        items = body.get("items")
        if not isinstance(items, list) or not items:
            raise RequestError(400, "items", "items must be a non-empty list")
        unit = unit_of(view)
        server = servers.get(id(view.table))
        if server is None or server.index.table is not view.table:
            server = ItemServer(view, featurizer)
            servers.clear()
            servers[id(view.table)] = server
        out = []
        for i, item in enumerate(items):
            try:
                p = server.predict(item, budget)
            except _ITEM_ERRORS as exc:  # the featurizer could not take this item
                reason = str(exc).splitlines()[0] if str(exc) else ""
                raise RequestError(400, f"items[{i}]", f"item {i}: {type(exc).__name__}: "
                                                       f"{reason}") from None
            metrics.items.inc()
            metrics.feature_seconds.observe(p.seconds)
            if p.over_budget:
                metrics.over_budget.inc()
            if on_item is not None:
                on_item(view, p)
            if timings is not None:
                timings.record(view, p)
            label = p.label.item() if isinstance(p.label, np.generic) else p.label
            out.append({
                "label": label, "key": None if p.key is None else key_text(p.key),
                "planned_key": None if p.planned_key is None else key_text(p.planned_key),
                "size": p.size, "budget": p.budget, "unit": unit,
                "predicted_seconds": p.predicted_cost, "measured_seconds": p.seconds,
                "over_budget": p.over_budget, "computed": list(p.computed),
            })
        return {"build": view.info.get("build_id"), "budget": budget, "predictions": out}

    async def predict(request: Request) -> JSONResponse:
        body = await read_json(request)
        view = index.snapshot()
        if "items" in body:
            if featurizer is None:
                raise RequestError(400, "items", "this service has no featurizer (start it "
                                                 "with --featurizer module:attr); send rows")
            answer = await run_in_threadpool(predict_items, view, body)
        else:
            answer = await run_in_threadpool(predict_rows, view, body)
        note_build(view)
        return JSONResponse(answer)

    async def healthz(request: Request) -> JSONResponse:
        view = index.snapshot()
        return JSONResponse({"status": "ok", "build": note_build(view),
                             "follows_store": follows})

    async def prometheus(request: Request) -> Response:
        note_build(index.snapshot())
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def refresher() -> None:
        while True:
            await asyncio.sleep(refresh_seconds)
            try:
                if await run_in_threadpool(index.refresh):
                    metrics.switches.inc()
                    note_build(index.snapshot())
            except Exception:  # a bad new build must not stop the service: counted, logged
                metrics.refresh_errors.inc()
                LOG.exception("refresh failed; still serving build %s",
                              index.snapshot().info.get("build_id"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        note_build(index.snapshot())
        task = asyncio.create_task(refresher()) if follows else None
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

    def error_response(status: int, field: str | None, message: str) -> JSONResponse:
        return JSONResponse({"error": message, "field": field}, status_code=status)

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestError)
        return error_response(exc.status, exc.field, exc.message)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, None, str(exc.detail))

    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        LOG.error("error answering %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, None, f"internal error: {type(exc).__name__}")

    routes = [
        Route("/lookup", lookup, methods=["GET"]),
        Route("/explain", explain, methods=["GET"]),
        Route("/predict", predict, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(_Timed, metrics=metrics)],
                    exception_handlers={RequestError: refused, HTTPException: http_error,
                                        Exception: crashed})
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
