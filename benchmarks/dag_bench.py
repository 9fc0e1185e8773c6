"""The DAG sensor-acquisition policy (Wang et al. 2015) against non-adaptive and budgeted rivals.

The spec's offline reproduction plan (``docs/specs/dag.md`` section 5):

* R1: digits, the four 4x4 quadrants of the 8x8 image as 4 sensors (multi-class);
* R2: breast cancer, the "mean" / "standard error" / "worst" blocks as 3 sensors (binary),
  over 3 random splits;
* R4: digits with every pixel a sensor (64 sensors): Algorithm 2 (t = 7 + all features,
  B = 21 and 42), with and without ``stop_on_zero_gain``, and nested forward-selection
  prefixes (+ all features).  Algorithm 2 and the forward selection run once, at the
  largest budget, and every variant replays their first steps (:func:`replay`); bank
  entries are pooled across variants.
  (R3, iris / wine, is in the tests.)

Sensor costs are uniform (1 per sensor), so the cost of a row is the number of sensors it
acquired.  Every data set is split 50 / 17 / 33 (train / validation / test, stratified).  On
the train split the Poly-Dom lattice is explored with ``SklearnLearner`` (5-fold CV,
``StandardScaler + LogisticRegression``); the DAG's classifier bank reuses those expansions
(their out-of-fold predictions) and trains only the subsets the lattice pruned.  Rivals, all
in one run, each as (average test cost, test error) per setting:

* ``fixed``: the best fixed subset per budget, i.e. the lattice's index (candidates scored on
  the validation split) looked up at the DAG's average cost; for R4 the non-adaptive rival
  is forward-selected logistic regression (its prefixes in an index);
* ``cascade``: a fixed-order cascade (chain DAG, sensors by single-sensor accuracy; R4: the
  greedy blocks in selection order), trained by the same Graph Reduce;
* ``cegb``: CEGB on LightGBM with the same sensors and costs, over a trade-off grid;
* ``cstc``: CSTC (R2 only, binary; skipped when the class is missing).

Then the mixed index: lattice (or forward-prefix) candidates plus the DAG's candidates
(``dag_sweep_candidates``, validation accuracy, expected cost curves), compared with the index
without them at a grid of budgets: the index's own accuracy (never lower by construction) and
the test error and cost of the model each picks.

Run:  PYTHONPATH=$PWD python benchmarks/dag_bench.py             (R1, R2, R4; minutes)
      PYTHONPATH=$PWD python benchmarks/dag_bench.py --only R1   (one case)
Writes benchmarks/results/dag.md and dag_*.png.
"""

from __future__ import annotations

import argparse
import os
import time
from itertools import combinations
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import lattice
import polydom
from learners import DAGClassifier, SklearnLearner
from learners.budgeted.dag.subset_bank import train_bank
from learners.budgeted.dag.subset_selection import forward_prefixes, greedy_subsets

RESULTS = Path(__file__).resolve().parent / "results"
DELTAS = [0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.1]
DELTAS_R4 = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1]
R4_CEGB = [0.0, 0.003, 0.01, 0.03, 0.1, 0.15, 0.2, 0.3]
MIXED_HEADER = [
    "| budget | index acc plain | index acc mixed | plain test cost | plain test err "
    "| mixed test cost | mixed test err | mixed picks |",
    "|---|---|---|---|---|---|---|---|",
]
CEGB_TRADEOFFS = [0.0, 0.01, 0.03, 0.06, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 1.0]


def lr() -> object:
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def split(X, y, seed):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.33, stratify=y, random_state=seed)
    Xfit, Xval, yfit, yval = train_test_split(
        Xtr, ytr, test_size=0.25, stratify=ytr, random_state=seed
    )
    return Xfit, yfit, Xval, yval, Xte, yte


def cols_of(groups, subset):
    """The sorted union of the subset's columns: the order every model reads them in."""
    return sorted({c for m in groups if m in subset for c in groups[m]})


