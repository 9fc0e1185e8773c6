"""The layout's promises: light core imports, and every module's doctests pass."""

from __future__ import annotations

import ast
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
            "starlette", "uvicorn", "httpx", "prometheus_client", "datasette", "sktime",
            "pycatch22"}


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


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (at any depth of its code, not under
    ``if TYPE_CHECKING:``).  Package ``__init__`` facades are left out as targets: importing
    a name from a package counts as importing the submodule of that name when there is one.
    """
    files = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    packages = {n for n, p in files.items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                  and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        here = name if name in packages else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                               for a in node.names)
        graph[name] = {t for t in targets if t in files and t not in packages and t != name}
    return graph


def test_no_module_imports_itself_through_others():
    """No import cycle between the project's modules (facades aside): the layers of the
    README's picture import one way."""
    graph = _import_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


#: The floors of docs/architecture.md, bottom up: a module imports its own floor or below.
FLOORS = {
    "polydom.errors": 0, "polydom.lazy_exports": 0,
    "polydom.curves": 1, "polydom.index": 1, "polydom.blobs": 1,
    "polydom.serving": 2,
    "lattice": 3, "learners": 3, "storage": 3,
    "polydom.pipeline": 4,
    "polydom.app": 5,
}
#: Floor-3 packages that must not import each other: storage knows no learner and no
#: algorithm imports storage (persistence is passed in).
APART = {("storage", "learners"), ("learners", "storage"), ("lattice", "storage"),
         ("lattice", "learners")}


def _floor(name: str) -> str | None:
    """The floor package of module ``name`` (None for the ``polydom`` facade itself)."""
    return next((p for p in FLOORS if name == p or name.startswith(p + ".")), None)


def _imports_as_written() -> list[tuple[str, str]]:
    """(module, imported module) for every import of the project's code (package facades
    count as themselves; ``if TYPE_CHECKING:`` blocks left out)."""
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            here = name if path.name == "__init__.py" else name.rpartition(".")[0]
            tree = ast.parse(path.read_text())
            hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                      and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
            for node in ast.walk(tree):
                if id(node) in hidden:
                    continue
                if isinstance(node, ast.Import):
                    found += [(name, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                        base = ".".join([*anchor, base] if base else anchor)
                    found.append((name, base))
    return [(m, t) for m, t in found if t.split(".")[0] in PACKAGES]


def test_every_module_of_the_project_is_on_a_floor():
    homeless = sorted({m for m, _ in _imports_as_written() if _floor(m) is None
                       and m != "polydom"})
    assert not homeless, homeless


def test_each_floor_imports_only_its_floor_or_below():
    upward = sorted(f"{m} (floor {FLOORS[_floor(m)]}) imports {t} (floor {FLOORS[_floor(t)]})"
                    for m, t in _imports_as_written()
                    if _floor(m) and _floor(t) and FLOORS[_floor(t)] > FLOORS[_floor(m)])
    assert not upward, upward


def test_below_the_pipeline_nothing_imports_the_polydom_facade():
    """``polydom``'s face lazily names the pipeline: a lower floor importing it would reach
    up; it imports the module of the name instead."""
    found = sorted(m for m, t in _imports_as_written() if t == "polydom"
                   and _floor(m) and FLOORS[_floor(m)] < FLOORS["polydom.pipeline"])
    assert not found, found


def test_storage_learners_and_lattice_keep_apart():
    found = sorted(f"{m} imports {t}" for m, t in _imports_as_written()
                   if (_floor(m), _floor(t)) in APART)
    assert not found, found


def test_the_app_imports_no_storage_lattice_or_learners():
    """The application goes through the pipeline (``polydom.pipeline``) and the floors below
    it, never to the three packages directly."""
    found = sorted(f"{m} imports {t}" for m, t in _imports_as_written()
                   if m.startswith("polydom.app") and t.split(".")[0] in
                   ("storage", "lattice", "learners"))
    assert not found, found


@pytest.fixture(scope="module")
def tree_store(tmp_path_factory) -> str:
    """A store of decision trees (skops blobs) over two features of the breast-cancer data."""
    url = f"sqlite:///{tmp_path_factory.mktemp('floors') / 'trees.db'}"
    build = ("import polydom\n"
             "from sklearn.datasets import load_breast_cancer\n"
             "from sklearn.tree import DecisionTreeClassifier\n"
             "from learners import SklearnLearner\n"
             "X, y = load_breast_cancer(return_X_y=True)\n"
             "learner = SklearnLearner(DecisionTreeClassifier(max_depth=2, random_state=0), X,\n"
             "                         y, features={'a': list(range(15)),\n"
             "                                      'b': list(range(15, 30))}, cv=2)\n"
             f"polydom.build_index({{'a': '1', 'b': '2'}}, learner, n_max=10.0, store={url!r})\n")
    subprocess.run([sys.executable, "-c", build], cwd=ROOT, check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return url


def test_open_index_and_a_lookup_load_the_store_reader_only(tree_store):
    """A fresh process opening a store and looking up loads curves, index and the store's
    reader: no learner, no lattice, no scikit-learn, SciPy, pandas, skops or LightGBM, no
    serving, no write path of the pipeline."""
    loaded = _loaded_after(f"import polydom\nindex = polydom.open_index({tree_store!r})\n"
                           "assert index.lookup(size=5.0, budget=100.0) is not None")
    for heavy in ("lattice", "sklearn", "scipy", "pandas", "skops", "lightgbm", "sympy",
                  "polydom.serving", "polydom.app", "polydom.pipeline.build",
                  "polydom.pipeline.recalibrate", "learners.budgeted.contract",
                  "learners.sklearn_learner", "storage.expansion_cache",
                  "polydom.blobs.skops_codec", "sqlalchemy.dialects.postgresql"):
        assert not _under(loaded, heavy), heavy


def test_the_first_prediction_imports_the_chosen_models_codec_only(tree_store):
    """The first model decoded imports its codec and library (skops, scikit-learn), and no
    other learner's code."""
    loaded = _loaded_after(
        "import numpy as np, polydom\n"
        f"index = polydom.open_index({tree_store!r})\n"
        "assert index.predict(np.zeros((1, 30)), size=5.0, budget=100.0).shape == (1,)")
    assert _under(loaded, "skops") and _under(loaded, "polydom.blobs.skops_codec")
    for other in ("lightgbm", "lattice", "learners.budgeted.contract", "learners.budgeted.cegb",
                  "learners.budgeted.dag", "learners.budgeted.cstc", "learners.budgeted.adapt",
                  "learners.sklearn_learner", "learners.codecs.lightgbm_codec"):
        assert not _under(loaded, other), other


FACES = ("polydom", "polydom.curves", "polydom.index", "polydom.serving", "polydom.pipeline",
         "lattice", "learners", "learners.budgeted", "storage")


@pytest.mark.parametrize("face", FACES)
def test_a_face_name_stays_what_it_names_once_its_module_is_imported(face):
    """A name of a face that is also a submodule's name is that submodule, or is bound by
    the face so that importing the submodule does not replace it."""
    code = (f"import importlib, inspect, pkgutil, {face} as face\n"
            "subs = {m.name for m in pkgutil.iter_modules(face.__path__)}\n"
            "names = [n for n in face.__all__ if n in subs]\n"
            f"for n in names: importlib.import_module('{face}.' + n)\n"
            "for n in names:\n"
            "    value = getattr(face, n)\n"
            "    assert not inspect.ismodule(value) or not hasattr(value, n), n\n"
            "for n in face.__all__: getattr(face, n)\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT), "PATH": ""})
