"""Workload plans: never over budget, optimal (exact) or within the stated gap (Lagrangian)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polydom import Candidate, PolyDomIndex
from polydom.serving.curve_area import normalized_area
from polydom.serving.plan import per_item_budget, plan_workload, uniform_plan

N_MAX = 10.0


@st.composite
def instances(draw):
    k = draw(st.integers(1, 4))
    cands = []
    for i in range(k):
        c0 = draw(st.integers(0, 6))
        c1 = draw(st.integers(0, 3))
        acc = draw(st.integers(1, 20)) / 20
        cands.append(Candidate(f"m{i}", acc, [c0, c1]))
    sizes = draw(st.lists(st.integers(0, int(N_MAX)), min_size=1, max_size=6))
    weights = draw(st.lists(st.integers(1, 5), min_size=len(sizes), max_size=len(sizes)))
    frac = draw(st.integers(0, 10)) / 10
    return cands, [float(s) for s in sizes], [float(w) for w in weights], frac


def brute_force(cands, sizes, weights, budget):
    """Best expected accuracy over every assignment of a candidate to each distinct size."""
    values = sorted(set(sizes))
    mass = np.array([sum(w for s, w in zip(sizes, weights, strict=True) if s == v)
                     for v in values])
    mass = mass / mass.sum()
    best = -1.0
    for pick in itertools.product(cands, repeat=len(values)):
        cost = sum(m * c.cost(v) for m, c, v in zip(mass, pick, values, strict=True))
        if cost <= budget * (1 + 1e-9):
            best = max(best, sum(m * c.accuracy for m, c in zip(mass, pick, strict=True)))
    return best, mass, values


def budget_between(cands, sizes, weights, frac):
    values = sorted(set(sizes))
    mass = np.array([sum(w for s, w in zip(sizes, weights, strict=True) if s == v)
                     for v in values])
    mass = mass / mass.sum()
    lo = sum(m * min(c.cost(v) for c in cands) for m, v in zip(mass, values, strict=True))
    hi = sum(m * max(c.cost(v) for c in cands) for m, v in zip(mass, values, strict=True))
    return lo + frac * (hi - lo)


@given(instances())
def test_exact_plan_is_optimal_and_within_budget(inst):
    cands, sizes, weights, frac = inst
    index = PolyDomIndex.build(cands, 0.0, N_MAX)
    budget = budget_between(cands, sizes, weights, frac)
    plan = plan_workload(index, sizes, budget, weights=weights, method="exact")
    best, _, _ = brute_force(cands, sizes, weights, budget)
    assert plan.expected_cost <= budget * (1 + 1e-9)
    assert plan.expected_accuracy == pytest.approx(best, abs=1e-9)
    assert plan.gap == 0.0


@given(instances())
def test_lagrangian_plan_is_within_budget_and_its_gap(inst):
    cands, sizes, weights, frac = inst
    index = PolyDomIndex.build(cands, 0.0, N_MAX)
    budget = budget_between(cands, sizes, weights, frac)
    plan = plan_workload(index, sizes, budget, weights=weights, method="lagrangian")
    best, _, _ = brute_force(cands, sizes, weights, budget)
    assert plan.expected_cost <= budget * (1 + 1e-9)
    assert plan.expected_accuracy >= best - plan.gap - 1e-9


@given(instances())
def test_plan_is_never_worse_than_a_uniform_budget_of_the_same_total(inst):
    cands, sizes, weights, frac = inst
    index = PolyDomIndex.build(cands, 0.0, N_MAX)
    budget = max(c.cost(N_MAX) for c in cands) * frac
    try:
        uniform = uniform_plan(index, sizes, budget, weights=weights)
    except ValueError:
        return
    plan = plan_workload(index, sizes, budget, weights=weights)
    assert plan.expected_accuracy >= uniform.expected_accuracy - 1e-9
    assert uniform.expected_cost <= budget * (1 + 1e-9)


def test_bins_group_many_sizes_and_stay_within_budget():
    cands = [Candidate("cheap", 0.6, "1"), Candidate("mid", 0.8, "0.5*n"),
             Candidate("dear", 0.9, "0.02*n**2")]
    index = PolyDomIndex.build(cands, 0.0, 100.0)
    sizes = np.random.default_rng(0).gamma(2.0, 10.0, 5000).clip(0, 100)
    plan = plan_workload(index, sizes, budget=8.0, max_bins=16)
    assert len(plan.rows) <= 16
    assert sum(r.weight for r in plan.rows) == pytest.approx(1.0)
    per_item = np.array([plan.candidate_for(n).cost(n) for n in sizes])
    assert per_item.mean() <= 8.0 * (1 + 1e-9)
    assert plan.expected_cost == pytest.approx(per_item.mean())


def test_budget_per_hour_is_cost_over_rate():
    cands = [Candidate("cheap", 0.6, "1"), Candidate("dear", 0.9, "n")]
    index = PolyDomIndex.build(cands, 0.0, 100.0)
    a = plan_workload(index, [1.0, 5.0], cost_per_hour=7200.0, rate=3600.0)
    b = plan_workload(index, [1.0, 5.0], budget=2.0)
    assert a == b
    assert per_item_budget(10.0, 4.0) == 2.5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sizes": [1.0], "budget": 0.5}, "budget 0.5 is below the cheapest plan"),
        ({"sizes": [], "budget": 5.0}, "sizes must not be empty"),
        ({"sizes": [1.0, 200.0], "budget": 5.0}, r"sizes\[1\] must be finite and inside"),
        ({"sizes": [1.0], "budget": -1.0}, "budget must be finite and >= 0"),
        ({"sizes": [1.0]}, "give budget"),
        ({"sizes": [1.0], "budget": 2.0, "cost_per_hour": 1.0, "rate": 1.0}, "give budget"),
        ({"sizes": [1.0], "cost_per_hour": 10.0, "rate": 0.0}, "rate must be finite and > 0"),
        ({"sizes": [1.0, 2.0], "budget": 5.0, "weights": [1.0]}, "weights must have one"),
        ({"sizes": [1.0], "budget": 5.0, "method": "greedy"}, "method must be"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    index = PolyDomIndex.build([Candidate("cheap", 0.6, "1"), Candidate("dear", 0.9, "n")],
                               0.0, 100.0)
    with pytest.raises(ValueError, match=match):
        plan_workload(index, **kwargs)


def test_normalized_area_is_the_mean_of_the_reachable_accuracy():
    assert normalized_area([1.0, 3.0], [0.5, 0.9], 0.0, 4.0) == pytest.approx(0.475)
    # a dearer point that is less accurate changes nothing
    assert normalized_area([1.0, 3.0, 2.0], [0.5, 0.9, 0.4], 0.0, 4.0) == pytest.approx(0.475)
    assert normalized_area([0.0], [0.8], 0.0, 4.0) == pytest.approx(0.8)
    assert normalized_area([1.0, 10.0], [0.5, 0.9], 1.0, 100.0, log=True) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="lo > 0"):
        normalized_area([1.0], [0.5], 0.0, 1.0, log=True)
    with pytest.raises(ValueError, match="lo < hi"):
        normalized_area([1.0], [0.5], 2.0, 1.0)


def test_docstring_examples_run():
    import doctest

    from polydom.serving import cascade, cascade_fit, curve_area, plan

    for module in (cascade, cascade_fit, curve_area, plan):
        assert doctest.testmod(module).failed == 0
