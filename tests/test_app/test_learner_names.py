"""One learner name everywhere (issue 23): a lattice candidate carries the name of the learner
that trained it (its registry name, or ``sklearn:<classes>`` for an estimator wrapped without
one), and Hit.learner, the CLI (text, --json, --csv), the service's JSON and the SQL views
all show that name."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import lattice
import learners
import learners.sklearn_learner
import polydom
from polydom.app.cli import main
from polydom.pipeline.subsets import index_over_subsets, with_costs

CONFIG = {"data": "breast_cancer", "learner": "tree", "store": "bc.db", "domain": [1, 100],
          "cost_unit": "ms", "features": {"mean": [0, 1], "worst": [20, 21]},
          "costs": {"mean": "1 + n", "worst": "5 + 0.01*n**2"}}
COSTS = {"mean": "1 + n", "worst": "5 + 0.01*n**2"}
COLUMNS = {"mean": [0, 1], "worst": [20, 21]}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A store built by `polydom build` with the registered lattice learner "tree"."""
    folder = tmp_path_factory.mktemp("names")
    (folder / "cfg.json").write_text(json.dumps(CONFIG))
    assert main(["build", str(folder / "cfg.json")]) == 0
    return folder / "bc.db"


def _run(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------- the names themselves
def test_an_estimator_without_a_registry_name_is_named_by_its_classes():
    tree = DecisionTreeClassifier(max_depth=2)
    assert learners.sklearn_learner.estimator_name(tree) == "sklearn:DecisionTreeClassifier"
    pipe = make_pipeline(StandardScaler(), "passthrough", LogisticRegression())
    assert (learners.sklearn_learner.estimator_name(pipe)
            == "sklearn:StandardScaler+LogisticRegression")
    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    assert learners.SklearnLearner(pipe, X, y).learner_name == (
        "sklearn:StandardScaler+LogisticRegression")
    named = learners.SklearnLearner(tree, X, y, name="tree")
    assert named.learner_name == "tree"
    assert named.describe() == learners.SklearnLearner(tree, X, y).describe()  # a label only
    assert lattice.learner_name(learners.SyntheticLearner(len)) == "synthetic"

    class Mine:
        def expand(self, features): ...

    assert lattice.learner_name(Mine()) == "Mine"


@pytest.mark.parametrize("name", ["", "  ", 5])
def test_a_bad_name_is_refused_before_the_store_is_touched(tmp_path, name):
    X, y = load_breast_cancer(return_X_y=True)
    learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=2), X, y,
                                      features=COLUMNS, cv=3, name=name)
    with pytest.raises(ValueError, match="name must be a non-empty text or None, got"):
        polydom.build_index(COSTS, learner, store=tmp_path / "x.db")
    assert list(tmp_path.iterdir()) == []


def test_lattice_candidates_and_hits_carry_the_learner_that_trained_them():
    X, y = load_breast_cancer(return_X_y=True)
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    learner = learners.SklearnLearner(est, X, y, features=COLUMNS, cv=3)
    index = polydom.build_index(COSTS, learner, n_min=1.0, n_max=100.0)
    names = {c.learner for c in index.candidates}
    assert names == {"sklearn:StandardScaler+LogisticRegression"}
    hit = index.lookup(10.0, 1000.0)
    assert hit.learner == "sklearn:StandardScaler+LogisticRegression"
    assert "learner='sklearn:StandardScaler+LogisticRegression'" in repr(hit)
    every = lattice.expand_all(COSTS, learners.SyntheticLearner(lambda fs: 0.5 + len(fs) / 4))
    assert {c.learner for c in every.all_candidates()} == {"synthetic"}


def test_subset_indexes_name_their_estimator_and_recosting_keeps_the_name():
    X, y = load_breast_cancer(return_X_y=True)
    index = index_over_subsets(X, y, COLUMNS, COSTS, [["mean"], ["mean", "worst"]],
                               DecisionTreeClassifier(max_depth=2, random_state=0), 1.0, 100.0)
    assert {c.learner for c in index.candidates} == {"sklearn:DecisionTreeClassifier"}
    recosted = with_costs(index, {"mean": "2", "worst": "3"})
    assert {c.learner for c in recosted.candidates} == {"sklearn:DecisionTreeClassifier"}


