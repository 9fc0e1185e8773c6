"""The serving core: a query as a mapping of fields in, one answer out, whatever the door.

Every door (the Python functions :func:`lookup_answer`, :func:`predict_answer`,
:func:`explain_answer`; the command line's ``lookup``; HTTP ``/lookup``, ``/explain``,
``/predict``; a batch job or a JSON-lines loop) hands the fields it received, as text or
numbers, to :func:`read_query` and prints what the answer's ``to_dict`` gives: so every door
checks the same constraints (:data:`polydom.curves.domain.CONSTRAINTS`), refuses with the
same words naming the field (:class:`polydom.errors.QueryError`), and answers with the same
record, field for field and number for number.

The fields (:data:`FIELDS`):

``size``
    The item size: a number, or text spelling one; inside the build's domain.
``budget``
    A number in the shown unit, or text with an optional unit after it (the unit grammar of
    :mod:`polydom.curves.units`); a *bare* budget (no unit written) is read in the shown
    unit, and only a bare one far from every cost at the size gets a ``warning``.
``rule``
    A lookup rule of :data:`polydom.index.table.RULES` (default ``"best"``).
``overrun``
    The overrun level to answer at (a level the build was calibrated for,
    :meth:`polydom.Index.at_overrun`); every answer states the level it used (None for an
    uncalibrated build).
``unit``
    The unit costs are shown (and bare budgets read) in (default the store's own).
``rows``
    Full feature rows to predict (:func:`predict_answer`).

Runtime complexity: O(1) to read a query, plus the lookup's O(log R + d log S).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from polydom.curves.curve_text import natural_key
from polydom.curves.domain import (
    check_budget,
    check_field,
    check_rows,
    check_size,
    real_from_text,
)
from polydom.curves.names import candidate_name
from polydom.curves.units import CostUnit, budget_warning, cost_unit_for, split_quantity, unit_name
from polydom.errors import ArgumentTypeError, InvalidArgumentError, QueryError, RuleUnavailableError
from polydom.index.built import Hit, Index
from polydom.index.explanation import Explanation, SkylineEntry
from polydom.serving.provenance import unproven_field

__all__ = [
    "FIELDS",
    "Answer",
    "Query",
    "explain_answer",
    "explanation_record",
    "lookup_answer",
    "predict_answer",
    "read_query",
]

#: The fields a query may hold, and what each is.
FIELDS: Mapping[str, str] = {
    "size": "the item size (inside the build's domain)",
    "budget": "the cost budget (a number, or text with its unit: 5ms)",
    "rule": "the lookup rule (best or one_se)",
    "overrun": "the overrun level to answer at (one the build was calibrated for)",
    "unit": "the unit costs are shown and bare budgets read in (s, ms, us, ns)",
    "rows": "full feature rows to predict",
}


def _field(name: str, check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)``; a refusal as a :class:`QueryError` naming field ``name``."""
    try:
        return check(*args)
    except QueryError:
        raise
    except (InvalidArgumentError, ArgumentTypeError, RuleUnavailableError) as exc:
        raise QueryError(name, str(exc)) from None


def _level(view: Index) -> float | None:
    """The overrun level ``view``'s costs are calibrated to (None: uncalibrated)."""
    overrun = view.info.get("overrun")
    return float(overrun["target_overrun"]) if isinstance(overrun, Mapping) else None


def _at_overrun(index: Index, value: Any) -> Index:
    if value is None:
        return index.snapshot()
    level = _field("overrun", real_from_text, value, "overrun")
    level = _field("overrun", check_field, level, "overrun", "overrun", value)
    return _field("overrun", index.at_overrun, level)


def _budget(value: Any, unit: CostUnit) -> tuple[float, bool]:
    """The budget in the store's unit, and whether it was bare (no unit written)."""
    if isinstance(value, str):
        number, written = _field("budget", split_quantity, value, "budget")
        budget = _field("budget", unit.to_store, number, written, "budget")
        return _field("budget", check_field, budget, "budget", "budget", value), written is None
    return unit.to_store(_field("budget", check_budget, value), None, "budget"), True


