"""The allow-list of stored models: which classes a skops archive may name (one rule).

Every skops archive polydom reads goes through :func:`load_skops`: a top-level model blob
(``storage.load_model``, format ``"skops"``) and the scikit-learn sub-models a budgeted
learner keeps inside its own arrays (the DAG's classifier bank and filter trees, ADAPT's
high-cost model: :mod:`learners.budgeted.sklearn_blobs`, :mod:`learners.budgeted.adapt.high_cost`).
It sits here, below both :mod:`storage` and :mod:`learners`, so the rule has one home and a
class registered with :func:`register_model_class` is admitted on both paths alike.

The rule (:func:`skops_refusals`), checked on the archive's schema before anything is built:

* an object (``ObjectNode``, ``ReduceNode``) must be of a class in
  :data:`SKOPS_ALLOWED_CLASSES` (the scikit-learn estimators the project stores and their
  helper objects, plus what :func:`register_model_class` adds) or a *class* of the project's
  own packages (:data:`PROJECT_PACKAGES`);
* a type used as a value (``TypeNode``) must resolve to a class: a builtin one, or a numpy
  scalar type or dtype (skops writes a builtin function such as ``eval`` as a
  ``TypeNode`` too: it is refused);
* data nodes (arrays, containers, trees, losses, random states) must come from builtins,
  numpy, scipy or scikit-learn;
* functions, methods, partials and unknown node kinds are refused
  (``FunctionTransformer(func=numpy.load)``, ``builtins.eval``).

Other scikit-learn, numpy or scipy classes are refused too: a store's writer must not be
able to make a reader build an arbitrary class of those libraries.  skops's own
``get_untrusted_types`` is not the rule (it trusts only what skops ships); we walk the schema
ourselves because the rule depends on the node kind, not only on the type's name.
"""

from __future__ import annotations

import importlib
import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from polydom.errors import PolydomError

__all__ = [
    "PROJECT_PACKAGES",
    "SKOPS_ALLOWED_CLASSES",
    "UntrustedModelError",
    "load_skops",
    "register_model_class",
    "skops_refusals",
    "unregister_model_class",
]

#: scikit-learn classes a skops archive may hold without ``trusted=True``: the estimators the
#: project stores (config learners, lattice and budgeted-learner sub-models) and the helper
#: objects inside them.  Extend it with :func:`register_model_class` only.
SKOPS_ALLOWED_CLASSES = {
    f"sklearn.{name}"
    for name in (
        "pipeline.Pipeline",
        "preprocessing.StandardScaler",
        "preprocessing.MinMaxScaler",
        "preprocessing.LabelEncoder",
        "linear_model.LogisticRegression",
        "linear_model.SGDClassifier",
        "linear_model.Lasso",
        "linear_model.Ridge",
        "linear_model.LinearRegression",
        "tree.DecisionTreeClassifier",
        "tree.DecisionTreeRegressor",
        "ensemble.RandomForestClassifier",
        "ensemble.RandomForestRegressor",
        "ensemble.ExtraTreesClassifier",
        "dummy.DummyClassifier",
        "dummy.DummyRegressor",
        "svm.SVC",
        "naive_bayes.GaussianNB",
        "neighbors.KNeighborsClassifier",
        "calibration.CalibratedClassifierCV",
        "calibration._CalibratedClassifier",
        "calibration._SigmoidCalibration",
        "isotonic.IsotonicRegression",
    )
}
#: Top-level packages of the project: their classes (never their functions) are allowed.
PROJECT_PACKAGES = ("learners", "lattice", "polydom", "storage")
#: skops nodes that hold data only (arrays, containers, trees, losses, random states).
_DATA_NODES = {
    "JsonNode", "ListNode", "DictNode", "TupleNode", "SetNode", "NdArrayNode",
    "SparseMatrixNode", "TreeNode", "LossNode", "SGDNode", "RandomStateNode",
    "RandomGeneratorNode", "BytesNode", "BytearrayNode", "SliceNode", "DtypeNode",
}
_DATA_PACKAGES = ("builtins", "numpy", "scipy", "sklearn")
_allowed_cache: set[str] | None = None


class UntrustedModelError(PolydomError, ValueError):
    """A model blob that could run code when loaded, refused without ``trusted=True``."""


