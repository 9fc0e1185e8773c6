"""What the README and docs/ say about the code is checked against the code (issue 28 item 4).

* A call written in backticks, ``name(args)``, whose name resolves to a function or class of
  ``polydom``, ``learners``, ``lattice`` or ``storage``, binds to its signature
  (``inspect.signature(...).bind_partial``: no unknown keyword, no extra positional
  argument; ``...`` stands for arguments left out).
* A call written as a signature (its positional arguments are the function's first
  parameter names, and it gives at least one ``name=default``) lists every parameter, in
  the code's order, with the code's defaults.
* Every repository path a document names in backticks (``polydom/...``, ``tests/...``,
  ``benchmarks/...``, ...) exists (``path.attr`` names an attribute of ``path.py``; files
  the documented commands write, ``*.db`` and ``*.png``, are not looked for).

The outputs a document shows are checked by tests/test_app/test_docs_commands.py (commands)
and tests/test_app/test_docs_snippets.py (Python).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PACKAGES = ("polydom", "learners", "lattice", "storage")
TOP = ("polydom/", "learners/", "lattice/", "storage/", "tests/", "benchmarks/", "examples/",
       "docs/", ".ci/")
WRITTEN = (".db", ".png")


def _resolve(name: str) -> Any:
    """The object a dotted name of a document stands for, or None: a package path
    (``learners.sweep``, ``polydom.index.built.Index``) or a name one package exports
    (``Featurizer.profile_in_situ``)."""
    parts = name.split(".")
    if parts[0] in PACKAGES:
        obj, rest = importlib.import_module(parts[0]), parts[1:]
    else:
        obj = next((importlib.import_module(p) for p in PACKAGES
                    if parts[0] in getattr(importlib.import_module(p), "__all__", ())), None)
        rest = parts
    for part in rest:
        if obj is None:
            return None
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except (ImportError, AttributeError):
                return None
    return obj


def _calls() -> list:
    """(document, text, dotted name, parsed call) of every call span that resolves."""
    out = []
    for path in DOCS:
        for match in re.finditer(r"`([A-Za-z_][\w.]*)\(([^`]*)\)`", path.read_text()):
            name, args = match.groups()
            try:
                call = ast.parse(f"f({args})", mode="eval").body
            except SyntaxError:
                continue  # prose, not Python
            if not isinstance(call, ast.Call):
                continue
            obj = _resolve(name)
            if obj is None or not callable(obj):
                continue
            try:
                signature = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            out.append(pytest.param(signature, call, id=f"{path.name}:{name}({args[:40]})"))
    return out


def _parameters(signature: inspect.Signature) -> list[inspect.Parameter]:
    params = list(signature.parameters.values())
    return params[1:] if params and params[0].name == "self" else params


@pytest.mark.parametrize("signature, call", _calls())
def test_a_call_a_document_shows_binds_to_the_codes_signature(signature, call):
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return  # *args / **kwargs written out: nothing to bind
    params = _parameters(signature)
    positional = [a for a in call.args
                  if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
    signature.replace(parameters=params).bind_partial(
        *range(len(positional)), **{k.arg: 0 for k in call.keywords})
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    defaults = {p.name: p.default for p in params}
    shown = [a.id for a in call.args if isinstance(a, ast.Name)]
    if (shown and len(shown) == len(call.args) and shown == names[:len(shown)] and call.keywords
            and all(isinstance(k.value, ast.Constant) and k.value.value == defaults[k.arg]
                    for k in call.keywords)):
        # written as the signature (names, then the defaults): every parameter, in order
        assert [*shown, *(k.arg for k in call.keywords)] == names


def test_every_repository_path_a_document_names_exists():
    missing = []
    for path in DOCS:
        for match in re.finditer(r"`([\w./-]+)`", path.read_text()):
            named = match.group(1).rstrip(".")
            if not named.startswith(TOP) or named.endswith(WRITTEN):
                continue
            module, _, attr = named.rpartition(".")
            if (ROOT / named).exists():
                continue
            if "/" in module and (ROOT / f"{module}.py").exists() and re.search(
                    rf"\b(def|class) {re.escape(attr)}\b|^{re.escape(attr)}\b",
                    (ROOT / f"{module}.py").read_text(), flags=re.M):
                continue
            missing.append(f"{path.relative_to(ROOT)}: {named}")
    assert missing == []
