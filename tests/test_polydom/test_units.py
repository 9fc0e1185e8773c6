"""The one conversion path of cost units (polydom.curves.units): budgets with units, costs
shown in another unit, timings in seconds into the store's unit, budgets in the wrong unit."""

from __future__ import annotations

import pytest

from polydom.curves.units import (
    WRONG_UNIT_RATIO,
    budget_warning,
    check_unit_text,
    cost_unit_for,
    parse_budget,
    seconds_to_store,
    split_quantity,
)
from polydom.errors import InvalidArgumentError


@pytest.mark.parametrize("text, seconds", [
    ("5ms", 5e-3), ("1e-05ms", 1e-8), ("2.5e-3s", 2.5e-3), ("1e-5", 1e-5), ("3 us", 3e-6),
    (" 0.5 ", 0.5), ("7E2ns", 7e-7), ("0", 0.0), (".25s", 0.25),
])
def test_budget_texts_with_and_without_a_unit_read_into_a_store_in_seconds(text, seconds):
    assert parse_budget(text, cost_unit_for("s", None)) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("store, text, value", [
    ("ms", "5ms", 5.0), ("ms", "2.5e-3s", 2.5), ("ms", "3", 3.0), ("us", "1e-05ms", 1e-2),
    ("us", "2", 2.0), ("units", "4 units", 4.0), ("units", "4", 4.0),
])
def test_a_bare_budget_is_read_in_the_store_unit_and_a_written_one_converted(store, text, value):
    assert parse_budget(text, cost_unit_for(store, None)) == pytest.approx(value, rel=1e-12)


def test_a_bare_budget_is_read_in_the_unit_costs_are_shown_in():
    # --unit ms on a store in s: costs are printed in ms, so a bare budget is in ms too
    assert parse_budget("250", cost_unit_for("s", "ms")) == pytest.approx(0.25)


@pytest.mark.parametrize("text, message", [
    ("5 parsecs", "unknown unit 'parsecs'"),
    ("abc", "budget must be a number with an optional unit (0.5, 5ms, 2.5e-3s), got 'abc'"),
    ("-1ms", "budget must be finite and >= 0, got '-1ms'"),
    ("nan", "budget must be finite and >= 0"),
    ("inf s", "budget must be finite and >= 0"),
    ("1e400", "budget must be finite and >= 0"),
    ("5ms ms", "budget must be a number"),
    ("1" * 500, "budget must be a number"),
])
def test_bad_budget_texts_are_refused_in_one_line_naming_the_text(text, message):
    with pytest.raises(InvalidArgumentError) as err:
        parse_budget(text, cost_unit_for("s", None))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_time_unit_on_a_unitless_store_is_refused():
    with pytest.raises(InvalidArgumentError, match="not a unit of time"):
        parse_budget("5ms", cost_unit_for("units", None))


def test_a_budget_that_overflows_in_the_store_unit_is_refused():
    with pytest.raises(InvalidArgumentError, match="overflows"):
        parse_budget("1e300s", cost_unit_for("ns", None))


def test_split_quantity_keeps_the_unit_text():
    assert split_quantity("770ms") == (770.0, "ms")
    assert split_quantity("1e-5") == (1e-5, None)


@pytest.mark.parametrize("store, factor", [("s", 1.0), ("ms", 1e3), ("us", 1e6), ("ns", 1e9),
                                           ("\u00b5s", 1e6), ("\u03bcs", 1e6)])
def test_seconds_convert_into_every_time_unit(store, factor):
    assert seconds_to_store(store) == pytest.approx(factor)


def test_a_unitless_store_refuses_timings_in_seconds_in_one_line():
    with pytest.raises(InvalidArgumentError) as err:
        seconds_to_store("units")
    text = str(err.value)
    assert "'units'" in text and "not a unit of time" in text and "\n" not in text


def test_costs_are_shown_in_the_unit_asked_for():
    assert cost_unit_for("ms", "s").shown(46.0) == pytest.approx(0.046)
    assert cost_unit_for("ms", "us").shown(46.0) == pytest.approx(46000.0)
    with pytest.raises(InvalidArgumentError, match="--unit"):
        cost_unit_for("units", "ms")


def test_a_budget_ten_times_away_from_every_stored_cost_is_named():
    # The demo's tables are in ms: 2 (ms) read on a store in s is 2 s, 100x the dearest
    # model's cost (0.02 s).  The old rule only warned at 1000x.
    unit = cost_unit_for("s", None)
    costs = [0.0, 0.002, 0.02]
    warning = budget_warning(2.0, costs, 64.0, unit)
    assert warning is not None and "100 times" in warning and "2 s" in warning
    assert "\n" not in warning
    assert budget_warning(WRONG_UNIT_RATIO * 0.02, costs, 64.0, unit) is not None
    assert budget_warning(0.19, costs, 64.0, unit) is None
    assert budget_warning(0.002, costs, 64.0, unit) is None
    # 10x below the cheapest positive cost: as suspicious (ms written for a store in us)
    below = budget_warning(1e-4, costs, 64.0, unit)
    assert below is not None and "below" in below
    assert budget_warning(0.0, costs, 64.0, unit) is None  # a zero budget asks for free


@pytest.mark.parametrize("unit", ["x" * 33, "<script>alert(1)</script>", "s\nfake", "ms'",
                                  "\x1b[31m"])
def test_build_index_refuses_a_unit_text_that_cannot_be_printed_safely(tmp_path, unit):
    import learners
    import polydom

    path = tmp_path / "u.db"
    with pytest.raises(InvalidArgumentError, match="cost_unit must be at most 32 letters"):
        polydom.build_index({"a": "1 + n"}, learners.SyntheticLearner(lambda s: 0.5),
                            n_max=10.0, store=str(path), cost_unit=unit)
    assert not path.exists()  # refused before the store is touched


@pytest.mark.parametrize("unit", ["s", "ms", "µs", "units", "kJ/item", "cost units"])
def test_ordinary_unit_texts_are_kept(unit):
    assert check_unit_text(unit) == unit


@pytest.mark.parametrize("text", ["500000\u00b5s", "500000\u03bcs", "500000us", "500 ms",
                                  "0.5s", "5e8ns"])
def test_every_spelling_of_the_grammar_reads_the_same_budget(text):
    # the micro sign (U+00B5) and the Greek mu (U+03BC) both spell microseconds
    assert parse_budget(text, cost_unit_for("s", None)) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("text, meant", [("2.5MS", "ms"), ("2.5Ms", "ms"), ("2.5msec", "ms"),
                                         ("2.5S", "s"), ("3 seconds", "s"), ("1US", "us")])
def test_spellings_outside_the_grammar_are_refused_naming_the_one_it_takes(text, meant):
    # MS and Ms are megaseconds in SI: never read as milliseconds
    with pytest.raises(InvalidArgumentError) as err:
        parse_budget(text, cost_unit_for("s", None))
    message = str(err.value)
    assert "unknown unit" in message and f"write {meant!r}" in message
    assert "\n" not in message


@pytest.mark.parametrize("unit", ["MS", "msec", "Seconds", "US"])
def test_a_store_unit_outside_the_grammar_is_refused_at_build(unit):
    with pytest.raises(InvalidArgumentError, match="spells a unit of time"):
        check_unit_text(unit)
