"""Storage's modules by job: the write path (registering and publishing builds, the
expansion cache, telemetry) imports nothing of the read path (opening a build), directly or
through another storage module; both share the declarations, the seals and the rows of
builds, cost models and expansions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORAGE = Path(__file__).parents[2] / "storage"
WRITERS = ("storage.builds", "storage.expansion_cache", "storage.telemetry")
READERS = {"storage.reader", "storage.open_arrays", "storage.open_rows",
           "storage.lazy_models"}


def _imports(module: str) -> set[str]:
    """The storage modules ``module`` imports (at any depth of its body)."""
    tree = ast.parse((STORAGE / f"{module.split('.')[1]}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "storage":
                out |= {f"storage.{a.name}" for a in node.names}
            elif node.module.startswith("storage."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("storage.")}
    return {m for m in out if (STORAGE / f"{m.split('.')[1]}.py").exists()}


def _reached(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        for found in _imports(todo.pop()) - seen:
            seen.add(found)
            todo.append(found)
    return seen


@pytest.mark.parametrize("writer", WRITERS)
def test_the_write_path_imports_nothing_of_the_read_path(writer):
    assert _reached(writer) & READERS == set()


def test_the_read_path_is_reached_from_its_entry():
    assert READERS - {"storage.reader"} <= _reached("storage.reader")
    assert "storage.builds" not in _reached("storage.reader")
