"""Model blobs: serialise fitted models without pickle, and load them without running code.

Formats, chosen by :func:`dump_model` from the model's type:

``"arrays"``
    Our own models: a class registered with :func:`register_array_model` gives
    ``to_arrays() -> (dict of numpy arrays, JSON-able dict)`` and a classmethod
    ``from_arrays(arrays, meta)``.  Stored as a numpy ``.npz`` archive, read back with
    ``allow_pickle=False``.  A value of the dict that is a single object rather than an
    array (a fitted model a composite model holds, such as a cascade's stages) is stored as a
    *nested* blob in the format :func:`dump_model` chooses for it, and loaded back under the
    same rules (digest checked, skops allow-list, pickle only with ``trusted=True``).
``"lightgbm"``
    A LightGBM ``Booster`` or scikit-learn wrapper (``LGBMClassifier``, ``LGBMRegressor``):
    the booster's text model plus JSON for the wrapper's parameters and fitted attributes.
``"skops"``
    Any other scikit-learn estimator, written with ``skops.io``.  On load, the types skops
    reports as untrusted must be classes from scikit-learn, numpy or scipy; anything else
    (functions, other packages) is refused unless ``trusted=True``.
``"pickle"``
    Anything else.  Loaded only with ``trusted=True``: unpickling can run arbitrary code.

Every blob is stored with its sha256 and is only decoded after the digest matches.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import pickle
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from polydom.errors import PolydomError

__all__ = [
    "ArrayModel",
    "ModelIntegrityError",
    "UntrustedModelError",
    "dump_model",
    "load_model",
    "register_array_model",
    "sha256_hex",
    "SKOPS_TRUSTED_PACKAGES",
]

#: Top-level packages whose *classes* a skops blob may name without ``trusted=True``.
SKOPS_TRUSTED_PACKAGES = ("sklearn", "numpy", "scipy")

_META_KEY = "__polydom_meta__"
_NESTED_PREFIX = "__polydom_nested__"
_ARRAY_MODELS: dict[str, type] = {}
_ARRAY_NAMES: dict[type, str] = {}


class ModelIntegrityError(PolydomError, ValueError):
    """A model blob whose sha256 does not match the stored digest (the row was altered)."""


class UntrustedModelError(PolydomError, ValueError):
    """A model blob that could run code when loaded, refused without ``trusted=True``."""


class ArrayModel(Protocol):
    """What :func:`register_array_model` expects of a model class."""

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as named numeric arrays and a JSON-serialisable dict."""

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> ArrayModel:
        """Rebuild a fitted model from what :meth:`to_arrays` returned."""


def register_array_model(cls: type | None = None, *, name: str | None = None) -> Any:
    """Register a model class stored as numpy arrays + JSON (usable as a class decorator).

    ``name`` (default ``module.QualName``) is written into the blob and names the class to
    rebuild on load; registering the same name for another class raises ``ValueError``.

    >>> @register_array_model(name="doc.Constant")
    ... class Constant:
    ...     def __init__(self, value): self.value = value
    ...     def to_arrays(self): return {"value": np.array([self.value])}, {}
    ...     @classmethod
    ...     def from_arrays(cls, arrays, meta): return cls(float(arrays["value"][0]))
    >>> blob, fmt = dump_model(Constant(2.5))
    >>> fmt, load_model(blob, fmt, sha256_hex(blob)).value
    ('arrays', 2.5)
    """

    def register(klass: type) -> type:
        for attr in ("to_arrays", "from_arrays"):
            if not callable(getattr(klass, attr, None)):
                raise ValueError(f"cls {klass.__name__} must define {attr}() to be registered")
        key = name or f"{klass.__module__}.{klass.__qualname__}"
        if _ARRAY_MODELS.get(key, klass) is not klass:
            raise ValueError(f"name {key!r} is already registered for {_ARRAY_MODELS[key]!r}")
        _ARRAY_MODELS[key] = klass
        _ARRAY_NAMES[klass] = key
        return klass

    return register if cls is None else register(cls)


def sha256_hex(blob: bytes) -> str:
    """Hex sha256 digest of ``blob``."""
    return hashlib.sha256(blob).hexdigest()


# ---------------------------------------------------------------------------- dumping
def dump_model(model: Any) -> tuple[bytes, str] | None:
    """Serialise a fitted model; returns ``(blob, format)``, or None for ``model=None``.

    Runtime complexity: linear in the size of the model's state.
    """
    if model is None:
        return None
    name = _ARRAY_NAMES.get(type(model))
    if name is not None:
        return _dump_arrays(model, name), "arrays"
    module = type(model).__module__.split(".")[0]
    if module == "lightgbm":
        blob = _dump_lightgbm(model)
        if blob is not None:
            return blob, "lightgbm"
    elif module == "sklearn" or _is_sklearn_estimator(model):
        import skops.io

        return skops.io.dumps(model), "skops"
    return pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), "pickle"


def _is_sklearn_estimator(model: Any) -> bool:
    try:
        from sklearn.base import BaseEstimator
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return False
    return isinstance(model, BaseEstimator)


def _is_nested(value: Any) -> bool:
    """Whether a ``to_arrays`` value is one object to store as a nested model blob."""
    return (
        value is not None
        and not isinstance(value, (np.ndarray, np.generic, str, bytes, int, float, bool))
        and np.ndim(value) == 0
    )


