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
from polydom.curves.names import EMPTY_NAME, candidate_name
from polydom.errors import InvalidArgumentError

__all__ = [
    "plot_accuracy_at_sizes",
    "plot_accuracy_vs_budget",
    "plot_cost_curves",
    "plot_serving_map",
    "plot_skylines",
    "plot_workload_plan",
]

#: What the size axis says by default: the ``n`` the cost curves take.
SIZE_LABEL = "item size n (the n of the cost curves)"


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
    size_label: str = SIZE_LABEL,
) -> Path:
    """Every feature's cost curve on ``[n_min, n_max]``: all together, then one per panel.

    The first panel draws every curve on one axis, so crossings (a feature cheap at small
    sizes and dear at large ones) show; the per-feature panels after it share that y scale
    (log when the costs span more than two decades) and add the measured points.  Features
    with the same curve share a panel and a legend entry (30 columns of three kinds of
    cost make four panels, not 31).
    ``points`` maps a feature to ``(sizes, values)`` (e.g. every profiled timing); values
    and curves are multiplied by ``scale`` (1e3 for seconds shown as ms).  ``curve_label``
    names the curves in the legend: ``"fitted"`` only for curves fitted to measured points
    (the demo); a stored or typed curve is a plain ``"cost curve"``.  ``size_label`` says
    what the size ``n`` is.  Returns the path.

    Runtime complexity: O(F * (200 + points)).
    """
    plt = _pyplot()
    groups = _same_curves(costs)
    panels = len(groups) + 1
    cols = min(4, panels)
    rows = (panels + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 3.0 * rows), squeeze=False,
                             sharey=True)
    grid = _grid(n_min, n_max)
    values = [scale * np.asarray(costs[names[0]](grid), dtype=float) for names in groups]
    every = np.concatenate(values or [np.zeros(1)])
    positive = every[every > 0]
    log = positive.size > 0 and positive.max() / positive.min() > 100
    flat = axes.ravel()
    overview = flat[0]
    for k, names in enumerate(groups):
        colour = f"C{k % 10}"
        label = _names_text(names)
        overview.plot(grid, values[k], color=colour, label=label)
        ax = flat[k + 1]
        for name in names:
            if points and name in points:
                n, v = points[name]
                ax.scatter(n, scale * np.asarray(v), s=5, alpha=0.35, color="gray",
                           label="measured" if name == names[0] else None)
        ax.plot(grid, values[k], color=colour, label=curve_label)
        ax.set_title(label, fontsize=10)
    overview.set_title("all features (one scale: crossings show)", fontsize=10)
    overview.legend(fontsize=8)
    for ax in flat[:panels]:
        ax.set_xlabel(size_label, fontsize=8)
        ax.tick_params(labelsize=8, labelleft=True)
        if log:
            ax.set_yscale("log", nonpositive="clip")
    for row in axes:
        row[0].set_ylabel(unit, fontsize=9)
    if panels > 1:
        flat[1].legend(fontsize=8)
    return _save(fig, axes, panels, path)


def _same_curves(costs: Mapping[str, Any]) -> list[list[str]]:
    """Feature names grouped by identical cost curves, in first-appearance order."""
    groups: dict[tuple, list[str]] = {}
    for name, curve in costs.items():
        coefs = tuple(np.asarray(getattr(curve, "coefficients", ()), dtype=float).tolist())
        groups.setdefault(coefs or (name,), []).append(name)
    return list(groups.values())


def _names_text(names: Sequence[str]) -> str:
    """``a, b, c`` for up to three names, else ``first ... last (k features)``."""
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]} ... {names[-1]} ({len(names)} features)"


