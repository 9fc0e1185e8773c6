"""Every door refuses bad numbers in one place (issue 31 item 3, issue 30 item 2).

Numbers that overflow, NaN, infinity, huge integers and text where a number belongs get a
400 naming the field on HTTP, a named :class:`polydom.errors.PolydomError` in Python and a
one-line error on the command line; answers are strict JSON; a damaged stored model is the
server's fault (500, generic body, details logged); a featurizer that does not fit the index
is refused when the service starts; each request checks its arguments once.  The apps run
in process (httpx's ASGI transport), not under uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

import learners  # noqa: E402
import polydom  # noqa: E402
from polydom.app.cli import main  # noqa: E402
from polydom.app.service import make_app  # noqa: E402
from polydom.errors import InvalidArgumentError, PolydomError  # noqa: E402
from polydom.index.built import Index  # noqa: E402
from polydom.index.table import SkylineTable  # noqa: E402

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150, :6], Y[:150]
GROUPS = {"a": [0, 1, 2], "b": [3, 4, 5]}


def _group(cols):
    return lambda item: [item["x"][c] for c in cols]


def _featurizer(groups=GROUPS) -> polydom.Featurizer:
    """Raw items ``{"size": n, "x": [6 numbers]}``, one feature per column group."""
    fz = polydom.Featurizer(size=lambda item: item["size"])
    for name, cols in groups.items():
        fz.add(name, _group(cols), len(cols))
    return fz


#: The same features registered in the other order: each one's columns differ from the
#: index's (what ``polydom serve --featurizer`` is refused for, at start).
SWAPPED = _featurizer({"b": GROUPS["b"], "a": GROUPS["a"]})


def _calls(app, calls: list[tuple[str, str, dict]]) -> list[httpx.Response]:
    """The app's responses to ``(method, path, httpx keywords)`` calls, in process."""

    async def run() -> list:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.request(m, path, **kw) for m, path, kw in calls]

    return asyncio.run(run())


def _strict(text: str):
    """``text`` parsed as RFC 8259 JSON: NaN and Infinity refused."""
    def refuse(constant):
        raise AssertionError(f"{constant} in an answer is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def model_index() -> Index:
    """Two models (column groups a, b) trained on real rows, costs in seconds."""
    model_a = LogisticRegression(max_iter=500).fit(X[:, :3], Y)
    model_ab = LogisticRegression(max_iter=500).fit(X, Y)
    cands = [polydom.Candidate("a", 0.8, "1 + n", features={"a"}, payload=model_a,
                               learner="logistic", accuracy_se=0.02),
             polydom.Candidate("ab", 0.9, "5 + n", features={"a", "b"}, payload=model_ab,
                               learner="logistic", accuracy_se=0.02)]
    return polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 100.0),
                         {"a": "1 + n", "b": "4"}, columns=GROUPS,
                         info={"build_id": 7, "cost_unit": "s"})


# ------------------------------------------------------------------ HTTP: numbers
ROW = X[0].tolist()
BAD_ROWS = [
    ("1e400", "rows[0][2]", "too large for a float"),
    ('"nan"', "rows[0][2]", "must be a real number"),
    ("9" * 400, "rows[0][2]", "too large for a float"),
    ("-" + "9" * 400, "rows[0][2]", "too large for a float"),
    ("true", "rows[0][2]", "must be a real number"),
]


@pytest.mark.parametrize(("cell", "where", "reason"), BAD_ROWS,
                         ids=["1e400", "nan-text", "400-digits", "minus-400-digits", "true"])
def test_predict_rows_holding_a_bad_number_get_a_400_naming_the_cell(model_index, cell,
                                                                     where, reason):
    row = [json.dumps(v) for v in ROW]
    row[2] = cell
    body = '{"size": 10, "budget": 100, "rows": [[' + ", ".join(row) + "]]}"
    got, = _calls(make_app(model_index, refresh_seconds=None),
                  [("POST", "/predict", {"content": body.encode(),
                                         "headers": {"content-type": "application/json"}})])
    assert got.status_code == 400, got.text
    answer = got.json()
    assert answer["field"] == "rows"
    assert where in answer["error"] and reason in answer["error"]
    assert "\n" not in answer["error"] and len(answer["error"]) < 200


