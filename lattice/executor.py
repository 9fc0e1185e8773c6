"""Executors: where independent trainings run (in-process, a process pool, a Dask cluster).

The lattice explorer and the budgeted learners' sweeps hand out batches of independent
trainings.  An :class:`Executor` runs a batch and yields each result as soon as it exists,
so the caller commits it (to an expansion store, say) at once::

    with make_executor("processes:2") as ex, ex.session(learner) as run:
        for position, expansion in run.map_unordered(expand_task, [(fs,) for fs in sets]):
            cache[expansion.features] = expansion

``session(shared)`` ships ``shared`` (a learner holding the training data, typically) to the
workers once, and every task is called as ``fn(shared, *task)``.  Three kinds:

* :class:`InProcessExecutor` (the default): one task after another, lazily, in order: a task
  runs only when its result is asked for, so a caller that stops asking trains nothing more.
* :class:`PoolExecutor`: a loky process pool kept between sessions (``"processes"`` or
  ``"processes:N"``); ``shared`` goes to each worker process once per session.  A worker
  process that dies breaks the pool; the session starts a new one and reruns the tasks that
  were running (``retries`` times each, then :class:`WorkerLostError`); a task whose result
  came back is never rerun.
* :class:`DaskExecutor`: a Dask ``distributed`` cluster (``"dask://host:port"``, or a
  ``distributed.Client``).  ``shared`` is the result of one task that every training task
  depends on, so it travels to each worker once and is recomputed, not lost, when the
  worker holding it dies; each training is a
  ``client.submit(..., retries=retries, pure=False)`` and results arrive through
  ``distributed.as_completed``.  When a worker dies mid-task, the scheduler itself reruns the
  task elsewhere (up to ``distributed.scheduler.allowed-failures`` deaths, then
  ``KilledWorker``); ``retries`` reruns a task whose function raised.  A result is released
  on the cluster as soon as the client holds it, so a worker dying later makes nothing
  recompute.

Closing a ``map_unordered`` iterator early cancels the tasks that have not finished.

Errors in an executor specification raise :class:`ExecutorError` (a ``ValueError``) before any
task runs: an unknown spec, a malformed address, a scheduler that does not answer.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import os
import pickle
import re
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from polydom.errors import ExecutorError, PolydomError

__all__ = [
    "DaskExecutor",
    "Executor",
    "ExecutorError",
    "InProcessExecutor",
    "InProcessSession",
    "PoolExecutor",
    "Session",
    "WorkerLostError",
    "make_executor",
    "map_in_order",
]

_DASK_ADDRESS = re.compile(r"^dask://(?P<host>[^/:\s]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})/?$")


class Session:
    """A batch runner bound to one shared object (see :meth:`Executor.session`)."""

    def map_unordered(
        self, fn: Callable[..., Any], tasks: Sequence[tuple]
    ) -> Iterator[tuple[int, Any]]:
        """Run ``fn(shared, *task)`` for every task; yield ``(position, result)`` as each
        completes (any order; in order for the in-process executor).

        An exception raised by a task propagates (the other tasks are cancelled).  Closing
        the iterator early cancels the tasks that have not finished.

        Runtime complexity: ``len(tasks)`` calls of ``fn``, ``workers`` at a time.
        """
        raise NotImplementedError


class Executor:
    """Where trainings run.  Use :func:`make_executor` to get one from a specification.

    Attributes
    ----------
    workers : int
        How many tasks may run at once (0 when unknown, e.g. an empty cluster).
    """

    workers: int = 1

    def session(self, shared: Any) -> Any:
        """A context manager giving a :class:`Session` whose tasks receive ``shared``.

        Runtime complexity: shipping ``shared`` once to each worker.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started (processes, a client it opened)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------- in-process
class InProcessSession(Session):
    """Run each task in the calling process when its result is asked for, in order."""

    def __init__(self, shared: Any) -> None:
        self._shared = shared

    def map_unordered(
        self, fn: Callable[..., Any], tasks: Sequence[tuple]
    ) -> Iterator[tuple[int, Any]]:
        for position, task in enumerate(tasks):
            yield position, fn(self._shared, *task)


