"""What decides the mixed index's choices in ``benchmarks/mixed_pool.py`` (issue 22).

The same splits, learners, budgets and trade-offs as ``mixed_pool.py``, scored once on a
protocol of 5 folds repeated on R partitions (``learners.EvaluationProtocol(repeats=R)``;
partition 0 is exactly ``mixed_pool.py``'s protocol).  The served models are refitted on all
training rows, so they do not depend on the partition: only the *choices* do.  From each
candidate's fold scores this script gets R single-partition estimates and their mean, and
reports, per budget:

* the issue's criterion (mixed index minus the better single family on the test rows,
  paired over splits, with its standard error), choosing by each single partition's
  estimates and by the mean over the R partitions (repeated cross-validation);
* for the two families' own choices (by the mean over partitions), their cross-validated
  difference (lattice minus CEGB), the share of its variance over splits that comes from
  the partition (the within-split variance across partitions), and its correlation over
  splits with their difference on the test rows, for one partition and for the mean.

``--verbose`` prints, per split, both families' choices with their estimates and test
accuracies.

Run:  PYTHONPATH=$PWD python benchmarks/mixed_pool_noise.py --splits 20 --repeats 3
      PYTHONPATH=$PWD python benchmarks/mixed_pool_noise.py --splits 2 --trees 10 (smoke run)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from mixed_pool import BUDGETS, SIZE, TRADEOFFS, cost_model, paired, table
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import learners.registry
import polydom


def run_split(seed: int, n_estimators: int, folds: int, repeats: int) -> list[dict]:
    """Every candidate of the mixed pool: family ("lattice" or "cegb"), cost,
    per-partition estimates, test accuracy of its served model."""
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed,
                                              stratify=y)
    protocol = learners.EvaluationProtocol(folds=folds, seed=seed, repeats=repeats)
    model = cost_model()
    lattice_learner = learners.SklearnLearner(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X_tr, y_tr,
        features=model, cv=protocol)
    proto = learners.registry.get_learner("cegb").make(seed, n_estimators=n_estimators,
                                                       num_leaves=8)
    cegb = learners.sweep(proto, TRADEOFFS, X_tr, y_tr, model, evaluation=protocol)
    index = polydom.build_index(model, lattice_learner, extra_candidates=cegb)
    out = []
    for cand in index.candidates:
        pred = cand.payload.predict(X_te[:, index.model_columns(cand.needs)])
        scores = np.asarray(cand.fold_scores).reshape(repeats, folds)
        family = "cegb" if cand.learner == "cegb" else "lattice"  # lattice: the black box's name
        out.append({"key": str(cand.key), "learner": family, "cost": cand.cost(SIZE),
                    "partitions": scores.mean(axis=1), "test": float(np.mean(pred == y_te))})
    return out


def choose(cands: list[dict], budget: float, estimate: int | None,
           learner: str | None = None) -> dict:
    """What lookup(rule="best") answers: the highest estimate that fits (ties: cheaper);
    ``estimate`` is a partition, None the mean over partitions."""
    fit = [c for c in cands if c["cost"] <= budget and learner in (None, c["learner"])]

    def value(c: dict) -> float:
        return float(c["partitions"].mean() if estimate is None else c["partitions"][estimate])

    return max(fit, key=lambda c: (value(c), -c["cost"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10, help="random splits (default 10)")
    parser.add_argument("--trees", type=int, default=100, help="CEGB rounds (default 100)")
    parser.add_argument("--folds", type=int, default=5, help="protocol folds (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="partitions (default 3)")
    parser.add_argument("--verbose", action="store_true", help="per-split choices")
    args = parser.parse_args()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = [run_split(s, args.trees, args.folds, args.repeats) for s in range(args.splits)]
    R = args.repeats
    ways = [*range(R), None]
    names = [f"partition {r}" for r in range(R)] + [f"mean of {R}"]
    print(f"breast cancer, {args.splits} splits as mixed_pool.py, {args.folds} folds on {R} "
          "partitions; test accuracy, mixed minus the better single family (± s.e., paired "
          "over splits) when every index chooses by ...")
    rows = []
    for budget in BUDGETS:
        row = [f"{budget:g}"]
        for way in ways:
            acc = {fam: np.array([choose(c, budget, way, fam or None)["test"] for c in runs])
                   for fam in ("lattice", "cegb", "")}
            better = max(("lattice", "cegb"), key=lambda f: acc[f].mean())
            d, se = paired(acc[""], acc[better])
            row.append(f"{d:+.4f} ± {se:.4f}{'' if d + se >= 0 else ' (no)'}")
        rows.append(row)
    table(["budget", *names], rows)
    print("\nthe families' own choices (by the mean): lattice minus CEGB, estimated and on the "
          "test rows")
    rows = []
    for budget in BUDGETS:
        pairs = [(choose(c, budget, None, "lattice"), choose(c, budget, None, "cegb"))
                 for c in runs]
        cv = np.array([[lat["partitions"][r] - ceg["partitions"][r] for r in range(R)]
                       for lat, ceg in pairs])  # splits x partitions
        test = np.array([lat["test"] - ceg["test"] for lat, ceg in pairs])
        total = cv.var(ddof=1)
        share = float(cv.var(axis=1, ddof=1).mean() / total) if total > 0 and R > 1 else 0.0

        def corr(a: np.ndarray, b: np.ndarray = test) -> str:
            return f"{np.corrcoef(a, b)[0, 1]:+.2f}" if a.std() > 0 and b.std() > 0 else "-"

        one = np.mean([float(corr(cv[:, r])) for r in range(R)]) if corr(cv[:, 0]) != "-" \
            else float("nan")
        rows.append([f"{budget:g}", f"{cv.mean():+.4f}", f"{test.mean():+.4f}",
                     f"{share:.2f}", f"{one:+.2f}", corr(cv.mean(axis=1))])
        if args.verbose:
            for s, (lat, ceg) in enumerate(pairs):
                print(f"  budget {budget:g} split {s}: lattice {lat['key']} "
                      f"cv {lat['partitions'].round(4)} test {lat['test']:.4f} | "
                      f"{ceg['key']} cv {ceg['partitions'].round(4)} test {ceg['test']:.4f}")
    table(["budget", "cv difference", "test difference", "partition share of its variance",
           "corr(cv, test), one partition", f"corr(cv, test), mean of {R}"], rows)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
