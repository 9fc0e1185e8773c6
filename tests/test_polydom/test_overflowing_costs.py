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


def test_fitted_and_computed_curves_flush_subnormal_coefficients_to_zero():
    """A fit on timings of about 1e-308 s, a sum or a scaled curve may produce a
    coefficient below the normal floats: polydom's own arithmetic sets it to 0 (a user's
    subnormal coefficient is refused, naming it)."""
    import numpy as np
    import pytest

    from polydom import CostCurve
    from polydom.curves.fitting import fit_cost_curve
    from polydom.errors import InvalidArgumentError

    sizes = np.arange(7.0).repeat(2)
    seconds = np.zeros(sizes.size)
    seconds[6] = 1.1125369292536007e-308
    assert fit_cost_curve(sizes, seconds, degree=0)(3.0) == 0.0  # was refused as subnormal
    assert CostCurve([1e-300]) * 1e-10 == CostCurve([0.0])
    assert CostCurve.total([CostCurve([3e-308]), CostCurve([-2.5e-308])]) == CostCurve([0.0])
    with pytest.raises(InvalidArgumentError, match="subnormal"):
        CostCurve([1e-310])