def plot_skylines(
    index: Any, path: str | Path, max_ranges: int = 6, scale: float = 1.0, unit: str = "cost",
    size_label: str = SIZE_LABEL,
) -> Path:
    """Skyline of each range of sizes: accuracy against cost at a size inside the range.

    ``index`` is a :class:`polydom.Index`.  With more than ``max_ranges`` ranges (0: all),
    that many are picked evenly (first and last included).  Each panel steps through the
    skyline's candidates (cheapest first) at the middle of its range (``n_lo + 1`` for an
    unbounded last range).  Points carry a number, placed alternately below and above the
    step line so that neighbours do not overlap; a key under the panels names, for each
    number, the learner that produced the model and its features in full.  The accuracy
    axis spans every point drawn (the empty model's too), not 0 to 1.  The title says what ``n``
    is (``size_label``).  Returns the path.

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
    key_lines = [f"{k}: {_learner_text(c)}: {_name_text(c.key)}  (accuracy {c.accuracy:.3f})"
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
        for rank, (c, x, y) in enumerate(zip(sky, cost, acc, strict=True)):
            ax.annotate(str(numbers[c.key]), (x, y), fontsize=8,
                        xytext=(4, -11) if rank % 2 == 0 else (-10, 5),
                        textcoords="offset points", annotation_clip=True)
        _accuracy_limits(ax, acc)  # every point drawn, the empty model's included
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
    fig.suptitle(f"skylines: {len(ranges)} ranges of sizes ({len(picks)} shown); "
                 f"n: {size_label}", fontsize=10)
    return _save(fig, np.array(axes), len(axes), path)


def _name_text(key: Any) -> str:
    """A candidate's name (:func:`polydom.curves.names.candidate_name`), cut to 40 characters
    for a legend; the empty model says so."""
    text = candidate_name(key)
    if text == EMPTY_NAME:
        return "{} (no features)"
    return text if len(text) <= 40 else text[:37] + "..."


def _learner_text(candidate: Any) -> str:
    return candidate.learner or "learner not recorded"


def _by_number(numbers: Mapping[Any, int], skylines: Sequence[Sequence[Any]],
               picks: Sequence[int]) -> list[Any]:
    """The candidates of the drawn ranges, once each, in the order of their numbers."""
    seen: dict[Any, Any] = {}
    for r in picks:
        for c in skylines[r]:
            seen.setdefault(c.key, c)
    return sorted(seen.values(), key=lambda c: numbers[c.key])


def plot_accuracy_vs_budget(
    rows: Sequence[Any], path: str | Path, scale: float = 1e3, unit: str = "ms",
    size_label: str = SIZE_LABEL,
) -> Path:
    """What budgeted serving delivered, per size (columns) against the budget (x axis).

    Three rows of panels: accuracy; the realized feature cost (mean measured time, log scale,
    with the budget drawn as the diagonal it should stay under; a zero time sits on the
    bottom edge); and the over-budget rate (fraction
    of items whose measured time exceeded the budget).  One line per method, each with its
    own marker and line style, so methods that coincide stay visible.  ``rows`` are
    :class:`polydom.serving.adherence.AdherenceRow`; budgets and times are multiplied by
    ``scale`` (1e3: seconds shown as ms).  The accuracy axis spans the accuracies drawn (not
    0 to 1); ``size_label`` says what the size ``n`` of each column is.  Returns the path.

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
        axes[0, col].set_title(f"n = {size:g}", fontsize=10)
        axes[2, col].set_xlabel(f"budget ({unit})", fontsize=9)
        _accuracy_limits(axes[0, col], [r.accuracy for r in rows if r.size == size])
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
    fig.suptitle(f"one column per size; n: {size_label}", fontsize=9)
    return _save(fig, axes, axes.size, path)


