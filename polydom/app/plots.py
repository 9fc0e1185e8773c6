"""PNG plots of an index: cost curves, skylines per range of sizes, accuracy vs budget.

Needs matplotlib (the ``demo`` extra); it is imported inside each function with the Agg
backend, so importing this module costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["plot_cost_curves", "plot_skylines", "plot_accuracy_vs_budget", "plot_workload_plan"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _grid(n_min: float, n_max: float, points: int = 200) -> np.ndarray:
    hi = n_max if math.isfinite(n_max) else max(2.0 * n_min, n_min + 100.0)
    return np.linspace(n_min, hi, points)


def plot_cost_curves(
    costs: Mapping[str, Any],
    n_min: float,
    n_max: float,
    path: str | Path,
    points: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    scale: float = 1.0,
    unit: str = "cost",
) -> Path:
    """One panel per feature: its cost curve on ``[n_min, n_max]`` and measured points.

    ``points`` maps a feature to ``(sizes, values)`` (e.g. every profiled timing); values and
    curves are multiplied by ``scale`` (1e3 for seconds shown as ms).  Returns the path.

    Runtime complexity: O(F * (200 + points)).
    """
    plt = _pyplot()
    names = list(costs)
    cols = min(4, max(1, len(names)))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
    grid = _grid(n_min, n_max)
    for ax, name in zip(axes.ravel(), names, strict=False):
        if points and name in points:
            n, v = points[name]
            ax.scatter(n, scale * np.asarray(v), s=5, alpha=0.35, color="gray",
                       label="measured")
        ax.plot(grid, scale * costs[name](grid), color="C0", label="fitted")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("size n", fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
    axes.ravel()[0].legend(fontsize=7)
    return _save(fig, axes, len(names), path)


def plot_skylines(
    index: Any, path: str | Path, max_ranges: int = 6, scale: float = 1.0, unit: str = "cost"
) -> Path:
    """Skyline of each range of sizes: accuracy against cost at a size inside the range.

    ``index`` is a :class:`polydom.Index`.  With more than ``max_ranges`` ranges, that many
    are picked evenly (first and last included).  Each panel steps through the skyline's
    candidates (cheapest first) at the middle of its range (``n_lo + 1`` for an unbounded
    last range) and labels each point with its features (first four letters of each); the
    accuracy axis starts just below the least accurate non-empty set.  Returns the path.

    Runtime complexity: O(R * S) for R ranges drawn with S candidates each.
    """
    plt = _pyplot()
    table = index.table
    ranges = list(table.ranges)
    skylines = list(table.skylines)
    picks = list(range(len(ranges)))
    if len(picks) > max_ranges:
        picks = sorted({int(round(i)) for i in np.linspace(0, len(ranges) - 1, max_ranges)})
    cols = min(3, len(picks))
    rows = (len(picks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax, r in zip(axes.ravel(), picks, strict=False):
        lo, hi = ranges[r]
        at = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 1.0
        sky = skylines[r]
        cost = [scale * float(c.cost(at)) for c in sky]
        acc = [c.accuracy for c in sky]
        ax.step(cost, acc, where="post", color="C0")
        ax.scatter(cost, acc, color="C0", s=14)
        for k, (c, x, y) in enumerate(zip(sky, cost, acc, strict=True)):
            label = "+".join(sorted(str(f)[:4] for f in c.features)) or "{}"
            ax.annotate(label, (x, y), fontsize=5, rotation=25,
                        xytext=(3, -9 if k % 2 else 3), textcoords="offset points")
        useful = [a for c, a in zip(sky, acc, strict=True) if c.features]
        if useful:
            ax.set_ylim(min(useful) - 0.03, max(useful) + 0.02)
        if cost and min(cost) > 0 and max(cost) / min(cost) > 50:
            ax.set_xscale("log")
        ax.set_title(f"range {r}: n in [{lo:.4g}, {hi:.4g}), at n = {at:.4g}", fontsize=8)
        ax.set_xlabel(unit, fontsize=8)
        ax.set_ylabel("accuracy", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"skylines: {len(ranges)} ranges of sizes ({len(picks)} shown)", fontsize=9)
    return _save(fig, axes, len(picks), path)


def plot_accuracy_vs_budget(
    rows: Sequence[Any], path: str | Path, scale: float = 1e3, unit: str = "budget (ms)"
) -> Path:
    """Accuracy against budget, one panel per size, one line per method.

    ``rows`` are :class:`polydom.AdherenceRow` (``method``, ``size``, ``budget``,
    ``accuracy``).  Returns the path.

    Runtime complexity: O(len(rows)).
    """
    plt = _pyplot()
    sizes = sorted({r.size for r in rows})
    methods = list(dict.fromkeys(r.method for r in rows))
    fig, axes = plt.subplots(1, len(sizes), figsize=(3.8 * len(sizes), 3.2), sharey=True,
                             squeeze=False)
    for ax, size in zip(axes.ravel(), sizes, strict=True):
        for m in methods:
            mine = sorted((r for r in rows if r.method == m and r.size == size),
                          key=lambda r: r.budget)
            ax.plot([scale * r.budget for r in mine], [r.accuracy for r in mine], marker="o",
                    label=m)
        ax.set_xscale("log")
        ax.set_title(f"size {size:g}", fontsize=9)
        ax.set_xlabel(unit, fontsize=8)
    axes.ravel()[0].set_ylabel("accuracy")
    axes.ravel()[0].legend(fontsize=7)
    return _save(fig, axes, axes.size, path)


def plot_workload_plan(
    plan: Any,
    frontier: Sequence[tuple[float, Any, Any]],
    path: str | Path,
    sizes: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> Path:
    """A workload plan: expected accuracy vs mean budget (plan and uniform), budget per size.

    ``plan`` is a :class:`polydom.WorkloadPlan`; ``frontier`` holds ``(budget, plan,
    uniform plan or None)`` for a range of budgets (the left panel); the right panel shows the
    plan's per-item budget for each bin of sizes against the uniform budget, over the size
    histogram of ``sizes`` (and ``weights``) when given.  Returns the path.

    Runtime complexity: O(len(frontier) + bins).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8), squeeze=False)
    left, right = axes.ravel()
    budgets = [b for b, _, _ in frontier]
    left.plot(budgets, [p.expected_accuracy for _, p, _ in frontier], marker=".",
              label="workload plan")
    uni = [(b, u.expected_accuracy) for b, _, u in frontier if u is not None]
    if uni:
        left.plot(*zip(*uni, strict=True), marker=".", label="uniform per-item budget")
    left.axvline(plan.budget, color="gray", linestyle=":", label=f"budget {plan.budget:.4g}")
    left.set_xscale("log")
    left.set_xlabel("mean cost per item (budget)", fontsize=8)
    left.set_ylabel("expected accuracy", fontsize=8)
    left.legend(fontsize=7)
    if sizes is not None:
        twin = right.twinx()
        twin.hist(np.asarray(sizes), bins=40, weights=weights, color="lightgray")
        twin.set_ylabel("items", fontsize=8)
        right.set_zorder(twin.get_zorder() + 1)
        right.patch.set_visible(False)
    for r in plan.rows:
        right.plot([r.n_lo, r.n_hi if r.n_hi > r.n_lo else r.n_lo], [r.budget, r.budget],
                   color="C0", marker="|")
    right.plot([], [], color="C0", marker="|", label="plan: budget per size")
    right.axhline(plan.budget, color="C1", label="uniform budget")
    right.set_yscale("log")
    right.set_xlabel("item size n", fontsize=8)
    right.set_ylabel("per-item budget", fontsize=8)
    right.legend(fontsize=7)
    fig.suptitle(f"{plan.method} plan: expected accuracy {plan.expected_accuracy:.4f}, "
                 f"expected cost {plan.expected_cost:.4g} per item", fontsize=9)
    return _save(fig, axes, 2, path)


def _save(fig: Any, axes: Any, used: int, path: str | Path) -> Path:
    """Blank the panels past ``used``, lay the figure out, write it to ``path`` and close it."""
    import matplotlib.pyplot as plt

    for ax in np.ravel(axes)[used:]:
        ax.axis("off")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
