"""``polydom plot``: PNG plots of a stored index (skylines per range of sizes, cost curves)."""

from __future__ import annotations

import argparse

from polydom.app.arguments import add_store_options, add_unit_option, count, store_key
from polydom.app.tables import cost_unit, printable
from polydom.app.units import cost_unit_for

__all__ = ["add_plot", "run_plot"]


def add_plot(subparsers: argparse._SubParsersAction) -> None:
    """Register ``plot``."""
    p = subparsers.add_parser(
        "plot",
        help="PNG plots of a stored index: skylines per range of sizes and cost curves",
        description="Write skylines.png (accuracy against cost at a size inside each range "
        "of sizes) and cost_curves.png (each feature's stored cost curve over the domain) "
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
    from polydom.app.plots import plot_cost_curves, plot_skylines
    from storage import IndexStore

    require_modules("matplotlib")
    with IndexStore(args.url, read_only=True, key=store_key(args)) as store:
        index = store.load_index(build=args.build, models=False)
    unit = cost_unit_for(cost_unit(index.info), args.unit)
    folder = Path(args.out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {printable(args.out)!r} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    n_min, n_max = float(index.table.domain[0]), float(index.table.domain[1])
    paths = [
        plot_skylines(index, folder / "skylines.png", max_ranges=args.ranges, scale=unit.scale,
                      unit=f"cost at n ({printable(unit.name)})"),
        plot_cost_curves(index.costs, n_min, n_max, folder / "cost_curves.png", scale=unit.scale,
                         unit=f"cost ({printable(unit.name)})"),
    ]
    print(f"build {index.info.get('build_id', '-')}: {len(index.table.ranges)} ranges; wrote "
          + ", ".join(printable(p) for p in paths))
    return 0
