"""One build, every door: Python, the CLI (text, --json, --csv), HTTP, SQL and Datasette agree.

Builds one store (breast-cancer feature groups, a logistic regression, costs in ms, string
labels that look like numbers: "1" and "2"), then asks every door the same (size, budget)
queries and compares each answer with the Python API's :meth:`polydom.Index.lookup`
(:meth:`Hit.to_dict`): the model's name, features (in order), learner, accuracy, its
standard error, cost, unit and build.  The serving core's record (``lookup --json``, HTTP
``/lookup``) must be the same JSON byte for byte; numbers equal (the text table to the
digits it prints), names and units identical; ``POST /predict``'s labels equal Python's,
with their type (text stays text).  Prints a table of the doors with their differences (0 is
the claim) and exits 1 when any differs.

    python benchmarks/doors_agree.py [--queries 60] [--keep DIR]

``tests/test_app/test_doors_agree.py`` runs :func:`compare` on a smaller build.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import json
import math
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import polydom  # noqa: E402

FIELDS = ("name", "features", "learner", "accuracy", "accuracy_se", "cost", "unit", "build")
#: The doors that show features as text in another form (SQL, Datasette) are compared on
#: the rest: their ``features`` column is the stored text of the views.
TEXT_FEATURES = ("SQL (canned query, sqlite3)", "Datasette (browse)")
NUMBERS = ("accuracy", "accuracy_se", "cost")


def build_store(folder: Path, groups: int = 4) -> str:
    """A store of ``groups`` breast-cancer feature groups (6 columns each), costs in ms."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    import learners

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(y == 1, "2", "1")  # string labels that look like numbers
    names = ["shape", "texture", "area", "edges", "symmetry"][:groups]
    features = {name: list(range(6 * i, 6 * i + 6)) for i, name in enumerate(names)}
    costs = {name: f"{0.2 * (i + 1)} + {0.003 * (i + 1)}*n" for i, name in enumerate(names)}
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, y,
                                      features=features, cv=3)
    url = f"sqlite:///{folder / 'doors.db'}"
    polydom.build_index(costs, learner, n_min=1.0, n_max=1000.0, store=url, cost_unit="ms")
    return url


def queries(index: Any, count: int, seed: int = 0) -> list[tuple[float, float]]:
    """``count`` (size, budget) pairs: sizes across the domain, budgets between the costs
    of the skyline at the size (every entry in reach, and none)."""
    rng = np.random.default_rng(seed)
    lo, hi = index.table.domain
    out = []
    for _ in range(count):
        size = float(np.round(rng.uniform(lo, hi), 1))
        costs = sorted(entry.cost(size) for entry in index.table.skyline(size))
        edges = [0.5 * costs[0]] + [0.5 * (a + b) for a, b in zip(costs, costs[1:], strict=False)]
        edges.append(2.0 * costs[-1])
        out.append((size, float(np.round(edges[rng.integers(len(edges))], 6))))
    return out


