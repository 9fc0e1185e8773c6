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
