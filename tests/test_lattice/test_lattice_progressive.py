"""Progressive alpha (I14): never trains a set twice, ends where a direct run ends."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
from tests.lattice_oracle import all_sets, instances
from tests.strategies import examples


class CountingLearner:
    def __init__(self, acc):
        self.acc = acc
        self.counts: dict = {}

    def expand(self, features):
        self.counts[features] = self.counts.get(features, 0) + 1
        return learners.SyntheticLearner(self.acc.__getitem__).expand(features)


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=6), st.integers(0, 80))
def test_i14_progressive_trains_each_set_once_and_matches_a_direct_run(inst, budget):
    acc, costs = inst
    learner = CountingLearner(acc)
    first = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), alpha=2.0)
    if first.n_expanded > budget:
        with pytest.raises(ValueError, match="budget"):
            lattice.progressive(costs, learner, max_expansions=budget)
        return
    prog = lattice.progressive(costs, learner, max_expansions=budget)
    assert all(c == 1 for c in learner.counts.values())
    assert prog.trained == len(learner.counts) <= budget
    direct = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), alpha=prog.alpha)
    assert list(prog.exploration.expanded) == list(direct.expanded)
    assert prog.runs[0]["alpha"] == 2.0
    done = [r["alpha"] for r in prog.runs if r["complete"]]
    assert prog.alpha == min(done)
    assert done == sorted(done, reverse=True)


def test_progressive_reaches_alpha_1_with_a_large_budget():
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(4)}
    prog = lattice.progressive({f"f{i}": [1.0] for i in range(1, 5)},
                               learners.SyntheticLearner(acc.__getitem__), max_expansions=100)
    assert prog.alpha == 1.0 and len(prog.runs) == 11
    assert prog.trained == 16


def test_progressive_seconds_budget_and_errors():
    acc = {s: 0.5 for s in all_sets(3)}
    costs = {f"f{i}": [1.0] for i in range(1, 4)}
    prog = lattice.progressive(costs, learners.SyntheticLearner(acc.__getitem__),
                               max_seconds=60.0)
    assert prog.alpha == 1.0
    with pytest.raises(ValueError, match="max_expansions or max_seconds"):
        lattice.progressive(costs, learners.SyntheticLearner(acc.__getitem__))
    with pytest.raises(ValueError, match="step"):
        lattice.progressive(costs, learners.SyntheticLearner(acc.__getitem__),
                            max_expansions=5, step=0.0)

