"""Unproven is said, never signed (issue 35 item 5): a build whose info is not covered by its
seal (published before info was sealed) is named as such by ``serve`` (start-up line and
``/metrics``), ``lookup --json`` and every HTTP answer, and ``recalibrate`` with the key
refuses to seal and sign its info into a new build unless told to trust it.

The attack of the issue: someone without the key edits such a build's info in SQL (unit,
in-situ quantile); on the old code the key holder's ``recalibrate`` published build 2 with
``info_sealed`` true carrying the forged fields.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import learners
import polydom
import storage.builds
from polydom.app.cli import main
from polydom.errors import IndexIntegrityError
from tests.storage_support import ROOT

pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from polydom.app.service import make_app  # noqa: E402

KEY = "s3cret"
FORGE = ("UPDATE builds SET info = json_set(info, '$.cost_unit', 'us', "
         "'$.insitu', json_object('quantile', 0.01))")


def _build(path: Path, monkeypatch, sealed_info: bool) -> str:
    real = storage.builds.seal_header

    def without_info(*args, **kwargs):  # a build published before the info was sealed
        kwargs.pop("info", None)
        return real(*args, **kwargs)

    if not sealed_info:
        monkeypatch.setattr(storage.builds, "seal_header", without_info)
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.7,
           frozenset({"a", "b"}): 0.9}
    polydom.build_index({"a": "1 + n", "b": "2"}, learners.SyntheticLearner(acc.get),
                        n_max=100.0, store=str(path), store_key=KEY, cost_unit="ms")
    monkeypatch.undo()
    return str(path)


@pytest.fixture
def forged(tmp_path, monkeypatch):
    path = _build(tmp_path / "s.db", monkeypatch, sealed_info=False)
    with sqlite3.connect(path) as conn:
        conn.execute(FORGE)
    (tmp_path / "key").write_text(KEY)
    return path, str(tmp_path / "key")


def _timings(n: int = 30) -> list[tuple[str, float, float]]:
    return [(a, float(k), 2e-6 * (1 + k)) for a in ("a", "b") for k in range(n)]


def test_recalibrate_refuses_to_sign_unsealed_info_unless_trusted(forged, capsys):
    path, keyfile = forged
    index = polydom.open_index(path, key=KEY)
    assert index.info["cost_unit"] == "us" and index.info["info_sealed"] is False
    polydom.store_timings(path, _timings(), key=KEY)
    with pytest.raises(IndexIntegrityError, match="not covered by its seal") as caught:
        polydom.recalibrate(path, key=KEY, max_step=float("inf"))
    assert "\n" not in str(caught.value) and "sign it with the store key" in str(caught.value)
    assert main(["recalibrate", path, "--key-file", keyfile, "--max-step", "inf"]) == 2
    assert "--trust-unsealed-info" in capsys.readouterr().err
    assert polydom.open_index(path, key=KEY).info["build_id"] == 1  # nothing published
    assert main(["recalibrate", path, "--key-file", keyfile, "--max-step", "inf",
                 "--trust-unsealed-info"]) == 0
    after = polydom.open_index(path, key=KEY)
    assert after.info["build_id"] == 2 and after.info["info_sealed"] is True


def test_lookup_json_names_the_unproven_info(forged, capsys):
    path, keyfile = forged
    assert main(["lookup", path, "--size", "10", "--budget", "50", "--json",
                 "--key-file", keyfile]) == 0
    out, err = capsys.readouterr()
    assert '"unproven": "build 1: its info' in out
    assert err.count("not covered by its seal") == 1


def test_every_http_answer_and_the_metrics_name_it(forged, tmp_path, monkeypatch):
    path, _ = forged
    sealed = _build(tmp_path / "sealed.db", monkeypatch, sealed_info=True)
    for url, proven in ((path, False), (sealed, True)):
        with TestClient(make_app(polydom.open_index(url, key=KEY))) as client:
            answers = [client.get("/lookup", params={"size": "10", "budget": "50"}),
                       client.get("/explain", params={"size": "10", "budget": "50"}),
                       client.get("/healthz")]
            for got in answers:
                assert got.status_code == 200, got.text
                assert ("unproven" in got.json()) is (not proven), got.text
            metrics = client.get("/metrics").text
            assert f"polydom_build_info_sealed {1.0 if proven else 0.0}" in metrics


def test_serve_names_it_in_its_start_up_line(forged):
    path, keyfile = forged
    proc = subprocess.Popen(
        [sys.executable, "-m", "polydom.app.cli", "serve", path, "--port", "0",
         "--key-file", keyfile], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    proc.terminate()
    proc.wait(timeout=20)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert first and "serving build 1 (info NOT sealed: unproven) of" in first[0], (first, err)
    assert "warning: build 1: its info" in err
