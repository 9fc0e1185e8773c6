"""Cascade: skyline models in cost order; a stage answers only when it is confident enough.

A :class:`Cascade` holds fitted classifiers (stages, cheapest first), one temperature per stage
(its calibration: ``softmax(log p / T)``) and one confidence threshold per stage.  An item goes
to stage 1; a stage whose calibrated top probability is at least its threshold answers, else the
item escalates.  The last stage always answers.  Escalating computes only the atomic features
the next stage needs that are not computed yet, so an atom shared by two stages is computed and
paid once.

:func:`polydom.serving.cascade_fit.fit_cascade` chooses the stages and thresholds from an index
and held-out data; the cascade then enters the index as a candidate (its expected cost curve
weights every atom by the probability that it is computed).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_budget
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction

__all__ = ["Cascade", "calibrated_proba"]

_LOG_FLOOR = 1e-12


def calibrated_proba(proba: np.ndarray, temperature: float) -> np.ndarray:
    """Temperature scaling of predicted probabilities: ``softmax(log(p) / T)`` per row.

    ``T = 1`` returns the probabilities (renormalised); ``T > 1`` softens, ``T < 1``
    sharpens.  The argmax of a row never changes.

    Runtime complexity: O(rows * classes).

    >>> calibrated_proba(np.array([[0.8, 0.2]]), 1.0).round(3).tolist()
    [[0.8, 0.2]]
    >>> calibrated_proba(np.array([[0.8, 0.2]]), 2.0).round(3).tolist()
    [[0.667, 0.333]]
    """
    z = np.log(np.maximum(np.asarray(proba, dtype=np.float64), _LOG_FLOOR)) / float(temperature)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class Cascade:
    """Confidence-gated stages of fitted classifiers, cheapest first.

    Made by :func:`polydom.serving.cascade_fit.fit_cascade`; usable as a model of an index
    candidate: :meth:`predict` takes the columns of every atom any stage needs (the
    cascade's *input*, ``input_columns`` of a full row, in that order).

    Parameters
    ----------
    models : sequence of fitted classifiers
        The stages; each has ``predict`` and ``predict_proba`` and the same ``classes_``.
    atoms : sequence of sequence of str
        The atomic features each stage needs.
    positions : sequence of sequence of int
        Per stage, the positions in the cascade's input of that stage's columns, in the
        order the stage model takes them.
    input_columns : sequence of int
        Columns of a full row that make the cascade's input (for :meth:`predict_item`).
    thresholds : sequence of float
        Confidence threshold per stage (the last stage's is ignored: it always answers).
        ``0`` stops every item there; a value above 1 never stops one.
    temperatures : sequence of float
        Calibration temperature per stage (> 0).
    atom_costs : mapping of str to CostCurve, optional
        Cost curve of every atom (for :meth:`predict_item`'s any-time stop and the
        expected cost).
    stage_keys : sequence of str, optional
        Display names of the stages.
    reach : sequence of float, optional
        Probability that an item reaches each stage (measured on the calibration data).

    Raises
    ------
    ValueError
        If the per-stage sequences differ in length, there is no stage, a temperature is
        not positive or a threshold is NaN.
    """

    def __init__(
        self,
        models: Sequence[Any],
        atoms: Sequence[Sequence[str]],
        positions: Sequence[Sequence[int]],
        input_columns: Sequence[int],
        thresholds: Sequence[float],
        temperatures: Sequence[float],
        atom_costs: Mapping[str, Any] | None = None,
        stage_keys: Sequence[str] | None = None,
        reach: Sequence[float] | None = None,
    ) -> None:
        k = len(models)
        if k == 0:
            raise InvalidArgumentError("models must hold at least one stage")
        stage_keys = [f"stage{i}" for i in range(k)] if stage_keys is None else stage_keys
        reach = [1.0] * k if reach is None else reach
        for name, seq in (("atoms", atoms), ("positions", positions),
                          ("thresholds", thresholds), ("temperatures", temperatures),
                          ("stage_keys", stage_keys), ("reach", reach)):
            if len(seq) != k:
                raise InvalidArgumentError(
                    f"{name} must have one entry per stage ({k}), got {len(seq)}")
        self.models = list(models)
        self.atoms = [tuple(a) for a in atoms]
        self.positions = [np.asarray(p, dtype=np.intp) for p in positions]
        self.input_columns = np.asarray(input_columns, dtype=np.intp)
        self.thresholds = np.asarray(thresholds, dtype=np.float64)
        self.temperatures = np.asarray(temperatures, dtype=np.float64)
        if np.isnan(self.thresholds).any():
            raise InvalidArgumentError(
                f"thresholds must not be NaN, got {self.thresholds.tolist()}")
        if not (np.all(np.isfinite(self.temperatures)) and np.all(self.temperatures > 0)):
            raise InvalidArgumentError(
                f"temperatures must be finite and > 0, got {self.temperatures.tolist()}"
            )
        self.atom_costs = {a: CostCurve.coerce(c) for a, c in (atom_costs or {}).items()}
        self.stage_keys = [str(s) for s in stage_keys]
        self.reach = np.asarray(reach, dtype=np.float64)
        self.classes_ = np.asarray(getattr(self.models[0], "classes_", np.array([])))

    def __repr__(self) -> str:
        stages = " > ".join(
            f"{key}@{t:.3g}" if i < len(self.models) - 1 else key
            for i, (key, t) in enumerate(zip(self.stage_keys, self.thresholds, strict=True))
        )
        return f"Cascade({stages})"

    @property
    def n_stages(self) -> int:
        """Number of stages."""
        return len(self.models)

    @property
    def new_atoms(self) -> list[tuple[str, ...]]:
        """Per stage, the atoms it needs that no earlier stage computed (what escalating to
        it computes)."""
        seen: set[str] = set()
        out = []
        for atoms in self.atoms:
            out.append(tuple(a for a in atoms if a not in seen))
            seen.update(atoms)
        return out

    def atom_probabilities(self) -> dict[str, float]:
        """Probability that each atom is computed: the reach of the first stage needing it.

        Runtime complexity: O(stages * atoms).
        """
        out: dict[str, float] = {}
        for reach, atoms in zip(self.reach, self.new_atoms, strict=True):
            for a in atoms:
                out[a] = float(reach)
        return out

    def expected_cost(self) -> CostCurve:
        """Expected cost curve ``sum_a P(a computed) * c_a(n)``.

        Runtime complexity: O(atoms * degree).

        Raises
        ------
        ValueError
            If an atom has no cost curve in ``atom_costs``.
        """
        probs = self.atom_probabilities()
        missing = sorted(set(probs) - set(self.atom_costs))
        if missing:
            raise InvalidArgumentError(f"atom_costs has no cost curve for atom(s) {missing}")
        return CostCurve.total(p * self.atom_costs[a] for a, p in probs.items() if p > 0.0)

    # ------------------------------------------------------------------ prediction
    def _stage_proba(self, k: int, X: np.ndarray) -> np.ndarray:
        return calibrated_proba(self.models[k].predict_proba(X), self.temperatures[k])

    def _check_input(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        width = self.input_columns.size
        if X.ndim != 2 or X.shape[1] != width:
            raise InvalidArgumentError(
                f"X must have shape (rows, {width}) (the cascade's input), "
                f"got {X.shape}")
        return X

    def exit_stages(self, X: np.ndarray) -> np.ndarray:
        """Stage (0-based) at which each row stops.

        Runtime complexity: O(rows * stages) model evaluations, only on rows that reach a
        stage.
        """
        X = self._check_input(X)
        out = np.full(X.shape[0], self.n_stages - 1, dtype=np.intp)
        rows = np.arange(X.shape[0])
        for k in range(self.n_stages - 1):
            if rows.size == 0:
                break
            conf = self._stage_proba(k, X[np.ix_(rows, self.positions[k])]).max(axis=1)
            stop = conf >= self.thresholds[k]
            out[rows[stop]] = k
            rows = rows[~stop]
        return out

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Labels of rows of the cascade's input: each from the first confident stage.

        Each stage sees only the rows that reach it; a row's label is its exit stage's
        ``predict``.

        Runtime complexity: O(rows * stages) model evaluations at most.

        Raises
        ------
        ValueError
            If ``X`` is not rows x the cascade's input width.
        """
        X = self._check_input(X)
        exits = self.exit_stages(X)
        out = None
        for k in range(self.n_stages):
            rows = np.flatnonzero(exits == k)
            if rows.size == 0:
                continue
            labels = self.models[k].predict(X[np.ix_(rows, self.positions[k])])
            if out is None:
                out = np.empty(X.shape[0], dtype=np.asarray(labels).dtype)
            out[rows] = labels
        if out is None:
            out = np.empty(0, dtype=self.classes_.dtype)
        return out

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Calibrated class probabilities of each row's exit stage (columns: ``classes_``).

        Runtime complexity: O(rows * stages) model evaluations at most.
        """
        X = self._check_input(X)
        exits = self.exit_stages(X)
        out = np.zeros((X.shape[0], self.classes_.size))
        for k in range(self.n_stages):
            rows = np.flatnonzero(exits == k)
            if rows.size:
                out[rows] = self._stage_proba(k, X[np.ix_(rows, self.positions[k])])
        return out

    def computed_atoms(self, exits: np.ndarray) -> dict[str, np.ndarray]:
        """For exit stages of rows, which atoms each row computed (bool per row per atom).

        Runtime complexity: O(rows * atoms).
        """
        exits = np.asarray(exits)
        out: dict[str, np.ndarray] = {}
        for k, atoms in enumerate(self.new_atoms):
            for a in atoms:
                out[a] = exits >= k
        return out

    def predict_item(
        self, item: Any, featurizer: Any, budget: float = math.inf, per_second: float = 1.0
    ) -> ItemPrediction:
        """Serve one raw item: compute stage 1's atoms, escalate while not confident.

        Before escalating, when ``budget`` is finite, the measured seconds so far plus the
        predicted cost (``atom_costs`` at the item's size) of the next stage's missing atoms
        must fit ``budget``; otherwise the current stage answers (any-time: the result has
        ``anytime=True``).  Only atoms not computed yet are computed.

        Runtime complexity: the computed routines plus one model call per reached stage.

        Parameters
        ----------
        item : object
            What the featurizer understands.
        featurizer : polydom.Featurizer
            Computes atoms by name (``compute(item, name) -> (vector, seconds)``) with
            ``columns`` and ``n_columns``, and gives the size (``size(item)``).
        budget : float, default inf
            Feature time allowed for the item, in the unit of ``atom_costs``.
        per_second : float, default 1.0
            Cost of one measured second in that unit (1000 when costs are in ms;
            :func:`polydom.curves.units.seconds_to_store`).

        Returns
        -------
        ItemPrediction
            ``stage`` is the stage that answered.

        Raises
        ------
        ValueError
            On a negative or NaN budget, or atoms the featurizer lacks.
        """
        wall = time.perf_counter()
        budget = math.inf if budget == math.inf else check_budget(budget)
        size = featurizer.size(item)
        columns = featurizer.columns
        missing = sorted({a for atoms in self.atoms for a in atoms} - set(columns))
        if missing:
            raise InvalidArgumentError(
                f"featurizer has no atom(s) {missing} that the cascade needs")
        row = np.full(featurizer.n_columns, np.nan)
        computed: list[str] = []
        seconds: dict[str, float] = {}
        new = self.new_atoms
        stopped_for_budget = False
        k = 0
        proba = None
        while True:
            for a in new[k]:
                vec, sec = featurizer.compute(item, a)
                row[columns[a]] = vec
                computed.append(a)
                seconds[a] = float(sec)
            x = row[self.input_columns[self.positions[k]]][None, :]
            proba = self._stage_proba(k, x)[0]
            if k == self.n_stages - 1 or proba.max() >= self.thresholds[k]:
                break
            if math.isfinite(budget):
                spent = sum(seconds.values()) * per_second
                ahead = sum(float(self.atom_costs[a](size)) for a in new[k + 1]
                            if a in self.atom_costs)
                if spent + ahead > budget:
                    stopped_for_budget = True
                    break
            k += 1
        label = self.models[k].predict(x)[0]
        return ItemPrediction(
            label=label,
            computed=tuple(computed),
            feature_seconds=seconds,
            key=self.stage_keys[k],
            model_features=frozenset(self.atoms[k]),
            size=size,
            budget=budget,
            anytime=stopped_for_budget,
            wall_seconds=time.perf_counter() - wall,
            proba=proba,
            stage=k,
        )

    # ------------------------------------------------------------------ storage
    def to_arrays(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Fitted state as arrays (stage models as nested models) and JSON-able meta.

        The stage models are returned under ``model0``, ``model1``, ...; the store writes
        each with its own safe format (see :mod:`storage.blobs`).

        Runtime complexity: O(size of the state).
        """
        arrays: dict[str, Any] = {
            "thresholds": self.thresholds,
            "temperatures": self.temperatures,
            "input_columns": self.input_columns,
            "reach": self.reach,
        }
        for k, model in enumerate(self.models):
            arrays[f"model{k}"] = model
            arrays[f"positions{k}"] = self.positions[k]
        meta = {
            "atoms": [list(a) for a in self.atoms],
            "stage_keys": self.stage_keys,
            "atom_costs": {a: c.coefficients.tolist() for a, c in self.atom_costs.items()},
        }
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> Cascade:
        """Rebuild a cascade from :meth:`to_arrays`.

        Runtime complexity: O(size of the state).
        """
        k = len(meta["atoms"])
        return cls(
            models=[arrays[f"model{i}"] for i in range(k)],
            atoms=meta["atoms"],
            positions=[arrays[f"positions{i}"] for i in range(k)],
            input_columns=arrays["input_columns"],
            thresholds=arrays["thresholds"],
            temperatures=arrays["temperatures"],
            atom_costs={a: CostCurve(c) for a, c in meta["atom_costs"].items()},
            stage_keys=meta["stage_keys"],
            reach=arrays["reach"],
        )