@dataclass(frozen=True)
class Query:
    """One query read and checked against one snapshot of the index.

    Attributes
    ----------
    index : Index
        The snapshot the answer comes from (at the query's overrun level).
    size, budget : float or None
        The size and the budget in the store's unit (None when the query has none).
    bare : bool
        Whether the budget was given without a unit.
    rule : str
    overrun : float or None
        The level the snapshot is calibrated to (None: uncalibrated).
    unit : CostUnit
        The unit costs are shown in.
    rows : ndarray or None
    """

    index: Index
    size: float | None
    budget: float | None
    bare: bool
    rule: str
    overrun: float | None
    unit: CostUnit
    rows: np.ndarray | None = None

    def head(self) -> dict[str, Any]:
        """The fields every answer starts with, in this order (``unproven`` only for a
        build whose info its seal does not cover: :mod:`polydom.serving.provenance`).
        O(1)."""
        return {"build": self.index.info.get("build_id"), "size": self.size,
                "budget": None if self.budget is None else self.unit.shown(self.budget),
                "unit": self.unit.name, "rule": self.rule, "overrun": self.overrun,
                **unproven_field(self.index.info)}


def read_query(index: Index, fields: Mapping[str, Any],
               need: tuple[str, ...] = ("size", "budget")) -> Query:
    """``fields`` read and checked for ``index`` (one snapshot, taken here).

    Runtime complexity: O(1) (O(rows * columns) with rows; a sweep the first time an
    overrun level is asked).

    Raises
    ------
    polydom.errors.QueryError
        Naming the field: an unknown field, a missing one of ``need``, a value its
        constraint refuses.
    """
    for name in fields:
        if name not in FIELDS:
            raise QueryError(name, f"unknown field {name!r}; a query takes "
                                   f"{', '.join(FIELDS)}")
    for name in need:
        if fields.get(name) is None:
            raise QueryError(name, f"{name} is missing")
    view = _at_overrun(index, fields.get("overrun"))
    store = unit_name(view.info)
    wanted = fields.get("unit")
    unit = _field("unit", cost_unit_for, store, None if wanted is None else str(wanted))
    size = fields.get("size")
    if size is not None:
        size = _field("size", real_from_text, size, "size")
        size = _field("size", check_size, size, *view.table.domain)
    budget, bare = (None, False) if fields.get("budget") is None else _budget(
        fields["budget"], unit)
    rule = _field("rule", view.check_rule, fields.get("rule", "best"))
    rows = fields.get("rows")
    if rows is not None or "rows" in need:
        rows = _field("rows", check_rows, rows, view.n_columns)
    return Query(view, size, budget, bare, rule, _level(view), unit, rows)


