"""The layout's promises: light core imports, and every module's doctests pass."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("polydom", "lattice", "learners", "storage")
OPTIONAL = {"lightgbm", "skimage", "matplotlib", "tqdm", "psycopg", "distributed", "dask",
            "sktime", "pycatch22"}


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return set(out.stdout.split())


def _under(modules: set[str], prefix: str) -> list[str]:
    return sorted(m for m in modules if m == prefix or m.startswith(prefix + "."))


def test_import_polydom_loads_only_the_core():
    loaded = _loaded_after("import polydom")
    for heavy in ("storage", "sklearn.ensemble", "lightgbm", "matplotlib", "lattice",
                  "learners", "polydom.pipeline", "polydom.serving", "polydom.app"):
        assert not _under(loaded, heavy), heavy


def test_import_lattice_loads_no_featurizer_item_serving_or_storage():
    loaded = _loaded_after("import lattice")
    for heavy in ("polydom.serving", "polydom.pipeline", "storage", "learners", "lightgbm",
                  "matplotlib"):
        assert not _under(loaded, heavy), heavy


def test_the_budgeted_packages_load_no_lightgbm_until_a_learner_is_used():
    loaded = _loaded_after("import learners, learners.budgeted.cegb, learners.budgeted.cstc, "
                           "learners.budgeted.dag, learners.budgeted.adapt")
    for heavy in ("lightgbm", "learners.budgeted.cegb.classifier", "learners.budgeted.cstc.tree",
                  "learners.budgeted.dag.classifier", "learners.budgeted.adapt.classifier"):
        assert not _under(loaded, heavy), heavy


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        path = [str(ROOT / package)]
        names += [m.name for m in pkgutil.walk_packages(path, prefix=package + ".")]
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_doctests_of_every_module_pass(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:  # only a missing optional dependency skips
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"{name}: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
