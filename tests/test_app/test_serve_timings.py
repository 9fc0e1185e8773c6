"""`polydom serve` feeds served timings to telemetry, and `polydom recalibrate` learns from them.

The real app (:func:`polydom.app.service.make_app` in Starlette's TestClient, lifespan run)
serves raw breast-cancer items with a real featurizer and trained models; the feature
timings of every served item end up in the store's ``served_timings`` (written by the
background task, here only by its flush at shutdown), ``polydom recalibrate`` publishes a
build from them, and the running service switches to it.  A telemetry store that cannot be
written never fails a request.  The command line's ``--record-timings`` flushes at a clean
shutdown (SIGTERM).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

from prometheus_client import generate_latest  # noqa: E402

import polydom  # noqa: E402
from polydom.app.cli import main  # noqa: E402
from polydom.app.service import flush_periodically, key_text, make_app  # noqa: E402
from polydom.index.item_prediction import ItemPrediction  # noqa: E402
from polydom.pipeline.recalibrate import robust_scale  # noqa: E402
from polydom.serving.timing_recorder import TimingRecorder  # noqa: E402
from storage import IndexStore  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests import storage_support as S  # noqa: E402

with warnings.catch_warnings():  # starlette 1.x asks for the httpx2 fork; httpx works
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.timeout(300)

#: Long enough that only the flush at shutdown writes (the test decides when it happens).
NEVER = 3600.0


def items(n: int, seed: int) -> list[dict]:
    """``n`` raw items ``{"size", "x"}``: breast-cancer rows at sizes over the domain."""
    X, _ = S.data()
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(X), n, replace=False)
    sizes = rng.uniform(0.0, S.N_MAX, n)
    return [{"size": float(s), "x": X[r].tolist()} for s, r in zip(sizes, rows, strict=True)]


def stored(url: str) -> list[tuple]:
    with IndexStore(url, read_only=True) as store:
        return store.timings()


def recorder_for(url: str) -> TimingRecorder:
    return TimingRecorder(functools.partial(polydom.store_timings, url))


def served_timings(predictions: list[dict]) -> list[tuple[str, float]]:
    """(feature, size) of every feature the service says it computed, in order."""
    return [(f, p["size"]) for p in predictions for f in p["computed"]]


def metric(text: str, name: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, name
    return float(lines[0].split()[1])


def scraped(app) -> str:
    """The app's /metrics text, read from its registry (also after shutdown)."""
    return generate_latest(app.state.metrics.registry).decode()


@pytest.fixture()
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'served.db'}"
    V.publish_trained(url)
    return url


def test_served_timings_reach_the_store_and_recalibrate_a_build_the_service_follows(store):
    index = polydom.open_index(store)
    first_build = index.info["build_id"]
    recorder = recorder_for(store)
    app = make_app(index, V.FEATURIZER, refresh_seconds=None, timings=recorder,
                   timings_seconds=NEVER)
    with TestClient(app) as client:
        got = client.post("/predict", json={"budget": 600.0, "items": items(40, seed=1)})
        assert got.status_code == 200, got.text
        predictions = got.json()["predictions"]
        expected = served_timings(predictions)
        assert len(expected) >= 40  # every item computed at least one feature
        text = client.get("/metrics").text
        assert metric(text, "polydom_timings_recorded_total") == len(expected)
        assert metric(text, "polydom_timings_buffered") == len(expected)
        assert stored(store) == []  # nothing written on the request path
    rows = stored(store)  # the flush at shutdown wrote every one
    assert [(f, n) for _, _, f, n, _ in rows] == expected
    assert {b for _, b, _, _, _ in rows} == {first_build}
    assert sum(t for *_, t in rows) == pytest.approx(
        sum(p["measured_seconds"] for p in predictions), rel=1e-9)
    assert (recorder.stored, sum(recorder.dropped.values())) == (len(expected), 0)

    # the running service (refreshing) picks up the build recalibrated from those timings
    following = make_app(index, V.FEATURIZER, refresh_seconds=0.05,
                         timings=recorder_for(store), timings_seconds=NEVER)
    with TestClient(following) as client:
        assert client.get("/healthz").json()["build"] == first_build
        # the test's curves are made up, not measured on this machine: the step to its
        # timings may be beyond recalibrate's default bound
        assert main(["recalibrate", store, "--max-step", "inf"]) == 0
        recalibrated = polydom.open_index(store)
        new_build = recalibrated.info["build_id"]
        assert new_build != first_build
        deadline = time.monotonic() + 120.0
        while client.get("/healthz").json()["build"] != new_build:
            assert time.monotonic() < deadline, "the service never switched builds"
            time.sleep(0.05)
        changed = 0
        for size, budget in V.random_queries(200, seed=2):
            answer = client.get("/lookup", params={"size": repr(size),
                                                   "budget": repr(budget)}).json()
            hit = recalibrated.lookup(size, budget)
            assert answer["build"] == new_build
            expected = None if hit is None else {
                "name": key_text(hit.key), "learner": hit.candidate.learner,
                "features": sorted(hit.features), "accuracy": hit.accuracy,
                "cost": float(f"{hit.cost:.15g}"), "unit": answer["unit"]}
            model = answer["model"]  # (the answer may carry more fields: the doors' shape)
            assert (model if model is None else {k: model[k] for k in expected}) == expected
            changed += hit is not None
        assert changed > 0
        again = client.post("/predict", json={"budget": 600.0, "items": items(5, seed=3)})
        assert again.json()["build"] == new_build
    # each atom's new curve is its old one scaled by the 0.95-quantile of the served
    # ratios t / c(n) once preempted ones are set aside (the recalibration rule,
    # polydom.pipeline.recalibrate.robust_scale), computed here from the stored rows: the
    # timings are seconds, the store's curves ms (t in ms is 1000 t)
    before = polydom.open_index(store, build=first_build)
    assert before.info["cost_unit"] == "ms"
    checked = 0
    for atom, curve in before.costs.items():
        ratios = [1000.0 * t / float(curve(n)) for _, _, f, n, t in rows if f == atom]
        if len(ratios) < 20:  # recalibrate's min_records: scaled by the others' median
            continue
        checked += 1
        scale, _ = robust_scale(ratios, 0.95)
        for n in (0.0, 500.0, S.N_MAX):
            assert float(recalibrated.costs[atom](n)) == pytest.approx(scale * float(curve(n)),
                                                                        rel=1e-9)
    assert checked >= 1
    later = stored(store)[len(rows):]  # the refreshed service records against its build
    assert later and {b for _, b, _, _, _ in later} == {new_build}


