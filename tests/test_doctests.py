"""Every doctest of every module of polydom, lattice, learners and storage runs here, so the
README's ``python -m pytest tests`` runs them all (docs/testing.md).

A module whose optional dependency is missing (LightGBM, scikit-image, matplotlib) skips with
the reason; any other import error fails.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

PACKAGES = ("polydom", "lattice", "learners", "storage")
OPTIONAL = {"lightgbm", "skimage", "matplotlib", "tqdm", "psycopg", "distributed", "dask"}


def module_names() -> list[str]:
    """Dotted names of every module of the four packages (packages included)."""
    names = []
    for package in PACKAGES:
        names.append(package)
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", module_names())
def test_doctests_pass(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs the optional dependency {exc.name}")
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={"np": np, **vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name}"


def test_the_packages_hold_doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    count = sum(
        len(t.examples)
        for name in module_names()
        for t in finder.find(importlib.import_module(name), name)
        if name.split(".")[-1] not in {"plots"}
    )
    assert count >= 19