def fixed_candidates(models, groups, Xval, yval, prefix):
    """One candidate per fixed subset: validation accuracy, cost = number of sensors."""
    out = []
    for s, model in models.items():
        acc = float(np.mean(model.predict(Xval[:, cols_of(groups, s)]) == yval))
        key = f"{prefix}:{'+'.join(sorted(s)) or '{}'}"
        out.append(polydom.Candidate(key, acc, polydom.CostCurve([float(len(s))]), s, (s, model)))
    return out


def dag_candidate(model, Xval, yval, key):
    costs = {m: "1" for m in model.feature_groups_}
    return model.to_candidate(Xval, yval, costs, key)


def test_point(model, Xte, yte):
    """(average number of sensors acquired, test error) of a budgeted model."""
    return float(model.feature_usage(Xte).sum(axis=1).mean()), float(
        np.mean(model.predict(Xte) != yte)
    )


def fixed_point(hit, groups, Xte, yte):
    if hit is None:
        return 0.0, float("nan")
    s, model = hit.payload
    return float(len(s)), float(np.mean(model.predict(Xte[:, cols_of(groups, s)]) != yte))


def cegb_points(groups, Xfit, yfit, Xte, yte, tradeoffs=None):
    try:
        from learners import CEGBClassifier
    except ImportError:
        return []
    out = []
    for t in tradeoffs or CEGB_TRADEOFFS:
        m = CEGBClassifier({g: 1.0 for g in groups}, tradeoff=t, feature_groups=groups,
                           n_estimators=100, random_state=0, verbose=-1).fit(Xfit, yfit)
        out.append((t, *test_point(m, Xte, yte)))
    return out


def cstc_points(groups, Xfit, yfit, Xte, yte):
    try:
        from learners import CSTCClassifier
    except (ImportError, AttributeError):
        return []
    out = []
    for t in [0.0, 0.01, 0.1, 1.0]:
        m = CSTCClassifier({g: 1.0 for g in groups}, tradeoff=t, feature_groups=groups,
                           random_state=0).fit(Xfit, yfit)
        out.append((t, *test_point(m, Xte, yte)))
    return out


def mixed_index_rows(base, dags, budgets, groups, Xte, yte):
    """Index without / with the DAG candidates at each budget."""
    plain = polydom.PolyDomIndex.build(base)
    mixed = polydom.PolyDomIndex.build(base + dags)
    rows = []
    for b in budgets:
        hp, hm = plain.lookup(size=1.0, budget=b), mixed.lookup(size=1.0, budget=b)
        ap = hp.accuracy if hp else float("nan")
        am = hm.accuracy if hm else float("nan")
        assert not (am < ap - 1e-12), "the mixed index may never answer worse than its part"

        def on_test(hit):
            if hit is None:
                return float("nan"), float("nan")
            if isinstance(hit.payload, tuple):
                return fixed_point(hit, groups, Xte, yte)
            return test_point(hit.payload.estimator, Xte, yte)

        rows.append((b, ap, am, *on_test(hp), *on_test(hm),
                     "dag" if hm is not None and not isinstance(hm.payload, tuple) else "fixed"))
    return rows