# ------------------------------------------------------------------- where the name shows
def test_a_config_build_names_its_candidates_by_the_registry_name_everywhere(built, capsys):
    url = str(built)
    index = polydom.open_index(url)
    assert {c.learner for c in index.candidates} == {"tree"}
    assert index.lookup(10.0, 1000.0).learner == "tree"

    text = _run(["lookup", url, "--size", "10", "--budget", "1000"], capsys)
    header, _, row = text.splitlines()
    assert row.split()[header.split().index("learner")] == "tree"
    assert json.loads(_run(["lookup", url, "--size", "10", "--budget", "1000", "--json"],
                           capsys))["model"]["learner"] == "tree"
    rows = list(csv.DictReader(io.StringIO(
        _run(["lookup", url, "--size", "10", "--budget", "1000", "--csv"], capsys))))
    assert [r["learner"] for r in rows] == ["tree"]

    shown = json.loads(_run(["inspect", url, "--json"], capsys))
    assert {e["learner"] for e in shown["skyline"]} == {"tree"}
    rows = list(csv.DictReader(io.StringIO(_run(["inspect", url, "--csv"], capsys))))
    assert rows and {r["learner"] for r in rows} == {"tree"}

    with sqlite3.connect(f"file:{built}?mode=ro", uri=True) as db:
        assert {r for (r,) in db.execute("SELECT DISTINCT learner FROM skyline")} == {"tree"}
        assert {r for (r,) in db.execute("SELECT DISTINCT learner FROM candidates")} == {"tree"}


def test_the_service_answers_with_the_registry_name(built):
    pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
    httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
    from polydom.app.service import make_app

    index = polydom.open_index(str(built))

    async def ask() -> tuple:
        transport = httpx.ASGITransport(app=make_app(index, refresh_seconds=None))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            lookup = await client.get("/lookup", params={"size": 10, "budget": 1000})
            explain = await client.get("/explain", params={"size": 10, "budget": 1000})
            return lookup.json(), explain.json()

    lookup, explain = asyncio.run(ask())
    assert lookup["model"]["learner"] == "tree"
    assert {e["learner"] for e in explain["skyline"]} == {"tree"}


def test_builds_show_the_short_learner_name_and_keep_the_description(built, capsys):
    url = str(built)
    text = _run(["builds", "list", url], capsys)
    header, _, row = text.splitlines()
    assert row.split()[header.split().index("learner")] == "tree"
    record, = json.loads(_run(["builds", "list", url, "--json"], capsys))
    assert record["learner"] == "tree"
    assert record["learner_description"].startswith("SklearnLearner(DecisionTreeClassifier(")
    row, = csv.DictReader(io.StringIO(_run(["builds", "list", url, "--csv"], capsys)))
    assert row["learner"] == "tree" and row["learner_description"].startswith("SklearnLearner(")
    shown = json.loads(_run(["inspect", url, "--json"], capsys))
    assert [b["learner"] for b in shown["builds"]] == ["tree"]
    builds_table = _run(["inspect", url], capsys).split("\n\n")[0].splitlines()[1:]
    header, _, row = builds_table
    assert row.split()[header.split().index("learner")] == "tree"
    with sqlite3.connect(f"file:{built}?mode=ro", uri=True) as db:
        assert db.execute("SELECT learner FROM build_summary").fetchall() == [("tree",)]


def test_a_version_2_store_shows_its_learners_as_stored(tmp_path, capsys):
    v2 = tmp_path / "v2.db"
    v2.write_bytes((Path(__file__).parents[1] / "test_storage" / "data" / "schema_v2.db")
                   .read_bytes())
    shown = json.loads(_run(["inspect", str(v2), "--json"], capsys))
    assert {e["learner"] for e in shown["skyline"]} == {"lattice", "tree"}
    record, = shown["builds"]
    assert record["learner"] == record["learner_description"]
    assert record["learner"].startswith("SklearnLearner(LogisticRegression()")
