"""Learners and executors for the executor tests (importable by pool and Dask workers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lattice.executor import Executor, InProcessSession
from lattice.expansion import Expansion


class TableLearner:
    """Accuracy from a table; each finished training appends its feature set to ``log``."""

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
