"""Executors: the explorer's batches give the same exploration wherever they train."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
from lattice.executor import ExecutorError, InProcessExecutor, PoolExecutor, make_executor
from tests.executor_support import RecordingExecutor, ReversedExecutor, TableLearner, training_log
from tests.lattice_oracle import instances
from tests.strategies import examples

distributed = pytest.importorskip("distributed")
explore_module = importlib.import_module("lattice.explore")  # the module, not the function

FIG2 = {"": .5, "1": .78, "2": .7, "3": .75, "4": .6, "12": .86, "13": .8, "14": .78,
        "23": .75, "24": .75, "34": .75, "123": .86, "124": .9, "134": .83, "234": .75,
        "1234": .96}
COSTS4 = {f"f{i}": [float(i)] for i in range(1, 5)}
ACC4 = {frozenset(f"f{c}" for c in k): v for k, v in FIG2.items()}


def same(a: lattice.Exploration, b: lattice.Exploration) -> None:
    assert list(a.expanded) == list(b.expanded)
    assert [e.accuracy for e in a.expanded.values()] == [e.accuracy for e in b.expanded.values()]
    assert a.pruned == b.pruned and a.complete == b.complete
    assert [c.key for c in a.candidates] == [c.key for c in b.candidates]
    drop = ("fit_seconds",)
    assert {k: v for k, v in a.stats.items() if k not in drop} == {
        k: v for k, v in b.stats.items() if k not in drop
    }


@pytest.fixture(scope="module")
def dask_client():
    """A two-worker LocalCluster in this process (threads): quick to start, runs in CI."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


# ---------------------------------------------------------------------------- batching
@settings(max_examples=examples(60), deadline=None)
@given(instances(max_m=5), st.sampled_from([1.0, 1.05, 1.2]), st.booleans(),
       st.sampled_from(["expanded", "frontier"]), st.sampled_from(["complete", "paper"]))
def test_batched_passes_decide_exactly_what_one_by_one_decides(
        inst, alpha, cost_pruning, scope, traversal):
    acc, costs = inst
    kw = dict(alpha=alpha, cost_pruning=cost_pruning, scope=scope, traversal=traversal)
    batched = lattice.explore(costs, TableLearner(acc), **kw)
    with pytest.MonkeyPatch.context() as mp:
        # a one-by-one walk: every set waits for the one before it to be trained
        mp.setattr(explore_module._Explorer, "_waits_on", lambda self, s, batch: bool(batch))
        one_by_one = lattice.explore(costs, TableLearner(acc), **kw)
    same(batched, one_by_one)
    batched._check()


@settings(max_examples=examples(40), deadline=None)
@given(instances(max_m=5), st.sampled_from([1.0, 1.1]), st.booleans())
def test_completion_order_does_not_change_the_exploration(inst, alpha, cost_pruning):
    acc, costs = inst
    kw = dict(alpha=alpha, cost_pruning=cost_pruning)
    same(lattice.explore(costs, TableLearner(acc), executor=ReversedExecutor(), **kw),
         lattice.explore(costs, TableLearner(acc), **kw))


def test_a_pass_goes_out_as_one_batch():
    recording = RecordingExecutor()
    exp = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.0, executor=recording)
    sizes = [len(tasks) for tasks in recording.batches]
    assert sum(sizes) == exp.n_expanded == 14
    assert max(sizes) == 4  # the top pass of round 2: all four sets of three features


def test_max_expansions_through_a_batch_trains_the_same_prefix():
    one = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.0, max_expansions=5)
    rev = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.0, max_expansions=5,
                          executor=ReversedExecutor())
    assert not one.complete and not rev.complete
    assert list(one.expanded) == list(rev.expanded) and one.n_expanded == 5


def test_progress_is_called_once_per_training_and_cache_hits_are_free():
    seen = []
    cache: dict = {}
    first = lattice.explore(COSTS4, TableLearner(ACC4), cache=cache, progress=seen.append)
    assert [e.features for e in seen] == list(first.expanded)
    seen.clear()
    again = lattice.explore(COSTS4, TableLearner(ACC4), cache=cache, progress=seen.append)
    assert seen == [] and again.stats["cache_hits"] == again.n_expanded


# ---------------------------------------------------------------------------- executors
def test_process_pool_gives_the_in_process_exploration(tmp_path):
    log = tmp_path / "trained.log"
    ref = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.0, cost_pruning=True)
    pooled = lattice.explore(COSTS4, TableLearner(ACC4, log), alpha=1.0, cost_pruning=True,
                             executor="processes:2")
    same(pooled, ref)
    trained = training_log(log)
    assert len(trained) == len(set(trained)) == ref.n_expanded


def test_dask_local_cluster_gives_the_in_process_exploration(dask_client):
    cache: dict = {}
    ref = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.05)
    on_dask = lattice.explore(COSTS4, TableLearner(ACC4), alpha=1.05, executor=dask_client,
                              cache=cache)
    same(on_dask, ref)
    assert set(cache) == set(ref.expanded)  # committed in this process, as they arrived
    assert dask_client.status == "running"  # a client given by the caller stays open


def test_progressive_runs_on_dask_and_trains_no_set_twice(dask_client, tmp_path):
    log = tmp_path / "trained.log"
    ref = lattice.progressive(COSTS4, TableLearner(ACC4), max_expansions=16, start=1.3)
    on_dask = lattice.progressive(COSTS4, TableLearner(ACC4, log), max_expansions=16,
                                  start=1.3, executor=dask_client)
    assert on_dask.alpha == ref.alpha and on_dask.runs == ref.runs
    trained = training_log(log)
    assert len(trained) == len(set(trained)) == on_dask.trained


def test_a_failing_training_propagates_from_every_executor(dask_client):
    bad = dict(ACC4)
    bad[frozenset({"f1", "f2", "f3"})] = 1.5
    for executor in (None, "processes:2", dask_client):
        with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
            lattice.explore(COSTS4, TableLearner(bad), executor=executor)


# ---------------------------------------------------------------------------- specifications
@pytest.mark.parametrize(
    "spec, match",
    [
        ("bogus", "unknown executor 'bogus'"),
        ("processes:0", r"processes:N must be an integer >= 1"),
        ("processes:two", r"processes:N must be an integer >= 1"),
        ("dask://scheduler", "not an address of the form dask://host:port"),
        ("dask://host:99999", "not an address of the form dask://host:port"),
        (3, "executor must be None, 'inprocess'"),
    ],
)
def test_bad_executor_specifications_raise_naming_them(spec, match):
    with pytest.raises(ExecutorError, match=match):
        make_executor(spec)


def test_an_unreachable_scheduler_fails_before_any_training(tmp_path):
    log = tmp_path / "trained.log"
    with pytest.raises(ExecutorError, match="cannot reach the Dask scheduler"):
        lattice.explore(COSTS4, TableLearner(ACC4, log), executor=make_executor(
            "dask://127.0.0.1:9", connect_timeout=0.5))
    assert training_log(log) == []


def test_specifications_name_their_executors():
    assert isinstance(make_executor(None), InProcessExecutor)
    assert isinstance(make_executor("inprocess"), InProcessExecutor)
    pool = make_executor("processes:3")
    assert isinstance(pool, PoolExecutor) and pool.workers == 3
    assert make_executor(pool) is pool
