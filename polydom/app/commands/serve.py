"""``polydom serve URL``: the HTTP service (:mod:`polydom.app.service`) under uvicorn.

Registration only at import (argparse); the web stack loads when the command runs.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from typing import Any

from polydom.app.arguments import (
    UsageError,
    add_min_publication_option,
    add_store_options,
    port,
    positive,
    positive_count,
    store_key,
)
from polydom.app.tables import cost_unit, printable
from polydom.curves.units import seconds_to_store
from polydom.errors import InvalidArgumentError

__all__ = ["add_serve", "run_serve", "load_featurizer", "load_measure", "bind",
           "timing_recorder"]


def add_serve(subparsers: argparse._SubParsersAction) -> None:
    """Register ``serve``."""
    p = subparsers.add_parser(
        "serve",
        help="serve lookups, predictions and explanations over HTTP (loopback by default)",
        description="Serve a stored index over HTTP: GET /lookup?size=&budget=, POST "
        "/predict (feature rows, or raw items with --featurizer), GET "
        "/explain?size=&budget=, /healthz and /metrics (Prometheus).  The service follows "
        "the store: a build published later is served after the next refresh, and no "
        "answer mixes two builds.  Needs the 'serve' extra (starlette, uvicorn, "
        "prometheus-client).",
    )
    add_store_options(p)
    add_min_publication_option(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=8000,
                   help="port (default 8000; 0 picks a free one, printed at start)")
    p.add_argument("--featurizer", metavar="MODULE:ATTR",
                   help="a polydom.Featurizer (or a function returning one) for raw items")
    p.add_argument("--refresh", type=positive, default=1.0, metavar="SECONDS",
                   help="look for a newer build every SECONDS (default 1; not with --build, "
                   "which serves that build only)")
    p.add_argument("--max-body", type=positive_count, default=None, metavar="BYTES",
                   help="largest request body (default 1 MiB)")
    p.add_argument("--record-timings", action="store_true",
                   help="record the seconds each feature of a served raw item took and "
                   "write them to the store's served_timings table (for polydom "
                   "recalibrate) every --timings-every seconds and at shutdown, off the "
                   "request path; needs --featurizer")
    p.add_argument("--timings-store", metavar="URL",
                   help="write the timings through URL instead of the served URL: the same "
                   "store reached with write access (e.g. a PostgreSQL role allowed to "
                   "insert into served_timings); implies --record-timings")
    p.add_argument("--timings-every", type=positive, default=5.0, metavar="SECONDS",
                   help="seconds between two telemetry writes (default 5)")
    p.add_argument("--timings-capacity", type=positive_count, default=100_000, metavar="N",
                   help="timings kept per build between two writes; the oldest are dropped "
                   "(and counted on /metrics) beyond it (default 100000)")
    p.add_argument("--recalibrate-on-drift", action="store_true",
                   help="watch the recorded timings with a drift monitor and, when it fires, "
                   "refit the curves from the timings since (no model retrained), re-sweep "
                   "and publish a new build that the service then serves; rate-limited, "
                   "every step on /metrics (docs/in_situ.md); implies --record-timings")
    p.add_argument("--recalibrate-every", type=positive, default=300.0, metavar="SECONDS",
                   help="at most one recalibration on drift per SECONDS (default 300)")
    p.add_argument("--drift-collect", type=positive_count, default=300, metavar="N",
                   help="timings stored after a drift alarm before recalibrating (default "
                   "300)")
    p.add_argument("--measure", metavar="MODULE:ATTR",
                   help="the server's own measure of a raw item's size (a function item -> "
                   "size, from its content); an item the featurizer reads at another size "
                   "(what a client claims) is answered but its timings are not recorded "
                   "(not learnt by recalibrations), counted on /metrics "
                   "(polydom_item_size_mismatches)")
    p.add_argument("--drift-max-step", type=float, default=None, metavar="X",
                   help="a recalibration on drift scaling a curve by more than X (or less "
                   "than 1/X) is refused and counted, nothing published (default 4; larger "
                   "changes: polydom recalibrate --max-step)")
    p.set_defaults(run=run_serve)


def load_measure(spec: str) -> Any:
    """The size measure named ``module:attr`` (a callable item -> size), as
    :func:`load_featurizer` finds its object.

    Raises
    ------
    ValueError
        Naming the spec when it cannot be found or is not callable.
    """
    from pathlib import Path

    from polydom.app.config_data import resolve_name

    obj = resolve_name(spec, Path.cwd(), "--measure")
    if not callable(obj):
        raise InvalidArgumentError(f"--measure {spec!r} is not a callable item -> size, got "
                                   f"{type(obj).__name__}")
    return obj


def load_featurizer(spec: str) -> Any:
    """The featurizer named ``module:attr`` (:func:`polydom.app.config_data.resolve_name`,
    the current folder searched first, as a config's ``featurizer`` key).

    The attribute is a :class:`polydom.Featurizer` (anything with ``size``, ``compute``
    and ``serve``) or a function of no arguments returning one.

    Raises
    ------
    ValueError
        Naming the spec when it is not ``module:attr``, the module or attribute is
        missing, or the object is no featurizer.
    """
    from pathlib import Path

    from polydom.app.config_data import resolve_name

    obj = resolve_name(spec, Path.cwd(), "--featurizer")
    if not _is_featurizer(obj) and callable(obj):
        obj = obj()
    if not _is_featurizer(obj):
        raise InvalidArgumentError(
            f"--featurizer {spec!r} is not a polydom.Featurizer, got "
            f"{type(obj).__name__}")
    return obj


def _is_featurizer(obj: Any) -> bool:
    return all(callable(getattr(obj, name, None)) for name in ("size", "compute", "serve"))


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one).

    Made with ``IPPROTO_TCP`` so that asyncio sets ``TCP_NODELAY`` on every connection
    (a socket of protocol 0 is skipped, and Nagle's algorithm then holds a response's body
    back until the client's delayed ACK: 40 ms a request).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    return sock


def timing_recorder(url: str, key: Any, capacity: int, drift: Any = None) -> Any:
    """A :class:`polydom.serving.timing_recorder.TimingRecorder` writing to the store at
    ``url`` with :func:`polydom.store_timings` (one transaction per build and flush,
    through :mod:`storage.telemetry` only: the served index stays opened read-only), each
    stored batch then fed to ``drift`` (a
    :class:`polydom.serving.drift_recalibration.DriftRecalibration`) when given."""
    import functools

    from polydom.pipeline.recalibrate import store_timings
    from polydom.serving.timing_recorder import TimingRecorder

    sink = functools.partial(store_timings, url, key=key)
    return TimingRecorder(sink if drift is None else drift.sink(sink), capacity=capacity)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    """Open the index, bind, print the address and serve until interrupted."""
    recording = (args.record_timings or args.timings_store is not None
                 or args.recalibrate_on_drift)
    if recording and not args.featurizer:
        raise UsageError("--record-timings needs --featurizer: only raw items have feature "
                         "timings")
    if args.recalibrate_on_drift and args.build is not None:
        raise UsageError("--recalibrate-on-drift publishes new builds: not with --build "
                         f"{args.build}, which serves that build only")

    import uvicorn

    import polydom
    from polydom.app.service import DEFAULT_MAX_BODY, make_app
    from polydom.serving.measured_size import MeasuredSize
    from polydom.serving.provenance import unproven

    featurizer = load_featurizer(args.featurizer) if args.featurizer else None
    key = store_key(args)
    index = polydom.open_index(args.url, build=args.build, key=key,
                               min_publication=args.min_publication)
    if recording:  # timings are seconds: a store whose unit is not one of time refuses them
        seconds_to_store(cost_unit(index.info), "--record-timings")
    timings, drift = None, None
    if args.recalibrate_on_drift:
        from polydom.serving.drift_recalibration import DriftRecalibration

        drift = DriftRecalibration(index, min_interval=args.recalibrate_every,
                                   collect=args.drift_collect,
                                   **({} if args.drift_max_step is None
                                      else {"max_step": args.drift_max_step}))
        if not args.measure:
            print("polydom serve: warning: --recalibrate-on-drift learns sizes from the "
                  "featurizer's size function; if it reads a size the client sends, pass "
                  "--measure so that no client steers the curves", file=sys.stderr)
    if recording:
        timings = timing_recorder(args.timings_store or args.url, key, args.timings_capacity,
                                  drift)
    app = make_app(index, featurizer=featurizer,
                   max_body=args.max_body or DEFAULT_MAX_BODY,
                   refresh_seconds=None if args.build is not None else args.refresh,
                   timings=timings, timings_seconds=args.timings_every, drift=drift,
                   measure=MeasuredSize(load_measure(args.measure)) if args.measure else None)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not _loopback(args.host):
        print(f"polydom serve: warning: listening on {host}, reachable from other machines; "
              "the service has no authentication", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    doubt = unproven(index.info)
    if doubt is not None:
        print(f"polydom serve: warning: {doubt}", file=sys.stderr)
    proof = "" if doubt is None else " (info NOT sealed: unproven)"
    print(f"serving build {index.info.get('build_id')}{proof} of {printable(args.url)} on "
          f"http://{shown}:{port}", flush=True)
    if timings is not None:
        print(f"recording served feature timings into "
              f"{printable(args.timings_store or args.url)} every {args.timings_every:g} s",
              file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
