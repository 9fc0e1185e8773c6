"""A set's cost as serving pays it: a start once, shared steps once (issue 37 item 1).

Every property is checked against an independent brute force over the sets: the cost
formula, monotonicity (the lattice's pruning relies on it), the vectorised lattice path,
the alpha guarantee of an index over such a model, and the store's round trip.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
import polydom
from lattice.feature_space import FeatureSpace
from polydom.curves.cost_model import START
from storage.cost_model_rows import DIGESTED, cost_model_digest, cost_model_rows
from storage.seal import rows_digest
from tests.lattice_oracle import ACC_TOL, accuracy_tables, names

SIZES = [0.0, 1.0, 3.7, 100.0]
curves = st.lists(st.integers(0, 5).map(float), min_size=1, max_size=3)


@st.composite
def step_models(draw, max_m: int = 4):
    """Bundles f1..fm over 1-4 atoms, 0-3 shared steps used by random atoms, maybe a start."""
    m = draw(st.integers(1, max_m))
    k = draw(st.integers(1, 4))
    atoms = {f"a{j}": draw(curves) for j in range(k)}
    bundles = {f: sorted(draw(st.frozensets(st.sampled_from(sorted(atoms)), min_size=1)))
               for f in names(m)}
    steps = {f"s{j}": draw(curves) for j in range(draw(st.integers(0, 3)))}
    uses: dict[str, list[str]] = {}
    for step in steps:
        for atom in draw(st.frozensets(st.sampled_from(sorted(atoms)), min_size=1)):
            uses.setdefault(atom, []).append(step)
    start = draw(st.one_of(st.none(), curves))
    return polydom.CostModel(atoms, bundles=bundles, steps=steps or None, uses=uses or None,
                             start=start), (atoms, bundles, steps, uses, start)


def brute_cost(parts, fs: frozenset, n: float) -> float:
    """Independent oracle: union of the bundles' atoms, the steps any of them uses, the
    start when the set is not empty; each curve evaluated and added once."""
    atoms, bundles, steps, uses, start = parts
    union = set().union(*(bundles[f] for f in fs)) if fs else set()
    used = {s for a in union for s in uses.get(a, [])}

    def value(coefficients):
        return sum(c * n**i for i, c in enumerate(coefficients))

    total = sum(value(atoms[a]) for a in union) + sum(value(steps[s]) for s in used)
    if union and start is not None:
        total += value(start)
    return total


def every_set(m: int) -> list[frozenset]:
    fs = names(m)
    return [frozenset(c) for r in range(m + 1) for c in itertools.combinations(fs, r)]


@settings(max_examples=60, deadline=None)
@given(step_models())
def test_set_cost_is_start_plus_atoms_plus_steps_once_and_monotone(inst):
    model, parts = inst
    sets = every_set(len(model.features))
    space = FeatureSpace(model, 0.0, 100.0)
    masks = [space.mask(fs) for fs in sets]
    coefs = space.cost_coefs(masks)
    for n in SIZES:
        values = {}
        for fs, row in zip(sets, coefs, strict=True):
            want = brute_cost(parts, fs, n)
            got = float(model.cost(fs)(n))
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
            # the lattice's vectorised path (one incidence over the units) agrees
            assert float(np.polynomial.polynomial.polyval(n, row)) == pytest.approx(
                want, rel=1e-12, abs=1e-12)
            # a static candidate's expected cost (needs all 1) is the set's cost
            needs = dict.fromkeys(model.atoms_of(fs), 1.0)
            assert float(model.expected_cost(needs)(n)) == pytest.approx(want, abs=1e-12)
            values[fs] = got
        for a, b in itertools.product(sets, sets):
            if a <= b:  # monotone in the set: what the lattice's pruning relies on
                assert values[a] <= values[b] + 1e-12, (a, b, n)


@settings(max_examples=40, deadline=None)
@given(step_models(), st.dictionaries(st.sampled_from(["a0", "a1", "a2", "a3"]),
                                      st.floats(0.0, 1.0), min_size=1))
def test_expected_cost_never_understates_a_random_subset(inst, probs):
    """For independent needs, the union bound is above the exact expected cost of the
    units: E[cost] = sum_u P(u paid) c_u, P(step paid) = 1 - prod(1 - p_a)."""
    model, parts = inst
    probs = {a: p for a, p in probs.items() if a in model.atoms}
    if not probs:
        return
    atoms, bundles, steps, uses, start = parts
    exact = {a: p for a, p in probs.items()}
    for s in steps:
        users = [a for a in probs if s in uses.get(a, [])]
        exact[s] = 1.0 - math.prod(1.0 - probs[a] for a in users)
    if start is not None:
        exact[START] = 1.0 - math.prod(1.0 - p for p in probs.values())
    units = model.units
    for n in SIZES:
        want = sum(p * float(units[u](n)) for u, p in exact.items())
        assert float(model.expected_cost(probs)(n)) >= want - 1e-9


@settings(max_examples=40, deadline=None)
@given(step_models(), st.data(), st.sampled_from([1.0, 1.5]), st.booleans())
def test_lattice_and_index_over_steps_keep_the_alpha_guarantee(inst, data, alpha,
                                                               cost_pruning):
    model, parts = inst
    m = len(model.features)
    acc = data.draw(accuracy_tables(m))
    learner = learners.SyntheticLearner(acc.__getitem__)
    exp = lattice.explore(model, learner, alpha=alpha, cost_pruning=cost_pruning)
    exp._check()
    index = polydom.build_index(model, learner, alpha=alpha, cost_pruning=cost_pruning)
    for n in SIZES:
        costs = {fs: brute_cost(parts, fs, n) for fs in acc}
        for v in sorted(set(costs.values())):
            for b in (v, v * (1 + 1e-9) + 1e-9):
                best = max((a for fs, a in acc.items() if costs[fs] <= b), default=-math.inf)
                hit = index.lookup(n, b)
                assert hit is not None and hit.cost <= b * (1 + 1e-9) + 1e-9
                assert alpha * hit.accuracy >= best - alpha * ACC_TOL, (n, b, hit, best)
                if alpha == 1.0:
                    assert hit.accuracy == best


def test_bad_steps_are_refused_in_one_line():
    atoms = {"a": "1", "b": "n"}
    cases = [
        (dict(steps={"a": "1"}, uses={"a": ["a"]}), "has the name of an atom"),
        (dict(steps={"g": "1"}, uses={"a": ["h"]}), "unknown step"),
        (dict(steps={"g": "1"}), "used by no atom"),
        (dict(steps={"g": "1"}, uses={"z": ["g"]}), "not an atom"),
        (dict(steps={"g": "1"}, uses={"a": "g"}), "must be a list"),
        (dict(start="n +"), "the start"),
        (dict(steps={START: "1"}, uses={"a": [START]}), "the start"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            polydom.CostModel(atoms, **kwargs)
    model = polydom.CostModel(atoms, steps={"g": "1 - n"}, uses={"a": ["g"]})
    with pytest.raises(ValueError, match="step 'g'"):
        model.check_nonnegative(0.0, 5.0)
    with pytest.raises(ValueError, match="the start"):
        polydom.CostModel(atoms, start="1 - n").check_nonnegative(0.0, 5.0)


def test_with_curves_keeps_the_structure_and_refuses_unknown_names():
    model = polydom.CostModel({"hog": "n", "harris": "2*n"}, bundles={"both": ["hog", "harris"]},
                              columns={"hog": [0], "harris": [1]}, steps={"grad": "3*n"},
                              uses={"hog": ["grad"], "harris": ["grad"]}, start="1")
    again = model.with_curves(atoms={"hog": "2*n"}, steps={"grad": "n"}, start="0.5")
    assert again.bundles == model.bundles and again.columns == model.columns
    assert again.uses == model.uses
    assert float(again.cost(["both"])(1.0)) == 0.5 + 2 + 2 + 1
    assert float(model.cost(["both"])(1.0)) == 1 + 1 + 2 + 3
    assert model.with_curves() == model and again != model
    with pytest.raises(ValueError, match="unknown step"):
        model.with_curves(steps={"nope": "1"})


def test_a_model_without_steps_keeps_its_digest():
    """The step tables enter the seal's digest only when a build has rows there: a build
    made before they existed still verifies."""
    cols = {"a": [0], "b": [1]}
    model = polydom.CostModel({"a": "1", "b": "n"}, bundles={"ab": ["a", "b"]}, columns=cols)
    rows = cost_model_rows(1, model)
    old = {t: [tuple(r[c] for c in DIGESTED[t]) for r in rows[t]]
           for t in ("features", "feature_costs", "bundles", "bundle_atoms")}
    assert cost_model_digest(rows, 3) == rows_digest(old)
    stepped = polydom.CostModel({"a": "1", "b": "n"}, bundles={"ab": ["a", "b"]},
                                columns=cols, start="1")
    assert cost_model_digest(cost_model_rows(1, stepped), 3) != rows_digest(old)


def test_a_store_keeps_the_start_and_the_steps(tmp_path):
    model = polydom.CostModel({"hog": "n", "harris": "2*n", "mean": "1"},
                              columns={"hog": [0], "harris": [1], "mean": [2]},
                              steps={"grad": "3*n"}, uses={"hog": ["grad"], "harris": ["grad"]},
                              start="0.5")
    acc = {fs: 0.5 + 0.1 * len(fs) for fs in every_set(3)}
    table = {frozenset(k.replace("f1", "hog").replace("f2", "harris").replace("f3", "mean")
                       for k in fs): a for fs, a in acc.items()}
    learner = learners.SyntheticLearner(table.__getitem__)
    url = f"sqlite:///{tmp_path / 'steps.db'}"
    built = polydom.build_index(model, learner, store=url)
    opened = polydom.open_index(url)
    assert opened.cost_model == model
    assert opened.cost_model.start == polydom.CostCurve.coerce("0.5")
    for n in (1.0, 10.0):
        for budget in (1.0, 5.0, 40.0):
            a, b = built.lookup(n, budget), opened.lookup(n, budget)
            assert (a is None) == (b is None) and (a is None or a.key == b.key)
