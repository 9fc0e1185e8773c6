"""polydom: the most accurate model whose feature cost fits a budget at a given item size.

``import polydom`` loads nothing but the error base: every public name is imported on first
use (PEP 562).  The core (the cost model :mod:`polydom.curves`, the index
:mod:`polydom.index`) loads numpy, and sympy only when cost text is first parsed; serving
(featurizer, item serving, adherence, cascades, workload plans) and the pipeline
(``build_index``, ``open_index``, which import :mod:`lattice`, :mod:`learners` and
:mod:`storage`) load on first use of one of their names.
"""

from importlib import import_module

from polydom.errors import PolydomError

# name -> module that defines it, imported on first access (PEP 562): ``import polydom``
# itself loads no numpy, so the command line answers ``--version`` at once
_LAZY = {
    "Candidate": "polydom.curves",
    "CostCurve": "polydom.curves",
    "CostModel": "polydom.curves",
    "CostProfile": "polydom.curves",
    "fit_cost_curve": "polydom.curves",
    "InSituProfile": "polydom.curves",
    "calibrate_overrun": "polydom.curves",
    "fit_quantile_curve": "polydom.curves",
    "FixedBudgetIndex": "polydom.index",
    "Hit": "polydom.index",
    "Index": "polydom.index",
    "IndexAll": "polydom.index",
    "ItemPrediction": "polydom.index",
    "NaiveLookup": "polydom.index",
    "PolyDomIndex": "polydom.index",
    "prune_dominated": "polydom.index",
    "RuleUnavailableError": "polydom.index",
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

#: Subpackages, reachable as attributes (``polydom.curves``) once imported or on first use.
_SUBPACKAGES = ("app", "curves", "errors", "index", "pipeline", "serving")


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        if name in _SUBPACKAGES:
            return import_module(f"polydom.{name}")
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
    "RuleUnavailableError",
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
