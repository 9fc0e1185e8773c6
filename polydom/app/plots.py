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

from polydom.app.files import replace_file

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
    curve_label: str = "cost curve",
) -> Path:
    """One panel per feature: its cost curve on ``[n_min, n_max]`` and measured points.

    ``points`` maps a feature to ``(sizes, values)`` (e.g. every profiled timing); values and
    curves are multiplied by ``scale`` (1e3 for seconds shown as ms).  ``curve_label`` names
    the curves in the legend: ``"fitted"`` only for curves fitted to measured points (the
    demo); a stored or typed curve is a plain ``"cost curve"``.  Returns the path.

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
        ax.plot(grid, scale * costs[name](grid), color="C0", label=curve_label)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("size n", fontsize=9)
        ax.set_ylabel(unit, fontsize=9)
        ax.tick_params(labelsize=8)
    axes.ravel()[0].legend(fontsize=8)
    return _save(fig, axes, len(names), path)


def plot_skylines(
    index: Any, path: str | Path, max_ranges: int = 6, scale: float = 1.0, unit: str = "cost"
) -> Path:
    """Skyline of each range of sizes: accuracy against cost at a size inside the range.

    ``index`` is a :class:`polydom.Index`.  With more than ``max_ranges`` ranges (0: all),
    that many are picked evenly (first and last included).  Each panel steps through the
    skyline's candidates (cheapest first) at the middle of its range (``n_lo + 1`` for an
    unbounded last range).  Points carry a number; a key under the panels names the features
    of each number in full, so labels neither overlap nor leave the axes.  The accuracy axis
    starts just below the least accurate non-empty set.  Returns the path.

    Runtime complexity: O(R * S) for R ranges drawn with S candidates each.
    """
    plt = _pyplot()
    table = index.table
    ranges = list(table.ranges)
    skylines = list(table.skylines)
    picks = list(range(len(ranges)))
    if 0 < max_ranges < len(picks):
        picks = sorted({int(round(i)) for i in np.linspace(0, len(ranges) - 1, max_ranges)})
    numbers: dict[Any, int] = {}
    for r in picks:
        for c in skylines[r]:
            numbers.setdefault(c.key, len(numbers) + 1)
    cols = min(3, len(picks))
    rows = (len(picks) + cols - 1) // cols
    key_lines = [f"{k}: {_features_text(c)}  (accuracy {c.accuracy:.3f})"
                 for c in _by_number(numbers, skylines, picks)
                 for k in [numbers[c.key]]]
    key_cols = 1 if cols == 1 else 2
    key_rows = (len(key_lines) + key_cols - 1) // key_cols
    key_height = 0.3 + 0.2 * key_rows
    fig = plt.figure(figsize=(max(4.8 * cols, 7.0), 3.6 * rows + key_height))
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[3.6] * rows + [key_height])
    axes = [fig.add_subplot(grid[i // cols, i % cols]) for i in range(len(picks))]
    for ax, r in zip(axes, picks, strict=True):
        lo, hi = ranges[r]
        at = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 1.0
        sky = skylines[r]
        cost = [scale * float(c.cost(at)) for c in sky]
        acc = [c.accuracy for c in sky]
        ax.step(cost, acc, where="post", color="C0")
        ax.scatter(cost, acc, color="C0", s=18, zorder=3)
        for c, x, y in zip(sky, cost, acc, strict=True):
            ax.annotate(str(numbers[c.key]), (x, y), fontsize=8, xytext=(4, -10),
                        textcoords="offset points", annotation_clip=True)
        useful = [a for c, a in zip(sky, acc, strict=True) if c.features]
        if useful:
            ax.set_ylim(min(useful) - 0.03, max(useful) + 0.02)
        if cost and min(cost) > 0 and max(cost) / min(cost) > 50:
            ax.set_xscale("log")
            _plain_ticks(ax.xaxis)
        ax.margins(x=0.08)
        ax.set_title(f"range {r}: n in [{lo:.4g}, {hi:.4g}), drawn at n = {at:.4g}",
                     fontsize=9)
        ax.set_xlabel(unit, fontsize=9)
        ax.set_ylabel("accuracy", fontsize=9)
        ax.tick_params(labelsize=8)
    key_ax = fig.add_subplot(grid[rows, :])
    key_ax.axis("off")
    for column in range(key_cols):
        lines = key_lines[column * key_rows: (column + 1) * key_rows]
        key_ax.text(0.01 + 0.5 * column, 1.0, "\n".join(lines), fontsize=8, va="top",
                    ha="left", transform=key_ax.transAxes, family="monospace")
    fig.suptitle(f"skylines: {len(ranges)} ranges of sizes ({len(picks)} shown)", fontsize=10)
    return _save(fig, np.array(axes), len(axes), path)


def _features_text(candidate: Any) -> str:
    names = sorted(str(f) for f in candidate.features)
    return "+".join(names) if names else "{} (no features)"


def _by_number(numbers: Mapping[Any, int], skylines: Sequence[Sequence[Any]],
               picks: Sequence[int]) -> list[Any]:
    """The candidates of the drawn ranges, once each, in the order of their numbers."""
    seen: dict[Any, Any] = {}
    for r in picks:
        for c in skylines[r]:
            seen.setdefault(c.key, c)
    return sorted(seen.values(), key=lambda c: numbers[c.key])


def plot_accuracy_vs_budget(
    rows: Sequence[Any], path: str | Path, scale: float = 1e3, unit: str = "ms"
) -> Path:
    """What budgeted serving delivered, per size (columns) against the budget (x axis).

    Three rows of panels: accuracy; the realized feature cost (mean measured time, log scale,
    with the budget drawn as the diagonal it should stay under; a zero time sits on the
    bottom edge); and the over-budget rate (fraction
    of items whose measured time exceeded the budget).  One line per method, each with its
    own marker and line style, so methods that coincide stay visible.  ``rows`` are
    :class:`polydom.AdherenceRow`; budgets and times are multiplied by ``scale`` (1e3:
    seconds shown as ms).  Returns the path.

    Runtime complexity: O(len(rows)).
    """
    plt = _pyplot()
    from matplotlib.ticker import NullLocator

    sizes = sorted({r.size for r in rows})
    methods = list(dict.fromkeys(r.method for r in rows))
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-.")]
    fig, axes = plt.subplots(3, len(sizes), figsize=(3.9 * len(sizes), 8.4), sharex="col",
                             squeeze=False)
    for col, size in enumerate(sizes):
        for k, m in enumerate(methods):
            mine = sorted((r for r in rows if r.method == m and r.size == size),
                          key=lambda r: r.budget)
            budget = [scale * r.budget for r in mine]
            marker, line = styles[k % len(styles)]
            style = {"marker": marker, "linestyle": line, "label": m, "markersize": 5,
                     "alpha": 0.85}
            axes[0, col].plot(budget, [r.accuracy for r in mine], **style)
            axes[1, col].plot(budget, [scale * r.mean_seconds for r in mine], **style)
            axes[2, col].plot(budget, [r.over_budget for r in mine], **style)
        every = sorted({scale * r.budget for r in rows if r.size == size})
        if every:
            axes[1, col].plot(every, every, color="gray", linewidth=0.8, label="budget")
        axes[0, col].set_title(f"size {size:g}", fontsize=10)
        axes[2, col].set_xlabel(f"budget ({unit})", fontsize=9)
        axes[0, col].set_ylim(-0.02, 1.02)
        axes[2, col].set_ylim(-0.02, 1.02)
        if any(r.mean_seconds > 0 for r in rows if r.size == size):
            axes[1, col].set_yscale("log", nonpositive="clip")  # the diagonal stays straight
            _plain_ticks(axes[1, col].yaxis)
        for row in range(3):
            axes[row, col].set_xscale("log")
            axes[row, col].tick_params(labelsize=8)
        # the budgets themselves are the x ticks (evenly spaced on the log axis)
        axes[2, col].set_xticks(every, [f"{b:.2g}" for b in every])
        axes[2, col].xaxis.set_minor_locator(NullLocator())
    axes[0, 0].set_ylabel("accuracy", fontsize=9)
    axes[1, 0].set_ylabel(f"mean realized cost ({unit})", fontsize=9)
    axes[2, 0].set_ylabel("over-budget rate", fontsize=9)
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=8)
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


def _plain_ticks(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (``0.02``, not ``2 x 10^-2``)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _save(fig: Any, axes: Any, used: int, path: str | Path) -> Path:
    """Blank the panels past ``used``, lay the figure out, write it to ``path`` (never through
    a symlink: :func:`polydom.app.files.replace_file`) and close it."""
    import matplotlib.pyplot as plt

    for ax in np.ravel(axes)[used:]:
        ax.axis("off")
    fig.tight_layout()
    try:
        return replace_file(path, lambda handle: fig.savefig(handle, dpi=90, format="png"))
    finally:
        plt.close(fig)
