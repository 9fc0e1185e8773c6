"""Budget adherence on the digits image workload: cost fits by max/p90/mean, any-time serving,
Greedy-Cost.

Profiles the 12 image features on digits and the sample photographs at every side, fits
cost curves per statistic, explores the feature-set lattice with a LogisticRegression pipeline
(polydom.build_index + learners.SklearnLearner, one index per cost fit over one shared
expansion cache), then serves held-out digits at every side and budget and prints,
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

from learners import SklearnLearner
from polydom import build_index
from polydom.app.plots import plot_skylines
from polydom.app.workloads.images import image_featurizer, load_digits_workload, profiling_images
from polydom.pipeline.subsets import index_over_subsets
from polydom.serving.adherence import adherence_table, measure_adherence
from polydom.serving.featurizer import CLOCKS

RESULTS = Path(__file__).resolve().parent / "results"


def greedy_cost_chain(names, curves, size):
    """Greedy-Cost (spec 4.5, lambda = +inf): features by increasing cost at ``size``."""
    return sorted(names, key=lambda f: (float(curves[f](size)), names.index(f)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer digits, features, budgets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=1.0,
                        help="approximation factor of the lattice (default 1.0: exact)")
    parser.add_argument("--plots", type=Path, default=RESULTS, help="folder for PNG plots")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                        help="time features by wall clock (perf_counter) or by the CPU time "
                             "of the computing thread (thread_time: blind to other processes "
                             "and threads)")
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
    fz.timer = CLOCKS[args.timer]
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

    # 2. the lattice (polydom.build_index with SklearnLearner), one index per cost fit
    #    sharing one expansion cache (cost_pruning off: the same sets are trained whatever
    #    the fit, so every fit's index is over the same models); every training digit appears
    #    once, rendered at one side drawn from all sides (features are size-normalised), so
    #    the cross-validation folds never hold two renderings of one digit.
    wl = load_digits_workload(sides=sides, digits=n_digits, seed=args.seed, features=names)
    rng = np.random.default_rng(args.seed)
    ids = rng.permutation(np.unique(wl.digit))
    train_ids = ids[:n_train]
    side_of = dict(zip(train_ids.tolist(), rng.choice(sides, size=n_train).tolist(),
                       strict=True))
    train_rows = [i for i, (d, s) in enumerate(zip(wl.digit, wl.sizes, strict=True))
                  if side_of.get(int(d)) == s]
    Xtr = fz.transform([wl.items[i] for i in train_rows])
    ytr = wl.labels[train_rows]
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    learner = SklearnLearner(est, Xtr, ytr, features=fz.columns, cv=3)
    cache: dict = {}
    t1 = time.perf_counter()
    indexes = {}
    for label, p in fits.items():
        indexes[f"poly-dom {label}"] = build_index(
            p.curves, learner, alpha=args.alpha, n_min=min(sides), n_max=max(sides),
            cache=cache)
    info = indexes["poly-dom mean"].info
    print(f"\n# lattice (alpha={args.alpha}): {info['expansions']} of {info['lattice_size']} "
          f"feature sets trained ({len(cache)} models, 3-fold CV on {len(train_rows)} digits, "
          f"one rendering each) in {time.perf_counter() - t1:.1f} s; candidates per fit: "
          + ", ".join(f"{k.split()[-1]} {v.info['candidates']}" for k, v in indexes.items()))
    chain = greedy_cost_chain(names, fits["mean"].curves, float(np.median(sides)))
    prefixes = [frozenset(chain[: k + 1]) for k in range(len(chain))]
    greedy = index_over_subsets(Xtr, ytr, fz.columns, fits["mean"].curves, prefixes, est,
                                n_min=min(sides), n_max=max(sides),
                                groups=wl.digit[train_rows], seed=args.seed)
    print(f"# Greedy-Cost chain at n={np.median(sides):g}: {' < '.join(chain)} "
          f"({len(prefixes)} prefix models, held-out split)")
    indexes["any-time poly-dom mean"] = indexes["poly-dom mean"]
    indexes["any-time greedy-cost mean"] = greedy
    for label in ("poly-dom max", "poly-dom mean"):
        idx = indexes[label]
        print(f"\n## skylines, {label}: {len(idx.table.ranges)} ranges")
        for (lo, hi), sky in zip(idx.table.ranges, idx.table.skylines, strict=True):
            print(f"[{lo:7.2f}, {hi:7.2f}) " + ", ".join(
                f"{'+'.join(sorted(c.features)) or '{}'} ({c.accuracy:.3f})" for c in sky))

    # 3. serve held-out digits
    held = np.flatnonzero(np.isin(wl.digit, ids[n_train:]))
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
    for label in ("poly-dom max", "poly-dom mean"):
        plot_skylines(indexes[label], args.plots / f"workload_skylines_{label.split()[-1]}.png",
                      scale=1e3, unit="cost at n (ms)")
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
