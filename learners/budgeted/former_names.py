"""Where the stored budgeted model classes lived before the learners moved into rooms.

Storage writes a model's class into its blob (``module.QualName`` for an array model,
``module:QualName`` for an estimator wrapped in a :class:`~learners.budgeted.contract.
ColumnSubsetModel`).  Stores written before the room layout name the flat modules
(``learners.budgeted.cscc``, ...); this table maps each of those names to the class's home
now, so such stores still load.  New blobs name the class where it lives now.
"""

from __future__ import annotations

__all__ = ["FORMER_CLASS_PATHS", "current_class_path"]

#: former ``module.QualName`` -> current ``module:QualName`` of each stored budgeted class
FORMER_CLASS_PATHS = {
    "learners.budgeted.cegb.CEGBClassifier": "learners.budgeted.cegb.classifier:CEGBClassifier",
    "learners.budgeted.cegb.GreedyMiserClassifier":
        "learners.budgeted.cegb.classifier:GreedyMiserClassifier",
    "learners.budgeted.cstc.CSTCClassifier": "learners.budgeted.cstc.tree:CSTCClassifier",
    "learners.budgeted.cstc.CSTCRegressor": "learners.budgeted.cstc.tree:CSTCRegressor",
    "learners.budgeted.cscc.CSCCClassifier": "learners.budgeted.cstc.cascade:CSCCClassifier",
    "learners.budgeted.adapt.AdaptClassifier":
        "learners.budgeted.adapt.classifier:AdaptClassifier",
    "learners.budgeted.dag.DAGClassifier": "learners.budgeted.dag.classifier:DAGClassifier",
}


def current_class_path(path: str) -> str:
    """The current ``module:QualName`` of a class named ``module:QualName`` by an old blob
    (unchanged when it is not a former name).

    Runtime complexity: O(1).

    >>> current_class_path("learners.budgeted.cscc:CSCCClassifier")
    'learners.budgeted.cstc.cascade:CSCCClassifier'
    >>> current_class_path("learners.budgeted.cstc.tree:CSTCClassifier")
    'learners.budgeted.cstc.tree:CSTCClassifier'
    """
    module, _, qualname = path.partition(":")
    return FORMER_CLASS_PATHS.get(f"{module}.{qualname}", path)
