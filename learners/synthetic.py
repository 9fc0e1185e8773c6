"""SyntheticLearner: accuracy from a function of the feature set, no model (tests, paper §5.2)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from lattice.expansion import Expansion
from polydom.errors import InvalidArgumentError

__all__ = ["SyntheticLearner"]


class SyntheticLearner:
    """A learner whose "training" is a call to ``accuracy_fn(features)``.

    Used for the paper's synthetic experiments and for tests: no data, no model
    (``Expansion.model`` is None).

    Parameters
    ----------
    accuracy_fn : callable
        Maps a frozenset of feature names to an accuracy in ``[0, 1]``.

    Attributes
    ----------
    calls_ : int
        Number of :meth:`expand` calls so far (each one a "training"); set by the
        first call.

    >>> learner = SyntheticLearner(lambda fs: 0.5 + 0.1 * len(fs))
    >>> learner.expand(frozenset({"a", "b"})).accuracy
    0.7
    """

    #: Its name in :mod:`learners.registry`, on every candidate it scores.
    learner_name = "synthetic"

    def __init__(self, accuracy_fn: Callable[[frozenset], float]) -> None:
        self.accuracy_fn = accuracy_fn

    def describe(self) -> str:
        """The accuracy function's qualified name (storage keys reusable expansions on it)."""
        fn = self.accuracy_fn
        name = getattr(fn, "__qualname__", type(fn).__qualname__)
        return f"SyntheticLearner({getattr(fn, '__module__', '?')}.{name})"

    def expand(self, features: frozenset) -> Expansion:
        """Score ``features`` with ``accuracy_fn``.  Runtime complexity: one call of it.

        Raises
        ------
        ValueError
            If the function returns something that is not a number in ``[0, 1]``.
        """
        features = frozenset(features)
        start = time.perf_counter()
        value = self.accuracy_fn(features)
        try:
            acc = float(value)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"accuracy_fn({sorted(features)!r}) must return a number, got {value!r}"
            ) from None
        if not (math.isfinite(acc) and 0.0 <= acc <= 1.0):
            raise InvalidArgumentError(
                f"accuracy_fn({sorted(features)!r}) must be in [0, 1], got {value!r}")
        self.calls_ = getattr(self, "calls_", 0) + 1
        return Expansion(features, acc, None, time.perf_counter() - start)
