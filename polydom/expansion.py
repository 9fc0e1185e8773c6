"""Expansion: the outcome of training one model on one feature set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Expansion"]


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
    """

    features: frozenset
    accuracy: float
    model: Any = field(default=None, compare=False, repr=False)
    fit_seconds: float = field(default=0.0, compare=False)