# ---- the small-sensor cases (R1, R2) ----
def small_case(name, X, y, groups, seeds, lines, plots):
    curves = {k: [] for k in ("dag", "fixed", "cascade", "cegb", "cstc")}
    mixed_all, counts = [], []
    for seed in seeds:
        Xfit, yfit, Xval, yval, Xte, yte = split(X, y, seed)
        start = time.perf_counter()
        learner = SklearnLearner(lr(), Xfit, yfit, features=groups, cv=5)
        exp = lattice.explore({m: "1" for m in groups}, learner, alpha=1.02)
        lattice_s = time.perf_counter() - start
        start = time.perf_counter()
        fresh = train_bank(lr(), Xfit, yfit, groups, _all_subsets(groups), cv=5)
        fresh_s = time.perf_counter() - start
        if seed != seeds[0]:  # timed once; later splits only count
            fresh = None
        models = {s: e.model for s, e in exp.expanded.items()}
        base = fixed_candidates(models, groups, Xval, yval, "fixed")
        plain = polydom.PolyDomIndex.build(base)
        singles = sorted(groups, key=lambda m: -exp.expanded[frozenset([m])].accuracy
                         if frozenset([m]) in exp.expanded else 0.0)
        dags, first = [], None
        for d in DELTAS:
            kw = {"bank": first.bank_} if first is not None else {"bank": exp.expanded}
            dag = DAGClassifier(feature_groups=groups, tradeoff=d, estimator=lr(), **kw)
            dag.fit(Xfit, yfit)
            if first is None:
                first = dag
                counts.append((seed, len(exp.expanded), dag.bank_fits_,
                               6 * 2 ** len(groups) if fresh is None else fresh.fits,
                               lattice_s, fresh_s, dag.timings_["bank"]))
            cost, err = test_point(dag, Xte, yte)
            curves["dag"].append((seed, d, cost, err, dag.timings_["policies"],
                                  dag.policy_.n_binary_fits))
            curves["fixed"].append((seed, d, *fixed_point(plain.lookup(1.0, max(cost, 0.0)),
                                                          groups, Xte, yte)))
            chain = DAGClassifier(feature_groups=groups, tradeoff=d, graph="chain",
                                  subsets=[[m] for m in singles], bank=first.bank_).fit(Xfit, yfit)
            curves["cascade"].append((seed, d, *test_point(chain, Xte, yte)))
            dags.append(dag_candidate(dag, Xval, yval, f"DAG(delta={d:g})"))
        curves["cegb"] += [(seed, *p) for p in cegb_points(groups, Xfit, yfit, Xte, yte)]
        if len(np.unique(y)) == 2:
            curves["cstc"] += [(seed, *p) for p in cstc_points(groups, Xfit, yfit, Xte, yte)]
        budgets = np.linspace(0, len(groups), 4 * len(groups) + 1)
        mixed_all.append(mixed_index_rows(base, dags, budgets, groups, Xte, yte))
    report_small(name, groups, seeds, curves, mixed_all, counts, lines)
    plots.append((name, curves))


def _all_subsets(groups):
    names = list(groups)
    return [frozenset(c) for r in range(len(names) + 1) for c in combinations(names, r)]


def _mean_by(rows, key_idx, val_idx):
    keys = sorted({r[key_idx] for r in rows})
    return [(k, *[float(np.nanmean([r[v] for r in rows if r[key_idx] == k])) for v in val_idx])
            for k in keys]


