"""open_index and list_builds: the public way to read an index store."""

from __future__ import annotations

import os

import learners
import storage
from polydom.index.built import Index
from storage import BuildRecord, IndexStore

__all__ = ["open_index", "list_builds", "register_learner_models"]


def register_learner_models() -> None:
    """Let storage save and rebuild the models of the registered learners as arrays + JSON
    (no pickle): :class:`learners.ColumnSubsetModel` and every registered learner's
    ``model_classes`` (:func:`learners.register_learner`), so storage code never changes
    for a new learner.  Idempotent; classes whose optional dependency (LightGBM) is missing
    are left out.

    Runtime complexity: O(registered classes).
    """
    storage.register_array_model(learners.ColumnSubsetModel)
    for name in learners.registered_learners():
        for cls in learners.get_learner(name).classes():
            storage.register_array_model(cls)
    for name in _NOT_YET_REGISTERED:
        try:
            cls = getattr(learners, name)
        except ImportError:
            continue
        storage.register_array_model(cls)


#: Array-model classes of learners that do not register themselves yet.
_NOT_YET_REGISTERED = ("AdaptClassifier",)


def open_index(url: str | os.PathLike, build: int | None = None, trusted: bool = False) -> Index:
    """Load a stored index: the latest complete build, or build ``build``.

    ``url`` is any SQLAlchemy URL or a SQLite file path.  The index is rebuilt from its
    stored ranges and skylines (no sweep) and answers ``lookup`` exactly as the index that
    was stored.  Models are checked against their sha256 and decoded without running code
    from the database; pickled models (and skops blobs naming types outside scikit-learn,
    numpy and scipy) need ``trusted=True``.

    Runtime complexity: O(K * d + E) rows for K candidates and E skyline entries, plus
    decoding the models.

    Raises
    ------
    storage.StoreNotFoundError
        If there is no store at ``url``.
    ValueError
        If there is no complete build, or ``build`` is unknown or incomplete.
    storage.SchemaVersionError, storage.ModelIntegrityError, storage.UntrustedModelError
        For a store of another schema version, a tampered blob, an untrusted model.
    """
    register_learner_models()
    with IndexStore(url, create=False) as store:
        return store.load_index(build=build, trusted=trusted)


def list_builds(url: str | os.PathLike) -> list[BuildRecord]:
    """Every build in the store at ``url``, oldest first (status, parameters, counts).

    Runtime complexity: one query.
    """
    with IndexStore(url, create=False) as store:
        return store.list_builds()
