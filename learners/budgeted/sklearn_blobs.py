"""scikit-learn sub-models as skops byte arrays, under the one allow-list of stored models.

A composite budgeted learner (the DAG: a classifier bank and filter trees of binary
classifiers, any scikit-learn estimators) keeps its parts in ``to_arrays`` as ``uint8``
arrays written by ``skops.io`` (never pickle).  Writing and loading both apply the rule of
:mod:`polydom.blobs.allowlist`, the same rule ``storage`` applies to top-level model
blobs: a sub-model naming a class the project does not store (unless registered with
``register_model_class``), or a function, is refused with
:class:`~polydom.blobs.allowlist.UntrustedModelError` naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polydom.blobs.allowlist import UntrustedModelError, load_skops, skops_refusals

__all__ = ["dump_estimator", "load_estimator"]


def dump_estimator(model: Any, what: str = "model") -> np.ndarray:
    """The fitted ``model`` as a ``uint8`` array (skops format).

    Refuses at write time what loading would refuse, so a store never keeps a model it
    cannot read back.  Runtime complexity: O(model size).

    Raises
    ------
    UntrustedModelError
        If the archive names a type outside the allow-list (each is named).
    """
    import skops.io

    data = skops.io.dumps(model)
    refused = skops_refusals(data)
    if refused:
        raise UntrustedModelError(
            f"{what} {type(model).__name__} cannot be stored without pickle: its skops "
            f"archive names what the allow-list refuses ({', '.join(refused)}); "
            "register the class with storage.register_model_class if you trust its code"
        )
    return np.frombuffer(data, dtype=np.uint8).copy()


def load_estimator(blob: np.ndarray, what: str = "model") -> Any:
    """Rebuild a model from :func:`dump_estimator`.

    Runtime complexity: O(model size).

    Raises
    ------
    UntrustedModelError
        If the blob names a type outside the allow-list (a ``ValueError``).
    """
    return load_skops(np.asarray(blob, dtype=np.uint8).tobytes(), what=what)
