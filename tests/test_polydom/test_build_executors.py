"""build_index on every executor: the same stored rows; a dead worker loses and repeats nothing."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import lattice
import lattice.executor
import learners
import polydom
from storage import schema as S
from tests.executor_support import KillingLearner, TableLearner, training_log
from tests.lattice_oracle import all_sets

distributed = pytest.importorskip("distributed")

GROUPS = {"mean": list(range(0, 10)), "error": list(range(10, 20)),
          "worst_size": [20, 21, 22, 23], "worst_rest": list(range(24, 30))}
COSTS = {"mean": "2 + 0.01*n", "error": "1 + 0.05*n", "worst_size": "5",
         "worst_rest": "0.5 + 0.002*n**2"}
TIMINGS = {"created_at", "completed_at", "fit_seconds"}
#: Model blobs (skops zips name members by id() and stamp them) differ between any two runs;
#: the models are compared by their predictions instead.
BLOBS = {"model_blob", "model_sha256"}


def tree_learner() -> learners.SklearnLearner:
    X, y = load_breast_cancer(return_X_y=True)
    return learners.SklearnLearner(DecisionTreeClassifier(max_depth=3, random_state=0), X, y,
                                   features=GROUPS, cv=3)


def stored_rows(url: str) -> dict[str, list[tuple]]:
    """Every row of the store's tables, in key order, without timings and model blobs.

    Expansion ids are assigned in commit order, which is completion order on a pool or a
    cluster: expansions are keyed by their feature mask instead, and so are the candidates'
    links to them.
    """
    engine = sa.create_engine(url)
    out = {}
    with engine.connect() as conn:
        x = S.expansions
        mask_of = dict(conn.execute(sa.select(x.c.id, x.c.feature_mask)).all())
        for table in (S.builds, S.features, S.feature_costs, S.expansions, S.candidates,
                      S.candidate_costs, S.ranges, S.skyline_entries):
            rows = []
            for row in conn.execute(sa.select(table)):
                row = {k: v for k, v in row._mapping.items() if k not in TIMINGS | BLOBS}
                if table is S.expansions:
                    del row["id"]
                if row.get("expansion_id") is not None:
                    row["expansion_id"] = mask_of[row["expansion_id"]]
                for key in ("info", "stats"):
                    if row.get(key):
                        row[key] = {k: v for k, v in json.loads(row[key]).items()
                                    if not k.endswith("_seconds")}
                rows.append(repr(sorted(row.items())))
            out[table.name] = sorted(rows)
    engine.dispose()
    return out


def expansions(url: str) -> list[tuple]:
    """Every stored expansion as (feature mask, features, accuracy), whichever build made it."""
    engine = sa.create_engine(url)
    x = S.expansions
    with engine.connect() as conn:
        rows = sorted(conn.execute(sa.select(x.c.feature_mask, x.c.features, x.c.accuracy)))
    engine.dispose()
    return [tuple(r) for r in rows]


def predictions(url: str) -> list:
    X, _ = load_breast_cancer(return_X_y=True)
    index = polydom.open_index(url)
    return [c.payload.predict(X[:, index.model_columns(c.features)]).tolist()
            for c in index.candidates]


@pytest.fixture(scope="module")
def thread_cluster():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_every_executor_stores_the_same_rows(tmp_path, thread_cluster):
    rows = {}
    for name, executor in [("inprocess", None), ("pool", "processes:2"),
                           ("dask", thread_cluster)]:
        url = f"sqlite:///{tmp_path / name}.db"
        index = polydom.build_index(COSTS, tree_learner(), alpha=1.02, n_max=100.0, store=url,
                                    executor=executor)
        assert index.info["trained"] == index.info["expansions"]
        rows[name] = stored_rows(url)
    assert rows["inprocess"]["expansions"] and rows["inprocess"]["skyline_entries"]
    assert rows["pool"] == rows["inprocess"]
    assert rows["dask"] == rows["inprocess"]
    models = [predictions(f"sqlite:///{tmp_path / name}.db") for name in rows]
    assert models[0] and models[1] == models[0] and models[2] == models[0]


def test_the_executor_is_not_a_build_parameter_so_a_build_resumes_on_another(tmp_path):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    with pytest.warns(RuntimeWarning, match="stopped at max_expansions"):
        polydom.build_index(COSTS, tree_learner(), store=url, max_expansions=3,
                            executor="processes:2")
    index = polydom.build_index(COSTS, tree_learner(), store=url, max_expansions=None)
    assert index.info["cache_hits"] == 3


def test_a_bad_executor_fails_before_anything_is_stored_or_trained(tmp_path):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    log = tmp_path / "trained.log"
    acc = {fs: 0.5 + 0.1 * len(fs) for fs in all_sets(2)}
    with pytest.raises(polydom.PolydomError, match="unknown executor 'cluster'"):
        polydom.build_index({"f1": "1", "f2": "n"}, TableLearner(acc, log), store=url,
                            executor="cluster")
    assert training_log(log) == []
    assert not (tmp_path / "index.db").exists()


def test_a_pool_worker_dying_mid_build_retrains_nothing_stored(tmp_path):
    acc = {fs: 0.5 + 0.1 * len(fs) - 0.01 * sorted(fs).count("f2") for fs in all_sets(4)}
    costs = {f"f{i}": [float(i)] for i in range(1, 5)}
    url, ref_url = f"sqlite:///{tmp_path / 'index.db'}", f"sqlite:///{tmp_path / 'ref.db'}"
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    with pytest.warns(RuntimeWarning, match="stopped at max_expansions"):
        polydom.build_index(costs, TableLearner(acc, first), store=url, max_expansions=3)
    marker = tmp_path / "killed"
    killer = KillingLearner(acc, str(second), frozenset({"f1", "f2"}), str(marker), delay=0.2)
    index = polydom.build_index(costs, killer, store=url, executor="processes:2")
    assert marker.exists(), "the worker never died"
    done, again = training_log(first), training_log(second)
    assert len(done) == 3 and index.info["cache_hits"] == 3
    assert not set(done) & set(again)  # nothing stored was trained again
    assert len(again) == len(set(again)) == index.info["trained"]  # nor twice here
    assert "f1+f2" in again  # rerun on the new pool after its worker died
    polydom.build_index(costs, TableLearner(acc), store=ref_url)
    assert expansions(url) == expansions(ref_url)
    resumed, ref = polydom.open_index(url), polydom.open_index(ref_url)
    assert [(sorted(c.features), c.accuracy, c.cost.coefficients.tolist())
            for c in resumed.candidates] == [
        (sorted(c.features), c.accuracy, c.cost.coefficients.tolist()) for c in ref.candidates]


def test_a_build_whose_worker_dies_past_its_retries_loses_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    acc = {fs: 0.5 + 0.1 * len(fs) - 0.01 * sorted(fs).count("f2") for fs in all_sets(4)}
    costs = {f"f{i}": [float(i)] for i in range(1, 5)}
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    killer = KillingLearner(acc, str(first), frozenset({"f1", "f2"}), str(tmp_path / "killed"),
                            delay=0.2)
    with pytest.raises(lattice.executor.WorkerLostError, match="retries=0"):
        polydom.build_index(costs, killer, store=url,
                            executor=lattice.make_executor("processes:2", retries=0))
    done = training_log(first)
    assert "f1+f2" not in done
    index = polydom.build_index(costs, TableLearner(acc, second), store=url)
    again = training_log(second)
    assert not set(done) & set(again)  # every finished training was stored
    assert index.info["cache_hits"] == len(done)
    assert "f1+f2" in again


@pytest.mark.slow
def test_a_dask_worker_killed_mid_training_loses_nothing_and_repeats_nothing(tmp_path):
    import cloudpickle

    import tests.executor_support

    cloudpickle.register_pickle_by_value(tests.executor_support)  # workers lack tests/
    acc = {fs: 0.5 + 0.1 * len(fs) - 0.01 * sorted(fs).count("f2") for fs in all_sets(4)}
    costs = {f"f{i}": [float(i)] for i in range(1, 5)}
    log, marker = tmp_path / "trained.log", tmp_path / "killed"
    victim = frozenset({"f1", "f2", "f3"})
    url = f"sqlite:///{tmp_path / 'index.db'}"
    ref_url = f"sqlite:///{tmp_path / 'ref.db'}"
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            index = polydom.build_index(
                costs, KillingLearner(acc, str(log), victim, str(marker)), store=url,
                executor=client,
            )
    finally:
        cloudpickle.unregister_pickle_by_value(tests.executor_support)
    assert marker.exists(), "the worker never died"
    trained = training_log(log)
    assert len(trained) == len(set(trained)) == index.info["trained"]
    assert "f1+f2+f3" in trained  # rerun elsewhere after its worker died
    polydom.build_index(costs, TableLearner(acc), store=ref_url)
    assert stored_rows(url) == stored_rows(ref_url)
