"""One error family: every refusal the project documents is a ``PolydomError``.

The packages raise no bare built-in error on purpose (checked on the syntax tree of every
module), every public error class subclasses ``PolydomError`` and a built-in, and
``except PolydomError`` catches the refusals of every door a user calls.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import polydom
import polydom.errors as errors
from polydom.errors import PolydomError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("polydom", "lattice", "learners", "storage")

#: Built-in errors a module may raise by protocol, not as a refusal of ours: a Mapping's
#: missing key, a module's missing attribute (PEP 562), an optional dependency that is not
#: installed, the operating system refusing a port, a Sequence's position out of range.
PROTOCOL = {"KeyError", "AttributeError", "ImportError", "OSError", "StopIteration",
            "NotImplementedError", "IndexError"}
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}


def _raised_builtins(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id in BUILTIN_ERRORS - PROTOCOL:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: raise {target.id}")
    return found


def test_the_packages_raise_no_bare_builtin_error():
    found = [hit for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for hit in _raised_builtins(path)]
    assert found == []


def test_every_public_error_is_a_polydom_error_and_a_builtin():
    classes = [getattr(errors, name) for name in errors.__all__
               if inspect.isclass(getattr(errors, name))]
    assert len(classes) >= 20
    for cls in classes:
        assert issubclass(cls, PolydomError), cls
        if cls is not PolydomError:
            assert any(base.__module__ == "builtins" and base is not Exception
                       for base in cls.__mro__), cls


def test_every_error_class_in_the_packages_is_of_the_family():
    """A class named ``...Error`` defined anywhere in the packages derives from PolydomError."""
    outside = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                    module = module.removesuffix(".__init__")
                    cls = getattr(__import__(module, fromlist=["_"]), node.name)
                    if not issubclass(cls, PolydomError):
                        outside.append(f"{module}.{node.name}")
    assert outside == []


@pytest.fixture(scope="module")
def index():
    candidates = [polydom.Candidate("cheap", 0.6, "1 + n"),
                  polydom.Candidate("dear", 0.9, "10 + n")]
    return polydom.PolyDomIndex.build(candidates, n_min=0.0, n_max=100.0)


def _refusals(index, tmp_path):
    """(what, call) for each documented refusal; every call must raise a PolydomError."""
    import lattice
    import learners
    from learners.evaluation import EvaluationProtocol
    from polydom.serving.telemetry import TimingBuffer

    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    costs = {"a": "1 + n", "b": "2"}
    learner = learners.SyntheticLearner(lambda features: 0.5 + 0.1 * len(features))
    return [
        ("accuracy above 1", lambda: polydom.Candidate("x", 1.5, "1")),
        ("cost text that is code", lambda: polydom.CostCurve.parse("__import__('os')")),
        ("cost text that does not parse", lambda: polydom.CostCurve.parse("n**")),
        ("a cost curve negative on the domain",
         lambda: polydom.PolyDomIndex.build([polydom.Candidate("x", 0.5, "1 - n")], 0.0, 10.0)),
        ("an empty domain", lambda: polydom.PolyDomIndex.build(
            [polydom.Candidate("x", 0.5, "1")], n_min=5.0, n_max=1.0)),
        ("a negative size", lambda: index.lookup(size=-1.0, budget=1.0)),
        ("a NaN size", lambda: index.lookup(size=math.nan, budget=1.0)),
        ("an infinite budget", lambda: index.lookup(size=1.0, budget=math.inf)),
        ("a negative budget", lambda: index.lookup(size=1.0, budget=-2.0)),
        ("a size outside the domain", lambda: index.lookup(size=1e6, budget=1.0)),
        ("a size that is text", lambda: index.lookup(size="big", budget=1.0)),
        ("an unknown rule", lambda: index.lookup(size=1.0, budget=5.0, rule="fastest")),
        ("arrays of two lengths", lambda: index.lookup_many(np.ones(3), np.ones(2))),
        ("alpha below 1", lambda: lattice.explore(costs, learner, alpha=0.5)),
        ("a negative delta", lambda: lattice.explore(costs, learner, delta=-0.1)),
        ("an unknown keyword", lambda: polydom.build_index(costs, learner, alhpa=1.0)),
        ("one fold", lambda: EvaluationProtocol(folds=1).check()),
        ("a store that does not exist",
         lambda: polydom.open_index(f"sqlite:///{tmp_path / 'missing.db'}")),
        ("another program's database", lambda: polydom.open_index(f"sqlite:///{foreign}")),
        ("a NaN timing", lambda: TimingBuffer().record("a", 1.0, math.nan)),
        ("a timing of a negative size", lambda: TimingBuffer().record("a", -1.0, 0.1)),
    ]


def test_except_polydom_error_catches_every_documented_refusal(index, tmp_path):
    uncaught = []
    for what, call in _refusals(index, tmp_path):
        try:
            call()
        except PolydomError as exc:
            assert "\n" not in str(exc).strip(), (what, str(exc))
        except Exception as exc:  # noqa: BLE001  (the defect this test looks for)
            uncaught.append(f"{what}: {type(exc).__module__}.{type(exc).__name__}: {exc}")
        else:
            uncaught.append(f"{what}: nothing raised")
    assert uncaught == []
