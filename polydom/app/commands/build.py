"""``polydom build``: build and store an index from a TOML or JSON config."""

from __future__ import annotations

import argparse
import contextlib

from polydom.errors import InvalidArgumentError

__all__ = ["add_build", "run_build"]


def _description() -> str:
    """The help text, naming the registered learners (imports :mod:`learners`: called only
    when the help is printed)."""
    from polydom.pipeline.learning import registered_learners

    lattice = [n for n in registered_learners("lattice") if n != "synthetic"]
    budgeted = registered_learners("budgeted")
    return (
        "Explore the feature-set lattice for the data, features, learner and cost curves a "
        "config file names, and store the index.  Keys: data ('breast_cancer' or 'digits'), "
        "learner (" + ", ".join(lattice) + "), store, alpha, delta, domain [n_min, n_max], "
        "cv, seed, features, costs (feature -> polynomial in n) or profile = true (digits "
        "or a featurizer: time the features in situ; quantile, degree), sides, digits, "
        "atoms ('features' or 'columns'), "
        "holdout, and [[budgeted]] tables (learner (" + ", ".join(budgeted) + "), tradeoffs, "
        "sizes, cost, params) whose candidates join the same index.  See docs/demo.md for "
        "examples."
    )


def add_build(subparsers: argparse._SubParsersAction) -> None:
    """Register ``build``."""
    p = subparsers.add_parser(
        "build",
        help="build and store an index from a TOML or JSON config",
        description=_description,  # a callable: the learners load only for --help
    )
    p.add_argument("config", metavar="CONFIG", help="a .toml or .json file")
    p.add_argument(
        "--executor",
        metavar="SPEC",
        help="where the trainings run: inprocess (default), processes, processes:N, or "
        "dask://host:port (a Dask scheduler; overrides the config's executor key).  A progress "
        "bar counts the finished trainings on a terminal.",
    )
    p.add_argument(
        "--traversal", choices=("complete", "paper", "anytime"),
        help="how the lattice is explored (overrides the config's traversal key): complete "
        "(default), paper, or anytime (20+ features, spends --max-expansions where the "
        "skyline can still improve)",
    )
    p.add_argument(
        "--max-expansions", metavar="CAP", type=_cap,
        help="stop after CAP trainings (overrides the config's max_expansions); the build "
        "prints the trainings used of the cap and, when the lattice is not covered, what "
        "lattice.cap_bound still bounds",
    )
    p.set_defaults(run=run_build)


def _cap(text: str) -> int:
    """``--max-expansions``: a positive integer, or a one-line error naming the flag."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-expansions must be an integer >= 1, got "
                                         f"{text!r}")
    return value


def run_build(args: argparse.Namespace) -> int:
    """Build from a config file and print a summary."""
    from polydom.app.config_build import ConfigError, build_from_config, load_config, store_url

    try:
        config = load_config(args.config)
    except UnicodeDecodeError:
        raise InvalidArgumentError(
            f"config {args.config!r} is not a TOML or JSON text file "
            "(not UTF-8 text)") from None
    # a database's error (a full disk) names the store; a bad store is refused by the build
    with contextlib.suppress(ConfigError, KeyError):
        args.url = store_url(config, config.folder)
    build_from_config(config, executor=args.executor, traversal=args.traversal,
                      max_expansions=args.max_expansions)
    return 0