def _row(values: dict[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {field: values.get(field) for field in FIELDS}


def python_door(url: str, qs: list) -> list:
    index = polydom.open_index(url)
    out = []
    for size, budget in qs:
        hit = index.lookup(size, budget)
        out.append(None if hit is None else _row(hit.to_dict()))
    return out


def _cli(args: list[str]) -> str:
    from polydom.app.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(args)
    if status != 0:
        raise RuntimeError(f"polydom {' '.join(args)} exited {status}")
    return buffer.getvalue()


def _queries_file(qs: list, folder: Path) -> str:
    path = folder / "queries.txt"
    path.write_text("".join(f"{size!r} {budget!r}\n" for size, budget in qs))
    return str(path)


def cli_json_door(url: str, qs: list, folder: Path) -> list:
    answers = json.loads(_cli(["lookup", url, "--queries", _queries_file(qs, folder),
                               "--json"]))
    return [_row(a["model"]) if a["fits"] else None for a in answers]


def records_differ(url: str, qs: list, folder: Path) -> list[str]:
    """Queries whose ``lookup --json`` record is not byte for byte HTTP ``/lookup``'s."""
    from starlette.testclient import TestClient

    from polydom.app.service import make_app

    cli = json.loads(_cli(["lookup", url, "--queries", _queries_file(qs, folder), "--json"]))
    out = []
    with TestClient(make_app(polydom.open_index(url), refresh_seconds=None)) as client:
        for (size, budget), record in zip(qs, cli, strict=True):
            http = client.get("/lookup", params={"size": repr(size), "budget": repr(budget)})
            if json.dumps(http.json()) != json.dumps(record):
                out.append(f"({size}, {budget}): {http.text} vs {json.dumps(record)}")
    return out


def predict_differs(url: str, qs: list) -> list[str]:
    """Queries whose ``POST /predict`` labels differ from Python's ``Index.predict``, in
    value or type (a label "1" must stay text)."""
    from sklearn.datasets import load_breast_cancer
    from starlette.testclient import TestClient

    from polydom.app.service import make_app

    X, _ = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    index = polydom.open_index(url)
    rows = X[:5, : index.n_columns]
    out = []
    with TestClient(make_app(index, refresh_seconds=None)) as client:
        for size, budget in qs:
            got = client.post("/predict", json={"size": size, "budget": budget,
                                                "rows": rows.tolist()}).json()
            hit = index.lookup(size, budget)
            want = None if hit is None else index.predict(rows, size, budget).tolist()
            if got["labels"] != want or (want and {type(v) for v in got["labels"]}
                                         != {type(v) for v in want}):
                out.append(f"({size}, {budget}): {got['labels']} vs {want}")
    return out


def cli_csv_door(url: str, qs: list, folder: Path) -> list:
    text = _cli(["lookup", url, "--queries", _queries_file(qs, folder), "--csv"])
    out = []
    for row in csv.DictReader(io.StringIO(text)):
        if row["fits"] not in ("True", "true", "1"):
            out.append(None)
            continue
        out.append({"name": row["name"], "learner": row["learner"],
                    "features": row["features"].split("+") if row["features"] else [],
                    "accuracy": float(row["accuracy"]),
                    "accuracy_se": float(row["accuracy_se"]) if row["accuracy_se"] else None,
                    "cost": float(row["cost"]), "unit": row["unit"],
                    "build": int(row["build"])})
    return out


def cli_text_door(url: str, qs: list, folder: Path) -> list:
    """The text table, one line a query; numbers as printed (compared to their digits)."""
    out = []
    for size, budget in qs:
        from polydom.app.cli import main

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
            status = main(["lookup", url, "--size", repr(size), "--budget", repr(budget)])
        if status == 1:
            out.append(None)
            continue
        header, rule, values = buffer.getvalue().splitlines()[:3]
        spans, start = [], 0
        for dashes in rule.split("  "):  # the rule under the header marks each column
            start = rule.index(dashes, start) if dashes else start
            spans.append((start, start + len(dashes)))
            start += len(dashes)
        cells = {header[a:b].strip(): values[a:b].strip() for a, b in spans if b > a}
        out.append({"text": values, "cells": cells})
    return out


def batch_door(url: str, qs: list, folder: Path) -> list:
    """``polydom predict`` (the batch door) over a CSV of rows with a size column, one run
    per budget; each output line is compared as the model it names."""
    index = polydom.open_index(url)
    width = index.n_columns
    out = []
    for k, (size, budget) in enumerate(qs):
        data, preds = folder / f"batch{k}.csv", folder / f"batch{k}.jsonl"
        data.write_text("size," + ",".join(f"x{j}" for j in range(width)) + "\n"
                        + f"{size!r}," + ",".join("0" for _ in range(width)) + "\n")
        with contextlib.redirect_stderr(io.StringIO()):
            _cli(["predict", url, "--data", str(data), "--out", str(preds), "--size-from",
                  "size", "--budget", repr(budget), "--no-progress"])
        record = json.loads(preds.read_text().splitlines()[0])
        out.append(None if record["model"] is None else {
            "name": record["model"], "features": list(record["features"]),
            "learner": record["learner"], "accuracy": record["accuracy"],
            "cost": record["predicted_cost"], "unit": record["unit"],
            "build": record["build"]})
    return out


def http_door(url: str, qs: list) -> list:
    from starlette.testclient import TestClient

    from polydom.app.service import make_app

    out = []
    with TestClient(make_app(polydom.open_index(url), refresh_seconds=None)) as client:
        for size, budget in qs:
            response = client.get("/lookup", params={"size": repr(size), "budget": repr(budget)})
            response.raise_for_status()
            model = response.json()["model"]
            out.append(None if model is None else _row(model))
    return out


def _canned_sql() -> str:
    from polydom.app.commands.browse import CANNED_QUERIES

    return CANNED_QUERIES["model_for_size_and_budget"]["sql"]


def _sql_row(row: dict[str, Any]) -> dict[str, Any]:
    return {"name": row["candidate"], "features": row["features"],
            "learner": row["learner"], "accuracy": row["accuracy"],
            "accuracy_se": row["accuracy_se"], "cost": row["cost"], "unit": row["unit"],
            "build": row["build"]}


def sql_door(url: str, qs: list) -> list:
    """The SQL a person runs in the sqlite3 shell: the canned query over the views."""
    path = url.removeprefix("sqlite:///")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    out = []
    try:
        for size, budget in qs:
            rows = conn.execute(_canned_sql(), {"n": size, "budget": budget}).fetchall()
            out.append(_sql_row(dict(rows[0])) if rows else None)
    finally:
        conn.close()
    return out


def datasette_door(url: str, qs: list) -> list:
    """``polydom browse``'s Datasette (guarded, with its metadata), asked in process."""
    from datasette.app import Datasette

    from polydom.app.browse_guard import read_schema, register_guard
    from polydom.app.commands.browse import SETTINGS, browse_metadata, sqlite_file

    path = sqlite_file(url)
    index = polydom.open_index(url)
    unit = index.info.get("cost_unit", "units")
    tables, _ = read_schema(path)
    register_guard(path.stem, tables)
    ds = Datasette(immutables=[str(path)], metadata=browse_metadata(path.stem, index, unit, []),
                   settings=SETTINGS)

    async def ask() -> list:
        answers = []
        for size, budget in qs:
            response = await ds.client.get(
                f"/{path.stem}/model_for_size_and_budget.json",
                params={"n": repr(size), "budget": repr(budget), "_shape": "array"})
            rows = response.json()
            answers.append(_sql_row(rows[0]) if rows else None)
        return answers

    return asyncio.run(ask())


def _differs(expected: dict | None, got: dict | None, fields: tuple = FIELDS) -> str | None:
    if (expected is None) != (got is None):
        return f"expected {expected}, got {got}"
    if expected is None:
        return None
    for field in fields:
        a, b = expected[field], got[field]
        if field in NUMBERS and a is not None and b is not None:
            if not math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15):
                return f"{field}: {a!r} vs {b!r}"
        elif a != b:
            return f"{field}: {a!r} vs {b!r}"
    return None


def _text_differs(expected: dict | None, got: dict | None) -> str | None:
    """The text line holds the name, learner and numbers as printed (to their digits)."""
    if (expected is None) != (got is None):
        return f"expected {expected}, got {got}"
    if expected is None:
        return None
    cells = got["cells"]
    if cells.get("candidate") != expected["name"] or cells.get("learner") != expected["learner"]:
        return f"name/learner {expected['name']!r}/{expected['learner']!r} vs {cells}"
    unit = next((k for k in cells if k.startswith("cost (")), "")
    if unit != f"cost ({expected['unit']})":
        return f"unit {expected['unit']!r} vs column {unit!r}"
    for field, column in (("accuracy", "accuracy"), ("accuracy_se", "std. error"),
                          ("cost", unit)):
        shown = cells.get(column)
        if shown is None:
            return f"no {column!r} column in {list(cells)}"
        if expected[field] is None:
            if shown not in ("-", ""):
                return f"{field}: None printed as {shown!r}"
            continue
        digits = len(shown.split(".")[1]) if "." in shown else 0
        if not math.isclose(float(shown), float(expected[field]),
                            abs_tol=0.51 * 10.0 ** -digits, rel_tol=1e-3):
            return f"{field}: {expected[field]!r} printed as {shown!r}"
    return None


def _batch_differs(expected: dict | None, got: dict | None) -> str | None:
    """The batch record holds no standard error: every other field is compared."""
    return _differs(expected, got, tuple(f for f in FIELDS if f != "accuracy_se"))


def _views_differ(expected: dict | None, got: dict | None) -> str | None:
    return _differs(expected, got, tuple(f for f in FIELDS if f != "features"))


def compare(url: str, qs: list, folder: Path) -> list[dict[str, Any]]:
    """One row per door: queries asked, answers identical to Python's, the differences."""
    truth = python_door(url, qs)
    doors = {
        "Python Index.lookup": (truth, _differs),
        "CLI lookup (text)": (cli_text_door(url, qs, folder), _text_differs),
        "CLI lookup --json": (cli_json_door(url, qs, folder), _differs),
        "CLI lookup --csv": (cli_csv_door(url, qs, folder), _differs),
        "HTTP GET /lookup": (http_door(url, qs), _differs),
        "batch door (polydom predict)": (batch_door(url, qs, folder), _batch_differs),
        "SQL (canned query, sqlite3)": (sql_door(url, qs), _views_differ),
        "Datasette (browse)": (datasette_door(url, qs), _views_differ),
    }
    rows = []
    for door, (answers, differs) in doors.items():
        found = [(q, d) for q, e, g in zip(qs, truth, answers, strict=True)
                 if (d := differs(e, g)) is not None]
        rows.append({"door": door, "queries": len(qs),
                     "fits": sum(a is not None for a in answers),
                     "identical": len(qs) - len(found), "differences": len(found),
                     "first": found[0] if found else None})
    return rows


def print_table(rows: list[dict[str, Any]], sample: dict | None) -> None:
    width = max(len(r["door"]) for r in rows)
    print(f"{'door':<{width}}  queries  fits  identical  differences")
    for r in rows:
        print(f"{r['door']:<{width}}  {r['queries']:>7}  {r['fits']:>4}  {r['identical']:>9}"
              f"  {r['differences']:>11}")
        if r["first"] is not None:
            print(f"    first difference at (size, budget) = {r['first'][0]}: {r['first'][1]}")
    if sample is not None:
        print("one answer, as every door gives it:", json.dumps(sample))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--keep", metavar="DIR", help="build the store in DIR and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        url = build_store(folder)
        qs = queries(polydom.open_index(url), args.queries)
        rows = compare(url, qs, folder)
        sample = next((a for a in python_door(url, qs) if a is not None), None)
        print(f"store {url}, build of 4 feature groups, costs in ms")
        print_table(rows, sample)
        records = records_differ(url, qs, folder)
        labels = predict_differs(url, qs)
        print(f"lookup --json vs HTTP /lookup, byte for byte: {len(records)} differences")
        print(f"POST /predict labels vs Index.predict (value and type): {len(labels)} "
              "differences")
    return 0 if all(r["differences"] == 0 for r in rows) and not records and not labels else 1


if __name__ == "__main__":
    sys.exit(main())
