"""`polydom serve --recalibrate-on-drift`: the monitor fires, the curves are refitted, a build
is published and served, rate-limited, every step on /metrics.

The real app (:func:`polydom.app.service.make_app` in Starlette's TestClient) serves raw
breast-cancer items with trained models from a store; the featurizer's clock is a seeded
synthetic one (each feature advances it by its cost curve at the item's size, in seconds,
times a lognormal noise and ``slow``), so a 2x slowdown of every feature is exact and the
test is deterministic on a loaded machine.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

import polydom  # noqa: E402
from polydom.app.service import make_app  # noqa: E402
from polydom.errors import InvalidArgumentError  # noqa: E402
from polydom.serving.drift_recalibration import DriftRecalibration  # noqa: E402
from polydom.serving.timing_recorder import TimingRecorder  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests import storage_support as S  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.timeout(300)


class SyntheticClock:
    """A clock that only the features advance: by ``slow * c_g(n) / 1000 * lognormal``
    seconds for group ``g`` on an item of size ``n`` (the store's curves are in ms)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.now = 0.0
        self.slow = 1.0

    def __call__(self) -> float:
        return self.now

    def featurizer(self) -> polydom.Featurizer:
        fz = polydom.Featurizer(size=lambda item: item["size"], timer=self)
        for name, cols in S.GROUPS.items():
            fz.add(name, self._routine(name, cols), len(cols))
        return fz

    def _routine(self, name, cols):
        curve = polydom.CostCurve.coerce(S.COSTS[name])

        def routine(item):
            noise = float(self.rng.lognormal(0.0, 0.2))
            self.now += self.slow * float(curve(item["size"])) / 1000.0 * noise
            return [item["x"][c] for c in cols]
        return routine


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def items(n: int, seed: int) -> list[dict]:
    X, _ = S.data()
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(X), n)
    return [{"size": float(s), "x": X[r].tolist()}
            for s, r in zip(rng.uniform(0.0, S.N_MAX, n), rows, strict=True)]


def metric(text: str, name: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, name
    return float(lines[0].split()[1])


@pytest.fixture()
def served(tmp_path):
    url = f"sqlite:///{tmp_path / 'drift.db'}"
    V.publish_trained(url)
    index = polydom.open_index(url)
    clock = SyntheticClock(3)
    featurizer = clock.featurizer()
    ticks = Ticks()
    drift = DriftRecalibration(index, min_interval=600.0, collect=40,
                               monitor={"reference": 30, "window": 20}, clock=ticks)
    recorder = TimingRecorder(drift.sink(functools.partial(polydom.store_timings, url)))
    app = make_app(index, featurizer, refresh_seconds=None, timings=recorder,
                   timings_seconds=3600.0, drift=drift)
    return url, index, clock, ticks, drift, recorder, app


def serve(client, recorder, n: int, seed: int) -> None:
    for k in range(0, n, 10):
        got = client.post("/predict", json={"budget": 600.0, "items": items(10, seed + k)})
        assert got.status_code == 200, got.text
        recorder.flush()  # what the background task does every --timings-every seconds


def test_a_2x_drift_is_recalibrated_into_a_served_build_and_rate_limited(served):
    url, index, clock, ticks, drift, recorder, app = served
    first = index.info["build_id"]
    with TestClient(app) as client:
        serve(client, recorder, 300, seed=0)  # stationary: no alarm
        assert drift.counts["alarms"] == 0 and drift.counts["monitored"] > 300
        clock.slow = 2.0  # every feature twice as slow
        serve(client, recorder, 200, seed=1000)
        assert drift.counts["alarms"] == 1 and drift.counts["recalibrations"] == 1
        assert index.info["build_id"] == drift.last_build != first  # switched
        assert client.get("/healthz").json()["build"] == drift.last_build
        assert index.info["recalibrated"]["from_build"] == first
        # every atom's curve scaled to the slowed timings (q0.95 of ratios near 2 x noise)
        scales = index.info["recalibrated"]["scales"]
        assert scales and all(1.8 < v < 3.5 for v in scales.values()), scales
        # the refit curves: every atom scaled up, models untouched (same candidates)
        old = polydom.open_index(url, build=first)
        assert [c.key for c in index.candidates] == [c.key for c in old.candidates]
        text = client.get("/metrics").text
        assert metric(text, 'polydom_drift_steps_total{step="recalibrations"}') == 1
        assert metric(text, 'polydom_drift_steps_total{step="alarms"}') == 1
        assert metric(text, "polydom_drift_last_build") == drift.last_build

        # a second drift within min_interval: alarmed, deferred, not published
        serve(client, recorder, 150, seed=2000)  # the new build's reference
        clock.slow = 4.0
        serve(client, recorder, 200, seed=3000)
        assert drift.counts["alarms"] == 2 and drift.counts["deferred"] == 1
        assert drift.counts["recalibrations"] == 1
        ticks.now = 601.0  # the rate limit has passed: the next flush recalibrates
        serve(client, recorder, 10, seed=4000)
        assert drift.counts["recalibrations"] == 2
        assert index.info["build_id"] == drift.last_build
        text = client.get("/metrics").text
        assert metric(text, 'polydom_drift_steps_total{step="deferred"}') == 1
        assert metric(text, 'polydom_drift_steps_total{step="failed"}') == 0


def test_a_transient_slowdown_raises_an_alarm_but_publishes_no_build(served):
    """A slowdown that passes before the evidence is collected: the alarm is raised, the
    timings collected after it show no change beyond the monitor's tolerance, so nothing
    is published (dismissed) and the monitor takes a fresh reference on the same build."""
    url, index, clock, ticks, drift, recorder, app = served
    first = index.info["build_id"]
    with TestClient(app) as client:
        serve(client, recorder, 300, seed=0)
        clock.slow = 2.0
        for k in range(20):  # slow until the alarm, no longer
            serve(client, recorder, 10, seed=1000 + 10 * k)
            if drift.counts["alarms"]:
                break
        assert drift.counts["alarms"] == 1 and drift.counts["recalibrations"] == 0
        clock.slow = 1.0
        serve(client, recorder, 300, seed=5000)
        assert drift.counts["dismissed"] == 1 and drift.counts["recalibrations"] == 0
        assert index.info["build_id"] == first and drift.last_build is None
        assert not drift.last_report.published
        assert all(1 / 1.2 <= v <= 1.2 for v in drift.last_report.scales.values())
        text = client.get("/metrics").text
        assert metric(text, 'polydom_drift_steps_total{step="dismissed"}') == 1
        assert metric(text, 'polydom_drift_steps_total{step="recalibrations"}') == 0
        from storage import IndexStore

        with IndexStore(url, create=False) as store:
            assert len(store.list_builds()) == 1


def test_recalibrate_on_drift_needs_an_index_that_follows_its_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'pinned.db'}"
    V.publish_trained(url)
    pinned = polydom.open_index(url, build=1)
    with pytest.raises(InvalidArgumentError, match="follows its store"):
        DriftRecalibration(pinned)
    with pytest.raises(InvalidArgumentError, match="min_interval must be"):
        DriftRecalibration(polydom.open_index(url), min_interval=-1)
