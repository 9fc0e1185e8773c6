"""Storage: round trips, SQL views, resumable builds, atomic publishing, safe model blobs.

Every test runs on SQLite and, when ``POLYDOM_TEST_PG_URL`` is set, on PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

import lattice.expansion
import polydom
import polydom.errors
import storage
import storage.codec
from storage import IndexStore
from tests.storage_support import (
    BUILD_PARAMS,
    COSTS,
    GROUPS,
    N_MAX,
    candidate_of,
    columns_of,
    data,
    feature_sets,
    index_of,
    load_models,
    random_candidates,
    read_fit_log,
    run_build,
    train,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def trained():
    """Real models on 15 feature sets (sizes 1 and 2), trained once for the module."""
    X, y = data()
    return X, y, {fs: train(fs, X, y) for fs in feature_sets(2)}


def publish_trained(url, trained, extra=()):
    """Store the trained expansions through a cache and publish their index."""
    X, y, exps = trained
    store = IndexStore(url)
    build_id = store.begin_build(BUILD_PARAMS, COSTS, GROUPS)
    cache = store.expansion_cache(build_id)
    for fs, exp in exps.items():
        cache[fs] = exp
    index = index_of([candidate_of(e) for e in exps.values()] + list(extra))
    store.publish(build_id, index)
    store.close()
    return build_id, index


def queries(count, seed=0, budget_hi=80.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, N_MAX, count), rng.uniform(0.0, budget_hi, count)


# ---------------------------------------------------------------------------- round trip
def test_round_trip_answers_every_lookup_like_the_stored_index(store_url, trained):
    X, y, _ = trained
    _, index = publish_trained(store_url, trained)
    loaded = polydom.open_index(store_url)
    sizes, budgets = queries(5000)
    np.testing.assert_array_equal(
        loaded.lookup_many(sizes, budgets), index.lookup_many(sizes, budgets)
    )
    for n, b in zip(sizes[:300], budgets[:300], strict=True):
        want, got = index.lookup(n, b), loaded.lookup(n, b)
        assert (want is None) == (got is None)
        if want is not None:
            assert (got.key, got.features, got.accuracy, got.cost) == (
                want.key,
                want.features,
                want.accuracy,
                want.cost,
            )
            rows = X[:50]
            np.testing.assert_array_equal(
                got.model.predict(rows[:, columns_of(got.features)]),
                want.model.predict(rows[:, columns_of(want.features)]),
            )
    assert loaded.table.ranges == index.table.ranges
    assert loaded.table.skyline_positions == index.table.skyline_positions
    assert loaded.costs == index.costs and loaded.columns == index.columns
    loaded.table._check()


def test_round_trip_of_a_large_index_keeps_every_range_and_skyline(store_url):
    cands = random_candidates(600, seed=3)
    index = index_of(cands)
    with IndexStore(store_url) as store:
        build_id = store.begin_build({"alpha": 1.0, "learner": "none"}, COSTS, GROUPS)
        store.publish(build_id, index)
        loaded = store.load_index()
    assert len(loaded.table) == len(index.table) > 10
    assert [c.cost for c in loaded.candidates] == [c.cost for c in index.candidates]
    sizes, budgets = queries(5000, seed=1, budget_hi=120.0)
    np.testing.assert_array_equal(
        loaded.lookup_many(sizes, budgets), index.lookup_many(sizes, budgets)
    )


def test_extra_candidates_carry_their_own_model_blob(store_url, trained):
    import lightgbm

    X, y, _ = trained
    booster_like = lightgbm.LGBMClassifier(n_estimators=20, verbose=-1, random_state=0, n_jobs=1)
    booster_like.fit(X[:, columns_of(frozenset({"g0", "g1"}))], y)
    extra = polydom.Candidate(
        ("cegb", 0.5), 0.999, "40 + 0.6*n", frozenset({"g0", "g1"}), booster_like
    )
    build_id, index = publish_trained(store_url, trained, extra=[extra])
    engine = sa.create_engine(store_url)
    with engine.connect() as conn:
        row = conn.execute(
            sa.text(
                "SELECT expansion_id, model_format FROM candidates "
                "WHERE build_id = :b AND key_json = :k"
            ),
            {"b": build_id, "k": storage.codec.encode_key(("cegb", 0.5))},
        ).one()
        linked = conn.execute(
            sa.text("SELECT COUNT(*) FROM candidates WHERE expansion_id IS NOT NULL")
        ).scalar()
    engine.dispose()
    assert row.expansion_id is None and row.model_format == "lightgbm"
    # the rows hold the candidates on a skyline (the others are in the side record)
    assert linked == len(index.table.answerable) - 1
    loaded = polydom.open_index(store_url)
    got = next(c for c in loaded.candidates if c.key == ("cegb", 0.5))
    cols = columns_of(frozenset({"g0", "g1"}))
    np.testing.assert_array_equal(got.payload.predict_proba(X[:, cols]),
                                  booster_like.predict_proba(X[:, cols]))


# ---------------------------------------------------------------------------- SQL views
def _raw_connection(url):
    """A DB-API connection of the standard driver: sqlite3 or psycopg, no SQLAlchemy."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return sqlite3.connect(parsed.database), "?"
    import psycopg

    return psycopg.connect(parsed.set(drivername="postgresql").render_as_string(False)), "%s"


