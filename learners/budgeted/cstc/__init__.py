"""CSTC and CSCC: the cost-sensitive tree and cascade of classifiers (Xu et al., JMLR 2014).

:mod:`.engine` is the optimiser both share (structure, routing, objective, Algorithm 1),
:mod:`.feature_map` the feature map phi(x), :mod:`.tree` the CSTC estimators and
:mod:`.cascade` the CSCC one.  They load on first use.
"""

from learners.budgeted.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "CSTCClassifier": "learners.budgeted.cstc.tree",
    "CSTCRegressor": "learners.budgeted.cstc.tree",
    "cstc_criterion": "learners.budgeted.cstc.tree",
    "CSCCClassifier": "learners.budgeted.cstc.cascade",
})

__all__ = ["CSCCClassifier", "CSTCClassifier", "CSTCRegressor", "cstc_criterion"]