def test_a_telemetry_store_that_cannot_be_written_never_fails_a_request(store, tmp_path,
                                                                         caplog):
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    IndexStore(empty).close()  # a store without the served build: every write is refused
    recorder = recorder_for(empty)
    app = make_app(polydom.open_index(store), V.FEATURIZER, refresh_seconds=None,
                   timings=recorder, timings_seconds=0.05)
    with caplog.at_level(logging.ERROR, logger="polydom.telemetry"):
        with TestClient(app) as client:
            for seed in range(3):
                got = client.post("/predict", json={"budget": 600.0,
                                                    "items": items(10, seed=seed)})
                assert got.status_code == 200, got.text
        text = scraped(app)
    assert recorder.recorded > 0 and recorder.stored == 0
    assert recorder.dropped["write_error"] == recorder.recorded
    assert recorder.write_errors >= 1 and recorder.buffered == 0
    assert metric(text, "polydom_timings_write_errors_total") == recorder.write_errors
    assert 'polydom_timings_dropped_total{reason="write_error"} ' \
           f"{float(recorder.recorded)}" in text
    errors = [r for r in caplog.records if r.name == "polydom.telemetry"]
    assert len(errors) == 1  # logged once, however many writes failed
    assert stored(store) == []


def test_timings_recorded_while_a_write_runs_are_taken_by_the_last_flush():
    """Shutdown while a periodic write is under way: what was recorded during that write
    (after it drained the buffers, before the shutdown) is written by the last flush."""
    entered, release = threading.Event(), threading.Event()
    calls: list[list[float]] = []

    def sink(records, build):
        calls.append([r.seconds for r in records])
        if len(calls) == 1:  # the first write holds until the shutdown has begun
            entered.set()
            release.wait(120)

    recorder = TimingRecorder(sink)
    view = S.index_of(S.random_candidates(5, seed=1), {"alpha": 1.0, "build_id": 1})

    def served(seconds: float) -> ItemPrediction:
        return ItemPrediction(label=0, computed=("g0",), feature_seconds={"g0": seconds},
                              size=10.0)

    async def run() -> bool:
        stop = asyncio.Event()
        recorder.record(view, served(1.0))
        writer = asyncio.create_task(flush_periodically(recorder, stop, 0.01))
        started = await asyncio.to_thread(entered.wait, 120)
        recorder.record(view, served(2.0))  # while the first write runs
        stop.set()  # the app's shutdown
        release.set()
        await writer
        return started

    assert asyncio.run(run())
    assert calls == [[1.0], [2.0]]
    assert (recorder.recorded, recorder.stored, recorder.buffered) == (2, 2, 0)


def test_serve_record_timings_writes_them_at_a_clean_shutdown(store):
    with V.live_server(store, "--featurizer", "tests.serve_support:FEATURIZER",
                       "--record-timings", "--timings-every", str(NEVER)) as base:
        with httpx.Client(base_url=base, timeout=30) as client:
            got = client.post("/predict", json={"budget": 600.0, "items": items(20, seed=4)})
            assert got.status_code == 200, got.text
            text = client.get("/metrics").text
        expected = served_timings(got.json()["predictions"])
        assert metric(text, "polydom_timings_recorded_total") == len(expected)
        assert stored(store) == []
    # live_server stops it with SIGTERM: uvicorn's shutdown runs the last flush
    assert [(f, n) for _, _, f, n, _ in stored(store)] == expected


def test_record_timings_without_a_featurizer_is_a_usage_error(store, capsys):
    assert main(["serve", store, "--record-timings"]) == 2
    err = capsys.readouterr().err
    assert "--record-timings needs --featurizer" in err and err.count("\n") == 1


def test_record_timings_on_a_store_without_a_unit_of_time_is_refused_at_start(tmp_path, capsys):
    # timings are seconds; a store in "units" cannot compare them with its costs (before
    # this check the service started, and every write of its timings failed later)
    url = f"sqlite:///{tmp_path / 'units.db'}"
    V.publish_random(url, seed=0)
    assert polydom.open_index(url).info.get("cost_unit") is None
    code = main(["serve", url, "--featurizer", "tests.serve_support:FEATURIZER",
                 "--record-timings", "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--record-timings: the store's costs are in 'units', not a unit of time" in err