@pytest.mark.parametrize(("field", "value"), [
    ("size", "9" * 400), ("size", 10**400), ("budget", 10**400), ("budget", "1e400"),
    ("size", "nan"), ("budget", "-inf"), ("size", True), ("budget", [1])],
    ids=["size-400-digits-text", "size-huge-int", "budget-huge-int", "budget-1e400",
         "size-nan", "budget-minus-inf", "size-bool", "budget-list"])
def test_predict_refuses_a_size_or_budget_out_of_range_naming_it(model_index, field, value):
    body = {"size": 10, "budget": 100, "rows": [ROW], field: value}
    got, = _calls(make_app(model_index, refresh_seconds=None),
                  [("POST", "/predict", {"content": json.dumps(body).encode(),
                                         "headers": {"content-type": "application/json"}})])
    assert got.status_code == 400, got.text
    assert got.json()["field"] == field and field in got.json()["error"]


def test_a_raw_item_of_size_ten_to_the_400_gets_a_400_naming_the_item(model_index):
    app = make_app(model_index, featurizer=_featurizer(), refresh_seconds=None)
    row = json.dumps(ROW)
    body = (f'{{"budget": 100, "items": [{{"size": 3, "x": {row}}}, '
            f'{{"size": 1{"0" * 400}, "x": {row}}}]}}')
    got, = _calls(app, [("POST", "/predict", {
        "content": body.encode(), "headers": {"content-type": "application/json"}})])
    assert got.status_code == 400, got.text
    assert got.json()["field"] == "items[1]"
    assert "size of an item must be finite" in got.json()["error"]


def test_explain_on_a_cost_that_overflows_in_the_domain_answers_strict_json():
    """A legal index whose dearer model's cost is beyond the float range at large sizes:
    the answer is strict JSON, that cost null (it fits no budget)."""
    cands = [polydom.Candidate("cheap", 0.7, "1", features={"x"}),
             polydom.Candidate("dear", 0.9, "2 + 1e300*n**3", features={"x"})]
    with np.errstate(over="ignore"):
        table = polydom.PolyDomIndex.build(cands, 0.0, 1e10)
    index = polydom.Index(table, {"x": "1"}, info={"build_id": 1, "cost_unit": "s"})
    assert np.isinf(index.explain(1e9, 5.0).skyline[-1].cost)  # the overflow is real
    got, looked = _calls(make_app(index, refresh_seconds=None), [
        ("GET", "/explain", {"params": {"size": "1e9", "budget": "5"}}),
        ("GET", "/lookup", {"params": {"size": "1e9", "budget": "5"}})])
    assert got.status_code == 200, got.text
    answer = _strict(got.text)
    assert [e["cost"] for e in answer["skyline"]] == [1.0, None]
    assert answer["next_dearer"]["cost"] is None and answer["next_dearer"]["extra_budget"] is None
    assert answer["chosen"]["key"] == "cheap" and answer["next_dearer"]["fits"] is False
    assert looked.status_code == 200 and _strict(looked.text)["model"]["name"] == "cheap"