@dataclass(frozen=True)
class Answer:
    """The answer to one query: the hit (None: nothing fits), the warning, the labels.

    :meth:`to_dict` is the one record every door prints (``polydom lookup --json``, HTTP
    ``/lookup`` and ``/predict``): the query's head, ``fits``, ``warning`` and ``model``
    (:meth:`polydom.index.built.Hit.to_dict` in the query's unit), and ``labels`` for a
    prediction.
    """

    query: Query
    hit: Hit | None
    warning: str | None
    labels: list | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record, fields in a fixed order.  O(F log F) for F features (+ labels)."""
        out = {**self.query.head(), "fits": self.hit is not None, "warning": self.warning,
               "model": None if self.hit is None else self.hit.to_dict(self.query.unit)}
        if self.query.rows is not None:
            out["labels"] = self.labels
        return out


def _warning(query: Query) -> str | None:
    """A bare budget far from every cost of the skyline at the size (only when bare)."""
    if not query.bare:
        return None
    table = query.index.table
    costs = [entry.cost(query.size) for entry in table.skyline(query.size, check_input=False)]
    return budget_warning(query.budget, costs, query.size, query.unit)


def lookup_answer(index: Index, fields: Mapping[str, Any]) -> Answer:
    """The model for the query's (size, budget): :meth:`polydom.Index.lookup` behind one
    door-independent reading of the fields.

    Runtime complexity: O(log R + d log S), plus O(S) for the warning.

    >>> import polydom
    >>> table = polydom.PolyDomIndex.build([polydom.Candidate("a", 0.9, "2 + n")], 0, 10)
    >>> index = polydom.Index(table, {"x": "2 + n"}, info={"build_id": 1, "cost_unit": "s"})
    >>> answer = lookup_answer(index, {"size": "3", "budget": "5000ms", "unit": "ms"})
    >>> answer.to_dict()["budget"], answer.to_dict()["model"]["cost"]
    (5000.0, 5000.0)
    """
    q = read_query(index, fields)
    hit = q.index.lookup(q.size, q.budget, q.rule, check_input=False)
    return Answer(q, hit, _warning(q))


def predict_answer(index: Index, fields: Mapping[str, Any]) -> Answer:
    """Labels of the query's ``rows`` from the model chosen for its (size, budget); the
    labels keep the type the model gives (a label ``"3"`` stays text).

    Raises
    ------
    polydom.errors.QueryError
        As :func:`read_query`; naming ``budget`` when the model chosen has no fitted model.
    """
    q = read_query(index, fields, ("size", "budget", "rows"))
    hit = q.index.lookup(q.size, q.budget, q.rule, check_input=False)
    labels = None
    if hit is not None:
        if hit.model is None:
            raise QueryError("budget", f"model {hit.name!r} chosen for this budget has no "
                                       "fitted model to predict with", status=409)
        labels = np.asarray(q.index.predict_hit(hit, q.rows, check_input=False)).tolist()
    return Answer(q, hit, _warning(q), labels)


def _entry(entry: SkylineEntry, unit: CostUnit, se: bool) -> dict[str, Any]:
    cand = entry.candidate
    return {"rank": entry.rank, "key": candidate_name(cand.key), "learner": cand.learner,
            "features": sorted(map(str, cand.features), key=natural_key),
            "accuracy": cand.accuracy, "accuracy_se": cand.accuracy_se if se else None,
            "cost": unit.shown(entry.cost), "unit": unit.name, "fits": entry.fits}


def explanation_record(explanation: Explanation, unit: CostUnit | str,
                       standard_errors: bool = True) -> dict[str, Any]:
    """An :class:`Explanation` as the record ``/explain`` answers with (each entry's
    ``accuracy_se`` null when the index has no standard errors).  O(S)."""
    if isinstance(unit, str):
        unit = cost_unit_for(unit, None)
    e, se = explanation, standard_errors
    nxt = e.next_dearer
    return {
        "build": e.build, "size": e.size, "budget": unit.shown(e.budget), "unit": unit.name,
        "range": [e.n_lo, e.n_hi],
        "skyline": [_entry(s, unit, se) for s in e.skyline],
        "chosen": None if e.chosen is None else _entry(e.chosen, unit, se),
        "next_dearer": None if nxt is None else {
            **_entry(nxt, unit, se),
            "extra_budget": None if e.extra_budget is None else unit.shown(e.extra_budget)},
        "reason": e.reason,
        "rule": e.rule,
        "best": None if e.best is None else _entry(e.best, unit, se),
    }


def explain_answer(index: Index, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Why the query is answered as it is: :meth:`polydom.Index.explain` as a record, with
    the overrun level used.  Runtime complexity: O(log R + d * S)."""
    q = read_query(index, fields)
    explanation = q.index.explain(q.size, q.budget, q.rule, check_input=False)
    record = explanation_record(explanation, q.unit,
                                not q.index.info.get("no_standard_errors"))
    return {**record, "overrun": q.overrun, **unproven_field(q.index.info)}
