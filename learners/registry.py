"""A registry of learners by name: lattice black boxes and budgeted learners alike.

A *lattice* learner's factory returns a scikit-learn estimator that
:class:`learners.SklearnLearner` trains on each feature set (or, for ``"synthetic"``, a
:class:`learners.SyntheticLearner`); a *budgeted* learner's factory returns a prototype
budgeted classifier whose trade-off grid a sweep turns into index candidates.  A build
configuration names learners from here (``polydom build``), and the pipeline lets storage
keep every registered learner's ``model_classes`` as arrays + JSON (no pickle, no edit of
storage code).

>>> spec = get_learner("cegb")
>>> spec.kind, spec.name
('budgeted', 'cegb')
>>> "logistic" in registered_learners()
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from polydom.errors import InvalidArgumentError

__all__ = ["RegisteredLearner", "get_learner", "register_learner", "registered_learners"]

KINDS = ("lattice", "budgeted")


@dataclass(frozen=True)
class RegisteredLearner:
    """One registered learner.

    Attributes
    ----------
    name : str
    factory : callable
        ``factory(seed=0, **params)``: a scikit-learn estimator (``kind="lattice"``) or a
        budgeted classifier prototype (``kind="budgeted"``).
    kind : {"lattice", "budgeted"}
    model_classes : tuple of type or str
        Classes storage keeps as arrays + JSON (``to_arrays`` / ``from_arrays``); a string
        ``"module:QualName"`` is imported only when needed (optional dependencies).

    Every budgeted learner is swept into candidates by the one :func:`learners.sweep`;
    its prototype says what else its grid holds (the budgeted-learner contract,
    :class:`learners.budgeted.contract.BudgetedLearner`), and its ``learner_name`` is this ``name``.
    """

    name: str
    factory: Callable[..., Any]
    kind: str
    model_classes: tuple = ()

    def make(self, seed: int = 0, **params: Any) -> Any:
        """A fresh estimator from the factory.  Runtime complexity: that of the factory."""
        return self.factory(seed=seed, **params)

    def classes(self) -> list[type]:
        """The model classes, imported (a class whose module cannot be imported, for lack of
        an optional dependency, is left out).

        Runtime complexity: O(len(model_classes)) imports.
        """
        out = []
        for cls in self.model_classes:
            if isinstance(cls, str):
                module, _, qualname = cls.partition(":")
                try:
                    cls = getattr(importlib.import_module(module), qualname)
                except ImportError:
                    continue
            out.append(cls)
        return out


_REGISTRY: dict[str, RegisteredLearner] = {}


def register_learner(
    name: str,
    factory: Callable[..., Any],
    kind: str = "lattice",
    model_classes: Sequence[type | str] = (),
) -> RegisteredLearner:
    """Register ``factory`` under ``name``.

    Runtime complexity: O(len(model_classes)).

    Parameters
    ----------
    name : str
        Unique, non-empty.
    factory : callable
        ``factory(seed=0, **params)`` -> estimator (see :class:`RegisteredLearner`).
    kind : {"lattice", "budgeted"}, default "lattice"
    model_classes : sequence of type or "module:QualName"
        Array-model classes storage must be able to keep.

    Returns
    -------
    RegisteredLearner

    Raises
    ------
    ValueError
        If ``name`` is taken or not a non-empty string, ``factory`` is not
        callable, ``kind`` is unknown, or a model class is neither a class nor a
        ``"module:QualName"`` string.  Nothing is registered then.
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"learner name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise InvalidArgumentError(f"learner name {name!r} is already registered")
    if not callable(factory):
        raise InvalidArgumentError(f"factory of learner {name!r} must be callable, got {factory!r}")
    if kind not in KINDS:
        raise InvalidArgumentError(f"kind of learner {name!r} must be one of {KINDS}, got {kind!r}")
    if isinstance(model_classes, (str, type)):
        model_classes = (model_classes,)
    classes = tuple(model_classes)
    for cls in classes:
        if not (isinstance(cls, type) or (isinstance(cls, str) and ":" in cls)):
            raise InvalidArgumentError(
                f"model_classes of learner {name!r} must be classes or 'module:QualName' "
                f"strings, got {cls!r}"
            )
    spec = RegisteredLearner(name, factory, kind, classes)
    _REGISTRY[name] = spec
    return spec


