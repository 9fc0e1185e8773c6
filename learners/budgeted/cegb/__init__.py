"""CEGB and GreedyMiser: cost-efficient gradient boosting on LightGBM.

:mod:`.classifier` holds both estimators; they load on first use (LightGBM).
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "CEGBClassifier": "learners.budgeted.cegb.classifier",
    "GreedyMiserClassifier": "learners.budgeted.cegb.classifier",
})

__all__ = ["CEGBClassifier", "GreedyMiserClassifier"]