class InProcessExecutor(Executor):
    """Run every task in the calling process, one at a time, in order, when asked for.

    >>> with InProcessExecutor().session(10) as run:
    ...     list(run.map_unordered(lambda shared, x: shared + x, [(1,), (2,)]))
    [(0, 11), (1, 12)]
    """

    workers = 1

    def __repr__(self) -> str:
        return "InProcessExecutor()"

    @contextmanager
    def session(self, shared: Any) -> Iterator[Session]:
        yield InProcessSession(shared)


# ---------------------------------------------------------------------------- process pool
#: The worker process's session: (token, shared object) of the last session it served.
_WORKER_SESSION: tuple[str, Any] | None = None


def _session_shared(token: str, path: str, threads: int | None) -> Any:
    """The shared object of session ``token`` in this worker: read from ``path`` on the
    worker's first task of the session (and the native thread pools capped at ``threads``),
    kept for the others.  One session's object at a time."""
    global _WORKER_SESSION
    if _WORKER_SESSION is None or _WORKER_SESSION[0] != token:
        _WORKER_SESSION = None  # let the previous session's object go first
        with open(path, "rb") as f:
            shared = pickle.load(f)  # written by this session's parent, see _PoolSession
        if threads is not None:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:
                pass
            else:
                threadpool_limits(threads)
        _WORKER_SESSION = (token, shared)
    return _WORKER_SESSION[1]


def _call_in_session(
    fn: Callable[..., Any], token: str, path: str, threads: int | None, task: tuple
) -> Any:
    return fn(_session_shared(token, path, threads), *task)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class WorkerLostError(PolydomError, BrokenProcessPool):
    """A task was running on a worker process that died more than ``retries`` times."""


