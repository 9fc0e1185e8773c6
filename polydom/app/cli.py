"""The ``polydom`` command line: inspect a stored index and query it.

    polydom demo [--quick] [--store PATH] [--plots DIR] [--seed N]
    polydom build CONFIG [--executor SPEC]
    polydom inspect URL [--build ID] [--ranges K]
    polydom lookup URL --size N --budget C [--build ID]
    polydom plot URL --out DIR [--build ID]
    polydom plan URL --sizes FILE (--budget B | --per-hour C --rate R) [--plot PNG]
    polydom builds delete URL [ID ...]
    polydom recalibrate URL [--since-id ID] [--last K] [--refit]

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

import numpy as np

from polydom.app.recalibrate_cli import add_recalibrate
from polydom.app.tables import clip, cost_unit, features_text, format_table

__all__ = ["main", "build_parser", "version", "SUBCOMMANDS"]

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


def _count(text: str) -> int:
    """An integer >= 0 (a count, a seed); the same check for every command."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _build_id(text: str) -> int:
    """A build id: an integer >= 1."""
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a build id >= 1, got {text!r}")
    return value


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
    p.add_argument("--build", type=_build_id, help="build id (default: the current build)")
    p.add_argument(
        "--ranges",
        type=_count,
        default=20,
        metavar="K",
        help="print the skylines of the first K ranges only; 0 prints all (default 20)",
    )
    p.set_defaults(run=run_inspect)


def _chosen_build(builds: Sequence[Any], build: int | None, url: str) -> Any:
    """The build record ``build`` names (the current one when None), checked before anything
    is printed: it must exist and be complete.  None when the store has no complete build."""
    if build is None:
        return next((b for b in builds if b.is_current), None)
    known = {b.build_id: b for b in builds}
    if build not in known:
        ids = ", ".join(str(i) for i in known) or "none"
        raise ValueError(f"build {build} does not exist in {url} (builds: {ids})")
    if known[build].status != "complete":
        raise ValueError(f"build {build} is {known[build].status}, not complete")
    return known[build]


