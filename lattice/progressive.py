"""Progressive Poly-Dom (spec 4.6): lower alpha step by step while a training budget lasts."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from lattice.executor import make_executor
from lattice.explore import Exploration, explore
from polydom.curves.cost_model import CostModel
from polydom.errors import InvalidArgumentError

__all__ = ["Progressive", "progressive"]


class Progressive:
    """Outcome of :func:`progressive`.

    Attributes
    ----------
    alpha : float
        The smallest alpha whose exploration completed within the budget.
    exploration : Exploration
        That exploration (identical to a direct :func:`lattice.explore` run at ``alpha``).
    runs : list of dict
        One row per attempted alpha: ``alpha``, ``complete``, ``expanded``, ``trained``
        (new trainings in that run), ``cache_hits``.
    trained : int
        Models trained over all runs (no set is trained twice).
    """

    def __init__(self, alpha: float, exploration: Exploration, runs: list[dict],
                 trained: int) -> None:
        self.alpha = alpha
        self.exploration = exploration
        self.runs = runs
        self.trained = trained

    def __repr__(self) -> str:
        return f"Progressive(alpha={self.alpha!r}, trained={self.trained}, runs={len(self.runs)})"


def progressive(
    costs: Mapping[str, Any] | CostModel,
    learner: Any,
    max_expansions: int | None = None,
    max_seconds: float | None = None,
    start: float = 2.0,
    step: float = 0.1,
    stop: float = 1.0,
    delta: float = 0.0,
    cache: MutableMapping | None = None,
    **explore_options: Any,
) -> Progressive:
    """Explore at alpha = ``start``, then ``start - step``, ... down to ``stop``, while the
    training budget lasts; return the smallest alpha that completed.

    Every run reads and writes one memo (``cache``, or a private dict), so a set is trained
    at most once over all runs.  This does not rely on the paper's Property 3.9 (the sets
    expanded at a smaller alpha need not contain those at a larger one; it is false): a run
    simply finds earlier trainings in the memo.

    Parameters
    ----------
    max_expansions : int, optional
        Budget in trainings (cache hits are free).
    max_seconds : float, optional
        Budget in wall-clock seconds from the call.
    start, step, stop : float
        The alpha schedule (``start >= stop >= 1``, ``step > 0``).
    delta, cache, **explore_options
        As in :func:`lattice.explore` (``executor`` too: resolved once, used by every run).

    Raises
    ------
    ValueError
        On a bad schedule, no budget at all, or a budget too small to complete ``start``.

    Runtime complexity: at most ``(start - stop) / step + 1`` explorations; trainings are
    bounded by the budget.
    """
    if max_expansions is None and max_seconds is None:
        raise InvalidArgumentError("give max_expansions or max_seconds (the training budget)")
    if not (math.isfinite(start) and math.isfinite(stop) and start >= stop >= 1.0):
        raise InvalidArgumentError(f"need start >= stop >= 1, got start={start!r}, stop={stop!r}")
    if not (math.isfinite(step) and step > 0.0):
        raise InvalidArgumentError(f"step must be > 0, got {step!r}")
    memo: MutableMapping = {} if cache is None else cache
    executor = explore_options.pop("executor", None)
    ex = make_executor(executor)
    deadline = None if max_seconds is None else time.perf_counter() + float(max_seconds)
    alphas = []
    k = 0
    while True:
        a = round(start - k * step, 10)
        if a < stop - 1e-12:
            break
        alphas.append(max(a, stop))
        k += 1
    runs: list[dict] = []
    trained = 0
    best: Exploration | None = None
    try:
        for a in alphas:
            left = None if max_expansions is None else max(int(max_expansions) - trained, 0)
            exp = explore(costs, learner, alpha=a, delta=delta, max_expansions=left, cache=memo,
                          executor=ex, _deadline=deadline, **explore_options)
            trained += exp.stats["trained"]
            runs.append({"alpha": a, "complete": exp.complete, "expanded": exp.n_expanded,
                         "trained": exp.stats["trained"], "cache_hits": exp.stats["cache_hits"]})
            if not exp.complete:
                break
            best = exp
    finally:
        if ex is not executor:
            ex.close()
    if best is None:
        raise InvalidArgumentError(
            f"the training budget (max_expansions={max_expansions!r}, "
            f"max_seconds={max_seconds!r}) does not complete alpha={start!r}"
        )
    return Progressive(best.alpha, best, runs, trained)