def get_learner(name: str) -> RegisteredLearner:
    """The learner registered as ``name``.

    Runtime complexity: O(1).

    Raises
    ------
    ValueError
        Naming the unknown learner and the registered ones.
    """
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        raise InvalidArgumentError(f"unknown learner {name!r}; registered: {', '.join(_REGISTRY)}")
    return spec


def registered_learners(kind: str | None = None) -> list[str]:
    """Names of the registered learners (of one ``kind`` when given), in registration order.

    Runtime complexity: O(learners).
    """
    return [n for n, s in _REGISTRY.items() if kind is None or s.kind == kind]


# ---------------------------------------------------------------------------- built-ins
def _logistic(seed: int = 0) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def _sgd_hinge_l1(seed: int = 0) -> Any:
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), SGDClassifier(loss="hinge", penalty="l1",
                                                         random_state=seed))


def _lightgbm(seed: int = 0) -> Any:
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=50, random_state=seed, verbose=-1, n_jobs=1)


def _tree(seed: int = 0) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=5, random_state=seed)


def _synthetic(seed: int = 0, accuracy: Callable[[frozenset], float] | None = None) -> Any:
    from learners.synthetic import SyntheticLearner

    if accuracy is None:
        raise InvalidArgumentError(
            "the synthetic learner needs accuracy=callable(frozenset) -> float")
    return SyntheticLearner(accuracy)


def _cegb(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.cegb import CEGBClassifier

    return CEGBClassifier(random_state=seed, **params)


def _greedymiser(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.cegb import GreedyMiserClassifier

    return GreedyMiserClassifier(random_state=seed, **params)


def _cstc(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.cstc import CSTCClassifier

    return CSTCClassifier(random_state=seed, **params)


def _cscc(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.cstc import CSCCClassifier

    return CSCCClassifier(random_state=seed, **params)


def _adapt(seed: int = 0, high_cost: str = "logistic", **params: Any) -> Any:
    """ADAPT around the estimator of the registered lattice learner ``high_cost`` (unfitted:
    the sweep fits it once per split, :meth:`AdaptClassifier.sweep_shared`)."""
    from learners.budgeted.adapt import AdaptClassifier

    spec = get_learner(high_cost)
    if spec.kind != "lattice" or spec.name == "synthetic":
        raise InvalidArgumentError(
            f"high_cost of learner 'adapt' must name a lattice estimator (e.g. 'logistic', "
            f"'tree'), got {high_cost!r}"
        )
    return AdaptClassifier(spec.make(seed), fit_high_cost=True, random_state=seed, **params)


def _dag(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.dag import DAGClassifier

    return DAGClassifier(random_state=seed, **params)


def _cheap_first(seed: int = 0, **params: Any) -> Any:
    from learners.budgeted.cheap_first import CheapFirstClassifier

    return CheapFirstClassifier(**params)  # deterministic: nothing to seed


register_learner("logistic", _logistic)
register_learner("sgd-hinge-l1", _sgd_hinge_l1)
register_learner("lightgbm", _lightgbm)
register_learner("tree", _tree)
register_learner("synthetic", _synthetic)
register_learner("cegb", _cegb, kind="budgeted",
                 model_classes=("learners.budgeted.cegb.classifier:CEGBClassifier",))
register_learner("greedymiser", _greedymiser, kind="budgeted",
                 model_classes=("learners.budgeted.cegb.classifier:GreedyMiserClassifier",))
register_learner("cstc", _cstc, kind="budgeted",
                 model_classes=("learners.budgeted.cstc.tree:CSTCClassifier",
                                "learners.budgeted.cstc.tree:CSTCRegressor"))
register_learner("cscc", _cscc, kind="budgeted",
                 model_classes=("learners.budgeted.cstc.cascade:CSCCClassifier",))
register_learner("adapt", _adapt, kind="budgeted",
                 model_classes=("learners.budgeted.adapt.classifier:AdaptClassifier",))
register_learner("dag", _dag, kind="budgeted",
                 model_classes=("learners.budgeted.dag.classifier:DAGClassifier",))
register_learner("cheap-first", _cheap_first, kind="budgeted",
                 model_classes=("learners.budgeted.cheap_first.classifier:CheapFirstClassifier",))
