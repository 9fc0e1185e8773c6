"""The cost model: cost curves (parsing, numerics, fitting from timings) and candidates.

Depends on numpy, scipy and sympy only; everything else in the distribution builds on it.
"""

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.fitting import CostProfile, fit_cost_curve

__all__ = ["Candidate", "CostCurve", "CostModel", "CostProfile", "fit_cost_curve"]
