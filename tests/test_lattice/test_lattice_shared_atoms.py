"""The lattice over bundles that share atoms: every guarantee against exhaustive enumeration.

A set pays each atom once, so set costs are monotone but not additive; the pruning rules
(sandwich, covering, cost pruning) and candidate pruning must stay sound.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import lattice
import learners
import polydom
from tests.lattice_oracle import (
    ACC_TOL,
    accuracy_tables,
    all_sets,
    check_greedy_chain,
    names,
)

SIZES = [0.0, 1.0, 3.7, 100.0]


@st.composite
def shared_instances(draw, max_m: int = 5):
    """Bundles f1..fm over 1-5 atoms (random, overlapping subsets), an accuracy table."""
    m = draw(st.integers(1, max_m))
    k = draw(st.integers(1, 5))
    atoms = {
        f"a{j}": polydom.CostCurve(draw(st.lists(st.integers(0, 5).map(float), min_size=1,
                                                 max_size=3)))
        for j in range(k)
    }
    bundles = {
        f: draw(st.frozensets(st.sampled_from(sorted(atoms)), min_size=1)) for f in names(m)
    }
    return draw(accuracy_tables(m)), polydom.CostModel(atoms, bundles=bundles)


def set_cost(model: polydom.CostModel, fs: frozenset) -> polydom.CostCurve:
    """Independent oracle: the union of the bundles' atoms, each curve added once."""
    union = set()
    for f in fs:
        union |= model.bundles[f]
    return polydom.CostCurve.total([model.atoms[a] for a in sorted(union)] or
                                   [polydom.CostCurve([0.0])])


def best_fitting(acc, model, size, budget):
    fits = [a for fs, a in acc.items() if set_cost(model, fs)(size) <= budget]
    return max(fits, default=-math.inf)


def grid(acc, model, sizes=SIZES):
    for n in sizes:
        values = np.unique([set_cost(model, fs)(n) for fs in acc])
        for v in values:
            for b in (v, v * (1 + 1e-9) + 1e-9, max(v * (1 - 1e-9) - 1e-9, 0.0)):
                yield float(n), float(b)


@given(shared_instances(), st.sampled_from([1.0, 1.1, 1.5]), st.booleans())
def test_index_over_shared_atoms_keeps_the_alpha_guarantee(inst, alpha, cost_pruning):
    acc, model = inst
    learner = learners.SyntheticLearner(acc.__getitem__)
    exp = lattice.explore(model, learner, alpha=alpha, cost_pruning=cost_pruning)
    exp._check()
    index = polydom.build_index(model, learner, alpha=alpha, cost_pruning=cost_pruning)
    for n, b in grid(acc, model):
        hit = index.lookup(n, b)
        best = best_fitting(acc, model, n, b)
        assert hit is not None and hit.cost <= b
        assert alpha * hit.accuracy >= best - alpha * ACC_TOL, (n, b, hit, best)
        if alpha == 1.0:
            assert hit.accuracy == best


@given(shared_instances())
def test_candidate_costs_pay_each_shared_atom_once(inst):
    acc, model = inst
    exp = lattice.expand_all(model, learners.SyntheticLearner(acc.__getitem__))
    for cand in exp.all_candidates():
        assert cand.cost == set_cost(model, cand.features)
        assert cand.needs == dict.fromkeys(sorted(model.atoms_of(cand.features)), 1.0)
        assert cand.learner == "synthetic"
    assert len(exp.expanded) == len(all_sets(len(model.features)))


def test_greedy_adds_a_feature_whose_atoms_are_paid_for_free():
    model = polydom.CostModel({"edges": "10", "hog": "1", "lbp": "3"},
                              bundles={"f1": ["edges", "hog"], "f2": ["edges"], "f3": ["lbp"]})
    acc = {fs: 0.5 + 0.1 * len(fs) for fs in all_sets(3)}
    # cheapest first: f3 (3) < f1 (11) = f2 (10)?  f2 (10) < f1 (11); then f1 costs 1 more
    result = lattice.greedy_cost(model, learners.SyntheticLearner(acc.__getitem__))
    assert result.sequences[math.inf] == [frozenset({"f3"}), frozenset({"f3", "f2"}),
                                          frozenset({"f1", "f2", "f3"})]
    assert result.cost_of(frozenset({"f1", "f2"})) == polydom.CostCurve([11.0])


@given(shared_instances(), st.sampled_from([0.0, 1.0, 3.0]))
def test_greedy_over_shared_atoms_equals_a_brute_force_greedy(inst, n0):
    """Every step adds a feature the brute-force Greedy would add with the marginal cost
    ``c(cur + f) - c(cur)`` of the union oracle (an atom already paid costs nothing)."""
    acc, model = inst
    lambdas = (0.0, 0.1, 1.0, math.inf)
    g = lattice.greedy(model, learners.SyntheticLearner(acc.__getitem__), size=n0,
                       lambdas=lambdas)
    for lam in lambdas:
        check_greedy_chain(acc, model.features, n0, lam, g.sequences[lam],
                           cost_of=lambda fs: set_cost(model, fs))


def test_greedy_cost_after_a_shared_atom_is_paid_by_hand():
    """Atoms e (2), h (1), l (3); f1 = {e, h} (3), f2 = {e} (2), f3 = {l} (3).  Cheapest
    first: f2 (2); then f1 costs only h (1) more, less than f3 (3), although f3 gains
    more: f1 is next, then f3."""
    model = polydom.CostModel({"e": "2", "h": "1", "l": "3"},
                              bundles={"f1": ["e", "h"], "f2": ["e"], "f3": ["l"]})
    acc = {fs: 0.5 + sum({"f1": 0.1, "f2": 0.05, "f3": 0.2}[f] for f in fs)
           for fs in all_sets(3)}
    g = lattice.greedy_cost(model, learners.SyntheticLearner(acc.__getitem__))
    assert g.sequences[math.inf] == [frozenset({"f2"}), frozenset({"f1", "f2"}),
                                     frozenset({"f1", "f2", "f3"})]
