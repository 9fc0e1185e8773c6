"""Budgeted learners in the Poly-Dom index: accuracy vs per-row cost, alone and combined.

For each data set (breast cancer, digits with multi-resolution features, scikit-learn's
``make_classification``, a synthetic set where a cheap feature settles most rows, and the
image workload of ``polydom.app.workloads.images`` with measured costs),
with feature costs that grow with the item size ``n``, this script builds candidate
models from five sources:

* ``plain``: LightGBM without penalties, at several numbers of rounds;
* ``cegb``: CEGB with lazy (per-row) costs, over a grid of trade-offs and reference sizes
  (and, for multi-column feature groups, both group penalties ``full`` and ``shared``);
* ``greedymiser``: GreedyMiser mode (coupled costs, depth-4 trees, first order);
* ``lattice``: one LightGBM model per feature set (the lattice's feature-set models);
* ``combined``: all of the above in one index (``polydom.build_index(...,
  extra_candidates=...)`` when the ``lattice`` package is installed).

Candidates are scored on a validation split (accuracy, and the expected per-row cost curve
``sum_f P(f used) c_f(n)``); each source gets its own ``PolyDomIndex``.  For a grid of budgets at
two item sizes, every index picks its best model; the script reports that model's accuracy
and its measured mean per-row cost on the held-out test split, and where the combined index
beats each source alone.  Plots go to ``benchmarks/results/cegb_*.png`` and tables to
``benchmarks/results/cegb.md``.

Run:  PYTHONPATH=$PWD python benchmarks/cegb_bench.py            (about 5 minutes on 2 cores)
      PYTHONPATH=$PWD python benchmarks/cegb_bench.py --quick    (smoke run)
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.model_selection import train_test_split

import polydom
from learners import CEGBClassifier, GreedyMiserClassifier, sweep
from learners.budgeted.contract import row_costs

RESULTS = Path(__file__).resolve().parent / "results"
SOURCES = ["plain", "cegb", "greedymiser", "lattice", "combined"]
SEED = 0


# ----------------------------------------------------------------------------- data sets
def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    base = {"size": [0, 2, 3], "texture": [1], "smoothness": [4], "shape": [5, 6, 7],
            "symmetry": [8], "fractal": [9]}
    groups = {g: [c + k for c in cols for k in (0, 10, 20)] for g, cols in base.items()}
    costs = {"size": "1 + 0.002*n", "texture": "2 + 0.01*n", "smoothness": "1 + 0.005*n",
             "shape": "5 + 0.02*n", "symmetry": "2 + 0.01*n", "fractal": "4 + 0.03*n"}
    return X, y, groups, costs, (100.0, 10_000.0)


def digit_features(images: np.ndarray) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Multi-resolution features of 8x8 images: 4x4-pooled, 2x2-pooled, four quadrants."""
    n = len(images)
    pool4 = images.reshape(n, 2, 4, 2, 4).mean(axis=(2, 4)).reshape(n, -1)
    pool2 = images.reshape(n, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(n, -1)
    quads = [images[:, r:r + 4, c:c + 4].reshape(n, -1) for r in (0, 4) for c in (0, 4)]
    X = np.hstack([pool4, pool2, *quads])
    widths = {"pool4": 4, "pool2": 16, "q0": 16, "q1": 16, "q2": 16, "q3": 16}
    groups, start = {}, 0
    for g, w in widths.items():
        groups[g] = list(range(start, start + w))
        start += w
    return X, groups


def digits():
    d = load_digits()
    X, groups = digit_features(d.images)
    # pooled features read every pixel (cost ~ n); a quadrant reads a quarter of them
    costs = {"pool4": "2 + 0.011*n", "pool2": "1 + 0.012*n"}
    costs.update({f"q{i}": "3 + 0.0025*n" for i in range(4)})
    return X, d.target, groups, costs, (64.0, 4096.0)


def synthetic():
    X, y = make_classification(n_samples=3000, n_features=20, n_informative=5, n_redundant=5,
                               shuffle=False, random_state=SEED)
    groups = {f"i{k}": [k] for k in range(5)}
    groups["redundant"] = list(range(5, 10))
    groups["noise"] = list(range(10, 20))
    costs = {f"i{k}": f"{2 * (k + 1)} + {0.005 * (k + 1)}*n" for k in range(5)}
    costs["redundant"] = "1 + 0.002*n"
    costs["noise"] = "0.5 + 0.001*n"
    return X, y, groups, costs, (100.0, 10_000.0)


def minority():
    """A cheap feature settles most rows; two expensive ones are needed for a hard minority.

    ``glance`` decides the label when ``|x0| > 0.4`` (about 69% of rows); for the rest the
    label is ``x1 + x2 + 0.7 x3 > 0`` (two expensive scans and a mid-priced feature); 3% of
    labels are flipped.  A feature-set model pays for the scans on every row, a per-row
    (lazy) model only on the minority: the setting of the CEGB paper's Fig. 1b.
    """
    rng = np.random.default_rng(SEED)
    n = 3000
    X = rng.normal(size=(n, 10))
    hard = np.abs(X[:, 0]) <= 0.4
    y = np.where(hard, X[:, 1] + X[:, 2] + 0.7 * X[:, 3] > 0, X[:, 0] > 0).astype(int)
    flip = rng.random(n) < 0.03
    y[flip] = 1 - y[flip]
    groups = {"glance": [0], "scan_a": [1], "scan_b": [2], "mid": [3],
              "noise": list(range(4, 10))}
    costs = {"glance": "1 + 0.001*n", "scan_a": "10 + 0.02*n", "scan_b": "10 + 0.02*n",
             "mid": "4 + 0.005*n", "noise": "0.5 + 0.001*n"}
    return X, y, groups, costs, (100.0, 10_000.0)


def image_workload():
    """The image workload (``polydom.app.workloads.images``): digits rendered at sides 8..64, six
    light feature routines (77 columns), costs **measured** (p90 of timings on profiling
    images, fitted ``c_f(n)`` in milliseconds, n = side).  Split by digit: no digit is in
    two splits."""
    from polydom.app.workloads.images import load_digits_workload, profiling_images

    names = ["sample_stats", "histogram", "zones", "projections", "moments", "harris"]
    wl = load_digits_workload(sides=(8, 16, 32, 64), digits=300, features=names, seed=SEED)
    fz = wl.featurizer
    X = fz.transform(wl.items)
    prof = fz.profile(profiling_images(sides=(8, 16, 32, 64)), repeats=3, statistic="p90",
                      degree=2)
    costs = {g: 1000.0 * prof.curves[g] for g in names}  # milliseconds
    # costs are fractions of a millisecond: the useful trade-offs are larger than for the
    # other data sets (lambda * cost is compared with the per-row gain)
    extras = {"split_groups": wl.digit, "items": wl.items, "featurizer": fz,
              "cost_table": prof.table(), "lam": np.logspace(-2, 2, 9)}
    return X, wl.labels, dict(fz.columns), costs, (16.0, 64.0), extras


DATASETS = {"breast_cancer": breast_cancer, "digits": digits, "synthetic": synthetic,
            "minority": minority, "image_workload": image_workload}


# ----------------------------------------------------------------------------- sources
def lattice_candidates(X_tr, y_tr, X_va, y_va, groups, costs, estimator):
    """Feature-set models: ``lattice.explore`` when installed, else every subset (exhaustive).

    Returns the candidates, how they were made, the number of trainings, and a builder of
    the combined index: ``polydom.build_index(..., extra_candidates=...)`` reusing the
    exploration's expansions when the lattice is there, else ``PolyDomIndex.build``.
    """
    try:
        import lattice
        from learners import SklearnLearner
    except ImportError:
        lattice = None
    if lattice is not None and hasattr(polydom, "build_index"):
        learner = SklearnLearner(estimator, X_tr, y_tr, features=groups, cv=(X_va, y_va))
        cache = {}
        exp = lattice.explore(costs, learner, alpha=1.0, delta=0.0, cache=cache)

        def combined(extra):
            index = polydom.build_index(costs, learner, alpha=1.0, delta=0.0,
                                        extra_candidates=extra, cache=cache)
            return index.table, index.candidates

        return (list(exp.candidates), "`lattice.explore(alpha=1, delta=0)` with "
                "`learners.SklearnLearner` (held-out validation split); combined index by "
                "`polydom.build_index(..., extra_candidates=...)`", learner.calls_, combined)
    from sklearn.dummy import DummyClassifier

    names = list(groups)
    curves = {g: polydom.CostCurve.coerce(costs[g]) for g in names}
    cands = []
    for r in range(len(names) + 1):
        for subset in itertools.combinations(names, r):
            cols = [c for g in names if g in subset for c in groups[g]]
            model = clone(estimator) if cols else DummyClassifier(strategy="most_frequent")
            model.fit(X_tr[:, cols], y_tr)
            acc = float((model.predict(X_va[:, cols]) == y_va).mean())
            cost = polydom.CostCurve.total([curves[g] for g in subset] or
                                           [polydom.CostCurve([0.0])])
            cands.append(polydom.Candidate(("lattice", *subset), acc, cost, frozenset(subset),
                                           model))

    def combined(extra):
        pool = [*cands, *extra]
        return polydom.PolyDomIndex.build(pool), pool

    return (cands, "exhaustive enumeration of all feature sets (the lattice package had not "
            "landed); combined index by `PolyDomIndex.build`", len(cands), combined)


def plain_candidates(X_tr, y_tr, X_va, y_va, groups, costs, params, rounds):
    out = []
    for r in rounds:
        clf = CEGBClassifier(feature_groups=groups, tradeoff=0.0, **{**params,
                                                                     "n_estimators": r})
        clf.fit(X_tr, y_tr)
        out.append(clf.to_candidate(X_va, y_va, costs, f"plain(rounds={r})"))
    return out


# ----------------------------------------------------------------------------- evaluation
def predict(cand, X, groups):
    """Predict with a candidate's model the way polydom.Index.predict does."""
    cols = [c for g in groups if g in cand.features for c in groups[g]]
    return cand.payload.predict(X[:, cols])


def test_cost(cand, X, groups, costs, size):
    """Measured mean per-row cost of a candidate on X at ``size``."""
    model = cand.payload
    names = list(groups)
    if hasattr(model, "estimator") and hasattr(model.estimator, "feature_usage"):
        usage = model.estimator.feature_usage(X)
    else:
        usage = np.tile([g in cand.features for g in names], (len(X), 1))
    return float(row_costs(usage, costs, names, size).mean())


def key_text(key):
    """Readable candidate key: budgeted keys as they are, feature sets as lattice{a,b}."""
    if isinstance(key, str):
        return key
    names = [str(k) for k in key if k != "lattice"]
    return "lattice{" + ",".join(names) + "}"


def pareto(points):
    """Points (cost, acc) on the upper-left Pareto front, sorted by cost."""
    out, best = [], -1.0
    for c, a in sorted(points, key=lambda p: (p[0], -p[1])):
        if a > best:
            out.append((c, a))
            best = a
    return out


def run_dataset(name, quick):
    X, y, groups, costs, sizes, *rest = DATASETS[name]()
    extras = rest[0] if rest else {}
    if "split_groups" in extras:  # whole groups (one digit at every side) per split
        ids = np.unique(extras["split_groups"])
        ids = np.random.default_rng(SEED).permutation(ids)
        cut = [int(0.6 * len(ids)), int(0.8 * len(ids))]
        part = [np.isin(extras["split_groups"], p) for p in np.split(ids, cut)]
    else:
        idx = np.arange(len(y))
        tr, rest_idx = train_test_split(idx, test_size=0.4, stratify=y, random_state=SEED)
        va, te = train_test_split(rest_idx, test_size=0.5, stratify=y[rest_idx],
                                  random_state=SEED)
        part = [tr, va, te]
    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = [(X[p], y[p]) for p in part]
    te_index = np.flatnonzero(part[2]) if part[2].dtype == bool else part[2]
    multiclass = len(np.unique(y)) > 2
    rounds = 50 if multiclass else 100
    params = dict(n_estimators=rounds, num_leaves=15, learning_rate=0.1, random_state=SEED)
    lam = extras.get("lam", np.logspace(-5, -1, 9))
    lam = lam[::4] if quick else lam
    lam_gm = np.logspace(-2, 2, 3 if quick else 7)
    timings = {}
    cands = {}
    t = time.perf_counter()
    cands["plain"] = plain_candidates(X_tr, y_tr, X_va, y_va, groups, costs, params,
                                      (5, 20, rounds))
    timings["plain"] = time.perf_counter() - t
    t = time.perf_counter()
    # LightGBM charges per column; for multi-column groups both ways of putting a group's
    # cost on its columns are trained (see learners.budgeted.cegb), and the index keeps the better
    penalties = ["full", "shared"] if max(map(len, groups.values())) > 1 else ["full"]
    cands["cegb"] = []
    for gp in penalties:
        proto = CEGBClassifier(feature_groups=groups, cost_kind="lazy", group_penalty=gp,
                               **params)
        cands["cegb"] += sweep(proto, lam, X_tr, y_tr, costs, evaluation=(X_va, y_va),
                               sizes=sizes, key="cegb" if gp == "full" else "cegb-shared")
    timings["cegb"] = time.perf_counter() - t
    t = time.perf_counter()
    gm = GreedyMiserClassifier(feature_groups=groups, n_estimators=rounds, random_state=SEED)
    cands["greedymiser"] = sweep(gm, lam_gm, X_tr, y_tr, costs, evaluation=(X_va, y_va),
                                 sizes=sizes, key="greedymiser")
    timings["greedymiser"] = time.perf_counter() - t
    t = time.perf_counter()
    est = lgb.LGBMClassifier(n_estimators=rounds, num_leaves=15, random_state=SEED,
                             verbosity=-1, num_threads=1)
    cands["lattice"], lattice_how, lattice_fits, combine = lattice_candidates(
        X_tr, y_tr, X_va, y_va, groups, costs, est)
    timings["lattice"] = time.perf_counter() - t
    combined_table, cands["combined"] = combine([c for s in SOURCES[:-2] for c in cands[s]])

    # test accuracy and measured test cost of every candidate, at every size
    test_acc, test_cost_at = {}, {}
    for c in cands["combined"]:
        test_acc[c.key] = float((predict(c, X_te, groups) == y_te).mean())
        for s in sizes:
            test_cost_at[c.key, s] = test_cost(c, X_te, groups, costs, s)

    indexes = {s: polydom.PolyDomIndex.build(cands[s]) for s in SOURCES[:-1]}
    indexes["combined"] = combined_table
    full = polydom.Index(combined_table,
                         {g: polydom.CostCurve.coerce(c) for g, c in costs.items()},
                         columns=groups)
    lookups = {}
    for size in sizes:
        top = max(c.cost(size) for c in cands["combined"])
        positive = [c.cost(size) for c in cands["combined"] if c.cost(size) > 0]
        budgets = np.unique(np.concatenate([[0.0], np.geomspace(min(positive), top, 40)]))
        for src in SOURCES:
            for b in budgets:
                hit = indexes[src].lookup(size, b)
                lookups[src, size, b] = hit
        # Index.predict on the combined index equals the chosen candidate's predictions
        mid = budgets[len(budgets) // 2]
        hit = full.lookup(size, mid)
        if hit is not None:
            assert (full.predict(X_te, size, mid) == predict(hit.candidate, X_te, groups)).all()
        lookups["budgets", size] = budgets
    return dict(name=name, X_te=X_te, y_te=y_te, extras=extras, te_index=te_index,
                groups=groups, costs=costs, sizes=sizes,
                cands=cands, test_acc=test_acc, test_cost=test_cost_at, lookups=lookups,
                timings=timings, lattice_how=lattice_how, lattice_fits=lattice_fits,
                shape=X.shape, n_classes=len(np.unique(y)), lam=lam, lam_gm=lam_gm)


# ----------------------------------------------------------------------------- on demand
class DigitFeaturizer:
    """Computes one multi-resolution feature group of an 8x8 image (as ``digit_features``)."""

    def compute(self, image, name):
        if name == "pool4":
            return image.reshape(2, 4, 2, 4).mean(axis=(1, 3)).ravel()
        if name == "pool2":
            return image.reshape(4, 2, 4, 2).mean(axis=(1, 3)).ravel()
        k = int(name[1])
        r, c = 4 * (k // 2), 4 * (k % 2)
        return image[r:r + 4, c:c + 4].ravel()


class ColumnFeaturizer:
    """Reads a feature group's columns from a stored row (tabular data: no computation)."""

    def __init__(self, groups):
        self.groups = groups

    def compute(self, row, name):
        return row[self.groups[name]]


def on_demand(res):
    """Single-item ``predict_item`` with a frugal CEGB model of the data set.

    The model is the cheapest CEGB candidate (expected cost at the larger size) whose
    validation accuracy is within 0.02 of the best CEGB candidate's.
    """
    cegb = res["cands"]["cegb"]
    top = max(c.accuracy for c in cegb)
    size = res["sizes"][-1]
    best = min((c for c in cegb if c.accuracy >= top - 0.02), key=lambda c: c.cost(size))
    model = best.payload.estimator
    groups = res["groups"]
    if res["name"] == "digits":
        images = load_digits().images[-200:]
        X_items, _ = digit_features(images)
        items, feat = list(images), DigitFeaturizer()
    elif "featurizer" in res["extras"]:  # real routines on raw items, timed by the featurizer
        feat = res["extras"]["featurizer"]
        items = [res["extras"]["items"][i] for i in res["te_index"][:200]]
        X_items = res["X_te"][:200]
    else:
        X_items = res["X_te"][:200]
        items, feat = list(X_items), ColumnFeaturizer(groups)
    t = time.perf_counter()
    outs = [model.predict_item(it, feat) for it in items]
    wall = (time.perf_counter() - t) / len(items)
    t = time.perf_counter()
    for it in items:
        for g in groups:
            feat.compute(it, g)
    all_time = (time.perf_counter() - t) / len(items)
    all_cost = sum(polydom.CostCurve.coerce(c)(size) for c in res["costs"].values())
    return dict(name=res["name"], key=best.key, acc=best.accuracy, n_items=len(items),
                same=np.array_equal([o.label for o in outs], model.predict(X_items)),
                n_feats=float(np.mean([len(o.features) for o in outs])), n_groups=len(groups),
                feat_time=float(np.mean([o.total_seconds for o in outs])), all_time=all_time,
                wall=wall, size=size, cost=best.cost(size), all_cost=all_cost)


# ----------------------------------------------------------------------------- report
def report(results, od, argv, total):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = ["# CEGB / GreedyMiser in the Poly-Dom index", "",
             "Command: `PYTHONPATH=$PWD python benchmarks/cegb_bench.py"
             + "".join(" " + a for a in argv) + "`",
             "", f"Total wall time: {total:.0f} s (2 CPU cores, LightGBM 1 thread, seed {SEED}).",
             "", "Split 60/20/20 (train / validation / test), stratified. Candidates are scored "
             "on validation (accuracy; expected per-row cost `sum_f P(f used) c_f(n)`); the "
             "numbers below are on the **test** split: the accuracy of the model an index "
             "picks and its measured mean per-row cost. Budgets are compared with the "
             "expected (mean) cost.", ""]
    colors = dict(plain="tab:gray", cegb="tab:blue", greedymiser="tab:orange",
                  lattice="tab:green", combined="tab:red")
    for res in results:
        name, sizes = res["name"], res["sizes"]
        lines += [f"## {name}", "",
                  f"{res['shape'][0]} rows x {res['shape'][1]} columns, {res['n_classes']} "
                  f"classes; features (groups) and costs: "
                  + ", ".join(f"`{g}` ({len(c)} cols): `{res['costs'][g]}`"
                              for g, c in res["groups"].items()), "",
                  f"Lattice models: {res['lattice_how']} ({res['lattice_fits']} fits). "
                  f"CEGB tradeoffs: {', '.join(f'{v:g}' for v in res['lam'])}; GreedyMiser "
                  f"tradeoffs: {', '.join(f'{v:g}' for v in res['lam_gm'])}; reference sizes "
                  f"{', '.join(f'{s:g}' for s in sizes)}.", "",
                  *(["Measured costs (ms, n = side; `Featurizer.profile`, p90, degree 2):", "",
                     "```", res["extras"]["cost_table"], "```", ""]
                    if "cost_table" in res["extras"] else []),
                  "| source | candidates | on skyline (any size) | fit time (s) |",
                  "|---|---|---|---|"]
        for src in SOURCES:
            cs = res["cands"][src]
            idx = polydom.PolyDomIndex.build(cs)
            on = len({p for s in idx.skyline_positions for p in s})
            ft = sum(res["timings"].get(s, 0.0) for s in SOURCES[:-1]) if src == "combined" \
                else res["timings"][src]
            lines.append(f"| {src} | {len(cs)} | {on} | {ft:.1f} |")
        lines.append("")
        fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
        # accuracy vs measured mean test cost: every candidate, Pareto fronts
        ax = axes[0]
        s0 = sizes[0]
        for src in SOURCES[:-1]:
            pts = [(res["test_cost"][c.key, s0], res["test_acc"][c.key])
                   for c in res["cands"][src]]
            ax.scatter(*zip(*pts, strict=True), s=10, alpha=0.4, color=colors[src])
            front = pareto(pts)
            ax.step(*zip(*front, strict=True), where="post", color=colors[src], label=src)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel(f"mean per-row cost on test at n={s0:g}")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{name}: candidates (Pareto fronts)")
        ax.legend(fontsize=8)
        for k, size in enumerate(sizes):
            ax = axes[k + 1]
            budgets = res["lookups"]["budgets", size]
            lines += [f"### {name}: index lookups at n = {size:g}", "",
                      "Test accuracy (and measured mean test cost) of the model each index "
                      "returns for the budget; `-` = nothing fits.", "",
                      "| budget | " + " | ".join(SOURCES) + " | combined picks |",
                      "|---|" + "---|" * (len(SOURCES) + 1)]
            curves = {src: [] for src in SOURCES}
            for b in budgets:
                row = []
                for src in SOURCES:
                    hit = res["lookups"][src, size, b]
                    acc = None if hit is None else res["test_acc"][hit.key]
                    curves[src].append(np.nan if acc is None else acc)
                    row.append("-" if hit is None else
                               f"{acc:.3f} ({res['test_cost'][hit.key, size]:.1f})")
                hit = res["lookups"]["combined", size, b]
                pick = "-" if hit is None else key_text(hit.key)
                lines.append(f"| {b:.2f} | " + " | ".join(row) + f" | {pick} |")
            lines.append("")
            # where the combined index beats each source alone
            comb = np.array(curves["combined"])
            lines += [f"Combined vs each source alone at n = {size:g}, over the "
                      f"{len(budgets)} budgets. *only combined*: the source alone has no "
                      "model within the budget. Where both answer: test accuracy better / "
                      "equal / worse, and the mean test gain; in brackets, how often the "
                      "pick's validation accuracy (what the index maximises) is higher.", "",
                      "| source | only combined | better [val] | equal | worse | mean gain |",
                      "|---|---|---|---|---|---|"]
            for src in SOURCES[:-1]:
                other = np.array(curves[src])
                both = ~np.isnan(comb) & ~np.isnan(other)
                only = int((~np.isnan(comb) & np.isnan(other)).sum())
                better = int(((comb > other + 1e-12) & both).sum())
                worse = int(((comb < other - 1e-12) & both).sum())
                equal = int(both.sum()) - better - worse
                vb = sum(
                    1 for b in budgets
                    if res["lookups"]["combined", size, b] is not None
                    and res["lookups"][src, size, b] is not None
                    and res["lookups"]["combined", size, b].accuracy
                    > res["lookups"][src, size, b].accuracy + 1e-12)
                gain = float(np.mean(comb[both] - other[both])) if both.any() else float("nan")
                lines.append(f"| {src} | {only} | {better} [{vb}] | {equal} | {worse} | "
                             f"{gain:+.4f} |")
            lines.append("")
            for src in SOURCES:
                ax.step(budgets, curves[src], where="post", color=colors[src], label=src,
                        lw=2.5 if src == "combined" else 1.2,
                        ls="-" if src == "combined" else "--")
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlabel(f"budget at n={size:g}")
            ax.set_ylabel("test accuracy of the returned model")
            ax.set_title(f"{name}: lookup(n={size:g}, budget)")
            ax.legend(fontsize=8)
        fig.tight_layout()
        png = RESULTS / f"cegb_{name}.png"
        fig.savefig(png, dpi=110)
        plt.close(fig)
        lines += [f"![{name}](cegb_{name}.png)", ""]
    lines += ["## On-demand prediction (`predict_item`)", "",
              "Per data set, the cheapest CEGB candidate (expected cost at the larger size) "
              "within 0.02 of the best CEGB validation accuracy; `predict_item` walks its trees "
              "for one item and computes a feature group only when a split on the item's path "
              "needs it. Digits: the last 200 images, the featurizer computes the pooled / "
              "quadrant features from the image; image_workload: 200 raw test images, "
              "`polydom.Featurizer` runs the real routines and times them; tabular sets: 200 "
              "test rows, the featurizer reads the group's columns.", "",
              "| data set | model | val acc | equal to batch `predict` | groups computed per item "
              "| expected cost at n | all groups' cost at n | feature time / item (us) | "
              "all groups / item (us) | predict_item / item (ms) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for o in od:
        lines.append(f"| {o['name']} | `{o['key']}` | {o['acc']:.3f} | {o['same']} | "
                     f"{o['n_feats']:.2f} of {o['n_groups']} | {o['cost']:.1f} (n={o['size']:g}) "
                     f"| {o['all_cost']:.1f} | {1e6 * o['feat_time']:.1f} | "
                     f"{1e6 * o['all_time']:.1f} | {1e3 * o['wall']:.2f} |")
    lines.append("")
    (RESULTS / "cegb.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grids (smoke run)")
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    args = ap.parse_args(argv)
    t = time.perf_counter()
    results = []
    for name in args.datasets:
        t0 = time.perf_counter()
        results.append(run_dataset(name, args.quick))
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    od = [on_demand(res) for res in results]
    report(results, od, argv, time.perf_counter() - t)


if __name__ == "__main__":
    main(sys.argv[1:])
