"""The model classes every budgeted learner's candidates are stored with (a ``"models"``
spec, ``polydom.learners`` entry point): the column-subset wrapper, the cascade of stages,
and the former homes of the budgeted classes (blobs written before the rooms)."""

from __future__ import annotations

from learners.budgeted.former_names import FORMER_CLASS_PATHS
from polydom.blobs.learner_specs import LearnerSpec

__all__ = ["SPECS"]

SPECS = (LearnerSpec("budgeted-models", None, kind="models",
                     model_classes=("learners.budgeted.contract:ColumnSubsetModel",
                                    "polydom.serving.cascade:Cascade"),
                     former_names=FORMER_CLASS_PATHS),)
