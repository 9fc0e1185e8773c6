"""Cost units: the one conversion path between timings, the store's costs, budgets and what
is printed.

A store keeps its costs in one unit (``info["cost_unit"]``, free text: ``"s"``, ``"ms"``,
``"us"``, ``"units"``).  Time units convert into each other; any other unit only into
itself.  Every door goes through this module:

* timings (always measured in seconds) into the store's unit: :func:`seconds_to_store`
  (a store whose unit is not a unit of time refuses them);
* a budget written as text with an optional unit (``5ms``, ``1e-05ms``, ``2.5e-3s``,
  ``3 us``, ``1e-5``) into the store's unit: :func:`parse_budget` (a bare number is in the
  unit the costs are shown in, by default the store's own);
* a cost in the store's unit into the unit it is shown in: :meth:`CostUnit.shown`;
* a budget far from every stored cost at its size is named: :func:`budget_warning`.

The unit grammar (one parser, every door: Python, the command line, HTTP, browse):

* a quantity is a number, optional blanks, then an optional unit: ``0.77``, ``770ms``,
  ``3 us``, ``2.5e-3s``;
* the units of time are exactly ``s``, ``ms``, ``us``, ``ns`` and, for microseconds, ``µs``
  (U+00B5 MICRO SIGN) and ``μs`` (U+03BC GREEK SMALL LETTER MU), which Unicode folds into
  one another; letters are case-sensitive, as in SI: ``MS`` and ``Ms`` would be
  megaseconds, ``mS`` millisiemens, so they are refused rather than guessed, and so are
  words (``msec``, ``seconds``): one spelling per unit keeps a log, a config and a query
  string readable by a grep;
* any other unit is a store's own (``units``, ``kJ/item``) and converts only into itself,
  written exactly as the store writes it;
* a bare number is in the unit the costs are shown in (the store's own by default).

Standard library only (the command line imports it before parsing arguments).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from polydom.curves.domain import check_field
from polydom.errors import InvalidArgumentError, TelemetryError

__all__ = [
    "DEFAULT_UNIT",
    "MAX_TIMING_SECONDS",
    "MIN_TIMING_SECONDS",
    "SECONDS",
    "WRONG_UNIT_RATIO",
    "CostUnit",
    "budget_warning",
    "check_seconds",
    "check_unit_text",
    "converted",
    "check_size_value",
    "cost_unit_for",
    "parse_budget",
    "seconds_to_store",
    "split_quantity",
    "time_unit_seconds",
    "unit_name",
    "without_noise",
]

#: Seconds per time unit, under the only spellings the grammar takes (see the module's
#: docstring): case-sensitive, the micro sign and the Greek mu both.
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ns": 1e-9}

#: Spellings of a time unit the grammar refuses, with the one it takes instead (named in
#: the refusal, so a user learns the grammar from the error).
_NOT_A_SPELLING = {
    **{w: "s" for w in ("sec", "secs", "second", "seconds")},
    **{w: "ms" for w in ("msec", "msecs", "millisecond", "milliseconds")},
    **{w: "us" for w in ("usec", "usecs", "microsecond", "microseconds")},
    **{w: "ns" for w in ("nsec", "nsecs", "nanosecond", "nanoseconds")},
}

#: A budget this many times above or below every stored cost at its size is named in a
#: warning (most likely written in another unit: 2 read off a table in ms for a store in s).
WRONG_UNIT_RATIO = 10.0

#: The longest timing of one feature on one item a store takes (a day): a longer one is a
#: broken clock or a forged record, and would scale every curve by it.
MAX_TIMING_SECONDS = 86_400.0

#: The shortest timing a store takes (a nanosecond, the resolution of the finest clock a
#: server has): a shorter one, like ``5e-324``, is no measurement, and would scale a curve
#: to (almost) zero, which no later timing can bring back.
MIN_TIMING_SECONDS = 1e-9

#: Unit of costs when a build does not say (``polydom.build_index``'s default).
DEFAULT_UNIT = "units"

_QUANTITY = re.compile(
    r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan))"
    r"\s*([^\d\s.+-][^\s]*)?\s*",
    re.IGNORECASE,
)


#: What a store's unit may be written with: letters (``µ`` too), digits, blanks and
#: ``/*^.%()+-_``, at most 32 characters (``ms``, ``µs``, ``units``, ``kJ/item``).  It is printed
#: next to every cost, in terminals, HTML pages and plots.
_UNIT_TEXT = re.compile(r"[\w µ/*^.%()+-]{1,32}")


def check_unit_text(unit: str, what: str = "cost_unit") -> str:
    """``unit`` when a store may keep it as its cost unit (:data:`_UNIT_TEXT`), else an
    error naming ``what``.  O(len(unit)).

    >>> check_unit_text("ms")
    'ms'

    Raises
    ------
    polydom.errors.InvalidArgumentError
        When it is longer than 32 characters or holds other characters (markup, control
        characters, quotes).
    """
    if not _UNIT_TEXT.fullmatch(unit):
        raise InvalidArgumentError(
            f"{what} must be at most 32 letters, digits, blanks or /*^.%()+-_ (such as 's', "
            f"'ms', 'units'), got {_shown(unit)}")
    meant = _misspelt(unit)
    if meant is not None:
        raise InvalidArgumentError(
            f"{what} {unit!r} spells a unit of time the grammar does not take (units are "
            f"case-sensitive and spelt one way): write {meant!r}")
    return unit


def unit_name(info: object) -> str:
    """The cost unit a build's ``info`` carries (``"units"`` for a build that does not say).

    >>> unit_name({"cost_unit": "ms"}), unit_name({})
    ('ms', 'units')
    """
    unit = info.get("cost_unit") if isinstance(info, dict) else None
    return unit if isinstance(unit, str) and unit.strip() else DEFAULT_UNIT


def time_unit_seconds(unit: str) -> float | None:
    """Seconds per ``unit`` when it is a unit of time of the grammar, else None.  O(1).

    >>> time_unit_seconds("ms"), time_unit_seconds("\u03bcs"), time_unit_seconds("MS")
    (0.001, 1e-06, None)
    """
    return SECONDS.get(unit.strip())


_time = time_unit_seconds


def _misspelt(unit: str) -> str | None:
    """The grammar's spelling of ``unit`` when ``unit`` spells a time unit another way
    (``msec``, ``MS``, ``Ms``), else None."""
    text = unit.strip()
    if text in SECONDS:
        return None
    folded = text.lower().replace("\u00b5", "u").replace("\u03bc", "u")
    if folded in SECONDS:
        return folded
    return _NOT_A_SPELLING.get(folded)


@dataclass(frozen=True)
class CostUnit:
    """The unit costs are printed (and bare budgets read) in, against the store's own unit.

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
        """A cost in the store's unit, in this unit, without the conversion's float noise
        (:func:`converted`).  O(1).

        >>> cost_unit_for("s", "ms").shown(0.018)
        18.0
        """
        return converted(cost, self.scale)

    def to_store(self, value: float, unit: str | None, what: str) -> float:
        """``value`` written in ``unit`` (None: this unit) in the store's unit.  O(1).

        Raises
        ------
        polydom.errors.InvalidArgumentError
            Naming ``what`` when ``unit`` does not convert into the store's unit.
        """
        if unit is None:
            return converted(value, 1.0 / self.scale)
        return converted(value, _scale(self.store, unit, what))