def plot_workload_plan(
    plan: Any,
    frontier: Sequence[tuple[float, Any, Any]],
    path: str | Path,
    sizes: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    unit: str = "cost",
) -> Path:
    """A workload plan: expected accuracy vs mean budget (plan and uniform), budget per size;
    budgets and costs in ``unit`` (the store's: the axes say it).

    ``plan`` is a :class:`polydom.serving.WorkloadPlan`; ``frontier`` holds ``(budget, plan,
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
    left.set_xlabel(f"mean cost per item, the budget ({unit})", fontsize=8)
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
    right.set_ylabel(f"per-item budget ({unit})", fontsize=8)
    right.legend(fontsize=7)
    fig.suptitle(f"{plan.method} plan: expected accuracy {plan.expected_accuracy:.4f}, "
                 f"expected cost {plan.expected_cost:.4g} {unit} per item", fontsize=9)
    return _save(fig, axes, 2, path)


def _budget_grid(index: Any, sizes: np.ndarray, points: int) -> np.ndarray:
    """Budgets on a log scale from half the cheapest non-zero cost at ``sizes`` to 1.5 times
    the dearest (the range where the answer changes)."""
    costs = np.array([[float(c.cost(n)) for n in sizes] for c in index.candidates])
    positive = costs[costs > 0]
    if positive.size == 0:
        return np.geomspace(1e-3, 1.0, points)
    lo, hi = 0.5 * positive.min(), 1.5 * positive.max()
    if hi <= lo:
        hi = 10.0 * lo
    return np.geomspace(lo, hi, points)


def _model_names(index: Any, positions: np.ndarray) -> dict[int, str]:
    """Legend text of every candidate position that occurs: key, learner, accuracy."""
    cands = index.candidates
    out = {}
    for p in sorted({int(p) for p in np.unique(positions) if p >= 0},
                    key=lambda p: cands[p].accuracy):
        c = cands[p]
        out[p] = f"{_name_text(c.key)} [{_learner_text(c)}] acc {c.accuracy:.3f}"
    return out


def plot_serving_map(
    index: Any,
    path: str | Path,
    sizes: np.ndarray | None = None,
    budgets: np.ndarray | None = None,
    scale: float = 1.0,
    unit: str = "cost",
    size_label: str = SIZE_LABEL,
    resolution: int = 240,
) -> Path:
    """Which model serves each (size, budget): the plane coloured by the index's answer.

    Sizes run over the index's domain (``resolution`` points; an unbounded domain is cut
    as in the other plots), budgets on a log scale over the costs that occur (or the given
    ``sizes`` / ``budgets``).  Each colour is one candidate, named in the legend with its
    learner and accuracy (legend ordered by accuracy); white is "nothing fits".  Every cell
    is ``index.lookup_many`` at its centre, so the map is exactly what lookups answer.
    Budgets are multiplied by ``scale`` for display.  Returns the path.

    Runtime complexity: O(resolution^2 * d log S) numpy work.
    """
    plt = _pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    n_min, n_max = (float(v) for v in index.table.domain)
    sizes = _grid(n_min, n_max, resolution) if sizes is None else np.asarray(sizes, float)
    budgets = _budget_grid(index, sizes, resolution) if budgets is None else np.asarray(
        budgets, float)
    positions = index.lookup_many(sizes[None, :], budgets[:, None])  # (budgets, sizes)
    names = _model_names(index, positions)
    order = list(names)
    colour_of = {p: i + 1 for i, p in enumerate(order)}
    cells = np.zeros(positions.shape, dtype=int)
    for p, c in colour_of.items():
        cells[positions == p] = c
    palette = plt.get_cmap("tab20" if len(order) > 10 else "tab10")
    colours = ["white"] + [palette(i % palette.N) for i in range(len(order))]
    fig, ax = plt.subplots(figsize=(9.5, 5.2))
    ax.pcolormesh(sizes, scale * budgets, cells, cmap=ListedColormap(colours),
                  vmin=-0.5, vmax=len(colours) - 0.5, shading="nearest")
    ax.set_yscale("log")
    _plain_ticks(ax.yaxis)
    ax.set_xlabel(size_label, fontsize=9)
    ax.set_ylabel(f"budget ({unit})", fontsize=9)
    ax.set_title(f"which model serves each (size, budget): build "
                 f"{index.info.get('build_id', '-')}, {len(order)} models", fontsize=10)
    handles = [Patch(facecolor=colours[colour_of[p]], edgecolor="gray", label=names[p])
               for p in reversed(order)]
    handles.append(Patch(facecolor="white", edgecolor="gray", label="nothing fits"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              title="model [learner] (most accurate first)", title_fontsize=8)
    return _save(fig, np.array([ax]), 1, path)


def plot_accuracy_at_sizes(
    index: Any,
    sizes: Sequence[float],
    path: str | Path,
    budgets: np.ndarray | None = None,
    realised: Sequence[tuple[float, float, float]] | None = None,
    scale: float = 1.0,
    unit: str = "cost",
    size_label: str = SIZE_LABEL,
) -> Path:
    """Accuracy against budget at chosen sizes of a stored index, with realised costs.

    Top: the accuracy of the model the index chooses at each budget, one step line per size
    (the accuracy axis spans the accuracies drawn).  Bottom: that model's predicted cost at
    the size (at most the budget, the diagonal), and, where ``realised`` holds observations
    ``(size, budget, measured cost)`` (served items, telemetry), the measured costs as
    points, each drawn with the line of the nearest size.  Returns the path.

    Runtime complexity: O(len(sizes) * budgets * d log S).
    """
    plt = _pyplot()
    sizes = [float(n) for n in sizes]
    if not sizes:
        raise InvalidArgumentError("sizes must not be empty")
    grid = _budget_grid(index, np.array(sizes), 200) if budgets is None else np.asarray(
        budgets, float)
    cands = index.candidates
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.0, 7.0), sharex=True)
    drawn = []
    for k, n in enumerate(sizes):
        positions = index.lookup_many(np.full(grid.shape, n), grid)
        acc = np.array([cands[p].accuracy if p >= 0 else np.nan for p in positions])
        cost = np.array([float(cands[p].cost(n)) if p >= 0 else np.nan for p in positions])
        colour = f"C{k % 10}"
        top.step(scale * grid, acc, where="post", color=colour, label=f"n = {n:g}")
        bottom.step(scale * grid, scale * cost, where="post", color=colour,
                    label=f"predicted, n = {n:g}")
        drawn.extend(acc[np.isfinite(acc)].tolist())
    if realised:
        obs = np.asarray(realised, dtype=float).reshape(-1, 3)
        nearest = np.abs(obs[:, :1] - np.array(sizes)[None, :]).argmin(axis=1)
        for k in sorted(set(nearest.tolist())):
            mine = obs[nearest == k]
            bottom.scatter(scale * mine[:, 1], scale * mine[:, 2], s=12, marker="x",
                           color=f"C{k % 10}", label=f"realised, n ~ {sizes[k]:g}")
    bottom.plot(scale * grid, scale * grid, color="gray", linewidth=0.8, label="budget")
    _accuracy_limits(top, drawn)
    top.set_ylabel("accuracy of the chosen model", fontsize=9)
    top.set_title(f"accuracy vs budget, build {index.info.get('build_id', '-')}; "
                  f"n: {size_label}", fontsize=9)
    top.legend(fontsize=8)
    bottom.set_ylabel(f"feature cost ({unit})", fontsize=9)
    bottom.set_xlabel(f"budget ({unit})", fontsize=9)
    for ax in (top, bottom):
        ax.set_xscale("log")
        ax.tick_params(labelsize=8)
    bottom.set_yscale("log", nonpositive="clip")
    _plain_ticks(bottom.xaxis)
    bottom.legend(fontsize=8, ncol=2)
    return _save(fig, np.array([top, bottom]), 2, path)


def _accuracy_limits(ax: Any, values: Sequence[float]) -> None:
    """Accuracy axis around the values drawn (not 0 to 1, which flattens the differences)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return
    lo, hi = min(finite), max(finite)
    pad = max(0.1 * (hi - lo), 0.005)
    ax.set_ylim(max(0.0, lo - pad), min(1.0, hi + pad) if hi < 1.0 else 1.0 + pad / 4)


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
