"""Cascades over the skyline and workload plans vs the static index and any-time serving.

Two workloads, every method side by side on the same held-out items:

1. breast cancer with per-column costs (10 "mean" columns cost 1, 10 "error" 5, 10 "worst"
   20), the lattice over six blocks of five columns (a block costs the sum of its columns);
2. digits rendered at sides 8-128 with image features whose costs are measured (seconds of
   CPU time, fitted as polynomials in the side n).

Methods: the static index (lookup per item budget), any-time serving (the index, re-planned on
measured time), cascades fitted per mean budget on calibration rows, and the index holding
those cascades as candidates.  Each is run at several budgets; we report accuracy against the
*realised* mean cost per item and the normalised area under that curve
(:func:`polydom.serving.curve_area.normalized_area`) over a stated cost range.  Then a workload
plan (one model or cascade per side, for a skewed side distribution) against a uniform
per-item budget with the same total, expected and realised.

Each test item's features are computed and timed once; every method replays those measured
times (so the methods are compared on identical measurements, not on timer noise).

    PYTHONPATH=. python benchmarks/cascade_bench.py            # about 10 minutes on 2 cores
    PYTHONPATH=. python benchmarks/cascade_bench.py --quick    # about 3 minutes
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from learners import SklearnLearner
from polydom import Featurizer, build_index
from polydom.app.workloads.images import image_featurizer, load_digits_workload
from polydom.curves.fitting import CostProfile
from polydom.serving.cascade_fit import fit_cascade, score_stages, with_cascades
from polydom.serving.curve_area import normalized_area
from polydom.serving.featurizer import CLOCKS
from polydom.serving.item_serving import ItemServer
from polydom.serving.plan import plan_workload, uniform_plan

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 0
#: Thresholds tried per cascade stage (quantiles of the calibration confidences).
GRID = 16


def estimator():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


class ReplayFeaturizer(Featurizer):
    """Serves items that are row ids: each feature's vector and seconds were measured once."""

    def __init__(self, names, columns, vectors, seconds, sizes):
        super().__init__(size=lambda i: sizes[i])
        for name in names:
            self.add(name, lambda i: None, len(columns[name]))
        self.vectors = vectors  # rows x full width
        self.seconds = seconds  # name -> per-row seconds
        self.spent = 0.0

    def compute(self, item, name):
        cols = self.columns[name]
        sec = float(self.seconds[name][item])
        self.spent += sec
        return self.vectors[item, cols], sec


# ----------------------------------------------------------------------------- methods
def serve_index(index, fz, rows, labels, budget, anytime):
    """Accuracy and mean measured cost of serving rows one by one from the index."""
    server = ItemServer(index, fz)
    right, spent, none = 0, 0.0, 0
    for i, y in zip(rows, labels, strict=True):
        out = server.predict(int(i), budget, anytime=anytime)
        if out.label is None:
            none += 1
        right += int(out.label == y)
        spent += out.seconds
    return right / len(rows), spent / len(rows), none


def serve_cascade(cand, fz, rows, labels, budget=np.inf):
    right, spent = 0, 0.0
    for i, y in zip(rows, labels, strict=True):
        out = cand.payload.predict_item(int(i), fz, budget=budget)
        right += int(out.label == y)
        spent += out.seconds
    return right / len(rows), spent / len(rows)


