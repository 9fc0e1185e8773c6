"""polydom: the most accurate model whose feature cost fits a budget at a given item size.

``import polydom`` loads the core only: the cost model (:mod:`polydom.curves`) and the index
(:mod:`polydom.index`).  Serving (featurizer, item serving, adherence, cascades, workload
plans) and the pipeline (``build_index``, ``open_index``, which import :mod:`lattice`,
:mod:`learners` and :mod:`storage`) load on first use of one of their names.
"""

from importlib import import_module

from polydom.curves import (
    Candidate,
    CostCurve,
    CostModel,
    CostProfile,
    InSituProfile,
    calibrate_overrun,
    fit_cost_curve,
    fit_quantile_curve,
)
from polydom.errors import PolydomError
from polydom.index import (
    FixedBudgetIndex,
    Hit,
    Index,
    IndexAll,
    ItemPrediction,
    NaiveLookup,
    PolyDomIndex,
    prune_dominated,
)

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    "AdherenceRow": "polydom.serving.adherence",
    "adherence_table": "polydom.serving.adherence",
    "measure_adherence": "polydom.serving.adherence",
    "Featurizer": "polydom.serving.featurizer",
    "TimingBuffer": "polydom.serving.telemetry",
    "DriftMonitor": "polydom.serving.telemetry",
    "recalibrate": "polydom.pipeline.recalibrate",
    "store_timings": "polydom.pipeline.recalibrate",
    "publish_index": "polydom.pipeline.recalibrate",
    "predict_item": "polydom.serving.item_serving",
    "Cascade": "polydom.serving.cascade",
    "cascade_candidates": "polydom.serving.cascade_fit",
    "fit_cascade": "polydom.serving.cascade_fit",
    "with_cascades": "polydom.serving.cascade_fit",
    "normalized_area": "polydom.serving.curve_area",
    "WorkloadPlan": "polydom.serving.plan",
    "plan_workload": "polydom.serving.plan",
    "uniform_plan": "polydom.serving.plan",
    "build_index": "polydom.pipeline.build",
    "list_builds": "polydom.pipeline.open",
    "open_index": "polydom.pipeline.open",
    "Expansion": "lattice.expansion",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'polydom' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AdherenceRow",
    "Candidate",
    "Cascade",
    "CostCurve",
    "CostModel",
    "CostProfile",
    "DriftMonitor",
    "Expansion",
    "Featurizer",
    "FixedBudgetIndex",
    "Hit",
    "Index",
    "IndexAll",
    "InSituProfile",
    "ItemPrediction",
    "NaiveLookup",
    "PolydomError",
    "PolyDomIndex",
    "TimingBuffer",
    "WorkloadPlan",
    "adherence_table",
    "build_index",
    "calibrate_overrun",
    "cascade_candidates",
    "fit_cascade",
    "fit_cost_curve",
    "fit_quantile_curve",
    "list_builds",
    "measure_adherence",
    "normalized_area",
    "open_index",
    "plan_workload",
    "predict_item",
    "prune_dominated",
    "publish_index",
    "recalibrate",
    "store_timings",
    "uniform_plan",
    "with_cascades",
]
