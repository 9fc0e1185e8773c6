"""``polydom plan``: a model per item size for a workload, within a mean budget per item."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from polydom.app.arguments import (
    UsageError,
    add_output_option,
    add_store_options,
    add_unit_option,
    count,
    non_negative,
    quantity,
    store_key,
)
from polydom.app.output import write_csv, write_json
from polydom.app.tables import clip, cost_unit, format_table, printable
from polydom.curves.names import candidate_name
from polydom.curves.units import CostUnit, cost_unit_for
from polydom.errors import InvalidArgumentError

__all__ = ["add_plan", "read_sizes", "run_plan"]


def add_plan(subparsers: argparse._SubParsersAction) -> None:
    """Register ``plan``."""
    p = subparsers.add_parser(
        "plan",
        help="plan a model per item size for a workload within a mean budget per item",
        description="Given a sample of item sizes (or a histogram: size and weight per "
        "line) and a budget (mean cost per item, or a cost per hour at a rate of items per "
        "hour), choose the candidate per size that maximises expected accuracy while the "
        "expected cost per item stays within the budget; print the plan and compare it "
        "with a uniform per-item budget of the same total.  Costs and budgets are in the "
        "store's unit unless --unit says otherwise or a number carries its unit (770ms).  "
        "Models are not loaded.",
    )
    add_store_options(p)
    p.add_argument("--sizes", required=True, metavar="FILE",
                   help="text file: a size per line, or 'size weight' per line")
    p.add_argument("--budget", type=quantity, metavar="B", help="mean cost per item")
    p.add_argument("--per-hour", type=quantity, metavar="C",
                   help="cost budget per hour (with --rate)")
    p.add_argument("--rate", type=non_negative, metavar="R", help="items per hour")
    p.add_argument("--bins", type=count, default=64, metavar="K",
                   help="group the sizes into at most K bins (default 64)")
    p.add_argument("--plot", metavar="PNG", help="write a plot of the plan to this file")
    add_unit_option(p)
    add_output_option(p)
    p.set_defaults(run=run_plan)


def read_sizes(path: str) -> tuple[Any, Any]:
    """Sizes (and weights) from a text file: one size per line (a sample), or ``size weight``
    per line (a histogram); commas or blanks separate, ``#`` starts a comment.

    Returns numpy arrays: the sizes, and the weights or None.

    Runtime complexity: O(size of the file).

    Raises
    ------
    ValueError
        Naming the file when it is empty, not UTF-8, or not one or two numeric columns.
    """
    import numpy as np

    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                text = line.split("#", 1)[0].replace(",", " ").split()
                if not text:
                    continue
                try:
                    rows.append([float(v) for v in text])
                except ValueError:
                    raise InvalidArgumentError(
                        f"sizes file {path}: line {number} is not numbers: "
                        f"{clip(line.strip())!r}") from None
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"sizes file {path} is not UTF-8 text") from None
    if not rows:
        raise InvalidArgumentError(f"sizes file {path} holds no sizes (sizes must not be empty)")
    widths = {len(r) for r in rows}
    if len(widths) != 1 or widths.pop() not in (1, 2):
        raise InvalidArgumentError(
            f"sizes file {path}: every line must hold a size, or a size and a "
            "weight")
    table = np.array(rows)
    return table[:, 0], (table[:, 1] if table.shape[1] == 2 else None)


def _budget(args: argparse.Namespace, unit: CostUnit) -> float:
    """The mean budget per item in the store's unit, from --budget or --per-hour/--rate."""
    from polydom.serving.plan import per_item_budget

    if args.budget is None and (args.per_hour is None or args.rate is None):
        raise UsageError("give --budget, or --per-hour and --rate")
    if args.budget is not None and (args.per_hour is not None or args.rate is not None):
        raise UsageError("give --budget, or --per-hour and --rate, not both")
    if args.budget is not None:
        return unit.to_store(*args.budget, "--budget")
    return per_item_budget(unit.to_store(*args.per_hour, "--per-hour"), args.rate)