def run_inspect(args: argparse.Namespace) -> int:
    """Print builds, ranges and skylines."""
    from storage import IndexStore

    with IndexStore(args.url, read_only=True) as store:
        builds = store.list_builds()
        chosen = _chosen_build(builds, args.build, store.display_url)
        url = store.display_url
        if chosen is not None:
            rows = store.skyline_rows(chosen.build_id)
            unit = cost_unit(store.load_index(build=chosen.build_id, models=False).info)
    print(f"builds in {url}")
    print(
        format_table(
            ["build", "status", "current", "alpha", "delta", "learner", "n_min", "n_max",
             "features", "expansions", "candidates", "ranges", "entries", "completed"],
            [
                [b.build_id, b.status, "*" if b.is_current else "", b.alpha, b.delta,
                 clip(b.learner or "-", 48), b.n_min, b.n_max, b.n_features,
                 b.n_expansions, b.n_candidates, b.n_ranges, b.n_entries, b.completed_at or "-"]
                for b in builds
            ],
        )
    )
    for b in builds:
        if b.error:
            print(f"build {b.build_id} failed: {clip(b.error, 150)}")
    if chosen is None:
        print("\nno complete build yet")
        return 0
    n_ranges = len({r["range_id"] for r in rows})
    shown = [r for r in rows if args.ranges <= 0 or r["range_id"] < args.ranges]
    print(f"\nskylines of build {chosen.build_id}: {n_ranges} ranges, {len(rows)} entries; "
          f"costs in {unit}")
    print(
        format_table(
            ["range", "n_lo", "n_hi", "rank", "candidate", "learner", "features", "accuracy",
             f"cost curve ({unit})", f"cost(n_lo) ({unit})", "model"],
            [
                [r["range_id"], r["n_lo"], r["n_hi"], r["rank"], clip(r["candidate"], 32),
                 r.get("learner") or "-",
                 clip(r["features"].replace(", ", "+") or "{} (no features)", 60),
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
        "cost at size N is at most C, the most accurate.  Exit status 0 when a model fits "
        "(the empty model, which uses no features, included: it is named as such), 1 when "
        "nothing fits (\"nothing fits: ...\"), 2 on an error.  Models are not loaded.",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--size", type=_non_negative, required=True, metavar="N",
                   help="item size n")
    p.add_argument("--budget", type=_non_negative, required=True, metavar="C",
                   help="cost budget, in the unit of the store's costs (see inspect)")
    p.add_argument("--build", type=_build_id, help="build id (default: the current build)")
    p.set_defaults(run=run_lookup)


def run_lookup(args: argparse.Namespace) -> int:
    """Print the hit for (size, budget); exit status 1 (and says so) when nothing fits."""
    from storage import IndexStore
    from storage.codec import cost_expression, display_key

    with IndexStore(args.url, read_only=True) as store:
        index = store.load_index(build=args.build, models=False)
        formats = {r["candidate_id"]: r["model_format"]
                   for r in store.skyline_rows(index.info["build_id"])}
    unit = cost_unit(index.info)
    hit = index.lookup(args.size, args.budget)
    if hit is None:
        print(f"nothing fits: no candidate of build {index.info['build_id']} costs at most "
              f"{args.budget:g} {unit} at size {args.size:g}")
        return 1
    position = index.candidates.index(hit.candidate)
    print(
        format_table(
            ["build", "candidate", "features", "accuracy", f"cost ({unit})", "cost expression",
             "model"],
            [[index.info["build_id"], display_key(hit.key), features_text(hit.features),
              hit.accuracy, hit.cost, cost_expression(hit.candidate.cost),
              formats.get(position) or "-"]],
        )
    )
    if not hit.features:
        print("the empty model answers: it uses no features (it predicts without looking at "
              "the item, e.g. the majority class)")
    return 0


# ---------------------------------------------------------------------------- demo


def _alpha(text: str) -> float:
    value = _non_negative(text)
    if value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text!r}")
    return value


def add_demo(subparsers: argparse._SubParsersAction) -> None:
    """Register ``demo``."""
    p = subparsers.add_parser(
        "demo",
        help="end to end on digit images: measure costs, build, store, serve, plot",
        description="Render scikit-learn's digits at several sides (item size n = side), "
        "time the image features and fit cost curves, explore the feature-set lattice with "
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
    p.add_argument("--seed", type=_count, default=0, metavar="N",
                   help="seed of the digit draw and split (default 0)")
    p.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                   help="time features by wall clock (default) or by this process's CPU time "
                   "(steadier on a busy machine)")
    p.add_argument("--alpha", type=_alpha, default=None, metavar="A",
                   help="approximation factor >= 1 of the lattice (default 1.02)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # tests
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    """Run :func:`polydom.app.demo.run_demo`."""
    if args.workload == "plaid":
        from polydom.app.demo_plaid import run_plaid_demo

        run_plaid_demo(quick=args.quick, tiny=args.tiny,
                       store="polydom_plaid.db" if args.store == "polydom_demo.db" else args.store,
                       plots=None if args.no_plots else args.plots, seed=args.seed,
                       timer=args.timer, alpha=args.alpha)
        return 0
    from polydom.app import demo

    config = demo.TINY if args.tiny else (demo.QUICK if args.quick else demo.FULL)
    if args.alpha is not None:
        config = demo.replace(config, alpha=args.alpha)
    demo.run_demo(config, store=args.store, plots=None if args.no_plots else args.plots,
                  seed=args.seed, timer=args.timer, progress=not args.no_progress)
    return 0



# ---------------------------------------------------------------------------- build
def add_build(subparsers: argparse._SubParsersAction) -> None:
    """Register ``build``."""
    p = subparsers.add_parser(
        "build",
        help="build and store an index from a TOML or JSON config",
        description="Explore the feature-set lattice for the data, features, learner and "
        "cost curves a config file names, and store the index.  Keys: data "
        "('breast_cancer' or 'digits'), learner (" + ", ".join(_learner_names()) + "), "
        "store, alpha, delta, domain [n_min, n_max], cv, seed, features, costs (feature -> "
        "polynomial in n) or profile = true (digits: time the features), statistic, sides, "
        "digits, atoms ('features' or 'columns'), holdout, and [[budgeted]] tables (learner ("
        + ", ".join(_budgeted_names()) + "), tradeoffs, sizes, cost, params) whose "
        "candidates join the same index.  See docs/demo.md for examples.",
    )
    p.add_argument("config", metavar="CONFIG", help="a .toml or .json file")
    p.add_argument(
        "--executor",
        metavar="SPEC",
        help="where the trainings run: inprocess (default), processes, processes:N, or "
        "dask://host:port (a Dask scheduler; overrides the config's executor key).  A progress "
        "bar counts the finished trainings on a terminal.",
    )
    p.set_defaults(run=run_build)


def _learner_names() -> list[str]:
    import learners

    return [n for n in learners.registered_learners("lattice") if n != "synthetic"]


def _budgeted_names() -> list[str]:
    import learners

    return learners.registered_learners("budgeted")


def run_build(args: argparse.Namespace) -> int:
    """Build from a config file and print a summary."""
    from polydom.app.config_build import build_from_config, load_config

    build_from_config(load_config(args.config), executor=args.executor)
    return 0


# ---------------------------------------------------------------------------- plot
def add_plot(subparsers: argparse._SubParsersAction) -> None:
    """Register ``plot``."""
    p = subparsers.add_parser(
        "plot",
        help="PNG plots of a stored index: skylines per range of sizes and cost curves",
        description="Write skylines.png (accuracy against cost at a size inside each range "
        "of sizes) and cost_curves.png (each feature's stored cost curve over the domain) "
        "for one build of a stored index.  Needs matplotlib.",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the PNG files")
    p.add_argument("--build", type=_build_id, help="build id (default: the current build)")
    p.add_argument("--ranges", type=_count, default=6, metavar="K",
                   help="draw at most K ranges, spread evenly; 0 draws all (default 6)")
    p.set_defaults(run=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    """Plot a stored index."""
    from pathlib import Path

    from polydom.app.demo import require_modules
    from polydom.app.plots import plot_cost_curves, plot_skylines
    from storage import IndexStore

    require_modules("matplotlib")
    with IndexStore(args.url, read_only=True) as store:
        index = store.load_index(build=args.build, models=False)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    n_min, n_max = float(index.table.domain[0]), float(index.table.domain[1])
    unit = cost_unit(index.info)
    paths = [
        plot_skylines(index, folder / "skylines.png", max_ranges=args.ranges,
                      unit=f"cost at n ({unit})"),
        plot_cost_curves(index.costs, n_min, n_max, folder / "cost_curves.png",
                         unit=f"cost ({unit})"),
    ]
    print(f"build {index.info.get('build_id', '-')}: {len(index.table.ranges)} ranges; wrote "
          + ", ".join(str(p) for p in paths))
    return 0


# ---------------------------------------------------------------------------- plan
def read_sizes(path: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Sizes (and weights) from a text file: one size per line (a sample), or ``size weight``
    per line (a histogram); commas or blanks separate, ``#`` starts a comment.

    Raises
    ------
    ValueError
        Naming the file when it is empty or not one or two numeric columns.
    """
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            text = line.split("#", 1)[0].replace(",", " ").split()
            if not text:
                continue
            try:
                rows.append([float(v) for v in text])
            except ValueError:
                raise ValueError(f"sizes file {path}: line {number} is not numbers: "
                                 f"{line.strip()!r}") from None
    if not rows:
        raise ValueError(f"sizes file {path} holds no sizes (sizes must not be empty)")
    widths = {len(r) for r in rows}
    if len(widths) != 1 or widths.pop() not in (1, 2):
        raise ValueError(f"sizes file {path}: every line must hold a size, or a size and a "
                         "weight")
    table = np.array(rows)
    return table[:, 0], (table[:, 1] if table.shape[1] == 2 else None)


def add_plan(subparsers: argparse._SubParsersAction) -> None:
    """Register ``plan``."""
    p = subparsers.add_parser(
        "plan",
        help="plan a model per item size for a workload within a mean budget per item",
        description="Given a sample of item sizes (or a histogram: size and weight per "
        "line) and a budget (mean cost per item, or a cost per hour at a rate of items per "
        "hour), choose the candidate per size that maximises expected accuracy while the "
        "expected cost per item stays within the budget; print the plan and compare it "
        "with a uniform per-item budget of the same total.  Models are not loaded.",
    )
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("--sizes", required=True, metavar="FILE",
                   help="text file: a size per line, or 'size weight' per line")
    p.add_argument("--budget", type=_non_negative, metavar="B", help="mean cost per item")
    p.add_argument("--per-hour", type=_non_negative, metavar="C",
                   help="cost budget per hour (with --rate)")
    p.add_argument("--rate", type=_non_negative, metavar="R", help="items per hour")
    p.add_argument("--bins", type=_count, default=64, metavar="K",
                   help="group the sizes into at most K bins (default 64)")
    p.add_argument("--plot", metavar="PNG", help="write a plot of the plan to this file")
    p.add_argument("--build", type=_build_id, help="build id (default: the current build)")
    p.set_defaults(run=run_plan)


def _key_text(key: Any) -> str:
    """A candidate key for people: a lattice key (a tuple of names) as ``mean+worst``."""
    if isinstance(key, tuple) and all(isinstance(k, str) for k in key):
        return features_text(key)
    return clip(str(key))


def run_plan(args: argparse.Namespace) -> int:
    """Print (and plot) the workload plan."""
    from polydom.serving.plan import per_item_budget, plan_workload, uniform_plan
    from storage import IndexStore

    if args.budget is None and (args.per_hour is None or args.rate is None):
        raise ValueError("give --budget, or --per-hour and --rate")
    if args.budget is not None and (args.per_hour is not None or args.rate is not None):
        raise ValueError("give --budget, or --per-hour and --rate, not both")
    budget = args.budget if args.budget is not None else per_item_budget(args.per_hour,
                                                                         args.rate)
    sizes, weights = read_sizes(args.sizes)
    with IndexStore(args.url, create=False) as store:
        index = store.load_index(build=args.build, models=False)
    plan = plan_workload(index, sizes, budget, weights=weights, max_bins=max(1, args.bins))
    print(f"build {index.info.get('build_id', '-')}: {plan.method} plan for {sizes.size} "
          f"sizes in {len(plan.rows)} bins, budget {budget:g} per item")
    rows = [[*r[:3], _key_text(row.key), *r[4:]] for r, row in zip(plan.table(), plan.rows,
                                                                  strict=True)]
    print(format_table(["n_lo", "n_hi", "weight", "candidate", "accuracy", "mean cost",
                        "budget"], rows))
    lines = [["plan", plan.expected_accuracy, plan.expected_cost, plan.gap]]
    try:
        uniform = uniform_plan(index, sizes, budget, weights=weights)
        lines.append(["uniform budget", uniform.expected_accuracy, uniform.expected_cost, None])
    except ValueError as exc:
        print(f"uniform per-item budget: {exc}")
    print(format_table(["method", "expected accuracy", "expected cost", "gap"], lines))
    if args.plot:
        from polydom.app.plots import plot_workload_plan

        top = max(budget, plan.full_cost)
        frontier = []
        for b in np.geomspace(max(plan.least_cost, 1e-9 * top), top, 25):
            try:
                p = plan_workload(index, sizes, b, weights=weights, max_bins=max(1, args.bins))
            except ValueError:
                continue
            try:
                u = uniform_plan(index, sizes, b, weights=weights)
            except ValueError:
                u = None
            frontier.append((float(b), p, u))
        path = plot_workload_plan(plan, frontier, args.plot, sizes, weights)
        print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------- builds
def add_builds(subparsers: argparse._SubParsersAction) -> None:
    """Register ``builds delete``."""
    p = subparsers.add_parser(
        "builds",
        help="delete old builds of a store (and shrink the file)",
        description="polydom builds delete URL [ID ...]: delete the given builds, or every "
        "complete or failed build except the current one.  Expansions (trained models) "
        "that the remaining builds use or can reuse are kept; a SQLite file is compacted "
        "with VACUUM and the command says how it shrank.",
    )
    p.add_argument("action", choices=("delete",), help="what to do with builds")
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    p.add_argument("ids", metavar="ID", type=_build_id, nargs="*",
                   help="build ids (default: every build but the current one)")
    p.set_defaults(run=run_builds)


def run_builds(args: argparse.Namespace) -> int:
    """Delete builds and report how the store shrank."""
    from storage import IndexStore

    with IndexStore(args.url, create=False) as store:
        done = store.delete_builds(args.ids or None)
    if not done["deleted"]:
        print("no build to delete (the current build and running builds are kept)")
        return 0
    size = ""
    if done["bytes_before"] is not None and done["bytes_after"] is not None:
        size = (f"; file {_megabytes(done['bytes_before'])} -> "
                f"{_megabytes(done['bytes_after'])} (VACUUM)")
    print(f"deleted builds {', '.join(map(str, done['deleted']))} and "
          f"{done['expansions_deleted']} expansions no remaining build uses{size}")
    return 0


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


#: ``add_<name>`` functions, one per subcommand, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_demo, add_build, add_inspect, add_lookup, add_plot, add_plan, add_builds,
    add_recalibrate,
]


def version() -> str:
    """The installed distribution's version (``polydom --version``)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("polydom")
    except PackageNotFoundError:
        return "(not installed: running from a checkout)"


def build_parser() -> argparse.ArgumentParser:
    """The ``polydom`` parser with every subcommand of :data:`SUBCOMMANDS`."""
    parser = _Parser(
        prog=PROG,
        description="Poly-Dom indexes over trained models: build, store, inspect, query "
        "and plot them; `polydom demo --quick` runs everything on digit images.",
        epilog="URL: a SQLAlchemy URL (sqlite:///index.db, postgresql+psycopg://...) or a "
        "SQLite file path.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
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
    except ImportError as exc:
        print(f"{PROG} {args.command}: error: {exc.name or exc} is not installed "
              f"(pip install \".[demo]\")", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, OSError, sqlalchemy.exc.SQLAlchemyError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{PROG} {args.command}: error: {reason}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
