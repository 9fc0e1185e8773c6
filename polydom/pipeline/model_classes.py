"""The model classes and blob codecs storage may decode: every registered learner's, by name.

Registration passes paths (``"module:QualName"``), not classes: nothing here imports a
learner, so opening a store stays light; storage imports a class or codec when a blob of it
is first decoded (:mod:`polydom.blobs.model_registry`).
"""

from __future__ import annotations

import storage
from learners.budgeted.former_names import FORMER_CLASS_PATHS
from learners.codecs import CODECS
from learners.registry import get_learner, registered_learners

__all__ = ["register_learner_models"]

#: Array-model classes of the project that no registered learner names.
PROJECT_MODEL_CLASSES = ("learners.budgeted.contract:ColumnSubsetModel",
                         "polydom.serving.cascade:Cascade")


def register_learner_models() -> None:
    """Let storage save and rebuild the models of the registered learners as arrays + JSON
    (no pickle): :class:`learners.budgeted.contract.ColumnSubsetModel`,
    :class:`polydom.serving.Cascade` and every registered learner's
    ``model_classes`` (:func:`learners.register_learner`), so storage code never changes
    for a new learner; and the learners' own blob formats
    (:data:`learners.codecs.CODECS`: LightGBM's text, checked by our grammar).  Blobs
    naming a class where it lived before the budgeted rooms
    (:data:`learners.budgeted.former_names.FORMER_CLASS_PATHS`) load too.  Idempotent;
    imports no learner: a class or codec given by path loads when first used.

    Runtime complexity: O(registered classes).
    """
    for name, path in CODECS.items():
        storage.register_blob_codec(name, path)
    for path in PROJECT_MODEL_CLASSES:
        storage.register_array_model(path)
    for former, current in FORMER_CLASS_PATHS.items():  # blobs written before the rooms
        storage.register_array_model(current, name=former)
    for name in registered_learners():
        for cls in get_learner(name).model_classes:
            storage.register_array_model(cls)
