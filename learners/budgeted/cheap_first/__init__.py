"""CheapFirstClassifier: the toy budgeted learner of docs/budgeted_learners.md.

:mod:`.classifier` holds it; it loads on first use.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "CheapFirstClassifier": "learners.budgeted.cheap_first.classifier",
})

__all__ = ["CheapFirstClassifier"]
