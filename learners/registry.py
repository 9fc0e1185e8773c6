"""Learners by name: lattice black boxes and budgeted learners alike, from their specs.

Every learner is a :class:`polydom.blobs.learner_specs.LearnerSpec` declared in its own
package and found through the ``polydom.learners`` entry-point group (the project's own:
:mod:`learners.specs` and each budgeted room's ``spec`` module); a package installed next to
polydom adds its own the same way, and :func:`register_learner` adds one in a running
process.  A *lattice* learner's factory returns a scikit-learn estimator that
:class:`learners.SklearnLearner` trains on each feature set (or, for ``"synthetic"``, a
:class:`learners.SyntheticLearner`); a *budgeted* learner's factory returns a prototype
budgeted classifier whose trade-off grid a sweep turns into index candidates.  A build
configuration names learners from here (``polydom build``); storage keeps every spec's
``model_classes`` as arrays + JSON and asks its codecs (:mod:`polydom.blobs.model_registry`).

>>> spec = get_learner("cegb")
>>> spec.kind, spec.name
('budgeted', 'cegb')
>>> "logistic" in registered_learners()
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from polydom.blobs.learner_specs import LearnerSpec, learner_specs, register_spec
from polydom.errors import InvalidArgumentError

__all__ = ["RegisteredLearner", "get_learner", "register_learner", "registered_learners"]

#: Kinds of learner a build trains (a ``"models"`` spec only declares stored classes).
KINDS = ("lattice", "budgeted")
#: A registered learner is its spec.
RegisteredLearner = LearnerSpec


def register_learner(
    name: str,
    factory: Callable[..., Any] | str,
    kind: str = "lattice",
    model_classes: Sequence[type | str] = (),
) -> LearnerSpec:
    """Register ``factory`` under ``name`` in this process (a package declares its learners
    as entry points instead: :mod:`polydom.blobs.learner_specs`).

    Runtime complexity: O(len(model_classes)).

    Parameters
    ----------
    name : str
        Unique, non-empty.
    factory : callable or "module:attr"
        ``factory(seed=0, **params)`` -> estimator (see :class:`LearnerSpec`).
    kind : {"lattice", "budgeted"}, default "lattice"
    model_classes : sequence of type or "module:QualName"
        Array-model classes storage must be able to keep.

    Returns
    -------
    LearnerSpec

    Raises
    ------
    ValueError
        If ``name`` is taken or not a non-empty string, ``factory`` is not callable,
        ``kind`` is unknown, or a model class is neither a class nor a
        ``"module:QualName"`` string.  Nothing is registered then.
    """
    if kind not in KINDS:
        raise InvalidArgumentError(f"kind of learner {name!r} must be one of {KINDS}, got {kind!r}")
    if not (callable(factory) or isinstance(factory, str)):
        raise InvalidArgumentError(f"factory of learner {name!r} must be callable, got {factory!r}")
    return register_spec(LearnerSpec(name, factory, kind, model_classes))


def get_learner(name: str) -> LearnerSpec:
    """The learner registered as ``name``.

    Runtime complexity: O(1) once the specs were read.

    Raises
    ------
    ValueError
        Naming the unknown learner and the registered ones.
    """
    specs = learner_specs()
    spec = specs.get(name) if isinstance(name, str) else None
    if spec is None or spec.kind not in KINDS:
        raise InvalidArgumentError(
            f"unknown learner {name!r}; registered: {', '.join(registered_learners())}")
    return spec


def registered_learners(kind: str | None = None) -> list[str]:
    """Names of the registered learners (of one ``kind`` when given), in registration order.

    Runtime complexity: O(learners).
    """
    return [n for n, s in learner_specs().items()
            if s.kind in KINDS and (kind is None or s.kind == kind)]
