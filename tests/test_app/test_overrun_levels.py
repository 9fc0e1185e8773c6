"""HTTP /lookup and /predict take the overrun rate per request (issue 29)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

import learners  # noqa: E402
import polydom  # noqa: E402
from polydom.app.service import make_app  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient


def _guarded():
    """An index calibrated at 0.05 holding level 0.01 too, and a budget where they differ."""
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.75,
           frozenset({"a", "b"}): 0.85}
    index = polydom.build_index({"a": "1", "b": "2"}, learners.SyntheticLearner(acc.__getitem__),
                                n_min=1, n_max=100, cost_pruning=False, keep_trained=True)
    rng = np.random.default_rng(2)
    sizes = rng.uniform(1, 100, 600)
    timings = {"a": rng.lognormal(0.0, 0.6, 600), "b": 2.0 * rng.lognormal(0.0, 0.3, 600)}
    guarded = index.calibrated(sizes, timings, 0.05, levels=(0.01,))
    strict = guarded.at_overrun(0.01)
    budget = next(b for b in np.linspace(0.5, 20, 400)
                  if guarded.lookup(50, b).key != strict.lookup(50, b).key)
    return guarded, strict, float(budget)


def test_explain_answers_at_the_overrun_level_lookup_answers_at():
    # on main /explain ignored the level /lookup honoured
    guarded, strict, budget = _guarded()
    client = TestClient(make_app(guarded, refresh_seconds=None))
    for level, expect in (("0.05", guarded), ("0.01", strict)):
        query = {"size": 50, "budget": budget, "overrun": level}
        looked = client.get("/lookup", params=query).json()
        explained = client.get("/explain", params=query).json()
        assert looked["model"]["name"] == explained["chosen"]["key"]
        assert explained["chosen"]["key"] == expect.lookup(50, budget).name
        assert looked["overrun"] == explained["overrun"] == float(level)


def test_a_query_parameter_given_twice_is_a_400_naming_it():
    guarded, _, budget = _guarded()
    client = TestClient(make_app(guarded, refresh_seconds=None))
    for path in ("/lookup", "/explain"):
        got = client.get(f"{path}?size=50&budget={budget}&overrun=0.01&overrun=0.05")
        assert got.status_code == 400, got.text
        assert got.json()["field"] == "overrun" and "given 2 times" in got.json()["error"]


def test_lookup_answers_at_each_overrun_level_the_build_holds():
    guarded, strict, budget = _guarded()
    client = TestClient(make_app(guarded, refresh_seconds=None))
    for level, expect in ((None, guarded), ("0.05", guarded), ("0.01", strict)):
        query = {"size": 50, "budget": float(budget)}
        if level is not None:
            query["overrun"] = level
        got = client.get("/lookup", params=query)
        assert got.status_code == 200, got.text
        want = expect.lookup(50, budget)
        assert got.json()["model"]["features"] == sorted(want.features)
        assert got.json()["overrun"] == (0.05 if level is None else float(level))
    bad = client.get("/lookup", params={"size": 50, "budget": 3, "overrun": 0.2})
    assert bad.status_code == 400 and bad.json()["field"] == "overrun"
    assert "0.01, 0.05" in bad.json()["error"]
    bad = client.get("/lookup", params={"size": 50, "budget": 3, "overrun": "nan"})
    assert bad.status_code == 400 and bad.json()["field"] == "overrun"
