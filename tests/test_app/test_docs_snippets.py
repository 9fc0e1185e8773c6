"""The README and docs/ are self-contained and their Python runs as written (issue 23 item 5).

* Every ``python``/``py`` block of a document runs, in document order and in one namespace,
  (an interactive session's ``>>>`` lines as its code),
  in a fresh process whose working directory stands for the repository root (``examples/``
  copied in), as a reader pasting the blocks one after the other would run them.
* Output a document shows under a Python block (a block after a line ending ``prints:``,
  ``prints (one line):`` or ``Output:``) is what that block prints, within the tolerance of
  :func:`tests.test_app.test_docs_commands.same_output`.
* Every shell block (``bash``, ``sh``, ``console``, ``shell``) either has commands that
  tests/test_app/test_docs_commands.py runs, or its first line says it needs a server
  (``# needs a server: ...``) or why the tests cannot run it (``# not run by the tests: ...``).
* Nothing points outside the repository: no ``../shared`` paths, and every relative link
  names a file of the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_app.test_docs_commands import (
    NOT_RUN_MARKS,
    SHELLS,
    SKIPPED,
    commands_in,
    same_output,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Documents whose Python takes more than a few seconds (marked slow).
SLOW = {"adapt.md", "dag.md", "features.md"}


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT / "docs")) if path.parent != ROOT else path.name


#: Marks the end of a block's output in the run of a document's Python.
END = "--- end of block {} ---"


def python_of(path: Path, marked: bool = False) -> str:
    """The document's Python blocks, joined in order (a block written as an interactive
    session: its ``>>>`` and ``...`` lines, the output left out); ``marked``: each block
    followed by a line printing :data:`END` with its number."""
    blocks = re.findall(r"```(?:python|py)\n(.*?)```", path.read_text(), flags=re.S)
    code = []
    for number, block in enumerate(blocks):
        if block.lstrip().startswith(">>> "):
            block = "\n".join(line[4:] for line in block.splitlines()
                              if line.startswith((">>> ", "... ")))
        code.append(block + (f"\nprint({END.format(number)!r})" if marked else ""))
    return "\n".join(code)


def shown_outputs(path: Path) -> dict[int, str]:
    """The output the document shows under its Python blocks, by block number: a ``text``
    or untagged block after a line ending ``prints:``, ``prints (one line):`` or
    ``Output:`` that follows the Python block."""
    text = path.read_text()
    out = {}
    blocks = list(re.finditer(r"```(?:python|py)\n.*?```", text, flags=re.S))
    for number, block in enumerate(blocks):
        after = re.match(r"\n+([^\n`]*(?:prints(?: \(one line\))?|Output):)\n+```(?:text)?\n"
                         r"(.*?)```", text[block.end():], flags=re.S)
        if after:
            out[number] = after.group(2)
    return out


def _python_docs() -> list:
    out = []
    for path in DOCS:
        if python_of(path):
            marks = [pytest.mark.slow] if _name(path) in SLOW else []
            out.append(pytest.param(_name(path), marks=marks, id=_name(path)))
    return out


def _run_python(path: Path, folder: Path) -> subprocess.CompletedProcess:
    script = folder / "snippets.py"
    script.write_text(python_of(path, marked=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def after_readme(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A folder standing for the repository root after the README's Python ran there (it
    writes ``index.db``, which other documents read), and that run."""
    folder = tmp_path_factory.mktemp("root")
    shutil.copytree(ROOT / "examples", folder / "examples",
                    ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    return folder, _run_python(ROOT / "README.md", folder)


@pytest.mark.parametrize("doc", _python_docs())
def test_the_python_of_a_doc_runs_as_written(doc, tmp_path, request):
    path = ROOT / doc if doc == "README.md" else ROOT / "docs" / doc
    code = python_of(path)
    if doc == "README.md" or "index.db" in code:  # read after the README wrote it
        folder, readme = request.getfixturevalue("after_readme")
        assert readme.returncode == 0, f"README.md: {readme.stderr[-3000:]}"
        if doc == "README.md":
            _check_shown_outputs(path, readme.stdout)
            return
        shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    else:
        shutil.copytree(ROOT / "examples", tmp_path / "examples",
                        ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    done = _run_python(path, tmp_path)
    assert done.returncode == 0, f"{doc}: {done.stderr[-3000:]}"
    _check_shown_outputs(path, done.stdout)


def _check_shown_outputs(path: Path, stdout: str) -> None:
    """Each output ``path`` shows under a Python block is what that block printed."""
    printed, start = {}, 0
    for number in range(len(re.findall(r"```(?:python|py)\n", path.read_text()))):
        end = stdout.index(END.format(number), start)
        printed[number], start = stdout[start:end], end + len(END.format(number))
    for number, shown in shown_outputs(path).items():
        difference = same_output(shown, printed[number])
        assert difference is None, (f"{_name(path)}: block {number + 1} printed other "
                                    f"output ({difference}):\n{printed[number]}")


def test_every_shell_block_runs_in_the_tests_or_says_it_needs_a_server():
    for path in DOCS:
        for block in re.finditer(r"```(\w*)\n(.*?)```", path.read_text(), flags=re.S):
            lang, body = block.groups()
            if lang not in SHELLS or body.startswith(NOT_RUN_MARKS):
                continue
            lines = [x for x in body.splitlines() if x.strip() and not x.startswith("#")]
            assert commands_in(block.group(0)) or all(x.startswith(SKIPPED) for x in lines), (
                path.name, body[:200])


def test_no_code_hides_in_a_text_block():
    """Python or commands a reader would copy sit in ``python`` / shell blocks (so the tests
    above run them, or the block says why not), not in ``text`` or untagged blocks."""
    python = re.compile(r"(import \w|from [\w.]+ import |>>> )")
    command = re.compile(r"(polydom [a-z]+ [^:]|python |pip |PYTHONPATH=)")
    for path in DOCS:
        for block in re.finditer(r"```(\w*)\n(.*?)```", path.read_text(), flags=re.S):
            lang, body = block.groups()
            first = next((line for line in body.splitlines() if line.strip()), "")
            if lang in ("", "text"):
                assert not python.match(first), (
                    f"{_name(path)}: Python in a {lang or 'untagged'} block ({first!r}): "
                    "tag it python (it then runs)")
                assert not command.match(first), (
                    f"{_name(path)}: a command in a {lang or 'untagged'} block ({first!r}): "
                    "tag it bash, with '$ ' before commands and output below them, or a "
                    f"first line '# needs a server: ...' / '# not run by the tests: ...'")


def test_nothing_points_outside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        path = ROOT / name
        if path.suffix not in (".md", ".py", ".toml", ".txt", ".cfg", ".yaml", ".yml", ""):
            continue
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        assert not re.search(r"(\.\./)+shared/|\bshared/(specs|tools|papers)\b", text), name


def test_every_relative_link_of_the_docs_names_a_file_of_the_repository():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            assert (path.parent / target).resolve().exists(), (path.name, target)
            assert ROOT in (path.parent / target).resolve().parents, (path.name, target)
