"""Budgeted learners' sweeps through an executor: one task per (trade-off, size), same result."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from learners import CEGBClassifier, sweep_candidates
from tests.executor_support import ReversedExecutor

pytest.importorskip("lightgbm")
distributed = pytest.importorskip("distributed")

TRADEOFFS = [0.0, 0.01, 10.0]
SIZES = [10.0, 1000.0]


@pytest.fixture(scope="module")
def split():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    groups = {f"g{i}": [i, i + 10, i + 20] for i in range(10)}
    costs = {name: f"{1 + i} + {0.01 * (i + 1)}*n" for i, name in enumerate(groups)}
    return X_tr, X_te, y_tr, y_te, groups, costs


def sweep(split, executor):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    proto = CEGBClassifier(feature_groups=groups, n_estimators=10, num_leaves=8)
    return sweep_candidates(proto, TRADEOFFS, X_tr, y_tr, X_te, y_te, costs, sizes=SIZES,
                            executor=executor)


def summary(cands, X):
    return [(c.key, c.accuracy, c.cost.coefficients.tolist(), sorted(c.features),
             c.payload.estimator.predict(X).tolist()) for c in cands]


def test_one_task_per_tradeoff_and_size_in_grid_order(split):
    batches = []

    class Recording(ReversedExecutor):
        def session(self, shared):
            ctx = super().session(shared)
            run = ctx.__enter__()
            inner = run.map_unordered
            run.map_unordered = lambda fn, tasks: batches.append(list(tasks)) or inner(fn, tasks)
            return ctx

    reversed_order = sweep(split, Recording())
    assert batches == [[(t, s) for s in SIZES for t in TRADEOFFS]]
    assert [c.key for c in reversed_order] == [
        f"CEGBClassifier(tradeoff={t:g}, n={s:g})" for s in SIZES for t in TRADEOFFS]


@pytest.mark.slow
def test_a_sweep_is_the_same_on_a_pool_and_on_dask(split):
    X = split[1]
    ref = summary(sweep(split, None), X)
    assert summary(sweep(split, "processes:2"), X) == ref
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        assert summary(sweep(split, client), X) == ref
    assert np.isfinite([r[1] for r in ref]).all()
