"""A build is verified once: an open reads each of the build's tables in one statement (the
cost model rows give the model and the digest its seal covers, the expansion rows their
seals and their models), ``publish`` reads back no cost model that ``begin_build`` wrote,
and an edited blob or row is still refused."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import storage

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:120], Y[:120]
FEATURES = {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]}
COSTS = {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}
#: The tables a build's rows are in (and the store-wide ones an open reads).
TABLES = ("builds", "build_seals", "build_arrays", "publications", "features",
          "feature_costs", "bundles", "bundle_atoms", "expansions", "candidates",
          "candidate_costs", "candidate_needs", "ranges", "skyline_entries")
COST_MODEL = ("features", "feature_costs", "bundles", "bundle_atoms")
_FROM = re.compile(r"\bFROM\s+(\w+)", re.IGNORECASE)


@contextmanager
def selects() -> Iterator[Counter]:
    """Count the SELECT statements run meanwhile, by the table they read first."""
    counts: Counter = Counter()

    def seen(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("SELECT"):
            found = _FROM.search(statement)
            counts[found.group(1) if found else "?"] += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        yield counts
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)


def _learner():
    return learners.SklearnLearner(DecisionTreeClassifier(max_depth=2, random_state=0), X, Y,
                                   features=FEATURES, cv=2)


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "s.db"
    polydom.build_index(COSTS, _learner(), alpha=1.0, n_max=100.0, store=str(path))
    return path


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.mark.parametrize("read_from", ["arrays", "rows"])
def test_an_open_reads_each_table_once(store, read_from):
    if read_from == "rows":
        _sql(store, "DELETE FROM build_arrays")
    with selects() as counts:
        index = polydom.open_index(store)
    assert index.info["read_from"] == read_from
    assert counts["expansions"] == 1 and counts["candidates"] == 1 and counts["features"] == 1
    assert {t: counts[t] for t in TABLES if counts[t] > 1} == {}


def test_publish_reads_back_no_cost_model(tmp_path):
    path = tmp_path / "p.db"
    cands = [polydom.Candidate(f"c{i}", 0.5 + 0.1 * i, [1.0 + i], {"mean"}) for i in range(4)]
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), COSTS, FEATURES)
    with storage.IndexStore(str(path)) as st:
        build_id = st.begin_build({"alpha": 1.0}, COSTS, FEATURES)
        with selects() as counts:
            st.publish(build_id, index)
    assert counts["builds"] >= 1 and not any(counts[t] for t in COST_MODEL)
    assert polydom.open_index(path).lookup(5.0, 100.0).key == "c3"  # its seal verifies


def test_a_publish_in_another_store_object_reads_the_cost_model_once(tmp_path):
    path = tmp_path / "q.db"
    cands = [polydom.Candidate("c", 0.5, [1.0], {"mean"})]
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), COSTS, FEATURES)
    with storage.IndexStore(str(path)) as st:
        build_id = st.begin_build({"alpha": 1.0}, COSTS, FEATURES)
    with storage.IndexStore(str(path)) as st, selects() as counts:
        st.publish(build_id, index)
    assert all(counts[t] == 1 for t in COST_MODEL)
    assert polydom.open_index(path).candidates[0].key == "c"


@pytest.mark.parametrize("edit, message", [
    ("UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0", "candidates"),
    ("UPDATE skyline_entries SET candidate_id = 0 WHERE rank = 1", "skyline entries"),
    ("UPDATE ranges SET n_hi = 99.0 WHERE range_id = 0", "ranges"),
    ("UPDATE build_arrays SET blob = CAST(blob || x'00' AS BLOB)", "sha256"),
    ("UPDATE features SET columns = '[0,1,2]' WHERE feature_id = 0", "cost model"),
], ids=["candidate", "skyline entry", "range", "blob", "cost model"])
def test_an_open_that_reads_once_still_refuses_an_edit(store, edit, message):
    _sql(store, edit)
    with selects() as counts, pytest.raises(storage.IndexIntegrityError, match=message):
        polydom.open_index(store)
    assert {t: counts[t] for t in TABLES if counts[t] > 1} == {}
