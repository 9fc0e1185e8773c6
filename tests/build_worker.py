"""A real persisted build_index run in its own process (killed by test_build_store).

    python tests/build_worker.py URL TRAIN_LOG [--pace SECONDS]

Explores the lattice of five column groups of the breast-cancer data with a scikit-learn
pipeline, persisting into URL; every training is appended to TRAIN_LOG as it starts.
"""

from __future__ import annotations

import argparse
import os
import time

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom

GROUPS = {
    "mean": list(range(0, 10)),
    "error": list(range(10, 20)),
    "worst_size": [20, 21, 22, 23],
    "worst_shape": [24, 25, 26, 27],
    "worst_other": [28, 29],
}
COSTS = {
    "mean": "2 + 0.01*n",
    "error": "1 + 0.05*n",
    "worst_size": "5",
    "worst_shape": "0.5 + 0.002*n**2",
    "worst_other": "0.2*n",
}


class LoggingLearner(learners.SklearnLearner):
    """A SklearnLearner that appends each feature set it trains to a log file."""

    def __init__(self, *args, log=None, pace=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = log
        self.pace = pace

    def expand(self, features):
        with open(self.log, "a") as fh:
            fh.write(",".join(sorted(features)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        time.sleep(self.pace)
        return super().expand(features)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("log")
    parser.add_argument("--pace", type=float, default=0.0)
    args = parser.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    learner = LoggingLearner(model, X, y, features=GROUPS, cv=3, log=args.log, pace=args.pace)
    index = polydom.build_index(COSTS, learner, alpha=1.0, n_max=1000.0, store=args.url)
    print(f"published build {index.info['build_id']} after {index.info['trained']} trainings")


if __name__ == "__main__":
    main()
