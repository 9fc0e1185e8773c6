"""The Poly-Dom lattice explorer against a brute force over all 2**m feature sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
import polydom
from tests.lattice_oracle import (
    ACC_TOL,
    Optimum,
    all_sets,
    instances,
    sandwiched_by_pair,
    set_cost,
    skyline_at,
    violation,
)
from tests.strategies import examples

ALPHAS = [1.0, 1.05, 1.1, 1.2, 1.5, 2.0]
SIZES = [0.0, 1.0, 3.7, 100.0]


def run(acc, costs, **kw):
    exp = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), **kw)
    exp._check()
    return exp


def assert_guarantee(acc, costs, alpha, sizes=SIZES, **kw):
    n_min, n_max = kw.get("n_min", 0.0), kw.get("n_max", math.inf)
    index = polydom.build_index(costs, learners.SyntheticLearner(acc.__getitem__),
                                alpha=alpha, **kw)
    opt = Optimum(acc, costs)
    for n, b in opt.grid([s for s in sizes if n_min <= s <= n_max]):
        hit = index.lookup(n, b)
        best = opt(n, b)
        assert hit is not None
        assert hit.cost <= b
        assert alpha * hit.accuracy >= best - alpha * ACC_TOL, (n, b, hit, best)
        if alpha == 1.0:
            assert hit.accuracy == best


# ---------------------------------------------------------------------------- fixtures (I19)
FIG2 = {"": .5, "1": .78, "2": .7, "3": .75, "4": .6, "12": .86, "13": .8, "14": .78,
        "23": .75, "24": .75, "34": .75, "123": .86, "124": .9, "134": .83, "234": .75,
        "1234": .96}
CEX_A = {"": .5, "1": .58, "2": .5, "3": .5, "4": .5, "12": .58, "13": .58, "14": .58,
         "23": .59, "24": .59, "34": .55, "123": .59, "124": .62, "134": .62, "234": .59,
         "1234": .65}
COSTS4 = {f"f{i}": [float(i)] for i in range(1, 5)}


def table(spec):
    return {frozenset(f"f{c}" for c in k): v for k, v in spec.items()}


def cex_b():
    acc = {}
    for s in all_sets(4):
        acc[s] = .77 if "f4" in s else .58 if "f3" in s else .56 if "f2" in s else .5
    return acc


def label(fs):
    return "".join(sorted(x[1:] for x in fs))


@pytest.mark.parametrize("traversal", ["complete", "paper"])
def test_figure2_alpha1_expands_14_without_f2f3_f3f4(traversal):
    exp = run(table(FIG2), COSTS4, alpha=1.0, traversal=traversal)
    assert exp.n_expanded == 14
    assert {label(s) for s in table(FIG2)} - {label(s) for s in exp.expanded} == {"23", "34"}


@pytest.mark.parametrize("traversal", ["complete", "paper"])
def test_figure2_alpha11_expands_11_middle_layer_f1f2_only(traversal):
    exp = run(table(FIG2), COSTS4, alpha=1.1, traversal=traversal)
    assert exp.n_expanded == 11
    assert {label(s) for s in exp.expanded if len(s) == 2} == {"12"}


def test_figure2_frontier_paper_literal_expands_all_16():
    assert run(table(FIG2), COSTS4, alpha=1.0, traversal="paper", scope="frontier").n_expanded == 16


@pytest.mark.parametrize("traversal", ["complete", "paper"])
def test_property_3_9_counterexample_a_expands_f1f4_at_12_not_11(traversal):
    f1f4 = frozenset({"f1", "f4"})
    assert f1f4 not in run(table(CEX_A), COSTS4, alpha=1.1, traversal=traversal).expanded
    assert f1f4 in run(table(CEX_A), COSTS4, alpha=1.2, traversal=traversal).expanded


def test_property_3_9_counterexample_b_frontier_scope():
    # Paper traversal: 10 sets at alpha 1.1, all 16 at 1.2 (spec section 3).
    assert run(cex_b(), COSTS4, alpha=1.1, traversal="paper", scope="frontier").n_expanded == 10
    assert run(cex_b(), COSTS4, alpha=1.2, traversal="paper", scope="frontier").n_expanded == 16
    # Complete traversal: f1, f2, f3 stay pruned (checked once), so 13 at 1.2, still more
    # than the 10 at 1.1 and not nested.
    small = run(cex_b(), COSTS4, alpha=1.1, scope="frontier")
    large = run(cex_b(), COSTS4, alpha=1.2, scope="frontier")
    assert small.n_expanded == 10 and large.n_expanded == 13
    assert not set(large.expanded) <= set(small.expanded)


# ---------------------------------------------------------------------------- I1, I2, I10
@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5))
def test_i1_alpha1_lookup_is_the_brute_force_optimum(inst):
    acc, costs = inst
    assert_guarantee(acc, costs, 1.0)


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS[1:]))
def test_i2_lookup_within_alpha_of_optimum(inst, alpha):
    acc, costs = inst
    assert_guarantee(acc, costs, alpha)


@settings(max_examples=examples(25), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS[1:]))
def test_i2_candidate_alpha_same_is_within_alpha_squared(inst, alpha):
    acc, costs = inst
    index = polydom.build_index(costs, learners.SyntheticLearner(acc.__getitem__), alpha=alpha,
                                candidate_alpha="same")
    opt = Optimum(acc, costs)
    for n, b in opt.grid([0.0, 2.0, 50.0]):
        hit = index.lookup(n, b)
        assert alpha * alpha * hit.accuracy >= opt(n, b) - 4 * ACC_TOL


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([0.01, 0.05]).flatmap(
    lambda d: st.tuples(st.just(d), instances(max_m=5, delta=d))),
    st.sampled_from(ALPHAS), st.sampled_from([0.0, 1.0]))
def test_i10_relaxed_delta_at_least_the_violation_keeps_the_guarantee(args, alpha, extra):
    d, (acc, costs) = args
    assert violation(acc) <= d + 1e-12
    assert_guarantee(acc, costs, alpha, sizes=[0.0, 2.0, 50.0], delta=d + extra * d)


@settings(max_examples=examples(25), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS), st.sampled_from(["frontier", "expanded"]))
def test_paper_traversal_and_frontier_scope_keep_the_guarantee(inst, alpha, scope):
    acc, costs = inst
    assert_guarantee(acc, costs, alpha, sizes=[0.0, 3.7, 100.0], traversal="paper", scope=scope)


# ---------------------------------------------------------------------------- I4, I5, I6, I11
@settings(max_examples=examples(80), deadline=None)
@given(instances(max_m=6), st.sampled_from(ALPHAS))
def test_i4_every_unexpanded_set_has_an_expanded_alpha_dominating_subset(inst, alpha):
    acc, costs = inst
    exp = run(acc, costs, alpha=alpha)
    assert frozenset() in exp.expanded and frozenset(costs) in exp.expanded
    for fs, a in acc.items():
        if fs not in exp.expanded:
            assert any(g < fs and alpha * exp.expanded[g].accuracy >= a - ACC_TOL
                       for g in exp.expanded), sorted(fs)


@settings(max_examples=examples(60), deadline=None)
@given(instances(max_m=5))
def test_i5_distinct_accuracies_skyline_within_candidates_within_expanded(inst):
    acc, costs = inst
    ranked = sorted(acc, key=lambda s: (acc[s], len(s), sorted(s)))
    acc = {s: 0.3 + 0.6 * i / len(ranked) for i, s in enumerate(ranked)}  # distinct, same order
    exp = run(acc, costs, alpha=1.0)
    cands = {c.features for c in exp.candidates}
    assert cands <= set(exp.expanded)
    for n in SIZES:
        assert skyline_at(acc, costs, n) <= cands


@settings(max_examples=examples(60), deadline=None)
@given(instances(max_m=6), st.sampled_from(ALPHAS))
def test_i6_candidates_are_expanded_and_mutually_undominated(inst, alpha):
    acc, costs = inst
    exp = run(acc, costs, alpha=alpha)
    cands = exp.candidates
    assert {c.features for c in cands} <= set(exp.expanded)
    for c in cands:
        assert c.accuracy == acc[c.features]
        assert np.allclose(c.cost.coefficients, set_cost(costs, c.features).coefficients)
        assert c.key == exp.key_of(c.features)
    for x in cands:
        for y in cands:
            if x is not y:
                dominated = y.cost.le(x.cost) and y.accuracy >= x.accuracy and (
                    y.accuracy > x.accuracy or not x.cost.le(y.cost) or y.key < x.key)
                assert not dominated, (x.key, y.key)


@settings(max_examples=examples(40), deadline=None)
@given(st.sampled_from([0.0, 0.01, 0.05]).flatmap(
    lambda d: st.tuples(st.just(d), instances(max_m=6, delta=d))), st.sampled_from(ALPHAS))
def test_i11_every_set_the_explorer_sandwiches_is_sound(args, alpha):
    """I11 on the explorer's own decisions: each set it excused as sandwiched lies between
    two expanded sets G < F < K with alpha * (a(G) - delta) >= a(K), and its true accuracy
    (from the full table, never trained) is within alpha of a(G)."""
    d, (acc, costs) = args
    exp = run(acc, costs, alpha=alpha, delta=d)
    sandwiched = [f for f, why in exp.pruned.items() if why == "sandwich"]
    for f in sandwiched:
        assert f not in exp.expanded
        pairs = [(g, k) for g in exp.expanded for k in exp.expanded
                 if g < f < k and alpha * (exp.expanded[g].accuracy - d)
                 >= exp.expanded[k].accuracy - ACC_TOL]
        assert pairs, sorted(f)
        assert any(alpha * exp.expanded[g].accuracy >= acc[f] - ACC_TOL for g, _ in pairs)


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS), st.sampled_from(ALPHAS),
       st.sampled_from([0.0, 0.01, 0.05]), st.sampled_from([0.0, 0.01, 0.05]))
def test_i13_explorer_sandwiches_only_what_the_oracle_sandwiches_and_that_nests(
        inst, a1, a2, d1, d2):
    """The explorer's sandwiched sets at (alpha, delta) are sandwiched by some pair of the
    full lattice (the oracle), and the oracle's sets nest: larger alpha and smaller delta
    sandwich more.  (E itself does not nest: specs/polydom.md section 3.)"""
    acc, costs = inst
    (a1, a2), (d1, d2) = sorted((a1, a2)), sorted((d1, d2))
    for alpha, d in ((a1, d2), (a2, d2), (a2, d1)):
        exp = run(acc, costs, alpha=alpha, delta=d)
        mine = {f for f, why in exp.pruned.items() if why == "sandwich"}
        assert mine <= sandwiched_by_pair(acc, alpha, d)
    assert sandwiched_by_pair(acc, a1, d2) <= sandwiched_by_pair(acc, a2, d2)
    assert sandwiched_by_pair(acc, a2, d2) <= sandwiched_by_pair(acc, a2, d1)


@pytest.mark.parametrize("m", [0, 1, 3, 6])
def test_i15_expand_all_trains_every_set(m):
    acc = {s: 0.5 + 0.05 * len(s) for s in all_sets(m)}
    exp = lattice.expand_all({f"f{i + 1}": [1.0] for i in range(m)},
                             learners.SyntheticLearner(acc.__getitem__))
    exp._check()
    assert exp.n_expanded == 2 ** m


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(1, 7), st.data())
def test_i15_strictly_increasing_accuracy_expands_everything_at_alpha1(m, data):
    single = data.draw(st.lists(st.floats(0.5, 0.8), min_size=m, max_size=m))
    acc = {}
    for s in all_sets(m):
        prod = 1.0
        for f in s:
            prod *= 1.0 - single[int(f[1:]) - 1]
        acc[s] = 0.5 if not s else 1.0 - prod
    exp = run(acc, {f"f{i + 1}": [float(i + 1)] for i in range(m)}, alpha=1.0)
    assert exp.n_expanded == 2 ** m


# ---------------------------------------------------------------------------- cost pruning
@settings(max_examples=examples(40), deadline=None)
@given(st.sampled_from([0.0, 0.01]).flatmap(
    lambda d: st.tuples(st.just(d), instances(max_m=5, delta=d))),
    st.sampled_from(ALPHAS), st.sampled_from([(0.0, math.inf), (1.0, 500.0), (2.0, 3.0)]))
def test_cost_pruning_keeps_the_guarantee_against_brute_force(args, alpha, domain):
    d, (acc, costs) = args
    assert_guarantee(acc, costs, alpha, sizes=[0.0, 1.0, 2.0, 2.5, 3.0, 40.0, 500.0],
                     delta=d, cost_pruning=True, n_min=domain[0], n_max=domain[1])


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS), st.sampled_from([(0.0, math.inf),
                                                                    (1.0, 500.0)]))
def test_cost_pruning_only_removes_expansions_with_a_cost_dominating_witness(inst, alpha, dom):
    acc, costs = inst
    plain = run(acc, costs, alpha=alpha, n_min=dom[0], n_max=dom[1])
    pruned = run(acc, costs, alpha=alpha, cost_pruning=True, n_min=dom[0], n_max=dom[1])
    for fs in set(acc) - set(pruned.expanded):
        witness = [h for h, e in pruned.expanded.items()
                   if set_cost(costs, h).le(set_cost(costs, fs), *dom)
                   and alpha * e.accuracy >= acc[fs] - ACC_TOL]
        assert witness, sorted(fs)
    assert plain.stats["cost_pruned"] == 0


def test_cost_pruning_prunes_an_expensive_useless_set():
    # f3 is costly and adds nothing over the cheap f1: cost pruning skips sets with f3.
    acc = {s: (0.9 if "f1" in s else 0.6) for s in all_sets(3)}
    costs = {"f1": [1.0], "f2": [50.0], "f3": [100.0]}
    plain = run(acc, costs, alpha=1.0)
    pruned = run(acc, costs, alpha=1.0, cost_pruning=True)
    assert pruned.n_expanded < plain.n_expanded
    assert pruned.stats["cost_pruned"] > 0


# ---------------------------------------------------------------------------- mechanics
@settings(max_examples=examples(30), deadline=None)
@given(instances(max_m=5), st.sampled_from(ALPHAS))
def test_runs_are_deterministic_and_never_train_a_set_twice(inst, alpha):
    acc, costs = inst
    calls = []
    learner = learners.SyntheticLearner(lambda fs: calls.append(fs) or acc[fs])
    a = lattice.explore(costs, learner, alpha=alpha)
    b = lattice.explore(costs, learners.SyntheticLearner(acc.__getitem__), alpha=alpha)
    assert list(a.expanded) == list(b.expanded)
    assert len(calls) == len(set(calls)) == a.n_expanded == a.stats["trained"]
    assert [c.key for c in a.candidates] == [c.key for c in b.candidates]


class RecordingCache(dict):
    """A mapping that records, at each write, how many models the learner had trained."""

    def __init__(self, learner):
        super().__init__()
        self.learner = learner
        self.writes = []

    def __setitem__(self, key, value):
        self.writes.append((key, self.learner.calls_))
        super().__setitem__(key, value)


def test_cache_is_written_as_each_set_is_trained_and_reused():
    acc = table(FIG2)
    learner = learners.SyntheticLearner(acc.__getitem__)
    cache = RecordingCache(learner)
    first = lattice.explore(COSTS4, learner, alpha=1.0, cache=cache)
    assert [calls for _, calls in cache.writes] == list(range(1, first.n_expanded + 1))
    again = lattice.explore(COSTS4, learner, alpha=1.0, cache=cache)
    assert learner.calls_ == first.n_expanded
    assert again.stats["cache_hits"] == again.n_expanded and again.stats["trained"] == 0
    assert list(again.expanded) == list(first.expanded)


def test_max_expansions_stops_early_and_marks_the_run_incomplete():
    acc = table(FIG2)
    exp = lattice.explore(COSTS4, learners.SyntheticLearner(acc.__getitem__), max_expansions=5)
    exp._check()
    assert not exp.complete and exp.stats["trained"] == 5


def test_candidate_costs_are_sums_of_feature_curves_and_payload_is_the_model():
    acc = table(FIG2)
    exp = run(acc, {"f1": "1 + n", "f2": "2*n**2", "f3": [3.0], "f4": "n"}, alpha=1.0)
    full = next(c for c in exp.candidates if c.features == frozenset(COSTS4))
    assert full.cost == polydom.CostCurve([4.0, 2.0, 2.0])
    assert full.payload is None and full.key == ("f1", "f2", "f3", "f4")


@pytest.mark.parametrize(
    "kwargs, match",
    [({"alpha": 0.9}, "alpha"), ({"delta": -0.1}, "delta"), ({"traversal": "bfs"}, "traversal"),
     ({"scope": "x"}, "scope"), ({"max_expansions": -1}, "max_expansions"),
     ({"candidate_alpha": 0.5}, "candidate_alpha"), ({"n_min": -1.0}, "n_min")],
)
def test_bad_arguments_raise_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lattice.explore(COSTS4, learners.SyntheticLearner(table(FIG2).__getitem__), **kwargs)


def test_negative_cost_curve_is_rejected():
    with pytest.raises(ValueError, match="f1"):
        lattice.explore({"f1": [1.0, -1.0]}, learners.SyntheticLearner(lambda fs: 0.5))


def test_empty_and_single_feature_lattices():
    exp0 = run({frozenset(): 0.5}, {}, alpha=1.0)
    assert list(exp0.expanded) == [frozenset()]
    exp1 = run({frozenset(): 0.5, frozenset({"f1"}): 0.7}, {"f1": [1.0]}, alpha=1.2)
    assert exp1.n_expanded == 2


def test_learner_with_other_features_is_rejected():
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    learner = learners.SklearnLearner(LogisticRegression(), np.zeros((4, 2)),
                                      np.array([0, 1, 0, 1]), features=["a", "b"])
    with pytest.raises(ValueError, match=r"^costs name features \['a', 'c'\] but the learner "
                                         r"has \['a', 'b'\]$"):
        lattice.explore({"a": [1.0], "c": [1.0]}, learner)


@pytest.mark.slow  # subprocesses under several PYTHONHASHSEEDs
def test_exploration_is_identical_across_hash_seeds():
    import os
    import subprocess
    import sys

    code = (
        "import lattice, learners\n"
        "from tests.test_lattice.test_lattice_explore import FIG2, COSTS4, table\n"
        "acc = table(FIG2)\n"
        "e = lattice.explore(COSTS4, learners.SyntheticLearner(acc.__getitem__), alpha=1.1,"
        " cost_pruning=True)\n"
        "print([sorted(s) for s in e.expanded], [c.key for c in e.candidates])\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True, cwd=root).stdout)
    assert len(outs) == 1


# ---------------------------------------------------------------------------- reports and counts
@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=6), st.sampled_from(ALPHAS), st.sampled_from([0.0, 0.01]),
       st.booleans())
def test_counts_add_up_and_covering_changes_nothing_but_its_count(inst, alpha, delta, cost):
    """Complete traversal: every set but the empty and the full one is checked exactly once
    (2**m - 2 checks), every check that did not train is filed under its rule, and the
    covering shortcut only skips tests (same expanded sets, same order, same pruned sets,
    and no skips when it is off)."""
    acc, costs = inst
    m = len(costs)
    on = run(acc, costs, alpha=alpha, delta=delta, cost_pruning=cost)
    off = run(acc, costs, alpha=alpha, delta=delta, cost_pruning=cost, covering=False)
    assert list(on.expanded) == list(off.expanded)
    assert on.pruned == off.pruned
    for exp, covering in ((on, True), (off, False)):
        st_ = exp.stats
        assert st_["checks"] == 2 ** m - 2
        assert st_["expanded"] == st_["trained"] == exp.n_expanded
        assert st_["cache_hits"] == 0
        assert st_["sandwiched"] == sum(why == "sandwich" for why in exp.pruned.values())
        assert st_["cost_pruned"] == sum(why == "cost" for why in exp.pruned.values())
        assert st_["checks"] == len(exp.pruned) + exp.n_expanded - 2
        assert 0 <= st_["covering_skips"] <= st_["sandwiched"]
        assert (st_["traversal"], st_["scope"], st_["covering"], st_["cost_pruning"]) == (
            "complete", "expanded", covering, cost)
        if not cost:
            assert st_["cost_pruned"] == 0
    assert off.stats["covering_skips"] == 0


def test_figure2_counts_by_hand():
    """Figure 2 at alpha = 1: 14 sets of 16 trained; the 14 sets other than the empty and
    the full one are each checked once; f2f3 and f3f4 are sandwiched (f3 below, 0.75,
    f2f3f4 above, 0.75) and nothing else is pruned."""
    exp = run(table(FIG2), COSTS4, alpha=1.0)
    assert exp.stats["checks"] == 14
    assert exp.stats["sandwiched"] == 2 and exp.stats["cost_pruned"] == 0
    assert set(exp.pruned) == {frozenset({"f2", "f3"}), frozenset({"f3", "f4"})}
    assert set(exp.pruned.values()) == {"sandwich"}


@pytest.mark.parametrize("scope", ["expanded", "frontier"])
def test_frontier_scope_turns_covering_and_cost_pruning_off(scope):
    exp = run(table(FIG2), COSTS4, alpha=1.1, scope=scope, covering=True, cost_pruning=True)
    on = scope == "expanded"
    assert exp.stats["covering"] is on and exp.stats["cost_pruning"] is on
    assert exp.stats["scope"] == scope and exp.stats["traversal"] == "complete"
    if not on:
        assert exp.stats["covering_skips"] == 0 and exp.stats["cost_pruned"] == 0


def test_exploration_reports_what_it_was_given():
    costs = {"f1": "1 + n", "f2": "2*n**2", "f3": [3.0], "f4": "n"}
    exp = run(table(FIG2), costs, alpha=1.1, delta=0.01, candidate_alpha="same",
              n_min=1.0, n_max=50.0)
    assert repr(exp) == (f"Exploration(features=4, expanded={exp.n_expanded}, alpha=1.1, "
                         "delta=0.01, complete=True)")
    assert exp.n_expanded == len(exp.expanded)
    assert exp.features == ("f1", "f2", "f3", "f4")
    assert exp.costs == {f: polydom.CostCurve.coerce(c) for f, c in costs.items()}
    assert exp.cost_model.features == ("f1", "f2", "f3", "f4")
    assert (exp.alpha, exp.delta, exp.candidate_alpha) == (1.1, 0.01, 1.1)
    assert exp.domain == (1.0, 50.0)
    assert exp.key_of(frozenset({"f4", "f2"})) == ("f2", "f4")
    assert exp.cost_of(frozenset({"f4", "f2"})) == polydom.CostCurve([0.0, 1.0, 2.0])
    assert exp.cost_of(frozenset()) == polydom.CostCurve([0.0])
    assert run(table(FIG2), costs, alpha=1.1, candidate_alpha=1.0).candidate_alpha == 1.0
    assert run(table(FIG2), costs, alpha=1.1).domain == (0.0, math.inf)
    cands = exp.all_candidates()
    assert [c.features for c in cands] == list(exp.expanded)
    for c in cands:
        assert c.key == tuple(sorted(c.features))
        assert c.accuracy == table(FIG2)[c.features]
        assert np.allclose(c.cost.coefficients, set_cost(costs, c.features).coefficients)
        assert c.needs == dict.fromkeys(sorted(c.features), 1.0)
        assert c.learner == "synthetic" and c.payload is None


@settings(max_examples=examples(30), deadline=None)
@given(instances(max_m=5, ints=True), st.sampled_from(ALPHAS))
def test_candidates_are_exactly_the_expanded_sets_no_other_expanded_set_dominates(inst, alpha):
    """Brute force over the expanded sets with exact (integer) costs: a set is a candidate
    unless another expanded set costs no more everywhere on [0, inf) and is at least as
    accurate (ties of both: the earlier key stays)."""
    acc, costs = inst
    exp = run(acc, costs, alpha=alpha)
    sets = list(exp.expanded)
    curve = {s: set_cost(costs, s) for s in sets}

    def dominates(t, s):
        if not (curve[t].le(curve[s]) and acc[t] >= acc[s]):
            return False
        same = curve[s].le(curve[t]) and acc[t] == acc[s]
        return not same or exp.key_of(t) < exp.key_of(s)

    want = {s for s in sets if not any(dominates(t, s) for t in sets if t != s)}
    assert {c.features for c in exp.candidates} == want


def test_explore_validates_its_arguments_with_exact_messages():
    learner = learners.SyntheticLearner(table(FIG2).__getitem__)
    bad = [
        ({"alpha": math.inf}, "alpha must be finite and >= 1, got inf"),
        ({"alpha": math.nan}, "alpha must be finite and >= 1, got nan"),
        ({"delta": math.inf}, "delta must be finite and >= 0, got inf"),
        ({"traversal": "bfs"},
         "traversal must be one of ('complete', 'paper', 'anytime'), got 'bfs'"),
        ({"scope": "x"}, "scope must be one of ('expanded', 'frontier'), got 'x'"),
        ({"max_expansions": 2.5}, "max_expansions must be a non-negative integer, got 2.5"),
        ({"max_expansions": True}, "max_expansions must be a non-negative integer, got True"),
        ({"max_expansions": -1}, "max_expansions must be a non-negative integer, got -1"),
        ({"candidate_alpha": math.inf},
         "candidate_alpha must be a number >= 1 or 'same', got inf"),
        ({"candidate_alpha": 0.99},
         "candidate_alpha must be a number >= 1 or 'same', got 0.99"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError) as info:
            lattice.explore(COSTS4, learner, **kwargs)
        assert str(info.value) == message
    not_numbers = [
        ({"alpha": "1"}, "alpha must be a real number, got '1' (str)"),
        ({"alpha": True}, "alpha must be a real number, got True (bool)"),
        ({"delta": None}, "delta must be a real number, got None (NoneType)"),
        ({"candidate_alpha": "x"}, "candidate_alpha must be a real number, got 'x' (str)"),
    ]
    for kwargs, message in not_numbers:
        with pytest.raises(TypeError) as info:
            lattice.explore(COSTS4, learner, **kwargs)
        assert str(info.value) == message
    # the boundaries are allowed
    ok = lattice.explore(COSTS4, learner, alpha=1.0, delta=0.0, candidate_alpha=1.0,
                         max_expansions=16)
    assert ok.complete and ok.n_expanded == 14
    two = lattice.explore(COSTS4, learner, max_expansions=2.0)
    assert two.complete is False and two.stats["trained"] == 2
    zero = lattice.explore(COSTS4, learner, max_expansions=0)
    assert zero.complete is False and zero.n_expanded == 0


def test_a_given_executor_is_used_and_left_open_and_progress_sees_each_training():
    from lattice.executor import InProcessExecutor

    class Recording(InProcessExecutor):
        closed = 0

        def close(self):
            self.closed += 1

    ex = Recording()
    seen = []
    exp = lattice.explore(COSTS4, learners.SyntheticLearner(table(FIG2).__getitem__),
                          executor=ex, progress=seen.append)
    assert ex.closed == 0
    assert [e.features for e in seen] == list(exp.expanded)
    cache = dict(exp.expanded)
    seen.clear()
    lattice.explore(COSTS4, learners.SyntheticLearner(table(FIG2).__getitem__), cache=cache,
                    progress=seen.append)
    assert seen == []  # cache hits are not trainings


def test_check_rejects_corrupted_explorations():
    def fresh(**kw):
        return run(table(FIG2), COSTS4, **({"alpha": 1.1} | kw))

    e = fresh()
    expanded_mask = e._masks[1]
    pruned_mask = next(iter(e._pruned_masks))
    corruptions = [
        lambda e: e._masks.append(e._masks[0]),                       # a set expanded twice
        lambda e: e._pruned_masks.__setitem__(expanded_mask, "sandwich"),  # both
        lambda e: e.stats.__setitem__("trained", e.stats["trained"] + 1),
        lambda e: e.stats.__setitem__("sandwiched", 0),
        lambda e: e._pruned_masks.pop(pruned_mask),                   # a set never visited
        lambda e: e._pruned_masks.__setitem__(pruned_mask, "other"),  # an unknown rule
        lambda e: setattr(e, "alpha", 1.0),                           # no longer sandwiched
        lambda e: setattr(e, "delta", 0.5),
        lambda e: e.__dict__.__setitem__("candidates", e.candidates * 2),  # dominated copies
    ]
    for corrupt in corruptions:
        e = fresh()
        e._check()
        corrupt(e)
        with pytest.raises(AssertionError):
            e._check()
    # at alpha 1.2, delta 0.05, f1f2 is sandwiched, but no expanded set is a cost witness
    e = fresh(alpha=1.2, delta=0.05)
    e._check()
    e._pruned_masks[e._space.mask(frozenset({"f1", "f2"}))] = "cost"
    with pytest.raises(AssertionError):
        e._check()
    bad_key = fresh()
    cand = bad_key.candidates[0]
    bad_key.__dict__["candidates"] = [polydom.Candidate(("zz",), cand.accuracy, cand.cost)]
    with pytest.raises(AssertionError):
        bad_key._check()


def test_children_and_parents_are_the_sets_one_feature_away():
    from lattice.explore import _children, _parents

    for m in range(5):
        full = (1 << m) - 1
        for s in range(full + 1):
            kids = [t for t in range(full + 1) if t & s == t and bin(s ^ t).count("1") == 1]
            ups = [t for t in range(full + 1) if t & s == s and bin(s ^ t).count("1") == 1]
            assert sorted(_children(s)) == kids
            assert sorted(_parents(s, full)) == ups


def test_covering_by_hand_from_the_bottom_and_from_the_top():
    """Flat accuracies, m = 3: the empty set (0.5) is expanded from the bottom and the full
    set (0.5) is a superset no better, so every parent of the empty set (the singletons) is
    covered: the three singletons are skipped by covering, the three pairs sandwiched by
    test.  Non-monotone, m = 3: f1f2 (0.5) is expanded from the top while the empty set
    (0.5) is no worse, so f1f2's children f1 and f2 are covered; f3 is tested and trained."""
    flat = {s: 0.5 for s in all_sets(3)}
    costs = {f"f{i}": [float(i)] for i in range(1, 4)}
    exp = run(flat, costs, alpha=1.0)
    assert [label(s) for s in exp.expanded] == ["123", ""]
    assert exp.stats["checks"] == 6 and exp.stats["sandwiched"] == 6
    assert exp.stats["covering_skips"] == 3
    acc = {s: 0.6 for s in all_sets(3) if len(s) == 1}
    acc |= {frozenset(): 0.5, frozenset({"f1", "f2"}): 0.5, frozenset({"f1", "f3"}): 0.8,
            frozenset({"f2", "f3"}): 0.8, frozenset(costs): 0.9}
    exp = run(acc, costs, alpha=1.0)
    assert [label(s) for s in exp.expanded] == ["123", "", "12", "13", "23", "3"]
    assert exp.pruned == {frozenset({"f1"}): "sandwich", frozenset({"f2"}): "sandwich"}
    assert exp.stats["checks"] == 6 and exp.stats["covering_skips"] == 2
    off = run(acc, costs, alpha=1.0, covering=False)
    assert off.pruned == exp.pruned and off.stats["covering_skips"] == 0


