"""Learners and executors for the executor tests (importable by pool and Dask workers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lattice.executor import Executor, InProcessSession
from lattice.expansion import Expansion


class TableLearner:
    """Accuracy from a table; each finished training appends its feature set to ``log``."""

    #: Its candidates' learner name, the same for its subclasses (a build with one and a build
    #: with another store the same rows).
    learner_name = "table"

    def __init__(self, acc: dict, log: str | os.PathLike | None = None) -> None:
        self.acc = acc
        self.log = None if log is None else str(log)

    def describe(self) -> str:
        return f"TableLearner({sorted((sorted(k), v) for k, v in self.acc.items())})"

    def expand(self, features: frozenset) -> Expansion:
        features = frozenset(features)
        exp = Expansion(features, self.acc[features], None, 0.0)
        if self.log is not None:
            with open(self.log, "a") as f:
                f.write("+".join(sorted(features)) + "\n")
        return exp


class KillingLearner(TableLearner):
    """A :class:`TableLearner` whose process dies while training ``victim`` the first time
    (a marker file records that it happened)."""

    def __init__(self, acc: dict, log: str, victim: frozenset, marker: str,
                 delay: float = 1.0) -> None:
        super().__init__(acc, log)
        self.victim = frozenset(victim)
        self.marker = marker
        self.delay = delay

    def expand(self, features: frozenset) -> Expansion:
        if frozenset(features) == self.victim and not Path(self.marker).exists():
            Path(self.marker).write_text(str(os.getpid()))
            time.sleep(self.delay)  # mid-training
            os._exit(1)
        return super().expand(features)


def training_log(path: str | os.PathLike) -> list[str]:
    """The feature sets a :class:`TableLearner` finished training, in order."""
    p = Path(path)
    return p.read_text().split("\n")[:-1] if p.exists() else []


class _ReversedSession(InProcessSession):
    def map_unordered(self, fn, tasks):
        for position in reversed(range(len(tasks))):
            yield position, fn(self._shared, *tasks[position])


class ReversedExecutor(Executor):
    """Completes every batch in reverse order (as a cluster may)."""

    workers = 2

    def session(self, shared):
        from contextlib import nullcontext

        return nullcontext(_ReversedSession(shared))


class RecordingExecutor(ReversedExecutor):
    """A :class:`ReversedExecutor` that keeps what it is handed: ``calls`` holds
    ``(function name, tasks)`` per batch in order, ``batches`` the tasks alone."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list]] = []

    @property
    def batches(self) -> list[list]:
        return [tasks for _, tasks in self.calls]

    def session(self, shared):
        ctx = super().session(shared)
        run = ctx.__enter__()  # a nullcontext: entering hands back the session itself
        inner = run.map_unordered

        def map_unordered(fn, tasks):
            self.calls.append((getattr(fn, "__name__", repr(fn)), list(tasks)))
            return inner(fn, tasks)

        run.map_unordered = map_unordered
        return ctx


class CrashingTasks:
    """Shared object of the pool crash tests: :func:`crash_task` runs task ``i`` with it.

    Every attempt of task ``i`` appends a line to ``root/attempt-{i}``, every completion one
    to ``root/done-{i}``; unpickling it (once per worker process) appends the worker's pid
    to ``root/shipped``.  Task ``victim`` kills its worker process (``os._exit``) after
    ``delay`` seconds on its first ``crashes`` attempts (``crashes=-1``: on every attempt).
    Task ``waiter`` (optional) does not finish before the victim's last crash: it is in
    flight on the other worker when the victim's worker dies.
    """

    def __init__(self, root: str | os.PathLike, victim: int = 0, crashes: int = 1,
                 waiter: int | None = None, delay: float = 0.3) -> None:
        self.root = str(root)
        self.victim, self.crashes, self.waiter, self.delay = victim, crashes, waiter, delay

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        with open(os.path.join(self.root, "shipped"), "a") as f:
            f.write(f"{os.getpid()}\n")

    def _append(self, name: str, i: int) -> None:
        with open(os.path.join(self.root, f"{name}-{i}"), "a") as f:
            f.write(f"{os.getpid()}\n")

    def count(self, name: str, i: int) -> int:
        """Lines in ``root/{name}-{i}``: attempts or completions of task ``i``."""
        return len(training_log(os.path.join(self.root, f"{name}-{i}")))

    def run(self, i: int) -> int:
        self._append("attempt", i)
        if i == self.victim and (self.crashes < 0 or self.count("attempt", i) <= self.crashes):
            time.sleep(self.delay)
            os._exit(7)
        if i == self.waiter and self.crashes >= 0:
            deadline = time.monotonic() + 20.0
            while (self.count("attempt", self.victim) <= self.crashes
                   and time.monotonic() < deadline):
                time.sleep(0.01)
        self._append("done", i)
        return i * i + 1


def crash_task(shared: CrashingTasks, i: int) -> int:
    """An executor task: ``shared.run(i)``."""
    return shared.run(i)
