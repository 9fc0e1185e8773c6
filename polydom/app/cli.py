"""The ``polydom`` command line: build, inspect, query and plot stored indexes.

    polydom demo [--quick] [--store PATH] [--plots DIR] [--seed N]
    polydom build CONFIG [--executor SPEC]
    polydom inspect URL [--build ID] [--ranges K] [--unit U] [--json | --csv]
    polydom lookup URL (--size N --budget C | --queries FILE) [--unit U] [--json | --csv]
    polydom predict URL --data FILE --out FILE --budget C (--size N | --size-from COLUMN
                    | --featurizer MODULE:ATTR) [--drop COLUMN] [--chunk-rows N]
    polydom plot URL --out DIR [--build ID] [--unit U]
    polydom plan URL --sizes FILE (--budget B | --per-hour C --rate R) [--plot PNG]
    polydom builds (list | delete) URL [ID ...] [--json | --csv]
    polydom serve URL [--host H] [--port P] [--featurizer MODULE:ATTR] [--refresh S]
    polydom browse URL [--host H] [--port P] [--plots DIR]
    polydom recalibrate URL [--since-id ID] [--last K] [--refit]
    polydom calibrate URL --timings FILE --target-overrun Q [--level Q ...]

``URL`` is any SQLAlchemy URL or a SQLite file path.  Each verb is one module of
:mod:`polydom.app.commands` (or elsewhere in :mod:`polydom.app`) with an ``add_<verb>``
function that registers its parser and sets ``run`` to the function doing the work; add a
verb by writing both and listing ``add_<verb>`` in :data:`SUBCOMMANDS`.  A verb module
imports nothing heavy at its top (numpy, storage, learners, scikit-learn, sympy load inside
``run``): ``polydom --version`` and ``--help`` import none of them, ``lookup`` and
``inspect`` neither scikit-learn nor sympy (``tests/test_app/test_cli_imports.py``).

Exit status: 0 on success, 1 when ``lookup`` finds no model within the budget, 2 on bad
arguments or any error (with a one-line reason on stderr, never a traceback; set
``POLYDOM_TRACEBACK=1`` to see one).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from polydom.app.arguments import OneLineParser, UsageError
from polydom.app.commands.browse import add_browse
from polydom.app.commands.build import add_build
from polydom.app.commands.builds import add_builds
from polydom.app.commands.calibrate import add_calibrate
from polydom.app.commands.demo import add_demo
from polydom.app.commands.inspect import add_inspect
from polydom.app.commands.lookup import add_lookup
from polydom.app.commands.plan import add_plan
from polydom.app.commands.plot import add_plot
from polydom.app.commands.predict import add_predict
from polydom.app.commands.recalibrate import add_recalibrate
from polydom.app.commands.serve import add_serve
from polydom.app.tables import printable

__all__ = ["PROG", "SUBCOMMANDS", "build_parser", "main", "version"]

PROG = "polydom"

#: ``add_<verb>`` functions, one per verb, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_demo, add_build, add_inspect, add_lookup, add_predict, add_plot, add_plan, add_builds,
    add_serve, add_browse, add_recalibrate, add_calibrate,
]


def version() -> str:
    """The installed distribution's version (``polydom --version``)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("polydom")
    except PackageNotFoundError:
        return "(not installed: running from a checkout)"


class _Version(argparse.Action):
    """``--version``: looks the version up only when asked (importlib.metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{PROG} {version()}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The ``polydom`` parser with every verb of :data:`SUBCOMMANDS`."""
    parser = OneLineParser(
        prog=PROG,
        description="Poly-Dom indexes over trained models: build, store, inspect, query "
        "and plot them; `polydom demo --quick` runs everything on digit images.",
        epilog="URL: a SQLAlchemy URL (sqlite:///index.db, postgresql+psycopg://...) or a "
        "SQLite file path.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                       parser_class=OneLineParser)
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def _reason(exc: BaseException, args: argparse.Namespace) -> str:
    """An exception as one escaped line: its message's first line (its type when empty);
    a database driver's error names the store it came from."""
    if isinstance(exc, ImportError) and exc.name:
        return f"{exc.name} is not installed (pip install \".[demo]\")"
    text = str(exc).strip()
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        text = f"{exc.filename}: {exc.strerror}"
    origin = type(exc).__module__.split(".")[0]
    if origin in ("sqlalchemy", "sqlite3", "psycopg"):
        driver = getattr(exc, "orig", None)  # the driver's own message, without SQL
        text = str(driver if driver is not None else text).strip()
        store = getattr(args, "url", None)  # `build` sets it from its config's store
        text = f"store {store!r}: {text}" if store else text
    first = text.splitlines()[0] if text else type(exc).__name__
    if not isinstance(exc, (ValueError, TypeError, OSError, RuntimeError, ImportError)) and (
            origin not in ("sqlalchemy", "sqlite3", "psycopg")):
        first = f"{type(exc).__name__}: {first}"
    return printable(first[:500])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"{PROG} {args.command}: error: {printable(exc)} (see --help)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every error is one line (POLYDOM_TRACEBACK=1 shows it)
        if os.environ.get("POLYDOM_TRACEBACK"):
            raise
        print(f"{PROG} {args.command}: error: {_reason(exc, args)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