def test_each_pass_trains_its_unpruned_sets_as_one_batch():
    """Figure 2 at alpha = 1, by hand: the full set, the empty set, the four triples, the
    four singletons, then the pairs f1f2, f1f3, f1f4, f2f4 (f2f3 and f3f4 sandwiched), each
    batch in (size, bitmask) order."""
    from lattice.executor import InProcessExecutor, InProcessSession

    batches = []

    class Session(InProcessSession):
        def map_unordered(self, fn, tasks):
            batches.append([label(fs) for (fs,) in tasks])
            return super().map_unordered(fn, tasks)

    class Recording(InProcessExecutor):
        def session(self, shared):
            import contextlib

            return contextlib.nullcontext(Session(shared))

    exp = lattice.explore(COSTS4, learners.SyntheticLearner(table(FIG2).__getitem__),
                          executor=Recording())
    assert batches == [["1234"], [""], ["123", "124", "134", "234"], ["1", "2", "3", "4"],
                       ["12", "13", "14", "24"]]
    assert [label(s) for s in exp.expanded] == [x for b in batches for x in b]


def test_arrays_grow_past_1024_expanded_sets_and_cost_pruning_stays_exact():
    """m = 11 (2048 sets), strictly increasing accuracy (a noisy-OR) and linear costs: at
    alpha = 1 without cost pruning all 2048 are trained; with it more than 1024 are (the
    arrays of expanded sets grow) and every set not trained has a trained one no more
    costly (both coefficients no larger: linear costs on [0, inf)) and as accurate."""
    m = 11
    rng = np.random.default_rng(0)
    single = rng.uniform(0.5, 0.8, m)
    fs = [f"f{i + 1}" for i in range(m)]
    costs = {f: [float(i + 1), float(rng.integers(0, 3))] for i, f in enumerate(fs)}

    def acc(s):
        return 0.5 if not s else 1.0 - float(np.prod([1.0 - single[int(f[1:]) - 1] for f in s]))

    learner = learners.SyntheticLearner(acc)
    plain = lattice.explore(costs, learner, alpha=1.0)
    assert plain.n_expanded == 2 ** m
    assert all(e.accuracy == acc(s) for s, e in plain.expanded.items())
    pruned = lattice.explore(costs, learner, alpha=1.0, cost_pruning=True)
    assert 1024 < pruned.n_expanded < 2 ** m and pruned.stats["cost_pruned"] > 0
    sets = list(pruned.expanded)
    coef = np.array([[sum(costs[f][k] for f in s) for k in (0, 1)] for s in sets])
    accs = np.array([acc(s) for s in sets])
    for s, why in pruned.pruned.items():
        c = np.array([sum(costs[f][k] for f in s) for k in (0, 1)])
        witness = (coef <= c).all(axis=1) & (accs >= acc(s) - ACC_TOL)
        assert witness.any(), (why, sorted(s))


