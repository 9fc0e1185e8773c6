"""Budgeted learners: the cost contract and the methods that trade accuracy for feature cost.

CEGB / GreedyMiser and ADAPT (LightGBM) and CSTC / CSCC load on first use, so that
``import learners.budgeted`` stays light and works without LightGBM.
"""

from importlib import import_module

from learners.budgeted.adapt_sweep import (
    efficient_frontier,
    sweep_adapt,
    sweep_adapt_build,
    sweep_adapt_candidates,
)
from learners.budgeted.contract import (
    BudgetedClassifierMixin,
    ColumnSubsetModel,
    expected_cost_curve,
    sweep_candidates,
    worst_cost_curve,
)
from learners.budgeted.on_demand import OnDemandFeaturizer
from learners.budgeted.tree_paths import TreeArrays, TreeEnsemble

_LAZY = {
    "AdaptClassifier": "learners.budgeted.adapt",
    "CEGBClassifier": "learners.budgeted.cegb",
    "DAGClassifier": "learners.budgeted.dag",
    "dag_sweep_candidates": "learners.budgeted.dag",
    "GreedyMiserClassifier": "learners.budgeted.cegb",
    "CSTCClassifier": "learners.budgeted.cstc",
    "CSTCRegressor": "learners.budgeted.cstc",
    "CSCCClassifier": "learners.budgeted.cscc",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'learners.budgeted' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "AdaptClassifier",
    "BudgetedClassifierMixin",
    "CEGBClassifier",
    "CSCCClassifier",
    "CSTCClassifier",
    "CSTCRegressor",
    "DAGClassifier",
    "ColumnSubsetModel",
    "GreedyMiserClassifier",
    "OnDemandFeaturizer",
    "TreeArrays",
    "TreeEnsemble",
    "dag_sweep_candidates",
    "efficient_frontier",
    "expected_cost_curve",
    "sweep_adapt",
    "sweep_adapt_build",
    "sweep_adapt_candidates",
    "sweep_candidates",
    "worst_cost_curve",
]
