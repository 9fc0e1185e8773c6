"""The cost model: cost curves (parsing, numerics, fitting from timings), candidates, and the
calibration of curves to in-situ timings (quantile fits, conformal overrun factors).

Depends on numpy, scipy and sympy only (sympy loads when cost text is first parsed);
everything else in the distribution builds on it.  Names load on first use (PEP 562), so
that importing a light module of this package (:mod:`polydom.curves.curve_text`) loads no
numpy.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "OverrunCalibration": "polydom.curves.calibration",
    "calibrate_overrun": "polydom.curves.calibration",
    "conformal_factor": "polydom.curves.calibration",
    "min_calibration_items": "polydom.curves.calibration",
    "InSituProfile": "polydom.curves.quantile_fit",
    "fit_quantile_curve": "polydom.curves.quantile_fit",
    "Candidate": "polydom.curves.candidate",
    "CostCurve": "polydom.curves.cost_curve",
    "CostModel": "polydom.curves.cost_model",
    "CostProfile": "polydom.curves.fitting",
    "fit_cost_curve": "polydom.curves.fitting",
    "fit_served_costs": "polydom.curves.served_fit",
    "served_bounds": "polydom.curves.served_fit",
})


def __dir__() -> list[str]:
    return sorted(__all__)


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
    "fit_served_costs",
    "min_calibration_items",
    "served_bounds",
]
