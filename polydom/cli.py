"""The ``polydom`` command line: inspect a stored index and query it.

    polydom inspect URL [--build ID] [--ranges K]
    polydom lookup URL --size N --budget C [--build ID]

``URL`` is any SQLAlchemy URL or a SQLite file path.  Each subcommand is one ``add_<name>``
function that registers its parser and sets ``run`` to the function doing the work; add a
subcommand by writing both and listing ``add_<name>`` in :data:`SUBCOMMANDS`.

Exit status: 0 on success, 1 when ``lookup`` finds no model within the budget, 2 on bad
arguments or an unreadable store (with a one-line reason on stderr).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = ["main", "build_parser", "SUBCOMMANDS"]

PROG = "polydom"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``polydom CMD: error: reason``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned text table (numbers right-aligned, to 6 significant digits)."""
    cells = [[_number(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) and bool(rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


# ---------------------------------------------------------------------------- inspect
def add_inspect(subparsers: argparse._SubParsersAction) -> None:
    """Register ``inspect``."""
    p = subparsers.add_parser(
        "inspect",
        help="print the builds, ranges and skylines of a stored index",
        description="Print every build in the store, then the ranges of sizes and the "
        "skyline of each range (candidates by rank: cheapest first, accuracy increasing) "
        "of one complete build.  Reads no model blobs.",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--build", type=int, help="build id (default: the current build)")
    p.add_argument(
        "--ranges",
        type=int,
        default=20,
        metavar="K",
        help="print the skylines of the first K ranges only; 0 prints all (default 20)",
    )
    p.set_defaults(run=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """Print builds, ranges and skylines."""
    from storage import IndexStore

    with IndexStore(args.url, create=False) as store:
        builds = store.list_builds()
        print(f"builds in {store.display_url}")
        print(
            format_table(
                ["build", "status", "current", "alpha", "delta", "learner", "n_min", "n_max",
                 "features", "expansions", "candidates", "ranges", "entries", "completed"],
                [
                    [b.build_id, b.status, "*" if b.is_current else "", b.alpha, b.delta,
                     b.learner or "-", b.n_min, b.n_max, b.n_features, b.n_expansions,
                     b.n_candidates, b.n_ranges, b.n_entries, b.completed_at or "-"]
                    for b in builds
                ],
            )
        )
        if not any(b.status == "complete" for b in builds) and args.build is None:
            print("\nno complete build yet")
            return 0
        rows = store.skyline_rows(args.build)
    build_id = rows[0]["build_id"] if rows else args.build
    n_ranges = len({r["range_id"] for r in rows})
    shown = [r for r in rows if args.ranges <= 0 or r["range_id"] < args.ranges]
    print(f"\nskylines of build {build_id}: {n_ranges} ranges, {len(rows)} entries")
    print(
        format_table(
            ["range", "n_lo", "n_hi", "rank", "candidate", "features", "accuracy", "cost",
             "cost(n_lo)", "model"],
            [
                [r["range_id"], r["n_lo"], r["n_hi"], r["rank"], r["candidate"], r["features"],
                 r["accuracy"], r["cost"], r["cost_at_n_lo"], r["model_format"] or "-"]
                for r in shown
            ],
        )
    )
    if len(shown) < len(rows):
        print(f"... {n_ranges - args.ranges} more ranges (--ranges 0 prints all)")
    return 0


# ---------------------------------------------------------------------------- lookup
def add_lookup(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lookup``."""
    p = subparsers.add_parser(
        "lookup",
        help="the most accurate model whose cost at a size fits a budget",
        description="Answer one query against a stored index: among the candidates whose "
        "cost at size N is at most C, the most accurate.  Exits with status 1 when "
        "nothing fits.  Models are not loaded.",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--size", type=_non_negative, required=True, metavar="N",
                   help="item size n")
    p.add_argument("--budget", type=_non_negative, required=True, metavar="C",
                   help="cost budget")
    p.add_argument("--build", type=int, help="build id (default: the current build)")
    p.set_defaults(run=run_lookup)


def run_lookup(args: argparse.Namespace) -> int:
    """Print the hit for (size, budget)."""
    from storage import IndexStore
    from storage.codec import cost_expression

    with IndexStore(args.url, create=False) as store:
        index = store.load_index(build=args.build, models=False)
        formats = {r["candidate_id"]: r["model_format"] for r in store.skyline_rows(args.build)}
    hit = index.lookup(args.size, args.budget)
    if hit is None:
        print(f"no candidate of build {index.info['build_id']} costs at most "
              f"{args.budget:g} at size {args.size:g}")
        return 1
    position = index.candidates.index(hit.candidate)
    print(
        format_table(
            ["build", "candidate", "features", "accuracy", "cost", "cost expression", "model"],
            [[index.info["build_id"], str(hit.key), ", ".join(sorted(map(str, hit.features))),
              hit.accuracy, hit.cost, cost_expression(hit.candidate.cost),
              formats.get(position) or "-"]],
        )
    )
    return 0


#: ``add_<name>`` functions, one per subcommand, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [add_inspect, add_lookup]


def build_parser() -> argparse.ArgumentParser:
    """The ``polydom`` parser with every subcommand of :data:`SUBCOMMANDS`."""
    parser = _Parser(
        prog=PROG,
        description="Poly-Dom indexes over trained models: inspect and query stored ones.",
        epilog="URL: a SQLAlchemy URL (sqlite:///index.db, postgresql+psycopg://...) or a "
        "SQLite file path.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    import sqlalchemy

    try:
        return args.run(args)
    except (ValueError, RuntimeError, sqlalchemy.exc.SQLAlchemyError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{PROG} {args.command}: error: {reason}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