def run_plan(args: argparse.Namespace) -> int:
    """Print (and plot) the workload plan."""
    from polydom.pipeline.open import open_index
    from polydom.serving.plan import plan_workload, uniform_plan

    sizes, weights = read_sizes(args.sizes)
    index = open_index(args.url, build=args.build, key=store_key(args), models=False)
    unit = cost_unit_for(cost_unit(index.info), args.unit)
    budget = _budget(args, unit)
    plan = plan_workload(index, sizes, budget, weights=weights, max_bins=max(1, args.bins))
    try:
        uniform = uniform_plan(index, sizes, budget, weights=weights)
        no_uniform = None
    except ValueError as exc:
        uniform, no_uniform = None, str(exc)
    rows = [{"n_lo": r.n_lo, "n_hi": r.n_hi, "weight": r.weight,
             "candidate": candidate_name(r.key), "accuracy": r.accuracy,
             "mean_cost": unit.shown(r.cost), "budget": unit.shown(r.budget)}
            for r in plan.rows]
    if args.output == "json":
        write_json({"build": index.info.get("build_id"), "unit": unit.name,
                    "budget": unit.shown(budget), "sizes": int(sizes.size),
                    "method": plan.method, "bins": rows,
                    "expected_accuracy": plan.expected_accuracy,
                    "expected_cost": unit.shown(plan.expected_cost), "gap": plan.gap,
                    "uniform": None if uniform is None else {
                        "expected_accuracy": uniform.expected_accuracy,
                        "expected_cost": unit.shown(uniform.expected_cost)},
                    "uniform_error": no_uniform})
    elif args.output == "csv":
        names = list(rows[0]) if rows else ["n_lo", "n_hi", "weight", "candidate",
                                            "accuracy", "mean_cost", "budget"]
        write_csv(names, [list(r.values()) for r in rows])
    else:
        _print_text(index, plan, uniform, no_uniform, rows, unit, budget, sizes.size)
    if args.plot:
        _plot(args, index, plan, sizes, weights, budget)
    return 0


def _print_text(index: Any, plan: Any, uniform: Any, no_uniform: str | None,
                rows: list[dict[str, Any]], unit: CostUnit, budget: float, n: int) -> None:
    name = clip(unit.name, 20)
    print(f"build {index.info.get('build_id', '-')}: {plan.method} plan for {n} "
          f"sizes in {len(plan.rows)} bins, budget {unit.shown(budget):g} {name} per item")
    print(format_table(["n_lo", "n_hi", "weight", "candidate", "accuracy",
                        f"mean cost ({name})", f"budget ({name})"],
                       [[r["n_lo"], r["n_hi"], r["weight"], clip(r["candidate"], 40),
                         r["accuracy"], r["mean_cost"], r["budget"]] for r in rows]))
    lines = [["plan", plan.expected_accuracy, unit.shown(plan.expected_cost), plan.gap]]
    if uniform is not None:
        lines.append(["uniform budget", uniform.expected_accuracy,
                      unit.shown(uniform.expected_cost), None])
    else:
        print(f"uniform per-item budget: {printable(no_uniform)}")
    print(format_table(["method", "expected accuracy", f"expected cost ({name})", "gap"],
                       lines))


def _plot(args: argparse.Namespace, index: Any, plan: Any, sizes: Any, weights: Any,
          budget: float) -> None:
    """Write the plan's plot: the plan and the uniform baseline over a range of budgets."""
    import numpy as np

    from polydom.app.plots import plot_workload_plan
    from polydom.serving.plan import plan_workload, uniform_plan

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
    path = plot_workload_plan(plan, frontier, args.plot, sizes, weights,
                              printable(cost_unit(index.info)))
    print(f"wrote {printable(path)}", file=sys.stdout if args.output == "text" else sys.stderr)
