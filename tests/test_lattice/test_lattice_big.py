"""Big lattices: work and memory follow what is visited, and time budgets bound the checks."""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest

import lattice
import learners


def saturating(m: int):
    rng = np.random.default_rng(m)
    w = rng.uniform(0.05, 1.0, m)
    names = [f"f{i}" for i in range(m)]
    idx = {n: i for i, n in enumerate(names)}
    costs = {n: [float(rng.uniform(1, 10)), float(rng.uniform(0, 0.1))] for n in names}

    def acc(fs):
        return round(0.5 + 0.45 * (1 - math.exp(-sum(w[idx[f]] for f in fs) / 3)), 4)

    return costs, learners.SyntheticLearner(acc)


def test_the_paper_traversal_of_24_features_visits_only_neighbours_of_expanded_sets():
    costs, learner = saturating(24)
    tracemalloc.start()
    p = lattice.progressive(costs, learner, max_expansions=200, start=2.0, step=0.2,
                            traversal="paper")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    e = p.exploration
    assert e.complete and p.trained <= 200
    assert e.stats["checks"] <= e.n_expanded * 24  # never 2**24 = 16.7 million
    assert peak < 64 * 2**20


def test_a_time_budget_stops_a_complete_traversal_in_its_checks():
    costs, learner = saturating(22)  # 4 million sets to check: minutes without a budget
    start = time.perf_counter()
    with pytest.raises(ValueError, match="does not complete alpha=1"):
        lattice.progressive(costs, learner, max_seconds=0.5, start=1.0, stop=1.0)
    assert time.perf_counter() - start < 5.0
