"""What the application needs to train: the registered learners by name, the evaluation
protocol, a scikit-learn lattice learner, executors, and the budgeted sweeps of a config.

The doors of ``polydom build``, the demos and the in-situ run into :mod:`learners` and
:mod:`lattice`, so that ``polydom/app`` imports neither.  Only the registry (no
scikit-learn) loads with this module; the rest when a function is first called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from learners.registry import get_learner, registered_learners
from polydom.curves.cost_model import CostModel
from polydom.errors import ConfigError

__all__ = ["evaluation_protocol", "learner_name", "make_estimator", "make_executor",
           "registered_learners", "sklearn_learner", "sweep_budgeted"]


def make_estimator(name: str, seed: int = 0, **params: Any) -> Any:
    """A fresh estimator (or budgeted prototype) of the learner registered as ``name``.

    Runtime complexity: that of the learner's factory.

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If no learner is registered as ``name``.
    """
    return get_learner(name).make(seed, **params)


def evaluation_protocol(folds: int = 3, holdout: float | None = None, seed: int = 0) -> Any:
    """The one evaluation protocol of a build (:class:`learners.EvaluationProtocol`):
    ``folds`` seeded stratified folds, or one held-out share ``holdout`` of the rows.

    Runtime complexity: O(1).
    """
    from learners.evaluation import EvaluationProtocol

    if holdout is not None:
        return EvaluationProtocol(holdout=holdout, seed=seed)
    return EvaluationProtocol(folds=folds, seed=seed)


def sklearn_learner(
    estimator: Any, X: np.ndarray, y: np.ndarray, features: Any, cv: Any,
    name: str | None = None,
) -> Any:
    """The lattice learner training clones of ``estimator`` on feature sets
    (:class:`learners.SklearnLearner`).

    Runtime complexity: O(1) (nothing is trained here).
    """
    from learners.sklearn_learner import SklearnLearner

    return SklearnLearner(estimator, X, y, features=features, cv=cv, name=name)


def make_executor(spec: Any = None) -> Any:
    """The executor ``spec`` names, connected and checked (:func:`lattice.make_executor`).

    Runtime complexity: connecting to a cluster when ``spec`` names one.

    Raises
    ------
    polydom.errors.ExecutorError
        If ``spec`` is bad or its cluster cannot be reached.
    """
    from lattice.executor import make_executor as make

    return make(spec)


def learner_name(learner: Any) -> str:
    """The name a lattice learner's candidates carry (:func:`lattice.learner_name`).

    Runtime complexity: O(1).
    """
    from lattice.expansion import learner_name as name_of

    return name_of(learner)


def sweep_budgeted(
    specs: Sequence[Mapping[str, Any]], model: CostModel, X: np.ndarray, y: np.ndarray,
    protocol: Any, seed: int, executor: Any,
) -> list[Any]:
    """The budgeted sweeps of a build config: every ``[[budgeted]]`` learner over its
    trade-off grid, scored on ``protocol`` (the lattice's), its fits through ``executor``
    (one progress phase per learner when it has ``phase``, as
    :class:`polydom.pipeline.progress.CountingExecutor`); index candidates.

    Each spec is a checked ``[[budgeted]]`` entry: ``learner``, ``tradeoffs``, ``sizes``,
    ``cost`` and ``params``.

    Runtime complexity: one training per trade-off and reference size of each spec.

    Raises
    ------
    polydom.errors.ConfigError
        If the features do not cover every column of ``X`` once, or a learner refuses its
        ``params``.
    """
    if not specs:
        return []
    from learners.budgeted.sweep import sweep

    covered = sorted(c for cols in model.columns.values() for c in cols)
    if covered != list(range(X.shape[1])):
        raise ConfigError("budgeted learners train on every column: the features must cover "
                          f"all {X.shape[1]} columns of the data, each once")
    out = []
    for spec in specs:
        try:
            proto = make_estimator(spec["learner"], seed, **spec["params"])
        except TypeError as exc:
            raise ConfigError(f"budgeted learner {spec['learner']!r}: bad params: {exc}") from None
        phase = getattr(executor, "phase", None)
        with phase(f"budgeted {spec['learner']}") if phase else contextlib.nullcontext():
            out.extend(sweep(proto, spec["tradeoffs"], X, y, model, evaluation=protocol,
                             sizes=spec["sizes"], cost=spec["cost"], executor=executor))
    return out
