"""The hardening of issue 14 on PostgreSQL (skipped without ``POLYDOM_TEST_PG_URL``): foreign
databases refused and left unchanged, builds deleted and the tables vacuumed, build seals and
the store key, and hostile nested sub-models refused with the rows left unchanged."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import polydom.errors
import storage
from polydom.app.cli import main
from tests.storage_support import execute_sql, load_models

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150], Y[:150]
FEATURES = {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]}
COSTS = {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}


def _build(url, depth=2, alpha=1.0, **options):
    learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=depth, random_state=0),
                                      X, Y, features=FEATURES, cv=2)
    return polydom.build_index(COSTS, learner, alpha=alpha, n_max=100.0, store=url, **options)


def _snapshot(url: str) -> dict[str, str]:
    """Every table of the database with a digest of its rows (in a fixed order)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            names = [r[0] for r in conn.exec_driver_sql(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            out = {}
            for name in sorted(names):
                rows = conn.exec_driver_sql(f'SELECT * FROM "{name}"').fetchall()
                out[name] = hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()
            return out
    finally:
        engine.dispose()


def _foreign(url: str) -> str:
    execute_sql(url, "CREATE TABLE people (name TEXT)", "INSERT INTO people VALUES ('ada')")
    return url


# ------------------------------------------------------------------- foreign databases
def test_build_refuses_a_foreign_postgresql_database_and_leaves_it_unchanged(pg_url):
    before = _snapshot(_foreign(pg_url))
    with pytest.raises(polydom.errors.ForeignDatabaseError, match=r"tables: people"):
        _build(pg_url)
    assert _snapshot(pg_url) == before
    index = _build(pg_url, allow_foreign_database=True)  # asked explicitly
    assert polydom.open_index(pg_url).lookup(10.0, 50.0).key == index.lookup(10.0, 50.0).key


def test_readers_of_a_foreign_postgresql_database_write_nothing(pg_url, capsys):
    before = _snapshot(_foreign(pg_url))
    with pytest.raises(storage.StoreNotFoundError):
        polydom.open_index(pg_url)
    with pytest.raises(storage.StoreNotFoundError):
        polydom.list_builds(pg_url)
    assert main(["inspect", pg_url]) == 2
    assert "holds no polydom index store" in capsys.readouterr().err
    assert _snapshot(pg_url) == before


# ------------------------------------------------------------------- seals and the key
@pytest.mark.parametrize("sql", [
    "UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0",
    "UPDATE candidate_costs SET coefficient = 0 WHERE candidate_id = 1",
    "DELETE FROM skyline_entries WHERE rank = 0 AND range_id = 0",
])
def test_edits_in_sql_are_refused_on_open_on_postgresql(pg_url, sql):
    _build(pg_url)
    assert polydom.open_index(pg_url).info["sealed"] is True
    execute_sql(pg_url, sql)
    before = _snapshot(pg_url)
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        polydom.open_index(pg_url)
    assert _snapshot(pg_url) == before


def test_edited_postgresql_build_opens_rebuilt_when_asked(pg_url):
    _build(pg_url)
    execute_sql(pg_url, "UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0")
    index = polydom.open_index(pg_url, rebuild=True)
    assert "rebuilt" in index.info
    index.table._check()
    naive = polydom.NaiveLookup.build(index.candidates, 0.0, 100.0)
    for n in np.linspace(0.0, 100.0, 5):
        for budget in (0.0, 3.0, 30.0, 200.0):
            assert index.table.lookup_position(float(n), budget) == naive.lookup_position(
                float(n), budget)


def test_store_key_on_postgresql_refuses_a_blob_rewritten_with_a_recomputed_sha256(pg_url):
    from sklearn.preprocessing import FunctionTransformer

    from storage.blobs import dump_model, sha256_hex

    _build(pg_url, store_key="s3cret")
    assert polydom.open_index(pg_url, key="s3cret").lookup(10.0, 50.0).model is not None
    with pytest.raises(storage.StoreKeyError, match="signed with key id"):
        polydom.open_index(pg_url)
    blob, _ = dump_model(FunctionTransformer().fit(X, Y))
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE expansions SET model_blob = :b, model_sha256 = :s"),
                     {"b": blob, "s": sha256_hex(blob)})
    engine.dispose()
    with pytest.raises(storage.IndexIntegrityError, match="its expansions"):
        polydom.open_index(pg_url, key="s3cret")  # the build's seal binds the expansion


# ------------------------------------------------------------------- deleting builds
def _last_vacuum(url: str, table: str):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(
                "SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = %s",
                (table,)).scalar()
    finally:
        engine.dispose()


def test_builds_delete_on_postgresql_keeps_the_current_build_and_vacuums(pg_url, capsys):
    _build(pg_url, depth=3)
    _build(pg_url, depth=4)
    _build(pg_url, depth=2, alpha=1.2)
    _build(pg_url, depth=2, alpha=1.0)  # current: reuses the expansions of the alpha=1.2 one
    expected = polydom.open_index(pg_url)
    assert _last_vacuum(pg_url, "candidates") is None
    assert main(["builds", "delete", pg_url]) == 0
    assert capsys.readouterr().out.startswith("deleted builds 1, 2, 3 and ")
    [left] = polydom.list_builds(pg_url)
    assert left.build_id == 4 and left.is_current
    engine = sa.create_engine(pg_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT DISTINCT build_id FROM candidates").scalars().all() \
            == [4]
    engine.dispose()
    # VACUUM ran: the statistics of the server say so once the vacuuming session reported
    for _ in range(50):
        if _last_vacuum(pg_url, "candidates") is not None:
            break
        time.sleep(0.1)
    assert _last_vacuum(pg_url, "candidates") is not None
    reopened = polydom.open_index(pg_url)
    for n in (1.0, 50.0):
        for budget in (3.0, 40.0):
            assert reopened.lookup(n, budget).key == expected.lookup(n, budget).key
            rows = X[:20, :22]
            assert (reopened.predict(rows, n, budget) == expected.predict(rows, n, budget)).all()


def test_builds_delete_on_postgresql_refuses_the_current_build(pg_url, capsys):
    _build(pg_url)
    before = _snapshot(pg_url)
    assert main(["builds", "delete", pg_url, "1"]) == 2
    assert "is the current build" in capsys.readouterr().err
    assert _snapshot(pg_url) == before


# ------------------------------------------------------------------- hostile nested models
def test_open_index_refuses_a_postgresql_store_whose_dag_bank_names_a_refused_class(
        pg_url, monkeypatch):
    from sklearn.naive_bayes import BernoulliNB

    import learners.budgeted.sklearn_blobs as sklearn_blobs
    from learners import DAGClassifier, sweep

    features = {"mean": [0, 1], "error": [2, 3]}
    costs = {"mean": "1 + 0.1*n", "error": "0.5"}
    Xs = X[:, [0, 1, 10, 11]]
    with monkeypatch.context() as patch:  # a writer that skips the allow-list check
        patch.setattr(sklearn_blobs, "skops_refusals", lambda data: [])
        extra = sweep(DAGClassifier(feature_groups=features, cv=2, estimator=BernoulliNB()),
                      [0.02], Xs[:100], Y[:100], costs, evaluation=(Xs[100:], Y[100:]))
        learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=1), Xs[:100], Y[:100],
                                          features=features, cv=2)
        polydom.build_index(costs, learner, n_max=100.0, store=pg_url, extra_candidates=extra)
    before = _snapshot(pg_url)
    with pytest.raises(storage.UntrustedModelError, match=r"bank\.\d.*BernoulliNB"):
        load_models(polydom.open_index(pg_url))  # models are decoded on first use
    assert _snapshot(pg_url) == before
