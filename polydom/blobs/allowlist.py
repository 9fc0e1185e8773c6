"""The allow-list of stored models: what a skops archive may make us build (one rule).

Every skops archive polydom reads goes through :func:`load_skops`: a top-level model blob
(format ``"skops"``) and the scikit-learn sub-models a budgeted learner keeps inside its
own arrays (the DAG's classifier bank and filter trees, ADAPT's high-cost model:
:mod:`learners.budgeted.sklearn_blobs`).  It sits here, below both :mod:`storage` and
:mod:`learners`, so the rule has one home and a class registered with
:func:`register_model_class` is admitted on both paths alike.

skops builds an object from a tree of *nodes*; each node names a loader and a
``module.Class``, and the loader calls that name: an ``ObjectNode`` calls ``cls.__new__``
and ``__setstate__``, but a ``ListNode``, ``DictNode`` (and its key types), ``LossNode`` or
``NdArrayNode`` calls the named class with stored arguments too, so a node of a "data" kind
naming ``builtins.eval`` or ``numpy.memmap`` runs it.  skops's own audit does not see that
(it trusts those loaders), and an allow-list by *name* alone does not either.  So
:func:`skops_refusals` reads the archive as a grammar, every node before anything is built,
and admits only nodes whose every call is one we name here:

=====================  ==================================================================
loader                 admitted when
=====================  ==================================================================
``ObjectNode``         the class is in :data:`SKOPS_ALLOWED_CLASSES` (scikit-learn
                       estimators the project stores and their helpers), registered
                       with :func:`register_model_class` or named (as skops writes it)
                       by a learner spec's ``skops_classes``
                       (:mod:`polydom.blobs.learner_specs`); its state is a ``DictNode``;
                       a libsvm estimator's fitted arrays are range-checked
                       (:mod:`polydom.blobs.svm_check`)
``TreeNode``           ``sklearn.tree._tree.Tree``, with its arguments and state checked
                       as a tree (:mod:`polydom.blobs.tree_check`) and its feature count
                       equal to the ``n_features_in_`` of the estimators holding it
``LossNode``           a loss class of scikit-learn's own loss modules, numbers as arguments
``RandomStateNode``    ``numpy.random.mtrand.RandomState``
``ListNode``,          exactly ``builtins.list`` / ``tuple`` / ``set`` / ``dict``; a dict's key
``TupleNode``,         types are ``builtins.str`` or ``builtins.int`` only
``SetNode``,
``DictNode``
``JsonNode``           ``builtins``, its content a JSON text
``NdArrayNode``        ``numpy.ndarray`` or a numpy scalar type, stored as an ``.npy`` member
                       whose header passes :func:`polydom.blobs.bounds.check_npy` (no objects,
                       bounded items, data of the declared size), or as a list of nodes
``TypeNode``           a numpy scalar type, or ``builtins`` ``str``/``int``/``float``/``bool``
``SliceNode``          ``builtins.slice``
=====================  ==================================================================

Anything else is refused and named: functions, methods, partials, operator functions,
sparse matrices, other loaders, other classes (of scikit-learn, numpy, scipy, the project
or anyone else), two nodes sharing an ``__id__`` with different content (skops would build
the first for both), an archive of another skops protocol, and archives whose members
declare more than :data:`polydom.blobs.bounds.MAX_INFLATION` times their size.  skops then
builds the model (its ``loads``, given the node kinds we checked as trusted): only the calls
named above run.

We walk skops's schema instead of writing our own format per estimator because the
project stores some twenty scikit-learn classes (and users register more): a format each
would restate scikit-learn's private fitted state, which changes between its releases;
skops keeps it and stores written before stay readable.  The grammar above is ours and
admits nothing we did not list.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from polydom.blobs.bounds import MalformedBlobError, check_npy, load_npy, open_zip
from polydom.blobs.learner_specs import learner_specs
from polydom.blobs.svm_check import libsvm_impl, svm_state_problem
from polydom.blobs.tree_check import tree_state_problem
from polydom.errors import ArgumentTypeError, UntrustedModelError

__all__ = [
    "SKOPS_ALLOWED_CLASSES",
    "SKOPS_PROTOCOL",
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
        "tree.ExtraTreeClassifier",
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
#: The skops protocol whose node kinds the grammar describes (skops 0.10 and later).
SKOPS_PROTOCOL = 2
#: Modules whose loss classes a ``LossNode`` may name.
_LOSS_MODULES = ("sklearn._loss._loss", "sklearn.linear_model._sgd_fast")
_CONTAINERS = {"ListNode": "list", "TupleNode": "tuple", "SetNode": "set", "DictNode": "dict"}
_KEY_TYPES = {"str", "int"}
_BUILTIN_TYPES = {"str", "int", "float", "bool"}
#: Estimator attributes that hold a ``Tree``, and the classes that keep trees in lists.
_TREE_HOLDERS = ("tree_",)
_allowed_cache: set[str] | None = None


def _dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_model_class(cls: type) -> type:
    """Allow skops archives to hold instances of ``cls`` (usable as a class decorator).

    For a user's own scikit-learn-compatible estimator, stored as a model blob or as a
    sub-model of a budgeted learner (a DAG's bank, ADAPT's high-cost model): both paths read
    this one list.  Registering a class says its code is trusted: loading builds it from
    the archive's state (``cls.__new__`` and ``__setstate__``).

    Runtime complexity: O(1).

    Raises
    ------
    TypeError
        If ``cls`` is not a class.
    """
    global _allowed_cache
    if not isinstance(cls, type):
        raise ArgumentTypeError(f"cls must be a class, got {cls!r}")
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
    """Dotted names (``module.QualName``, as skops writes them) of the allowed classes.

    The public spelling (``sklearn.tree.DecisionTreeClassifier``) is imported from
    scikit-learn's public module to learn the private one skops writes; nothing a blob
    names is imported.
    """
    global _allowed_cache
    if _allowed_cache is None:
        import importlib

        names = set()
        for dotted in SKOPS_ALLOWED_CLASSES:
            names.add(dotted)
            module, _, name = dotted.rpartition(".")
            try:
                cls = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue  # registered by its written name already
            names.add(_dotted(cls))
        _allowed_cache = names
    return _allowed_cache


def _declared_classes() -> frozenset[str]:
    """The ``module.QualName`` of the scikit-learn classes the learner specs declare
    (:attr:`polydom.blobs.learner_specs.LearnerSpec.skops_classes`: a plugin's estimators),
    asked only for a class off the list above, so a reader of the project's own classes
    reads no spec.  Names as written: nothing is imported."""
    return frozenset(name for spec in learner_specs().values() for name in spec.skops_classes)


def _numpy_scalar_type(name: object) -> bool:
    """Whether ``numpy.<name>`` is a numpy scalar type (``float64``, ``int64``, ``bool``).

    Looked up in numpy's namespace as it is (``vars``), never through ``getattr``: numpy's
    module ``__getattr__`` imports a submodule it is asked for (``matlib``, ``testing``)."""
    obj = vars(np).get(name) if isinstance(name, str) and name.isidentifier() else None
    return isinstance(obj, type) and issubclass(obj, np.generic) and not issubclass(
        obj, (np.object_, np.void))


def _libsvm_formulation(dotted: str) -> str | None:
    """The libsvm formulation of an allowed class (:func:`polydom.blobs.svm_check.
    libsvm_impl`), None for another class.  The class is looked up among loaded modules
    only (:func:`_allowed_classes` imported every allowed class's module)."""
    import sys

    module, _, name = dotted.rpartition(".")
    cls = getattr(sys.modules.get(module), name, None)
    return libsvm_impl(cls) if isinstance(cls, type) else None


def _loss_class(module: object, name: object) -> bool:
    """Whether ``module.name`` is a loss class of scikit-learn's loss modules."""
    if module not in _LOSS_MODULES or not isinstance(name, str) or not name.isidentifier():
        return False
    import importlib

    obj = vars(importlib.import_module(module)).get(name)
    return isinstance(obj, type) and (
        "Loss" in name or name in {"Hinge", "SquaredHinge", "ModifiedHuber", "Huber",
                                   "EpsilonInsensitive", "SquaredEpsilonInsensitive"}
    )


def _shared_id(ident: object) -> bool:
    """Whether skops memoizes a node by this ``__id__`` (a true integer)."""
    return isinstance(ident, int) and not isinstance(ident, bool) and ident != 0


def _children(node: dict) -> list:
    """The nodes skops reads under ``node``, in its order (for its memo)."""
    loader = node.get("__loader__")
    content = node.get("content")
    if loader in ("ObjectNode", "RandomStateNode"):
        return [content]
    if loader == "DictNode":
        return [node.get("key_types"),
                *(content.values() if isinstance(content, dict) else ())]
    if loader in ("ListNode", "TupleNode", "SetNode"):
        return list(content) if isinstance(content, list) else []
    if loader in ("TreeNode", "LossNode"):
        reduce = node.get("__reduce__")
        return [content, reduce.get("args") if isinstance(reduce, dict) else None]
    if loader == "NdArrayNode" and isinstance(content, list):
        return [*content, node.get("shape")]
    return []


class _Grammar:
    """One walk over a skops schema: every node checked, nothing built.

    ``refused`` collects ``"module.Class (Loader)"`` names (the allow-list's verdict);
    ``malformed`` collects structural problems (a node that is not a node, a tree out of
    range, an array over the bounds).
    """

    def __init__(self, archive: Any, allowed: set[str]) -> None:
        self.archive = archive
        self.allowed = allowed
        self.refused: list[str] = []
        self.malformed: list[str] = []
        self._first: dict[int, dict] = {}
        self._checked: set[tuple[int, tuple[int, ...]]] = set()
        self._active: set[int] = set()

    # ------------------------------------------------------------------ skops's memo
    def register(self, node: object) -> None:
        """Record, per ``__id__``, the node skops builds for it: the first in its own
        order of reading (pre-order; a later node with that id is not read at all)."""
        stack = [node]
        while stack:
            item = stack.pop()
            if not isinstance(item, dict):
                continue
            ident = item.get("__id__")
            if _shared_id(ident):
                if ident in self._first:
                    continue
                self._first[ident] = item
            stack.extend(reversed(_children(item)))

    def _resolve(self, node: object) -> Any:
        """The node skops uses where ``node`` is written."""
        if isinstance(node, dict) and _shared_id(node.get("__id__")):
            return self._first.get(node["__id__"], node)
        return node

    # ------------------------------------------------------------------ helpers
    def _bad(self, problem: str) -> None:
        self.malformed.append(problem)

    def _name(self, node: dict) -> str:
        return f"{node.get('__module__')}.{node.get('__class__')} ({node.get('__loader__')})"

    def _is(self, node: object, module: str, classes: set[str] | str) -> bool:
        classes = {classes} if isinstance(classes, str) else classes
        return (isinstance(node, dict) and node.get("__module__") == module
                and node.get("__class__") in classes)

    def _json(self, node: object) -> Any:
        """The value of a ``JsonNode`` (None for another node)."""
        node = self._resolve(node)
        if isinstance(node, dict) and node.get("__loader__") == "JsonNode":
            try:
                return json.loads(node["content"])
            except (TypeError, ValueError, KeyError):
                return None
        return None

    def _member(self, node: object) -> np.ndarray | None:
        """The ``.npy`` member an ``NdArrayNode`` names, bounds checked (None if absent)."""
        node = self._resolve(node)
        if not (isinstance(node, dict) and node.get("__loader__") == "NdArrayNode"
                and node.get("type") == "numpy" and isinstance(node.get("file"), str)):
            return None
        try:
            return load_npy(self.archive.read(node["file"]), "archive member")
        except (KeyError, ValueError) as exc:
            self._bad(str(exc))
            return None

    def _value(self, node: object) -> Any:
        """What a stored attribute holds, for a state check: a JSON value, a bounds-checked
        ``.npy`` array, a tuple or list of JSON values as a list, else the node's kind."""
        node = self._resolve(node)
        loader = node.get("__loader__") if isinstance(node, dict) else None
        if loader == "JsonNode":
            return self._json(node)
        if loader == "NdArrayNode":
            array = self._member(node)
            return loader if array is None else array
        if loader in ("TupleNode", "ListNode") and isinstance(node.get("content"), list):
            return [self._json(item) for item in node["content"]]
        return str(loader)

    def _refuse(self, node: dict, widths: tuple[int, ...]) -> None:
        """Name ``node`` as refused, and go on under it (to name everything refused)."""
        self.refused.append(self._name(node))
        for child in _children(node):
            if child is not None:
                self.node(child, widths)

    # ------------------------------------------------------------------ the walk
    def node(self, node: object, widths: tuple[int, ...] = ()) -> None:
        """Check ``node`` (the one skops builds there) and everything under it; ``widths``
        are the ``n_features_in_`` of the estimators above it (a tree's feature count
        must equal them)."""
        node = self._resolve(node)
        if not isinstance(node, dict) or not isinstance(node.get("__loader__"), str):
            self._bad(f"a node that is not a skops node ({type(node).__name__})")
            return
        ident = node.get("__id__")
        if not isinstance(ident, int) or isinstance(ident, bool):
            self._bad(f"{self._name(node)} has no integer __id__")
            return
        if ident in self._active:
            self._bad(f"{self._name(node)} contains itself")
            return
        if _shared_id(ident):
            if (ident, widths) in self._checked:
                return
            self._checked.add((ident, widths))
        loader = node["__loader__"]
        check = getattr(self, f"_{loader}", None) if loader.endswith("Node") else None
        self._active.add(ident)
        if check is None:
            check = self._refuse
        try:
            check(node, widths)
        finally:
            self._active.discard(ident)

    def _ObjectNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        dotted = f"{node.get('__module__')}.{node.get('__class__')}"
        if dotted not in self.allowed and dotted in _declared_classes():
            self.allowed = self.allowed | {dotted}
        if dotted not in self.allowed:
            self._refuse(node, widths)
            return
        content = self._resolve(node.get("content"))
        if content is None:
            return
        if not (isinstance(content, dict) and content.get("__loader__") == "DictNode"):
            self._bad(f"{self._name(node)} has a state that is not a dict")
            return
        attrs = content.get("content")
        width = self._json(attrs.get("n_features_in_")) if isinstance(attrs, dict) else None
        if width is not None:
            if not (isinstance(width, int) and not isinstance(width, bool) and width >= 0):
                self._bad(f"{dotted} has n_features_in_ {width!r}")
                return
            widths = (*widths, width)
        if isinstance(attrs, dict):
            for name in _TREE_HOLDERS:
                if name in attrs and width is None:
                    self._bad(f"{dotted} holds a tree but no n_features_in_")
        impl = _libsvm_formulation(dotted)
        if impl is not None:
            problem = (svm_state_problem(impl, {k: self._value(v) for k, v in attrs.items()})
                       if isinstance(attrs, dict) else "its state is not a dict")
            if problem is not None:
                self._bad(f"a stored {node.get('__class__')} (libsvm) is malformed: {problem}")
        self.node(content, widths)

    def _TreeNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if not self._is(node, "sklearn.tree._tree", "Tree"):
            self._refuse(node, widths)
            return
        reduce = node.get("__reduce__")
        args = self._resolve(reduce.get("args") if isinstance(reduce, dict) else None)
        content = self._resolve(node.get("content"))
        items = args.get("content") if isinstance(args, dict) else None
        state = content.get("content") if isinstance(content, dict) else None
        if not (isinstance(items, list) and len(items) == 3 and isinstance(state, dict)
                and all(isinstance(state.get(k), dict)
                        for k in ("max_depth", "node_count", "nodes", "values"))):
            self._bad("a Tree whose arguments or state are not (n_features, n_classes, "
                      "n_outputs) and {max_depth, node_count, nodes, values}")
            return
        self.node(content, widths)
        self.node(args, widths)
        n_classes = self._member(items[1])
        nodes = self._member(state["nodes"])
        values = self._member(state["values"])
        if n_classes is None or nodes is None or values is None:
            self._bad("a Tree whose n_classes, nodes or values are not stored arrays")
            return
        n_features = self._json(items[0])
        problem = tree_state_problem(
            n_features, n_classes, self._json(items[2]), self._json(state["node_count"]),
            self._json(state["max_depth"]), nodes, values)
        if problem is None and not widths:
            problem = "it is not held by an estimator with n_features_in_"
        if problem is None and any(w != n_features for w in widths):
            problem = f"its {n_features} features differ from n_features_in_ {widths}"
        if problem is not None:
            self._bad(f"a stored decision tree is malformed: {problem}")

    def _LossNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if not _loss_class(node.get("__module__"), node.get("__class__")):
            self._refuse(node, widths)
            return
        reduce = node.get("__reduce__")
        args = self._resolve(reduce.get("args") if isinstance(reduce, dict) else None)
        items = args.get("content") if isinstance(args, dict) else None
        if not (isinstance(items, list) and all(
                isinstance(self._json(i), (int, float)) for i in items)):
            self._bad(f"{self._name(node)} has arguments that are not numbers")
            return
        self.node(node.get("content"), widths)
        self.node(args, widths)

    def _RandomStateNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if not self._is(node, "numpy.random.mtrand", "RandomState"):
            self._refuse(node, widths)
            return
        self.node(node.get("content"), widths)

    def _container(self, node: dict, widths: tuple[int, ...]) -> None:
        loader = node["__loader__"]
        if not self._is(node, "builtins", _CONTAINERS[loader]):
            self._refuse(node, widths)
            return
        content = node.get("content")
        if loader == "DictNode":
            self._dict(node, content, widths)
            return
        if not isinstance(content, list):
            self._bad(f"{self._name(node)} has content that is not a list")
            return
        for item in content:
            self.node(item, widths)

    _ListNode = _TupleNode = _SetNode = _DictNode = _container

    def _dict(self, node: dict, content: object, widths: tuple[int, ...]) -> None:
        key_types = self._resolve(node.get("key_types"))
        kinds = key_types.get("content") if isinstance(key_types, dict) else None
        if not (isinstance(content, dict) and isinstance(kinds, list)
                and len(kinds) == len(content)):
            self._bad(f"{self._name(node)} has content or key types that do not match")
            return
        if not (self._is(key_types, "builtins", "list")
                and key_types.get("__loader__") == "ListNode"):
            self.refused.append(self._name(key_types))
            return
        self.node(key_types, widths)
        for kind in map(self._resolve, kinds):
            if not (isinstance(kind, dict) and kind.get("__loader__") == "TypeNode"
                    and self._is(kind, "builtins", _KEY_TYPES)):
                self.refused.append(self._name(kind) if isinstance(kind, dict) else "key type")
        for value in content.values():
            self.node(value, widths)

    def _JsonNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if node.get("__module__") != "builtins" or not isinstance(node.get("content"), str):
            self._refuse(node, widths)
            return
        try:
            json.loads(node["content"])
        except ValueError:
            self._bad(f"{self._name(node)} holds text that is not JSON")

    def _NdArrayNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if not (self._is(node, "numpy", "ndarray")
                or (node.get("__module__") == "numpy"
                    and _numpy_scalar_type(node.get("__class__")))):
            self._refuse(node, widths)
            return
        kind = node.get("type")
        if kind == "numpy":
            name = node.get("file")
            try:
                check_npy(self.archive.read(name), f"archive member {str(name)[:40]!r}")
            except (KeyError, TypeError, ValueError) as exc:
                self._bad(f"{self._name(node)}: {exc}")
        elif kind == "json" and isinstance(node.get("content"), list):
            for item in node["content"]:
                self.node(item, widths)
            self.node(node.get("shape"), widths)
        else:
            self._bad(f"{self._name(node)} of unknown storage {kind!r}")

    def _TypeNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        if not (self._is(node, "builtins", _BUILTIN_TYPES)
                or (node.get("__module__") == "numpy"
                    and _numpy_scalar_type(node.get("__class__")))):
            self.refused.append(self._name(node))

    def _SliceNode(self, node: dict, widths: tuple[int, ...]) -> None:  # noqa: N802
        content = node.get("content")
        if not self._is(node, "builtins", "slice") or not isinstance(content, dict):
            self._refuse(node, widths)
            return
        for key in ("start", "stop", "step"):
            value = content.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                self._bad(f"{self._name(node)} has a {key} that is not an integer")


def _walk(blob: bytes, what: str) -> _Grammar:
    """Check a skops archive's bounds, protocol and every node (nothing is built)."""
    archive = open_zip(blob, what)
    schema = json.loads(archive.read("schema.json"))
    grammar = _Grammar(archive, _allowed_classes())
    if not isinstance(schema, dict) or schema.get("protocol") != SKOPS_PROTOCOL:
        found = schema.get("protocol") if isinstance(schema, dict) else None
        grammar._bad(f"skops protocol {found!r}, not {SKOPS_PROTOCOL}")
        return grammar
    grammar.register(schema)
    grammar.node(schema)
    return grammar


def skops_refusals(blob: bytes, what: str = "model") -> list[str]:
    """What in a skops archive is outside the allow-list, as ``"module.Name (Node)"``
    strings (empty: safe to load).  The rule is in the module docstring.

    Walks the archive's schema without building anything or importing anything it names.

    Runtime complexity: O(nodes of the schema + bytes of the arrays of its trees).

    Raises
    ------
    polydom.blobs.bounds.MalformedBlobError
        If the archive is malformed (a node that is not one, a tree out of range, arrays
        over the bounds of :mod:`polydom.blobs.bounds`): refused whatever is trusted.
    zipfile.BadZipFile, KeyError, ValueError
        If ``blob`` is not a skops archive with a JSON schema.
    """
    grammar = _walk(bytes(blob), what)
    if grammar.malformed:
        raise MalformedBlobError(
            f"{what}: skops archive is malformed ({grammar.malformed[0]}"
            + (f"; {len(grammar.malformed) - 1} more problems" if len(grammar.malformed) > 1
               else "")
            + "); refusing to build it"
        )
    return sorted(set(grammar.refused))


def load_skops(blob: bytes, *, what: str = "model", trusted: bool = False) -> Any:
    """Build the model of a skops archive after :func:`skops_refusals` found nothing.

    ``what`` names the blob in the error; ``trusted=True`` admits classes and loaders
    outside the allow-list (only for a database you trust: building them can run their
    code); a malformed archive is refused either way.

    Runtime complexity: linear in the archive's size.

    Raises
    ------
    UntrustedModelError
        If the archive names what the allow-list refuses (each such type is named).
    polydom.blobs.bounds.MalformedBlobError
        If it is malformed, trusted or not.
    """
    import skops.io

    blob = bytes(blob)
    refused = skops_refusals(blob, what)
    if refused and not trusted:
        raise UntrustedModelError(
            f"{what}: skops archive holds what the allow-list refuses ({', '.join(refused)}): "
            "only the estimator classes polydom stores (register_model_class adds yours), "
            "no functions as parameters; pass trusted=True only if you trust this database"
        )
    return skops.io.loads(blob, trusted=skops.io.get_untrusted_types(data=blob))
