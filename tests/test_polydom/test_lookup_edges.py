"""Lookups at their edges, each answer worked out by hand.

The property tests compare the index with a full scan up to floating ties; these fixtures
pin the cases a tie tolerance would hide: a size exactly on a point where the answer
changes, a domain that starts at 0 and has no later point, a one-point domain, no model
that fits, and empty query arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

from polydom import Candidate, NaiveLookup, PolyDomIndex

# A pays n, B pays 1: with budget 4, A (the better) fits up to n = 4 exactly, then only B.
A = Candidate("A", 0.9, "n")
B = Candidate("B", 0.5, "1")


def test_fixed_budget_answers_exactly_on_the_root_and_just_after_it():
    fixed = PolyDomIndex.build([A, B], 0.0, 100.0).for_budget(4.0)
    assert 4.0 in fixed.breakpoints.tolist()
    assert fixed.lookup(4.0).key == "A"  # cost 4 <= 4
    assert fixed.lookup(np.nextafter(4.0, 5.0)).key == "B"
    assert fixed.lookup(np.nextafter(4.0, 0.0)).key == "A"
    assert fixed.lookup(100.0).key == "B"


def test_fixed_budget_on_an_unbounded_domain_from_zero_with_no_later_point():
    # cost n with budget 0: it fits at n = 0 only; the root 0 is the domain's start, so the
    # only point is 0 and the answer after it comes from a probe beyond 0.
    fixed = PolyDomIndex.build([A], 0.0, float("inf")).for_budget(0.0)
    assert fixed.breakpoints.tolist() == [0.0]
    assert fixed.lookup(0.0).key == "A"
    assert fixed.lookup(1e-9) is None
    assert fixed.lookup(1e12) is None


def test_fixed_budget_on_a_one_point_domain():
    index = PolyDomIndex.build([A, B], 3.0, 3.0)
    assert index.for_budget(3.0).lookup(3.0).key == "A"
    assert index.for_budget(2.0).lookup(3.0).key == "B"
    assert index.for_budget(0.5).lookup(3.0) is None


def test_naive_lookup_position_is_minus_one_when_nothing_fits():
    naive = NaiveLookup.build([A, B], 0.0, 100.0)
    assert naive.lookup_position(10.0, 0.5) == -1
    assert naive.lookup(10.0, 0.5) is None
    assert naive.lookup_many(np.array([10.0, 2.0]), np.array([0.5, 3.0])).tolist() == [-1, 0]


@pytest.mark.parametrize("build", [NaiveLookup.build, PolyDomIndex.build])
def test_lookup_many_on_no_queries_gives_an_empty_int64_array(build):
    index = build([A, B], 0.0, 100.0)
    out = index.lookup_many(np.array([]), np.array([]))
    assert out.shape == (0,)
    assert out.dtype == np.int64
    out = index.lookup_many(np.zeros((0, 3)), 1.0)
    assert out.shape == (0, 3)
    assert out.dtype == np.int64
