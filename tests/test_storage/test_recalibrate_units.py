"""Recalibration honours the store's cost unit (issue 28 item 2) and refuses telemetry that
would poison the index (issue 31 item 4): timings are seconds whatever the store's unit."""

from __future__ import annotations

import importlib
import sqlite3

import numpy as np
import pytest

import learners
import polydom
import polydom.pipeline.recalibrate
from polydom.app.cli import main
from polydom.errors import CurrentBuildChangedError, TelemetryError

#: Seconds per unit of each store.
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
#: The curves in seconds: what the build believes a feature costs.
BELIEVED = {"a": (1e-3, 1e-3), "b": (2e-3, 0.0)}  # c0 + c1 * n
SLOWER = 2.0  # the machine serving is twice as slow as the curves say


def _curve_text(atom: str, per_unit: float) -> str:
    c0, c1 = (c / per_unit for c in BELIEVED[atom])
    return f"{c0!r} + {c1!r}*n"


def _build(path, unit: str) -> str:
    per_unit = UNITS.get(unit, 1.0)
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.7,
           frozenset({"a", "b"}): 0.9}
    url = f"sqlite:///{path}"
    polydom.build_index({a: _curve_text(a, per_unit) for a in BELIEVED},
                        learners.SyntheticLearner(acc.get), n_max=100.0, store=url,
                        cost_unit=unit)
    return url


def _timings(seed: int = 0, per_atom: int = 60) -> list[tuple[str, float, float]]:
    """Served timings in seconds: SLOWER times the believed curves, less up to 2%."""
    rng = np.random.default_rng(seed)
    out = []
    for atom, (c0, c1) in BELIEVED.items():
        for n in rng.uniform(0.0, 100.0, per_atom):
            out.append((atom, float(n), SLOWER * (c0 + c1 * n) * rng.uniform(0.98, 1.0)))
    return out


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_recalibrated_curves_are_within_2_percent_of_the_truth_in_every_unit(tmp_path, unit):
    url = _build(tmp_path / "s.db", unit)
    polydom.store_timings(url, _timings())
    report = polydom.recalibrate(url)
    index = polydom.open_index(url)
    assert index.info["build_id"] == report.build_id and index.info["cost_unit"] == unit
    for atom, (c0, c1) in BELIEVED.items():
        for n in (0.0, 10.0, 50.0, 100.0):
            truth = SLOWER * (c0 + c1 * n) / UNITS[unit]  # in the store's unit
            assert float(index.costs[atom](n)) == pytest.approx(truth, rel=0.02), (atom, n)
        assert report.scales[atom] == pytest.approx(SLOWER, rel=0.02)


def test_a_unitless_store_refuses_timings_in_one_line(tmp_path, capsys):
    url = _build(tmp_path / "u.db", "units")
    with pytest.raises(TelemetryError, match="'units', not a unit of time") as err:
        polydom.store_timings(url, _timings())
    assert "\n" not in str(err.value)
    # timings that reached such a store anyway (an older version wrote them): recalibrate
    # refuses them too, in one line, and publishes nothing
    with sqlite3.connect(tmp_path / "u.db") as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS served_timings (id INTEGER PRIMARY KEY, "
                     "build_id INTEGER NOT NULL, feature TEXT NOT NULL, size FLOAT NOT NULL, "
                     "seconds FLOAT NOT NULL, recorded_at TIMESTAMP)")
        conn.executemany("INSERT INTO served_timings (build_id, feature, size, seconds, "
                         "recorded_at) VALUES (1, ?, ?, ?, '2026-01-01 00:00:00')", _timings())
    assert main(["recalibrate", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "not a unit of time" in err
    assert polydom.open_index(url).info["build_id"] == 1


@pytest.mark.parametrize("build", [2**70, 0, -3, True, 1.5])
def test_a_build_id_no_database_holds_is_a_telemetry_error(tmp_path, build):
    url = _build(tmp_path / "s.db", "s")
    with pytest.raises(TelemetryError, match="build must be an integer"):
        polydom.store_timings(url, _timings(), build=build)


def test_a_since_id_beyond_a_database_integer_is_one_line(tmp_path, capsys):
    url = _build(tmp_path / "s.db", "s")
    polydom.store_timings(url, _timings())
    assert main(["recalibrate", url, "--since-id", str(10**25)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "since_id" in err
    assert "OverflowError" not in err


def test_a_build_published_while_a_recalibration_runs_is_never_replaced(tmp_path,
                                                                         monkeypatch):
    R = importlib.import_module("polydom.pipeline.recalibrate")  # the module, not the function
    url = _build(tmp_path / "s.db", "s")
    polydom.store_timings(url, _timings())
    refit = R._refit_atoms

    def meanwhile(*args, **kwargs):  # another writer publishes while the curves are refit
        polydom.pipeline.recalibrate.publish_index(url, polydom.open_index(url),
                                                   {"note": "published meanwhile"})
        return refit(*args, **kwargs)

    monkeypatch.setattr(R, "_refit_atoms", meanwhile)
    with pytest.raises(CurrentBuildChangedError, match="build 2 is current now") as err:
        polydom.recalibrate(url)
    assert "\n" not in str(err.value)
    assert polydom.open_index(url).info["build_id"] == 2  # the newer build stays current
    statuses = {b.build_id: b.status for b in polydom.list_builds(url)}
    assert statuses == {1: "complete", 2: "complete", 3: "failed"}


def test_an_index_recalibrates_only_over_its_own_build(tmp_path):
    url = _build(tmp_path / "s.db", "s")
    polydom.store_timings(url, _timings())
    old = polydom.open_index(url, build=1)
    polydom.pipeline.recalibrate.publish_index(url, polydom.open_index(url), {"note": "newer"})
    with pytest.raises(CurrentBuildChangedError):
        old.recalibrate()
    assert polydom.open_index(url).info["build_id"] == 2
    # asked for explicitly, an older build may replace the current one (nothing changed
    # while it ran)
    report = polydom.recalibrate(url, build=1)
    assert polydom.open_index(url).info["build_id"] == report.build_id


def test_timings_name_their_build_and_store(tmp_path):
    import functools

    from polydom.index.item_prediction import ItemPrediction
    from polydom.serving.timing_recorder import TimingRecorder

    served = _build(tmp_path / "served.db", "s")
    other = _build(tmp_path / "other.db", "ms")  # same features, a build 1 of its own
    index = polydom.open_index(served)
    assert polydom.open_index(other).info["build_id"] == index.info["build_id"] == 1
    assert index.info["seal"] and index.info["seal"] != polydom.open_index(other).info["seal"]
    # a recorder of the served index writing through --timings-store to the other store
    recorder = TimingRecorder(functools.partial(polydom.store_timings, other))
    recorder.record(index, ItemPrediction(label=1, feature_seconds={"a": 0.01}, size=5.0))
    assert recorder.flush() == 0 and recorder.dropped["write_error"] == 1
    with pytest.raises(TelemetryError, match="another store's build"):
        polydom.store_timings(other, [("a", 5.0, 0.01)], build=1, seal=index.info["seal"])
    assert polydom.open_index(other).info["build_id"] == 1
    from storage import IndexStore

    with IndexStore(other, read_only=True) as store:
        assert store.timings() == []
    # to its own store they go
    mine = TimingRecorder(functools.partial(polydom.store_timings, served))
    mine.record(index, ItemPrediction(label=1, feature_seconds={"a": 0.01}, size=5.0))
    assert mine.flush() == 1
