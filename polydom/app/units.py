"""Cost units on the command line: converting the store's costs to the unit asked for, reading
budgets in it, and warning about a budget that can only be in the wrong unit.

A store keeps its costs in one unit (``info["cost_unit"]``, free text: ``"s"``, ``"ms"``,
``"units"``).  Time units convert into each other; any other unit only into itself.
Standard library only (the CLI imports it before parsing arguments).
"""

from __future__ import annotations

from dataclasses import dataclass

from polydom.errors import InvalidArgumentError

__all__ = ["ABSURD_RATIO", "SECONDS", "CostUnit", "budget_warning", "cost_unit_for"]

#: Seconds per time unit, under the names a store or a user may write.
SECONDS = {
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "us": 1e-6, "µs": 1e-6, "usec": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ns": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
}

#: A budget this many times the dearest candidate's cost at the size gets a warning.
ABSURD_RATIO = 1000.0


@dataclass(frozen=True)
class CostUnit:
    """The unit costs are printed (and budgets read) in, against the store's own unit.

    Attributes
    ----------
    name : str
        The unit shown next to every cost.
    store : str
        The store's unit.
    scale : float
        A cost in the store's unit times ``scale`` is the cost in ``name``.
    """

    name: str
    store: str
    scale: float

    def shown(self, cost: float) -> float:
        """A cost in the store's unit, in this unit.  O(1)."""
        return cost * self.scale

    def to_store(self, value: float, unit: str | None, what: str) -> float:
        """``value`` written in ``unit`` (None: this unit) in the store's unit.

        Raises
        ------
        ValueError
            Naming ``what`` when ``unit`` does not convert into the store's unit.
        """
        if unit is None:
            return value / self.scale
        return value * _scale(self.store, unit, what)


def _scale(store: str, unit: str, what: str) -> float:
    """Factor turning a cost in ``unit`` into the store's unit ``store``."""
    if unit == store:
        return 1.0
    mine, theirs = SECONDS.get(store.strip().lower()), SECONDS.get(unit.strip().lower())
    if mine is not None and theirs is not None:
        return theirs / mine
    if theirs is None and unit.strip().lower() != store.strip().lower():
        raise InvalidArgumentError(
            f"{what}: unknown unit {unit!r}; use s, ms, us, ns or the store's "
            f"own unit {store!r}")
    if mine is None and theirs is not None:
        raise InvalidArgumentError(
            f"{what}: the store's costs are in {store!r}, not a unit of time, so "
            f"they cannot be given in {unit!r}; use {store!r}")
    return 1.0


def cost_unit_for(store_unit: str, wanted: str | None) -> CostUnit:
    """The :class:`CostUnit` of ``--unit wanted`` (None: the store's own unit).

    >>> cost_unit_for("s", "ms").shown(0.25)
    250.0
    >>> cost_unit_for("ms", None).to_store(0.77, "s", "--budget")
    770.0

    Raises
    ------
    ValueError
        Naming ``--unit`` when ``wanted`` is unknown or does not convert.
    """
    if wanted is None:
        return CostUnit(store_unit, store_unit, 1.0)
    factor = _scale(store_unit, wanted, "--unit")
    return CostUnit(wanted.strip(), store_unit, 1.0 / factor)


def budget_warning(budget: float, dearest: float, size: float, unit: CostUnit) -> str | None:
    """A one-line warning when ``budget`` (store unit) is :data:`ABSURD_RATIO` or more times
    ``dearest``, the cost at ``size`` of the dearest model on the skyline (the one every
    larger budget gets), else None: such a budget is most likely written in another unit (a
    number read off a table in ms for a store in s).

    Runtime complexity: O(1).
    """
    if not dearest > 0.0 or budget < ABSURD_RATIO * dearest:
        return None
    ratio = budget / dearest
    hint = (" (write it with its unit, e.g. 0.77ms, or pass --unit)"
            if unit.store.strip().lower() in SECONDS else "")
    return (f"warning: budget {unit.shown(budget):.6g} {unit.name} is {ratio:.3g} times the "
            f"cost of the dearest useful model at size {size:g} "
            f"({unit.shown(dearest):.6g} {unit.name}); costs are in {unit.name} (store unit "
            f"{unit.store!r}): is the budget in another unit?{hint}")
