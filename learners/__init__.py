"""Learners: the learner protocol, the scikit-learn black box, budgeted methods."""

from learners.budgeted import (
    BudgetedClassifierMixin,
    ColumnSubsetModel,
    expected_cost_curve,
    sweep_candidates,
    worst_cost_curve,
)
from learners.cegb import CEGBClassifier, GreedyMiserClassifier, ItemPrediction, OnDemandFeaturizer
from learners.tree_paths import TreeArrays, TreeEnsemble

__all__ = [
    "BudgetedClassifierMixin",
    "CEGBClassifier",
    "ColumnSubsetModel",
    "GreedyMiserClassifier",
    "ItemPrediction",
    "OnDemandFeaturizer",
    "TreeArrays",
    "TreeEnsemble",
    "expected_cost_curve",
    "sweep_candidates",
    "worst_cost_curve",
]
