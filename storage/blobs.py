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
Codecs (:func:`register_blob_codec`, :mod:`polydom.blobs.model_registry`)
    A learner's own format (LightGBM's text, in :mod:`learners.codecs`), registered by
    name and imported when a blob of its format is first decoded: storage asks each codec,
    in registration order, whether it claims a model, and loads a blob of its format with
    it after the digest matched.  Storage knows no learner's format.  Then the default
    codec ``"skops"`` (:mod:`polydom.blobs.skops_codec`): any other scikit-learn
    estimator, written with ``skops.io``.  On load, every node of the archive is checked by
    the grammar of :mod:`polydom.blobs.allowlist` before skops builds anything (also
    applied to the sub-models budgeted learners keep in their arrays): only the estimator
    classes the project stores or those added with :func:`register_model_class`, no
    callables in any node, decision trees in range.  Anything the allow-list refuses needs
    ``trusted=True``; a malformed archive is refused always.
``"pickle"``
    Anything else.  Loaded only with ``trusted=True``: unpickling can run arbitrary code.

Every blob is stored with a digest and is only decoded after the digest matches: its
sha256, or, when the store has a key (``POLYDOM_STORE_KEY`` or a ``key`` argument), its
HMAC-SHA256 under that key, which a writer without the key cannot forge (see
:class:`BlobDigest`).  A blob whose digest matches but that does not decode (truncated,
garbage) raises :class:`ModelIntegrityError` too, never the decoder's own exception.
Archives (``arrays``, ``skops``) are read through :mod:`polydom.blobs.bounds`: sizes and
dtypes are bounded before anything is inflated or allocated.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pickle
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from polydom.blobs.allowlist import UntrustedModelError, register_model_class
from polydom.blobs.bounds import MalformedBlobError, load_npy, load_npz
from polydom.blobs.model_registry import (
    array_class,
    array_name,
    codec,
    codecs_in_order,
    register_array_model,
    register_blob_codec,
)
from polydom.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ModelIntegrityError,
)
from polydom.index.lazy_payload import resolve_payload

__all__ = [
    "ArrayModel",
    "BlobDigest",
    "KEY_ENV",
    "ModelIntegrityError",
    "UntrustedModelError",
    "dump_model",
    "dump_predictions",
    "load_model",
    "load_predictions",
    "register_array_model",
    "register_blob_codec",
    "register_model_class",
    "sha256_hex",
]

#: Environment variable holding the store key (any text; its UTF-8 bytes are the HMAC key).
KEY_ENV = "POLYDOM_STORE_KEY"

_META_KEY = "__polydom_meta__"
_NESTED_PREFIX = "__polydom_nested__"


class BlobDigest:
    """The digest of model blobs: sha256, or HMAC-SHA256 under a store key.

    A plain sha256 detects corruption and accidental edits; anyone who can write the
    database can recompute it.  With a key, the stored digest is ``HMAC-SHA256(key, blob)``:
    a blob whose digest matches was written by a holder of the key.

    Parameters
    ----------
    key : bytes or str or None
        The key (text is taken as its UTF-8 bytes); None: plain sha256.  See
        :meth:`resolve` for the environment variable.

    >>> BlobDigest(b"k").of(b"x") != BlobDigest().of(b"x")
    True
    """

    @classmethod
    def resolve(cls, key: bytes | str | None = None) -> BlobDigest:
        """The digest for ``key``, or for ``POLYDOM_STORE_KEY`` when ``key`` is None (plain
        sha256 when that is unset or empty)."""
        return cls(key if key is not None else (os.environ.get(KEY_ENV) or None))

    def __init__(self, key: bytes | str | None = None) -> None:
        if isinstance(key, str):
            key = key.encode()
        if key is not None and (not isinstance(key, bytes) or not key):
            raise ArgumentTypeError(
                f"key must be non-empty bytes or text, got {type(key).__name__}")
        self._key = key

    @property
    def keyed(self) -> bool:
        """Whether digests are HMACs under a key."""
        return self._key is not None

    @property
    def key_id(self) -> str | None:
        """A fingerprint naming the key (not revealing it): HMAC of a fixed text, 16 hex."""
        if self._key is None:
            return None
        return hmac.new(self._key, b"polydom store key id", hashlib.sha256).hexdigest()[:16]

    def of(self, blob: bytes) -> str:
        """Hex digest of ``blob`` (64 characters either way)."""
        if self._key is None:
            return sha256_hex(blob)
        return hmac.new(self._key, blob, hashlib.sha256).hexdigest()

    def matches(self, blob: bytes, stored: str | None) -> bool:
        """Whether ``stored`` is the digest of ``blob`` (constant-time comparison)."""
        return isinstance(stored, str) and hmac.compare_digest(self.of(blob), stored)