def curves_table(results, lo, hi, log, unit, scale=1.0):
    """Markdown: per method, the (mean cost, accuracy) points and the normalised area."""
    lines = [f"| method | normalised area over [{lo * scale:g}, {hi * scale:g}] {unit}"
             f"{' (log cost)' if log else ''} | points (budget -> realised mean cost: "
             "accuracy) |", "|---|---|---|"]
    for method, pts in results.items():
        area = normalized_area([p[1] for p in pts], [p[2] for p in pts], lo, hi, log=log)
        text = "; ".join(f"{p[0] * scale:.3g} -> {p[1] * scale:.3g}: {p[2]:.3f}" for p in pts)
        lines.append(f"| {method} | {area:.4f} | {text} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- breast cancer
def breast_cancer(quick):
    X, y = load_breast_cancer(return_X_y=True)
    column_cost = np.repeat([1.0, 5.0, 20.0], 10)
    blocks = {f"{g}{h}": list(range(10 * k + 5 * h, 10 * k + 5 * h + 5))
              for k, g in enumerate(("mean", "error", "worst")) for h in (0, 1)}
    costs = {b: f"{column_cost[cols].sum():g}" for b, cols in blocks.items()}
    idx = np.arange(len(y))
    tr, rest = train_test_split(idx, test_size=0.5, stratify=y, random_state=SEED)
    ca, te = train_test_split(rest, test_size=0.5, stratify=y[rest], random_state=SEED)
    t0 = time.perf_counter()
    learner = SklearnLearner(estimator(), X[tr], y[tr], features=blocks, cv=3)
    index = build_index(costs, learner, alpha=1.0, n_min=0.0, n_max=1.0)
    build_s = time.perf_counter() - t0
    print(f"breast cancer: lattice built in {build_s:.1f} s", flush=True)
    seconds = {b: np.full(len(y), float(costs[b])) for b in blocks}
    fz = ReplayFeaturizer(list(blocks), blocks, X, seconds, np.full(len(y), 0.5))
    budgets = [5, 10, 20, 30, 60, 110, 160, 260, 330] if quick else \
        [5, 10, 15, 20, 30, 40, 60, 80, 110, 140, 160, 210, 260, 330]
    size = 0.5
    res = {"static index": [], "any-time": [], "cascade": [], "index + cascades": []}
    within = []
    t0 = time.perf_counter()
    scores = score_stages(index, index.table.skyline(size), X[ca], y[ca])
    cands = []
    for b in budgets:
        for label, anytime in (("static index", False), ("any-time", True)):
            acc, cost, _ = serve_index(index, fz, te, y[te], b, anytime)
            res[label].append((b, cost, acc))
        cand = fit_cascade(index, X[ca], y[ca], b, size, grid=GRID, scores=scores)
        cands.append(cand)
        acc, cost = serve_cascade(cand, fz, te, y[te])
        res["cascade"].append((b, cost, acc))
        within.append((b, cand.key, cand.accuracy, cand.cost(size), cost, acc))
    fit_s = time.perf_counter() - t0
    unique = {c.key: c for c in cands if c.payload.n_stages > 1}
    both = with_cascades(index, list(unique.values()))
    for b in budgets:
        hit = both.lookup(size, b)
        if hit is not None and hasattr(hit.model, "predict_item"):
            acc, cost = serve_cascade(hit.candidate, fz, te, y[te])
        else:
            acc, cost, _ = serve_index(both, fz, te, y[te], b, False)
        res["index + cascades"].append((b, cost, acc))
    return {
        "name": "breast cancer (per-column costs 1/5/20; six blocks of five columns)",
        "index": index, "results": res, "within": within, "lo": 5.0, "hi": 330.0,
        "log": True, "unit": "cost units", "scale": 1.0,
        "note": f"{len(tr)} train (3-fold CV accuracies), {len(ca)} calibration, {len(te)} "
                f"test rows; lattice {index.info['expansions']} sets trained in {build_s:.1f} s; "
                f"cascades fitted in {fit_s:.1f} s for {len(budgets)} budgets",
    }


# ----------------------------------------------------------------------------- digits
def digits(quick, timer):
    sides = (8, 16, 32, 64, 128)
    names = ["thumbnail", "zones", "projections", "hog", "lbp", "spectrum", "harris"]
    n_digits, n_train, n_cal = (450, 200, 100) if quick else (900, 400, 200)
    fz = image_featurizer(names)
    fz.timer = timer
    wl = load_digits_workload(sides=sides, digits=n_digits, seed=SEED, features=names)
    rng = np.random.default_rng(SEED)
    ids = rng.permutation(np.unique(wl.digit))
    train_ids = ids[:n_train]
    cal_ids, test_ids = ids[n_train:n_train + n_cal], ids[n_train + n_cal:]
    # every held-out item's features, computed and timed once (after one warm-up run each)
    held = np.flatnonzero(np.isin(wl.digit, np.concatenate([cal_ids, test_ids])))
    vectors = np.full((len(wl.items), fz.n_columns), np.nan)
    seconds = {n: np.full(len(wl.items), np.nan) for n in names}
    for n in names:
        fz.compute(wl.items[held[0]], n)
    for i in held:
        for n in names:
            vec, sec = fz.compute(wl.items[i], n)
            vectors[i, fz.columns[n]] = vec
            seconds[n][i] = sec
    replay = ReplayFeaturizer(names, fz.columns, vectors, seconds, wl.sizes)
    cal = np.flatnonzero(np.isin(wl.digit, cal_ids))
    # cost curves: the mean measured time per side on the calibration items, degree 3
    prof = CostProfile.fit(wl.sizes[cal], {n: seconds[n][cal][:, None] for n in names},
                           statistic="mean", degree=3)
    side_of = dict(zip(train_ids.tolist(), rng.choice(sides, size=n_train).tolist(),
                       strict=True))
    train_rows = [i for i, (d, s) in enumerate(zip(wl.digit, wl.sizes, strict=True))
                  if side_of.get(int(d)) == s]
    t0 = time.perf_counter()
    Xtr = fz.transform([wl.items[i] for i in train_rows])
    learner = SklearnLearner(estimator(), Xtr, wl.labels[train_rows], features=fz.columns, cv=3)
    index = build_index(prof.curves, learner, alpha=1.02, n_min=min(sides), n_max=max(sides))
    build_s = time.perf_counter() - t0
    print(f"digits: lattice built in {build_s:.1f} s", flush=True)
    cal = np.flatnonzero(np.isin(wl.digit, cal_ids))
    test = np.flatnonzero(np.isin(wl.digit, test_ids))
    Xcal, ycal = vectors[cal], wl.labels[cal]
    budgets = [3e-5, 1e-4, 3e-4, 1e-3, 3e-3] if quick else \
        [2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2]
    res = {"static index": [], "any-time": [], "cascade": [], "index + cascades": []}
    within = []
    t0 = time.perf_counter()
    fitted = {}
    for side in sides:
        scores = score_stages(index, index.table.skyline(float(side)), Xcal, ycal)
        for b in budgets:
            try:
                fitted[side, b] = fit_cascade(index, Xcal, ycal, b, float(side), grid=GRID,
                                              scores=scores)
            except ValueError:  # below the cheapest model at this side
                fitted[side, b] = None
    cascades = {c.key: c for c in fitted.values() if c is not None and c.payload.n_stages > 1}
    both = with_cascades(index, list(cascades.values()))
    fit_s = time.perf_counter() - t0
    print(f"digits: {len(cascades)} cascades in {fit_s:.1f} s", flush=True)
    per_side = {}
    for side in sides:
        rows = test[wl.sizes[test] == side]
        labels = wl.labels[rows]
        for b in budgets:
            pts = per_side.setdefault(side, {k: [] for k in res})
            for label, anytime in (("static index", False), ("any-time", True)):
                acc, cost, _ = serve_index(index, replay, rows, labels, b, anytime)
                pts[label].append((b, cost, acc))
            cand = fitted[side, b]
            if cand is not None:
                acc, cost = serve_cascade(cand, replay, rows, labels)
                pts["cascade"].append((b, cost, acc))
                within.append((side, b, cand.key, cand.accuracy, cand.cost(float(side)),
                               cost, acc))
            hit = both.lookup(float(side), b)
            if hit is not None and hasattr(hit.model, "predict_item"):
                acc, cost = serve_cascade(hit.candidate, replay, rows, labels)
            else:
                acc, cost, _ = serve_index(both, replay, rows, labels, b, False)
            pts["index + cascades"].append((b, cost, acc))
        print(f"digits: side {side} served", flush=True)
    # pooled over sides (each side equally likely): mean accuracy and mean cost per budget
    for method in res:
        for j, b in enumerate(budgets):
            got = [per_side[s][method] for s in sides]
            if all(len(g) == len(budgets) for g in got):
                res[method].append((b, float(np.mean([g[j][1] for g in got])),
                                    float(np.mean([g[j][2] for g in got]))))
            else:
                pts = [p for g in got for p in g if p[0] == b]
                if len(pts) == len(sides):
                    res[method].append((b, float(np.mean([p[1] for p in pts])),
                                        float(np.mean([p[2] for p in pts]))))
    plan_rows = workload_plan(both, replay, test, wl, sides, quick)
    return {
        "name": "digits image workload (measured CPU seconds; sides 8-128, equally likely)",
        "index": both, "results": res, "per_side": per_side, "within": within,
        "lo": 2e-5, "hi": 1e-2, "log": True, "unit": "ms", "scale": 1e3, "plan": plan_rows,
        "note": f"cost curves: mean measured CPU time per side on the calibration items, "
                f"degree 3; {len(train_rows)} train digits (one side each, 3-fold CV), {len(cal)} "
                f"calibration items ({len(cal_ids)} digits x {len(sides)} sides), {len(test)} "
                f"test items; lattice {index.info['expansions']} sets in {build_s:.1f} s; "
                f"{len(cascades)} distinct multi-stage cascades for {len(budgets)} budgets x "
                f"{len(sides)} sides in {fit_s:.1f} s (grid {GRID} thresholds per stage)",
    }


def workload_plan(index, replay, test, wl, sides, quick):
    """Plan vs uniform per-item budget, same total, on a skewed side distribution."""
    probs = np.array([0.35, 0.3, 0.2, 0.1, 0.05])
    rng = np.random.default_rng(SEED + 1)
    sample = rng.choice(np.array(sides, dtype=float), size=4000, p=probs)
    by_side = {s: test[wl.sizes[test] == s] for s in sides}
    draws = rng.choice(np.array(sides, dtype=float), size=1000 if quick else 3000, p=probs)
    items = np.array([rng.choice(by_side[int(s)]) for s in draws])
    out = []
    for b in [1e-4, 3e-4, 1e-3, 3e-3]:
        plan = plan_workload(index, sample, b)
        try:
            uniform = uniform_plan(index, sample, b)
        except ValueError:
            uniform = None
        row = {"budget": b, "plan": plan, "uniform": uniform}
        for label, p in (("plan", plan), ("uniform", uniform)):
            if p is None:
                continue
            right, spent = 0, 0.0
            for i in items:
                cand = p.candidate_for(wl.sizes[i])
                model = cand.payload
                if hasattr(model, "predict_item"):
                    res = model.predict_item(int(i), replay)
                    label_i, sec = res.label, res.seconds
                else:
                    cols = index.model_columns(cand.features)
                    label_i = model.predict(replay.vectors[i, cols][None, :])[0]
                    sec = sum(replay.seconds[f][i] for f in cand.features)
                right += int(label_i == wl.labels[i])
                spent += sec
            row[label + "_realised"] = (right / len(items), spent / len(items))
        out.append(row)
    return out


# ----------------------------------------------------------------------------- report
def report(sets, argv, total):
    out = ["## Cascades over the skyline and workload plans (issue 15)", "",
           f"`PYTHONPATH=. python benchmarks/cascade_bench.py {' '.join(argv)}`".replace(" `", "`"),
           f"(total {total:.0f} s on this machine).  Budgets are per item for the static index "
           "and any-time serving (a cap on every item) and a mean per item for cascades; every "
           "method is plotted at its *realised* mean cost per item on held-out items.  "
           "Normalised area: the mean, over the stated cost range on a log scale, of the best "
           "accuracy a method reached at that mean cost or less "
           "(`polydom.serving.curve_area.normalized_area`).", ""]
    for s in sets:
        out += [f"### {s['name']}", "", s["note"] + ".", "",
                curves_table(s["results"], s["lo"], s["hi"], s["log"], s["unit"], s["scale"]),
                ""]
        out += ["Cascades fitted per budget (expected accuracy is the calibration-based "
                "estimate; realised on the test items):", "",
                "| " + ("side | " if len(s["within"][0]) == 7 else "") +
                "mean budget | cascade | expected acc | expected cost | realised cost | "
                "realised acc | within budget |",
                "|" + "---|" * (8 if len(s["within"][0]) == 7 else 7)]
        for w in s["within"]:
            side = [f"{w[0]:g}"] if len(w) == 7 else []
            b, key, eacc, ecost, cost, acc = w[-6:]
            sc = s["scale"]
            out.append("| " + " | ".join(side + [
                f"{b * sc:.3g}", key, f"{eacc:.3f}", f"{ecost * sc:.3g}", f"{cost * sc:.3g}",
                f"{acc:.3f}", "yes" if cost <= b * (1 + 1e-9) else f"no (+{cost / b - 1:.0%})"])
                + " |")
        out.append("")
        if "plan" in s:
            out += ["Workload plan vs a uniform per-item budget with the same total (sides "
                    "8/16/32/64/128 with probabilities .35/.30/.20/.10/.05; plan over the index "
                    "with cascades; realised on test items drawn from the same distribution):",
                    "", "| mean budget (ms) | method | expected acc | expected cost (ms) | "
                    "realised acc | realised cost (ms) | per side |",
                    "|---|---|---|---|---|---|---|"]
            for row in s["plan"]:
                for label in ("plan", "uniform"):
                    p = row[label]
                    if p is None:
                        out.append(f"| {row['budget'] * 1e3:.3g} | {label} | infeasible (nothing "
                                   "fits some side) | | | | |")
                        continue
                    racc, rcost = row[label + "_realised"]
                    per = ", ".join(f"{r.n_lo:g}: {r.key}" for r in p.rows)
                    out.append(f"| {row['budget'] * 1e3:.3g} | {label} ({p.method}) | "
                               f"{p.expected_accuracy:.4f} | {p.expected_cost * 1e3:.3g} | "
                               f"{racc:.4f} | {rcost * 1e3:.3g} | {per} |")
            out.append("")
    return "\n".join(out)


def plot(sets, folder):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for s, stem in zip(sets, ("cascade_breast_cancer", "cascade_digits"), strict=True):
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for method, pts in s["results"].items():
            area = normalized_area([p[1] for p in pts], [p[2] for p in pts], s["lo"], s["hi"],
                                   log=s["log"])
            ax.plot([p[1] * s["scale"] for p in pts], [p[2] for p in pts], marker="o",
                    label=f"{method} (area {area:.3f})")
        ax.set_xscale("log")
        ax.set_xlabel(f"realised mean cost per item ({s['unit']})")
        ax.set_ylabel("test accuracy")
        ax.set_title(s["name"], fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(folder / f"{stem}.png", dpi=90)
        plt.close(fig)
        paths.append(folder / f"{stem}.png")
        if "plan" in s:
            fig, ax = plt.subplots(figsize=(6.5, 4))
            for label in ("plan", "uniform"):
                pts = [(r["budget"], r[label].expected_accuracy, r[label + "_realised"])
                       for r in s["plan"] if r[label] is not None]
                ax.plot([1e3 * p[0] for p in pts], [p[1] for p in pts], marker="o",
                        label=f"{label}: expected")
                ax.plot([1e3 * p[2][1] for p in pts], [p[2][0] for p in pts], marker="x",
                        linestyle="--", label=f"{label}: realised (at realised cost)")
            ax.set_xscale("log")
            ax.set_xlabel("mean cost per item (ms)")
            ax.set_ylabel("accuracy")
            ax.set_title("digits: workload plan vs uniform per-item budget", fontsize=9)
            ax.legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(folder / "cascade_plan.png", dpi=90)
            plt.close(fig)
            paths.append(folder / "cascade_plan.png")
    return paths


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="cpu")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    sets = [breast_cancer(args.quick)]
    print("breast cancer done", flush=True)
    timer = CLOCKS[args.timer]
    sets.append(digits(args.quick, timer))
    text = report(sets, argv, time.perf_counter() - t0)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cascade.md").write_text(text + "\n")
    paths = plot(sets, args.out)
    print(text)
    print("wrote", args.out / "cascade.md", *paths)


if __name__ == "__main__":
    main(sys.argv[1:])