def _dump_arrays(model: Any, name: str) -> bytes:
    arrays, meta = model.to_arrays()
    out = {}
    nested = {}
    for key, value in arrays.items():
        if key.startswith("__polydom"):
            raise ValueError(f"to_arrays() of {name} returned the reserved name {key!r}")
        if _is_nested(value):
            blob, fmt = dump_model(value)
            out[_NESTED_PREFIX + key] = np.frombuffer(blob, dtype=np.uint8)
            nested[key] = {"format": fmt, "sha256": sha256_hex(blob)}
            continue
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise ValueError(
                f"to_arrays() of {name} returned array {key!r} that cannot be stored "
                f"(object dtype {arr.dtype})"
            )
        out[key] = arr
    header = json.dumps({"class": name, "meta": meta, "nested": nested}, sort_keys=True,
                        allow_nan=True)
    out[_META_KEY] = np.frombuffer(header.encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **out)
    return buf.getvalue()


_LGBM_STATE = (
    "_n_features",
    "_n_features_in",
    "_objective",
    "_best_iteration",
    "_n_classes",
    "_fitted_with_feature_names",
    "_class_weight",
    "_other_params",
)


def _dump_lightgbm(model: Any) -> bytes | None:
    import lightgbm

    if isinstance(model, lightgbm.Booster):
        doc = {"kind": "Booster", "model": model.model_to_string()}
    elif isinstance(model, lightgbm.LGBMModel) and type(model).__name__ in (
        "LGBMClassifier",
        "LGBMRegressor",
        "LGBMRanker",
    ):
        state = {k: getattr(model, k) for k in _LGBM_STATE if hasattr(model, k)}
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


# ---------------------------------------------------------------------------- loading
def load_model(
    blob: bytes | None,
    fmt: str | None,
    sha256: str | None,
    *,
    trusted: bool = False,
    what: str = "model",
) -> Any:
    """Check a blob's sha256 and decode it; ``what`` names the row in error messages.

    Runtime complexity: linear in the blob size.

    Raises
    ------
    ModelIntegrityError
        If the digest of ``blob`` is not ``sha256``.
    UntrustedModelError
        For a pickle blob, or a skops blob naming types outside the allow-list, when
        ``trusted`` is false.
    ValueError
        For an unknown format or an unregistered array-model class.
    """
    if fmt is None:
        return None
    if blob is None:
        raise ModelIntegrityError(f"{what}: format {fmt!r} is recorded but the blob is missing")
    blob = bytes(blob)
    digest = sha256_hex(blob)
    if digest != sha256:
        raise ModelIntegrityError(
            f"{what}: blob fails its sha256 check (stored {sha256}, computed {digest}); "
            "the database row was altered or corrupted, refusing to load it"
        )
    loader = _LOADERS.get(fmt)
    if loader is None:
        raise ValueError(f"{what}: unknown model format {fmt!r}")
    return loader(blob, trusted, what)


def _load_arrays(blob: bytes, trusted: bool, what: str) -> Any:
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays.pop(_META_KEY).tobytes().decode())
    name = header["class"]
    cls = _ARRAY_MODELS.get(name)
    if cls is None:
        raise ValueError(
            f"{what}: model class {name!r} is not registered; import the module that "
            "registers it (storage.register_array_model) before loading"
        )
    for key, info in header.get("nested", {}).items():
        arrays[key] = load_model(
            arrays.pop(_NESTED_PREFIX + key).tobytes(), info["format"], info["sha256"],
            trusted=trusted, what=f"{what}, nested model {key!r}",
        )
    return cls.from_arrays(arrays, header["meta"])


def _load_lightgbm(blob: bytes, trusted: bool, what: str) -> Any:
    import lightgbm

    doc = json.loads(blob.decode())
    booster = lightgbm.Booster(model_str=doc["model"])
    kind = doc["kind"]
    if kind == "Booster":
        return booster
    cls = {
        "LGBMClassifier": lightgbm.LGBMClassifier,
        "LGBMRegressor": lightgbm.LGBMRegressor,
        "LGBMRanker": lightgbm.LGBMRanker,
    }.get(kind)
    if cls is None:
        raise ValueError(f"{what}: unknown LightGBM model kind {kind!r}")
    model = cls(**doc["params"])
    for key, value in doc["state"].items():
        setattr(model, key, value)
    model._Booster = booster
    model._best_score = doc.get("best_score", {})
    model._evals_result = {}
    if "classes" in doc:
        from sklearn.preprocessing import LabelEncoder

        classes = np.array(doc["classes"]["values"], dtype=np.dtype(doc["classes"]["dtype"]))
        model._classes = classes
        model._class_map = {c: i for i, c in enumerate(classes.tolist())}
        encoder = LabelEncoder()
        encoder.classes_ = classes
        model._le = encoder
    model.fitted_ = True
    return model


def _resolves_to_class(name: str) -> bool:
    """Whether a dotted name from an allowed package names a class (not a function)."""
    if name.split(".")[0] not in SKOPS_TRUSTED_PACKAGES:
        return False
    parts = name.split(".")
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


def _load_skops(blob: bytes, trusted: bool, what: str) -> Any:
    import skops.io

    untrusted = skops.io.get_untrusted_types(data=blob)
    refused = [name for name in untrusted if not _resolves_to_class(name)]
    if refused and not trusted:
        raise UntrustedModelError(
            f"{what}: skops blob names types outside the allow-list ({', '.join(refused)}); "
            "pass trusted=True only if you trust this database"
        )
    return skops.io.loads(blob, trusted=untrusted)


def _load_pickle(blob: bytes, trusted: bool, what: str) -> Any:
    if not trusted:
        raise UntrustedModelError(
            f"{what}: stored with pickle, which can run arbitrary code when loaded; "
            "pass trusted=True only if you trust this database"
        )
    return pickle.loads(blob)


_LOADERS: dict[str, Callable[[bytes, bool, str], Any]] = {
    "arrays": _load_arrays,
    "lightgbm": _load_lightgbm,
    "skops": _load_skops,
    "pickle": _load_pickle,
}
