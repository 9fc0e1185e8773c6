"""Which modules each verb of the command line loads (issue 23: a CLI that answers at once).

Each case runs the command in a fresh interpreter and lists ``sys.modules`` when it ends:
``--version`` and ``--help`` load no numpy, SQLAlchemy or storage; ``lookup``, ``inspect``,
``builds list`` and ``plan`` read a store without scikit-learn, LightGBM, scipy, sympy,
the lattice or any learner's code (the learners' registry and codec table, plain names,
load: storage learns from them what it may decode); sympy loads only when cost text is
parsed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import polydom

ROOT = Path(__file__).resolve().parents[2]

#: What a read of a store never needs.
HEAVY = ("sympy", "sklearn", "lightgbm", "scipy", "pandas", "matplotlib", "skops", "lattice",
         "learners.sklearn_learner", "learners.evaluation", "learners.budgeted.contract",
         "learners.budgeted.cegb", "learners.budgeted.dag", "learners.budgeted.cstc",
         "learners.budgeted.adapt", "learners.codecs.lightgbm_codec")
#: What printing the version or the help never needs (the lookup rules, plain names, load).
STORE = ("numpy", "sqlalchemy", "storage", "polydom.index.table", "polydom.index.built",
         "polydom.pipeline", "learners")

_RUN = """
import sys
from polydom.app.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
with open(sys.argv[1], "w") as out:
    out.write("\\n".join(sorted(sys.modules)))
"""


def _loaded(tmp_path: Path, *argv: str) -> set[str]:
    listing = tmp_path / "modules.txt"
    subprocess.run([sys.executable, "-c", _RUN, str(listing), *argv], cwd=ROOT,
                   capture_output=True, check=True, timeout=300,
                   env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return set(listing.read_text().split())


def _under(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for p in prefixes if m == p or m.startswith(p + "."))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A small store built without scikit-learn (a synthetic learner)."""
    import learners

    url = f"sqlite:///{tmp_path_factory.mktemp('imports') / 'small.db'}"
    accuracy = {frozenset(): 0.5, frozenset({"x1"}): 0.7, frozenset({"x2"}): 0.75,
                frozenset({"x1", "x2"}): 0.9}
    polydom.build_index({"x1": "1 + n", "x2": "2 + 0.5*n"},
                        learners.SyntheticLearner(accuracy.__getitem__), n_max=100.0,
                        store=url, cost_unit="ms")
    return url


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["lookup", "--help"],
                                  ["inspect", "--help"], ["plan", "--help"]])
def test_version_and_help_load_no_numpy_and_no_store(tmp_path, argv):
    loaded = _loaded(tmp_path, *argv)
    assert "polydom.app.cli" in loaded
    assert _under(loaded, STORE + HEAVY) == []


@pytest.mark.parametrize("argv", [
    ["lookup", "{url}", "--size", "10", "--budget", "12"],
    ["lookup", "{url}", "--size", "10", "--budget", "12ms", "--json"],
    ["inspect", "{url}"],
    ["inspect", "{url}", "--csv"],
    ["builds", "list", "{url}"],
])
def test_reading_a_store_loads_no_learning_and_no_sympy(tmp_path, store, argv):
    loaded = _loaded(tmp_path, *(a.format(url=store) for a in argv))
    assert "storage" in loaded and "numpy" in loaded  # it did read the store
    assert _under(loaded, HEAVY) == []


def test_import_polydom_loads_neither_numpy_nor_sympy(tmp_path):
    code = ("import sys, polydom\nc = polydom.CostCurve([1, 0.5])\nstr(c), c.text()\n"
            "print('sympy' in sys.modules)\npolydom.CostCurve.parse('n + 1')\n"
            "print('sympy' in sys.modules)")
    bare = subprocess.run([sys.executable, "-c", "import sys, polydom\n"
                           "print(sorted(m for m in sys.modules if m.startswith(('numpy', "
                           "'sympy'))))"], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert bare.stdout.strip() == "[]"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.stdout.split() == ["False", "True"]  # sympy only once text is parsed
