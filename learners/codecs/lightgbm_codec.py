"""The ``"lightgbm"`` model blob: a LightGBM booster or scikit-learn wrapper as text + JSON.

``dump`` writes ``{"kind", "model": booster text}`` plus, for ``LGBMClassifier``,
``LGBMRegressor`` and ``LGBMRanker``, the wrapper's parameters, fitted attributes and
classes.  ``load`` checks everything before anything is built: the booster text through
:func:`learners.codecs.lightgbm_text.booster_from_text` (our grammar, then LightGBM reads
the canonical text), the wrapper's state by type (:data:`STATE_TYPES`), ``n_jobs`` bounded,
and the classes as a list of at most ``num_class`` (2 for a binary model) plain values of a
numeric or text dtype whose items are at most :data:`MAX_CLASS_ITEMSIZE` bytes (a dtype
string of 10**8 characters would allocate gigabytes).

Runtime complexity: linear in the blob's size.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from learners.codecs.lightgbm_text import booster_from_text
from polydom.errors import InvalidArgumentError

__all__ = ["MAX_CLASS_ITEMSIZE", "STATE_TYPES", "claims", "dump", "load"]

#: The wrapper attributes stored, with the JSON types each may have.
STATE_TYPES: dict[str, tuple[type, ...]] = {
    "_n_features": (int,),
    "_n_features_in": (int,),
    "_objective": (str, type(None)),
    "_best_iteration": (int,),
    "_n_classes": (int,),
    "_fitted_with_feature_names": (bool,),
    "_class_weight": (str, dict, type(None)),
    "_other_params": (dict,),
}
#: Largest item of a stored classes array (text labels of up to 1024 characters).
MAX_CLASS_ITEMSIZE = 4096
_WRAPPERS = ("LGBMClassifier", "LGBMRegressor", "LGBMRanker")


def claims(model: Any) -> bool:
    """Whether ``model`` is a LightGBM object (this codec is asked to dump it)."""
    return type(model).__module__.split(".")[0] == "lightgbm"


def dump(model: Any) -> bytes | None:
    """The blob of a booster or wrapper; None for other LightGBM objects, or a wrapper
    whose parameters have no JSON form (a callable objective: storage then pickles it)."""
    import lightgbm

    if isinstance(model, lightgbm.Booster):
        doc: dict[str, Any] = {"kind": "Booster", "model": model.model_to_string()}
    elif isinstance(model, lightgbm.LGBMModel) and type(model).__name__ in _WRAPPERS:
        state = {k: getattr(model, k) for k in STATE_TYPES if hasattr(model, k)}
        doc = {
            "kind": type(model).__name__,
            "params": model.get_params(deep=False),
            "state": state,
            "best_score": {k: dict(v) for k, v in getattr(model, "_best_score", {}).items()},
            "model": model.booster_.model_to_string(),
        }
        classes = getattr(model, "_classes", None)
        if classes is not None:
            classes = np.asarray(classes)
            if classes.dtype.hasobject:
                return None
            doc["classes"] = {"dtype": classes.dtype.str, "values": classes.tolist()}
    else:
        return None
    try:
        return json.dumps(doc, allow_nan=True).encode()
    except TypeError:  # parameters that are callables or objects: no text form
        return None


def _classes(doc: Any, n_classes: int) -> np.ndarray:
    """The stored classes, checked (dtype kind and size, count, plain values)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("dtype"), str) or len(
            doc["dtype"]) > 16:
        raise InvalidArgumentError("classes are not {dtype, values}")
    dtype = np.dtype(doc["dtype"])
    if dtype.kind not in "biufU" or dtype.itemsize > MAX_CLASS_ITEMSIZE:
        raise InvalidArgumentError(
            f"classes of dtype {doc['dtype']!r} (not a plain dtype of items up "
            f"to {MAX_CLASS_ITEMSIZE} bytes)")
    values = doc.get("values")
    if not isinstance(values, list) or len(values) != n_classes or not all(
            isinstance(v, (int, float, str, bool)) for v in values):
        raise InvalidArgumentError(f"classes are not {n_classes} plain values")
    return np.array(values, dtype=dtype)


def load(blob: bytes, trusted: bool, what: str) -> Any:
    """Rebuild a booster or wrapper from :func:`dump`'s blob, checked first.

    Raises
    ------
    LightGBMTextError
        If the booster text is outside the grammar.
    ValueError
        If the JSON around it is not what :func:`dump` writes (kind, state types, classes,
        ``n_jobs``).
    """
    import lightgbm

    doc = json.loads(bytes(blob).decode())
    if not isinstance(doc, dict) or doc.get("kind") not in ("Booster", *_WRAPPERS):
        raise InvalidArgumentError(
            f"unknown LightGBM model kind {str(doc.get('kind'))[:40]!r}"
            if isinstance(doc, dict) else "not a LightGBM model document")
    booster = booster_from_text(doc.get("model"), "booster text")
    if doc["kind"] == "Booster":
        return booster
    params, state = doc.get("params"), doc.get("state")
    if not isinstance(params, dict) or not isinstance(state, dict):
        raise InvalidArgumentError("params or state are not objects")
    n_jobs = params.get("n_jobs")
    if n_jobs is not None and (not isinstance(n_jobs, int) or abs(n_jobs) > 1024):
        raise InvalidArgumentError(f"n_jobs {n_jobs!r} is not None or an integer in [-1024, 1024]")
    for key, value in state.items():
        if key not in STATE_TYPES or type(value) not in STATE_TYPES[key]:
            raise InvalidArgumentError(
                f"state {key[:40]!r} of type {type(value).__name__} is not stored")
    n_class = booster.num_model_per_iteration()
    model = getattr(lightgbm, doc["kind"])(**params)
    for key, value in state.items():
        setattr(model, key, value)
    model._Booster = booster
    model._best_score = doc.get("best_score") or {}
    model._evals_result = {}
    if "classes" in doc:
        from sklearn.preprocessing import LabelEncoder

        classes = _classes(doc["classes"], max(n_class, 2) if n_class == 1 else n_class)
        model._classes = classes
        model._class_map = {c: i for i, c in enumerate(classes.tolist())}
        encoder = LabelEncoder()
        encoder.classes_ = classes
        model._le = encoder
    model.fitted_ = True
    return model

