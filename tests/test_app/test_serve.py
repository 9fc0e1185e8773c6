"""`polydom serve` against a live server on loopback, through a real HTTP client (httpx).

Answers must equal the in-process index's (lookup, explain, predict on rows and on raw
items); malformed requests get a 4xx JSON error naming the field and leave the worker
alive; builds published while the service answers are picked up, never mixed.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

import polydom  # noqa: E402
from polydom.app.service import explanation_json, key_text  # noqa: E402
from polydom.app.tables import cost_unit  # noqa: E402
from polydom.curves.curve_text import natural_key  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests import storage_support as S  # noqa: E402

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('serve') / 'index.db'}"
    V.publish_trained(url)
    return url


@pytest.fixture(scope="module")
def served(store):
    with V.live_server(store, "--featurizer", "tests.serve_support:FEATURIZER") as base:
        with httpx.Client(base_url=base, timeout=30) as client:
            yield client


@pytest.fixture(scope="module")
def index(store):
    return polydom.open_index(store)


def _model_json(hit, unit):
    if hit is None:
        return None
    return {"name": key_text(hit.key), "features": sorted(hit.features, key=natural_key),
            "accuracy": hit.accuracy, "accuracy_se": hit.candidate.accuracy_se,
            "learner": hit.candidate.learner, "build": hit.build,
            "cost": float(f"{hit.cost:.15g}"),
            "unit": unit, "cost_curve": hit.candidate.cost.text()}


def test_lookup_answers_equal_the_in_process_lookup_on_random_queries(served, index):
    unit = cost_unit(index.info)
    found = 0
    for size, budget in V.random_queries(1000, seed=1):
        got = served.get("/lookup", params={"size": repr(size), "budget": repr(budget)})
        assert got.status_code == 200, got.text
        answer = got.json()
        hit = index.lookup(size, budget)
        assert {k: v for k, v in answer.items() if k != "warning"} == {
            "build": index.info["build_id"], "size": size, "budget": budget, "unit": unit,
            "rule": "best", "overrun": None, "fits": hit is not None,
            "model": _model_json(hit, unit)}
        assert list(answer) == ["build", "size", "budget", "unit", "rule", "overrun", "fits",
                                "warning", "model"]
        if hit is not None:
            assert list(answer["model"]) == list(hit.to_dict())
        found += hit is not None
    assert 100 < found < 900  # both kinds of answer were exercised


def test_lookup_follows_the_rule_asked(served, index):
    unit = cost_unit(index.info)
    for size, budget in V.random_queries(200, seed=6):
        got = served.get("/lookup", params={"size": repr(size), "budget": repr(budget),
                                            "rule": "one_se"})
        assert got.json()["model"] == _model_json(index.lookup(size, budget, "one_se"), unit)


def test_explain_answers_equal_index_explain(served, index):
    unit = cost_unit(index.info)
    for size, budget in V.random_queries(300, seed=2):
        got = served.get("/explain", params={"size": repr(size), "budget": repr(budget)})
        assert got.status_code == 200, got.text
        assert got.json() == json.loads(json.dumps(
            {**explanation_json(index.explain(size, budget), unit), "overrun": None}))


def test_predict_rows_equal_the_in_process_predict(served, index):
    X, _ = S.data()
    rng = np.random.default_rng(3)
    predicted = 0
    for size, budget in V.random_queries(200, seed=3):
        rows = X[rng.choice(len(X), 3)]
        got = served.post("/predict", json={"size": size, "budget": budget,
                                            "rows": rows.tolist()})
        assert got.status_code == 200, got.text
        answer = got.json()
        hit = index.lookup(size, budget)
        if hit is None:
            assert answer["model"] is None and answer["labels"] is None
            continue
        predicted += 1
        assert answer["model"] == hit.to_dict()
        assert answer["labels"] == index.predict(rows, size, budget).tolist()
    assert predicted > 20


def test_predict_items_equal_in_process_predict_item_with_times(served, index):
    X, _ = S.data()
    rng = np.random.default_rng(4)
    items = [{"size": float(rng.uniform(0, S.N_MAX)), "x": X[i].tolist()}
             for i in rng.choice(len(X), 60)]
    for budget in (30.0, 300.0, 3000.0):
        got = served.post("/predict", json={"budget": budget, "items": items})
        assert got.status_code == 200, got.text
        answers = got.json()["predictions"]
        assert len(answers) == len(items)
        for item, answer in zip(items, answers, strict=True):
            mine = index.predict_item(item, budget, V.FEATURIZER)
            assert answer["label"] == (None if mine.label is None else mine.label.item())
            assert answer["key"] == (None if mine.key is None else key_text(mine.key))
            assert answer["predicted_cost"] == mine.predicted_cost
            assert answer["computed"] == list(mine.computed)
            assert answer["measured_seconds"] >= 0.0
            # the store's costs are in ms: the measured seconds are compared in ms
            assert answer["unit"] == "ms"
            assert answer["measured_cost"] == pytest.approx(1000 * answer["measured_seconds"])
            assert answer["over_budget"] == (answer["measured_cost"] > budget)


BAD_GETS = [
    ("/lookup", {"budget": "5"}, 400, "size"),
    ("/lookup", {"size": "5"}, 400, "budget"),
    ("/lookup", {"size": "five", "budget": "5"}, 400, "size"),
    ("/lookup", {"size": "5", "budget": "nan"}, 400, "budget"),
    ("/lookup", {"size": "5", "budget": "-1"}, 400, "budget"),
    ("/lookup", {"size": "1e400", "budget": "1"}, 400, "size"),
    ("/lookup", {"size": "1000.5", "budget": "1"}, 400, "size"),
    ("/lookup", {"size": "-3", "budget": "1"}, 400, "size"),
    ("/lookup", {"size": "5", "budget": "1", "rule": "worst"}, 400, "rule"),
    ("/explain", {"size": "2000", "budget": "1"}, 400, "size"),
    ("/explain", {"size": "2", "budget": "inf"}, 400, "budget"),
]


@pytest.mark.parametrize(("path", "params", "status", "field"), BAD_GETS)
def test_a_malformed_query_gets_a_4xx_json_error_naming_the_field(served, path, params,
                                                                  status, field):
    got = served.get(path, params=params)
    assert got.status_code == status
    assert got.json()["field"] == field
    assert field in got.json()["error"]


BAD_POSTS = [
    (b"{not json", 400, "body"),
    (b"[1, 2]", 400, "body"),
    (b'{"size": 5, "budget": 5, "rows": [[NaN]]}', 400, "body"),
    (json.dumps({"budget": 5, "rows": [[0.0] * 30]}).encode(), 400, "size"),
    (json.dumps({"size": "x", "budget": 5, "rows": [[0.0] * 30]}).encode(), 400, "size"),
    (json.dumps({"size": 5, "budget": [1], "rows": [[0.0] * 30]}).encode(), 400, "budget"),
    (json.dumps({"size": 5, "budget": 5, "rows": [[0.0] * 29]}).encode(), 400, "rows"),
    (json.dumps({"size": 5, "budget": 5, "rows": [[0.0] * 30, [0.0] * 31]}).encode(), 400,
     "rows"),
    (json.dumps({"size": 5, "budget": 5, "rows": [["a"] * 30]}).encode(), 400, "rows"),
    (json.dumps({"size": 5, "budget": 5, "rows": []}).encode(), 400, "rows"),
    (json.dumps({"size": 5, "budget": 5}).encode(), 400, "rows"),
    (json.dumps({"budget": 5, "items": [{"size": 1}]}).encode(), 400, "items[0]"),
    (json.dumps({"budget": 5, "items": [{"x": []}]}).encode(), 400, "items[0]"),
    (json.dumps({"budget": 5, "items": "abc"}).encode(), 400, "items"),
    (b"[" * 100000 + b"]" * 100000, 400, "body"),
    (b"x" * (2 << 20), 413, "body"),
]


@pytest.mark.parametrize(("body", "status", "field"), BAD_POSTS,
                         ids=[f"bad{i}" for i in range(len(BAD_POSTS))])
def test_a_malformed_predict_gets_a_4xx_json_error_naming_the_field(served, body, status,
                                                                    field):
    got = served.post("/predict", content=body,
                      headers={"content-type": "application/json"})
    assert got.status_code == status, got.text
    assert got.json()["field"] == field


def test_the_worker_survives_malformed_requests(served, index):
    for _ in range(3):
        served.post("/predict", content=b"{", headers={"content-type": "application/json"})
        served.get("/lookup", params={"size": "x"})
    got = served.get("/healthz")
    assert got.status_code == 200
    assert got.json() == {"status": "ok", "build": index.info["build_id"],
                          "follows_store": True}


def test_unknown_paths_and_methods_get_json_errors(served):
    assert served.get("/nowhere").status_code == 404
    assert served.get("/nowhere").json()["error"]
    assert served.post("/lookup").status_code == 405


def test_metrics_count_requests_and_the_build(served, index):
    served.get("/lookup", params={"size": "10", "budget": "100"})
    text = served.get("/metrics").text
    assert 'polydom_requests_total{endpoint="/lookup",status="200"}' in text
    assert 'polydom_request_seconds_bucket{endpoint="/lookup",le="0.001"}' in text
    assert f"polydom_current_build {float(index.info['build_id'])}" in text


def _metric(text: str, name: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, name
    return float(lines[0].split()[1])


def test_metrics_count_items_served_over_budget():
    from sklearn.dummy import DummyClassifier

    from polydom.app.service import make_app

    def slow(item):
        deadline = time.perf_counter() + 0.005
        while time.perf_counter() < deadline:
            pass
        return [float(len(item))]

    fz = polydom.Featurizer(size=len).add("slow", slow, 1)
    model = DummyClassifier(strategy="constant", constant=1).fit([[0.0]], [1])
    cand = polydom.Candidate("slow", 0.9, "1e-9", features={"slow"}, payload=model)
    index = polydom.Index(polydom.PolyDomIndex.build([cand], 0.0, 100.0), {"slow": "1e-9"},
                          columns=fz.columns)

    async def run() -> tuple:
        transport = httpx.ASGITransport(app=make_app(index, featurizer=fz))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            got = await client.post("/predict", json={"budget": 1e-3,
                                                       "items": [[1.0, 2.0]] * 3})
            within = await client.post("/predict", json={"budget": 10.0, "items": [[1.0]]})
            return got, within, (await client.get("/metrics")).text

    got, within, text = asyncio.run(run())
    assert [p["over_budget"] for p in got.json()["predictions"]] == [True] * 3
    assert within.json()["predictions"][0]["over_budget"] is False
    assert _metric(text, "polydom_items_total") == 4.0
    assert _metric(text, "polydom_items_over_budget_total") == 3.0


@pytest.mark.slow
def test_builds_published_while_serving_are_followed_and_never_mixed(tmp_path):
    url = f"sqlite:///{tmp_path / 'builds.db'}"
    queries = V.random_queries(25, seed=5)
    expected: dict[int, list] = {}

    def record(build_id: int, index: polydom.Index) -> None:
        expected[build_id] = [None if (h := index.lookup(n, b)) is None else key_text(h.key)
                              for n, b in queries]

    record(*V.publish_random(url, seed=0))
    seen: list[tuple[int, list]] = []
    errors: list[str] = []
    stop = threading.Event()
    with V.live_server(url, "--refresh", "0.05") as base:

        def hammer() -> None:
            with httpx.Client(base_url=base, timeout=30) as client:
                while not stop.is_set():
                    for n, b in queries:
                        got = client.get("/lookup", params={"size": repr(n), "budget": repr(b)})
                        if got.status_code != 200:
                            errors.append(got.text)
                            continue
                        answer = got.json()
                        model = answer["model"]
                        seen.append((answer["build"], [n, b],
                                     None if model is None else model["name"]))

        worker = threading.Thread(target=hammer)
        worker.start()
        try:
            for seed in range(1, 11):
                record(*V.publish_random(url, seed=seed))
            last = max(expected)
            with httpx.Client(base_url=base, timeout=30) as client:
                for _ in range(400):
                    if client.get("/healthz").json()["build"] == last:
                        break
                    stop.wait(0.05)
        finally:
            stop.set()
            worker.join()
    assert errors == []
    position = {q: i for i, q in enumerate(queries)}
    mixed = [s for s in seen if expected[s[0]][position[tuple(s[1])]] != s[2]]
    assert mixed == []
    builds = {s[0] for s in seen}
    assert len(expected) == 11 and last in builds and len(builds) >= 3
