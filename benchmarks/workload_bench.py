"""Budget adherence on the digits image workload: cost fits by max/p90/mean, any-time serving,
Greedy-Cost.

Profiles the 12 image features on digits and the sample photographs at every side, fits
cost curves per statistic, trains one LogisticRegression per feature subset (every singleton
and pair plus the full set: a hand-built, exhaustive-over-those-subsets index; the lattice
explorer can replace it), then serves held-out digits at every side and budget and prints,
per method: accuracy, the fraction of predictions whose measured feature time exceeded the
budget, and the mean slack.  Writes PNG plots and the tables under benchmarks/results/.

    PYTHONPATH=. python benchmarks/workload_bench.py            # full (a few minutes)
    PYTHONPATH=. python benchmarks/workload_bench.py --quick    # about a minute
    PYTHONPATH=. python benchmarks/workload_bench.py --timer cpu  # CPU time, for busy boxes
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from polydom.adherence import adherence_table, measure_adherence
from polydom.image_workload import image_featurizer, load_digits_workload, profiling_images
from polydom.subset_index import all_subsets, index_over_subsets, subset_key, with_costs

RESULTS = Path(__file__).resolve().parent / "results"


def greedy_cost_chain(names, curves, size):
    """Greedy-Cost (spec 4.5, lambda = +inf): features by increasing cost at ``size``."""
    return sorted(names, key=lambda f: (float(curves[f](size)), names.index(f)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer digits, features, budgets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plots", type=Path, default=RESULTS, help="folder for PNG plots")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                        help="time features by wall clock (perf_counter) or by this process's "
                             "CPU time (process_time: blind to other processes on a busy box)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    t0 = time.perf_counter()

    sides = (8, 16, 32, 64, 128)
    if args.quick:
        names = ["thumbnail", "zones", "projections", "hog", "lbp", "spectrum", "harris"]
        n_digits, n_train, repeats = 300, 200, 3
        budgets = [5e-5, 2e-4, 1e-3, 5e-3]
    else:
        names = None
        n_digits, n_train, repeats = 600, 400, 5
        budgets = [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]
    fz = image_featurizer(names)
    fz.timer = time.process_time if args.timer == "cpu" else time.perf_counter
    names = fz.names

    # 1. profile and fit
    prof = fz.profile(profiling_images(sides=sides, digits_per_side=4, seed=args.seed),
                      repeats=repeats, statistic="max", degree=3)
    fits = {
        "max": prof,
        "max+cover": prof.refit(cover=True),
        "p90": prof.refit(statistic="p90"),
        "mean": prof.refit(statistic="mean"),
    }
    print(f"# cost fits (seconds, n = side; {repeats} repeats on {len(prof.sizes)} images; "
          f"{args.timer} time)")
    for label, p in fits.items():
        print(f"\n## {label}\n{p.table()}")

    # 2. train one model per subset (mean-fit costs; other fits re-cost the same models)
    wl = load_digits_workload(sides=sides, digits=n_digits, seed=args.seed, features=names)
    X = fz.transform(wl.items)
    train = np.isin(wl.digit, np.unique(wl.digit)[:n_train])
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    chain = greedy_cost_chain(names, fits["mean"].curves, float(np.median(sides)))
    prefixes = [frozenset(chain[: k + 1]) for k in range(len(chain))]
    subsets = all_subsets(names, 2) + [frozenset(names)] + prefixes
    t1 = time.perf_counter()
    base = index_over_subsets(X[train], wl.labels[train], fz.columns, fits["mean"].curves,
                              subsets, est, n_min=min(sides), n_max=max(sides),
                              groups=wl.digit[train], seed=args.seed)
    print(f"\n# {len(base.candidates)} models trained in {time.perf_counter() - t1:.1f} s; "
          f"Greedy-Cost chain at n={np.median(sides):g}: {' < '.join(chain)}")
    chain_keys = [subset_key(p, names) for p in prefixes]
    indexes = {f"poly-dom {label}": with_costs(base, p.curves) for label, p in fits.items()}
    indexes["any-time poly-dom mean"] = indexes["poly-dom mean"]
    indexes["any-time greedy-cost mean"] = with_costs(base, fits["mean"].curves, chain_keys)
    for label in ("poly-dom max", "poly-dom mean"):
        idx = indexes[label]
        print(f"\n## skylines, {label}: {len(idx.table.ranges)} ranges")
        for (lo, hi), sky in zip(idx.table.ranges, idx.table.skylines, strict=True):
            print(f"[{lo:7.2f}, {hi:7.2f}) " + ", ".join(
                f"{c.key} ({c.accuracy:.3f})" for c in sky))

    # 3. serve held-out digits
    held = np.flatnonzero(~train)
    items = [wl.items[i] for i in held]
    labels = wl.labels[held]
    rows = []
    for label, idx in indexes.items():
        rows += measure_adherence(idx, items, labels, budgets, fz,
                                  anytime=label.startswith("any-time"), method=label)
    print(f"\n# budgeted predictions on {len(held) // len(sides)} held-out digits per side "
          f"(times in ms)")
    print(adherence_table(rows))
    print("\n# summary over sizes and budgets")
    width = max(len(r.method) for r in rows)
    print(f"{'method':<{width}}  {'accuracy':>8}  {'over budget':>11}  {'mean slack ms':>13}")
    for label in indexes:
        mine = [r for r in rows if r.method == label]
        print(f"{label:<{width}}  {np.mean([r.accuracy for r in mine]):>8.3f}  "
              f"{np.mean([r.over_budget for r in mine]):>11.3f}  "
              f"{1e3 * np.mean([r.mean_slack for r in mine]):>13.3f}")
    plots(args.plots, fits, rows, budgets, sides, list(indexes))
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; plots in {args.plots}")


def plots(folder, fits, rows, budgets, sides, methods) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    prof = fits["max"]
    names = list(prof.curves)
    cols = 4
    fig, axes = plt.subplots((len(names) + cols - 1) // cols, cols, figsize=(14, 9),
                             squeeze=False)
    grid = np.linspace(min(sides), max(sides), 100)
    for ax, name in zip(axes.ravel(), names, strict=False):
        ax.scatter(np.repeat(prof.sizes, prof.timings[name].shape[1]),
                   1e3 * prof.timings[name].ravel(), s=4, alpha=0.3, color="gray")
        for label, p in fits.items():
            ax.plot(grid, 1e3 * p.curves[name](grid), label=label)
        ax.set_title(name)
        ax.set_xlabel("side n")
        ax.set_ylabel("ms")
    axes.ravel()[0].legend(fontsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(folder / "workload_costs.png", dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(sides), figsize=(4 * len(sides), 3.5), sharey=True)
    for ax, side in zip(axes, sides, strict=True):
        for m in methods:
            mine = [r for r in rows if r.method == m and r.size == side]
            ax.plot([1e3 * r.budget for r in mine], [r.accuracy for r in mine], marker="o",
                    label=m)
        ax.set_xscale("log")
        ax.set_title(f"side {side}")
        ax.set_xlabel("budget (ms)")
    axes[0].set_ylabel("accuracy")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(folder / "workload_accuracy.png", dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