class _PoolSession(Session):
    """Tasks on the executor's kept process pool, at most ``workers`` in flight, rerun when
    a worker dies.

    ``shared`` is pickled once, into a private temporary file that each worker reads on
    its first task of the session (so it is sent once per worker, and the pool's processes
    outlive the session: the next session, the next sweep, reuse them).  A worker that dies
    (a crash, ``os._exit``, the OOM killer) breaks the pool: loky fails every task in flight
    with ``TerminatedWorkerError``; the session drops the pool, takes a new one and
    resubmits those tasks first.  Only ``workers`` tasks are in flight at a time, so the
    tasks charged with a death are the ones that were running, not a queue behind them.
    """

    def __init__(self, executor: PoolExecutor, shared: Any) -> None:
        self._ex = executor
        self._token = uuid.uuid4().hex
        fd, self._path = tempfile.mkstemp(prefix="polydom-shared-", suffix=".pkl")
        try:
            with os.fdopen(fd, "wb") as f:
                _pickler().dump(shared, f)
        except BaseException:
            os.unlink(self._path)
            raise
        self._pools: list[Any] = []

    @property
    def pools_started(self) -> int:
        """How many pools this session used (1 + one per worker death it survived)."""
        return len(self._pools)

    def _live_pool(self) -> Any:
        pool = self._ex._reusable_pool()
        if not self._pools or self._pools[-1] is not pool:
            self._pools.append(pool)
        return pool

    def close(self) -> None:
        """Remove the shared object's file (the pool's processes stay for the next session)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path)

    def map_unordered(
        self, fn: Callable[..., Any], tasks: Sequence[tuple]
    ) -> Iterator[tuple[int, Any]]:
        """See :meth:`Session.map_unordered`.  A task whose worker died is rerun (before
        the others waiting), up to ``retries`` times; then :class:`WorkerLostError`.  A task
        whose result came back is never rerun.

        Runtime complexity: ``len(tasks)`` calls of ``fn`` plus the reruns, ``workers`` at a
        time; a new pool (``workers`` process starts) after each death.
        """
        tasks = [tuple(task) for task in tasks]
        waiting = deque(range(len(tasks)))
        deaths = [0] * len(tasks)
        running: dict[cf.Future, int] = {}
        threads = self._ex.threads_per_worker

        def fill() -> None:
            while waiting and len(running) < self._ex.workers:
                pool = self._live_pool()
                position = waiting.popleft()
                future = pool.submit(_call_in_session, fn, self._token, self._path, threads,
                                     tasks[position])
                running[future] = position

        try:
            while waiting or running:
                fill()
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                if any(isinstance(f.exception(), BrokenProcessPool) for f in done):
                    done, _ = cf.wait(running)  # a broken pool fails all it was running
                finished, died, lost = [], [], None
                for future in done:
                    position = running.pop(future)
                    exc = future.exception()
                    if exc is None:
                        finished.append((position, future.result()))
                    elif isinstance(exc, BrokenProcessPool):
                        died.append(position)
                        lost = exc
                    else:
                        raise exc
                if died:
                    self._ex._drop_pool(self._pools[-1])
                    for position in died:
                        deaths[position] += 1
                    over = sorted(p for p in died if deaths[p] > self._ex.retries)
                    if over:
                        raise WorkerLostError(
                            f"a worker process died while running task {over[0]} "
                            f"{_short(tasks[over[0]])} of {getattr(fn, '__name__', fn)!r} "
                            f"{deaths[over[0]]} time(s) (retries={self._ex.retries}); "
                            f"giving up.  Last death: {' '.join(str(lost).split())[:400]}"
                        ) from lost
                    waiting.extendleft(sorted(died, reverse=True))
                fill()  # keep the workers busy while the caller handles these results
                yield from finished
        finally:
            for future in running:
                future.cancel()


def _pickler() -> Any:
    """cloudpickle (functions and classes of ``__main__`` by value, as loky sends tasks),
    else :mod:`pickle`."""
    try:
        import cloudpickle
    except ImportError:
        return pickle
    return cloudpickle


#: Pools kept between sessions, by (workers, start method, idle timeout); see PoolExecutor.
_POOLS: dict[tuple, Any] = {}
_POOLS_LOCK = threading.Lock()


class PoolExecutor(Executor):
    """A local pool of ``workers`` processes (joblib's loky ``ProcessPoolExecutor``), kept
    between sessions.

    Loky (a dependency of scikit-learn), rather than :mod:`concurrent.futures`: its start
    method (fork + exec) is safe in a process that runs threads (a Dask client, a database
    pool); tasks travel by cloudpickle (functions of ``__main__`` too); a dead worker is
    reported with its exit code.  The pool outlives a session (starting a process imports
    scikit-learn and polydom again: seconds) and serves every executor with the same
    ``workers``, start method and idle timeout; its processes exit after ``idle_timeout``
    idle seconds.  A worker that dies breaks the pool (loky fails every task in flight with
    ``TerminatedWorkerError``): the session drops it, starts a new one and resubmits those
    tasks (``retries`` times each, then :class:`WorkerLostError`); a task whose result came
    back is never rerun.

    Our own cache of pools, not loky's ``get_reusable_executor``: that is one process-wide
    executor which joblib (scikit-learn's ``n_jobs``) also takes, as its own subclass, and
    joblib fails on an executor of ours found there.

    Each :meth:`session` sends the shared object to each worker once (through a private
    temporary file, removed at the end of the session), not once per task.  Tasks, their
    arguments and results must be picklable.

    Parameters
    ----------
    workers : int, optional
        Number of processes (default: ``os.cpu_count()``).
    mp_context : str, optional
        A loky start method: ``"loky"`` (default), ``"spawn"`` or ``"forkserver"``.
    threads_per_worker : int or None, default 1
        Cap on each process's native thread pools (BLAS, OpenMP; through ``threadpoolctl``
        when installed), as Dask's nanny does: ``workers`` processes each running a
        multi-threaded BLAS oversubscribe the cores.  None leaves them alone.
    retries : int, default 2
        How many times a task is rerun after a worker died while running it.
    idle_timeout : float, default 300
        Seconds an idle worker process waits for the next session before it exits
        (joblib's default; it holds the last session's shared object meanwhile).
    """

    def __init__(
        self,
        workers: int | None = None,
        mp_context: str | None = None,
        threads_per_worker: int | None = 1,
        retries: int = 2,
        idle_timeout: float = 300.0,
    ) -> None:
        n = (os.cpu_count() or 1) if workers is None else workers
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ExecutorError(f"workers must be a positive integer, got {workers!r}")
        if mp_context not in (None, "loky", "spawn", "forkserver"):
            raise ExecutorError(
                f"mp_context must be 'loky', 'spawn' or 'forkserver', got {mp_context!r}"
            )
        self.workers = n
        self.mp_context = mp_context
        self.threads_per_worker = threads_per_worker
        self.retries = _check_retries(retries)
        self.idle_timeout = float(idle_timeout)

    def __repr__(self) -> str:
        return f"PoolExecutor(workers={self.workers})"

    def _key(self) -> tuple:
        return (self.workers, self.mp_context, self.idle_timeout)

    def _reusable_pool(self) -> Any:
        """The live pool of this executor's kind, started when there is none.  O(1)."""
        from joblib.externals.loky import ProcessPoolExecutor
        from joblib.externals.loky.backend.context import get_context

        with _POOLS_LOCK:
            pool = _POOLS.get(self._key())
            if pool is None:
                pool = ProcessPoolExecutor(self.workers, context=get_context(self.mp_context),
                                           timeout=self.idle_timeout)
                _POOLS[self._key()] = pool
            return pool

    def _drop_pool(self, pool: Any) -> None:
        """Forget a broken ``pool`` (the next :meth:`_reusable_pool` starts a new one)."""
        with _POOLS_LOCK:
            if _POOLS.get(self._key()) is pool:
                del _POOLS[self._key()]
        pool.shutdown(wait=True, kill_workers=True)

    @contextmanager
    def session(self, shared: Any) -> Iterator[Session]:
        run = _PoolSession(self, shared)
        try:
            yield run
        finally:
            run.close()


def _check_retries(retries: Any) -> int:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ExecutorError(f"retries must be a non-negative integer, got {retries!r}")
    return retries


# ---------------------------------------------------------------------------- dask
def _identity(shared: Any) -> Any:
    return shared


def _call_with(fn: Callable[..., Any], shared: Any, *task: Any) -> Any:
    return fn(shared, *task)


class _DaskSession(Session):
    def __init__(self, executor: DaskExecutor, shared: Any) -> None:
        self._ex = executor
        self._shared = shared
        self._batches = itertools.count()

    def map_unordered(
        self, fn: Callable[..., Any], tasks: Sequence[tuple]
    ) -> Iterator[tuple[int, Any]]:
        from distributed import as_completed

        client = self._ex.client
        name = getattr(fn, "__name__", "task")
        batch = f"polydom-{name}-{uuid.uuid4().hex[:8]}-{next(self._batches)}"
        futures = {}
        for position, task in enumerate(tasks):
            future = client.submit(
                _call_with, fn, self._shared, *task, key=f"{batch}-{position}",
                pure=False, retries=self._ex.retries,
            )
            futures[future.key] = (future, position)
        try:
            pending = [f for f, _ in futures.values()]
            for future in as_completed(pending, loop=client.loop):
                result = future.result()
                _, position = futures.pop(future.key)
                future.release()
                yield position, result
        finally:
            if futures:
                client.cancel([f for f, _ in futures.values()])


class DaskExecutor(Executor):
    """Run tasks on a Dask ``distributed`` cluster.

    Parameters
    ----------
    client : distributed.Client
        A connected client.  Its workers must be able to import polydom (and the learner's
        own code).
    retries : int, default 2
        ``retries=`` of every ``client.submit``: reruns of a task whose function raised.  (A
        task on a worker that dies is rescheduled by the scheduler itself.)
    own_client : bool, default False
        Close the client in :meth:`close` (set by :func:`make_executor` for an address).
    """

    def __init__(self, client: Any, retries: int = 2, own_client: bool = False) -> None:
        self.client = client
        self.retries = _check_retries(retries)
        self.own_client = own_client

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client.scheduler.address!r}, workers={self.workers})"

    @property
    def workers(self) -> int:  # type: ignore[override]
        """Total threads of the cluster's workers right now."""
        return int(sum(self.client.nthreads().values()))

    @contextmanager
    def session(self, shared: Any) -> Iterator[Session]:
        # A task returning ``shared``, not ``client.scatter``: scattered data dies with the
        # workers holding it, while a task's result is recomputed wherever it is needed.
        future = self.client.submit(
            _identity, shared, pure=False, key=f"polydom-shared-{uuid.uuid4().hex[:12]}"
        )
        try:
            yield _DaskSession(self, future)
        finally:
            future.release()

    def close(self) -> None:
        if self.own_client:
            self.client.close()


