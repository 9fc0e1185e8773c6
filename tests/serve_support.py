"""Shared pieces of the service tests: stores with real models, a live `polydom serve`.

:func:`live_server` runs the real command line (``python -m polydom.app.cli serve URL
--port 0``) in a subprocess, reads the address it prints and stops it afterwards.
:data:`FEATURIZER` serves raw breast-cancer items (``{"size": n, "x": [30 numbers]}``) with
the column groups of :mod:`tests.storage_support`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import polydom
from storage import IndexStore
from tests import storage_support as S

ROOT = Path(__file__).resolve().parent.parent


def publish_trained(url: str, max_size: int = 2) -> polydom.Index:
    """Train every set of at most ``max_size`` column groups, publish, return the index."""
    X, y = S.data()
    with IndexStore(url) as store:
        build_id = store.begin_build(S.BUILD_PARAMS, S.COSTS, S.GROUPS)
        cache = store.expansion_cache(build_id)
        sets = S.feature_sets(max_size)
        for features in sets:
            cache[features] = S.train(features, X, y)
        index = S.index_of([S.candidate_of(cache[fs]) for fs in sets],
                           {"alpha": 1.0, "cost_unit": "ms"})
        store.publish(build_id, index)
    return index


def publish_string_labels(url: str) -> polydom.Index:
    """Publish five real models (one column group each, logistic regressions) whose labels
    are strings that look like numbers (``"1"``, ``"2"``), costs in ms; the index."""
    X, y = S.data()
    y = np.where(y == 1, "1", "2")
    with IndexStore(url) as store:
        build_id = store.begin_build(S.BUILD_PARAMS, S.COSTS, S.GROUPS)
        cache = store.expansion_cache(build_id)
        sets = S.feature_sets(1)
        for features in sets:
            cache[features] = S.train(features, X, y)
        index = S.index_of([S.candidate_of(cache[fs]) for fs in sets],
                           {"alpha": 1.0, "cost_unit": "ms"})
        store.publish(build_id, index)
    return index


def publish_random(url: str, seed: int) -> tuple[int, polydom.Index]:
    """Publish a build of 40 model-less random candidates; its id and its index."""
    index = S.index_of(S.random_candidates(40, seed, prefix=f"s{seed}_"))
    with IndexStore(url) as store:
        build_id = store.begin_build({**S.BUILD_PARAMS, "seed": seed}, S.COSTS, S.GROUPS)
        store.publish(build_id, index)
    return build_id, index


def _size(item: dict) -> float:
    return item["size"]


def _group(name: str):
    cols = S.GROUPS[name]
    return lambda item: [item["x"][c] for c in cols]


def make_featurizer() -> polydom.Featurizer:
    """Featurizer of raw items ``{"size": n, "x": [30 numbers]}``: one feature per group."""
    fz = polydom.Featurizer(size=_size)
    for name, cols in S.GROUPS.items():
        fz.add(name, _group(name), len(cols))
    return fz


FEATURIZER = make_featurizer()


def random_queries(n: int, seed: int, n_max: float = S.N_MAX) -> list[tuple[float, float]]:
    """``n`` (size, budget) pairs of Python floats: sizes over the domain (its ends
    included), budgets on a log scale from 0.5 to 5000."""
    rng = np.random.default_rng(seed)
    sizes = rng.uniform(0.0, n_max, n)
    sizes[: n // 20] = rng.choice([0.0, n_max], n // 20)  # the ends of the domain
    budgets = np.exp(rng.uniform(np.log(0.5), np.log(5000.0), n))
    return [(float(n), float(b)) for n, b in zip(sizes, budgets, strict=True)]


@contextlib.contextmanager
def live_server(url: str, *args: str, timeout: float = 60.0, verb: str = "serve"
                ) -> Iterator[str]:
    """Run ``polydom VERB URL --port 0 ARGS`` (``serve`` or ``browse``) and yield the address
    it prints (``http://127.0.0.1:P``, with a path for ``browse``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    errors = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "polydom.app.cli", verb, url, "--port", "0", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=errors, text=True,
    )
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    try:
        if not first or "http://" not in first[0]:
            proc.kill()
            proc.wait(timeout=10)
            errors.seek(0)
            raise RuntimeError(f"polydom {verb} did not start: {first} {errors.read()[-2000:]}")
        yield first[0].split()[-1]
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        errors.close()
