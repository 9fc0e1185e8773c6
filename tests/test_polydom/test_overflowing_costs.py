"""Cost curves that overflow to inf inside the domain (a legal store may hold one): a
candidate whose cost is infinite at some sizes fits no budget there, and dominance must
not take an overflowed difference for "costs no more"."""

from __future__ import annotations

import warnings

from polydom import Candidate
from polydom.index.dominance import prune_dominated


def test_a_curve_that_overflows_does_not_dominate_a_constant():
    cheap = Candidate("cheap", 0.5, "1")
    dear = Candidate("dear", 0.9, "1e300*n**3")  # 1e330 at n = 1e10: inf in floats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kept = prune_dominated([cheap, dear], 0.0, 1e10)
    assert sorted(kept) == [0, 1]
