"""The explorer at its boundaries, by hand: ties exactly at the tolerance, how a pass is cut
into batches when cost pruning is on, a learner that is always wrong, and the invariant
checker ``Exploration._check`` on explorations it must accept and on corrupted ones.

Every expected value below is worked out by hand in the test's docstring (the lattice,
Algorithm 2's passes and the rules of :func:`lattice.explore`); none is taken from the code
under test.  Written for the mutation run of issue 16 (``docs/testing.md``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math

import pytest

import lattice
import learners
from lattice.executor import InProcessExecutor, InProcessSession
from lattice.expansion import Expansion
from lattice.explore import Exploration
from lattice.feature_space import FeatureSpace
from polydom.curves.poly import ACC_TOL
from tests.lattice_oracle import all_sets


def fs(label: str) -> frozenset:
    """``"13"`` -> ``{f1, f3}``."""
    return frozenset(f"f{c}" for c in label)


def label(s: frozenset) -> str:
    return "".join(sorted(x[1:] for x in s))


def explore_recording(acc: dict, costs: dict, **kw):
    """Run the explorer in-process and record each batch handed to the executor."""
    batches: list[list[str]] = []

    class Session(InProcessSession):
        def map_unordered(self, fn, tasks):
            batches.append([label(s) for (s,) in tasks])
            return super().map_unordered(fn, tasks)

    class Recording(InProcessExecutor):
        def session(self, shared):
            return contextlib.nullcontext(Session(shared))

    exp = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__),
                          executor=Recording(), **kw)
    exp._check()
    return exp, batches


# ----------------------------------------------------------------- cost pruning and batches
# m = 4, costs 3, 1, 2, 1; a(f1) = 0.8 - ACC_TOL sits exactly at the tolerance below
# a(f1f3f4) = 0.8.
TIE = 0.8 - ACC_TOL
BATCH_ACC = {fs(""): 0.5, fs("1"): TIE, fs("2"): 0.55, fs("3"): 0.6, fs("4"): 0.6,
             fs("12"): 0.82, fs("13"): 0.7, fs("14"): 0.7, fs("23"): 0.7, fs("24"): 0.7,
             fs("34"): 0.7, fs("123"): 0.9, fs("124"): 0.9, fs("134"): 0.8, fs("234"): 0.85,
             fs("1234"): 0.95}
BATCH_COSTS = {"f1": [3.0], "f2": [1.0], "f3": [2.0], "f4": [1.0]}


def test_a_pass_is_cut_only_where_a_pending_set_may_decide_a_cost_test():
    """Cost pruning on, alpha 1 (costs 3, 1, 2, 1; triples cost 6, 5, 6, 4, pairs
    12: 4, 13: 5, 23: 3, 14: 4, 24: 2, 34: 3).

    Round 2, top pass (triples; lo = a({}) = .5, hi = a(full) = .95, no witness as
    accurate as .95 costs less than a triple): 134 waits for the pending 123 (cost 6 <= 6),
    so the batches are [123, 124], [134, 234].  Bottom pass (singletons, lo = .5): f3 waits
    for f2 (1 <= 2): [1, 2], [3, 4].  Round 3, top pass (pairs, in mask order 12, 13, 23,
    14, 24, 34): 12 is not sandwiched (lo = a(f1) = .8 - tol, hi = .9) and no set as
    accurate as .9 costs <= 4: pending.  13 has lo = .8 - tol and hi = a(134) = .8: a tie
    exactly at the tolerance, so it is sandwiched, and a pending set (12, cost 4 <= 5)
    cannot change that: no wait.  23 (lo .6, hi .85; 12 costs more): pending.  14: tied like
    13 (hi = a(134)).  24 (cost 2): pending.  34 (lo .6, hi = a(134) = .8) waits for the
    pending 23 (3 <= 3): [12, 23, 24] are trained, and then 34 is cost-pruned by f1: not a
    subset, cost 3 <= 3 and a(f1) = .8 - tol >= hi(34) - tol, a tie again."""
    exp, batches = explore_recording(BATCH_ACC, BATCH_COSTS, alpha=1.0, cost_pruning=True)
    assert batches == [["1234"], [""], ["123", "124"], ["134", "234"], ["1", "2"],
                       ["3", "4"], ["12", "23", "24"]]
    assert exp.pruned == {fs("13"): "sandwich", fs("14"): "sandwich", fs("34"): "cost"}
    assert exp.stats["cost_pruned"] == 1 and exp.stats["sandwiched"] == 2
    assert exp.stats["checks"] == 4 + 4 + 6


def test_a_pending_set_that_decides_a_cost_test_is_trained_first_even_with_delta():
    """m = 2, delta 0.1, costs 1 and 2; a({}) = .5, a(f1) = .8, a(f2) = .6, a(f1f2) = .55
    (a learner need not be monotone).  Round 2, top pass: f1 is not sandwiched
    (.5 - .1 < .55) and not cost-pruned (no other expanded set reaches .55 + .2): pending.
    f2 is not sandwiched either, but f1 (cost 1 <= 2) may decide its cost test: f1 is
    trained first (.8 - .1 >= .55 + .1), and f2 is cost-pruned.  Testing f2 while f1 is
    still pending (a wrong early answer of ``_waits_on``, e.g. ``lo + delta`` for
    ``lo - delta``) would train f2."""
    acc = {fs(""): 0.5, fs("1"): 0.8, fs("2"): 0.6, fs("12"): 0.55}
    exp, batches = explore_recording(acc, {"f1": [1.0], "f2": [2.0]}, alpha=1.0,
                                     delta=0.1, cost_pruning=True)
    assert batches == [["12"], [""], ["1"]]
    assert [label(s) for s in exp.expanded] == ["12", "", "1"]
    assert exp.pruned == {fs("2"): "cost"}


def test_cost_pruning_and_its_check_compare_costs_on_the_domain_only():
    """m = 2 on sizes [0, 5]: c(f1) = n, c(f2) = 5; a({}) = .5, a(f1) = .8, a(f2) = .6,
    a(f1f2) = .7.  f2's only witness is f1 (.8 >= hi(f2) = .7, cost n <= 5 on [0, 5] but
    not beyond), so f2 is cost-pruned, and the checker accepts it only when it compares
    the costs on the exploration's domain."""
    acc = {fs(""): 0.5, fs("1"): 0.8, fs("2"): 0.6, fs("12"): 0.7}
    costs = {"f1": [0.0, 1.0], "f2": [5.0]}
    exp, _ = explore_recording(acc, costs, alpha=1.0, cost_pruning=True, n_max=5.0)
    assert exp.pruned == {fs("2"): "cost"}
    assert exp.domain == (0.0, 5.0)
    wide, _ = explore_recording(acc, costs, alpha=1.0, cost_pruning=True)
    assert wide.pruned == {} and wide.n_expanded == 4