def test_skyline_view_in_raw_sql_returns_the_python_skylines(store_url):
    index = index_of(random_candidates(300, seed=5))
    with IndexStore(store_url) as store:
        build_id = store.begin_build({"alpha": 1.0}, COSTS, GROUPS)
        store.publish(build_id, index)
    conn, mark = _raw_connection(store_url)
    try:
        sql = (
            f"SELECT candidate, features, accuracy, cost FROM skyline "
            f"WHERE n_lo <= {mark} AND {mark} < n_hi ORDER BY rank"
        )
        for n in np.linspace(0.0, N_MAX, 97)[:-1]:
            rows = conn.execute(sql, (float(n), float(n))).fetchall()
            want = index.table.skyline(float(n))
            assert [r[0] for r in rows] == [c.key for c in want]
            assert [r[2] for r in rows] == [c.accuracy for c in want]
            assert [polydom.CostCurve.parse(r[3]) for r in rows] == [c.cost for c in want]
            assert [r[1] for r in rows] == [
                "+".join(sorted(c.features)) for c in want
            ]
    finally:
        conn.close()


def test_lookup_in_sql_over_the_views_matches_the_index(store_url):
    index = index_of(random_candidates(200, seed=7))
    with IndexStore(store_url) as store:
        build_id = store.begin_build({"alpha": 1.0}, COSTS, GROUPS)
        store.publish(build_id, index)
        sizes, budgets = queries(150, seed=2, budget_hi=150.0)
        got = [store.sql_lookup(n, b) for n, b in zip(sizes, budgets, strict=True)]
    np.testing.assert_array_equal(got, index.lookup_many(sizes, budgets))


