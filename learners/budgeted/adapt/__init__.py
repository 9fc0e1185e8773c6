"""ADAPT: adaptive approximation of a high-cost model by a gate and a low-cost model
(Nan & Saligrama, NIPS 2017).

:mod:`.qstep` the closed-form q-step, :mod:`.lin` ADAPT-LIN, :mod:`.gbrt` ADAPT-GBRT
(LightGBM), :mod:`.high_cost` the high-cost model, :mod:`.classifier` the estimator and
:mod:`.sweep` the paper's (tradeoff, p_full) sweep and frontier (index candidates come
from :func:`learners.budgeted.sweep.sweep`).  They load on first use.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "AdaptClassifier": "learners.budgeted.adapt.classifier",
    "HighCostModel": "learners.budgeted.adapt.high_cost",
    "efficient_frontier": "learners.budgeted.adapt.sweep",
    "sweep_adapt": "learners.budgeted.adapt.sweep",
})

__all__ = [
    "AdaptClassifier",
    "HighCostModel",
    "efficient_frontier",
    "sweep_adapt",
]
