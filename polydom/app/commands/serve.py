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
    add_min_publication_option,
    add_store_options,
    port,
    positive,
    positive_count,
    store_key,
)
from polydom.app.tables import printable

__all__ = ["add_serve", "run_serve", "load_featurizer", "bind"]


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
    p.set_defaults(run=run_serve)


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
        raise ValueError(f"--featurizer {spec!r} is not a polydom.Featurizer, got "
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


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    """Open the index, bind, print the address and serve until interrupted."""
    import uvicorn

    import polydom
    from polydom.app.service import DEFAULT_MAX_BODY, make_app

    featurizer = load_featurizer(args.featurizer) if args.featurizer else None
    index = polydom.open_index(args.url, build=args.build, key=store_key(args),
                               min_publication=args.min_publication)
    app = make_app(index, featurizer=featurizer,
                   max_body=args.max_body or DEFAULT_MAX_BODY,
                   refresh_seconds=None if args.build is not None else args.refresh)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not _loopback(args.host):
        print(f"polydom serve: warning: listening on {host}, reachable from other machines; "
              "the service has no authentication", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    print(f"serving build {index.info.get('build_id')} of {printable(args.url)} on "
          f"http://{shown}:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
