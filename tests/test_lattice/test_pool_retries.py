"""The process pool survives dead workers: their tasks rerun, finished ones never do."""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool

import pytest

from lattice.executor import (
    ExecutorError,
    InProcessExecutor,
    PoolExecutor,
    WorkerLostError,
    make_executor,
)
from polydom import PolydomError
from tests.executor_support import CrashingTasks, crash_task, training_log

TASKS = [(i,) for i in range(8)]


def run_all(executor, shared) -> tuple[dict, int]:
    with executor.session(shared) as run:
        results = dict(run.map_unordered(crash_task, TASKS))
        return results, getattr(run, "pools_started", 0)


def test_a_dead_worker_s_tasks_rerun_and_finished_ones_never(tmp_path):
    (tmp_path / "ref").mkdir()
    (tmp_path / "pool").mkdir()
    ref, _ = run_all(InProcessExecutor(), CrashingTasks(tmp_path / "ref", victim=-1))
    # task 0 kills its worker once, while task 1 runs on the other worker
    shared = CrashingTasks(tmp_path / "pool", victim=0, crashes=1, waiter=1)
    got, pools = run_all(PoolExecutor(2, retries=1), shared)
    assert got == ref and len(got) == len(TASKS)
    assert pools == 2  # one restart after the death
    assert [shared.count("done", i) for i, in TASKS] == [1] * len(TASKS)
    assert [shared.count("attempt", i) for i, in TASKS] == [2, 2] + [1] * (len(TASKS) - 2)
    # the shared object reached each worker that ran a task exactly once (a worker that a
    # busy machine started late may have run none: loky spawns its processes as they are
    # needed, and the other worker may drain a batch of fast tasks alone)
    shipped = training_log(tmp_path / "pool" / "shipped")
    ran = {pid for i, in TASKS for pid in training_log(tmp_path / "pool" / f"attempt-{i}")}
    assert len(shipped) == len(set(shipped)) and set(shipped) == ran
    assert pools <= len(ran) <= 2 * pools


def test_a_task_whose_worker_keeps_dying_fails_after_its_retries(tmp_path):
    shared = CrashingTasks(tmp_path, victim=3, crashes=-1, delay=0.05)
    with pytest.raises(WorkerLostError, match=r"task 3 \(3,\) of 'crash_task' 2 time\(s\) "
                                              r"\(retries=1\); giving up.*EXIT\(7\)") as err:
        run_all(PoolExecutor(2, retries=1), shared)
    assert isinstance(err.value, BrokenProcessPool) and isinstance(err.value, PolydomError)
    assert shared.count("attempt", 3) == 2 and shared.count("done", 3) == 0


def test_no_retries_means_the_first_death_fails_the_batch(tmp_path):
    shared = CrashingTasks(tmp_path, victim=0, crashes=1, delay=0.05)
    with pytest.raises(WorkerLostError, match=r"1 time\(s\) \(retries=0\)"):
        run_all(make_executor("processes:2", retries=0), shared)
    assert shared.count("attempt", 0) == 1


def test_an_error_raised_by_a_task_is_not_retried(tmp_path):
    shared = CrashingTasks(tmp_path, victim=-1)
    with PoolExecutor(2).session(shared) as run, pytest.raises(TypeError):
        list(run.map_unordered(crash_task, [(1,), ("x",)]))
    assert shared.count("attempt", "x") == 1


@pytest.mark.parametrize("retries", [-1, 1.5, True])
def test_bad_retries_are_refused(retries):
    with pytest.raises(ExecutorError, match="retries must be a non-negative integer"):
        PoolExecutor(2, retries=retries)


def test_sessions_reuse_the_pool_and_leave_joblib_s_own_pool_alone(tmp_path):
    from joblib import Parallel, delayed

    ex = PoolExecutor(2)
    got = {}
    with ex.session(CrashingTasks(tmp_path, victim=-1)) as run:
        for position, result in run.map_unordered(crash_task, TASKS):
            got[position] = result
            if len(got) == 2:  # scikit-learn's n_jobs in the middle of a batch
                assert Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(4)) == [0, 1, 2, 3]
    assert got == {i: i * i + 1 for i, in TASKS} and run.pools_started == 1
    first = ex._reusable_pool()
    again, pools = run_all(PoolExecutor(2), CrashingTasks(tmp_path, victim=-1))
    assert again == got and pools == 1 and ex._reusable_pool() is first  # the same processes
    assert Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(3)) == [0, 1, 2]