# ---------------------------------------------------------------------------- resume
def test_build_killed_mid_way_resumes_without_retraining_stored_sets(store_url, tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    worker = [sys.executable, str(ROOT / "tests" / "storage_resume_worker.py"), store_url]
    log1, log2, log3 = (tmp_path / f"fits{i}.log" for i in (1, 2, 3))
    proc = subprocess.Popen([*worker, str(log1), "--pace", "0.02"], env=env)
    try:
        deadline = time.monotonic() + 60
        while len(read_fit_log(log1)) < 10:
            assert proc.poll() is None, "worker ended before it was killed"
            assert time.monotonic() < deadline, "worker too slow to start"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with IndexStore(store_url) as store:
        (build,) = store.list_builds()
        assert build.status == "building"
        stored = set(store.expansion_cache(build.build_id))
    run1 = read_fit_log(log1)
    assert 9 <= len(stored) < len(feature_sets()) and stored <= set(run1)

    run_build(store_url, str(log2))  # the restart (in this process, to save an interpreter start)
    run2 = read_fit_log(log2)
    assert not set(run2) & stored, "a stored expansion was trained again"
    assert set(run1) | set(run2) == set(feature_sets())
    assert len(set(run1) & set(run2)) <= 1  # at most the set in flight at the kill
    assert len(run2) == len(set(run2))

    assert run_build(store_url, str(log3)) == 0
    assert read_fit_log(log3) == []  # a repeated build reuses every expansion
    builds = polydom.list_builds(store_url)
    assert [b.status for b in builds] == ["complete", "complete"]
    assert builds[0].build_id == build.build_id and builds[1].is_current
    assert len(polydom.open_index(store_url).candidates) == len(feature_sets())


def test_build_whose_learner_raised_resumes_where_it_stopped(store_url, tmp_path):
    log = tmp_path / "fits.log"
    with pytest.raises(RuntimeError, match="learner failed"):
        run_build(store_url, str(log), fail_at=6)
    first = read_fit_log(log)
    assert len(first) == 6
    fits = run_build(store_url, str(log))
    fitted = read_fit_log(log)
    assert fits == len(feature_sets()) - 5
    assert len(set(fitted)) == len(feature_sets())  # only the failed set was tried twice
    assert fitted.count(first[-1]) == 2
    (build,) = polydom.list_builds(store_url)
    assert build.status == "complete" and build.n_expansions == len(feature_sets())


def test_begin_build_resumes_only_an_unfinished_build_with_identical_params(store_url):
    with IndexStore(store_url) as store:
        a = store.begin_build({"alpha": 1.5, "learner": "x"}, COSTS, GROUPS)
        assert store.begin_build({"learner": "x", "alpha": 1.5}, COSTS, GROUPS) == a
        b = store.begin_build({"alpha": 1.2, "learner": "x"}, COSTS, GROUPS)
        assert b != a
        store.expansion_cache(a)[frozenset({"g0"})] = lattice.Expansion(frozenset({"g0"}), 0.7)
        # alpha does not change training: the other build sees the expansion
        assert store.expansion_cache(b)[frozenset({"g0"})].accuracy == 0.7
        c = store.begin_build({"alpha": 1.5, "learner": "y"}, COSTS, GROUPS)
        assert frozenset({"g0"}) not in store.expansion_cache(c)
        store.publish(a, index_of(random_candidates(20, seed=1)))
        assert store.begin_build({"alpha": 1.5, "learner": "x"}, COSTS, GROUPS) not in (a, b, c)
        with pytest.raises(polydom.errors.BuildPublishedError, match="already published"):
            store.publish(a, index_of(random_candidates(20, seed=1)))


# ---------------------------------------------------------------------------- atomicity
def test_readers_during_rebuilds_see_one_whole_index_never_a_mix(store_url):
    indexes = [index_of(random_candidates(400, seed=s, prefix=f"b{s}_")) for s in range(6)]
    shapes = {
        tuple(c.key for c in ix.candidates): ix.table.skyline_positions for ix in indexes
    }
    entries = {ix.candidates[0].key[:3]: ix.table.entries for ix in indexes}
    with IndexStore(store_url) as store:
        first = store.begin_build({"alpha": 0}, COSTS, GROUPS)
        store.publish(first, indexes[0])
    stop = threading.Event()
    seen: list[str] = []
    errors: list[BaseException] = []

    def load_reader() -> None:
        with IndexStore(store_url) as store:
            while not stop.is_set():
                ix = store.load_index(models=False)
                keys = tuple(c.key for c in ix.candidates)
                assert shapes.get(keys) == ix.table.skyline_positions
                seen.append(keys[0][:3])

    def sql_reader() -> None:
        engine = sa.create_engine(store_url)
        with engine.connect() as conn:
            while not stop.is_set():
                rows = conn.execute(
                    sa.text("SELECT candidate, COUNT(*) FROM skyline GROUP BY candidate")
                ).all()
                conn.commit()
                prefixes = {r[0][:3] for r in rows}
                assert len(prefixes) == 1
                assert sum(r[1] for r in rows) == entries[prefixes.pop()]
        engine.dispose()

    def guard(fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)
                stop.set()
        return run

    threads = [threading.Thread(target=guard(f)) for f in (load_reader, load_reader, sql_reader)]
    for t in threads:
        t.start()
    try:
        with IndexStore(store_url) as store:
            for k, ix in enumerate(indexes[1:], start=1):
                build_id = store.begin_build({"alpha": k}, COSTS, GROUPS)
                store.publish(build_id, ix)
                time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert len(set(seen)) >= 3  # readers ran across several rebuilds


# ---------------------------------------------------------------------------- safety
def test_tampered_model_blob_is_refused(store_url, trained):
    build_id, _ = publish_trained(store_url, trained)
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        blob = conn.execute(sa.text("SELECT model_blob FROM expansions WHERE id = 1")).scalar()
        flipped = bytes(blob[:-1]) + bytes([blob[-1] ^ 1])
        conn.execute(
            sa.text("UPDATE expansions SET model_blob = :b WHERE id = 1"), {"b": flipped}
        )
    engine.dispose()
    for trusted in (False, True):  # models load on first use, checked first
        opened = polydom.open_index(store_url, trusted=trusted)
        with pytest.raises(storage.ModelIntegrityError, match="sha256"):
            load_models(opened)
    with IndexStore(store_url) as store:  # the index itself stays readable without models
        assert len(store.load_index(models=False).candidates) == len(trained[2])


def test_store_of_another_schema_version_gets_a_clear_error(store_url):
    IndexStore(store_url).close()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE schema_info SET value = '999' WHERE key = 'schema_version'"))
    engine.dispose()
    with pytest.raises(storage.SchemaVersionError, match="schema version 999"):
        IndexStore(store_url)
    current = f"reads schema version {storage.SCHEMA_VERSION}"
    with pytest.raises(storage.SchemaVersionError, match=current):
        polydom.open_index(store_url)


def test_foreign_database_with_clashing_tables_is_refused(store_url):
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE builds (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(storage.SchemaVersionError, match="no schema_info"):
        IndexStore(store_url)


def test_reading_a_missing_store_or_build_names_the_problem(store_url, tmp_path):
    with pytest.raises(storage.StoreNotFoundError, match="no such SQLite file"):
        polydom.open_index(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
    with IndexStore(store_url) as store:
        with pytest.raises(ValueError, match="no complete build"):
            store.load_index()
        build_id = store.begin_build({"alpha": 1.0}, COSTS, GROUPS)
        with pytest.raises(ValueError, match="not complete"):
            store.load_index(build=build_id)
        with pytest.raises(ValueError, match="build 42 does not exist"):
            store.load_index(build=42)


def test_open_index_by_build_id_returns_that_build(store_url):
    ixs = [index_of(random_candidates(50, seed=s, prefix=f"s{s}_")) for s in (1, 2)]
    with IndexStore(store_url) as store:
        ids = []
        for k, ix in enumerate(ixs):
            ids.append(store.begin_build({"alpha": 1.0 + k}, COSTS, GROUPS))
            store.publish(ids[-1], ix)
    assert polydom.open_index(store_url).candidates[0].key == "s2_0"
    old = polydom.open_index(store_url, build=ids[0])
    assert old.candidates[0].key == "s1_0" and old.info["build_id"] == ids[0]
    assert [(b.build_id, b.is_current) for b in polydom.list_builds(store_url)] == [
        (ids[0], False),
        (ids[1], True),
    ]


def test_publish_refuses_an_index_over_other_features_or_costs(store_url):
    index = index_of(random_candidates(20, seed=1))
    other_costs = {**COSTS, "g4": polydom.CostCurve([9.0])}
    with IndexStore(store_url) as store:
        build_id = store.begin_build({"alpha": 1.0}, other_costs, GROUPS)
        with pytest.raises(ValueError, match="differ from those given to begin_build"):
            store.publish(build_id, index)
        renamed = polydom.Index(index.table, {"x": COSTS["g0"]})
        with pytest.raises(ValueError, match="are not the features of build"):
            store.publish(build_id, renamed)
        assert store.list_builds()[0].status == "building"


def test_expansion_cache_is_a_mapping_of_committed_expansions(store_url, trained):
    X, y, exps = trained
    fs = frozenset({"g1", "g3"})
    with IndexStore(store_url) as store:
        build_id = store.begin_build(BUILD_PARAMS, COSTS, GROUPS)
        cache = store.expansion_cache(build_id)
        assert len(cache) == 0 and fs not in cache and "g1" not in cache
        cache[fs] = exps[fs]
        cache[frozenset({"g0"})] = lattice.Expansion(frozenset({"g0"}), 0.5)  # no model
    with IndexStore(store_url) as other:  # another connection sees the committed rows
        again = other.expansion_cache(build_id)
        assert set(again) == {fs, frozenset({"g0"})} and len(again) == 2
        got = again[fs]
        assert (got.features, got.accuracy, got.fit_seconds) == (
            fs, exps[fs].accuracy, exps[fs].fit_seconds
        )
        cols = columns_of(fs)
        np.testing.assert_array_equal(got.model.predict(X[:, cols]),
                                      exps[fs].model.predict(X[:, cols]))
        assert again[frozenset({"g0"})].model is None
        again[frozenset({"g0"})] = lattice.Expansion(frozenset({"g0"}), 0.75)
        assert again[frozenset({"g0"})].accuracy == 0.75
        del again[frozenset({"g0"})]
        assert frozenset({"g0"}) not in again
        with pytest.raises(KeyError):
            again[frozenset({"g2"})]
        with pytest.raises(ValueError, match="differ from the key"):
            again[frozenset({"g2"})] = exps[fs]
        with pytest.raises(ValueError, match="set of names among"):
            again[frozenset({"nope"})] = lattice.Expansion(frozenset({"nope"}), 0.5)


def test_index_all_tables_come_back_as_index_all(store_url):
    table = polydom.IndexAll.build(random_candidates(40, seed=9), 0.0, N_MAX)
    with IndexStore(store_url) as store:
        build_id = store.begin_build({"alpha": 1.0}, COSTS, GROUPS)
        store.publish(build_id, polydom.Index(table, COSTS, GROUPS))
        loaded = store.load_index()
    assert type(loaded.table) is polydom.IndexAll
    assert loaded.table.ranges == table.ranges
    assert loaded.table.skyline_positions == table.skyline_positions
    assert loaded.table.stats_ == table.stats_