def report_small(name, groups, seeds, curves, mixed_all, counts, lines):
    M = len(groups)
    lines += [f"### {name}: {M} sensors, splits (seeds) {list(seeds)}", ""]
    lines += ["Trainings: the lattice expanded E subsets (5-fold CV + refit, 6 fits each, with",
              "out-of-fold predictions kept); the DAG's bank reused them and trained the rest.",
              "", "| seed | lattice expansions | bank fits with reuse | bank fits fresh | "
              "lattice s | fresh bank s | bank s with reuse |", "|---|---|---|---|---|---|---|"]
    for seed, e, reused, fresh, ls, fs, rs in counts:
        lines.append(f"| {seed} | {e} of {2 ** M} | {reused} | {fresh} | {ls:.1f} | {fs:.1f} | "
                     f"{rs:.1f} |")
    lines += ["", "Mean over splits, per delta (uniform sensor cost): average sensors acquired "
              "on the test split and test error.", "",
              "| delta | DAG cost | DAG err | fixed subset (index) cost | fixed err | "
              "cascade cost | cascade err | policy fit s | binary fits |",
              "|---|---|---|---|---|---|---|---|---|"]
    dag = _mean_by(curves["dag"], 1, [2, 3, 4, 5])
    fix = {k: v for k, *v in _mean_by(curves["fixed"], 1, [2, 3])}
    cas = {k: v for k, *v in _mean_by(curves["cascade"], 1, [2, 3])}
    for d, c, e, ps, nb in dag:
        fc, fe = fix[d]
        cc, ce = cas[d]
        lines.append(f"| {d:g} | {c:.2f} | {e:.3f} | {fc:.2f} | {fe:.3f} | {cc:.2f} | {ce:.3f} "
                     f"| {ps:.2f} | {nb:.0f} |")
    for rival in ("cegb", "cstc"):
        if curves[rival]:
            lines += ["", f"{rival.upper()} (trade-off grid; mean over splits):", "",
                      "| tradeoff | cost | err |", "|---|---|---|"]
            for t, c, e in _mean_by(curves[rival], 1, [2, 3]):
                lines.append(f"| {t:g} | {c:.2f} | {e:.3f} |")
    lines += ["", "Mixed index (fixed-subset candidates + DAG candidates, validation "
              "accuracies) vs the index without the DAG, split of the first seed:", "",
              *MIXED_HEADER]
    for b, ap, am, pc, pe, mc, me, who in mixed_all[0]:
        lines.append(f"| {b:g} | {ap:.3f} | {am:.3f} | {pc:.2f} | {pe:.3f} | {mc:.2f} | "
                     f"{me:.3f} | {who} |")
    worse = sum(1 for rows in mixed_all for r in rows if r[6] > r[4] + 1e-12)
    total = sum(len(rows) for rows in mixed_all)
    lines += ["", f"Budgets where the mixed index's pick had a higher test error than the plain "
              f"index's: {worse} of {total} (over all splits).", ""]


# ---- R4: 64 pixel sensors ----
def replay(selection, t, n_steps, stop_on_zero_gain=False):
    """The subsets Algorithm 2 held after its first ``n_steps`` steps (with
    ``stop_on_zero_gain``: before its first step without gain, if that comes earlier).

    With unit costs the budget only caps the number of steps, so a run at budget B takes the
    first B steps of a run at a larger budget, and a ``stop_on_zero_gain`` run the steps up
    to the first that does not raise G: one selection serves every variant.
    """
    sig = [set() for _ in range(t)]
    previous = 0.0
    for (i, m), g in list(zip(selection.steps, selection.scores, strict=True))[:n_steps]:
        if stop_on_zero_gain and g <= previous:
            break
        sig[i].add(m)
        previous = g
    return [sorted(b) for b in sig if b]


def r4_case(lines, plots, budgets=(21, 42), t=7):
    """R4 at every budget B; the selections and CEGB (independent of B) run once."""
    X, y = load_digits(return_X_y=True)
    groups = {f"p{j}": [j] for j in range(64)}
    data = split(X, y, 0)
    Xfit, yfit, Xval, yval, Xte, yte = data
    # the held-out half that scores subsets: the same split DAGClassifier's selection uses
    half = train_test_split(Xfit, yfit, test_size=0.5, stratify=yfit, random_state=0)
    top = max(budgets)
    start = time.perf_counter()
    fwd = forward_prefixes(lr(), half[0], half[2], half[1], half[3], groups, top, top)
    fwd_s = time.perf_counter() - start
    start = time.perf_counter()
    sel = greedy_subsets(lr(), half[0], half[2], half[1], half[3], groups, t, top)
    greedy_s = time.perf_counter() - start
    start = time.perf_counter()
    cegb = [(0, *p) for p in cegb_points(groups, Xfit, yfit, Xte, yte, R4_CEGB)]
    cegb_s = time.perf_counter() - start
    full = fixed_candidates({frozenset(groups): clone(lr()).fit(Xfit, yfit)}, groups, Xval,
                            yval, "forward")[0]
    lines += ["### R4: digits, 64 pixel sensors (seed 0)", "",
              f"* forward selection of {len(fwd.steps)} pixels (held-out half): {fwd.fits} "
              f"fits, {fwd_s:.1f} s; a budget B uses its first B pixels",
              f"* Algorithm 2 (t = {t}, B = {top}): {sel.fits} fits, {greedy_s:.1f} s; G after "
              f"each step {[round(g, 3) for g in sel.scores]}; a budget B uses its first B "
              "steps, stop_on_zero_gain the steps before the first without gain",
              f"* CEGB ({len(R4_CEGB)} trade-offs, 100 trees, LightGBM): {cegb_s:.1f} s", ""]
    pool = {}  # bank entries of every variant so far: a state is trained once for all
    for B in budgets:
        r4_budget(lines, plots, data, groups, [m for _, m in fwd.steps][:B], sel, cegb, full,
                  pool, B, t)


