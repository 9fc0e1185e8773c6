"""One registry of learners: each learner's spec, found through the ``polydom.learners``
entry-point group.

A :class:`LearnerSpec` says, as text, everything polydom needs of a learner: its factory
(``"module:attr"``, imported only when a model is made), its kind, the model classes
storage keeps as arrays + JSON, its blob codecs, the scikit-learn classes a skops archive of
it may hold, and where its classes lived before (blobs written then still load).  A learner
package declares its specs in its own package and lists them in its distribution's
metadata::

    [project.entry-points."polydom.learners"]
    nearest = "polydom_nearest.spec:SPEC"      # a LearnerSpec, or a sequence of them

Installed next to polydom, it plugs into builds (``learner = "nearest"``), storage (its
classes and codecs are decoded, by path) and serving without an edit to polydom.  polydom's
own learners are declared the same way (pyproject.toml); :data:`OWN_SPECS` names them too,
so a checkout that runs without being installed finds them.

Reading the specs imports each entry point's module (a learner's spec module imports no
library: its factory and classes are paths), once per process, on the first use of
:func:`learner_specs`: opening a store imports no learner, and a blob naming a class no spec
declares is still refused before any import (:mod:`polydom.blobs.model_registry`).

>>> spec = LearnerSpec("doc-knn", "sklearn.neighbors:KNeighborsClassifier")
>>> spec.kind, spec.model_classes
('lattice', ())
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from polydom.errors import InvalidArgumentError

__all__ = ["ENTRY_POINT_GROUP", "KINDS", "OWN_SPECS", "LearnerSpec", "learner_specs",
           "register_spec", "specs_version"]

#: The entry-point group a learner package declares its specs in.
ENTRY_POINT_GROUP = "polydom.learners"
#: ``"lattice"``: a factory of black-box estimators trained per feature set;
#: ``"budgeted"``: a factory of a budgeted classifier swept over trade-offs;
#: ``"models"``: model classes and codecs only (no factory).
KINDS = ("lattice", "budgeted", "models")
#: polydom's own specs, as its pyproject.toml declares them (entry point name -> path).
OWN_SPECS = {
    "learners": "learners.specs:SPECS",
    "cegb": "learners.budgeted.cegb.spec:SPECS",
    "cstc": "learners.budgeted.cstc.spec:SPECS",
    "adapt": "learners.budgeted.adapt.spec:SPECS",
    "dag": "learners.budgeted.dag.spec:SPECS",
    "cheap-first": "learners.budgeted.cheap_first.spec:SPECS",
    "models": "learners.budgeted.spec:SPECS",
}


@dataclass(frozen=True)
class LearnerSpec:
    """What polydom needs of one learner, as paths (nothing is imported to declare it).

    Attributes
    ----------
    name : str
        The learner's name in configs and stored candidates.
    factory : str or callable or None
        ``"module:attr"`` (or the callable): ``factory(seed=0, **params)`` makes a
        scikit-learn estimator (``kind="lattice"``) or a budgeted classifier prototype
        (``"budgeted"``); None for ``kind="models"``.
    kind : {"lattice", "budgeted", "models"}
    model_classes : tuple of str or type
        ``"module:QualName"`` of each class storage keeps as arrays + JSON.
    codecs : mapping of str to str
        Blob format -> path of its codec (``"module[:attr]"``).
    skops_classes : tuple of str
        ``module.QualName`` of scikit-learn classes its skops archives may hold.
    former_names : mapping of str to str
        ``module.QualName`` a blob written before named -> the class's current path.
    """

    name: str
    factory: str | Callable[..., Any] | None
    kind: str = "lattice"
    model_classes: tuple = ()
    codecs: Mapping[str, str] = field(default_factory=dict)
    skops_classes: tuple = ()
    former_names: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentError(
                f"learner name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise InvalidArgumentError(
                f"kind of learner {self.name!r} must be one of {KINDS}, got {self.kind!r}")
        if (self.factory is None) != (self.kind == "models"):
            raise InvalidArgumentError(
                f"factory of learner {self.name!r} must be given unless its kind is "
                f"'models', got {self.factory!r}")
        if not (self.factory is None or callable(self.factory)
                or (isinstance(self.factory, str) and ":" in self.factory)):
            raise InvalidArgumentError(
                f"factory of learner {self.name!r} must be callable or 'module:attr', got "
                f"{self.factory!r}")
        classes = ((self.model_classes,) if isinstance(self.model_classes, (str, type))
                   else tuple(self.model_classes))
        for cls in classes:
            if not (isinstance(cls, type) or (isinstance(cls, str) and ":" in cls)):
                raise InvalidArgumentError(
                    f"model_classes of learner {self.name!r} must be classes or "
                    f"'module:QualName' strings, got {cls!r}")
        object.__setattr__(self, "model_classes", classes)
        object.__setattr__(self, "skops_classes", tuple(self.skops_classes))

    def make(self, seed: int = 0, **params: Any) -> Any:
        """A fresh estimator from the factory (imported on first use).  Runtime complexity:
        that of the factory."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            factory = getattr(import_module(module), attr)
        if factory is None:
            raise InvalidArgumentError(f"learner {self.name!r} declares models only")
        return factory(seed=seed, **params)

    def classes(self) -> list[type]:
        """The model classes, imported (one whose module cannot be imported, for lack of an
        optional dependency, is left out).  Runtime complexity: O(classes) imports."""
        out = []
        for cls in self.model_classes:
            if isinstance(cls, str):
                module, _, qualname = cls.partition(":")
                try:
                    cls = getattr(import_module(module), qualname)
                except ImportError:
                    continue
            out.append(cls)
        return out