class ArrayModel(Protocol):
    """What :func:`register_array_model` expects of a model class."""

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as named numeric arrays and a JSON-serialisable dict."""

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> ArrayModel:
        """Rebuild a fitted model from what :meth:`to_arrays` returned."""


def sha256_hex(blob: bytes) -> str:
    """Hex sha256 digest of ``blob``."""
    return hashlib.sha256(blob).hexdigest()


# ---------------------------------------------------------------------------- dumping
def dump_model(model: Any) -> tuple[bytes, str] | None:
    """Serialise a fitted model; returns ``(blob, format)``, or None for ``model=None``.

    A class registered with :func:`register_array_model` is written as arrays + JSON, a
    model a codec claims (:func:`register_blob_codec`, then skops for scikit-learn
    estimators) in its format, anything else with pickle.

    Runtime complexity: linear in the size of the model's state.

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
    model = resolve_payload(model)  # a stored model read lazily: checked and built now
    if model is None:
        return None
    name = array_name(model)
    if name is not None:
        return _dump_arrays(model, name), "arrays"
    for fmt, format_codec in codecs_in_order():
        if format_codec.claims(model):
            blob = format_codec.dump(model)
            if blob is not None:
                return blob, fmt
    return pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), "pickle"


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
            raise InvalidArgumentError(f"to_arrays() of {name} returned the reserved name {key!r}")
        if _is_nested(value):
            blob, fmt = dump_model(value)
            out[_NESTED_PREFIX + key] = np.frombuffer(blob, dtype=np.uint8)
            nested[key] = {"format": fmt, "sha256": sha256_hex(blob)}
            continue
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise InvalidArgumentError(
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


# ---------------------------------------------------------------------------- predictions
def dump_predictions(predictions: Any) -> tuple[bytes, str] | None:
    """An expansion's out-of-fold predictions as a ``.npy`` blob: ``(blob, "npy")``.

    Numeric and string labels are stored as they are (object arrays of only strings or only
    numbers become string or numeric arrays); None when there are no predictions, or when
    their labels mix types or are other objects (they cannot be stored without pickle, and
    a reader then recomputes them).

    Runtime complexity: O(n) for n predictions.
    """
    if predictions is None:
        return None
    arr = np.asarray(predictions)
    if arr.dtype.hasobject:
        values = arr.ravel().tolist()
        if values and all(type(v) is str for v in values):
            arr = arr.astype(str)
        elif values and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            for v in values
        ):
            arr = np.array(values).reshape(arr.shape)
        else:
            return None
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue(), "npy"


def load_predictions(
    blob: bytes | None, fmt: str, stored: str | None, digest: BlobDigest, what: str
) -> np.ndarray:
    """Check a predictions blob's digest, then read it with ``allow_pickle=False``.

    Runtime complexity: O(n) for n predictions.

    Raises
    ------
    ModelIntegrityError
        If the blob fails its digest (sha256, or HMAC under the store key), or matches it
        but is not a ``.npy`` array.
    ValueError
        For a format other than ``"npy"``.
    """
    if fmt != "npy":
        raise InvalidArgumentError(f"{what}: unknown predictions format {fmt!r}")
    blob = b"" if blob is None else bytes(blob)
    if not digest.matches(blob, stored):
        kind = "HMAC (store key)" if digest.keyed else "sha256"
        raise ModelIntegrityError(
            f"{what}: blob fails its {kind} check (stored {stored}, computed "
            f"{digest.of(blob)}); the database row was altered or corrupted, refusing to "
            "load it"
        )
    try:
        arr = load_npy(blob, what)
    except MalformedBlobError as exc:
        raise _malformed(what, exc) from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure of a checked blob
        raise _corrupt(what, fmt, exc) from None
    return arr


