"""Expansion (one trained, scored feature set) and the Learner protocol that produces it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Expansion", "Learner"]


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
    those columns.
    """

    def expand(self, features: frozenset) -> Expansion:
        """Train and score a model on ``features``."""
        ...
