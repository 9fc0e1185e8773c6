"""One answer shape at every door (issue 28 item 3): ``Index.lookup``'s :class:`Hit`,
``GET /lookup`` and ``polydom lookup --json`` give the same fields with the same values on
one store (name, features, accuracy and its standard error, learner, build, cost and its
unit), and a budget written with its unit (``5ms``, ``1e-05ms``, ``2.5e-3s``, ``1e-5``)
means the same on each; the command line checks its rule once."""

from __future__ import annotations

import asyncio
import json

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

import learners  # noqa: E402
import polydom  # noqa: E402
import polydom.index.built  # noqa: E402
import polydom.index.table  # noqa: E402
from polydom.app.cli import main  # noqa: E402
from polydom.app.service import make_app  # noqa: E402

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150, :6], Y[:150]
GROUPS = {"mean": [0, 1, 2], "error": [3, 4, 5]}

#: The fields every door answers with, with the same values.
FIELDS = ("name", "features", "accuracy", "accuracy_se", "learner", "build", "cost", "unit")

#: (size, budget in ms): the cheap model, the dear one, nothing fits.
QUERIES = [(10.0, 1.5), (10.0, 0.7), (50.0, 4.0), (90.0, 100.0), (10.0, 0.01)]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A store built with costs in ms (the unit every door must carry)."""
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, Y,
                                      features=GROUPS, cv=3)
    path = tmp_path_factory.mktemp("shape") / "index.db"
    polydom.build_index({"mean": "0.5 + 0.01*n", "error": "2"}, learner, alpha=1.0,
                        n_max=100.0, cost_unit="ms", store=f"sqlite:///{path}")
    return str(path)


def _http(index: polydom.Index, params: list[dict]) -> list[dict]:
    app = make_app(index, refresh_seconds=None)

    async def run() -> list:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.get("/lookup", params=p) for p in params]

    answers = asyncio.run(run())
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    return [a.json() for a in answers]


def _cli(store: str, size: float, budget: str, capsys, *more: str) -> dict:
    code = main(["lookup", store, "--size", repr(size), "--budget", budget, "--json", *more])
    out, err = capsys.readouterr()
    answer = json.loads(out)
    assert code == (0 if answer["fits"] else 1), err
    return answer


def test_hit_http_and_cli_json_give_the_same_fields_and_values(store, capsys):
    index = polydom.open_index(store)
    served = _http(index, [{"size": repr(n), "budget": repr(b)} for n, b in QUERIES])
    fitted = set()
    for (size, budget), http in zip(QUERIES, served, strict=True):
        hit = index.lookup(size, budget)
        cli = _cli(store, size, repr(budget), capsys)
        if hit is None:
            assert http["model"] is None and cli["fits"] is False
            continue
        fitted.add(hit.name)
        python = {field: getattr(hit, field) for field in FIELDS}
        python["features"] = sorted(hit.features)  # the names here sort alike naturally
        python["cost"] = float(f"{hit.cost:.15g}")  # without float noise
        assert {f: hit.to_dict()[f] for f in FIELDS} == python
        # one record, byte for byte: the CLI's --json is HTTP's, its model Hit.to_dict()
        assert json.dumps(http) == json.dumps(cli)
        assert json.dumps(http["model"]) == json.dumps(hit.to_dict())
        assert python["unit"] == "ms" and python["build"] == index.info["build_id"]
        assert python["accuracy_se"] == hit.candidate.accuracy_se > 0.0
    assert len(fitted) >= 2  # several models answered, and one query fitted nothing


@pytest.mark.parametrize(("written", "in_ms"), [
    ("5ms", 5.0), ("0.005s", 5.0), ("5", 5.0), ("1e-05ms", 1e-05), ("2.5e-3s", 2.5),
    ("1e-5", 1e-05), ("2500us", 2.5)])
def test_a_budget_with_its_unit_means_the_same_at_every_door(store, capsys, written, in_ms):
    index = polydom.open_index(store)
    size = 50.0
    want = index.lookup(size, in_ms)
    http, = _http(index, [{"size": repr(size), "budget": written}])
    cli = _cli(store, size, written, capsys)
    python = index.lookup(size, written)
    assert http["budget"] == pytest.approx(in_ms, rel=1e-12)
    assert cli["budget"] == pytest.approx(in_ms, rel=1e-12)
    name = None if want is None else want.name
    assert (None if python is None else python.name) == name
    assert (None if http["model"] is None else http["model"]["name"]) == name
    assert (None if cli["model"] is None else cli["model"]["name"]) == name


def test_a_budget_in_a_unit_that_does_not_convert_is_refused_at_every_door(store, capsys):
    index = polydom.open_index(store)
    app = make_app(index, refresh_seconds=None)

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/lookup", params={"size": "5", "budget": "5 apples"})

    got = asyncio.run(run())
    assert got.status_code == 400 and got.json()["field"] == "budget"
    with pytest.raises(polydom.errors.InvalidArgumentError, match="apples"):
        index.lookup(5.0, "5 apples")
    code = main(["lookup", store, "--size", "5", "--budget", "5apples"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "apples" in err


def test_the_command_line_checks_the_rule_once(store, capsys, monkeypatch):
    calls = []
    check = polydom.index.table.check_rule

    def counted(rule):
        calls.append(rule)
        return check(rule)

    monkeypatch.setattr(polydom.index.table, "check_rule", counted)
    monkeypatch.setattr(polydom.index.built, "check_rule", counted)
    answer = _cli(store, 50.0, "4", capsys, "--rule", "one_se")
    assert answer["rule"] == "one_se" and answer["fits"]
    assert calls == ["one_se"]


@pytest.mark.parametrize("size", ["1e400", "9" * 400, "nan", "-1", "inf"],
                         ids=["1e400", "400-digits", "nan", "negative", "inf"])
def test_the_command_line_refuses_a_bad_size_in_one_line(store, capsys, size):
    with pytest.raises(SystemExit) as stop:
        main(["lookup", store, "--size", size, "--budget", "1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "--size" in err
    assert len(err) < 300
