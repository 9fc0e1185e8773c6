"""Opening a DAG-heavy store: models built on first use (lazy) vs all at open (eager).

A store holding a lattice over the wine data's three feature groups and six DAG candidates
(``learners.sweep`` of the DAG at six trade-offs; every DAG candidate keeps its classifier bank
and filter trees, dozens of scikit-learn sub-models, inside its own model blob) is built
once.  Then, in one process, each timed ``--repeats`` times (median):

* ``lazy open``: ``polydom.open_index(url)``, what a caller gets now (no model decoded);
* ``eager open``: ``open_index`` then every candidate's model built (what ``open_index``
  did before models were lazy: the same digest checks, allow-list walk and skops decode of
  every blob, now through ``LazyPayload``);
* ``first predict``: a lazy open then one ``Index.predict`` (decodes only the chosen model).

With ``--baseline PATH`` (a checkout of the code before lazy opening, e.g. ``git worktree
add /tmp/base <commit>``) that code builds the same store (its own schema) and its eager
``open_index`` is timed in fresh processes, next to this code's in fresh processes.

Run:  PYTHONPATH=$PWD python benchmarks/open_lazy_bench.py [--repeats 5] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom
from learners import DAGClassifier, sweep

GROUPS = {"chem": [0, 1, 2, 3, 4], "phenols": [5, 6, 7, 8], "colour": [9, 10, 11, 12]}
COSTS = {"chem": "1 + 0.1*n", "phenols": "2", "colour": "0.5 + 0.2*n"}
TRADE_OFFS = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2]
_TIMER = """
import sys, time
t = time.perf_counter()
import polydom
index = polydom.open_index(sys.argv[1])
print(time.perf_counter() - t)
"""


def build_store(path: Path) -> str:
    """The DAG-heavy store (built once per run)."""
    X, y = load_wine(return_X_y=True)
    xtr, xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    extra = sweep(DAGClassifier(feature_groups=GROUPS, cv=3), TRADE_OFFS, xtr, ytr, COSTS,
                  evaluation=(xte, yte))
    learner = learners.SklearnLearner(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)), xtr, ytr,
        features=GROUPS, cv=3)
    url = f"sqlite:///{path}"
    polydom.build_index(COSTS, learner, alpha=1.5, n_max=100.0, store=url,
                        extra_candidates=extra)
    return url


def count_sub_models(url: str, resolve_payload) -> int:
    """How many scikit-learn sub-models an eager open decodes (calls of the DAG's
    ``load_estimator``, counted by wrapping it)."""
    import learners.budgeted.dag.classifier as dag_module

    calls = []
    original = dag_module.load_estimator

    def counted(blob, what="model"):
        calls.append(what)
        return original(blob, what)

    dag_module.load_estimator = counted
    try:
        for c in polydom.open_index(url).candidates:
            resolve_payload(c.payload)
    finally:
        dag_module.load_estimator = original
    return len(calls)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--build-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only is not None:  # the baseline's own store, built by its own code
        build_store(args.build_only)
        return
    from polydom.index.lazy_payload import LazyPayload, resolve_payload

    with tempfile.TemporaryDirectory() as tmp:
        url = build_store(Path(tmp) / "dag.db")
        index = polydom.open_index(url)
        dags = [c for c in index.candidates if c.learner == "dag"]
        lazy = sum(isinstance(c.payload, LazyPayload) for c in index.candidates)
        subs = count_sub_models(url, resolve_payload)
        print(f"store: {len(index.candidates)} candidates, {len(dags)} DAG candidates, "
              f"{lazy} stored models, {subs} scikit-learn sub-models decoded by an eager open")
        X = load_wine(return_X_y=True)[0]

        def eager():
            for c in polydom.open_index(url).candidates:
                resolve_payload(c.payload)

        def first_predict():
            polydom.open_index(url).predict(X[:5], size=50.0, budget=100.0)

        rows = [("lazy open", median_time(lambda: polydom.open_index(url), args.repeats)),
                ("eager open", median_time(eager, args.repeats)),
                ("lazy open + first predict", median_time(first_predict, args.repeats))]
        if args.baseline is not None:
            env = {**os.environ, "PYTHONPATH": str(args.baseline)}
            base_db = Path(tmp) / "baseline.db"
            subprocess.run([sys.executable, __file__, "--build-only", str(base_db)], env=env,
                           cwd=args.baseline, check=True, capture_output=True)
            times = [float(subprocess.run([sys.executable, "-c", _TIMER,
                                           f"sqlite:///{base_db}"], env=env,
                                          cwd=args.baseline, capture_output=True, text=True,
                                          check=True).stdout.split()[-1])
                     for _ in range(args.repeats)]
            now = [float(subprocess.run([sys.executable, "-c", _TIMER, url],
                                        env={**os.environ, "PYTHONPATH": os.getcwd()},
                                        capture_output=True, text=True,
                                        check=True).stdout.split()[-1])
                   for _ in range(args.repeats)]
            rows += [("baseline open_index (fresh process, imports included)",
                      statistics.median(times)),
                     ("this open_index (fresh process, imports included)",
                      statistics.median(now))]
        base = rows[1][1]
        print(f"{'what':58s} {'median s':>10s} {'vs eager':>9s}")
        for name, seconds in rows:
            print(f"{name:58s} {seconds:10.4f} {seconds / base:9.3f}")


if __name__ == "__main__":
    main()
