"""What storage may decode: array-model classes and blob codecs, registered by name.

A learner's class or codec is registered as a path, ``"module:QualName"`` (a codec may be
a whole module: ``"module"``), and imported when a blob of its kind is first decoded or a
model of its kind first written, so that opening a store and looking up an index never
imports a learner, and the first prediction imports only the chosen model's code.  Storage
knows no learner's format: the pipeline registers the learners' paths, and a blob naming a
class or format that nobody registered is refused (a hostile store cannot make storage
import a module of its choice): every path a blob names is checked against this registry
before anything is imported (:func:`array_class`, :func:`stored_class`).

A codec is any object with ``claims(model) -> bool``, ``dump(model) -> bytes | None`` and
``load(blob, trusted, what)``; :data:`DEFAULT_CODECS` (skops, for scikit-learn estimators:
:mod:`polydom.blobs.skops_codec`) are asked after the registered ones.

>>> register_array_model("fractions:Fraction", name="doc.Fraction")  # nothing imported yet
'fractions:Fraction'
>>> array_class("doc.Fraction", "model 1")  # checked when first used
Traceback (most recent call last):
...
polydom.errors.InvalidArgumentError: cls fractions:Fraction must define to_arrays() to be registered
>>> stored_class("os:system", "model 1")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
polydom.errors.UntrustedModelError: never registered: refused, nothing imported
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from typing import Any

from polydom.blobs.learner_specs import learner_specs, specs_version
from polydom.errors import InvalidArgumentError, UntrustedModelError

__all__ = ["BUILT_IN_FORMATS", "DEFAULT_CODECS", "array_class", "array_name", "codec",
           "codecs_in_order", "register_array_model", "register_blob_codec",
           "register_learner_models", "stored_class"]

#: Formats storage decodes itself (arrays + JSON; pickle, only when trusted).
BUILT_IN_FORMATS = ("arrays", "pickle")
#: Codecs asked after the registered ones, by name -> path.
DEFAULT_CODECS = {"skops": "polydom.blobs.skops_codec"}

_ARRAY_MODELS: dict[str, type | str] = {}  # stored name -> class, or its path until first use
_ARRAY_NAMES: dict[type, str] = {}  # class -> the name written into its blobs
_CODECS: dict[str, Any] = {}  # format -> codec, or its path until first use
_LOADED: dict[str, Any] = {}  # path -> the codec imported from it
_CODEC_METHODS = ("claims", "dump", "load")
_APPLIED = [-1]  # the learner specs' version whose classes and codecs are registered


def register_learner_models() -> bool:
    """Register every learner spec's model classes, former names and codecs
    (:mod:`polydom.blobs.learner_specs`: the ``polydom.learners`` entry points and the
    specs registered since), by path: nothing of a learner is imported.  Called by this
    module when a name or format it is asked for is not registered yet, so opening a store
    reads no spec and a plugin's classes load without a call of ours; idempotent.  Whether
    anything new was registered.

    Runtime complexity: O(specs) after the first read of the entry points.
    """
    if _APPLIED[0] == specs_version():
        return False
    specs = learner_specs()
    version = specs_version()
    for spec in specs.values():
        for fmt, path in spec.codecs.items():
            register_blob_codec(fmt, path)
        for cls in spec.model_classes:
            register_array_model(cls)
        for former, current in spec.former_names.items():
            register_array_model(current, name=former)
    _APPLIED[0] = version
    return True


def _import_path(path: str) -> Any:
    """The object at ``"module:QualName"`` (or the module ``"module"``)."""
    module, _, qualname = path.partition(":")
    value = import_module(module)
    for part in qualname.split(".") if qualname else ():
        value = getattr(value, part)
    return value


def _path_of(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _check_array_class(klass: Any, shown: str) -> None:
    for attr in ("to_arrays", "from_arrays"):
        if not callable(getattr(klass, attr, None)):
            raise InvalidArgumentError(f"cls {shown} must define {attr}() to be registered")


def register_array_model(cls: type | str | None = None, *, name: str | None = None) -> Any:
    """Register a model class stored as numpy arrays + JSON (usable as a class decorator).

    ``cls`` is the class, or its path ``"module:QualName"`` (imported when a blob of it is
    first decoded or an instance first written).  ``name`` (default ``module.QualName``)
    names the class in the blob; a class is written under the name it was registered
    with, a path under its default name (a path registered under another ``name`` only
    reads blobs of that name: a former home of a class).  Registering a name again for
    another class raises ``ValueError``.

    Runtime complexity: O(1) (an import for a class given as a path that must be checked).

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If the class lacks ``to_arrays``/``from_arrays``, or ``name`` is taken.
    """

    def register(klass: type | str) -> type | str:
        if isinstance(klass, str):
            module, colon, qualname = klass.partition(":")
            if not (module and colon and qualname):
                raise InvalidArgumentError(
                    f"cls {klass!r} must be a class or a path 'module:QualName'")
            key = name or f"{module}.{qualname}"
            known = _ARRAY_MODELS.get(key, klass)
            if known != klass and not (isinstance(known, type) and _path_of(known) == klass):
                raise InvalidArgumentError(f"name {key!r} is already registered for {known!r}")
            _ARRAY_MODELS.setdefault(key, klass)
            return klass
        _check_array_class(klass, klass.__name__)
        key = name or f"{klass.__module__}.{klass.__qualname__}"
        known = _ARRAY_MODELS.get(key, klass)
        if known is not klass and known != _path_of(klass):
            raise InvalidArgumentError(f"name {key!r} is already registered for {known!r}")
        _ARRAY_MODELS[key] = klass
        _ARRAY_NAMES[klass] = key
        return klass

    return register if cls is None else register(cls)


def array_class(name: str, what: str) -> type:
    """The class registered under ``name``, imported on its first use.

    Runtime complexity: O(1) after the first import.

    Raises
    ------
    polydom.errors.UntrustedModelError
        If no class is registered under ``name`` (the store names a class nobody
        registered: nothing is imported).
    polydom.errors.InvalidArgumentError
        If its registered path does not name one with ``to_arrays``/``from_arrays`` where
        it says.
    """
    entry = _ARRAY_MODELS.get(name) if isinstance(name, str) else None
    if entry is None and isinstance(name, str) and register_learner_models():
        entry = _ARRAY_MODELS.get(name)
    if entry is None:
        raise UntrustedModelError(
            f"{what}: model class {str(name)[:80]!r} is not registered; refusing it before "
            "importing anything (a learner registers its classes: polydom.open_index does "
            "it; storage.register_array_model by hand)"
        )
    if isinstance(entry, type):
        return entry
    klass = _import_path(entry)
    _check_array_class(klass, entry)
    if not isinstance(klass, type) or _path_of(klass) != entry:
        raise InvalidArgumentError(
            f"{what}: model class {name!r} is registered as {entry!r}, which is not where "
            "that class is defined; register the path of its defining module")
    _ARRAY_MODELS[name] = klass
    if name == f"{klass.__module__}.{klass.__qualname__}":
        _ARRAY_NAMES.setdefault(klass, name)
    return klass


def stored_class(path: str, what: str) -> type:
    """The registered array-model class a blob names by its path ``"module:QualName"``
    (a composite model's inner estimator), imported only once the path is found registered.

    A path is registered when a class or path was given to :func:`register_array_model`
    (under any name); anything else (a module nobody registered, a submodule of a
    registered one, a plain attribute of it) is refused before any import.

    Runtime complexity: O(registered classes), plus the class's first import.

    Raises
    ------
    polydom.errors.UntrustedModelError
        If ``path`` is not a registered class path.
    """
    for attempt in range(2):
        for name, entry in list(_ARRAY_MODELS.items()):
            if isinstance(path, str) and (
                    entry == path or (isinstance(entry, type) and _path_of(entry) == path)):
                return array_class(name, what)
        if attempt or not register_learner_models():
            break
    raise UntrustedModelError(
        f"{what}: stored class path {str(path)[:80]!r} is not a registered model class; "
        "refusing it before importing anything")


def array_name(model: Any) -> str | None:
    """The name a model is written under when its class is a registered array model.

    Runtime complexity: O(1).
    """
    klass = type(model)
    name = _ARRAY_NAMES.get(klass)
    if name is not None:
        return name
    register_learner_models()
    name = _ARRAY_NAMES.get(klass)
    if name is not None:
        return name
    default = f"{klass.__module__}.{klass.__qualname__}"
    if _ARRAY_MODELS.get(default) == _path_of(klass):
        return default if array_class(default, default) is klass else None
    return None


def register_blob_codec(name: str, codec: Any) -> None:
    """Register a learner's model blob format (idempotent for the same codec).

    ``codec`` is the path of the codec (``"module"`` or ``"module:attr"``, imported when a
    blob of format ``name`` is first decoded or a model first written) or the codec itself:
    ``claims(model)``, whether :func:`storage.blobs.dump_model` should write ``model`` with
    it; ``dump(model)``, its blob, or None to let the next codec (finally pickle) have it;
    ``load(blob, trusted, what)``, the model, called only after the blob matched its
    digest: it checks the blob's structure itself before any library builds from it, and
    raises ``ValueError`` (reported as ``ModelIntegrityError``) or ``UntrustedModelError``.
    Registered codecs are asked in registration order, before :data:`DEFAULT_CODECS`.

    Runtime complexity: O(1).

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If ``name`` is a built-in or default format, or registered with another codec.
    """
    if name in BUILT_IN_FORMATS or name in DEFAULT_CODECS or _CODECS.get(name, codec) != codec:
        raise InvalidArgumentError(f"name {name!r} is already a model format")
    if not isinstance(codec, str):
        _check_codec(codec, name)
    _CODECS[name] = codec


def _check_codec(value: Any, name: str) -> Any:
    missing = [m for m in _CODEC_METHODS if not callable(getattr(value, m, None))]
    if missing:
        raise InvalidArgumentError(
            f"codec {name!r} must have {', '.join(_CODEC_METHODS)}; it lacks {', '.join(missing)}")
    return value


def codec(name: str) -> Any | None:
    """The codec of format ``name`` (imported on its first use), or None if none is
    registered.

    Runtime complexity: O(1) after the first import.
    """
    entry = _CODECS.get(name) or DEFAULT_CODECS.get(name)
    if entry is None and register_learner_models():
        entry = _CODECS.get(name)
    if not isinstance(entry, str):
        return entry
    loaded = _LOADED.get(entry)
    if loaded is None:
        loaded = _LOADED[entry] = _check_codec(_import_path(entry), name)
    return loaded


def codecs_in_order() -> Iterator[tuple[str, Any]]:
    """Every codec, registered ones first, each imported: what a writer asks in turn.

    Runtime complexity: O(codecs), plus their first imports.
    """
    register_learner_models()
    for name in [*_CODECS, *DEFAULT_CODECS]:
        yield name, codec(name)