# ---------------------------------------------------------------------------- loading
def load_model(
    blob: bytes | None,
    fmt: str | None,
    sha256: str | None,
    *,
    trusted: bool = False,
    what: str = "model",
    digest: BlobDigest | None = None,
) -> Any:
    """Check a blob's digest and decode it; ``what`` names the row in error messages.

    ``digest`` says how the stored digest was made (default: plain sha256).

    Runtime complexity: linear in the blob size.

    Raises
    ------
    ModelIntegrityError
        If the digest of ``blob`` is not the stored one, or the blob does not decode.
    UntrustedModelError
        For a pickle blob, or a skops blob holding a class outside the allow-list or a
        function, when ``trusted`` is false.
    ValueError
        For an unknown format or an unregistered array-model class.
    """
    if fmt is None:
        return None
    if blob is None:
        raise ModelIntegrityError(f"{what}: format {fmt!r} is recorded but the blob is missing")
    blob = bytes(blob)
    digest = digest or _PLAIN
    if not digest.matches(blob, sha256):
        kind = "HMAC (store key)" if digest.keyed else "sha256"
        raise ModelIntegrityError(
            f"{what}: blob fails its {kind} check (stored {sha256}, computed "
            f"{digest.of(blob)}); the database row was altered or corrupted"
            + (", or written without the store key" if digest.keyed else "")
            + ", refusing to load it"
        )
    loader = _LOADERS.get(fmt)
    if loader is None:
        format_codec = codec(fmt)
        loader = None if format_codec is None else format_codec.load
    if loader is None:
        raise InvalidArgumentError(
            f"{what}: no codec is registered for model format {fmt!r} (a learner registers "
            "its own: polydom.open_index does it; storage.register_blob_codec by hand)"
        )
    try:
        return loader(blob, trusted, what)
    except (UntrustedModelError, ModelIntegrityError, ImportError):
        raise  # ImportError: the registered codec or class needs a library not installed
    except MalformedBlobError as exc:
        raise _malformed(what, exc) from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure of a checked blob
        raise _corrupt(what, fmt, exc) from None


def _malformed(what: str, exc: MalformedBlobError) -> ModelIntegrityError:
    """Our own checks refused a blob: their message, named once."""
    text = str(exc)
    return ModelIntegrityError(text if text.startswith(f"{what}: ") else f"{what}: {text}")


def _corrupt(what: str, fmt: str, exc: BaseException) -> ModelIntegrityError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ModelIntegrityError(
        f"{what}: {fmt} blob matches its digest but does not decode "
        f"({type(exc).__name__}: {reason[:120]}); it was written truncated or corrupt"
    )


def _load_arrays(blob: bytes, trusted: bool, what: str) -> Any:
    arrays = load_npz(blob, what)
    header = json.loads(arrays.pop(_META_KEY).tobytes().decode())
    name = header["class"]
    cls = array_class(name, what)
    for key, info in header.get("nested", {}).items():
        arrays[key] = load_model(
            arrays.pop(_NESTED_PREFIX + key).tobytes(), info["format"], info["sha256"],
            trusted=trusted, what=f"{what}, nested model {key!r}",
        )
    try:
        return cls.from_arrays(arrays, header["meta"])
    except UntrustedModelError as exc:  # a sub-model the learner keeps in its arrays
        raise UntrustedModelError(f"{what}: {exc}") from None


def _load_pickle(blob: bytes, trusted: bool, what: str) -> Any:
    if not trusted:
        raise UntrustedModelError(
            f"{what}: stored with pickle, which can run arbitrary code when loaded; "
            "pass trusted=True only if you trust this database"
        )
    return pickle.loads(blob)


_PLAIN = BlobDigest()

_LOADERS: dict[str, Callable[[bytes, bool, str], Any]] = {
    "arrays": _load_arrays,
    "pickle": _load_pickle,
}
