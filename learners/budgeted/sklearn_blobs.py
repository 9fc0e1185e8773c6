"""scikit-learn sub-models as skops byte arrays, loaded only when every type is a known class.

A composite budgeted learner (the DAG: a classifier bank and filter trees of binary
classifiers, any scikit-learn estimators) keeps its parts in ``to_arrays`` as ``uint8``
arrays written by ``skops.io`` (never pickle).  Loading refuses a blob that names a type
outside scikit-learn, numpy and scipy, or a name that is not a class (the allow-list rule of
``storage``, which this layer may not import).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["TRUSTED_PACKAGES", "dump_estimator", "load_estimator", "refused_types"]

#: Top-level packages whose classes a sub-model blob may name.
TRUSTED_PACKAGES = ("sklearn", "numpy", "scipy")


def dump_estimator(model: Any) -> np.ndarray:
    """The fitted ``model`` as a ``uint8`` array (skops format).

    Runtime complexity: O(model size).
    """
    import skops.io

    return np.frombuffer(skops.io.dumps(model), dtype=np.uint8).copy()


def _is_trusted_class(name: str) -> bool:
    parts = name.split(".")
    if parts[0] not in TRUSTED_PACKAGES:
        return False
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return isinstance(obj, type)
    return False


def refused_types(data: bytes) -> list[str]:
    """Types a skops archive names that are not classes of scikit-learn, numpy or scipy.

    The one home of this rule in :mod:`learners` (DAG sub-models, ADAPT's high-cost model).
    Runtime complexity: O(size of the archive's schema).
    """
    import skops.io

    return [n for n in skops.io.get_untrusted_types(data=data) if not _is_trusted_class(n)]


def load_estimator(blob: np.ndarray, what: str = "model") -> Any:
    """Rebuild a model from :func:`dump_estimator`.

    Runtime complexity: O(model size).

    Raises
    ------
    ValueError
        If the blob names a type outside the allow-list.
    """
    import skops.io

    data = np.asarray(blob, dtype=np.uint8).tobytes()
    untrusted = skops.io.get_untrusted_types(data=data)
    refused = refused_types(data)
    if refused:
        raise ValueError(f"{what}: refusing to load types {refused}")
    return skops.io.loads(data, trusted=untrusted)
