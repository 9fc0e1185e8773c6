"""A build configuration's learning: train, sweep, store and guard, given checked values.

``polydom build`` parses and checks its configuration in the application
(:mod:`polydom.app.config_build`) and hands the values here as one :class:`BuildPlan`;
:func:`run_build` makes the lattice learner's estimator, the executor (counting trainings
for the progress bars), the budgeted sweeps and the index (:func:`polydom.pipeline.build.
build_index`), stores it, and, when the plan has a guard, calibrates and publishes the
guarded build (:func:`polydom.pipeline.guard.guard_index`).  It prints nothing: the
:class:`BuildOutcome` says what happened, and the application prints it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.cost_model import CostModel
from polydom.index.built import Index
from polydom.pipeline.build import build_index
from polydom.pipeline.guard import guard_index
from polydom.pipeline.learning import (
    make_estimator,
    make_executor,
    sklearn_learner,
    sweep_budgeted,
)
from polydom.pipeline.progress import CountingExecutor

__all__ = ["BuildOutcome", "BuildPlan", "Guard", "run_build"]


@dataclass(frozen=True)
class Guard:
    """The in-situ guard a build asks for: held-out ``sizes`` and per-atom ``timings``
    (seconds), the target rate, more ``levels``, the ``score``, and where the timings came
    from (``source``, stored with the guarded build)."""

    sizes: np.ndarray
    timings: Mapping[str, np.ndarray]
    target_overrun: float
    levels: Sequence[float] = ()
    score: str = "auto"
    source: str = "timings"


@dataclass(frozen=True)
class BuildPlan:
    """The checked values of one build: the rows ``X``, labels ``y``, the cost model, the
    lattice learner's name, the ``[[budgeted]]`` entries, the evaluation ``protocol``, the
    store URL and the index's parameters (``traversal`` and the training cap
    ``max_expansions`` of :func:`lattice.explore`)."""

    X: np.ndarray
    y: np.ndarray
    model: CostModel
    learner: str
    budgeted: Sequence[Mapping[str, Any]]
    protocol: Any
    store: str
    n_min: float
    n_max: float
    alpha: float = 1.0
    delta: float = 0.0
    cost_unit: str = "units"
    seed: int = 0
    executor: Any = None
    allow_foreign_database: bool = False
    guard: Guard | None = None
    traversal: str = "complete"
    max_expansions: int | None = None


@dataclass(frozen=True)
class BuildOutcome:
    """What :func:`run_build` did: the stored ``index`` (the guarded one when guarded, else
    None in ``guarded``), the budgeted candidates swept, the seconds of the trainings."""

    index: Index
    budgeted_candidates: int
    seconds: float
    guarded: Index | None = None
    learners: dict[str, int] = field(default_factory=dict)


def run_build(plan: BuildPlan) -> BuildOutcome:
    """Train and store the build of ``plan`` (and its guard); see the module docstring.

    Runtime complexity: the lattice's trainings (at most ``2**features`` sets, ``cv + 1``
    fits each), the budgeted sweeps' fits, one publish (two with a guard).

    Raises
    ------
    ValueError, polydom.errors.ExecutorError
        As :func:`polydom.pipeline.learning.make_executor`, :func:`build_index` and
        :func:`guard_index`.
    """
    estimator = make_estimator(plan.learner, plan.seed)
    learner = sklearn_learner(estimator, plan.X, plan.y, features=plan.model,
                              cv=plan.protocol, name=plan.learner)
    ex = make_executor(plan.executor)
    start = time.perf_counter()
    counting = CountingExecutor(ex)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            extra = sweep_budgeted(plan.budgeted, plan.model, plan.X, plan.y, plan.protocol,
                                   plan.seed, counting)
            with counting.phase("lattice"):
                index = build_index(plan.model, learner, alpha=plan.alpha, delta=plan.delta,
                                    n_min=plan.n_min, n_max=plan.n_max, store=plan.store,
                                    extra_candidates=extra, cost_unit=plan.cost_unit,
                                    executor=counting, traversal=plan.traversal,
                                    max_expansions=plan.max_expansions,
                                    allow_foreign_database=plan.allow_foreign_database)
    finally:
        if ex is not plan.executor:
            ex.close()
    seconds = time.perf_counter() - start
    per: dict[str, int] = {}
    for c in index.candidates:
        per[c.learner] = per.get(c.learner, 0) + 1
    guarded = None
    if plan.guard is not None:
        g = plan.guard
        guarded = guard_index(plan.store, index, g.sizes, g.timings, g.target_overrun,
                              levels=g.levels, score=g.score, seed=plan.seed, source=g.source)
    return BuildOutcome(index, len(extra), seconds, guarded, per)