_LOCK = threading.Lock()
_SPECS: dict[str, LearnerSpec] = {}
_LOADED = False
_ORIGINS: dict[str, str] = {}  # learner name -> the entry point that declared it
_VERSION = 0  # specs added so far: what a consumer applied is compared with it


def specs_version() -> int:
    """How many specs were added so far in this process (0 before the entry points were
    read): a consumer that applied the specs at one version applies the newer ones when
    it differs.  O(1)."""
    return _VERSION


def _declared(value: Any, where: str) -> list[LearnerSpec]:
    specs = [value] if isinstance(value, LearnerSpec) else list(value) if isinstance(
        value, Iterable) else [value]
    for spec in specs:
        if not isinstance(spec, LearnerSpec):
            raise InvalidArgumentError(
                f"entry point {where} of group {ENTRY_POINT_GROUP!r} must name a "
                f"LearnerSpec or a sequence of them, got {type(spec).__name__}")
    return specs


def _entry_points() -> dict[str, str]:
    """Entry point name -> value, polydom's own first, then every installed one."""
    from importlib.metadata import entry_points

    found = dict(OWN_SPECS)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def _load() -> None:
    global _LOADED
    for name, value in _entry_points().items():
        module, _, attr = value.partition(":")
        target: Any = import_module(module)
        for part in attr.split(".") if attr else ():
            target = getattr(target, part)
        for spec in _declared(target, f"{name} = {value!r}"):
            _add(spec, f"entry point {name!r}")
    _LOADED = True


def _add(spec: LearnerSpec, origin: str) -> None:
    known = _SPECS.get(spec.name)
    if known is not None and known != spec:
        raise InvalidArgumentError(
            f"learner name {spec.name!r} is already registered ({_ORIGINS[spec.name]})")
    global _VERSION
    _SPECS[spec.name] = spec
    _ORIGINS.setdefault(spec.name, origin)
    _VERSION += 1


def learner_specs() -> dict[str, LearnerSpec]:
    """Every learner's spec by name: the entry points' (read once per process), then those
    given to :func:`register_spec`, in that order.

    Runtime complexity: O(entry points) imports of spec modules on the first call, O(1) after.

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If an entry point names something other than specs, or two declare one name.
    """
    if not _LOADED:
        with _LOCK:
            if not _LOADED:
                _load()
    return dict(_SPECS)


def register_spec(spec: LearnerSpec) -> LearnerSpec:
    """Register ``spec`` in this process (a learner defined in a script or a test).

    Runtime complexity: O(1) after the entry points were read.

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If its name is registered already.
    """
    learner_specs()
    with _LOCK:
        if spec.name in _SPECS:
            raise InvalidArgumentError(
                f"learner name {spec.name!r} is already registered ({_ORIGINS[spec.name]})")
        _add(spec, "register_spec")
    return spec
