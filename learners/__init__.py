"""Learners: the scikit-learn black box, a synthetic learner, and budgeted methods.

The lattice's :class:`lattice.Learner` protocol is what a learner implements; budgeted
learners (:mod:`learners.budgeted`) produce index candidates with their own cost curves
through the one :func:`sweep`; every learner of a build scores on one
:class:`EvaluationProtocol` (:mod:`learners.evaluation`).
"""

from lattice.expansion import Learner
from learners import budgeted
from learners.budgeted.contract import (
    BudgetedClassifierMixin,
    BudgetedLearner,
    ColumnSubsetModel,
    check_budgeted,
    expected_cost_curve,
    worst_cost_curve,
)
from learners.budgeted.on_demand import OnDemandFeaturizer
from learners.budgeted.sweep import sweep
from learners.budgeted.tree_paths import TreeArrays, TreeEnsemble
from learners.columns import normalize_features
from learners.evaluation import EvaluationError, EvaluationProtocol, FoldEstimate, paired_difference
from learners.registry import get_learner, register_learner, registered_learners
from learners.sklearn_learner import SklearnLearner, estimator_name
from learners.synthetic import SyntheticLearner

# the LightGBM-backed and other heavy learners load on first use (one table of them, in
# learners.budgeted), so that `import learners` works without lightgbm installed


def __getattr__(name: str):
    if name in budgeted.__all__:
        return getattr(budgeted, name)
    raise AttributeError(f"module 'learners' has no attribute {name!r}")


__all__ = [
    "AdaptClassifier",
    "BudgetedClassifierMixin",
    "BudgetedLearner",
    "CEGBClassifier",
    "CSCCClassifier",
    "CheapFirstClassifier",
    "CSTCClassifier",
    "CSTCRegressor",
    "DAGClassifier",
    "ColumnSubsetModel",
    "EvaluationError",
    "EvaluationProtocol",
    "FoldEstimate",
    "GreedyMiserClassifier",
    "Learner",
    "OnDemandFeaturizer",
    "SklearnLearner",
    "SyntheticLearner",
    "TreeArrays",
    "TreeEnsemble",
    "check_budgeted",
    "estimator_name",
    "expected_cost_curve",
    "get_learner",
    "normalize_features",
    "paired_difference",
    "register_learner",
    "registered_learners",
    "sweep",
    "worst_cost_curve",
]
