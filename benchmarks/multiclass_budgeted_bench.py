"""Per-row budgeted learners on many classes next to the static index, and fast cascades.

Two problems: our 8-class generator (20 features of cost 1, three informative per class;
``benchmarks/many_features_bench.py``'s ``make_data``; 3,000 training, 1,000 calibration /
validation, 6,000 fresh test rows) and scikit-learn's bundled digits (10 classes, 64 pixels
as 8 features of one image row each, cost 1 per row; 1,000 training, 397 calibration, 400
test rows).

For each learner and setting we report, on the fresh rows, the mean cost per row, its spread
(min-max: a learner *adapts per row* when rows pay different costs) and the accuracy; the
static index (``build_index(..., traversal="anytime")`` over the features with
``LogisticRegression``) is looked up at budgets 1..m.  Then ``fit_cascade`` over that index at
the default grid of 64 with the calibration rows, timed (CPU seconds) per budget.

    PYTHONPATH=. nice -n 10 python benchmarks/multiclass_budgeted_bench.py
    PYTHONPATH=. nice -n 10 python benchmarks/multiclass_budgeted_bench.py --cascades-only digits

The cascades are calibrated on the calibration rows plus the first ``k = min(1000, half)`` test
rows and scored on the test rows after them, never on a row they were calibrated on.
``--cascades-only NAME`` (``digits`` or ``synthetic``) builds that problem's index and runs
only the cascade table.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom
from benchmarks.many_features_bench import make_data
from learners import AdaptClassifier, CEGBClassifier, CSTCClassifier, DAGClassifier
from polydom.serving.cascade_fit import fit_cascade, score_stages


def estimator():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))


def synthetic():
    X, y = make_data(20, 3000, 0, 0)
    Xc, yc = make_data(20, 1000, 0, 1)
    Xt, yt = make_data(20, 6000, 0, 2)
    groups = {f"x{i:02d}": [i] for i in range(20)}
    return "8-class generator (20 features)", X, y, Xc, yc, Xt, yt, groups


def digits():
    X, y = load_digits(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=400, random_state=0, stratify=y)
    X, Xc, y, yc = train_test_split(X, y, test_size=397, random_state=0, stratify=y)
    groups = {f"row{r}": list(range(8 * r, 8 * r + 8)) for r in range(8)}
    return "digits (10 classes, 8 row features)", X, y, Xc, yc, Xt, yt, groups


def row(name, model, Xt, yt, seconds):
    """One table row, printed as it is made (a long run keeps what it finished)."""
    per_row = getattr(model, "prediction_cost", None) or model.predict_cost
    cost = np.asarray(per_row(Xt), dtype=np.float64)
    out = (name, float(cost.mean()), float(cost.min()), float(cost.max()),
           float(np.mean(model.predict(Xt) == yt)), seconds)
    print("  ..", *out, flush=True)
    return out


def fitted(model, X, y):
    """The model fitted, and the CPU seconds the fit took."""
    t = time.process_time()
    model.fit(X, y)
    return model, time.process_time() - t


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cascades-only", choices=("digits", "synthetic"))
    only = parser.parse_args(argv).cascades_only
    warnings.simplefilter("ignore")
    problems = {"synthetic": synthetic, "digits": digits}
    for key in ([only] if only else list(problems)):
        label, X, y, Xc, yc, Xt, yt, groups = problems[key]()
        m = len(groups)
        costs = {g: "1" for g in groups}
        rows = []
        learner = learners.SklearnLearner(estimator(), X, y, features=groups, cv=(Xc, yc))
        t0 = time.process_time()
        index = polydom.build_index(costs, learner, traversal="anytime", max_expansions=150)
        sec = time.process_time() - t0
        for b in range(1, m + 1):
            hit = index.lookup(1.0, float(b))
            cols = index.model_columns(hit.features)
            acc = float(np.mean(hit.model.predict(Xt[:, cols]) == yt))
            rows.append((f"static index, budget {b}", float(hit.cost), float(hit.cost),
                         float(hit.cost), acc, sec if b == 1 else 0.0))
        if not only:
            learner_rows(index, groups, X, y, Xt, yt, rows, label, m)
        cascades(index, Xc, yc, Xt, yt)


def learner_rows(index, groups, X, y, Xt, yt, rows, label, m) -> None:
    """The budgeted learners' rows next to the static index's, printed as one table."""
    fc = {g: 1.0 for g in groups}
    hpc_hit = index.lookup(1.0, float(m))
    hpc = AdaptClassifier.from_index(index, 1.0, float(m)).high_cost_model
    hpc_cols = list(index.model_columns(hpc_hit.features))
    for p_full in (0.3, 0.6):
        for t in (0.003, 0.01):
            model, sec = fitted(AdaptClassifier(
                hpc, method="lin", p_full=p_full, tradeoff=t, feature_costs=fc,
                feature_groups=groups, high_cost_columns=hpc_cols, n_starts=3,
                max_iter=6, inner_iter=150), X, y)
            rows.append(row(f"ADAPT-LIN p_full={p_full} gamma={t}", model, Xt, yt, sec))
    bank = None
    for t in (0.003, 0.01, 0.03):
        model, sec = fitted(DAGClassifier(
            feature_groups=groups, feature_costs=fc, tradeoff=t, cv=3,
            estimator=estimator(), bank=bank,
            subsets="greedy" if m > 12 else None, random_state=0), X, y)
        bank = model.bank_
        rows.append(row(f"DAG ({'greedy blocks' if m > 12 else 'one block per feature'}) "
                        f"tradeoff={t}", model, Xt, yt, sec))
    for t in (0.03, 0.1, 0.3):
        model, sec = fitted(CEGBClassifier(
            feature_costs=fc, feature_groups=groups, tradeoff=t,
            n_estimators=60, random_state=0), X, y)
        rows.append(row(f"CEGB tradeoff={t}", model, Xt, yt, sec))
    for t in (0.1, 1.0):
        model, sec = fitted(CSTCClassifier(
            feature_costs=fc, feature_groups=groups, tradeoff=t,
            n_trees=30, max_sweeps=3, random_state=0), X, y)
        rows.append(row(f"CSTC (one-vs-rest) tradeoff={t}", model, Xt, yt, sec))
    print(f"\n### {label}: fresh rows {len(yt)}\n")
    print("| method | mean cost per row | min-max cost | accuracy | fit CPU s |")
    print("|---|---|---|---|---|")
    for name, mean, lo, hi, acc, sec in rows:
        print(f"| {name} | {mean:.2f} | {lo:.0f}-{hi:.0f} | {acc:.3f} | {sec:.1f} |")


def cascades(index, Xc, yc, Xt, yt) -> None:
    """Cascades over the skyline at the default grid (64), timed per budget, scored on test
    rows none of them was calibrated on."""
    k = min(1000, len(yt) // 2) if len(yc) < 2000 else 0
    Xcal = np.vstack([Xc, Xt[:k]])
    ycal = np.concatenate([yc, yt[:k]])
    rest, y_rest = Xt[k:], yt[k:]
    pool = sorted({c.key: c for sky in index.table.skylines for c in sky}.values(),
                  key=lambda c: c.cost(1.0))
    scores = score_stages(index, pool, Xcal, ycal)
    print(f"\nfit_cascade, grid 64, {len(ycal)} calibration rows, pool {len(pool)} skyline "
          f"models (CPU s per budget; scored on the {len(y_rest)} test rows after the first "
          f"{k}, none calibrated on):\n")
    print("| budget | CPU s | stages | expected cost | test accuracy |")
    print("|---|---|---|---|---|")
    for b in (2.0, 4.0, 6.0):
        t0 = time.process_time()
        cand = fit_cascade(index, Xcal, ycal, b, 1.0, scores=scores)
        sec = time.process_time() - t0
        cascade = cand.payload
        stages = cascade.n_stages if hasattr(cascade, "n_stages") else 1
        pred = (cascade.predict(rest[:, cascade.input_columns]) if stages > 1 else
                cand.payload.predict(rest[:, index.model_columns(cand.features)]))
        print(f"| {b:g} | {sec:.2f} | {stages} | {float(cand.cost(1.0)):.2f} | "
              f"{float(np.mean(pred == y_rest)):.3f} |")


if __name__ == "__main__":
    main()
