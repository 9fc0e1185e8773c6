"""Budgeted learners: the cost contract and the methods that trade accuracy for feature cost.

One room (sub-package) per method: :mod:`.cegb` (CEGB, GreedyMiser), :mod:`.cstc` (CSTC,
CSCC), :mod:`.dag` (the DAG of sensor sets), :mod:`.adapt` (ADAPT); the pieces they share
sit here: :mod:`.contract` (the cost contract: the checked protocol, the parameters' one check and
JSON form), :mod:`.sweep` (the one sweep of every budgeted learner into index candidates),
:mod:`.on_demand` (computing features as a model asks for them), :mod:`.tree_paths` (tree
ensembles as flat arrays) and :mod:`.sklearn_blobs` (scikit-learn sub-models without pickle).
The estimators load on first use, so that ``import learners.budgeted`` stays light and works
without LightGBM.
"""

from learners.budgeted.adapt.sweep import efficient_frontier, sweep_adapt
from learners.budgeted.contract import (
    BudgetedClassifierMixin,
    BudgetedLearner,
    ColumnSubsetModel,
    check_budgeted,
    expected_cost_curve,
    worst_cost_curve,
)
from learners.budgeted.lazy_exports import lazy_exports
from learners.budgeted.on_demand import OnDemandFeaturizer
from learners.budgeted.sweep import sweep
from learners.budgeted.tree_paths import TreeArrays, TreeEnsemble

__getattr__ = lazy_exports(__name__, {
    "AdaptClassifier": "learners.budgeted.adapt",
    "CEGBClassifier": "learners.budgeted.cegb",
    "CheapFirstClassifier": "learners.budgeted.cheap_first",
    "DAGClassifier": "learners.budgeted.dag",
    "GreedyMiserClassifier": "learners.budgeted.cegb",
    "CSTCClassifier": "learners.budgeted.cstc",
    "CSTCRegressor": "learners.budgeted.cstc",
    "CSCCClassifier": "learners.budgeted.cstc",
})


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
    "GreedyMiserClassifier",
    "OnDemandFeaturizer",
    "TreeArrays",
    "TreeEnsemble",
    "check_budgeted",
    "efficient_frontier",
    "expected_cost_curve",
    "sweep",
    "sweep_adapt",
    "worst_cost_curve",
]
