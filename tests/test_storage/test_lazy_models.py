"""Models are built on first use, not when an index opens (issue 25): opening decodes no
blob, the first ``Hit.model`` / ``predict`` checks and decodes that one model, a model that
fails its checks raises its one-line error at every use while the others still serve."""

from __future__ import annotations

import sqlite3
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import learners
import polydom
import storage
import storage.blobs
from polydom.index import LazyPayload, resolve_payload
from storage.blobs import sha256_hex
from tests.storage_support import unseal

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150, :6], Y[:150]
GROUPS = {"a": [0, 1, 2], "b": [3, 4, 5]}


@pytest.fixture
def store(tmp_path):
    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, Y, features=GROUPS,
                                      cv=3)
    path = tmp_path / "index.db"
    built = polydom.build_index({"a": "1", "b": "2"}, learner, alpha=1.0, n_max=10.0,
                                store=f"sqlite:///{path}")
    return path, built


def _decodes(monkeypatch) -> list[str]:
    """Record every model blob storage decodes (by its ``what``)."""
    calls: list[str] = []
    original = storage.blobs.load_model

    def counted(*args, **kwargs):
        calls.append(kwargs.get("what", "model"))
        return original(*args, **kwargs)

    monkeypatch.setattr(storage.blobs, "load_model", counted)
    monkeypatch.setattr("storage.lazy_models.load_model", counted)
    return calls


def test_opening_decodes_no_model_and_a_lookup_decodes_only_the_one_used(store, monkeypatch):
    path, built = store
    calls = _decodes(monkeypatch)
    index = polydom.open_index(path)
    assert calls == []
    assert all(isinstance(c.payload, LazyPayload) and not c.payload.loaded
               for c in index.candidates)
    hit = index.lookup(5.0, 100.0)
    assert calls == []  # a lookup does not build the model either
    assert isinstance(hit.model, LogisticRegression) and len(calls) == 1
    np.testing.assert_array_equal(index.predict(X, 5.0, 100.0), built.predict(X, 5.0, 100.0))
    assert len(calls) == 1  # built once, kept
    assert sum(c.payload.loaded for c in index.candidates) == 1


def test_a_tampered_model_fails_at_first_use_with_one_line_and_others_still_serve(store):
    path, built = store
    with sqlite3.connect(path) as conn:
        links = [e for (e,) in conn.execute(
            "SELECT expansion_id FROM candidates ORDER BY candidate_id")]
        blob = conn.execute("SELECT model_blob FROM expansions WHERE id = ?",
                            (links[0],)).fetchone()[0]
        flipped = bytes(blob[:-1]) + bytes([blob[-1] ^ 1])
        conn.execute("UPDATE expansions SET model_blob = ? WHERE id = ?", (flipped, links[0]))
    index = polydom.open_index(path)  # opens: nothing is decoded yet
    bad = [index.candidates[0]]
    good = [c for c, e in zip(index.candidates, links, strict=True) if e != links[0]]
    assert good
    for _ in range(2):  # every use raises, nothing half-built is kept
        with pytest.raises(storage.ModelIntegrityError, match="fails its sha256 check") as err:
            resolve_payload(bad[0].payload)
        assert "\n" not in str(err.value)
    for cand in good:
        assert resolve_payload(cand.payload).predict(X[:3, :len(index.model_columns(
            cand.needs))]).shape == (3,)


def test_a_rewritten_blob_with_its_sha256_recomputed_is_checked_at_first_use(store):
    path, _ = store
    blob = b"not a model"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE expansions SET model_blob = ?, model_sha256 = ?",
                     (blob, sha256_hex(blob)))
    unseal(f"sqlite:///{path}")  # what a writer without a key does next to an unsigned store
    index = polydom.open_index(path)
    with pytest.raises(storage.ModelIntegrityError, match="does not decode"):
        index.predict(X, 5.0, 100.0)


def test_a_lazy_payload_is_built_once_under_concurrent_first_use():
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.05)
        return object()

    payload = LazyPayload(slow, "model x")
    got = []
    threads = [threading.Thread(target=lambda: got.append(payload.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(g) for g in got}) == 1


def test_a_failing_load_raises_every_time_and_is_not_cached():
    attempts = []

    def fail():
        attempts.append(1)
        raise storage.ModelIntegrityError("model x: refused")

    payload = LazyPayload(fail, "model x")
    for _ in range(3):
        with pytest.raises(storage.ModelIntegrityError, match="refused"):
            payload.get()
    assert len(attempts) == 3 and not payload.loaded


def test_an_opened_index_republished_stores_the_checked_models_again(store, tmp_path):
    path, built = store
    index = polydom.open_index(path)
    url = f"sqlite:///{tmp_path / 'copy.db'}"
    with storage.IndexStore(url) as copy:
        build = copy.begin_build({"learner": "copy"}, index.cost_model, index.columns)
        copy.publish(build, index)
    again = polydom.open_index(url)
    np.testing.assert_array_equal(again.predict(X, 5.0, 100.0), built.predict(X, 5.0, 100.0))
    with sqlite3.connect(tmp_path / "copy.db") as conn:
        formats = {f for (f,) in conn.execute("SELECT model_format FROM candidates")}
    assert "pickle" not in formats
