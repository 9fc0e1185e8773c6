"""Learners: the scikit-learn black box, a synthetic learner, and budgeted methods.

The lattice's :class:`lattice.Learner` protocol is what a learner implements; budgeted
learners (:mod:`learners.budgeted`) produce index candidates with their own cost curves
through the one :func:`sweep`; every learner of a build scores on one
:class:`EvaluationProtocol` (:mod:`learners.evaluation`).
"""

from polydom.lazy_exports import lazy_exports

# every name loads on first use: a light module of the package (the registry, the codecs'
# table) imports without scikit-learn, and `import learners` works without lightgbm.  The
# face names what a user imports; everything else is imported from its module.
__getattr__ = lazy_exports(__name__, {
    "AdaptClassifier": "learners.budgeted.adapt",
    "CEGBClassifier": "learners.budgeted.cegb",
    "CheapFirstClassifier": "learners.budgeted.cheap_first",
    "CSCCClassifier": "learners.budgeted.cstc",
    "CSTCClassifier": "learners.budgeted.cstc",
    "DAGClassifier": "learners.budgeted.dag",
    "EvaluationProtocol": "learners.evaluation",
    "GreedyMiserClassifier": "learners.budgeted.cegb",
    "Learner": "lattice.expansion",
    "SklearnLearner": "learners.sklearn_learner",
    "SyntheticLearner": "learners.synthetic",
    "budgeted": "learners.budgeted",
    "register_learner": "learners.registry",
    "sweep": "learners.budgeted.sweep",
})

__all__ = [
    "AdaptClassifier",
    "CEGBClassifier",
    "CSCCClassifier",
    "CSTCClassifier",
    "CheapFirstClassifier",
    "DAGClassifier",
    "EvaluationProtocol",
    "GreedyMiserClassifier",
    "Learner",
    "SklearnLearner",
    "SyntheticLearner",
    "register_learner",
    "sweep",
]
