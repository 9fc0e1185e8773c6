"""Serving: features of raw items (timed), serving within a budget, adherence, cascades, plans,
telemetry of served timings."""

from polydom.lazy_exports import lazy_exports

# names load on first use (cascades load SciPy; a featurizer does not need them); everything
# else is imported from its module
__getattr__ = lazy_exports(__name__, {
    "CLOCKS": "polydom.serving.featurizer",
    "Cascade": "polydom.serving.cascade",
    "DriftMonitor": "polydom.serving.telemetry",
    "Featurizer": "polydom.serving.featurizer",
    "ItemServer": "polydom.serving.item_serving",
    "ServedSet": "polydom.serving.telemetry",
    "TimingBatch": "polydom.serving.telemetry",
    "TimingBuffer": "polydom.serving.telemetry",
    "WorkloadPlan": "polydom.serving.plan",
    "adherence_table": "polydom.serving.adherence",
    "calibrate_on_served": "polydom.serving.served_calibration",
    "fit_cascade": "polydom.serving.cascade_fit",
    "measure_adherence": "polydom.serving.adherence",
    "plan_workload": "polydom.serving.plan",
    "predict_item": "polydom.serving.item_serving",
    "with_cascades": "polydom.serving.cascade_fit",
})

__all__ = [
    "CLOCKS",
    "Cascade",
    "DriftMonitor",
    "Featurizer",
    "ItemServer",
    "ServedSet",
    "TimingBatch",
    "TimingBuffer",
    "WorkloadPlan",
    "adherence_table",
    "calibrate_on_served",
    "fit_cascade",
    "measure_adherence",
    "plan_workload",
    "predict_item",
    "with_cascades",
]