def r4_budget(lines, plots, data, groups, order, sel, cegb, full, pool, budget, t):
    Xfit, yfit, Xval, yval, Xte, yte = data
    curves = {}
    models = {}
    for k in range(1, len(order) + 1):
        s = frozenset(order[:k])
        models[s] = clone(lr()).fit(Xfit[:, cols_of(groups, s)], yfit)
    base = fixed_candidates(models, groups, Xval, yval, "forward")
    plain = polydom.PolyDomIndex.build(base)
    curves["forward LR"] = [(0, k, *fixed_point(plain.lookup(1.0, float(k)), groups, Xte, yte))
                            for k in (5, 8, 10, 14, 18, 21, 30, 42) if k <= budget]
    info, all_dags = [], []
    cuts = np.unique(np.round(np.geomspace(1, len(order), t)).astype(int))
    variants = [
        ("greedy", replay(sel, t, budget)),
        ("greedy stop0", replay(sel, t, budget, stop_on_zero_gain=True)),
        ("forward prefixes", [sorted(order[:k]) for k in cuts]),
    ]
    for label, subsets in variants:
        first, rows = None, []
        blocks = subsets + [sorted(groups)]
        for d in DELTAS_R4:
            dag = DAGClassifier(feature_groups=groups, tradeoff=d, estimator=lr(),
                                subsets=blocks, add_full=False,
                                bank=first.bank_ if first is not None else pool).fit(Xfit, yfit)
            if first is None:
                first = dag
                pool.update({s: dag.bank_[s] for s in dag.bank_.subsets})
                info.append(
                    f"{label}: blocks of sizes {[len(b) for b in dag.blocks_]}, "
                    f"{len(dag.graph_)} states; bank {dag.timings_['bank']:.1f} s "
                    f"({dag.bank_fits_} fits for the states no earlier variant trained)")
            rows.append((0, d, *test_point(dag, Xte, yte), dag.timings_["policies"],
                         dag.policy_.n_binary_fits))
            all_dags.append(dag_candidate(dag, Xval, yval, f"DAG[{label}](delta={d:g})"))
            if label == "greedy":
                chain = DAGClassifier(feature_groups=groups, tradeoff=d, graph="chain",
                                      subsets=blocks, bank=first.bank_).fit(Xfit, yfit)
                curves.setdefault("cascade (greedy blocks)", []).append(
                    (0, d, *test_point(chain, Xte, yte)))
        curves[f"DAG {label}"] = rows
    curves["cegb"] = cegb
    grid = [0, 2, 5, 8, 10, 14, 18, 21, 30, 45, 64]
    mixed = mixed_index_rows(base + [full], all_dags, grid, groups, Xte, yte)
    lines += [f"#### R4, B = {budget}", ""] + [f"* {s}" for s in info]
    lines += ["", "| method | setting | avg pixels | test err | policy fit s | binary fits |",
              "|---|---|---|---|---|---|"]
    for label, rows in curves.items():
        for r in rows:
            extra = f"| {r[4]:.1f} | {r[5]} |" if len(r) > 4 else "| | |"
            lines.append(f"| {label} | {r[1]:g} | {r[2]:.1f} | {r[3]:.3f} {extra}")
    lines += ["", "Mixed index (forward-prefix candidates + the full model + all DAG candidates) "
              "vs without the DAG:", "", *MIXED_HEADER]
    for b, ap, am, pc, pe, mc, me, who in mixed:
        lines.append(f"| {b:g} | {ap:.3f} | {am:.3f} | {pc:.2f} | {pe:.3f} | {mc:.2f} | "
                     f"{me:.3f} | {who} |")
    lines.append("")
    name = "R4: digits pixels, B = 21" if budget == 21 else f"R4-B{budget}: digits pixels"
    plots.append((name, curves))


