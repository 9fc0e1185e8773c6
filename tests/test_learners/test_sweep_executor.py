"""Budgeted learners' sweeps through an executor: one task per (trade-off, size), same result."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import learners
import learners.registry
from learners import CEGBClassifier, sweep
from tests.executor_support import RecordingExecutor

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


def cegb_sweep(split, executor):
    X_tr, X_te, y_tr, y_te, groups, costs = split
    proto = CEGBClassifier(feature_groups=groups, n_estimators=10, num_leaves=8)
    return sweep(proto, TRADEOFFS, X_tr, y_tr, costs, evaluation=(X_te, y_te), sizes=SIZES,
                 executor=executor)


def summary(cands, X):
    return [(c.key, c.accuracy, c.cost.coefficients.tolist(), sorted(c.features),
             c.payload.estimator.predict(X).tolist()) for c in cands]


def test_one_task_per_tradeoff_and_size_in_grid_order(split):
    recording = RecordingExecutor()
    reversed_order = cegb_sweep(split, recording)
    # tasks (reference size, setting, split): one held-out split, no refit
    assert recording.batches == [[(k, j, 0) for k in range(len(SIZES))
                                  for j in range(len(TRADEOFFS))]]
    assert [c.key for c in reversed_order] == [
        f"cegb(tradeoff={t:g}, n={s:g})" for s in SIZES for t in TRADEOFFS]


@pytest.mark.slow
def test_a_sweep_is_the_same_on_a_pool_and_on_dask(split):
    X = split[1]
    ref = summary(cegb_sweep(split, None), X)
    assert summary(cegb_sweep(split, "processes:2"), X) == ref
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        assert summary(cegb_sweep(split, client), X) == ref
    assert np.isfinite([r[1] for r in ref]).all()


# ---------------------------------------------------------------------------- every learner
#: Registered budgeted learners, small enough for seconds per sweep: (name, params, tradeoffs).
#: (ADAPT's grid is also its build p_fulls: four fits per trade-off and size.)
LEARNERS = [
    pytest.param("cstc", {"depth": 2, "max_sweeps": 2, "feature_map": "standard"},
                 [0.001, 0.1], id="cstc"),
    pytest.param("cscc", {"n_stages": 2, "max_sweeps": 2, "feature_map": "standard"},
                 [0.001, 0.1], id="cscc"),
    pytest.param("dag", {"cv": 2}, [0.0, 0.05], id="dag", marks=pytest.mark.slow),
    pytest.param("adapt", {"method": "gbrt", "n_estimators": 5, "max_iter": 2,
                           "high_cost": "tree"}, [0.1], id="adapt", marks=pytest.mark.slow),
]
REF_SIZES = [10.0, 100.0]
GROUPS3 = {"mean": list(range(10)), "error": list(range(10, 20)), "worst": list(range(20, 30))}
COSTS3 = {"mean": "1 + 0.01*n", "error": "5", "worst": "20 + 0.1*n"}


@pytest.fixture(scope="module")
def cluster_client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


def registered_sweep(split, name, params, tradeoffs, executor):
    """The one sweep of a registered learner (what ``polydom build`` runs for a
    ``[[budgeted]]`` table, here on one held-out split)."""
    X_tr, X_te, y_tr, y_te, _, _ = split
    spec = learners.registry.get_learner(name)
    proto = spec.make(0, feature_groups=GROUPS3, **params)
    return sweep(proto, tradeoffs, X_tr, y_tr, COSTS3, evaluation=(X_te, y_te),
                 sizes=REF_SIZES, cost="expected", key=name, learner=name, executor=executor)


def full_summary(cands, X):
    return [(c.key, c.accuracy, c.cost.coefficients.tolist(), sorted(c.features),
             sorted(c.needs.items()), c.payload.estimator.predict(X).tolist()) for c in cands]


@pytest.mark.parametrize("name, params, tradeoffs", LEARNERS)
def test_each_learner_s_sweep_is_the_same_in_process_on_a_pool_and_on_dask(
        split, cluster_client, name, params, tradeoffs):
    X = split[1]
    recording = RecordingExecutor()
    ref = full_summary(registered_sweep(split, name, params, tradeoffs, None), X)
    assert ref and {len(r) for r in ref} == {6}
    reversed_order = registered_sweep(split, name, params, tradeoffs, recording)
    batches = recording.batches
    assert full_summary(reversed_order, X) == ref
    assert len(batches) == 1  # one batch: the whole grid
    per_point = len(batches[0]) // (len(tradeoffs) * len(REF_SIZES))
    assert len(batches[0]) == per_point * len(tradeoffs) * len(REF_SIZES)  # ADAPT: x p_full
    assert full_summary(registered_sweep(split, name, params, tradeoffs, "processes:2"),
                        X) == ref
    assert full_summary(registered_sweep(split, name, params, tradeoffs, cluster_client),
                        X) == ref