# ------------------------------------------------------------------ server-side faults
@pytest.fixture
def damaged_store(tmp_path):
    """A stored index whose every model blob had one byte flipped (its digest then fails)."""
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, Y,
                                      features=GROUPS, cv=3)
    path = tmp_path / "index.db"
    polydom.build_index({"a": "1", "b": "2"}, learner, alpha=1.0, n_max=10.0,
                        store=f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        for ident, blob in conn.execute("SELECT id, model_blob FROM expansions").fetchall():
            if blob:
                conn.execute("UPDATE expansions SET model_blob = ? WHERE id = ?",
                             (bytes(blob[:-1]) + bytes([blob[-1] ^ 1]), ident))
        digests = [d for (d,) in conn.execute("SELECT model_sha256 FROM expansions") if d]
    return path, digests


def test_a_damaged_stored_model_on_the_raw_item_path_is_a_500_without_internals(
        damaged_store, caplog):
    path, digests = damaged_store
    index = polydom.open_index(path)
    app = make_app(index, featurizer=_featurizer(), refresh_seconds=None)
    item = {"size": 5, "x": ROW}
    with caplog.at_level(logging.ERROR, logger="polydom.serve"):
        got, rows = _calls(app, [
            ("POST", "/predict", {"json": {"budget": 100, "items": [item]}}),
            ("POST", "/predict", {"json": {"size": 5, "budget": 100, "rows": [ROW]}})])
    for answer in (got, rows):
        assert answer.status_code == 500, answer.text
        body = answer.json()
        assert body["field"] is None
        assert "sha256" not in answer.text and "expansion" not in answer.text
        assert not any(d[:12] in answer.text for d in digests)
        assert "ModelIntegrityError" not in answer.text
    assert "fails its sha256 check" in caplog.text  # the details are in the server's log


def test_a_featurizer_whose_columns_do_not_match_is_refused_at_start(model_index):
    with pytest.raises(InvalidArgumentError, match="columns of feature 'a' differ") as err:
        make_app(model_index, featurizer=SWAPPED, refresh_seconds=None)
    assert "featurizer does not fit build 7" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.timeout(60)  # before the fix, the service started (and served until killed)
def test_polydom_serve_refuses_a_featurizer_that_does_not_fit_in_one_line(damaged_store,
                                                                          capsys):
    path, _ = damaged_store
    code = main(["serve", str(path), "--port", "0", "--featurizer",
                 "tests.test_app.test_service_doors:SWAPPED"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "featurizer does not fit build" in err


# ------------------------------------------------------------------ Python door
@pytest.mark.parametrize("call", [
    lambda i: i.lookup(10**400, 1.0),
    lambda i: i.lookup(1.0, 10**400),
    lambda i: i.lookup(1.0, -(10**400)),
    lambda i: i.explain(1.0, 10**400),
    lambda i: i.predict(np.array([[1e308 * 10] + ROW[1:]]), 10.0, 100.0),
    lambda i: i.predict([ROW[:5] + [-float("inf")]], 10.0, 100.0),
    lambda i: i.predict([[10**400] + ROW[1:]], 10.0, 100.0),
    lambda i: i.predict_item({"size": 10**400, "x": ROW}, 100.0, _featurizer()),
    lambda i: i.predict_item({"size": 1.0, "x": ROW}, 10**400, _featurizer()),
], ids=["lookup-size", "lookup-budget", "lookup-negative", "explain", "predict-inf",
        "predict-minus-inf", "predict-huge-int", "item-size", "item-budget"])
def test_the_python_door_raises_a_named_error_on_bad_numbers(model_index, call):
    with pytest.raises(InvalidArgumentError) as err:
        call(model_index)
    assert isinstance(err.value, PolydomError) and "\n" not in str(err.value)
    assert len(str(err.value)) < 200  # a 400-digit number is shown cut


def test_python_rows_may_mark_a_feature_not_computed_with_nan(model_index):
    """Featurizer.transform's full-width rows hold NaN where a feature was not computed: a
    model that does not use those columns predicts as before."""
    rows = _featurizer().transform([{"size": 1, "x": ROW}], features=["a"])
    assert np.isnan(rows[0, 3:]).all()
    cheap = model_index.lookup(10.0, 12.0)
    assert cheap.name == "a"  # the model on group a only
    np.testing.assert_array_equal(model_index.predict(rows, 10.0, 12.0),
                                  cheap.model.predict(X[:1, :3]))


# ------------------------------------------------------------------ each check once
def test_each_request_checks_its_rule_once_and_looks_up_once(model_index, monkeypatch):
    counts = {"rule": 0, "lookup": 0}
    check_rule, position = Index.check_rule, SkylineTable.lookup_position

    def counted_rule(self, rule):
        counts["rule"] += 1
        return check_rule(self, rule)

    def counted_position(self, *args, **kwargs):
        counts["lookup"] += 1
        return position(self, *args, **kwargs)

    monkeypatch.setattr(Index, "check_rule", counted_rule)
    monkeypatch.setattr(SkylineTable, "lookup_position", counted_position)
    app = make_app(model_index, refresh_seconds=None)
    query = {"size": "10", "budget": "100", "rule": "one_se"}
    for method, path, kwargs, lookups in [
            ("GET", "/lookup", {"params": query}, 1),
            ("GET", "/explain", {"params": query}, 2),  # the chosen entry and the best
            ("POST", "/predict", {"json": {**query, "rows": [ROW]}}, 1)]:
        counts.update(rule=0, lookup=0)
        got, = _calls(app, [(method, path, kwargs)])
        assert got.status_code == 200, got.text
        assert counts == {"rule": 1, "lookup": lookups}, path
