"""Index and Hit: the end-to-end face of a built index (models attached to candidates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.index.item_prediction import ItemPrediction
from polydom.index.table import SkylineTable

__all__ = ["Hit", "Index"]


@dataclass(frozen=True, slots=True)
class Hit:
    """The answer of :meth:`Index.lookup`: the chosen model and what it costs at that size.

    Attributes
    ----------
    key : hashable
        The candidate's key.
    features : frozenset of str
        Features the model needs.
    accuracy : float
        Its estimated accuracy.
    cost : float
        Its cost at the queried size.
    model : object or None
        The fitted model (None for learners that only score).
    candidate : Candidate
        The candidate itself.
    """

    key: Any
    features: frozenset
    accuracy: float
    cost: float
    model: Any = field(repr=False)
    candidate: Candidate = field(repr=False)


class Index:
    """A built index with its models: ``lookup`` returns a :class:`Hit`, ``predict`` applies it.

    Parameters
    ----------
    table : SkylineTable
        The poly-dominance index over the candidates (their payload is the fitted model).
    costs : mapping of str to CostCurve
        Cost curve of every feature.
    columns : mapping of str to list of int, optional
        Columns of the training matrix that each feature occupies; used by :meth:`predict`
        to cut the columns a model needs out of a full row.  One column per feature, in the
        order of ``costs``, when omitted.
    info : mapping, optional
        Build parameters and counts (alpha, delta, expansions, ...).
    """

    def __init__(
        self,
        table: SkylineTable,
        costs: Mapping[str, CostCurve],
        columns: Mapping[str, list[int]] | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        self.table = table
        self.costs = {name: CostCurve.coerce(c) for name, c in costs.items()}
        if columns is None:
            columns = {name: [i] for i, name in enumerate(self.costs)}
        self.columns = {name: list(cols) for name, cols in columns.items()}
        self.info = dict(info or {})

    def __repr__(self) -> str:
        return f"Index({self.table!r}, features={list(self.costs)})"

    @property
    def candidates(self) -> list[Candidate]:
        """Every candidate of the index."""
        return self.table.candidates

    def model_columns(self, features: frozenset) -> list[int]:
        """Columns of a full row that a model on ``features`` takes, in training order."""
        order = [name for name in self.columns if name in features]
        return [col for name in order for col in self.columns[name]]

    def _hit(self, position: int, size: float) -> Hit | None:
        if position < 0:
            return None
        cand = self.table._candidates[position]
        return Hit(cand.key, cand.features, cand.accuracy, cand.cost(size), cand.payload, cand)

    def lookup(self, size: float, budget: float) -> Hit | None:
        """Best model whose cost at ``size`` is ``<= budget`` (None when none fits).

        Runtime complexity: O(log R + d log S), as :meth:`PolyDomIndex.lookup`.
        """
        return self._hit(self.table.lookup_position(size, budget), float(size))

    def lookup_many(self, sizes: np.ndarray, budgets: np.ndarray) -> np.ndarray:
        """Positions into :attr:`candidates` for many queries (-1 where none fits)."""
        return self.table.lookup_many(sizes, budgets)

    def predict(self, X_rows: np.ndarray, size: float, budget: float) -> np.ndarray:
        """Predict rows of full feature matrices with the model chosen for (size, budget).

        ``X_rows`` holds every feature's columns (as in training); only the chosen model's
        columns are passed to it.

        Raises
        ------
        ValueError
            If nothing fits the budget, the chosen candidate has no model, or ``X_rows`` has
            the wrong number of columns.
        """
        hit = self.lookup(size, budget)
        if hit is None:
            raise ValueError(f"no model fits budget {budget!r} at size {size!r}")
        if hit.model is None:
            raise ValueError(f"candidate {hit.key!r} has no fitted model to predict with")
        X = np.asarray(X_rows)
        width = sum(len(c) for c in self.columns.values())
        if X.ndim != 2 or X.shape[1] != width:
            raise ValueError(f"X_rows must have shape (rows, {width}), got {X.shape}")
        return hit.model.predict(X[:, self.model_columns(hit.features)])

    def predict_item(
        self, item: Any, budget: float, featurizer: Any, anytime: bool = False
    ) -> ItemPrediction:
        """Serve one raw item within ``budget``: the featurizer computes, the index chooses.

        Takes the size from ``featurizer.size(item)``, computes only the chosen model's
        features (timed) and returns an :class:`ItemPrediction`; see
        :func:`polydom.predict_item` for the plain and any-time modes.  The work is the
        featurizer's (``featurizer.serve(index, item, budget, anytime)``), so the index
        depends on no serving code.

        Runtime complexity: O(log R + d log S) plus the chosen feature routines.

        Raises
        ------
        ValueError
            If ``featurizer`` cannot serve items (no ``serve`` method), or as
            :func:`polydom.predict_item`.
        """
        serve = getattr(featurizer, "serve", None)
        if not callable(serve):
            raise ValueError(
                f"featurizer must be a polydom.Featurizer (with serve(index, item, budget, "
                f"anytime)), got {featurizer!r}"
            )
        return serve(self, item, budget, anytime=anytime)