def plot(plots):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for name, curves in plots:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, rows in curves.items():
            if not rows:
                continue
            pts = _mean_by(rows, 1, [2, 3]) if len(rows[0]) >= 4 else []
            pts = sorted((c, e) for _, c, e in pts)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", ms=3, label=label)
        ax.set_xlabel("average sensors acquired (test)")
        ax.set_ylabel("test error")
        ax.set_title(name)
        if name.startswith("R4"):  # the acquire-nothing points (0.899) would flatten the rest
            ax.set_ylim(0.0, 0.45)
            ax.set_title(f"{name} (errors above 0.45 off the axis)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        slug = name.split(":")[0].split()[0].lower()  # "r1", "r2", "r4", "r4-b42"
        fig.savefig(RESULTS / f"dag_{slug}.png", dpi=110)
        plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["R1", "R2", "R4"], action="append")
    ap.add_argument("--out", default=str(RESULTS / "dag.md"))
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS / OpenMP threads (default 1; see run())")
    args = ap.parse_args()
    try:  # load LightGBM's OpenMP before limiting (threadpoolctl limits loaded libraries)
        import lightgbm  # noqa: F401
    except ImportError:
        pass
    with threadpool_limits(limits=args.threads):
        run(args)


def run(args: argparse.Namespace) -> None:
    """Run the cases asked for, under the caller's thread limits.

    BLAS threads: on the shared 2-core machine, OpenBLAS's worker threads spin while they
    wait, so the many small ``LogisticRegression`` fits (lbfgs) took about 10x more CPU and
    wall time with the default thread pool than with one thread (one R4 variant: 184 CPU s
    against 20 s, at load 5-7); the fitted coefficients were bit-identical.  ``--threads``
    sets the limit (``threadpoolctl``, BLAS and OpenMP, LightGBM included).
    """
    which = args.only or ["R1", "R2", "R4"]
    lines, plots = ["# DAG benchmark (benchmarks/dag_bench.py)", ""], []
    start, cpu, load = time.perf_counter(), time.process_time(), os.getloadavg()
    began = time.strftime("%H:%M:%S UTC", time.gmtime())
    if "R1" in which:
        X, y = load_digits(return_X_y=True)
        idx = np.arange(64).reshape(8, 8)
        quads = {"top-left": idx[:4, :4], "top-right": idx[:4, 4:],
                 "bottom-left": idx[4:, :4], "bottom-right": idx[4:, 4:]}
        small_case("R1: digits quadrants", X, y,
                   {k: v.ravel().tolist() for k, v in quads.items()}, [0], lines, plots)
    if "R2" in which:
        X, y = load_breast_cancer(return_X_y=True)
        groups = {"mean": list(range(10)), "error": list(range(10, 20)),
                  "worst": list(range(20, 30))}
        small_case("R2: breast cancer", X, y, groups, [0, 1, 2], lines, plots)
    if "R4" in which:
        r4_case(lines, plots)
    lines.append(
        f"Total wall time {time.perf_counter() - start:.0f} s, CPU time "
        f"{time.process_time() - cpu:.0f} s (this process, all threads), from {began} to "
        f"{time.strftime('%H:%M:%S UTC', time.gmtime())}; load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in load)} at the start, "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end."
    )
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    plot(plots)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
