"""The cost model: cost curves (parsing, numerics, fitting from timings), candidates, and the
calibration of curves to in-situ timings (quantile fits, conformal overrun factors).

Depends on numpy, scipy and sympy only; everything else in the distribution builds on it.
"""

from polydom.curves.calibration import (
    OverrunCalibration,
    calibrate_overrun,
    conformal_factor,
    min_calibration_items,
)
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.fitting import CostProfile, fit_cost_curve
from polydom.curves.quantile_fit import InSituProfile, fit_quantile_curve

__all__ = [
    "Candidate",
    "CostCurve",
    "CostModel",
    "CostProfile",
    "InSituProfile",
    "OverrunCalibration",
    "calibrate_overrun",
    "conformal_factor",
    "fit_cost_curve",
    "fit_quantile_curve",
    "min_calibration_items",
]
