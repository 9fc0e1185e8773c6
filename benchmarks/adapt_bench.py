"""ADAPT (Nan and Saligrama, NIPS 2017) against its baselines, alone and inside the index.

Runs the spec's reproduction plan (``specs/adapt.md`` section 5):

* **R1** Synthetic-1 (Fig. 2): no feature costs; ADAPT-LIN and ADAPT-GBRT in front of an
  RBF-SVM; accuracy and fraction sent to the SVM per ``p_full``; decision-region plots.
* **R2** Synthetic-2 (Fig. 3): unit costs; ADAPT-LIN vs the paper's L1 baseline; the cheapest
  configuration within 1 point of the SVM's accuracy; decision-region plots.
* **R3** digits (binarised 0-4 vs 5-9), the 64 pixels in 8 image rows of cost 8 each;
  **R4** breast cancer, per-column costs (10 "mean" columns cost 1, 10 "error" 5, 10
  "worst" 20), 5 random splits;  **R5** (``--r5``, opt-in) a MiniBooNE-sized
  ``make_classification`` set (20 000 x 50, unit costs).
  Each: the high-cost model (a random forest, path-based cost), ADAPT-LIN, ADAPT-GBRT, the L1
  baseline, GreedyMiser, CEGB and the lattice index over feature groups; accuracy-vs-cost
  curves (validation frontier, test points); the index with and without ADAPT candidates.

Selection follows the paper: every configuration is scored on a validation split, the
validation efficient frontier is kept, and test accuracy/cost of those points are reported.
Costs are mean per-row feature costs on the test rows (each feature paid once per row).

Run:  PYTHONPATH=$PWD python benchmarks/adapt_bench.py            (R1-R4)
      PYTHONPATH=$PWD python benchmarks/adapt_bench.py --r5       (adds R5)
      PYTHONPATH=$PWD python benchmarks/adapt_bench.py --quick    (smoke run)
Tables go to stdout and ``benchmarks/results/adapt_<parts>.md``, plots to
``benchmarks/results/adapt_*.png``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import polydom  # noqa: E402
from learners import (  # noqa: E402
    AdaptClassifier,
    CEGBClassifier,
    GreedyMiserClassifier,
    SklearnLearner,
    sweep,  # noqa: E402
)
from learners.budgeted.adapt import sweep_adapt  # noqa: E402
from learners.budgeted.adapt.high_cost import HighCostModel  # noqa: E402
from learners.budgeted.contract import group_usage  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
THRESHOLDS = (0.0, "quantile")  # the paper's rule g > 0, and g above its (1 - p_full) quantile
OUT: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    OUT.append(line)


@dataclass
class Point:
    method: str
    params: str
    val_acc: float
    val_cost: float
    test_acc: float
    test_cost: float
    routed: float = float("nan")


def frontier(points: list[Point]) -> list[Point]:
    """Validation efficient frontier (by validation cost, strictly rising validation acc)."""
    out: list[Point] = []
    for p in sorted(points, key=lambda p: (p.val_cost, -p.val_acc)):
        if not out or p.val_acc > out[-1].val_acc:
            out.append(p)
    return out


# ----------------------------------------------------------------------------- data
def synthetic_1(n, rng):
    X = rng.uniform(-3, 3, size=(n, 2))
    right = np.sign(X[:, 1] - 0.3 * X[:, 0])
    left = np.sign(np.sin(2 * X[:, 0]) * np.sin(2 * X[:, 1]))
    return X, (np.where(X[:, 0] > 0, right, left) > 0).astype(int)


def synthetic_2(n, rng):
    k = n // 4
    c1 = rng.normal([-4, 2], 0.25, (k, 2))
    centers = np.array([(1, 1.5), (2, 1.5), (1, 2.5), (2, 2.5)])
    pick = rng.integers(0, 4, k)
    c2 = centers[pick] + rng.normal(0, 0.15, (k, 2))
    c3 = rng.normal([0, -1], 0.25, (k, 2))
    c4 = rng.normal([0, -3], 0.25, (k, 2))
    X = np.vstack([c1, c2, c3, c4])
    y = np.concatenate([np.ones(k), np.array([1, 0, 0, 1])[pick], np.zeros(k), np.ones(k)])
    perm = rng.permutation(len(y))
    return X[perm], y[perm].astype(int)


def svm():
    return CalibratedClassifierCV(SVC(C=10, gamma=3.0), ensemble=False)


# ----------------------------------------------------------------------------- baselines
def l1_baseline(X_tr, y_tr, X_va, y_va, X_te, y_te, groups, costs, f0, Cs, thresholds):
    """The paper's L1 baseline (section 5): L1-LR selects features; f1 = LR on them; g = LR on
    them predicting whether f1 is right; rows where g's P(right) < threshold go to f0."""
    mu, sd = X_tr.mean(0), X_tr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    names = list(groups)
    cost_vec = np.array([costs[n] for n in names])
    hpc = HighCostModel(f0, range(X_tr.shape[1]), X_tr.shape[1])
    hpc_use = {id(X): group_usage(hpc.column_usage(X), groups) for X in (X_va, X_te)}
    f0_pred = {id(X): f0.predict(X) for X in (X_va, X_te)}
    out = []
    for C in Cs:
        sel = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C)
        sel.fit((X_tr - mu) / sd, y_tr)
        chosen = [a for a, cols in enumerate(groups.values()) if np.any(sel.coef_[0][cols])]
        cols = [c for a in chosen for c in list(groups.values())[a]]
        used = np.zeros(len(names), dtype=bool)
        used[chosen] = True
        if not cols:
            continue
        f1 = LogisticRegression(max_iter=1000).fit((X_tr[:, cols] - mu[cols]) / sd[cols], y_tr)
        right = f1.predict((X_tr[:, cols] - mu[cols]) / sd[cols]) == y_tr
        gate = None
        if 0 < right.mean() < 1:
            gate = LogisticRegression(max_iter=1000)
            gate.fit((X_tr[:, cols] - mu[cols]) / sd[cols], right)
        for t in thresholds:
            scores = []
            for X, y in ((X_va, y_va), (X_te, y_te)):
                Z = (X[:, cols] - mu[cols]) / sd[cols]
                p_right = gate.predict_proba(Z)[:, 1] if gate is not None else np.ones(len(X))
                to_f0 = p_right < t
                pred = np.where(to_f0, f0_pred[id(X)], f1.predict(Z))
                usage = np.where(to_f0[:, None], hpc_use[id(X)] | used, used[None, :])
                scores.append(((pred == y).mean(), (usage @ cost_vec).mean(), to_f0.mean()))
            (va, vc, _), (ta, tc, rt) = scores
            out.append(Point("L1 baseline", f"C={C:g}, t={t:g}", va, vc, ta, tc, rt))
    return out