# -------------------------------------------------------------------- covering at the ties
def test_covering_from_the_top_counts_a_subset_tied_at_the_tolerance():
    """m = 3: a({}) = .5 - ACC_TOL, singletons .6, a(f1f2) = .5, a(f1f3) = a(f2f3) = .8,
    a(full) = .9.  f1f2 is expanded from the top in round 2 while the empty set is no
    worse up to the tolerance (exactly: .5 - tol >= .5 - tol), and the empty set has no
    feature, so f1f2's children f1 and f2 are covered: skipped, filed as sandwiched.  f3
    (hi .8) is trained."""
    acc = {s: 0.6 for s in all_sets(3) if len(s) == 1}
    acc |= {fs(""): 0.5 - ACC_TOL, fs("12"): 0.5, fs("13"): 0.8, fs("23"): 0.8,
            fs("123"): 0.9}
    costs = {f"f{i}": [float(i)] for i in range(1, 4)}
    exp, _ = explore_recording(acc, costs, alpha=1.0)
    assert [label(s) for s in exp.expanded] == ["123", "", "12", "13", "23", "3"]
    assert exp.pruned == {fs("1"): "sandwich", fs("2"): "sandwich"}
    assert exp.stats["covering_skips"] == 2


def test_a_learner_that_is_always_wrong_covers_from_the_bottom_only():
    """Every accuracy 0, m = 3, alpha 1.  Round 1 expands the full set and then the empty
    set; when the full set is filed nothing else is expanded, so it covers nothing.  The
    empty set covers its parents (the full set above is no better and they span every
    feature).  Round 2: the three pairs are tested and sandwiched (0 >= 0 - tol), the three
    singletons skipped by covering."""
    acc = {s: 0.0 for s in all_sets(3)}
    exp, batches = explore_recording(acc, {f"f{i}": [float(i)] for i in range(1, 4)})
    assert batches == [["123"], [""]]
    assert exp.stats["checks"] == 6 and exp.stats["sandwiched"] == 6
    assert exp.stats["covering_skips"] == 3
    assert exp.pruned == {s: "sandwich" for s in all_sets(3) if 0 < len(s) < 3}


