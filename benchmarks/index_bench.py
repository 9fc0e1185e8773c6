"""Index benchmark: Poly-Dom vs Index-All vs Naive-Lookup on random crossing cost curves.

Every method answers the same ``--queries`` (size, budget) pairs, each timed over the same
``--repeats`` passes (medians), and their answers are asserted equal before anything is
printed.  What each method does per query:

* Poly-Dom (``PolyDomIndex.lookup_position``): a binary search over its ranges, then one
  over that range's skyline (cost curves evaluated at the size);
* Index-All (``IndexAll.lookup_position``): the same two searches over a range at every
  crossing of the undominated curves;
* Naive, numpy scan (``NaiveLookup.lookup_position``): evaluates all K cost curves with one
  vectorised Horner pass and picks the best that fits;
* Naive, Python loop (the paper's Naive-Lookup): evaluates each curve in a Python loop.

Also: the floor of two bare ``bisect`` calls on lists the size of the ranges and of a
typical skyline, and ``lookup_many`` per query on the same queries tiled to ~100,000.

    python benchmarks/index_bench.py            # K = 10, 100, 1000, 2000, 10000
    python benchmarks/index_bench.py --sizes 10 100 --repeats 3
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from bisect import bisect_right
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from polydom import Candidate, IndexAll, NaiveLookup, PolyDomIndex  # noqa: E402


def random_candidates(k: int, rng: np.random.Generator) -> list[Candidate]:
    """Cubic curves with the paper's coefficient ranges (spec 6.1) plus a small cubic term:
    constant-heavy cheap curves and steep ones, so that they cross often."""
    out = []
    for i in range(k):
        a0 = rng.uniform(0, 100)
        a1 = rng.uniform(0, (100 - a0) / 10)
        a2 = rng.uniform(0, (100 - a0 - a1) / 4)
        a3 = rng.uniform(0, a2 / 50)
        out.append(Candidate(i, float(rng.uniform(0.5, 1.0)), [a0, a1, a2, a3]))
    return out


def python_scan(cands: list[Candidate], size: float, budget: float):
    """The paper's Naive-Lookup written as a plain loop."""
    best = None
    best_key = None
    for c in cands:
        cost = c.cost(size)
        if cost <= budget:
            key = (-c.accuracy, cost)
            if best is None or key < best_key:
                best, best_key = c, key
    return best


def per_call_us(fn, pairs, repeats: int) -> tuple[float, list]:
    """Median over ``repeats`` passes of the mean microseconds per call over ``pairs``, and
    the answers of the last pass."""
    times, answers = [], []
    for _ in range(repeats):
        answers = []
        start = time.perf_counter()
        for s, b in pairs:
            answers.append(fn(s, b))
        times.append((time.perf_counter() - start) / len(pairs) * 1e6)
    return statistics.median(times), answers


