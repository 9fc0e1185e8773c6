"""Progress of a build on the terminal: one bar per phase, counting trainings against a total.

Every training of a build (the lattice's expansions, each budgeted learner's sweep) is a task
handed to an executor in batches (:mod:`lattice.executor`).  :class:`CountingExecutor` wraps
the build's executor and adds each batch's size to the current phase's total when the batch
is handed out, and counts each task as it finishes, so every phase shows ``done/total``
(the lattice's total grows round by round: the explorer decides each round from the last).
The bars are tqdm's, shown on a terminal only (``disable=None``); without tqdm nothing shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lattice.executor import Executor, Session

__all__ = ["CountingExecutor"]


class _CountingSession(Session):
    """A session that reports each batch's size and each finished task to ``owner``."""

    def __init__(self, inner: Session, owner: CountingExecutor) -> None:
        self._inner = inner
        self._owner = owner

    def map_unordered(
        self, fn: Callable[..., Any], tasks: Sequence[tuple]
    ) -> Iterator[tuple[int, Any]]:
        bar = self._owner.bar
        if bar is not None:
            bar.total = (bar.total or 0) + len(tasks)
            bar.refresh()
        for item in self._inner.map_unordered(fn, tasks):
            if bar is not None:
                bar.update(1)
            yield item


class CountingExecutor(Executor):
    """``inner`` with a progress bar per phase (see the module docstring).

    Parameters
    ----------
    inner : lattice.executor.Executor
        Where the tasks run; closed by :meth:`close`.

    Use :meth:`phase` around each phase of a build::

        with CountingExecutor(ex) as counting, counting.phase("lattice"):
            build_index(..., executor=counting)
    """

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.workers = inner.workers
        self.bar: Any = None

    def __repr__(self) -> str:
        return f"CountingExecutor({self.inner!r})"

    @contextmanager
    def session(self, shared: Any) -> Iterator[Session]:
        with self.inner.session(shared) as session:
            yield _CountingSession(session, self)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the tasks run inside the block on a bar named ``name`` (left on screen with
        its final ``done/total`` when the block ends)."""
        try:
            from tqdm import tqdm
        except ImportError:
            yield
            return
        with tqdm(desc=name, total=0, unit="fit", disable=None, leave=True) as bar:
            self.bar = bar
            try:
                yield
            finally:
                self.bar = None

    def close(self) -> None:
        self.inner.close()
