"""Learners: the learner protocol, the scikit-learn black box, budgeted methods."""

from learners.base import Learner, normalize_features
from learners.budgeted import (
    BudgetedClassifierMixin,
    ColumnSubsetModel,
    expected_cost_curve,
    sweep_candidates,
    worst_cost_curve,
)
from learners.sklearn_learner import SklearnLearner
from learners.synthetic import SyntheticLearner
from learners.tree_paths import TreeArrays, TreeEnsemble

# the LightGBM-backed learners are imported on first use, so that `import learners` works
# without lightgbm installed
_LIGHTGBM = ("CEGBClassifier", "GreedyMiserClassifier", "ItemPrediction", "OnDemandFeaturizer")


def __getattr__(name: str):
    if name in _LIGHTGBM:
        from learners import cegb

        return getattr(cegb, name)
    raise AttributeError(f"module 'learners' has no attribute {name!r}")


__all__ = [
    "BudgetedClassifierMixin",
    "CEGBClassifier",
    "ColumnSubsetModel",
    "GreedyMiserClassifier",
    "ItemPrediction",
    "Learner",
    "OnDemandFeaturizer",
    "SklearnLearner",
    "SyntheticLearner",
    "TreeArrays",
    "TreeEnsemble",
    "expected_cost_curve",
    "normalize_features",
    "sweep_candidates",
    "worst_cost_curve",
]