def test_cost_pruning_with_a_single_witness_by_hand():
    """f1 is free (cost 0), f2 costs 5; a({}) = .5, a(f1) = .6, a(f2) = .7, a(f1f2) = .8.
    f1 is trained first (it may be a witness for f2: it costs no more); then f2 is not
    sandwiched (.5 < .8), and its only witness is f1f2: as costly (5) and more accurate
    (.8 >= hi(f2) = .8), so f2 is cost-pruned and never trained."""
    acc = {frozenset(): 0.5, frozenset({"f1"}): 0.6, frozenset({"f2"}): 0.7,
           frozenset({"f1", "f2"}): 0.8}
    costs = {"f1": [0.0], "f2": [5.0]}
    exp = run(acc, costs, alpha=1.0, cost_pruning=True)
    assert [label(s) for s in exp.expanded] == ["12", "", "1"]
    assert exp.pruned == {frozenset({"f2"}): "cost"}
    assert exp.stats["cost_pruned"] == 1 and exp.stats["sandwiched"] == 0
    assert run(acc, costs, alpha=1.0).n_expanded == 4


def test_accuracies_of_zero_and_one_are_valid_and_check_needs_both_ends():
    acc = {frozenset(): 0.0, frozenset({"f1"}): 1.0}
    for traversal in ("complete", "paper"):
        exp = run(acc, {"f1": [1.0]}, alpha=1.0, traversal=traversal)
        assert exp.n_expanded == 2
    # a complete run without its empty set (paper traversal: no count check) is refused
    exp.expanded.pop(frozenset())
    exp._masks.remove(0)
    exp.stats["trained"] -= 1
    exp.__dict__.pop("candidates", None)   # recomputed from what is left: consistent
    with pytest.raises(AssertionError):
        exp._check()


