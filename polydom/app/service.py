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
from collections.abc import AsyncIterator, Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from polydom.app.output import json_ready
from polydom.curves.names import candidate_name
from polydom.errors import InvalidArgumentError, PolydomError, QueryError
from polydom.index.built import Index
from polydom.index.explanation import Explanation
from polydom.serving.drift_recalibration import DriftRecalibration
from polydom.serving.measured_size import MeasuredSize
from polydom.serving.provenance import unproven_field
from polydom.serving.query import explanation_record
from polydom.serving.service_core import ServiceMetrics, ServingCore, flush_periodically
from polydom.serving.timing_recorder import TimingRecorder

__all__ = ["DEFAULT_MAX_BODY", "RequestError", "flush_periodically", "make_app", "key_text"]

LOG = logging.getLogger("polydom.serve")

#: Largest request body accepted by default (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 1 << 20

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


def _fields(request: Request) -> dict[str, str]:
    """The request's query string as one value per field: a field given twice
    (``overrun=0.01&overrun=0.3``) is a 400 naming it, never silently read one way."""
    params = request.query_params
    for name in params:
        if len(params.getlist(name)) > 1:
            raise RequestError(400, name, f"{name} is given {len(params.getlist(name))} "
                                          "times; give it once")
    return dict(params)


def _reject_constant(text: str) -> Any:
    raise InvalidArgumentError(f"{text} is not a JSON number")


def _answer(content: Any) -> JSONResponse:
    """``content`` as strict JSON (RFC 8259): a number beyond the float range (a cost that
    overflows at the size) is written as ``null``, as the command line's ``--json`` does."""
    return JSONResponse(json_ready(content))


def explanation_json(explanation: Explanation, unit: str,
                     standard_errors: bool = True) -> dict[str, Any]:
    """An :class:`Explanation` as the JSON ``/explain`` returns
    (:func:`polydom.serving.query.explanation_record`)."""
    return explanation_record(explanation, unit, standard_errors)


class _Service:
    """The HTTP handlers of one app: each translates a request into fields for the serving
    core (:class:`polydom.serving.service_core.ServingCore`) and its record into JSON."""

    def __init__(self, core: ServingCore, max_body: int, follows: bool) -> None:
        self.core = core
        self.index = core.index
        self.follows = follows  # whether the index follows its store (and is refreshed)
        self.max_body = max_body
        self.metrics = core.metrics

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
        return _answer(self.core.lookup(_fields(request)))

    async def explain(self, request: Request) -> JSONResponse:
        """``GET /explain``."""
        return _answer(self.core.explain(_fields(request)))

    async def predict(self, request: Request) -> JSONResponse:
        """``POST /predict``: rows, or raw items with a featurizer."""
        body = await self.read_json(request)
        return _answer(await run_in_threadpool(self.core.predict, body))

    async def healthz(self, request: Request) -> JSONResponse:
        """``GET /healthz``."""
        view = self.index.snapshot()
        return _answer({"status": "ok", "build": self.core.note_build(view),
                        "follows_store": self.follows, **unproven_field(view.info)})

    async def prometheus(self, request: Request) -> Response:
        """``GET /metrics``."""
        self.core.note_build(self.index.snapshot())
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def refresher(self, seconds: float) -> None:
        """Refresh the index every ``seconds``; a failed refresh is counted and logged."""
        index, metrics = self.index, self.metrics
        while True:
            await asyncio.sleep(seconds)
            try:
                await run_in_threadpool(self.core.refresh)
            except Exception:  # a bad new build must not stop the service: counted, logged
                metrics.refresh_errors.inc()
                LOG.exception("refresh failed; still serving build %s",
                              index.snapshot().info.get("build_id"))


def _error(status: int, field: str | None, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "field": field}, status_code=status)


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    """A :class:`RequestError` or the core's :class:`QueryError`: its status, field and
    reason."""
    assert isinstance(exc, (RequestError, QueryError))
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
        service.core.note_build(service.index.snapshot())
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
        The server's own measure of a raw item's size (:class:`polydom.serving.
        service_core.ServingCore`): a claimed size that differs is counted, not learnt.

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
    metrics = ServiceMetrics(timings=timings, drift=drift)
    follows = refresh_seconds is not None and index.follows_store
    core = ServingCore(index, featurizer, on_item, timings, metrics, measure)
    service = _Service(core, max_body, follows)
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
                    exception_handlers={RequestError: _refused, QueryError: _refused,
                                        HTTPException: _http_error,
                                        Exception: _crashed})
    app.state.metrics = metrics
    return app


class _Timed:
    """ASGI middleware counting and timing every HTTP request by endpoint and status."""

    def __init__(self, app: Callable, metrics: ServiceMetrics) -> None:
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
