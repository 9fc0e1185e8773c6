"""Calibration on what was served (issue 37 item 3): the start, the atoms' and the shared
steps' curves recovered from served-set timings, and the guard's bound per set or family.
"""

from __future__ import annotations

import numpy as np
import pytest

import polydom
from polydom.curves.served_fit import fit_served_costs, paid_units, served_bounds
from polydom.index.served_set import ServedSet

TRUE = polydom.CostModel(
    {"hog": "2e-6*n", "harris": "1e-6*n + 1e-9*n**2", "mean": "5e-6"},
    steps={"grad": "3e-6*n"}, uses={"hog": ["grad"], "harris": ["grad"]}, start="2e-5")
SETS = [("hog",), ("harris",), ("mean",), ("hog", "harris"), ("hog", "mean"),
        ("harris", "mean"), ("hog", "harris", "mean")]


def _served(rng, count, preempted=0):
    """Served sets in random orders, each atom's time what it paid (its units, the start
    on the first) times lognormal noise; ``preempted`` of them hit by a 10 ms delay."""
    out = []
    for k in range(count):
        atoms = list(SETS[k % len(SETS)])
        rng.shuffle(atoms)
        n = float(rng.uniform(8, 400))
        units = TRUE.units
        times = [sum(float(units[u](n)) for u in paid) * float(rng.lognormal(0, 0.05))
                 for paid in paid_units(TRUE, atoms)]
        if k < preempted:
            times[0] += 0.01
        out.append(ServedSet(tuple(atoms), n, tuple(atoms), tuple(times), sum(times)))
    return out


def test_the_fit_recovers_start_atoms_and_steps_from_served_sets():
    rng = np.random.default_rng(0)
    served = _served(rng, 700, preempted=20)
    blank = TRUE.with_curves(atoms=dict.fromkeys(TRUE.atoms, "0"), steps={"grad": "0"},
                             start="0")
    fitted = fit_served_costs(blank, served, degree=2)
    for fs in SETS:
        for n in (16.0, 100.0, 400.0):
            want, got = float(TRUE.cost(fs)(n)), float(fitted.cost(fs)(n))
            assert got == pytest.approx(want, rel=0.05), (fs, n)
    assert float(fitted.start(100.0)) == pytest.approx(2e-5, rel=0.1)


def test_in_situ_timings_fill_in_what_nothing_served():
    rng = np.random.default_rng(1)
    served = [s for s in _served(rng, 300) if "mean" not in s.atoms]
    sizes = rng.uniform(8, 400, 200)
    units = TRUE.units
    insitu = (sizes, {"mean": np.array([float(units["mean"](n) + units["<start>"](n))
                                        for n in sizes])})
    blank = TRUE.with_curves(atoms=dict.fromkeys(TRUE.atoms, "0"), steps={"grad": "0"},
                             start="0")
    fitted = fit_served_costs(blank, served, insitu)
    # the in-situ timing is a set's first feature (start + atom): a set nothing served is
    # priced as that timing says
    for n in (16.0, 200.0):
        assert float(fitted.cost(["mean"])(n)) == pytest.approx(2.5e-5, rel=0.05)
    assert float(fitted.cost(["hog", "harris"])(100.0)) == pytest.approx(
        float(TRUE.cost(["hog", "harris"])(100.0)), rel=0.05)


def test_served_bounds_per_set_and_per_family_hold_their_target():
    rng = np.random.default_rng(2)
    predicted = [polydom.CostCurve([0.0, 1.0]), polydom.CostCurve([0.0, 2.0])]
    sizes = rng.uniform(1, 10, 400)
    served = {0: (sizes, sizes * rng.lognormal(0, 0.2, sizes.size))}
    factors, offsets, how = served_bounds(predicted, served, 0.05, seed=0)
    assert how == ["set", "family"]
    fresh = rng.uniform(1, 10, 4000)
    for k in (0, 1):
        bound = factors[k] * predicted[k](fresh) + offsets[k]
        paid = (k + 1) * fresh * rng.lognormal(0, 0.2, fresh.size)
        assert 0.02 <= float(np.mean(paid > bound)) <= 0.08
    none = served_bounds(predicted, {0: (sizes[:5], sizes[:5])}, 0.05)
    assert none[2] == ["none", "none"] and none[0].tolist() == [1.0, 1.0]