def adapt_points(name, proto, grid, X_tr, y_tr, X_va, y_va, X_te, y_te, thresholds=(0.0,)):
    """ADAPT over ``grid`` (dicts of tradeoff, p_full), each also with every routing
    threshold (``"quantile"``: route a p_full fraction of the validation rows)."""
    out = []
    proto = proto.__sklearn_clone__()
    proto.set_params(high_cost_proba=proto.high_cost_train_proba(X_tr, y_tr))  # OOF once
    for params in grid:
        for sp in sweep_adapt(proto, [params["tradeoff"]], [params["p_full"]], X_tr, y_tr,
                              X_va, y_va, thresholds=thresholds):
            m = sp.model
            text = f"tradeoff={sp.tradeoff:g}, p_full={sp.p_full:g}, threshold={sp.threshold:.3g}"
            out.append(Point(name, text, sp.accuracy, sp.cost, (m.predict(X_te) == y_te).mean(),
                             m.prediction_cost(X_te).mean(), m.routes(X_te).mean()))
    return out


def boosted_points(name, cls, tradeoffs, groups, costs, X_tr, y_tr, X_va, y_va, X_te, y_te,
                   **kw):
    out = []
    for t in tradeoffs:
        m = cls(feature_costs=costs, feature_groups=groups, tradeoff=t, random_state=0, **kw)
        m.fit(X_tr, y_tr)
        out.append(
            Point(name, f"tradeoff={t:g}", (m.predict(X_va) == y_va).mean(),
                  m.prediction_cost(X_va).mean(), (m.predict(X_te) == y_te).mean(),
                  m.prediction_cost(X_te).mean())
        )
    return out


