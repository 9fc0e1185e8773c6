"""``polydom calibrate URL --timings FILE --target-overrun Q``: the in-situ guard of a
stored build, calibrated on held-out timings and published as the new current build.

The work is :func:`polydom.pipeline.guard.guard_index` (imported when the command runs).
"""

from __future__ import annotations

import argparse

from polydom.app.arguments import add_store_options, count, fraction, store_key

__all__ = ["add_calibrate", "run_calibrate"]

#: Overrun scores ``--score`` takes (polydom.curves.calibration.SCORES).
SCORES = ("auto", "ratio", "excess", "best")


def add_calibrate(subparsers: argparse._SubParsersAction) -> None:
    """Register ``calibrate``."""
    p = subparsers.add_parser(
        "calibrate",
        help="calibrate a stored build's guard for an overrun rate on held-out timings",
        description="Give every model of the store's build (its current one, or --build) "
        "the split-conformal factor or offset that makes its cost curve overrun on at most "
        "--target-overrun of items like the held-out ones of --timings, re-sweep, and "
        "publish the result as the new current build (only while the build it came from "
        "is still current, unless --build names it; no model is retrained).  A build that "
        "is guarded already is calibrated on top (the factors compose): name the unguarded "
        "build with --build to start again from it.  --level adds rates a request may ask "
        "for (overrun= on HTTP, --overrun on predict).  --timings: a CSV file with a "
        "'size' column and one column per atomic feature, the seconds its routine took on "
        "that item, timed in situ (docs/in_situ.md); at least ceil(1/q) - 1 items for a "
        "rate q (19 for 0.05, 99 for 0.01).",
    )
    add_store_options(p)
    p.add_argument("--timings", required=True, metavar="FILE",
                   help="held-out in-situ timings: CSV with 'size' and one column per atom "
                   "(seconds)")
    p.add_argument("--target-overrun", required=True, type=fraction, metavar="Q",
                   help="the overrun rate the guarded curves promise, in (0, 1)")
    p.add_argument("--level", dest="levels", type=fraction, action="append", default=[],
                   metavar="Q", help="another overrun rate the build holds; repeatable")
    p.add_argument("--score", choices=SCORES, default="auto",
                   help="ratio (a factor), excess (an offset), auto (per model, the tighter "
                   "on a selection split; default) or best (both at q/2)")
    p.add_argument("--seed", type=count, default=0, help="seeds auto's selection split")
    p.set_defaults(run=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    """Calibrate, publish, and print what each level gives and the new build."""
    import numpy as np

    from polydom.app.tables import cost_unit
    from polydom.app.timings_file import read_timings_file
    from polydom.pipeline.guard import guard_index
    from polydom.pipeline.open import open_index

    key = store_key(args)
    index = open_index(args.url, build=args.build, key=key)
    sizes, timings = read_timings_file(args.timings, index.costs)
    guarded = guard_index(args.url, index, sizes, timings, args.target_overrun,
                          levels=args.levels, score=args.score, seed=args.seed, key=key,
                          source=f"polydom calibrate --timings {args.timings}",
                          replaces="origin" if args.build is None else None)
    overrun = guarded.info["overrun"]
    factors = np.array(overrun["factors"])
    offsets = np.array(overrun["offsets"])
    print(f"calibrated build {index.info['build_id']} for overrun "
          f"{overrun['target_overrun']:g} on {overrun['items']} held-out items "
          f"(score {overrun['score']}): factors {factors.min():.3g} to {factors.max():.3g}, "
          f"offsets {offsets.min():.3g} to {offsets.max():.3g} {cost_unit(index.info)}")
    levels = guarded.overrun_levels()
    print(f"levels held: {', '.join(f'{v:g}' for v in levels)}")
    print(f"published build {guarded.info['build_id']} in {args.url}")
    return 0