def _dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_model_class(cls: type) -> type:
    """Allow skops archives to hold instances of ``cls`` (usable as a class decorator).

    For a user's own scikit-learn-compatible estimator, stored as a model blob or as a
    sub-model of a budgeted learner (a DAG's bank, ADAPT's high-cost model): both paths read
    this one list.  Registering a class says its code is trusted: loading builds it from
    the archive's state.

    Runtime complexity: O(1).

    Raises
    ------
    TypeError
        If ``cls`` is not a class.
    """
    global _allowed_cache
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, got {cls!r}")
    SKOPS_ALLOWED_CLASSES.add(_dotted(cls))
    _allowed_cache = None
    return cls


def unregister_model_class(cls: type) -> None:
    """Undo :func:`register_model_class` for ``cls`` (no-op when it was not registered).

    Runtime complexity: O(1).
    """
    global _allowed_cache
    SKOPS_ALLOWED_CLASSES.discard(_dotted(cls))
    _allowed_cache = None


def _allowed_classes() -> set[str]:
    """Dotted names (``module.QualName``, as skops writes them) of the allowed classes."""
    global _allowed_cache
    if _allowed_cache is None:
        names = set()
        for dotted in SKOPS_ALLOWED_CLASSES:
            names.add(dotted)
            module, _, name = dotted.rpartition(".")
            try:
                cls = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue  # registered by name, or private: keep as written
            names.add(_dotted(cls))
        _allowed_cache = names
    return _allowed_cache


def _resolve(dotted: str) -> Any:
    """The object a dotted name denotes (importing its module), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _skops_nodes(node: Any) -> Iterator[dict]:
    """Every node of a skops schema (dicts carrying ``__loader__``), depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__loader__" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def skops_refusals(blob: bytes) -> list[str]:
    """What in a skops archive is outside the allow-list, as ``"module.Name (Node)"``
    strings (empty: safe to load).  The rule is in the module docstring.

    Walks the archive's schema without building anything; the only modules it imports are
    those of the project's packages and of numpy that the schema names (to tell a class
    from a function).

    Runtime complexity: O(nodes of the schema).

    Raises
    ------
    zipfile.BadZipFile, KeyError, ValueError
        If ``blob`` is not a skops archive with a JSON schema.
    """
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        schema = json.loads(archive.read("schema.json"))
    allowed = _allowed_classes()
    refused: list[str] = []
    for node in _skops_nodes(schema):
        loader = node["__loader__"]
        dotted = f"{node.get('__module__')}.{node.get('__class__')}"
        root = str(node.get("__module__", "")).split(".")[0]
        if loader in ("ObjectNode", "ReduceNode"):
            ok = dotted in allowed or (
                root in PROJECT_PACKAGES and isinstance(_resolve(dotted), type)
            )
        elif loader == "TypeNode":
            obj = _resolve(dotted) if root in ("builtins", "numpy") else None
            ok = isinstance(obj, type) and (
                root == "builtins" or issubclass(obj, (np.generic, np.dtype))
            )
        elif loader in _DATA_NODES:
            ok = root in _DATA_PACKAGES
        else:  # FunctionNode, MethodNode, PartialNode, OperatorFuncNode, unknown loaders
            ok = False
        if not ok:
            refused.append(f"{dotted} ({loader})")
    return sorted(set(refused))


def load_skops(blob: bytes, *, what: str = "model", trusted: bool = False) -> Any:
    """Build the model of a skops archive after :func:`skops_refusals` found nothing.

    ``what`` names the blob in the error; ``trusted=True`` skips the allow-list (only for a
    database you trust: building a refused class can run its code).

    Runtime complexity: linear in the archive's size.

    Raises
    ------
    UntrustedModelError
        If the archive names what the allow-list refuses (each such type is named).
    """
    import skops.io

    blob = bytes(blob)
    refused = skops_refusals(blob)
    if refused and not trusted:
        raise UntrustedModelError(
            f"{what}: skops archive holds what the allow-list refuses ({', '.join(refused)}): "
            "only the estimator classes polydom stores (register_model_class adds yours), "
            "no functions as parameters; pass trusted=True only if you trust this database"
        )
    return skops.io.loads(blob, trusted=skops.io.get_untrusted_types(data=blob))