def f0_point(f0, groups, costs, X_va, y_va, X_te, y_te):
    hpc = HighCostModel(f0, range(X_va.shape[1]), X_va.shape[1])
    cv = np.array([costs[n] for n in groups])
    c = [(group_usage(hpc.column_usage(X), groups) @ cv).mean() for X in (X_va, X_te)]
    return Point("high-cost model (RF)", "", (f0.predict(X_va) == y_va).mean(), c[0],
                 (f0.predict(X_te) == y_te).mean(), c[1], 1.0)


# ----------------------------------------------------------------------------- plots
def regions(ax, model, X, y, lim, title, f0=None):
    xs = np.linspace(lim[0], lim[1], 300)
    ys = np.linspace(lim[2], lim[3], 300)
    gx, gy = np.meshgrid(xs, ys)
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    if f0 is not None:
        ax.contourf(gx, gy, f0.predict_proba(grid)[:, 1].reshape(gx.shape), levels=[0, .5, 1],
                    colors=["#cfe0f5", "#f5d0cf"])
    else:
        routed = model.routes(grid).reshape(gx.shape)
        lpc = (model.lpc_score(grid) > 0).reshape(gx.shape)
        ax.contourf(gx, gy, np.where(routed, 2, lpc), levels=[-0.5, 0.5, 1.5, 2.5],
                    colors=["#cfe0f5", "#f5d0cf", "#efe2b8"])
    sub = np.random.default_rng(0).choice(len(y), min(600, len(y)), replace=False)
    ax.scatter(X[sub, 0], X[sub, 1], c=np.where(y[sub] > 0, "tab:red", "tab:blue"), s=4)
    ax.set_title(title, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def curves_plot(path, title, groups_of_points, f0):
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = {"ADAPT-LIN": "o-", "ADAPT-GBRT": "s-", "L1 baseline": "^--",
              "GreedyMiser": "v--", "CEGB": "d--", "lattice index": "x:",
              "index + ADAPT": "+-"}
    for name, pts in groups_of_points.items():
        if not pts:
            continue
        pts = sorted(pts, key=lambda p: p.test_cost)
        ax.plot([p.test_cost for p in pts], [p.test_acc for p in pts], styles.get(name, ".-"),
                label=name, markersize=4)
    ax.plot([f0.test_cost], [f0.test_acc], "k*", markersize=12, label=f0.method)
    ax.set_xlabel("average feature cost per test row")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- R1, R2
def run_r1(quick):
    say("## R1  Synthetic-1 (no feature costs; f0 = RBF-SVM, C=10)")
    rng = np.random.default_rng(0)
    n = 600 if quick else 2000
    X, y = synthetic_1(n, rng)
    X_te, y_te = synthetic_1(2000, rng)
    f0 = CalibratedClassifierCV(SVC(C=10), ensemble=False).fit(X, y)
    f0_acc = (f0.predict(X_te) == y_te).mean()
    say(f"f0 test accuracy {f0_acc:.3f}; {n} training rows, 2000 test rows")
    say("| method | p_full | test accuracy | sent to f0 | low-cost model alone |")
    say("|---|---:|---:|---:|---:|")
    shown = {}
    for method, kw in (("lin", dict(n_starts=12, max_iter=10)),
                       ("gbrt", dict(n_estimators=50, max_iter=10))):
        for p_full in (0.4, 0.5, 0.6):
            m = AdaptClassifier(f0, method=method, p_full=p_full, tradeoff=0.0, **kw).fit(X, y)
            acc = (m.predict(X_te) == y_te).mean()
            lpc = ((m.lpc_score(X_te) > 0) == y_te).mean()
            say(f"| ADAPT-{method.upper()} | {p_full} | {acc:.3f} | {m.routes(X_te).mean():.2f} "
                f"| {lpc:.3f} |")
            if p_full == 0.6:
                shown[method] = (m, acc)
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    regions(axes[0], None, X_te, y_te, (-3, 3, -3, 3), f"f0 (RBF-SVM), acc {f0_acc:.3f}", f0)
    for ax, method in zip(axes[1:], ("lin", "gbrt"), strict=True):
        m, acc = shown[method]
        regions(ax, m, X_te, y_te, (-3, 3, -3, 3),
                f"ADAPT-{method.upper()} p_full=0.6: acc {acc:.3f}, "
                f"{m.routes(X_te).mean():.0%} to f0 (beige)")
    fig.tight_layout()
    fig.savefig(RESULTS / "adapt_r1_synthetic1.png", dpi=110)
    plt.close(fig)
    say("Plot: results/adapt_r1_synthetic1.png (beige: sent to f0; blue/red: low-cost model)")
    say()


def run_r2(quick):
    say("## R2  Synthetic-2 (unit costs; f0 = RBF-SVM C=10 gamma=3, uses both features)")
    rng = np.random.default_rng(0)
    X, y = synthetic_2(800, rng)
    X_va, y_va = synthetic_2(800, rng)
    X_te, y_te = synthetic_2(2000, rng)
    groups = {"x0": [0], "x1": [1]}
    costs = {"x0": 1.0, "x1": 1.0}
    f0 = svm().fit(X, y)
    f0p = Point("high-cost model (SVM)", "", (f0.predict(X_va) == y_va).mean(), 2.0,
                (f0.predict(X_te) == y_te).mean(), 2.0, 1.0)
    say(f"f0 test accuracy {f0p.test_acc:.4f} at cost 2")
    gammas = (0.01, 0.03) if quick else (0.003, 0.01, 0.02, 0.03, 0.05)
    p_fulls = (0.5,) if quick else (0.3, 0.4, 0.5, 0.6)
    proto = AdaptClassifier(f0, method="lin", n_starts=12, feature_costs=costs)
    grid = [dict(tradeoff=g, p_full=p) for g in gammas for p in p_fulls]
    pts = {"ADAPT-LIN": adapt_points("ADAPT-LIN", proto, grid, X, y, X_va, y_va, X_te, y_te)}
    pts["L1 baseline"] = l1_baseline(X, y, X_va, y_va, X_te, y_te, groups, costs, f0,
                                     (0.001, 0.003, 0.01, 0.03, 0.1, 1.0),
                                     (0.5, 0.7, 0.9, 0.95, 0.99))
    say("Cheapest validation-frontier point within 0.01 of f0's validation accuracy:")
    say("| method | configuration | test accuracy | test cost | sent to f0 |")
    say("|---|---|---:|---:|---:|")
    best = {}
    for name, ps in pts.items():
        ok = [p for p in frontier(ps) if p.val_acc >= f0p.val_acc - 0.01]
        if ok:
            p = ok[0]
            best[name] = p
            say(f"| {name} | {p.params} | {p.test_acc:.4f} | {p.test_cost:.3f} | "
                f"{p.routed:.2f} |")
        else:
            say(f"| {name} | none within 0.01 | | | |")
    curves_plot(RESULTS / "adapt_r2_curves.png", "Synthetic-2: accuracy vs cost",
                {k: frontier(v) for k, v in pts.items()}, f0p)
    if "ADAPT-LIN" in best:
        p = best["ADAPT-LIN"]
        kw = dict(tradeoff=float(p.params.split(",")[0].split("=")[1]),
                  p_full=float(p.params.split(",")[1].split("=")[1]))
        m = proto.__sklearn_clone__().set_params(**kw).fit(X, y)
        fig, axes = plt.subplots(1, 2, figsize=(7, 3.4))
        regions(axes[0], None, X_te, y_te, (-5.5, 3.5, -4.5, 4), "f0 (RBF-SVM)", f0)
        regions(axes[1], m, X_te, y_te, (-5.5, 3.5, -4.5, 4),
                f"ADAPT-LIN ({p.params}): acc {p.test_acc:.3f}, cost {p.test_cost:.2f}")
        fig.tight_layout()
        fig.savefig(RESULTS / "adapt_r2_synthetic2.png", dpi=110)
        plt.close(fig)
    say("Plots: results/adapt_r2_curves.png, results/adapt_r2_synthetic2.png")
    say()


# ----------------------------------------------------------------------------- R3-R5
def index_points(name, index, groups, costs, X_te, y_te, budgets):
    """Lookups of an index over budgets (size 1): validation accuracy and test numbers."""
    out = []
    names = list(groups)
    cv = np.array([costs[n] for n in names])
    for b in budgets:
        hit = index.lookup(1.0, float(b))
        if hit is None:
            continue
        cols = index.model_columns(hit.features)
        pred = hit.model.predict(X_te[:, cols])
        inner = getattr(hit.model, "estimator", None)
        if inner is not None and hasattr(inner, "feature_usage"):
            full = np.full((len(X_te), hit.model.n_columns), np.nan)
            full[:, hit.model.columns] = X_te[:, cols]
            usage = inner.feature_usage(full)
        else:
            usage = np.tile([n in hit.features for n in names], (len(X_te), 1))
        out.append(Point(name, str(hit.key), hit.accuracy, hit.cost,
                         (pred == y_te).mean(), (usage @ cv).mean()))
    return out


def run_budgeted(title, tag, X, y, groups, costs, lattice_groups, seeds, grids, quick):
    say(f"## {title}")
    rows = {}
    mixed_ok, mixed_better, compared = True, 0, 0
    for seed in seeds:
        X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.4, stratify=y,
                                                      random_state=seed)
        X_va, X_te, y_va, y_te = train_test_split(X_rest, y_rest, test_size=0.5,
                                                  stratify=y_rest, random_state=seed)
        f0 = RandomForestClassifier(grids["rf"], random_state=seed, n_jobs=1).fit(X_tr, y_tr)
        f0p = f0_point(f0, groups, costs, X_va, y_va, X_te, y_te)
        pts: dict[str, list[Point]] = {}
        t = time.perf_counter()
        lin = AdaptClassifier(f0, method="lin", feature_groups=groups, feature_costs=costs,
                              n_starts=grids["starts"], max_iter=10, inner_iter=200,
                              random_state=seed)
        pts["ADAPT-LIN"] = adapt_points(
            "ADAPT-LIN", lin, [dict(tradeoff=g, p_full=p) for g in grids["lin"]
                               for p in grids["p_full"]], X_tr, y_tr, X_va, y_va, X_te, y_te,
            THRESHOLDS)
        gbrt = AdaptClassifier(f0, method="gbrt", feature_groups=groups, feature_costs=costs,
                               n_estimators=grids["trees"], max_iter=5, random_state=seed)
        pts["ADAPT-GBRT"] = adapt_points(
            "ADAPT-GBRT", gbrt, [dict(tradeoff=g, p_full=p) for g in grids["gbrt"]
                                 for p in grids["p_full"]], X_tr, y_tr, X_va, y_va, X_te, y_te,
            THRESHOLDS)
        t_adapt = time.perf_counter() - t
        pts["L1 baseline"] = l1_baseline(X_tr, y_tr, X_va, y_va, X_te, y_te, groups, costs, f0,
                                         grids["l1"], (0.5, 0.7, 0.8, 0.9, 0.95))
        pts["GreedyMiser"] = boosted_points("GreedyMiser", GreedyMiserClassifier, grids["gm"],
                                            groups, costs, X_tr, y_tr, X_va, y_va, X_te, y_te,
                                            n_estimators=grids["trees"])
        pts["CEGB"] = boosted_points("CEGB", CEGBClassifier, grids["cegb"], groups, costs,
                                     X_tr, y_tr, X_va, y_va, X_te, y_te, n_estimators=100)
        # the lattice index over coarse feature groups, and the same index plus ADAPT
        lat_costs = {g: str(sum(costs[c] for c in members)) for g, members in
                     lattice_groups.items()}
        lat_cols = {g: [c for n in members for c in groups[n]] for g, members in
                    lattice_groups.items()}
        learner = SklearnLearner(RandomForestClassifier(50, random_state=seed, n_jobs=1),
                                 X_tr, y_tr, features=lat_cols, cv=(X_va, y_va))
        cache: dict = {}
        base = polydom.build_index(lat_costs, learner, alpha=1.0, delta=0.0, cache=cache)
        # ADAPT on the lattice's own features (its groups), approximating the index's best
        adapt_proto = AdaptClassifier.from_index(base, 1.0, 1e12, method="gbrt",
                                                 n_estimators=grids["trees"], max_iter=5,
                                                 random_state=seed)
        adapt_cands = sweep(adapt_proto, grids["gbrt_lattice"], X_tr, y_tr, lat_costs,
                            evaluation=(X_va, y_va), p_fulls=grids["p_full"],
                            thresholds=THRESHOLDS)
        mixed = polydom.build_index(lat_costs, learner, alpha=1.0, delta=0.0, cache=cache,
                                    extra_candidates=adapt_cands)
        total = sum(float(c) for c in lat_costs.values())
        budgets = np.linspace(0.0, total, 41)
        lat_costs_f = {g: float(c) for g, c in lat_costs.items()}
        pts["lattice index"] = index_points("lattice index", base, lat_cols, lat_costs_f,
                                            X_te, y_te, budgets)
        pts["index + ADAPT"] = index_points("index + ADAPT", mixed, lat_cols, lat_costs_f,
                                            X_te, y_te, budgets)
        for b in budgets:
            h0, h1 = base.lookup(1.0, float(b)), mixed.lookup(1.0, float(b))
            if h0 is None:
                continue
            compared += 1
            mixed_ok &= h1 is not None and h1.accuracy >= h0.accuracy
            mixed_better += int(h1.accuracy > h0.accuracy)
        rows[seed] = (f0p, pts, t_adapt)
        say(f"seed {seed}: f0 test acc {f0p.test_acc:.4f} at cost {f0p.test_cost:.1f}; "
            f"ADAPT grids took {t_adapt:.0f} s")
    # summary over seeds: per method, frontier point with the best validation accuracy, and
    # the cheapest frontier point within 0.01 of f0's test accuracy (mean over seeds)
    say("Mean over seeds of the validation-frontier points:")
    say("| method | best test accuracy | its cost | cheapest cost within 0.01 of f0 "
        "| accuracy there |")
    say("|---|---:|---:|---:|---:|")
    f0s = [rows[s][0] for s in seeds]
    say(f"| high-cost model (RF) | {np.mean([p.test_acc for p in f0s]):.4f} | "
        f"{np.mean([p.test_cost for p in f0s]):.2f} | | |")
    for name in rows[seeds[0]][1]:
        best, cheap, cheap_acc = [], [], []
        for s in seeds:
            f0p, pts, _ = rows[s]
            fr = frontier(pts[name])
            if not fr:
                continue
            top = max(fr, key=lambda p: (p.val_acc, -p.val_cost))
            best.append((top.test_acc, top.test_cost))
            ok = [p for p in fr if p.test_acc >= f0p.test_acc - 0.01]
            if ok:
                c = min(ok, key=lambda p: p.test_cost)
                cheap.append(c.test_cost)
                cheap_acc.append(c.test_acc)
        if not best:
            continue
        ba = np.mean([b[0] for b in best])
        bc = np.mean([b[1] for b in best])
        ch = f"{np.mean(cheap):.2f} ({len(cheap)}/{len(seeds)} seeds)" if cheap else "never"
        ca = f"{np.mean(cheap_acc):.4f}" if cheap_acc else ""
        say(f"| {name} | {ba:.4f} | {bc:.2f} | {ch} | {ca} |")
    say(f"Index with ADAPT candidates vs without (validation accuracy of the lookup, "
        f"{compared} budget x seed pairs): never below: {mixed_ok}; strictly above at "
        f"{mixed_better}.")
    f0p, pts, _ = rows[seeds[0]]
    curves_plot(RESULTS / f"adapt_{tag}.png", f"{title} (seed {seeds[0]})",
                {k: frontier(v) for k, v in pts.items()}, f0p)
    say(f"Plot: results/adapt_{tag}.png")
    say()


