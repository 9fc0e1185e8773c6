"""Expansion (one trained, scored feature set) and the Learner protocol that produces it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Expansion", "Learner", "learner_name"]


@dataclass(frozen=True, slots=True)
class Expansion:
    """A feature set that was trained and scored ("expanded" in the paper).

    Parameters
    ----------
    features : frozenset of str
        The feature set.
    accuracy : float
        Its estimated accuracy (cross-validated or held out).
    model : object or None
        The fitted model, or None for learners that only score (synthetic).
    fit_seconds : float
        Wall time the learner spent on this set.
    predictions : ndarray or None
        Out-of-fold predictions on the learner's training rows, when its accuracy came from
        k-fold cross-validation (:class:`learners.SklearnLearner`); a DAG's classifier bank
        reuses them as its per-row losses.  A store's expansion cache keeps them (without
        pickle) and returns them.
    accuracy_se : float, default 0.0
        Standard error of ``accuracy`` (see :class:`learners.evaluation.FoldEstimate`);
        0 for learners that only score (synthetic).
    fold_scores : tuple of float, default ()
        The score on each split of the evaluation protocol, in split order
        (``accuracy`` is their mean); empty for learners that only score.
    """

    features: frozenset
    accuracy: float
    model: Any = field(default=None, compare=False, repr=False)
    fit_seconds: float = field(default=0.0, compare=False)
    predictions: Any = field(default=None, compare=False, repr=False)
    accuracy_se: float = field(default=0.0, compare=False)
    fold_scores: tuple = field(default=(), compare=False, repr=False)


@runtime_checkable
class Learner(Protocol):
    """What the lattice explorer needs from a learner: one method.

    ``expand(features)`` trains (or scores) a model on the feature set ``features`` (a
    frozenset of feature names; the empty set included) and returns an
    :class:`Expansion` with its accuracy in ``[0, 1]``.  A learner that holds a
    training matrix may also offer ``feature_columns()`` (name -> column indices, in the
    learner's feature order); :func:`polydom.build_index` then serves predictions by cutting
    those columns.  A learner may name itself with ``learner_name`` (a non-empty text: its
    name in :mod:`learners.registry`, as budgeted learners do); the candidates it trains
    carry that name (:func:`learner_name`).
    """

    def expand(self, features: frozenset) -> Expansion:
        """Train and score a model on ``features``."""
        ...


def learner_name(learner: Any) -> str:
    """The one name of what trains a lattice's candidates: the learner's ``learner_name``
    when it is a non-empty text (its registry name, e.g. ``"logistic"``, or
    ``"sklearn:LogisticRegression"`` for an estimator :class:`learners.SklearnLearner`
    wraps without a registry name), else the learner's class name.

    Every lattice candidate's ``learner`` is this name, and a stored build records it as its
    learner: one name wherever a learner is shown.  Runtime complexity: O(1).

    >>> class Mine:
    ...     def expand(self, features): ...
    >>> learner_name(Mine())
    'Mine'
    """
    name = getattr(learner, "learner_name", None)
    if isinstance(name, str) and name:
        return name
    return type(learner).__name__