def test_ties_at_the_tolerance_boundary_are_sandwiched_and_covered():
    """a({}) = 0.75 - ACC_TOL and a(f1f2) = 0.75: alpha * a({}) >= a(f1f2) - ACC_TOL holds
    with equality, so f1 and f2 are sandwiched: with covering, the empty set (expanded from
    the bottom, no worse than f1f2 up to the tolerance) covers both; without, the test
    itself prunes them."""
    acc = {frozenset(): 0.75 - ACC_TOL, frozenset({"f1"}): 0.75, frozenset({"f2"}): 0.75,
           frozenset({"f1", "f2"}): 0.75}
    costs = {"f1": [1.0], "f2": [2.0]}
    on = run(acc, costs, alpha=1.0)
    off = run(acc, costs, alpha=1.0, covering=False)
    for exp in (on, off):
        assert exp.n_expanded == 2 and exp.stats["sandwiched"] == 2
    assert on.stats["covering_skips"] == 2 and off.stats["covering_skips"] == 0


def test_covering_needs_every_child_to_miss_a_dominating_subset():
    """m = 5; a = 0.8 with f1 (0.9 from four features on), else 0.6 + 0.01 per feature.
    f1f2f3 is expanded from the top while only f1 among its expanded subsets is as accurate:
    f1 is in every such subset, so its children are not all sandwiched (f2f3, 0.62, lies
    below f2f3f4 at 0.63) and covering must not skip them: with and without covering the
    explorer prunes exactly the same sets, each truly sandwiched."""
    acc = {}
    for s in all_sets(5):
        if not s:
            acc[s] = 0.5
        elif "f1" in s:
            acc[s] = 0.9 if len(s) >= 4 else 0.8
        else:
            acc[s] = 0.6 + 0.01 * len(s)
    costs = {f"f{i}": [float(i)] for i in range(1, 6)}
    on = run(acc, costs, alpha=1.0)
    off = run(acc, costs, alpha=1.0, covering=False)
    assert list(on.expanded) == list(off.expanded) and on.pruned == off.pruned
    assert frozenset({"f1", "f2", "f3"}) in on.expanded
    assert frozenset({"f2", "f3"}) in on.expanded
    for f in on.pruned:
        assert any(g < f < k and on.expanded[g].accuracy >= on.expanded[k].accuracy - ACC_TOL
                   for g in on.expanded for k in on.expanded), sorted(f)


def test_a_passed_deadline_stops_the_checks_even_when_every_set_is_cached():
    import time

    acc = table(FIG2)
    learner = learners.SyntheticLearner(acc.__getitem__)
    cache = dict(lattice.expand_all(COSTS4, learner).expanded)
    exp = lattice.explore(COSTS4, learner, cache=cache, _deadline=time.perf_counter() - 1.0)
    assert not exp.complete and exp.stats["trained"] == 0
    assert exp.stats["checks"] == 0
