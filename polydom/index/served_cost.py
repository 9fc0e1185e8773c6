"""Per-row cost of a served model: the atoms it computes for each row, priced at one size.

A candidate's stored curve is what its model costs on average (``Candidate.cost``: its
atoms' expected cost, plus a learner's own overhead, times a calibration factor plus an
offset when the build was calibrated).  :class:`ServedCost` prices the model that is
served on given rows: an adaptive model (one that reports ``feature_usage``) pays for each
row the atoms that row needs, any other model its whole curve on every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.cost_model import CostModel
from polydom.curves.domain import check_rows

__all__ = ["ServedCost", "stored_overrun"]


def stored_overrun(info: Mapping[str, Any], field: str, default: float,
                   count: int) -> np.ndarray:
    """Each candidate's calibration ``field`` (``"factors"`` or ``"offsets"``) as a build's
    ``info["overrun"]`` stores it, ``default`` for all ``count`` when none is stored.

    Runtime complexity: O(count).

    >>> stored_overrun({"overrun": {"factors": [2.0, 3.0]}}, "factors", 1.0, 2).tolist()
    [2.0, 3.0]
    >>> stored_overrun({}, "offsets", 0.0, 2).tolist()
    [0.0, 0.0]
    """
    overrun = info.get("overrun")
    stored = overrun.get(field) if isinstance(overrun, Mapping) else None
    if not isinstance(stored, list) or len(stored) != count:
        return np.full(count, default)
    return np.asarray(stored, dtype=np.float64)


class ServedCost:
    """What one build needs to price its served models row by row.

    Parameters
    ----------
    cost_model : CostModel
        The build's atoms (with their curves and columns) and bundles.
    candidates : sequence of Candidate
        The build's candidates, in the order of its ``info["overrun"]`` lists.
    info : mapping
        The build's info (read for the calibration factors and offsets only).

    A row's cost at size ``n`` is ``C(n) + k * (A(n) - E(n))``: ``C`` the candidate's
    stored curve, ``E`` its atoms' expected cost (``cost_model.expected_cost(needs)``),
    ``A`` the cost of the atoms the served model computes for that row, ``k`` the
    candidate's calibration factor (1 uncalibrated).  With ``C = k * (E + O) + d`` (``O``
    the learner's overhead, ``d`` the offset) that is ``k * (A + O) + d``: the stored
    curve with the row's own atoms in place of their expectation, so the mean over rows
    whose usage is the stored one is ``C(n)``.
    """

    __slots__ = ("cost_model", "_candidates", "_info")

    def __init__(self, cost_model: CostModel, candidates: Sequence[Candidate],
                 info: Mapping[str, Any]) -> None:
        self.cost_model = cost_model
        self._candidates = candidates
        self._info = info

    def factor(self, candidate: Candidate) -> float:
        """``candidate``'s calibration factor (1.0 uncalibrated).  Runtime complexity: O(K)
        calibrated, O(1) uncalibrated."""
        overrun = self._info.get("overrun")
        if not isinstance(overrun, Mapping) or not isinstance(overrun.get("factors"), list):
            return 1.0
        for i, c in enumerate(self._candidates):
            if c is candidate:
                return float(stored_overrun(self._info, "factors", 1.0,
                                            len(self._candidates))[i])
        return 1.0

    def row_costs(self, candidate: Candidate, model: Any, X_rows: np.ndarray,
                  size: float) -> np.ndarray:
        """Cost of ``candidate``'s served ``model`` on each row of ``X_rows`` at ``size``.

        ``X_rows`` holds full rows (every atom's columns, as :meth:`polydom.Index.predict`
        takes them); the model receives the columns of its candidate's needs
        (:meth:`CostModel.columns_of`).  A model with ``feature_usage`` (rows x its
        ``feature_names_``, atom or bundle names: every budgeted learner's served model)
        pays for each row the atoms of the names that row used; any other model (a
        lattice feature set, a model not stored) pays ``candidate.cost(size)`` per row.

        Runtime complexity: that of ``model.feature_usage`` plus O(rows * atoms).

        Raises
        ------
        ValueError, TypeError
            If ``X_rows`` is not rows of finite numbers as wide as the build's rows
            (:func:`polydom.curves.domain.check_rows`).
        """
        width = 1 + max((c for cols in self.cost_model.columns.values() for c in cols),
                        default=-1)
        X = check_rows(X_rows, width, "X_rows")
        stored = float(candidate.cost(float(size)))
        usage_of = getattr(model, "feature_usage", None)
        names = getattr(model, "feature_names_", None)
        needs = dict(candidate.needs or {})
        if not (callable(usage_of) and names is not None and needs):
            return np.full(X.shape[0], stored)
        names = list(names)
        usage = np.asarray(usage_of(X[:, self.cost_model.columns_of(needs)]), dtype=bool)
        rows = (usage.astype(np.int64) @ self.cost_model.incidence(names).astype(np.int64)) > 0
        atoms = np.array([float(curve(float(size))) for curve in self.cost_model.atoms.values()])
        expected = float(self.cost_model.expected_cost(needs)(float(size)))
        return stored + self.factor(candidate) * (rows.astype(np.float64) @ atoms - expected)
