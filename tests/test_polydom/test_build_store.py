"""build_index(store=...): persisted as it goes, resumable after kill -9, reopened exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import learners
import polydom
from tests.build_worker import COSTS, GROUPS

ROOT = Path(__file__).resolve().parents[2]


def run_worker(url: str, log: Path, pace: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "tests" / "build_worker.py"), url, str(log),
           "--pace", str(pace)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def trained(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow  # a real build_index subprocess killed mid-way, then resumed
def test_killed_build_resumes_without_retraining(tmp_path):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    proc = run_worker(url, first_log, pace=0.15)
    deadline = time.time() + 120
    while len(trained(first_log)) < 6 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the build finished (or crashed) before it could be killed: " + (
        proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "")
    proc.send_signal(signal.SIGKILL)
    # it died of the kill, not of an error of its own
    assert proc.wait() == -signal.SIGKILL
    before = trained(first_log)
    assert len(before) >= 6

    proc = run_worker(url, second_log, pace=0.0)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-2000:]
    after = trained(second_log)
    # at most the set that was being trained when the process died is trained again
    assert len(set(before) & set(after)) <= 1
    assert after, "the second run should have finished the lattice"

    index = polydom.open_index(url)
    # a third run with the same arguments trains nothing
    third_log = tmp_path / "third.log"
    proc = run_worker(url, third_log, pace=0.0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert trained(third_log) == []
    assert polydom.list_builds(url)
    best = max(c.accuracy for c in index.candidates)
    assert index.lookup(500.0, 1e9).accuracy == best


def test_stored_index_answers_exactly_as_built(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    learner = learners.SklearnLearner(model, X, y, features=GROUPS, cv=3)
    url = f"sqlite:///{tmp_path / 'built.db'}"
    built = polydom.build_index(COSTS, learner, alpha=1.1, n_max=1000.0, store=url)
    loaded = polydom.open_index(url)
    rng = np.random.default_rng(0)
    sizes = rng.uniform(0, 1000, 3000)
    budgets = rng.uniform(0, 2000, 3000)
    assert built.lookup_many(sizes, budgets).tolist() == loaded.lookup_many(sizes, budgets).tolist()
    for size, budget in zip(sizes[:50], budgets[:50], strict=True):
        a, b = built.lookup(size, budget), loaded.lookup(size, budget)
        assert (a and a.key) == (b and b.key)
        if a is not None:
            assert a.accuracy == b.accuracy and a.features == b.features
            np.testing.assert_array_equal(
                built.predict(X[:20], size, budget), loaded.predict(X[:20], size, budget)
            )


def test_store_and_cache_together_are_refused(tmp_path):
    learner = learners.SyntheticLearner(lambda fs: 0.5 + 0.1 * len(fs))
    with pytest.raises(ValueError, match="either cache or store"):
        polydom.build_index({"a": "1"}, learner, cache={}, store=str(tmp_path / "x.db"))


@pytest.mark.parametrize(
    "costs, match",
    [
        (polydom.CostModel({"a": "1", "b": "1"}, bundles={"ab": ["a", "b"]}),
         "costs name features \\['ab'\\] but the learner has"),
        ({"a": "1", "b": "1 - n"}, "atom 'b' = .* is negative"),
    ],
)
def test_bad_costs_are_refused_before_anything_is_stored(tmp_path, costs, match):
    learner = learners.SklearnLearner(
        LogisticRegression(),
        np.zeros((4, 2)), np.array([0, 1, 0, 1]), features=["a", "b"], cv=2)
    with pytest.raises(ValueError, match=match):
        polydom.build_index(costs, learner, n_max=10.0, store=f"sqlite:///{tmp_path / 'x.db'}")
    assert not (tmp_path / "x.db").exists()
