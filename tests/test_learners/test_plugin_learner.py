"""A learner package installed next to polydom plugs into builds, storage and serving
through its ``polydom.learners`` entry point, with no edit to polydom (issue 36, item 7).

``tests/plugin_learner`` is installed into a temporary folder as an installer leaves it:
the package and a ``.dist-info`` whose ``entry_points.txt`` names its spec.  With that
folder on the path, ``polydom build`` trains the plugin's learner, the store keeps its
models as arrays + JSON (no pickle), and a fresh process opens the store, answers a lookup
with the plugin's model and serves a file of rows with ``polydom predict``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugin_learner" / "polydom_plugin_nearest"

CONFIG = """
data = "breast_cancer"
learner = "nearest"
store = "plugin.db"
domain = [1, 100]

[features]
mean = ["0:10"]
worst = ["20:30"]

[costs]
mean = "1 + 0.1*n"
worst = "3 + 0.2*n"
"""

#: The fresh reader: opens the store, looks up, predicts, says what it loaded.
READER = """
import json, sys
import numpy as np
import polydom
from sklearn.datasets import load_breast_cancer

index = polydom.open_index(sys.argv[1])
loaded_before = "polydom_plugin_nearest" in sys.modules
hit = index.lookup(50.0, 100.0)
X, y = load_breast_cancer(return_X_y=True)
labels = index.predict(X, 50.0, 100.0)
print(json.dumps({"name": hit.name, "learner": hit.learner,
                  "class": type(hit.model).__module__ + "." + type(hit.model).__name__,
                  "accuracy": float(np.mean(labels == y)), "loaded_before": loaded_before,
                  "centroids": hit.model.centroids_.tolist()}))
"""


def _install(site: Path) -> None:
    """The plugin as pip leaves it in a target folder: the package and its dist-info."""
    shutil.copytree(PLUGIN, site / PLUGIN.name)
    info = site / "polydom_plugin_nearest-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: polydom-plugin-nearest\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[polydom.learners]\nnearest = polydom_plugin_nearest.spec:SPEC\n")
    (info / "RECORD").write_text("")


def _run(args: list[str], cwd: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_a_plugin_learner_is_built_stored_opened_and_served(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site)
    (tmp_path / "plugin.toml").write_text(CONFIG)
    built = _run(["-m", "polydom.app.cli", "build", "plugin.toml"], tmp_path, site)
    assert "built breast_cancer with nearest" in built.stdout

    url = f"sqlite:///{tmp_path / 'plugin.db'}"
    formats = _run(["-c", "import sqlite3, sys, json; print(json.dumps(sorted({r for r in "
                    "sqlite3.connect(sys.argv[1]).execute('select n_features, model_format "
                    "from expansions')})))", str(tmp_path / "plugin.db")], tmp_path, site)
    stored = {tuple(r) for r in json.loads(formats.stdout)}
    # every trained set's model is the plugin's, as arrays (the empty set is scikit-learn's
    # DummyClassifier, skops)
    assert stored == {(0, "skops"), (1, "arrays"), (2, "arrays")}

    read = json.loads(_run(["-c", textwrap.dedent(READER), url], tmp_path, site).stdout)
    assert read["learner"] == "nearest" and not read["loaded_before"]
    assert read["class"] == "polydom_plugin_nearest.NearestCentroid"
    assert read["accuracy"] > 0.85  # nearest centroid on breast cancer: about 0.89-0.92

    X, y = load_breast_cancer(return_X_y=True)
    with open(tmp_path / "rows.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f"x{i}" for i in range(X.shape[1])])
        writer.writerows(X[:40].tolist())
    _run(["-m", "polydom.app.cli", "predict", url, "--data", "rows.csv", "--size", "50",
          "--budget", "100", "--out", "preds.jsonl"], tmp_path, site)
    records = [json.loads(line) for line in open(tmp_path / "preds.jsonl")]
    centroids = np.array(read["centroids"])
    columns = {"mean": list(range(10)), "worst": list(range(20, 30))}
    used = sorted(c for f in records[0]["features"] for c in columns[f])
    nearest = np.argmin(((X[:40, used][:, None, :] - centroids[None]) ** 2).sum(axis=2), axis=1)
    assert [r["label"] for r in records] == nearest.tolist()
    assert {r["learner"] for r in records} == {"nearest"}
