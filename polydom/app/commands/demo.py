"""``polydom demo``: end to end on digit images (measure costs, build, store, serve, plot)."""

from __future__ import annotations

import argparse

from polydom.app.arguments import add_unit_option, alpha, count

__all__ = ["add_demo", "run_demo"]


def add_demo(subparsers: argparse._SubParsersAction) -> None:
    """Register ``demo``."""
    p = subparsers.add_parser(
        "demo",
        help="end to end on digit images: measure costs, build, store, serve, plot",
        description="Render scikit-learn's digits at several sides (item size n = side), "
        "profile the image features in situ (one timing per feature and training digit, "
        "(digit, feature) pairs shuffled, each after a model prediction) and fit q0.95 "
        "cost curves, "
        "explore the feature-set lattice with "
        "a scikit-learn pipeline, store the index, reopen it and print its skylines, serve "
        "held-out digits within budgets (plain and any-time) and write plots.  --quick: 6 "
        "features, sides 8-64, about half a minute; full: 12 features, sides 8-128, about "
        "30-80 s on 2 cores.  Checks the optional dependencies (scikit-image, "
        "tqdm, matplotlib unless --no-plots) before it starts.",
    )
    p.add_argument("--quick", action="store_true", help="the small configuration (~30-60 s)")
    p.add_argument("--workload", choices=("digits", "plaid"), default="digits",
                   help="digits images (default) or PLAID time series (size = length; costs "
                   "profiled in situ and guarded, needs sktime and pycatch22)")
    p.add_argument("--store", default="polydom_demo.db", metavar="PATH",
                   help="SQLite file or SQLAlchemy URL for the index (default polydom_demo.db; "
                   "an existing store gets a new build)")
    p.add_argument("--plots", default="polydom_demo_plots", metavar="DIR",
                   help="folder for the PNG plots (default polydom_demo_plots)")
    p.add_argument("--no-plots", action="store_true", help="write no plots")
    p.add_argument("--seed", type=count, default=0, metavar="N",
                   help="seed of the digit draw and split (default 0)")
    p.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                   help="time features by wall clock (default) or by the computing thread's "
                   "CPU time (steadier on a busy machine)")
    p.add_argument("--alpha", type=alpha, default=None, metavar="A",
                   help="approximation factor >= 1 of the lattice (default 1.02)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_unit_option(p, default="ms")  # the store keeps seconds; see polydom.app.demo
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # tests
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    """Run :func:`polydom.app.demo.run_demo` (or :func:`polydom.app.demo_plaid.run_plaid_demo`)."""
    if args.workload == "plaid":
        from polydom.app.demo_plaid import run_plaid_demo

        run_plaid_demo(quick=args.quick, tiny=args.tiny,
                       store="polydom_plaid.db" if args.store == "polydom_demo.db" else args.store,
                       plots=None if args.no_plots else args.plots, seed=args.seed,
                       timer=args.timer, alpha=args.alpha, unit=args.unit)
        return 0
    from polydom.app import demo

    config = demo.TINY if args.tiny else (demo.QUICK if args.quick else demo.FULL)
    if args.alpha is not None:
        config = demo.replace(config, alpha=args.alpha)
    demo.run_demo(config, store=args.store, plots=None if args.no_plots else args.plots,
                  seed=args.seed, timer=args.timer, progress=not args.no_progress,
                  unit=args.unit)
    return 0
