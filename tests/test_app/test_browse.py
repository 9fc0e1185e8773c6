"""`polydom browse`: Datasette over a store, read-only, canned queries that answer as the
index does, plots served, and pages rendered by headless Chromium.

Screenshots go to ``$POLYDOM_SCREENSHOTS`` when set (CI keeps them), else to a temporary
folder.  The Chromium test skips with its reason where no ``chromium`` is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("datasette", reason="the serve extra (datasette) is not installed")
pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
pytest.importorskip("matplotlib", reason="matplotlib is not installed")

import polydom  # noqa: E402
from polydom.app.cli import main  # noqa: E402
from polydom.app.service import key_text  # noqa: E402
from polydom.curves.units import unit_name  # noqa: E402
from tests import serve_support as V  # noqa: E402

pytestmark = pytest.mark.timeout(240)

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browse")
    V.publish_trained(f"sqlite:///{folder / 'index.db'}")
    return folder / "index.db"


@pytest.fixture(scope="module")
def browsed(store):
    before = _digest(store)
    with V.live_server(str(store), verb="browse") as address:
        with httpx.Client(timeout=60) as client:
            yield address, client, store
    # nothing written: the file is unchanged, and the only side files are the empty WAL
    # pair that SQLite's read-only (mode=ro) open of a WAL store leaves
    assert _digest(store) == before
    side = {p.name: p.stat().st_size for p in store.parent.iterdir() if p != store}
    assert set(side) <= {"index.db-wal", "index.db-shm"}
    assert side.get("index.db-wal", 0) == 0


def _rows(client, address: str, query: str, **params) -> list[dict]:
    got = client.get(f"{address}/{query}.json", params={**params, "_shape": "array"})
    assert got.status_code == 200, got.text
    return got.json()


def test_the_skyline_query_lists_the_index_skyline_at_a_size(browsed):
    address, client, store = browsed
    index = polydom.open_index(str(store))
    for size in (0.0, 5.0, 50.0, 500.0, 1000.0):
        rows = _rows(client, address, "skyline_at_size", n=repr(size))
        assert [r["candidate"] for r in rows] == [key_text(c.key)
                                                  for c in index.table.skyline(size)]
        for r, c in zip(rows, index.table.skyline(size), strict=True):
            assert r["cost"] == pytest.approx(c.cost(size), rel=1e-12)
            assert (r["accuracy"], r["accuracy_se"]) == (c.accuracy, c.accuracy_se)
            assert r["unit"] == "ms"


def test_the_model_query_answers_as_the_index_lookup(browsed):
    address, client, store = browsed
    index = polydom.open_index(str(store))
    shape = ["build", "size", "budget", "candidate", "learner", "features", "accuracy",
             "accuracy_se", "cost", "cost_curve", "unit"]
    for size, budget in V.random_queries(60, seed=7):
        rows = _rows(client, address, "model_for_size_and_budget", n=repr(size),
                     budget=repr(budget))
        hit = index.lookup(size, budget)
        assert [r["candidate"] for r in rows] == ([] if hit is None else [key_text(hit.key)])
        if hit is not None:
            row, = rows
            assert list(row) == shape
            assert (row["build"], row["size"], row["budget"]) == (index.info["build_id"],
                                                                 size, budget)
            assert (row["accuracy"], row["accuracy_se"], row["learner"]) == (
                hit.accuracy, hit.candidate.accuracy_se, hit.candidate.learner)
            assert row["accuracy_se"] is not None
            assert row["cost"] == pytest.approx(hit.cost, rel=1e-12)
            assert row["unit"] == unit_name(index.info) == "ms"


def test_builds_and_candidates_by_learner_queries_list_the_store(browsed):
    address, client, store = browsed
    index = polydom.open_index(str(store))
    builds = _rows(client, address, "builds_newest_first")
    assert [(b["build_id"], b["unit"]) for b in builds] == [(index.info["build_id"], "ms")]
    # the table builds is at its own address (no canned query hides it), with its info
    table = client.get(f"{address}/builds.json", params={"_shape": "array"}).json()
    assert [json.loads(b["info"])["cost_unit"] for b in table] == ["ms"]
    rows = _rows(client, address, "candidates_by_learner", learner="")
    # the store's rows are the published candidates: those on some range's skyline (the
    # dominated ones live in the build's side record, which no view reads)
    published = {p for sky in index.table.skyline_positions for p in sky}
    assert sorted(r["candidate"] for r in rows) == sorted(
        key_text(index.candidates[p].key) for p in published)
    assert {r["unit"] for r in rows} == {"ms"}


def test_browse_refuses_writes_and_serves_the_plots(browsed):
    address, client, _ = browsed
    refused = client.get(f"{address}.json", params={"sql": "DELETE FROM builds"})
    assert refused.status_code == 400
    root = address.rsplit("/", 1)[0]
    for name in ("serving_map.png", "accuracy_at_sizes.png", "skylines.png",
                 "cost_curves.png"):
        got = client.get(f"{root}/plots/{name}")
        assert got.status_code == 200 and got.content[:8] == b"\x89PNG\r\n\x1a\n", name
    page = client.get(address)
    assert "/plots/serving_map.png" in page.text and "Skyline at a size" in page.text


@pytest.mark.parametrize("url", ["postgresql+psycopg://u@localhost/db", "missing.db",
                                 "sqlite:///:memory:"])
def test_browse_refuses_what_is_not_a_sqlite_store_file(url, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["browse", url, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SQLite" in err


def _screenshot(url: str, path) -> None:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1280,900", f"--screenshot={path}", url],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt "
                    "package chromium; .ci/run installs it)")
def test_chromium_renders_the_skyline_query_and_a_plot(browsed, tmp_path):
    from matplotlib.image import imread

    address, _, _ = browsed
    folder = os.environ.get("POLYDOM_SCREENSHOTS")
    out = Path(folder) if folder else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    shots = {"browse_skyline.png": f"{address}/skyline_at_size?n=500",
             "browse_plot.png": f"{address.rsplit('/', 1)[0]}/plots/serving_map.png"}
    for name, url in shots.items():
        _screenshot(url, out / name)
        pixels = imread(out / name)
        assert pixels.shape[:2] == (900, 1280)
        # a rendered page: many distinct colours, not a blank or error-only screen
        assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50, name
