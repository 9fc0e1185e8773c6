"""One build read through every door gives one answer (issue 28's must-show).

``benchmarks/doors_agree.py`` builds a store (costs in ms) and asks Python's
``Index.lookup``, ``polydom lookup`` (text, ``--json``, ``--csv``), ``GET /lookup``, the
canned SQL query over the views and ``polydom browse``'s Datasette the same (size, budget)
queries on a store in ms with string labels "1" and "2": names, features, learners,
accuracies, standard errors, costs, units and builds must be identical (the text table to
the digits it prints; the views' features text is not compared), ``lookup --json`` and
``/lookup`` byte for byte, ``/predict``'s labels Python's with their type.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("datasette")
pytest.importorskip("starlette")

ROOT = Path(__file__).resolve().parents[2]


def _check_module():
    spec = importlib.util.spec_from_file_location("doors_agree",
                                                  ROOT / "benchmarks" / "doors_agree.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_door_gives_the_same_answers_as_index_lookup(tmp_path):
    check = _check_module()
    url = check.build_store(tmp_path, groups=3)
    import polydom

    queries = check.queries(polydom.open_index(url), 16, seed=1)
    rows = check.compare(url, queries, tmp_path)
    assert [r["door"] for r in rows] == [
        "Python Index.lookup", "CLI lookup (text)", "CLI lookup --json", "CLI lookup --csv",
        "HTTP GET /lookup", "batch door (polydom predict)", "SQL (canned query, sqlite3)",
        "Datasette (browse)"]
    assert all(r["fits"] == rows[0]["fits"] for r in rows)
    assert {r["door"]: r["first"] for r in rows if r["differences"]} == {}
    # the CLI's --json record is HTTP's byte for byte; /predict keeps text labels text
    assert check.records_differ(url, queries, tmp_path) == []
    assert check.predict_differs(url, queries) == []


def test_the_check_sees_a_door_that_differs(tmp_path):
    """A renamed model in the SQL door is counted (the comparison can fail)."""
    check = _check_module()
    expected = {"name": "a+b", "features": ["a", "b"], "learner": "x", "accuracy": 0.9,
                "accuracy_se": 0.01, "cost": 2.0, "unit": "ms", "build": 1}
    assert check._differs(expected, dict(expected)) is None
    assert "name" in check._differs(expected, {**expected, "name": "b+a"})
    assert "cost" in check._differs(expected, {**expected, "cost": 2.0 * (1 + 1e-9)})
    assert "unit" in check._differs(expected, {**expected, "unit": "s"})
    assert check._differs(expected, None) is not None