# ------------------------------------------------------------------------- the deadline
def test_a_deadline_is_reached_when_the_clock_shows_it(monkeypatch):
    """The deadline is inclusive, as in the expander (``perf_counter() >= deadline``):
    with the explorer's clock stopped exactly at the deadline the run stops before its
    first check, although every set is cached."""
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(2)}
    learner = learners.SyntheticLearner(acc.__getitem__)
    costs = {"f1": [1.0], "f2": [2.0]}
    cache = dict(lattice.expand_all(costs, learner).expanded)
    explore_module = importlib.import_module("lattice.explore")  # the name is the function

    class StoppedClock:
        @staticmethod
        def perf_counter() -> float:
            return 1000.0

    monkeypatch.setattr(explore_module, "time", StoppedClock)
    exp = lattice.explore(costs, learner, cache=dict(cache), _deadline=1000.0)
    assert not exp.complete and exp.n_expanded == 0 and exp.stats["checks"] == 0
    later = lattice.explore(costs, learner, cache=dict(cache), _deadline=1000.5)
    assert later.complete and later.n_expanded == 4


# ------------------------------------------------------------ the checker accepts ...
def test_check_accepts_runs_served_from_a_cache_and_paper_runs_that_skip_sets():
    """Served sets count as expanded (trained + cache hits = expanded); the paper traversal
    stops at pruned sets, so the complete count (every set expanded or pruned) is not
    asked of it.  Flat accuracies, m = 4, paper traversal: the full and the empty set are
    expanded, the four singletons and the four triples covered, and the pairs never
    visited."""
    acc = {s: 0.5 for s in all_sets(4)}
    learner = learners.SyntheticLearner(acc.__getitem__)
    costs = {f"f{i}": [float(i)] for i in range(1, 5)}
    paper = lattice.explore(costs, learner, traversal="paper")
    assert paper.n_expanded == 2 and len(paper.pruned) == 8 and paper.complete
    paper._check()
    cache = {fs(""): learner.expand(fs(""))}
    served = lattice.explore(costs, learner, cache=cache)
    assert served.stats["cache_hits"] == 1 and served.stats["trained"] == 1
    served._check()


def _two_set_exploration(m: int, traversal: str) -> Exploration:
    """A hand-built complete exploration of m features that expanded only the empty and
    the full set and pruned nothing."""
    space = FeatureSpace({f"f{i}": [1.0] for i in range(m)}, 0.0, math.inf)
    expanded = {0: Expansion(frozenset(), 0.5),
                space.full: Expansion(frozenset(space.names), 0.9)}
    stats = {"trained": 2, "cache_hits": 0, "sandwiched": 0, "cost_pruned": 0,
             "traversal": traversal}
    return Exploration(space, expanded, {}, alpha=1.0, delta=0.0, candidate_alpha=1.0,
                       complete=True, stats=stats, learner="synthetic")


def test_check_asks_a_complete_traversal_of_20_features_to_visit_every_set():
    _two_set_exploration(20, "paper")._check()
    with pytest.raises(AssertionError):
        _two_set_exploration(20, "complete")._check()


# ----------------------------------------------------------- ... and refuses corruptions
def _incomplete():
    """Monotone accuracies, m = 3, stopped after 3 trainings: only the counts and the
    per-expansion invariants are checked."""
    acc = {s: 0.5 + 0.1 * len(s) for s in all_sets(3)}
    exp = lattice.explore({f"f{i}": [float(i)] for i in range(1, 4)},
                          learners.SyntheticLearner(acc.__getitem__), max_expansions=3)
    assert not exp.complete and exp.n_expanded == 3
    exp._check()
    return exp


def test_check_refuses_an_accuracy_above_one_even_in_an_incomplete_run():
    exp = _incomplete()
    last = list(exp.expanded)[-1]
    exp.expanded[last] = dataclasses.replace(exp.expanded[last], accuracy=1.5)
    with pytest.raises(AssertionError):
        exp._check()


def test_check_refuses_an_expansion_without_its_mask_and_a_mask_without_its_expansion():
    exp = _incomplete()
    exp.expanded.pop(list(exp.expanded)[-1])     # a mask left without its expansion
    exp.stats["trained"] -= 1
    with pytest.raises((AssertionError, ValueError)):
        exp._check()
    exp = _incomplete()
    exp._masks.pop()                             # an expansion left without its mask
    exp.stats["trained"] -= 1
    with pytest.raises((AssertionError, ValueError)):
        exp._check()

