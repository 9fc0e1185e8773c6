"""Candidate: one trained model as the index sees it (key, accuracy, cost curve)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_feature_name, check_real

__all__ = ["Candidate"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A model the index may return: its accuracy and the cost curve of what it needs.

    Parameters
    ----------
    key : hashable
        Unique name of the candidate within an index (ties in the index are broken by key).
    accuracy : float
        Estimated accuracy in ``[0, 1]``; independent of the item size.  A real number
        (``"0.5"`` or ``True`` raise ``TypeError``).
    cost : CostCurve or str or sequence of float
        Cost of the features the model needs, as a function of the item size ``n``.
        Text is parsed with :meth:`CostCurve.parse`, numbers are coefficients.
    features : iterable of str, default empty
        Names of the features the model uses (informational for the index); non-empty
        strings.
    payload : object, default None
        Anything attached (a fitted model, an expansion); ignored by comparisons.

    >>> Candidate("a", 0.8, "3 + n").cost(2.0)
    5.0
    """

    key: Hashable
    accuracy: float
    cost: CostCurve
    features: frozenset = frozenset()
    payload: Any = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        try:
            hash(self.key)
        except TypeError:
            raise ValueError(f"candidate key must be hashable, got {self.key!r}") from None
        accuracy = check_real(self.accuracy, f"accuracy of candidate {self.key!r}")
        if not (math.isfinite(accuracy) and 0.0 <= accuracy <= 1.0):
            raise ValueError(
                f"accuracy of candidate {self.key!r} must be in [0, 1], got {self.accuracy!r}"
            )
        object.__setattr__(self, "accuracy", accuracy)
        object.__setattr__(self, "cost", CostCurve.coerce(self.cost))
        if isinstance(self.features, str) or not isinstance(self.features, Iterable):
            raise TypeError(
                f"features of candidate {self.key!r} must be an iterable of names, "
                f"got {self.features!r}"
            )
        features = frozenset(self.features)
        for name in features:
            check_feature_name(name, f"a feature of candidate {self.key!r}")
        object.__setattr__(self, "features", features)
