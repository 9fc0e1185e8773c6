"""Batch prediction: many rows or raw items under one budget, chunk by chunk.

What ``polydom predict`` (the batch door) computes for each chunk it reads, with no file
format in sight: :func:`predict_rows` takes full feature rows and their sizes, looks every
row up at once (:meth:`polydom.Index.lookup_many`) and calls each chosen model once on all
its rows; :func:`predict_items` serves raw items one by one through an
:class:`polydom.serving.item_serving.ItemServer` (the featurizer computes, and times, the
chosen model's features).  Both give :class:`Prediction` records, one per row or item, in
:data:`PREDICTION_FIELDS` order; a row or item that cannot be answered is a
:class:`BadRow` naming its position and the reason, and the others go on.

Costs are in the index's cost unit: ``predicted_cost`` is the chosen model's stored cost at
the size, ``measured_cost`` the measured seconds of the features computed for a raw item,
in that unit (None for given rows: nothing was measured).  A label is the model's, as the
type it was trained with (a string label stays a string, an integer an integer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polydom.curves.curve_text import natural_key
from polydom.curves.domain import check_budget, check_size
from polydom.curves.names import candidate_name
from polydom.curves.units import unit_name
from polydom.errors import DamagedStoreError, InvalidArgumentError
from polydom.index.built import Index
from polydom.index.lazy_payload import resolve_payload
from polydom.serving.item_serving import ItemServer

__all__ = ["PREDICTION_FIELDS", "BadRow", "Prediction", "predict_items", "predict_rows"]

#: The fields of a prediction record, in the order every output gives them.
PREDICTION_FIELDS = ("line", "size", "budget", "unit", "model", "learner", "features",
                     "accuracy", "predicted_cost", "measured_cost", "label", "build")


@dataclass(frozen=True)
class Prediction:
    """One row's or item's answer (see the module docstring for the costs).

    ``model`` is None (and ``label``, ``learner`` too) when no model fits the budget at the
    row's size; ``features`` are the chosen model's, in natural order.
    """

    line: int
    size: float
    budget: float
    unit: str
    model: str | None
    learner: str | None
    features: tuple[str, ...]
    accuracy: float | None
    predicted_cost: float | None
    measured_cost: float | None
    label: Any
    build: Any

    def as_dict(self) -> dict[str, Any]:
        """The record as a dict in :data:`PREDICTION_FIELDS` order.  O(fields)."""
        return {name: getattr(self, name) for name in PREDICTION_FIELDS}


@dataclass(frozen=True)
class BadRow:
    """A row or item that was not answered: its ``line`` (as the reader numbers it) and
    a one-line ``reason``."""

    line: int
    reason: str


def _plain(value: Any) -> Any:
    """A label as a plain Python value of the type it was trained with."""
    return value.item() if isinstance(value, np.generic) else value


def _features(candidate: Any) -> tuple[str, ...]:
    return tuple(sorted(map(str, candidate.features), key=natural_key))


def predict_rows(
    index: Index, rows: np.ndarray, sizes: np.ndarray, lines: Sequence[int], budget: float,
    rule: str = "best",
) -> list[Prediction | BadRow]:
    """Answer full feature rows, each at its own size, under one ``budget``.

    ``rows`` is a float array (rows x :attr:`Index.n_columns`; NaN marks a feature not
    computed, as :meth:`polydom.Index.predict` takes it), ``sizes`` one size per row,
    ``lines`` the number the reader gives each row.  A row whose size is not a number in
    the index's domain, or that holds an infinite value, is a :class:`BadRow`; each chosen
    model predicts all its rows in one call.  ``budget`` and ``rule`` are checked once.

    Runtime complexity: O(Q * d * log S) for the Q lookups (numpy), plus one prediction
    call per distinct chosen model.

    Raises
    ------
    ValueError
        If ``budget`` or ``rule`` is bad, or ``rows`` is not as wide as the index's rows.
    DamagedStoreError
        When a chosen model's stored blob is damaged or untrusted (the store's fault).
    """
    budget = check_budget(budget)
    rule = index.check_rule(rule)
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != index.n_columns:
        raise InvalidArgumentError(
            f"rows must have {index.n_columns} columns (the index's full rows), got shape "
            f"{rows.shape}")
    sizes = np.asarray(sizes, dtype=float)
    lo, hi = index.table.domain
    refused: dict[int, str] = {}
    for i, size in enumerate(sizes.tolist()):  # the one checker, row by row (~1 us each)
        try:
            check_size(size, lo, hi)
        except InvalidArgumentError as exc:
            refused[i] = str(exc)
    bad_size = np.zeros(len(sizes), dtype=bool)
    bad_size[list(refused)] = True
    bad_value = np.isinf(rows).any(axis=1)
    good = ~(bad_size | bad_value)
    positions = np.full(len(sizes), -1, dtype=np.int64)
    if good.any():
        positions[good] = index.lookup_many(sizes[good], np.full(int(good.sum()), budget),
                                            rule, check_input=False)
    labels: dict[int, Any] = {}
    candidates = index.candidates
    for position in np.unique(positions[good]):
        if position < 0:
            continue
        chosen = np.flatnonzero(good & (positions == position))
        candidate = candidates[position]
        model = resolve_payload(candidate.payload)
        if model is None:
            for i in chosen:
                labels[int(i)] = BadRow(int(lines[i]), f"model {_name(candidate)!r} chosen "
                                        "for this budget has no fitted model to predict with")
            continue
        columns = index.model_columns(candidate.needs)
        for i, label in zip(chosen, _predicted(model, rows[np.ix_(chosen, columns)],
                                               [lines[i] for i in chosen]), strict=True):
            labels[int(i)] = label
    unit, build = unit_name(index.info), index.info.get("build_id")
    out: list[Prediction | BadRow] = []
    for i, line in enumerate(lines):
        if bad_size[i]:
            out.append(BadRow(int(line), refused[i]))
        elif bad_value[i]:
            out.append(BadRow(int(line), "a feature value is infinite"))
        elif isinstance(labels.get(i), BadRow):
            out.append(labels[i])
        elif positions[i] < 0:
            out.append(Prediction(int(line), float(sizes[i]), budget, unit, None, None, (),
                                  None, None, None, None, build))
        else:
            cand = candidates[positions[i]]
            out.append(Prediction(int(line), float(sizes[i]), budget, unit,
                                  _name(cand), cand.learner, _features(cand), cand.accuracy,
                                  float(cand.cost(sizes[i])), None, _plain(labels[i]), build))
    return out


def _predicted(model: Any, X: np.ndarray, lines: list[int]) -> list[Any]:
    """The model's labels of ``X``, in one call; when that call refuses the rows (a NaN
    the model cannot take, say), row by row, each refused row a :class:`BadRow`."""
    try:
        return np.asarray(model.predict(X)).tolist()
    except DamagedStoreError:
        raise
    except (ValueError, TypeError, ArithmeticError):
        pass
    out: list[Any] = []
    for i, line in enumerate(lines):
        try:
            out.append(np.asarray(model.predict(X[i:i + 1])).tolist()[0])
        except (ValueError, TypeError, ArithmeticError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else ""
            out.append(BadRow(int(line), f"the model refused the row: {type(exc).__name__}: "
                                         f"{reason}"[:300]))
    return out


def _name(candidate: Any) -> str:
    return candidate_name(candidate.key)


#: What a featurizer may raise on an item it cannot take (the item's fault, not ours).
ITEM_ERRORS = (ValueError, TypeError, KeyError, IndexError, ArithmeticError, AttributeError)


def predict_items(
    server: ItemServer, items: Iterable[Any], lines: Sequence[int], budget: float,
) -> list[Prediction | BadRow]:
    """Serve raw items one by one within ``budget`` (each item's size is the featurizer's),
    through ``server`` (one per build: it holds the candidates x features matrix).

    An item the featurizer cannot take (it raises one of :data:`ITEM_ERRORS`), or whose
    size is outside the domain, is a :class:`BadRow` and the others go on; a damaged
    stored model is the store's fault and stops the batch.

    Runtime complexity: per item, a lookup plus the chosen features' routines.

    Raises
    ------
    ValueError
        If ``budget`` is bad.
    DamagedStoreError
        When a chosen model's stored blob is damaged or untrusted.
    """
    budget = check_budget(budget)
    index = server.index
    unit, build = unit_name(index.info), index.info.get("build_id")
    learners = {c.key: c.learner for c in index.candidates}
    out: list[Prediction | BadRow] = []
    for line, item in zip(lines, items, strict=True):
        try:
            p = server.predict(item, budget, check_input=False)
        except DamagedStoreError:
            raise
        except ITEM_ERRORS as exc:
            reason = str(exc).splitlines()[0] if str(exc) else ""
            out.append(BadRow(int(line), f"{type(exc).__name__}: {reason}"[:300]))
            continue
        if p.key is None:
            out.append(Prediction(int(line), p.size, budget, unit, None, None, (), None,
                                  None, p.measured_cost, None, build))
            continue
        out.append(Prediction(
            int(line), p.size, budget, unit, candidate_name(p.key), learners.get(p.key),
            tuple(sorted(map(str, p.model_features), key=natural_key)),
            float(p.accuracy), float(p.predicted_cost), float(p.measured_cost),
            _plain(p.label), build))
    return out
