"""Sizes and budgets are checked by one checker (issue 36, item 2): the constraints declared
once in :data:`polydom.curves.domain.CONSTRAINTS`, every refusal worded the same.

A scan of the code finds any other place that refuses a size or a budget by comparing it
with 0 (an ``if`` whose test compares a size or budget with 0 and whose body raises or
returns), or words such a refusal itself ("budget must be finite and >= 0").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from polydom.curves.domain import CONSTRAINTS, check_budget, check_field, check_size
from polydom.errors import ArgumentTypeError, InvalidArgumentError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("polydom", "lattice", "learners", "storage")
CHECKER = "polydom/curves/domain.py"

#: Names that hold a size or a budget.
_NAME = re.compile(r"^(n|b|size|sizes|budget|budgets|\w+_size|\w+_sizes|\w+_budget|\w+_budgets)$")
_WORDED = re.compile(r"\b(size|sizes|budget|budgets)\b[^.]*\bfinite (and|number) >=")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and node.attr != "size":  # numpy's array.size
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "float" and node.args):
        return _name(node.args[0])
    return None


def _zero(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) in (int, float)
            and node.value == 0)


def _compares_with_zero(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare):
            continue
        items = [node.left, *node.comparators]
        for op, a, b in zip(node.ops, items, items[1:], strict=False):
            if isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                for x, y in ((a, b), (b, a)):
                    name = _name(x)
                    if _zero(y) and name is not None and _NAME.match(name):
                        return True
    return False


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def size_and_budget_checks(source: str) -> list[str]:
    """Refusals of a size or a budget that ``source`` writes itself (line: text)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _compares_with_zero(node.test) and any(
                isinstance(inner, (ast.Raise, ast.Return))
                for stmt in node.body for inner in ast.walk(stmt)):
            found.append(f"{node.lineno}: {ast.unparse(node.test)}")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docs and _WORDED.search(node.value)):
            found.append(f"{node.lineno}: {node.value!r}")
    return found


def test_no_size_or_budget_check_outside_the_one_checker():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != CHECKER:
                found += [f"{rel}:{line}" for line in size_and_budget_checks(path.read_text())]
    assert found == []


@pytest.mark.parametrize("source", [
    "if not (math.isfinite(budget) and budget >= 0):\n    raise ValueError('no')\n",
    "if np.any(sizes < 0):\n    return False\n",
    "raise ValueError(f'budget must be finite and >= 0, got {b}')\n",
])
def test_the_scan_sees_a_check_written_by_hand(source):
    assert size_and_budget_checks(source) != []


def test_the_scan_lets_a_fast_path_that_hands_over_to_the_checker_pass():
    source = ("if not (0.0 <= budget <= MAX):\n"
              "    budget = check_budget(budget)\n")
    assert size_and_budget_checks(source) == []


@pytest.mark.parametrize("value", [-1, -1.0, float("nan"), float("inf"), 10**400])
def test_every_refusal_of_a_budget_has_one_wording(value):
    with pytest.raises(InvalidArgumentError, match=r"^budget must be finite and >= 0, got "):
        check_budget(value)
    with pytest.raises(InvalidArgumentError, match=r"^size must be finite and >= 0, got "):
        check_size(value, 0.0, 10.0)


def test_a_refusal_names_the_field_and_shows_the_value_as_written():
    with pytest.raises(InvalidArgumentError, match=r"^overrun must be a number in \(0, 1\), "
                                                    r"got '1.5'$"):
        check_field(1.5, "overrun", given="1.5")
    with pytest.raises(ArgumentTypeError, match="^budget must be a real number"):
        check_field("5", "budget")


def test_the_constraints_are_declared_as_data():
    assert CONSTRAINTS["size"].text == CONSTRAINTS["budget"].text == "finite and >= 0"
    assert CONSTRAINTS["overrun"].holds(0.05) and not CONSTRAINTS["overrun"].holds(0.0)
