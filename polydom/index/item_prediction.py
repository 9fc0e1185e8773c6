"""ItemPrediction: what serving one raw item did (the label, what was computed, the time).

One class for every way of serving an item: :func:`polydom.serving.predict_item` (an index chooses
the model, plain or any-time) and a budgeted model's own on-demand ``predict_item`` (CEGB
computes a feature when a split on the item's path needs it).  Fields one of them does not
know keep their defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ItemPrediction"]


@dataclass(frozen=True)
class ItemPrediction:
    """What serving one item did.

    >>> p = ItemPrediction(label=1, computed=("a", "b"), feature_seconds={"a": 0.5, "b": 0.25},
    ...                    budget=1.0)
    >>> p.seconds, p.over_budget, p.slack
    (0.75, False, 0.25)
    >>> q = ItemPrediction(label=1, feature_seconds={"a": 0.046}, budget=25.0, cost_unit="ms",
    ...                    per_second=1000.0)
    >>> q.measured_cost, q.over_budget
    (46.0, True)

    Attributes
    ----------
    label : object or None
        The prediction; None when no model fits the budget at that size.
    computed : tuple of str
        Features computed, in the order they were computed.
    feature_seconds : dict of str to float
        Measured seconds of each computed feature.
    key : hashable or None
        Key of the index candidate that answered (None outside an index).
    model_features : frozenset of str
        Features of the model that answered (the ones it may need).
    accuracy : float
        Estimated accuracy of the model that answered (NaN when unknown or none).
    planned_key : hashable or None
        Key of the candidate the index chose for (size, budget).
    predicted_cost : float
        The index's predicted cost of the planned candidate at this size (0 when none), in
        ``cost_unit``.
    size : float
        Size of the item (NaN when not asked).
    budget : float
        The budget asked for (inf when none), in ``cost_unit``.
    anytime : bool
        Whether the any-time mode served it.
    wall_seconds : float
        Wall time of the whole call (lookup, planning, features, prediction).
    proba : ndarray or None
        Class probabilities, when the model reports them.
    raw_score : ndarray or None
        A tree ensemble's summed margins (one per tree of an iteration).
    split_evaluations : int
        Split nodes evaluated (tree models served on demand).
    stage : int
        The cascade stage that answered (0-based; -1 outside a cascade).
    cost_unit : str
        The unit of ``budget``, ``predicted_cost``, :attr:`measured_cost` and :attr:`slack`
        (the index's ``info["cost_unit"]``; ``"s"`` outside an index).
    per_second : float
        Cost, in ``cost_unit``, of one measured second (1000 for ms; 1 for s, and for an
        index whose unit is not one of time: its costs are then served as seconds).
    """

    label: Any
    computed: tuple = ()
    feature_seconds: dict = field(default_factory=dict, repr=False)
    key: Any = None
    model_features: frozenset = frozenset()
    accuracy: float = math.nan
    planned_key: Any = None
    predicted_cost: float = 0.0
    size: float = math.nan
    budget: float = math.inf
    anytime: bool = False
    wall_seconds: float = field(default=0.0, repr=False)
    proba: np.ndarray | None = field(default=None, repr=False)
    raw_score: np.ndarray | None = field(default=None, repr=False)
    split_evaluations: int = 0
    stage: int = -1
    cost_unit: str = "s"
    per_second: float = 1.0

    @property
    def seconds(self) -> float:
        """Measured feature time: the sum of ``feature_seconds``."""
        return float(sum(self.feature_seconds.values()))

    @property
    def measured_cost(self) -> float:
        """Measured feature time in ``cost_unit``: ``seconds * per_second``."""
        return self.seconds * self.per_second

    @property
    def over_budget(self) -> bool:
        """Whether the measured feature time exceeded the budget (both in ``cost_unit``)."""
        return self.measured_cost > self.budget

    @property
    def slack(self) -> float:
        """``budget - measured_cost`` in ``cost_unit`` (negative when over budget)."""
        return self.budget - self.measured_cost

    @property
    def fallback(self) -> bool:
        """Whether a model other than the planned one answered (any-time mode)."""
        return self.key != self.planned_key
