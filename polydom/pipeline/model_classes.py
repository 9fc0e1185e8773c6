"""The model classes storage may keep as arrays + JSON: every registered learner's."""

from __future__ import annotations

from importlib import import_module

import learners
import learners.codecs
import storage
from learners.budgeted.former_names import FORMER_CLASS_PATHS
from polydom.serving.cascade import Cascade

__all__ = ["register_learner_models"]


def register_learner_models() -> None:
    """Let storage save and rebuild the models of the registered learners as arrays + JSON
    (no pickle): :class:`learners.ColumnSubsetModel`, :class:`polydom.Cascade` and every
    registered learner's ``model_classes`` (:func:`learners.register_learner`), so storage
    code never changes for a new learner; and the learners' own blob formats
    (:data:`learners.codecs.CODECS`: LightGBM's text, checked by our grammar).  Blobs
    naming a class where it lived before the budgeted rooms
    (:data:`learners.budgeted.former_names.FORMER_CLASS_PATHS`) load too.  Idempotent;
    classes whose optional dependency (LightGBM) is missing are left out.

    Runtime complexity: O(registered classes).
    """
    for codec in learners.codecs.CODECS:
        storage.register_blob_codec(*codec)
    storage.register_array_model(learners.ColumnSubsetModel)
    for former, current in FORMER_CLASS_PATHS.items():  # blobs written before the rooms
        module, _, qualname = current.partition(":")
        try:
            storage.register_array_model(getattr(import_module(module), qualname), name=former)
        except ImportError:
            continue
    for name in learners.registered_learners():
        for cls in learners.get_learner(name).classes():
            storage.register_array_model(cls)
    storage.register_array_model(Cascade)
