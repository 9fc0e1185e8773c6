"""Realised cost per row of every budgeted pick on fresh rows, against its budget (issue 28).

A budgeted candidate's stored cost is the served model's own usage (the refit on all
training rows, priced over those rows: ``learners.sweep``); its accuracy is estimated out
of fold.  This script asks whether a pick made by that stored cost keeps its budget on rows
the build never saw.  For each seed it draws ``--rows`` training rows and ``--fresh``
fresh rows from the synthetic population of ``tests/costed_population.py`` (five costed
feature groups, two of whose costs grow with the item size ``n``), sweeps CEGB, CSTC, the
DAG and ADAPT over their trade-off grids on one 3-fold protocol, builds one index per
learner, and for every budget of a grid at size ``--size`` looks up the pick and measures
``Index.realised_cost(X_fresh, size, budget).mean()``.  It prints, per learner, the
largest realised / budget over budgets and seeds and the largest realised / stored, and
fails (exit 1) when a pick's realised mean exceeds its budget by more than ``--slack``.

Run:  PYTHONPATH=$PWD python benchmarks/served_cost.py --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import time

import learners
import learners.registry
import polydom
from tests.costed_population import COSTS, GROUPS, population

BUDGETS = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 18.0, 22.0, 26.0, 30.0, 40.0)


def prototypes(seed: int) -> dict[str, tuple[object, list[float]]]:
    """Each budgeted learner (small settings: the machine is shared) and its grid."""
    return {
        "cegb": (learners.CEGBClassifier(n_estimators=30, num_leaves=8, random_state=seed),
                 [1e-4, 1e-3, 3e-3, 1e-2, 3e-2]),
        "cstc": (learners.CSTCClassifier(depth=2, random_state=seed), [1e-3, 1e-2, 0.1, 1.0]),
        "dag": (learners.DAGClassifier(n_subsets=4, cv=3, random_state=seed),
                [1e-3, 1e-2, 0.05]),
        "adapt": (learners.registry.get_learner("adapt").make(seed), [1e-3, 1e-2]),
    }


def run_seed(seed: int, rows: int, fresh: int, size: float) -> list[tuple]:
    """One seed: (learner, budget, pick, stored cost, realised mean) per budget that fits."""
    X, y = population(rows, seed)
    X_fresh, _ = population(fresh, 10_000 + seed)
    cost_model = polydom.CostModel(COSTS, columns=GROUPS)
    protocol = learners.EvaluationProtocol(folds=3, seed=seed)
    out = []
    for name, (proto, grid) in prototypes(seed).items():
        cands = learners.sweep(proto, grid, X, y, cost_model, evaluation=protocol,
                               sizes=[size])
        index = polydom.Index(polydom.PolyDomIndex.build(cands, 1.0, 1000.0), cost_model)
        for budget in BUDGETS:
            hit = index.lookup(size, budget)
            if hit is not None:
                realised = float(index.realised_cost(X_fresh, size, budget).mean())
                out.append((name, budget, hit.key, hit.cost, realised))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds (3)")
    parser.add_argument("--rows", type=int, default=800, help="training rows (800)")
    parser.add_argument("--fresh", type=int, default=20_000, help="fresh rows (20,000)")
    parser.add_argument("--size", type=float, default=100.0, help="item size (100)")
    parser.add_argument("--slack", type=float, default=0.05, help="allowed overrun (0.05)")
    args = parser.parse_args()
    start = time.perf_counter()
    picks = [(seed, *p) for seed in range(args.seeds)
             for p in run_seed(seed, args.rows, args.fresh, args.size)]
    print(f"{args.seeds} seeds, {args.rows} training rows, {args.fresh} fresh rows, "
          f"size {args.size:g}, {len(BUDGETS)} budgets {BUDGETS[0]:g}..{BUDGETS[-1]:g}")
    print("| learner | picks | max realised / budget | max realised / stored | "
          f"over budget + {args.slack:.0%} |")
    print("|---|---|---|---|---|")
    failed = []
    for name in prototypes(0):
        mine = [p for p in picks if p[1] == name]
        over = [p for p in mine if p[5] > (1 + args.slack) * p[2]]
        failed += over
        by_budget = max(p[5] / p[2] for p in mine)
        by_stored = max(p[5] / p[4] for p in mine if p[4] > 0)
        print(f"| {name} | {len(mine)} | {by_budget:.3f} | {by_stored:.3f} | {len(over)} |")
    for seed, _, budget, key, stored, realised in failed:
        print(f"over: seed {seed} {key} budget {budget:g} stored {stored:.3f} "
              f"realised {realised:.3f}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
