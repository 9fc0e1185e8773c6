"""Drift that no client can steer (issue 35 item 4).

The attack of the issue: with ``serve --recalibrate-on-drift``, an unauthenticated client
posts items that claim size 1000 (and are small) and then size 0 (and are large); the
timings, learnt at the claimed sizes, made one recalibration publish a x1000 scale and the
service then answered no model where a 14 ms one was served.  Here the featurizer's size
function reads the claim (as the issue's did), its clock is synthetic and charges the
item's real content (so the test is exact on a loaded machine): with the server's own
measure, the claims are counted on ``/metrics`` and not learnt; without it, the step is
still bounded (refused and counted, nothing published).
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
from polydom.serving.drift_recalibration import DriftRecalibration  # noqa: E402
from polydom.serving.measured_size import MeasuredSize  # noqa: E402
from polydom.serving.timing_recorder import TimingRecorder  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests import storage_support as S  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.timeout(300)


class ContentClock:
    """A clock only the features advance: by ``c_g(len(item["content"])) / 1000 * noise``
    seconds (the store's curves are in ms): the cost of what the item really holds."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def featurizer(self) -> polydom.Featurizer:
        fz = polydom.Featurizer(size=lambda item: item["size"], timer=self)  # the claim
        for name, cols in S.GROUPS.items():
            fz.add(name, self._routine(name, cols), len(cols))
        return fz

    def _routine(self, name, cols):
        curve = polydom.CostCurve.coerce(S.COSTS[name])

        def routine(item):
            self.now += float(curve(len(item["content"]))) / 1000.0 * float(
                self.rng.lognormal(0.0, 0.1))
            return [item["x"][c] for c in cols]
        return routine


def _items(n: int, seed: int, claim: float | None = None, real: int | None = None):
    X, _ = S.data()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        size = int(rng.integers(0, int(S.N_MAX)))
        held = size if real is None else real
        out.append({"size": float(size if claim is None else claim),
                    "content": [0] * held, "x": X[int(rng.integers(len(X)))].tolist()})
    return out


def _serve(client, recorder, batches) -> None:
    for items in batches:
        got = client.post("/predict", json={"budget": 600.0, "items": items})
        assert got.status_code == 200, got.text
        recorder.flush()


def _attack(seed: int):
    """Stationary honest traffic, then items claiming 1000 and holding nothing, then items
    claiming 0 and holding 1000."""
    honest = [_items(10, seed + k) for k in range(30)]
    big_claims = [_items(10, seed + 100 + k, claim=S.N_MAX - 1, real=0) for k in range(20)]
    small_claims = [_items(10, seed + 200 + k, claim=0.0, real=int(S.N_MAX) - 1)
                    for k in range(20)]
    return honest, big_claims + small_claims


def _app(tmp_path, measure):
    url = f"sqlite:///{tmp_path / 'drift.db'}"
    V.publish_trained(url)
    index = polydom.open_index(url)
    drift = DriftRecalibration(index, min_interval=0.0, collect=40,
                               monitor={"reference": 30, "window": 20})
    recorder = TimingRecorder(drift.sink(functools.partial(polydom.store_timings, url)))
    app = make_app(index, ContentClock(5).featurizer(), refresh_seconds=None,
                   timings=recorder, timings_seconds=3600.0, drift=drift, measure=measure)
    return index, drift, recorder, app


def test_claimed_sizes_are_counted_not_learnt(tmp_path):
    index, drift, recorder, app = _app(tmp_path, MeasuredSize(lambda i: len(i["content"])))
    first = index.info["build_id"]
    honest, attack = _attack(0)
    with TestClient(app) as client:
        _serve(client, recorder, honest)
        learnt = drift.counts["monitored"]
        assert learnt > 300
        _serve(client, recorder, attack)
        metrics = client.get("/metrics").text
    assert "polydom_item_size_mismatches 400.0" in metrics
    assert drift.counts["monitored"] == learnt  # nothing of the attack reached the monitor
    assert drift.counts["alarms"] == 0 and index.info["build_id"] == first


def test_without_a_measure_the_step_is_still_bounded(tmp_path):
    index, drift, recorder, app = _app(tmp_path, None)
    first = index.info["build_id"]
    honest, attack = _attack(0)
    with TestClient(app) as client:
        _serve(client, recorder, honest)
        _serve(client, recorder, attack)
        metrics = client.get("/metrics").text
    assert drift.counts["alarms"] >= 1
    assert drift.counts["recalibrations"] == 0 and drift.counts["refused"] >= 1
    assert 'polydom_drift_steps_total{step="refused"}' in metrics
    assert index.info["build_id"] == first  # no x1000 build published