def batch_us(fn, sizes: np.ndarray, budgets: np.ndarray, repeats: int) -> tuple[float, list]:
    """Median over ``repeats`` of the microseconds per query of one batched call."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(sizes, budgets)
        times.append((time.perf_counter() - start) / len(sizes) * 1e6)
    return statistics.median(times), out.tolist()


def run(k: int, repeats: int, n_max: float, seed: int, queries: int) -> dict:
    """Build the three structures on K random candidates and time every method on the same
    ``queries`` (size, budget) pairs with the same number of repeats; every method's answers
    are asserted equal before any speed-up is computed."""
    rng = np.random.default_rng(seed)
    cands = random_candidates(k, rng)
    t0 = time.perf_counter()
    index = PolyDomIndex.build(cands, 0.0, n_max)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    every = IndexAll.build(cands, 0.0, n_max)
    build_all = time.perf_counter() - t0
    naive = NaiveLookup.build(cands, 0.0, n_max)
    top = n_max if math.isfinite(n_max) else 500.0
    sizes = rng.uniform(0, top, queries)
    budgets = np.array([rng.uniform(0, 1.2 * c.cost(s)) for s, c in
                        zip(sizes, rng.choice(cands, queries), strict=True)])
    pairs = list(zip(sizes.tolist(), budgets.tolist(), strict=True))
    position = {id(c): i for i, c in enumerate(cands)}

    def pos(c):
        return -1 if c is None else position[id(c)]

    ours, got = per_call_us(index.lookup_position, pairs, repeats)
    all_us, got_all = per_call_us(every.lookup_position, pairs, repeats)
    naive_np, got_np = per_call_us(naive.lookup_position, pairs, repeats)
    naive_py, got_py = per_call_us(lambda s, b: pos(python_scan(cands, s, b)), pairs, repeats)
    # the same queries, tiled to a batch long enough to time
    tile = max(1, 100_000 // queries)
    bs, bb = np.tile(sizes, tile), np.tile(budgets, tile)
    batch, got_batch = batch_us(index.lookup_many, bs, bb, repeats)
    for name, answers in (("Index-All", got_all), ("Naive (numpy)", got_np),
                          ("Naive (Python)", got_py), ("lookup_many", got_batch[:queries])):
        if answers != got:
            bad = next(i for i, (a, b) in enumerate(zip(answers, got, strict=True)) if a != b)
            raise SystemExit(f"K={k}: {name} answers {answers[bad]} where Poly-Dom answers "
                             f"{got[bad]} at (size, budget) = {pairs[bad]}; no timings printed")
    # floor: two bare bisect calls on lists the size of the ranges and a typical skyline
    breaks = index.breakpoints.tolist()
    sky_len = max(1, round(statistics.median(len(s) for s in index.skyline_positions)))
    sky = sorted(rng.uniform(0, 1e4, sky_len).tolist())
    floor, _ = per_call_us(lambda s, b: (bisect_right(breaks, s), bisect_right(sky, b)),
                           pairs, repeats)
    return {
        "K": k,
        "undominated": index.stats_["undominated"],
        "crossings": index.stats_["crossings"],
        "build_s": build,
        "build_all_s": build_all,
        "ranges": len(index),
        "ranges_all": len(every),
        "entries": index.entries,
        "entries_all": every.entries,
        "entries_naive": naive.entries,
        "lookup_us": ours,
        "floor_us": floor,
        "ratio_floor": ours / floor,
        "naive_np_us": naive_np,
        "naive_py_us": naive_py,
        "x_np": naive_np / ours,
        "x_py": naive_py / ours,
        "all_us": all_us,
        "batch_us": batch,
        "fits": sum(g >= 0 for g in got) / queries,
    }


COLUMNS = [
    ("K", "{:>6}"), ("undominated", "{:>5}"), ("crossings", "{:>7}"),
    ("build_s", "{:>7.3f}"), ("build_all_s", "{:>7.3f}"),
    ("ranges", "{:>6}"), ("ranges_all", "{:>7}"),
    ("entries", "{:>7}"), ("entries_all", "{:>8}"), ("entries_naive", "{:>6}"),
    ("lookup_us", "{:>6.2f}"), ("floor_us", "{:>6.2f}"), ("ratio_floor", "{:>5.2f}"),
    ("all_us", "{:>6.2f}"), ("naive_np_us", "{:>7.1f}"), ("x_np", "{:>6.0f}"),
    ("naive_py_us", "{:>8.0f}"), ("x_py", "{:>6.0f}"), ("batch_us", "{:>6.3f}"),
    ("fits", "{:>5.2f}"),
]
HEADERS = {
    "undominated": "undom", "crossings": "cross", "build_s": "build", "build_all_s": "b.all",
    "ranges_all": "r.all", "entries_all": "e.all", "entries_naive": "e.nv",
    "lookup_us": "us", "floor_us": "floor", "ratio_floor": "x/fl", "all_us": "all.us",
    "naive_np_us": "nv.np", "x_np": "x.np", "naive_py_us": "nv.py", "x_py": "x.py",
    "batch_us": "batch",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 2000, 10000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--n-max", type=float, default=math.inf)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args(argv)
    rows = [run(k, args.repeats, args.n_max, args.seed, args.queries) for k in args.sizes]
    head = " | ".join(
        f"{HEADERS.get(name, name):>{len(fmt.format(rows[0][name]))}}" for name, fmt in COLUMNS
    )
    print(f"domain [0, {args.n_max}]; every method on the same {args.queries} queries, "
          f"medians of {args.repeats} repeats, us = microseconds per query; all answers equal")
    print(head)
    print("-" * len(head))
    for row in rows:
        print(" | ".join(fmt.format(row[name]) for name, fmt in COLUMNS))


if __name__ == "__main__":
    main()
