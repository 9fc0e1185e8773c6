"""Telemetry in the store and recalibration: refused bad records, no retraining, exact sweeps."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import polydom
from polydom.errors import TelemetryError
from polydom.index.lazy_payload import LazyPayload
from storage import IndexStore
from tests.storage_support import (
    COSTS,
    N_MAX,
    feature_sets,
    read_fit_log,
    run_build,
)

#: The build's info: costs in seconds, as the timings are (a store in "units" refuses them).
SECONDS = {"alpha": 1.0, "cost_unit": "s"}


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory):
    """One SQLite store built once for the module (its fits logged), copied per test."""
    folder = tmp_path_factory.mktemp("recalibrate")
    log = str(folder / "fits.log")
    run_build(f"sqlite:///{folder / 'index.db'}", log, info=SECONDS)
    return folder / "index.db", log


@pytest.fixture
def built(store_url, tmp_path, sqlite_template):
    """A store with a published build of real fitted models (every fit logged)."""
    if store_url.startswith("sqlite:///"):
        shutil.copyfile(sqlite_template[0], store_url.removeprefix("sqlite:///"))
        log = str(tmp_path / "fits.log")
        shutil.copyfile(sqlite_template[1], log)
        return store_url, log
    log = str(tmp_path / "fits.log")
    run_build(store_url, log, info=SECONDS)
    return store_url, log


def _slowed_records(factor: float, per_atom: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for atom, curve in COSTS.items():
        for n in rng.uniform(0, N_MAX, per_atom):
            out.append((atom, float(n), float(curve(n) * factor * rng.uniform(0.7, 1.0))))
    return out


def _model(payload):
    """The fitted model behind a payload (stored models load lazily, on first use)."""
    return payload.get() if isinstance(payload, LazyPayload) else payload


def _count(store_url: str) -> int:
    with IndexStore(store_url, create=False) as store:
        return len(store.timings())


@pytest.mark.parametrize(("record", "named"), [
    (("g0", 10.0, float("nan")), "seconds"),
    (("g0", 10.0, -0.5), "seconds"),
    (("g0", N_MAX * 2, 0.5), r"outside build 1's domain \[0, 1000\]"),
    (("g0", -1.0, 0.5), r"size must be finite and >= 0, got -1.0"),
    (("g0", 10.0, 0.0), "seconds must be finite, at least 1e-09 s"),  # a scale of 0: refused
    (("g0", 10.0, 10**400), "seconds must be finite, at least 1e-09 s"),  # was an OverflowError
    (("g0", 10**400, 0.5), "size must be finite"),
    (("nope", 10.0, 0.5), "unknown feature 'nope'"),
    (("g0", "10", 0.5), "size must be a real number"),
])
def test_bad_telemetry_is_refused_naming_it_and_stores_nothing(built, record, named):
    url, _ = built
    good = [("g1", 5.0, 0.1), ("g2", 6.0, 0.2)]
    with pytest.raises(TelemetryError, match=named) as err:
        polydom.store_timings(url, [*good, record])
    assert isinstance(err.value, ValueError)
    assert "record 2" in str(err.value)
    assert _count(url) == 0


def test_timings_are_read_back_in_order_since_an_id_and_newest_per_feature(built):
    url, _ = built
    first, last = polydom.store_timings(url, [("g0", 1.0, 0.1), ("g1", 2.0, 0.2),
                                              ("g0", 3.0, 0.3)])
    assert last - first == 2
    with IndexStore(url, create=False) as store:
        rows = store.timings()
        assert [(r[2], r[3]) for r in rows] == [("g0", 1.0), ("g1", 2.0), ("g0", 3.0)]
        assert [r[3] for r in store.timings(since_id=first)] == [2.0, 3.0]
        assert [r[3] for r in store.timings(last=1)] == [2.0, 3.0]
        assert store.timings(features=["g1"])[0][4] == 0.2


def test_recalibration_never_retrains_a_model_and_readers_switch_on_refresh(
        built, monkeypatch):
    url, log = built
    reader = polydom.open_index(url)
    before = {c.key: _model(c.payload) for c in reader.candidates}
    fits_before = read_fit_log(log)

    def no_fit(*args, **kwargs):
        raise AssertionError("recalibration fitted a model")

    monkeypatch.setattr(LogisticRegression, "fit", no_fit)
    polydom.store_timings(url, _slowed_records(2.0))
    report = polydom.recalibrate(url)
    assert read_fit_log(log) == fits_before
    assert report.from_build == 1 and report.build_id == 2
    assert all(1.3 < s <= 2.0 for s in report.scales.values())
    assert reader.refresh() and reader.info["build_id"] == 2
    X = np.random.default_rng(0).normal(size=(5, 30))
    for cand in reader.candidates:
        old, new = before[cand.key], _model(cand.payload)
        cols = reader.model_columns(cand.needs)
        assert np.array_equal(new.predict(X[:, cols]), old.predict(X[:, cols]))
        assert np.array_equal(new[-1].coef_, old[-1].coef_)


def test_a_recalibrated_build_answers_exactly_as_a_fresh_sweep_on_the_new_curves(built):
    url, _ = built
    polydom.store_timings(url, _slowed_records(3.0, seed=1))
    report = polydom.recalibrate(url)
    index = polydom.open_index(url)
    cands = [polydom.Candidate(c.key, c.accuracy,
                               polydom.CostCurve.total([report.curves[f] for f in c.features]),
                               c.features)
             for c in index.candidates]
    fresh = polydom.PolyDomIndex.build(cands, 0.0, N_MAX)
    sizes = np.repeat(np.linspace(0, N_MAX, 51), 60)
    budgets = np.tile(np.geomspace(1, 20_000, 60), 51)
    assert np.array_equal(index.lookup_many(sizes, budgets), fresh.lookup_many(sizes, budgets))
    assert len(index.candidates) == len(feature_sets())


def test_index_recalibrate_publishes_from_its_own_build_and_refreshes(built):
    url, _ = built
    index = polydom.open_index(url)
    polydom.store_timings(url, _slowed_records(2.0, per_atom=5))  # < min_records: borrowed
    with pytest.raises(ValueError, match="no served timings after id 25"):
        index.recalibrate(since_id=25)
    report = index.recalibrate(min_records=3)
    assert index.info["build_id"] == report.build_id == 2
    assert report.borrowed == [] and index.info["recalibrated"]["records"] == 25
    unbound = polydom.Index(index.table, index.cost_model)
    with pytest.raises(ValueError, match="no store to recalibrate"):
        unbound.recalibrate()


def test_recalibration_keeps_the_overrun_factors_of_a_calibrated_build(built, tmp_path):
    url, _ = built
    index = polydom.open_index(url)
    rng = np.random.default_rng(2)
    n = rng.uniform(0, N_MAX, 40)
    guarded = index.calibrated(n, {a: COSTS[a](n) * rng.uniform(1, 1.5, 40) for a in COSTS})
    with IndexStore(url) as store:
        build_id = store.begin_build({"calibrated_from": 1}, guarded.cost_model)
        store.publish(build_id, guarded)
    polydom.store_timings(url, _slowed_records(2.0, seed=3))
    report = polydom.recalibrate(url)
    after = polydom.open_index(url)
    factors, offsets = guarded.overrun_factors(), guarded.overrun_offsets()
    assert after.overrun_factors().tolist() == factors.tolist()
    assert after.overrun_offsets().tolist() == offsets.tolist()
    for cand, k, d in zip(after.candidates, factors, offsets, strict=True):
        expect = polydom.CostCurve.total([report.curves[f] for f in cand.features]) * float(k)
        expect = expect + float(d)
        assert np.allclose(cand.cost.coefficients, expect.coefficients, rtol=1e-12)


def test_a_store_without_the_telemetry_table_gets_it_on_the_first_record(built):
    url, _ = built
    if not url.startswith("sqlite"):
        pytest.skip("drops the table with sqlite3")
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("DROP TABLE served_timings")
    with IndexStore(url, create=False) as store:
        assert store.timings() == []
    polydom.store_timings(url, [("g0", 1.0, 0.1)])
    assert _count(url) == 1


def test_the_recalibrate_command_publishes_and_says_what_it_scaled(built, capsys):
    from polydom.app.cli import main

    url, _ = built
    polydom.store_timings(url, _slowed_records(2.0))
    assert main(["recalibrate", url, "--last", "30"]) == 0
    out = capsys.readouterr().out
    assert "g0: x" in out and "published build 2" in out
    assert main(["recalibrate", url, "--since-id", "100000"]) == 2
    assert "no served timings after id 100000" in capsys.readouterr().err


def test_timings_are_read_between_ids_and_of_one_build(built):
    url, _ = built
    first, last = polydom.store_timings(url, [("g0", 1.0, 0.1), ("g1", 2.0, 0.2),
                                              ("g0", 3.0, 0.3)])
    with IndexStore(url, create=False) as store:
        assert [r[3] for r in store.timings(until_id=first + 1)] == [1.0, 2.0]
        assert [r[3] for r in store.timings(first, until_id=last)] == [2.0, 3.0]
        assert [r[3] for r in store.timings(build_id=1)] == [1.0, 2.0, 3.0]
        assert store.timings(build_id=2) == []
        with pytest.raises(ValueError, match="until_id must be an integer"):
            store.timings(until_id=-1)


def test_relative_recalibration_scales_by_the_change_not_by_the_curves(built, capsys):
    """Served timings that sit below the curves (a warm context the curves did not time)
    move the plain scale below 1 on a machine that did not change; the relative scale
    compares them with the build's own served timings before ``since_id``: 1 when nothing
    changed, 2 when everything got 2x slower, whatever the served context."""
    url, _ = built
    _, before = polydom.store_timings(url, _slowed_records(0.6, per_atom=60, seed=1))
    _, same = polydom.store_timings(url, _slowed_records(0.6, per_atom=60, seed=2))
    plain = polydom.recalibrate(url, since_id=before)
    assert all(s < 0.7 for s in plain.scales.values())  # the curves "moved down"
    # from build 1 again: nothing changed since `before`
    still = polydom.recalibrate(url, since_id=before, relative=True, build=1)
    assert all(0.85 < s < 1.15 for s in still.scales.values())
    unchanged = polydom.recalibrate(url, since_id=before, relative=True, build=1,
                                    min_change=1.2)
    assert not unchanged.published and unchanged.build_id == 1
    polydom.store_timings(url, _slowed_records(1.2, per_atom=60, seed=3))
    slower = polydom.recalibrate(url, since_id=same, relative=True, build=1)
    assert all(1.7 < s < 2.3 for s in slower.scales.values())
    assert not slower.borrowed
    changed = polydom.recalibrate(url, since_id=same, relative=True, build=1, min_change=1.2)
    assert changed.published and changed.build_id > slower.build_id
    with pytest.raises(ValueError, match="min_change must be a number >= 1 with relative"):
        polydom.recalibrate(url, since_id=same, min_change=1.2)
    with pytest.raises(ValueError, match="relative=True .* needs since_id >= 1"):
        polydom.recalibrate(url, relative=True)
    with pytest.raises(ValueError, match="no refit"):
        polydom.recalibrate(url, since_id=same, relative=True, refit=True)
    from polydom.app.cli import main

    assert main(["recalibrate", url, "--since-id", str(same), "--relative",
                 "--build", "1"]) == 0
    assert "published build" in capsys.readouterr().out