def converted(value: float, factor: float) -> float:
    """``value * factor`` for a unit conversion (``factor`` a power of ten or its ratio),
    rounded to 15 significant digits so the conversion adds no float noise (``18 ms`` is
    ``0.018 s`` and back ``18``, not ``18.000000000000004``); ``factor == 1`` returns
    ``value`` itself.  O(1).

    >>> converted(18.0, 1e-3), converted(0.018, 1e3), converted(2.5, 1.0)
    (0.018, 18.0, 2.5)
    """
    if factor == 1.0:
        return value
    return without_noise(value * factor)


def without_noise(value: float) -> float:
    """``value`` rounded to 15 significant digits (what a float holds exactly in decimal),
    so an answer prints ``6.3357``, not ``6.335700000000001``; non-finite values as they
    are.  O(1).

    >>> without_noise(6.335700000000001), without_noise(0.1 + 0.2)
    (6.3357, 0.3)
    """
    return float(f"{value:.15g}") if math.isfinite(value) else value


def _scale(store: str, unit: str, what: str) -> float:
    """Factor turning a cost in ``unit`` into the store's unit ``store``."""
    mine, theirs = _time(store), _time(unit)
    if mine is not None and theirs is not None:
        return theirs / mine
    if unit.strip() == store.strip():
        return 1.0
    if theirs is None:
        meant = _misspelt(unit)
        hint = (f" (units are case-sensitive and spelt one way: write {meant!r})"
                if meant is not None else "")
        raise InvalidArgumentError(
            f"{what}: unknown unit {_shown(unit)}{hint}; use s, ms, us (or \u00b5s, "
            f"\u03bcs), ns or the store's own unit {store!r}")
    raise InvalidArgumentError(
        f"{what}: the store's costs are in {store!r}, not a unit of time, so "
        f"they cannot be given in {unit!r}; use {store!r}")


