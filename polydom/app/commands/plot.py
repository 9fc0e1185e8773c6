"""``polydom plot``: PNG plots of a stored index (skylines per range of sizes, cost curves,
which model serves each (size, budget), accuracy vs budget at three sizes)."""

from __future__ import annotations

import argparse

from polydom.app.arguments import add_store_options, add_unit_option, count, store_key
from polydom.app.tables import cost_unit, printable
from polydom.curves.units import cost_unit_for
from polydom.errors import InvalidArgumentError

__all__ = ["add_plot", "run_plot"]


def add_plot(subparsers: argparse._SubParsersAction) -> None:
    """Register ``plot``."""
    p = subparsers.add_parser(
        "plot",
        help="PNG plots of a stored index: skylines, cost curves, a serving map, accuracy "
        "vs budget",
        description="Write skylines.png (accuracy against cost at a size inside each range "
        "of sizes), cost_curves.png (each feature's stored cost curve over the domain), "
        "serving_map.png (which model serves each (size, budget)) and "
        "accuracy_at_sizes.png (accuracy vs budget at 10, 50 and 90 % of the domain) "
        "for one build of a stored index, costs in the store's unit (or --unit).  A file "
        "already there is replaced, never written through (a symlink is replaced as a "
        "link).  Needs matplotlib.",
    )
    add_store_options(p)
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the PNG files")
    p.add_argument("--ranges", type=count, default=6, metavar="K",
                   help="draw at most K ranges, spread evenly; 0 draws all (default 6)")
    add_unit_option(p)
    p.set_defaults(run=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    """Plot a stored index."""
    from pathlib import Path

    from polydom.app.demo import require_modules
    from polydom.app.plots import (
        plot_accuracy_at_sizes,
        plot_cost_curves,
        plot_serving_map,
        plot_skylines,
    )
    from polydom.pipeline.open import open_index

    require_modules("matplotlib")
    index = open_index(args.url, build=args.build, key=store_key(args), models=False)
    unit = cost_unit_for(cost_unit(index.info), args.unit)
    folder = Path(args.out)
    if folder.exists() and not folder.is_dir():
        raise InvalidArgumentError(f"--out {printable(args.out)!r} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    n_min, n_max = float(index.table.domain[0]), float(index.table.domain[1])
    paths = [
        plot_skylines(index, folder / "skylines.png", max_ranges=args.ranges, scale=unit.scale,
                      unit=f"cost at n ({printable(unit.name)})"),
        plot_cost_curves(index.costs, n_min, n_max, folder / "cost_curves.png", scale=unit.scale,
                         unit=f"cost ({printable(unit.name)})"),
        plot_serving_map(index, folder / "serving_map.png", scale=unit.scale,
                         unit=printable(unit.name)),
        plot_accuracy_at_sizes(index, _three_sizes(n_min, n_max),
                               folder / "accuracy_at_sizes.png", scale=unit.scale,
                               unit=printable(unit.name)),
    ]
    print(f"build {index.info.get('build_id', '-')}: {len(index.table.ranges)} ranges; wrote "
          + ", ".join(printable(p) for p in paths))
    return 0


def _three_sizes(n_min: float, n_max: float) -> list[float]:
    """10, 50 and 90 % of the domain (of ``[n_min, n_min + 100]`` when it is unbounded)."""
    hi = n_max if n_max < float("inf") else n_min + 100.0
    return [n_min + f * (hi - n_min) for f in (0.1, 0.5, 0.9)]
