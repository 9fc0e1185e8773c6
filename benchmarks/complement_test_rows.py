"""Fold estimates against test rows that are the complement of the training rows (issue 22).

``benchmarks/mixed_pool.py`` splits one fixed set of 569 rows (breast cancer) into 75%
training and 25% test rows, 20 times: the test rows are the rows the training share did
not take.  This script asks whether that alone makes a model's fold estimate negatively
correlated over splits with its test accuracy, on a synthetic population where fresh rows
exist.  ``--datasets`` times, 569 rows are drawn from a population of 60,000
(``sklearn.datasets.make_classification``, 30 columns) and fixed; that dataset is split
``--splits`` times as ``mixed_pool.py`` splits breast cancer; each time the model
(standardised logistic regression on the first 10 columns, as the lattice's ``mean`` block)
is scored on the 5 seeded stratified folds of the training rows
(``learners.EvaluationProtocol``) and refitted on them, and its accuracy is measured on the
142-143 complementary test rows and on 20,000 fresh rows of the population that no dataset
uses.  It prints the correlation over the splits of one dataset (averaged over datasets) of
the fold estimate with each test accuracy, and the fold estimate minus each, on average.

Run:  PYTHONPATH=$PWD python benchmarks/complement_test_rows.py --datasets 10 --splits 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners

ROWS, FRESH, POPULATION = 569, 20_000, 60_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=10, help="fixed datasets (10)")
    parser.add_argument("--splits", type=int, default=40, help="splits of each (40)")
    args = parser.parse_args()
    start = time.perf_counter()
    X, y = make_classification(n_samples=POPULATION, n_features=30, n_informative=8,
                               n_redundant=6, flip_y=0.03, class_sep=1.0, random_state=0)
    X_fresh, y_fresh = X[-FRESH:, :10], y[-FRESH:]
    pool = POPULATION - FRESH
    rng = np.random.default_rng(0)
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    corr: dict[str, list[float]] = {"complement": [], "fresh": []}
    gap: dict[str, list[float]] = {"complement": [], "fresh": []}
    for _ in range(args.datasets):
        take = rng.choice(pool, size=ROWS, replace=False)
        Xd, yd = X[take, :10], y[take]
        rows = []
        for split in range(args.splits):
            X_tr, X_te, y_tr, y_te = train_test_split(Xd, yd, test_size=0.25,
                                                      random_state=split, stratify=yd)
            protocol = learners.EvaluationProtocol(folds=5, seed=split)
            folds = cross_val_score(est, X_tr, y_tr, cv=protocol.splits(y_tr)).mean()
            model = est.fit(X_tr, y_tr)
            rows.append((folds, model.score(X_te, y_te), model.score(X_fresh, y_fresh)))
        cv, complement, fresh = np.array(rows).T
        for name, acc in (("complement", complement), ("fresh", fresh)):
            corr[name].append(float(np.corrcoef(cv, acc)[0, 1]))
            gap[name].append(float(np.mean(cv - acc)))
    print(f"{args.datasets} fixed datasets of {ROWS} rows, {args.splits} splits each; "
          "logistic regression on 10 of 30 columns; 5-fold estimate on the 75% training rows")
    print("| test rows | corr over splits (fold estimate, test accuracy): mean [min, max] "
          "over datasets | fold estimate - test (mean) |")
    print("|---|---|---|")
    for name, label in (("complement", "complement of the training rows (142-143)"),
                        ("fresh", f"fresh rows of the population ({FRESH})")):
        c = np.array(corr[name])
        print(f"| {label} | {c.mean():+.2f} [{c.min():+.2f}, {c.max():+.2f}] | "
              f"{np.mean(gap[name]):+.4f} |")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
