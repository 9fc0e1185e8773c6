"""Serving: features of raw items (timed), serving within a budget, adherence, cascades, plans,
telemetry of served timings."""

from polydom.serving.adherence import AdherenceRow, adherence_table, measure_adherence
from polydom.serving.cascade import Cascade
from polydom.serving.cascade_fit import (
    cascade_candidates,
    cascade_from_stages,
    fit_cascade,
    with_cascades,
)
from polydom.serving.curve_area import normalized_area
from polydom.serving.featurizer import Computed, Featurizer, InSituRun
from polydom.serving.item_serving import ItemServer, predict_item
from polydom.serving.plan import PlanRow, WorkloadPlan, plan_workload, uniform_plan
from polydom.serving.telemetry import DriftMonitor, TimingBuffer, TimingRecord

__all__ = [
    "AdherenceRow",
    "Cascade",
    "Computed",
    "DriftMonitor",
    "Featurizer",
    "InSituRun",
    "ItemServer",
    "PlanRow",
    "TimingBuffer",
    "TimingRecord",
    "WorkloadPlan",
    "adherence_table",
    "cascade_candidates",
    "cascade_from_stages",
    "fit_cascade",
    "measure_adherence",
    "normalized_area",
    "plan_workload",
    "predict_item",
    "uniform_plan",
    "with_cascades",
]