def _is_dask_client(obj: Any) -> bool:
    try:
        from distributed import Client
    except ImportError:
        return False
    return isinstance(obj, Client)


def make_executor(
    spec: Any = None, *, connect_timeout: float = 10.0, retries: int = 2
) -> Executor:
    """The executor a specification names, connected and checked before any task runs.

    Parameters
    ----------
    spec : None, str, Executor or distributed.Client
        ``None``, ``"inprocess"`` or ``"serial"``: :class:`InProcessExecutor`;
        ``"processes"`` or ``"processes:N"``: :class:`PoolExecutor` (``N`` processes,
        default ``os.cpu_count()``); ``"dask://host:port"``: a :class:`DaskExecutor` with a
        new client of the scheduler at ``tcp://host:port`` (closed by :meth:`Executor.close`);
        a ``distributed.Client``: a :class:`DaskExecutor` over it (left open); an
        :class:`Executor`: itself.
    connect_timeout : float, default 10
        Seconds to wait for a Dask scheduler.
    retries : int, default 2
        A pool: reruns of a task whose worker process died (:class:`PoolExecutor`).  Dask:
        reruns of a task whose function raised (the scheduler reruns a task whose worker
        died by itself, :class:`DaskExecutor`).

    Raises
    ------
    ExecutorError
        On an unknown or malformed specification, a missing ``distributed`` package, or a
        scheduler that does not answer within ``connect_timeout``.

    Runtime complexity: O(1), plus connecting to a scheduler.

    >>> make_executor("processes:2")
    PoolExecutor(workers=2)
    >>> try:
    ...     make_executor("dask://scheduler")
    ... except ExecutorError as exc:
    ...     print(exc)
    executor 'dask://scheduler' is not an address of the form dask://host:port
    """
    if spec is None or isinstance(spec, Executor):
        return InProcessExecutor() if spec is None else spec
    if _is_dask_client(spec):
        return DaskExecutor(spec, retries=retries)
    if not isinstance(spec, str):
        raise ExecutorError(
            f"executor must be None, 'inprocess', 'processes[:N]', 'dask://host:port', a "
            f"distributed.Client or a lattice.executor.Executor, got {spec!r}"
        )
    text = spec.strip()
    if text in ("inprocess", "serial"):
        return InProcessExecutor()
    if text == "processes" or text.startswith("processes:"):
        count = text.partition(":")[2]
        if count and not (count.isdigit() and int(count) >= 1):
            raise ExecutorError(f"executor {spec!r}: N in processes:N must be an integer >= 1")
        return PoolExecutor(int(count) if count else None, retries=retries)
    if text.startswith("dask://"):
        return _connect(spec, connect_timeout, retries)
    raise ExecutorError(
        f"unknown executor {spec!r}; use 'inprocess', 'processes', 'processes:N' or "
        f"'dask://host:port'"
    )


