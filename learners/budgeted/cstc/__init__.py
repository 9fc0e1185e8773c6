"""CSTC and CSCC: the cost-sensitive tree and cascade of classifiers (Xu et al., JMLR 2014).

:mod:`.engine` is the optimiser both share (structure, routing, objective, Algorithm 1),
:mod:`.split_init` the cost-aware split start of CSTC's routing nodes, :mod:`.feature_map`
the feature map phi(x), :mod:`.tree` the CSTC estimators, :mod:`.cascade` the CSCC one and
:mod:`.quadrants` the paper's synthetic data and our classification variants.  They load on
first use.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "CSTCClassifier": "learners.budgeted.cstc.tree",
    "CSTCRegressor": "learners.budgeted.cstc.tree",
    "cstc_criterion": "learners.budgeted.cstc.tree",
    "CSCCClassifier": "learners.budgeted.cstc.cascade",
    "QUADRANT_COSTS": "learners.budgeted.cstc.quadrants",
    "QUADRANT_GROUPS": "learners.budgeted.cstc.quadrants",
    "quadrant_classification": "learners.budgeted.cstc.quadrants",
    "quadrant_regression": "learners.budgeted.cstc.quadrants",
})

__all__ = [
    "CSCCClassifier",
    "CSTCClassifier",
    "CSTCRegressor",
    "QUADRANT_COSTS",
    "QUADRANT_GROUPS",
    "cstc_criterion",
    "quadrant_classification",
    "quadrant_regression",
]
