"""The sweep's up-front bound (issue 31 item 6): what a crossing costs, and how soon a pool
that crosses too often is refused.

Two measurements in one run, medians of ``--repeats``:

* the kinetic sweep over ``--lines`` lines whose every pair crosses once: seconds per
  crossing event (what ``MAX_CROSSINGS`` = 500,000 events cost);
* ``PolyDomIndex.build`` over ``--pool`` such lines (10^5 in the probe, 5 * 10^9 crossings):
  the time to refuse, as a ratio to the time the caller took to make the candidates;
* ``prune_dominated`` over ``--parallel`` parallel lines, each cheaper and less accurate than
  the next (all kept, no crossing): seconds (O(K * S) exact tests before the filter at the
  domain's start).

    PYTHONPATH=. python benchmarks/sweep_bound_bench.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from polydom import Candidate, PolyDomIndex
from polydom.errors import InvalidArgumentError
from polydom.index.dominance import prune_dominated
from polydom.index.sweep import MAX_CROSSINGS, kinetic_sweep


def _lines(k: int) -> list[Candidate]:
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 100, k))
    b = np.sort(rng.uniform(0, 100, k))[::-1]
    return [Candidate(f"c{i}", 0.5 + 0.4 * i / k, [a[i], b[i]]) for i in range(k)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--pool", type=int, default=100_000)
    parser.add_argument("--parallel", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    cands = _lines(args.lines)
    coefs = [c.cost.coefficients for c in cands]
    accs = [c.accuracy for c in cands]
    per_event = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = kinetic_sweep(coefs, accs, 0.0, float("inf"))
        per_event.append((time.perf_counter() - start) / result.events)
    print(f"sweep over {args.lines} all-crossing lines: {result.events} events, median "
          f"{statistics.median(per_event) * 1e6:.0f} us per event; MAX_CROSSINGS = "
          f"{MAX_CROSSINGS:,} events ~ {statistics.median(per_event) * MAX_CROSSINGS:.0f} s")

    make, refuse = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        pool = _lines(args.pool)
        made = time.perf_counter()
        try:
            PolyDomIndex.build(pool, 0.0, float("inf"))
        except InvalidArgumentError as exc:
            message = str(exc)
        else:
            raise SystemExit("the pool was not refused")
        make.append(made - start)
        refuse.append(time.perf_counter() - made)
    print(f"{args.pool:,} all-crossing candidates: made in median {statistics.median(make):.2f} "
          f"s, refused in median {statistics.median(refuse):.2f} s (ratio "
          f"{statistics.median(refuse) / statistics.median(make):.2f}): {message}")

    k = args.parallel
    parallel = [Candidate(f"p{i}", 0.5 + 0.4 * i / k, [float(i), 1.0]) for i in range(k)]
    prune = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        kept = prune_dominated(parallel, 0.0, float("inf"))
        prune.append(time.perf_counter() - start)
    print(f"prune_dominated over {k:,} parallel lines ({len(kept):,} kept): median "
          f"{statistics.median(prune):.2f} s")


if __name__ == "__main__":
    main()
