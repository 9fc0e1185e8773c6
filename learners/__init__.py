"""Learners: the scikit-learn black box, a synthetic learner, and budgeted methods.

The lattice's :class:`lattice.Learner` protocol is what a learner implements; budgeted
learners (:mod:`learners.budgeted`) produce index candidates with their own cost curves
through the one :func:`sweep`; every learner of a build scores on one
:class:`EvaluationProtocol` (:mod:`learners.evaluation`).
"""

from polydom.lazy_exports import lazy_exports

# every name loads on first use: a light module of the package (the registry, the codecs'
# table) imports without scikit-learn, and `import learners` works without lightgbm
__getattr__ = lazy_exports(__name__, {
    "AdaptClassifier": "learners.budgeted.adapt",
    "BudgetedClassifierMixin": "learners.budgeted.contract",
    "BudgetedLearner": "learners.budgeted.contract",
    "CEGBClassifier": "learners.budgeted.cegb",
    "CheapFirstClassifier": "learners.budgeted.cheap_first",
    "ColumnSubsetModel": "learners.budgeted.contract",
    "CSCCClassifier": "learners.budgeted.cstc",
    "CSTCClassifier": "learners.budgeted.cstc",
    "CSTCRegressor": "learners.budgeted.cstc",
    "DAGClassifier": "learners.budgeted.dag",
    "EvaluationError": "learners.evaluation",
    "EvaluationProtocol": "learners.evaluation",
    "FoldEstimate": "learners.evaluation",
    "GreedyMiserClassifier": "learners.budgeted.cegb",
    "Learner": "lattice.expansion",
    "OnDemandFeaturizer": "learners.budgeted.on_demand",
    "SklearnLearner": "learners.sklearn_learner",
    "SyntheticLearner": "learners.synthetic",
    "TreeArrays": "learners.budgeted.tree_paths",
    "TreeEnsemble": "learners.budgeted.tree_paths",
    "budgeted": "learners.budgeted",
    "check_budgeted": "learners.budgeted.contract",
    "estimator_name": "learners.sklearn_learner",
    "expected_cost_curve": "learners.budgeted.contract",
    "get_learner": "learners.registry",
    "normalize_features": "learners.columns",
    "paired_difference": "learners.evaluation",
    "register_learner": "learners.registry",
    "registered_learners": "learners.registry",
    "sweep": "learners.budgeted.sweep",
    "worst_cost_curve": "learners.budgeted.contract",
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
