"""A new door in a few dozen lines (issue 36, item 2's must-show): a JSON-lines loop over
standard input and output, written on the serving core alone, answers as HTTP does, record
for record and refusal for refusal (same field, same words)."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")

import learners  # noqa: E402
import polydom  # noqa: E402
from polydom.app.service import make_app  # noqa: E402
from polydom.errors import QueryError  # noqa: E402
from polydom.serving.service_core import ServingCore  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient


def jsonl_door(core: ServingCore, stdin: io.TextIOBase, stdout: io.TextIOBase) -> None:
    """The whole door: one request a line (``{"op": "lookup"|"explain"|"predict", ...}``),
    one answer a line (the core's record, or ``{"error", "field"}``)."""
    ops = {"lookup": core.lookup, "explain": core.explain, "predict": core.predict}
    for line in stdin:
        request = json.loads(line)
        op = ops[request.pop("op")]
        try:
            answer = op(request)
        except QueryError as exc:
            answer = {"error": exc.message, "field": exc.field}
        stdout.write(json.dumps(answer) + "\n")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.75,
           frozenset({"a", "b"}): 0.85}
    url = f"sqlite:///{tmp_path_factory.mktemp('jsonl') / 'j.db'}"
    polydom.build_index({"a": "1 + 0.01*n", "b": "2 + 0.001*n**2"},
                        learners.SyntheticLearner(acc.__getitem__), n_min=1, n_max=100,
                        store=url, cost_unit="ms")
    return polydom.open_index(url)


def _queries():
    rng = np.random.default_rng(5)
    good = [{"size": repr(float(n)), "budget": f"{b:.4g}{u}"}
            for n, b, u in zip(rng.uniform(1, 100, 20), rng.uniform(0, 12, 20),
                               rng.choice(["", "ms", "us", "s"], 20), strict=True)]
    far = [{"size": "50", "budget": "2000"}, {"size": "50", "budget": "2000ms"}]
    bad = [{"size": "500", "budget": "5"}, {"size": "5", "budget": "-1"},
           {"size": "5", "budget": "2.5MS"}, {"size": "5"}, {"size": "5", "budget": "5",
                                                              "rule": "cheap"},
           {"size": "5", "budget": "5", "colour": "red"}]
    return good + far + bad


def test_a_json_lines_door_answers_as_http(index):
    core = ServingCore(index)
    queries = _queries()
    stdin = io.StringIO("".join(json.dumps({"op": op, **q}) + "\n"
                                for op in ("lookup", "explain") for q in queries))
    stdout = io.StringIO()
    jsonl_door(core, stdin, stdout)
    mine = [json.loads(line) for line in stdout.getvalue().splitlines()]
    with TestClient(make_app(index, refresh_seconds=None)) as client:
        http = [client.get(f"/{op}", params=q).json()
                for op in ("lookup", "explain") for q in queries]
    assert mine == http
    refusals = [a for a in mine if "error" in a]
    assert [a["field"] for a in refusals] == ["size", "budget", "budget", "budget", "rule",
                                              "colour"] * 2
    far = mine[20:22]  # 2000 bare warns (a unit missing?); 2000ms, written with its unit, not
    assert far[0]["warning"].startswith("warning: budget 2000 ms is") and far[1]["warning"] is None