def _connect(spec: str, timeout: float, retries: int) -> DaskExecutor:
    found = _DASK_ADDRESS.match(spec.strip())
    if found is None or not 0 < int(found["port"]) < 65536:
        raise ExecutorError(f"executor {spec!r} is not an address of the form dask://host:port")
    try:
        from distributed import Client
    except ImportError:
        raise ExecutorError(
            f"executor {spec!r} needs the 'distributed' package: pip install 'polydom[cluster]'"
        ) from None
    address = f"tcp://{found['host']}:{found['port']}"
    try:
        client = Client(address, timeout=f"{float(timeout)}s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ExecutorError(
            f"cannot reach the Dask scheduler of executor {spec!r} ({address}) within "
            f"{float(timeout):g} s: {exc}"
        ) from None
    return DaskExecutor(client, retries=retries, own_client=True)


def map_in_order(
    executor: Any, shared: Any, fn: Callable[..., Any], tasks: Sequence[tuple]
) -> list[Any]:
    """``[fn(shared, *task) for task in tasks]``, run through ``executor`` (anything
    :func:`make_executor` takes) in one session; results in task order.  An executor made
    here from a specification is closed at the end; one passed in is left open.

    Runtime complexity: ``len(tasks)`` calls of ``fn``, ``workers`` at a time.

    >>> map_in_order(None, 10, lambda shared, x: shared + x, [(1,), (2,)])
    [11, 12]
    """
    ex = make_executor(executor)
    out: list[Any] = [None] * len(tasks)
    try:
        with ex.session(shared) as session:
            for position, result in session.map_unordered(fn, tasks):
                out[position] = result
    finally:
        if ex is not executor:
            ex.close()
    return out
