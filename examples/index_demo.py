"""Build Poly-Dom indexes over the paper's Figure 3/5 curves and over random curves,
print their ranges and skylines, and answer a few lookups.

    python examples/index_demo.py
"""

from __future__ import annotations

import time

import numpy as np

from polydom import Candidate, IndexAll, NaiveLookup, PolyDomIndex


def short(cand: Candidate) -> str:
    """The cost curve with 3 significant digits, for display."""
    terms = [f"{c:.3g}" + ("" if k == 0 else "*n" if k == 1 else f"*n**{k}")
             for k, c in enumerate(cand.cost.coefficients) if c]
    return " + ".join(reversed(terms)) or "0"


def show(index: PolyDomIndex, limit: int = 8) -> None:
    for k, ((n_lo, n_hi), sky) in enumerate(zip(index.ranges, index.skylines, strict=True)):
        if k == limit:
            print(f"  ... {len(index) - limit} more ranges")
            break
        cells = ", ".join(f"{c.key} (acc {c.accuracy:.3f}, cost {short(c)})" for c in sky)
        print(f"  n in [{n_lo:.6g}, {n_hi:.6g}): {cells}")


def main() -> None:
    print("== The paper's Figure 3/5: four candidate models ==")
    fig5 = [
        Candidate("F1", 0.70, "3*n + 0.2*n**2"),
        Candidate("F2", 0.75, "2 + 0.1*n**2"),
        Candidate("F3", 0.65, "8"),
        Candidate("F4", 0.80, "10"),
    ]
    index = PolyDomIndex.build(fig5)
    every = IndexAll.build(fig5)
    print(f"Poly-Dom keeps {len(index)} ranges ({index.entries} cells); "
          f"Index-All keeps {len(every)} ({every.entries} cells)")
    show(index)
    for size, budget in [(0.5, 1.6), (5.0, 9.0), (5.0, 10.0), (9.0, 9.0), (0.5, 1.0)]:
        hit = index.lookup(size, budget)
        answer = f"{hit.key} (accuracy {hit.accuracy})" if hit else "nothing fits"
        print(f"  lookup(size={size}, budget={budget}) -> {answer}")

    print("\n== 2,000 random cubic cost curves on sizes [0, 500] ==")
    rng = np.random.default_rng(1)
    cands = []
    for i in range(2000):
        a0 = rng.uniform(0, 100)
        a1 = rng.uniform(0, (100 - a0) / 10)
        a2 = rng.uniform(0, (100 - a0 - a1) / 4)
        cands.append(Candidate(f"m{i}", round(float(rng.uniform(0.5, 1.0)), 3),
                               [a0, a1, a2, rng.uniform(0, a2 / 50)]))
    start = time.perf_counter()
    index = PolyDomIndex.build(cands, 0.0, 500.0)
    built = time.perf_counter() - start
    naive = NaiveLookup.build(cands, 0.0, 500.0)
    print(f"built in {built:.2f} s: {index.stats_['undominated']} undominated candidates, "
          f"{index.stats_['crossings']} crossings swept, {len(index)} ranges, "
          f"{index.entries} skyline cells")
    show(index, limit=5)
    sizes = rng.uniform(0, 500, 5)
    budgets = rng.uniform(50, 20000, 5)
    for size, budget in zip(sizes, budgets, strict=True):
        hit = index.lookup(size, budget)
        check = naive.lookup(size, budget)
        assert (hit and hit.key) == (check and check.key)
        print(f"  lookup(size={size:7.2f}, budget={budget:8.1f}) -> "
              f"{hit.key if hit else None} (accuracy {hit.accuracy if hit else '-'}, "
              f"cost {hit.cost(size) if hit else 0:.1f}); full scan agrees")
    q = 100_000
    qs, qb = rng.uniform(0, 500, q), rng.uniform(0, 20000, q)
    start = time.perf_counter()
    index.lookup_many(qs, qb)
    per = (time.perf_counter() - start) / q * 1e6
    print(f"lookup_many: {q} queries at {per:.3f} us each")


if __name__ == "__main__":
    main()