def cost_unit_for(store_unit: str, wanted: str | None) -> CostUnit:
    """The :class:`CostUnit` of ``--unit wanted`` (None: the store's own unit).  O(1).

    >>> cost_unit_for("s", "ms").shown(0.25)
    250.0
    >>> cost_unit_for("ms", None).to_store(0.77, "s", "--budget")
    770.0

    Raises
    ------
    polydom.errors.InvalidArgumentError
        Naming ``--unit`` when ``wanted`` is unknown or does not convert.
    """
    if wanted is None:
        return CostUnit(store_unit, store_unit, 1.0)
    factor = _scale(store_unit, wanted, "--unit")
    return CostUnit(wanted.strip(), store_unit, 1.0 / factor)


def seconds_to_store(store_unit: str, what: str = "timings") -> float:
    """Factor turning measured seconds into costs in ``store_unit``.  O(1).

    >>> seconds_to_store("ms"), seconds_to_store("s")
    (1000.0, 1.0)

    Raises
    ------
    polydom.errors.InvalidArgumentError
        Naming ``what`` when the store's unit is not a unit of time (``"units"``): its
        costs cannot be compared with seconds.
    """
    mine = _time(store_unit)
    if mine is None:
        raise InvalidArgumentError(
            f"{what}: the store's costs are in {store_unit!r}, not a unit of time, so "
            "timings in seconds cannot be compared with them (build with cost_unit = "
            "'s', 'ms' or 'us' to serve or recalibrate from timings)")
    return 1.0 / mine


def check_size_value(value: Any, what: str = "size") -> float:
    """A timed item's size as a float: a real number, finite and >= 0 (the domain is the
    caller's check).  O(1).

    Raises
    ------
    polydom.errors.TelemetryError
        Naming ``what`` and the value.
    """
    try:
        return check_field(value, what, "size")
    except (InvalidArgumentError, TypeError) as exc:
        raise TelemetryError(str(exc)) from None


def check_seconds(value: Any, what: str = "seconds") -> float:
    """A measured timing as a float: a real number, finite, in
    [:data:`MIN_TIMING_SECONDS`, :data:`MAX_TIMING_SECONDS`] (a nanosecond to a day).  O(1)
    (O(digits) for a huge integer).

    A timing of 0 would scale a curve to 0, which no later timing can bring back (a scale is
    a ratio to the curve); so it is refused with the rest.

    >>> check_seconds(0.002)
    0.002

    Raises
    ------
    polydom.errors.TelemetryError
        Naming ``what`` and the value (cut to 80 characters).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TelemetryError(f"{what} must be a number, got {_shown(value)}")
    try:
        v = float(value)
    except OverflowError:  # an integer beyond a float: 10**400
        v = math.inf
    if not (math.isfinite(v) and MIN_TIMING_SECONDS <= v <= MAX_TIMING_SECONDS):
        raise TelemetryError(
            f"{what} must be finite, at least {MIN_TIMING_SECONDS:g} s and at most "
            f"{MAX_TIMING_SECONDS:g} s, got {_shown(value)}")
    return v


def _shown(value: Any) -> str:
    """``repr(value)`` cut to 80 characters (an integer too long to print: its bit length)."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit
        return f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 80 else text[:77] + "..."


