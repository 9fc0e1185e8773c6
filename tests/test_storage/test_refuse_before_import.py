"""A stored module path is checked against the registry before anything is imported.

Each attack runs in a fresh interpreter so that ``sys.modules`` says exactly what reading
the blob imported: a path nobody registered is a one-line ``DamagedStoreError`` refusal and
imports nothing (issue 35, item 7).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Writes, for each (class, meta) of argv[1], an arrays blob of that class with that meta,
#: reads it back the way a reader does, and prints each error and what each read imported.
_ARRAYS_ATTACK = """
import io, json, sys
import numpy as np
from polydom.blobs.model_registry import register_learner_models
from storage.blobs import load_model, sha256_hex

register_learner_models()
out = []
for cls, meta in json.loads(sys.argv[1]):
    header = json.dumps({"class": cls, "meta": meta, "nested": {}}).encode()
    buf = io.BytesIO()
    np.savez(buf, columns=np.array([0]),
             __polydom_meta__=np.frombuffer(header, dtype=np.uint8))
    blob = buf.getvalue()
    before = set(sys.modules)
    try:
        load_model(blob, "arrays", sha256_hex(blob), what="candidate 'x'")
        error = None
    except BaseException as exc:
        error = {"types": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
    out.append({"error": error, "imported": sorted(set(sys.modules) - before)})
print(json.dumps(out))
"""
SUBSET = "learners.budgeted.contract.ColumnSubsetModel"
#: stored estimator paths of a ColumnSubsetModel that no learner registered
PATHS = ["learners.budgeted.dag.classifier.os:X", "learners.nosuchmodule:X", "os:system",
         "nocolon"]

#: A skops archive whose one node is a ``TypeNode`` naming ``numpy.<argv[1]>``.
_SKOPS_ATTACK = """
import io, json, sys, zipfile
import polydom.blobs.allowlist as allowlist

allowlist._allowed_classes()  # what the grammar imports for itself, before the blob
node = {"__loader__": "TypeNode", "__module__": "numpy", "__class__": sys.argv[1],
        "__id__": 1, "protocol": allowlist.SKOPS_PROTOCOL}
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as archive:
    archive.writestr("schema.json", json.dumps(node))
before = set(sys.modules)
refused = allowlist.skops_refusals(buf.getvalue())
print(json.dumps({"refused": refused, "imported": sorted(set(sys.modules) - before)}))
"""


def _run(script: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def attacks() -> dict:
    """What reading each attack blob raised and imported, from one fresh interpreter."""
    cases = [(SUBSET, {"estimator": p, "n_columns": 1, "estimator_meta": {}}) for p in PATHS]
    cases.append(("learners.nosuchmodule.Model", {}))
    results = _run(_ARRAYS_ATTACK, json.dumps(cases))
    return dict(zip([*PATHS, "unregistered class"], results, strict=True))


def test_a_skops_node_naming_numpy_matlib_is_refused_without_importing_it():
    out = _run(_SKOPS_ATTACK, "matlib")
    assert out["refused"] == ["numpy.matlib (TypeNode)"]
    assert not [m for m in out["imported"] if m.startswith("numpy.")], out["imported"]


def test_a_stored_path_under_a_registered_module_imports_nothing(attacks):
    out = attacks["learners.budgeted.dag.classifier.os:X"]
    assert "DamagedStoreError" in out["error"]["types"]
    assert "not a registered model class" in out["error"]["message"]
    assert not [m for m in out["imported"] if m.startswith("learners.budgeted.dag")], \
        out["imported"]


@pytest.mark.parametrize("path", PATHS)
def test_an_unknown_stored_path_is_a_one_line_damaged_store_refusal(attacks, path):
    error = attacks[path]["error"]
    assert "DamagedStoreError" in error["types"]
    assert "ImportError" not in error["types"]
    assert "\n" not in error["message"] and repr(path) in error["message"]


def test_an_unregistered_array_class_name_is_a_damaged_store_refusal(attacks):
    out = attacks["unregistered class"]
    assert "DamagedStoreError" in out["error"]["types"]
    assert "ImportError" not in out["error"]["types"]
    assert not [m for m in out["imported"] if m.startswith("learners.nosuchmodule")]


def test_the_high_cost_model_checks_its_stored_path_before_importing():
    from learners.budgeted.adapt.high_cost import HighCostModel
    from polydom.errors import DamagedStoreError

    meta = {"format": "arrays", "estimator": "learners.nosuchmodule:X",
            "estimator_meta": {}, "n_columns": 1}
    with pytest.raises(DamagedStoreError, match="not a registered model class"):
        HighCostModel.from_arrays({"columns": [0]}, meta)
