"""One index over a lattice of column blocks and CEGB over single columns (issue 9).

Breast cancer with per-column extraction costs: the 10 "mean" columns cost 1 each, the 10
"error" columns 5 each, the 10 "worst" columns 20 each.  Every column is an atomic feature
(``polydom.CostModel``); the lattice explores the three blocks (bundles of their columns'
atoms, 2**3 sets; 2**30 column subsets could not be explored) with a scikit-learn logistic
regression, and CEGB picks columns row by row over a grid of trade-offs.  Three indexes are
built from the same candidates:

* ``lattice``: ``polydom.build_index(cost_model, learner)``;
* ``cegb``: the CEGB candidates alone;
* ``mixed``: ``polydom.build_index(cost_model, learner, extra_candidates=cegb)``, one index.

Every candidate, the lattice's and CEGB's, is scored on one evaluation protocol
(``learners.EvaluationProtocol``: 5 seeded stratified folds of the training rows), so its
accuracy is a fold mean with a standard error and the CEGB candidates' needs are the
out-of-fold fraction of rows that needed each column; the served models are refitted on all
training rows.  For each budget per row, each index picks its model, under the lookup rule
``"best"`` (the highest estimated accuracy that fits) and, for the mixed index, also
``"one_se"`` (the cheapest model within one standard error of that one); the table reports
the chosen model's accuracy on the test split and its *realised* mean cost per row there
(CEGB: the columns each test row's paths needed, each paid once), averaged over random
splits, and the mixed index's accuracy minus that of the better single-learner index at that
budget (the one with the higher mean), paired over splits, with its standard error.  A
second table compares ``"one_se"`` with ``"best"`` on the mixed index: mean realised cost of
each and their test accuracies, paired over splits.

``--repeats R`` scores on the 5 folds repeated on R partitions (repeated cross-validation,
``EvaluationProtocol(repeats=R)``; default 1); ``benchmarks/mixed_pool_noise.py`` shows per
split what decides the mixed index's choices.

Run:  PYTHONPATH=$PWD python benchmarks/mixed_pool.py --splits 20
      PYTHONPATH=$PWD python benchmarks/mixed_pool.py --splits 20 --repeats 3
      PYTHONPATH=$PWD python benchmarks/mixed_pool.py --splits 2 --trees 20 (smoke run)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import learners.registry
import polydom

BUDGETS = (5.0, 12.0, 31.0, 60.0, 200.0, 260.0)
BLOCKS = {"mean": range(0, 10), "error": range(10, 20), "worst": range(20, 30)}
PRICE = {"mean": 1.0, "error": 5.0, "worst": 20.0}
TRADEOFFS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)
SIZE = 1.0  # costs do not depend on n here


def cost_model() -> polydom.CostModel:
    """Atoms x0..x29 (one per column, priced by block), bundles mean/error/worst."""
    atoms, columns, bundles = {}, {}, {}
    for block, cols in BLOCKS.items():
        bundles[block] = [f"x{j}" for j in cols]
        for j in cols:
            atoms[f"x{j}"] = [PRICE[block]]
            columns[f"x{j}"] = [j]
    return polydom.CostModel(atoms, bundles=bundles, columns=columns)


def realised(index: polydom.Index, X: np.ndarray, y: np.ndarray, budget: float,
             rule: str = "best"):
    """Test accuracy, mean realised cost per row, and the learner of the model chosen under
    the lookup ``rule``."""
    hit = index.lookup(SIZE, budget, rule=rule)
    if hit is None:
        return float("nan"), 0.0, "-"
    pred = index.predict(X, SIZE, budget, rule=rule)
    cand = hit.candidate
    model = index.cost_model
    if cand.learner == "cegb":
        est = hit.model.estimator
        usage = est.feature_usage(X)  # rows x the estimator's features (atoms x{j})
        prices = np.array([model.atoms[name](SIZE) for name in est.feature_names_])
        cost = float((usage @ prices).mean())
    else:
        cost = float(cand.cost(SIZE))
    return float(np.mean(pred == y)), cost, cand.learner


def run_split(seed: int, n_estimators: int, folds: int, repeats: int = 1) -> dict:
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed,
                                              stratify=y)
    protocol = learners.EvaluationProtocol(folds=folds, seed=seed,
                                           repeats=repeats)  # one for both learners
    model = cost_model()
    lattice_learner = learners.SklearnLearner(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X_tr, y_tr,
        features=model, cv=protocol)
    proto = learners.registry.get_learner("cegb").make(seed, n_estimators=n_estimators,
                                                       num_leaves=8)
    cegb = learners.sweep(proto, TRADEOFFS, X_tr, y_tr, model, evaluation=protocol)
    cache: dict = {}  # the lattice trains once for both of its indexes
    indexes = {
        "lattice": polydom.build_index(model, lattice_learner, cache=cache),
        "cegb": polydom.Index(polydom.PolyDomIndex.build(cegb), model),
        "mixed": polydom.build_index(model, lattice_learner, cache=cache,
                                     extra_candidates=cegb),
    }
    out = {name: [realised(index, X_te, y_te, b) for b in BUDGETS]
           for name, index in indexes.items()}
    out["one_se"] = [realised(indexes["mixed"], X_te, y_te, b, "one_se") for b in BUDGETS]
    return out


def table(header: list[str], rows: list[list[str]]) -> None:
    """Print a Markdown table."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) + " |")


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of a - b over the splits where both answered."""
    d = (a - b)[~(np.isnan(a) | np.isnan(b))]
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10, help="random splits (default 10)")
    parser.add_argument("--trees", type=int, default=100, help="CEGB rounds (default 100)")
    parser.add_argument("--folds", type=int, default=5, help="protocol folds (default 5)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="partitions the folds are repeated on (default 1)")
    args = parser.parse_args()
    start = time.perf_counter()
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(args.splits):
            runs.append(run_split(seed, args.trees, args.folds, args.repeats))
    names = ("lattice", "cegb", "mixed")
    again = f" repeated {args.repeats} times" if args.repeats > 1 else ""
    print(f"breast cancer, {args.splits} random splits (75% train, scored by {args.folds}-fold "
          f"cross-validation{again}, 25% test); mean over splits; cost = realised mean cost "
          "per test row; rule 'best'")
    header = ["budget"]
    for name in names:
        header += [f"{name} acc", f"{name} cost"]
    header += ["mixed picks", "mixed - better (± s.e.)"]
    rows = []
    worst_gap = np.inf
    for k, budget in enumerate(BUDGETS):
        row = [f"{budget:g}"]
        accs = {}
        for name in names:
            acc = np.array([r[name][k][0] for r in runs])
            cost = np.array([r[name][k][1] for r in runs])
            accs[name] = acc
            row += [f"{np.nanmean(acc):.4f}", f"{cost.mean():.1f}"]
        picks = [r["mixed"][k][2] for r in runs]
        row.append(", ".join(f"{p} {picks.count(p)}" for p in sorted(set(picks))))
        better = max(("lattice", "cegb"), key=lambda n: np.nanmean(accs[n]))
        d, se = paired(accs["mixed"], accs[better])
        worst_gap = min(worst_gap, d + se)
        row.append(f"{d:+.4f} ± {se:.4f}")
        rows.append(row)
    table(header, rows)
    print(f"mixed never below the better single index by more than one standard error: "
          f"{worst_gap >= 0} (smallest difference + s.e.: {worst_gap:+.4f})")
    print("\nthe mixed index under 'one_se' against 'best' (paired over splits)")
    rows = []
    for k, budget in enumerate(BUDGETS):
        acc = {r: np.array([run[r if r == "one_se" else "mixed"][k][0] for run in runs])
               for r in ("best", "one_se")}
        cost = {r: np.array([run[r if r == "one_se" else "mixed"][k][1] for run in runs])
                for r in ("best", "one_se")}
        picks = [run["one_se"][k][2] for run in runs]
        d, se = paired(acc["one_se"], acc["best"])
        dc, sec = paired(cost["one_se"], cost["best"])
        rows.append([f"{budget:g}", f"{np.nanmean(acc['best']):.4f}",
                     f"{cost['best'].mean():.1f}", f"{np.nanmean(acc['one_se']):.4f}",
                     f"{cost['one_se'].mean():.1f}",
                     ", ".join(f"{p} {picks.count(p)}" for p in sorted(set(picks))),
                     f"{d:+.4f} ± {se:.4f}", f"{dc:+.1f} ± {sec:.1f}"])
    table(["budget", "best acc", "best cost", "one_se acc", "one_se cost", "one_se picks",
           "acc one_se - best", "cost one_se - best"], rows)
    over = [
        (name, BUDGETS[k], r[name][k][1])
        for r in runs for name in (*names, "one_se") for k in range(len(BUDGETS))
        if r[name][k][1] > BUDGETS[k] + 1e-9
    ]
    print(f"realised mean cost over the budget: {len(over)} of "
          f"{len(runs) * (len(names) + 1) * len(BUDGETS)} (index, split, budget) cells"
          + (f"; worst {max(c - b for _, b, c in over):.2f} over" if over else ""))
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