def digits_data():
    """64 pixels of cost 1 each (spec R3); the lattice works on the 8 image rows (bundles of
    8 pixels, cost 8), so both are on one cost scale."""
    d = load_digits()
    X = d.data
    y = (d.target >= 5).astype(int)
    groups = {f"p{j}": [j] for j in range(64)}
    costs = {g: 1.0 for g in groups}
    lattice = {f"row{r}": [f"p{j}" for j in range(8 * r, 8 * r + 8)] for r in range(8)}
    return X, y, groups, costs, lattice


def cancer_data():
    X, y = load_breast_cancer(return_X_y=True)
    groups = {f"c{j}": [j] for j in range(30)}
    costs = {f"c{j}": (1.0 if j < 10 else 5.0 if j < 20 else 20.0) for j in range(30)}
    lattice = {"mean": [f"c{j}" for j in range(10)], "error": [f"c{j}" for j in range(10, 20)],
               "worst": [f"c{j}" for j in range(20, 30)]}
    return X, y, groups, costs, lattice


def miniboone_data():
    X, y = make_classification(n_samples=20_000, n_features=50, n_informative=10,
                               n_redundant=10, flip_y=0.01, class_sep=1.0, random_state=0)
    groups = {f"x{j}": [j] for j in range(50)}
    costs = {g: 1.0 for g in groups}
    lattice = {f"b{b}": [f"x{j}" for j in range(10 * b, 10 * b + 10)] for b in range(5)}
    return X, y, groups, costs, lattice


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grids (smoke run)")
    ap.add_argument("--r5", action="store_true", help="add the MiniBooNE-sized run (slow)")
    ap.add_argument("--only", default="r1,r2,r3,r4", help="comma-separated parts to run")
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    parts = set(args.only.split(",")) | ({"r5"} if args.r5 else set())
    q = args.quick
    start = time.perf_counter()
    if "r1" in parts:
        run_r1(q)
    if "r2" in parts:
        run_r2(q)
    if "r3" in parts:
        X, y, groups, costs, lattice = digits_data()
        run_budgeted(
            "R3  digits 0-4 vs 5-9 (64 pixels of cost 1; lattice on 8 rows of 8; f0 = RF(300))",
            "r3_digits",
            X, y, groups, costs, lattice, [0],
            dict(rf=300, starts=3 if q else 4, lin=(0.002, 0.01) if q else
                 (0.001, 0.003, 0.01, 0.03), gbrt=(0.1, 1.0) if q else (0.01, 0.03, 0.1, 0.3, 1),
                 gbrt_lattice=(0.1, 1.0) if q else (0.03, 0.3, 3), p_full=(0.3, 0.6) if q else
                 (0.2, 0.4, 0.6, 0.8), trees=30 if q else 100, l1=(0.003, 0.01, 0.03, 0.1, 1.0),
                 gm=(1, 10) if q else (0.3, 1, 3, 10, 30, 100),
                 cegb=(1e-3,) if q else (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)), q)
    if "r4" in parts:
        X, y, groups, costs, lattice = cancer_data()
        run_budgeted(
            "R4  breast cancer (mean/error/worst columns cost 1/5/20; f0 = RF(300))",
            "r4_breast_cancer", X, y, groups, costs, lattice, [0, 1] if q else [0, 1, 2, 3, 4],
            dict(rf=300, starts=3 if q else 6, lin=(0.001, 0.01) if q else
                 (0.0003, 0.001, 0.003, 0.01),
                 gbrt=(0.01, 0.1) if q else (0.003, 0.01, 0.03, 0.1, 0.3),
                 gbrt_lattice=(0.01, 0.1) if q else (0.003, 0.03, 0.3), p_full=(0.3, 0.6) if q
                 else (0.2, 0.4, 0.6, 0.8), trees=30 if q else 100,
                 l1=(0.01, 0.03, 0.1, 1.0), gm=(0.1, 1.0) if q else (0.1, 0.3, 1, 3, 10),
                 cegb=(1e-3,) if q else (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)), q)
    if "r5" in parts:
        X, y, groups, costs, lattice = miniboone_data()
        run_budgeted(
            "R5  MiniBooNE-sized make_classification (20 000 x 50, unit costs; f0 = RF(200))",
            "r5_miniboone", X, y, groups, costs, lattice, [0],
            dict(rf=200, starts=2, lin=(0.003, 0.03), gbrt=(3.0, 30.0), gbrt_lattice=(30.0,),
                 p_full=(0.3, 0.6), trees=100, l1=(0.01, 0.1), gm=(3.0, 30.0),
                 cegb=(1e-4, 1e-3)), q)
    say(f"Total {time.perf_counter() - start:.0f} s.")
    name = "_".join(sorted(parts)) + ("_quick" if q else "")
    (RESULTS / f"adapt_{name}.md").write_text("\n".join(OUT) + "\n")


if __name__ == "__main__":
    main()
