"""``polydom recalibrate URL``: refit a stored build's curves from its served timings.

Registered in :data:`polydom.app.cli.SUBCOMMANDS` by :func:`add_recalibrate`; the work is
:func:`polydom.recalibrate` (imported when the command runs, not when the CLI starts).
"""

from __future__ import annotations

import argparse
import math

from polydom.app.arguments import (
    add_store_options,
    count,
    fraction,
    positive_count,
    store_key,
)

__all__ = ["add_recalibrate", "run_recalibrate"]


def add_recalibrate(subparsers: argparse._SubParsersAction) -> None:
    """Register ``recalibrate``."""
    p = subparsers.add_parser(
        "recalibrate",
        help="refit the cost curves from served timings and publish a re-swept build",
        description="Read the timings served items recorded in the store (polydom."
        "store_timings), scale every atomic feature's curve to the quantile of in-situ "
        "time it promises, derive every model's cost again (overrun factors and offsets "
        "kept), sweep, and publish a new current build.  No model is retrained; readers "
        "switch with Index.refresh().",
    )
    add_store_options(p)
    p.add_argument("--since-id", type=count, default=0, metavar="ID",
                   help="use only timings recorded after this id (default: all)")
    p.add_argument("--last", type=positive_count, default=None, metavar="K",
                   help="use only the newest K timings of each feature")
    p.add_argument("--min-records", type=positive_count, default=20, metavar="K",
                   help="timings a feature needs to be scaled on its own (default 20; "
                        "fewer: it takes the median scale of the others, with a warning)")
    p.add_argument("--quantile", type=fraction, default=None, metavar="Q",
                   help="quantile the curves promise (default: the build's, else 0.95)")
    p.add_argument("--refit", action="store_true",
                   help="fit the curves' shapes again instead of scaling them")
    p.add_argument("--relative", action="store_true",
                   help="scale each curve by the change of its served timings after "
                        "--since-id against the build's own before it (median ratio; what "
                        "serve --recalibrate-on-drift does)")
    p.add_argument("--min-change", type=float, default=None, metavar="X",
                   help="with --relative: publish only when some feature's scale is outside "
                        "[1/X, X]")
    p.add_argument("--max-step", type=step, default=8.0, metavar="X",
                   help="refuse (publish nothing) when a feature's scale is outside "
                        "[1/X, X] (default 8; 'inf': no bound)")
    p.add_argument("--trust-unsealed-info", action="store_true",
                   help="recalibrate a build whose info (cost unit, in-situ quantile, "
                        "evaluation) is not covered by its seal, sealing (with a key: "
                        "signing) it into the new build; refused without this flag")
    p.set_defaults(run=run_recalibrate)


def step(text: str) -> float:
    """A ``--max-step`` value: a number >= 1, or ``inf``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"must be a number >= 1 or 'inf', got {text!r}")
    return value


def run_recalibrate(args: argparse.Namespace) -> int:
    """Recalibrate and print one line per feature (its scale and the timings behind it) and
    the new build."""
    from polydom.pipeline.recalibrate import recalibrate

    report = recalibrate(args.url, since_id=args.since_id, last=args.last,
                         min_records=args.min_records, quantile=args.quantile,
                         refit=args.refit, build=args.build, key=store_key(args),
                         relative=args.relative, min_change=args.min_change,
                         max_step=args.max_step, trust_info=args.trust_unsealed_info)
    for line in report.evidence_lines():
        print(line)
    if not report.published:
        print(f"build {report.from_build}: no feature changed beyond x{args.min_change:g} in "
              f"{report.records} timings (ids up to {report.last_record}): nothing published")
        return 0
    print(f"recalibrated build {report.from_build} from {report.records} timings "
          f"(ids up to {report.last_record}): published build {report.build_id}")
    return 0
