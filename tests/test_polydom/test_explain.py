"""Index.explain against brute force: the choice is the lookup's, the next dearer entry is
the cheapest way to a better model, and the reason says so."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
from tests.strategies import candidate_pools, examples, small_int_coefs

SIZES = st.floats(0.0, 40.0, allow_nan=False)
BUDGETS = st.floats(0.0, 2000.0, allow_nan=False)


@settings(max_examples=examples(150), deadline=None)
@given(candidate_pools(coefs=small_int_coefs), SIZES, BUDGETS)
def test_explain_agrees_with_lookup_and_names_the_cheapest_better_model(cands, size, budget):
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 40.0), {})
    e = index.explain(size, budget)
    hit = index.lookup(size, budget)
    assert (e.chosen is None) == (hit is None)
    if hit is not None:
        assert e.chosen.candidate is hit.candidate
        assert e.chosen.cost == hit.cost
    assert [s.candidate for s in e.skyline] == index.table.skyline(size)
    assert [s.rank for s in e.skyline] == list(range(len(e.skyline)))
    chosen_rank = -1 if e.chosen is None else e.chosen.rank
    assert [s.fits for s in e.skyline] == [s.rank <= chosen_rank for s in e.skyline]
    assert e.n_lo <= size <= e.n_hi
    best = -math.inf if e.chosen is None else e.chosen.accuracy
    better = [c for c in cands if c.accuracy > best]
    if e.next_dearer is None:
        assert better == []
        assert "nothing better" in e.reason
        return
    # every candidate more accurate than the choice costs at least the next dearer entry
    assert e.next_dearer.accuracy > best
    assert e.next_dearer.cost > budget
    assert all(c.cost(size) >= e.next_dearer.cost * (1 - 1e-9) for c in better)
    assert e.extra_budget == e.next_dearer.cost - budget
    assert f"{e.next_dearer.key} (" in e.reason
    assert e.reason.startswith("nothing fits") == (e.chosen is None)


def test_explain_names_the_build_and_learner():
    cands = [polydom.Candidate("a", 0.7, "1 + n", learner="lattice"),
             polydom.Candidate("b", 0.9, "10 + n", learner="cegb")]
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 100.0), {},
                          info={"build_id": 7})
    e = index.explain(5.0, 8.0)
    assert (e.build, e.chosen.key, e.chosen.learner, e.next_dearer.learner) == (
        7, "a", "lattice", "cegb")
    assert e.reason == ("the next more accurate model, b (cegb, accuracy 0.9), costs 15 at "
                        "size 5, 7 over the budget 8; every more accurate model costs at "
                        "least as much")


@pytest.mark.parametrize(("size", "budget"), [(-1.0, 1.0), (101.0, 1.0), (1.0, -1.0),
                                              (math.nan, 1.0), (1.0, math.inf)])
def test_explain_refuses_a_bad_size_or_budget(size, budget):
    index = polydom.Index(polydom.PolyDomIndex.build(
        [polydom.Candidate("a", 0.7, "1 + n")], 0.0, 100.0), {})
    with pytest.raises(ValueError, match="size|budget"):
        index.explain(size, budget)
