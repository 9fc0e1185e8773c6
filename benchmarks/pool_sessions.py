"""What a process-pool session costs: the first one starts the processes, later ones reuse them.

    PYTHONPATH=$PWD python benchmarks/pool_sessions.py [--sessions 4]

Each session trains four feature sets of the breast-cancer data (LogisticRegression, 3-fold
CV) on ``PoolExecutor(2)`` (a loky pool kept between sessions): wall seconds per session,
the first one including starting two worker processes (which import scikit-learn and
polydom), next to the same four trainings in-process (one BLAS thread, as in the workers).
Prints the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

import learners
from lattice.executor import InProcessExecutor, PoolExecutor
from lattice.feature_space import expand_task

GROUPS = {"a": list(range(10)), "b": list(range(10, 20)), "c": list(range(20, 30))}
TASKS = [(frozenset(s),) for s in (["a"], ["b"], ["c"], ["a", "b"])]


def session_seconds(executor, learner) -> float:
    start = time.perf_counter()
    with executor.session(learner) as run:
        results = list(run.map_unordered(expand_task, TASKS))
    assert len(results) == len(TASKS)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # lbfgs convergence on unscaled columns
    os.environ["PYTHONWARNINGS"] = "ignore"  # and in the workers
    X, y = load_breast_cancer(return_X_y=True)
    learner = learners.SklearnLearner(LogisticRegression(max_iter=200), X, y,
                                      features=GROUPS, cv=3)
    print(f"load average before: {os.getloadavg()}")
    with threadpool_limits(1):  # as in the workers
        print(f"in-process: {session_seconds(InProcessExecutor(), learner):.2f} s")
    pool = PoolExecutor(2)
    for k in range(args.sessions):
        print(f"pool session {k + 1}: {session_seconds(pool, learner):.2f} s")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