def split_quantity(text: str, what: str = "budget") -> tuple[float, str | None]:
    """A finite number >= 0 with an optional unit after it: ``0.77``, ``770ms``,
    ``2.5e-3s``, ``1e-05ms``, ``3 us``.  O(len(text)).

    Returns the number and the unit text (None when none is written); whether the unit
    converts into a store's is :func:`parse_budget`'s check.

    >>> split_quantity("770ms"), split_quantity("1e-5"), split_quantity("2.5e-3 s")
    ((770.0, 'ms'), (1e-05, None), (0.0025, 's'))

    Raises
    ------
    polydom.errors.InvalidArgumentError
        Naming ``what`` and the text when it is not such a number.
    """
    match = _QUANTITY.fullmatch(text) if isinstance(text, str) and len(text) <= 200 else None
    if match is None:
        shown = text[:80] if isinstance(text, str) else text
        raise InvalidArgumentError(
            f"{what} must be a number with an optional unit (0.5, 5ms, 2.5e-3s), got "
            f"{shown!r}")
    value = check_field(float(match.group(1)), what, "budget", given=text[:80])
    return value, match.group(2)


def parse_budget(text: str, unit: CostUnit, what: str = "budget") -> float:
    """A budget written as text (an optional unit after the number) in the store's unit.

    A bare number is read in ``unit.name`` (the unit costs are shown in: the store's own
    unless asked otherwise).  O(len(text)).

    >>> parse_budget("5ms", cost_unit_for("s", None)), parse_budget("3", cost_unit_for("ms", None))
    (0.005, 3.0)

    Raises
    ------
    polydom.errors.InvalidArgumentError
        Naming ``what`` when the text is not a number >= 0 with a unit that converts.
    """
    value, written = split_quantity(text, what)
    budget = unit.to_store(value, written, what)
    if not math.isfinite(budget):
        raise InvalidArgumentError(f"{what} {text[:80]!r} overflows in the store's unit "
                                   f"{unit.store!r}")
    return budget


def budget_warning(budget: float, costs: Iterable[float], size: float,
                   unit: CostUnit) -> str | None:
    """A one-line warning when ``budget`` (store unit) is :data:`WRONG_UNIT_RATIO` times or
    more away from every positive cost in ``costs`` (the stored costs at ``size``: above
    the dearest or below the cheapest positive one), else None: such a budget is most
    likely written in another unit (a number read off a table in ms for a store in s).

    Runtime complexity: O(len(costs)).

    >>> budget_warning(2.0, [0.001, 0.01], 64, cost_unit_for("s", None)) is not None
    True
    >>> budget_warning(0.02, [0.001, 0.01], 64, cost_unit_for("s", None)) is None
    True
    """
    positive = [c for c in costs if c > 0.0 and math.isfinite(c)]
    if not positive or budget == 0.0:  # budget was checked (>= 0): 0 asks for free
        return None
    low, high = min(positive), max(positive)
    if budget >= WRONG_UNIT_RATIO * high:
        ratio, where, near = budget / high, "times the cost of the dearest", high
    elif budget * WRONG_UNIT_RATIO <= low:
        ratio, where, near = low / budget, "times below the cost of the cheapest", low
    else:
        return None
    hint = (" (write it with its unit, e.g. 0.77ms)" if _time(unit.store) is not None else "")
    return (f"warning: budget {unit.shown(budget):.6g} {unit.name} is {ratio:.3g} {where} "
            f"model at size {size:g} ({unit.shown(near):.6g} {unit.name}); costs are in "
            f"{unit.name} (store unit {unit.store!r}) and so are bare budgets: is it in "
            f"another unit?{hint}")
