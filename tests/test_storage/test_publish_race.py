"""Concurrent publishers (processes) on one store (issue 25): exactly one current build after
every round, the ``skyline`` view shows one build, and identical builds started at once end
cleanly (one publishes, the others are told in one line, or reuse it through build_index).
PostgreSQL runs with ``POLYDOM_TEST_PG_URL`` (``source .ci/postgres.sh``)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time

import pytest
import sqlalchemy as sa

import polydom
from tests.storage_support import BACKENDS, fresh_url
from tests.test_storage.publisher import SETS, create, publish

pytestmark = pytest.mark.slow  # six processes started (spawn) and three rounds each

PUBLISHERS = 6
ROUNDS = 3


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path):
    yield from fresh_url(request.param, tmp_path)


def _state(url: str) -> tuple[list[int], list[int], int | None]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            current = conn.exec_driver_sql(
                "SELECT id FROM builds WHERE is_current ORDER BY id").scalars().all()
            shown = conn.exec_driver_sql(
                "SELECT DISTINCT build_id FROM skyline ORDER BY build_id").scalars().all()
            top = conn.exec_driver_sql(
                "SELECT build_id FROM publications ORDER BY sequence DESC LIMIT 1").scalar()
        return current, shown, top
    finally:
        engine.dispose()


def _run(pool, url: str, learners: list[str]) -> list[str]:
    start_at = time.time() + 1.0
    return pool.starmap(publish, [(url, name, start_at) for name in learners])


@pytest.fixture(scope="module")
def pool():
    with multiprocessing.get_context("spawn").Pool(PUBLISHERS) as p:
        yield p


def test_a_sqlite_store_created_by_six_processes_at_once_opens_in_each_in_wal_mode(tmp_path, pool):
    # the journal-mode switch of a new store once raced the other creators' first writes
    # ("database is locked"): it now happens on the empty file, creators serialised
    for trial in range(8):
        path = tmp_path / f"s{trial}.db"
        start_at = time.time() + 0.5
        results = pool.starmap(create, [(f"sqlite:///{path}", start_at)] * PUBLISHERS)
        assert results == ["ok"] * PUBLISHERS, (trial, results)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("SELECT COUNT(*) FROM schema_info "
                                "WHERE key = 'schema_version'").fetchone()[0] == 1


def test_concurrent_publishers_leave_exactly_one_current_build(store_url, pool):
    for r in range(ROUNDS):
        results = _run(pool, store_url, [f"learner-{r}-{i}" for i in range(PUBLISHERS)])
        assert all(x.startswith("ok") for x in results), results
        current, shown, top = _state(store_url)
        assert len(current) == 1, (r, current)
        assert shown == current and top == current[0]
        index = polydom.open_index(store_url)
        assert index.info["build_id"] == current[0]
        assert index.info["publication"] == PUBLISHERS * (r + 1)


def test_identical_builds_at_once_end_cleanly_with_one_published(store_url, pool):
    for r in range(ROUNDS):
        results = _run(pool, store_url, [f"same-{r}"] * PUBLISHERS)
        published = [x for x in results if x.startswith("ok")]
        others = [x for x in results if not x.startswith("ok")]
        assert published, results
        for x in others:  # told in one line which build holds the result
            assert x.startswith("BuildPublishedError: build ") and "\n" not in x, x
            assert "open_index(url, build=" in x
        current, shown, top = _state(store_url)
        assert len(current) == 1 and shown == current and top == current[0]
        engine = sa.create_engine(store_url)
        with engine.connect() as conn:  # one row per expansion: no duplicate was inserted
            assert conn.exec_driver_sql(
                "SELECT COUNT(*) FROM expansions e JOIN builds b ON b.id = e.build_id "
                f"WHERE b.learner = 'same-{r}'").scalar() == len(SETS)
        engine.dispose()
