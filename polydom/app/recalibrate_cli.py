"""``polydom recalibrate URL``: refit a stored build's curves from its served timings.

Registered in :data:`polydom.app.cli.SUBCOMMANDS` by :func:`add_recalibrate`; the work is
:func:`polydom.recalibrate` (imported when the command runs, not when the CLI starts).
"""

from __future__ import annotations

import argparse

__all__ = ["add_recalibrate", "run_recalibrate"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _quantile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def add_recalibrate(subparsers: argparse._SubParsersAction) -> None:
    """Register ``recalibrate``."""
    p = subparsers.add_parser(
        "recalibrate",
        help="refit the cost curves from served timings and publish a re-swept build",
        description="Read the timings served items recorded in the store (polydom."
        "store_timings), scale every atomic feature's curve to the quantile of in-situ "
        "time it promises, derive every model's cost again (overrun factors kept), sweep, "
        "and publish a new current build.  No model is retrained; readers switch with "
        "Index.refresh().",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--since-id", type=_positive_int, default=0, metavar="ID",
                   help="use only timings recorded after this id (default: all)")
    p.add_argument("--last", type=_positive_int, default=None, metavar="K",
                   help="use only the newest K timings of each feature")
    p.add_argument("--min-records", type=_positive_int, default=20, metavar="K",
                   help="timings a feature needs to be scaled on its own (default 20)")
    p.add_argument("--quantile", type=_quantile, default=None, metavar="Q",
                   help="quantile the curves promise (default: the build's, else 0.95)")
    p.add_argument("--refit", action="store_true",
                   help="fit the curves' shapes again instead of scaling them")
    p.set_defaults(run=run_recalibrate)


def run_recalibrate(args: argparse.Namespace) -> int:
    """Recalibrate and print one line per feature (its scale) and the new build."""
    from polydom.pipeline.recalibrate import recalibrate

    if args.last == 0 or args.min_records == 0:
        raise ValueError("--last and --min-records must be at least 1")
    report = recalibrate(args.url, since_id=args.since_id, last=args.last,
                         min_records=args.min_records, quantile=args.quantile,
                         refit=args.refit)
    for name, scale in report.scales.items():
        how = ("refit" if name in report.refit else
               "median of the others" if name in report.borrowed else "scaled")
        print(f"{name}: x{scale:.3g} ({how})")
    print(f"recalibrated build {report.from_build} from {report.records} timings "
          f"(ids up to {report.last_record}): published build {report.build_id}")
    return 0
