"""Every command of the README and docs/ runs as written, from where a reader runs it.

A reader runs them from the repository root.  Each test copies what the commands read
(``examples/``) into a fresh folder that stands for the root, runs the README's Python
example there first (it writes ``index.db``, which the SQL and command-line examples read),
then each command of one document in order, and requires exit status 0.

Commands are: lines starting with ``$ `` in fenced blocks, the lines of shell blocks
(``bash``, ``sh``, ``console``, ``shell``) without ``$ `` prompts, and ``python examples/...``
in backticks; a shell block whose first line is ``# needs a server`` or ``# not run by the
tests: REASON`` is not run.
Not run: ``pip install`` and ``python -m pytest`` (the
README's setup lines; this is the test run), and the benchmark scripts (minutes each; their
commands and results live in ``benchmarks/RESULTS.md``).  ``polydom`` runs as
``python -m polydom.app.cli`` (the checkout's code), ``sqlite3`` through Python's sqlite3
module when the shell is not installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("bash", "sh", "console", "shell")
#: First line of a shell block whose commands need a server (a cluster, PostgreSQL), or that
#: the tests cannot run for a stated reason (the test suite itself, hours of mutation testing).
SERVER_MARK = "# needs a server"
NOT_RUN_MARKS = (SERVER_MARK, "# not run by the tests:")
SKIPPED = ("pip ", "python -m pytest", "PYTHONPATH=$PWD python benchmarks/", "python benchmarks/")


def commands_of(path: Path) -> list[str]:
    """The commands a reader of ``path`` would type, in document order."""
    return commands_in(path.read_text())


def commands_in(text: str) -> list[str]:
    """The commands of a Markdown text: ``$ `` lines of any fenced block, every line of a
    shell block without ``$ `` prompts; not blocks whose first line is one of
    :data:`NOT_RUN_MARKS`."""
    found: list[tuple[int, str]] = []
    for block in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S):
        lang, body = block.group(1), block.group(2)
        if body.startswith(NOT_RUN_MARKS):
            continue
        prompts = any(line.startswith("$ ") for line in body.splitlines())
        for line in body.splitlines():
            if line.startswith("$ "):
                found.append((block.start(), line[2:].strip()))
            elif (lang in SHELLS and not prompts and line.strip()
                  and not line.startswith("#")):
                found.append((block.start(), line.strip()))
    for inline in re.finditer(r"`((?:PYTHONPATH=\$PWD )?python examples/[^`]+)`", text):
        found.append((inline.start(), inline.group(1)))
    out = []
    for _, command in sorted(found):
        for part in command.split("&&"):
            part = part.split("  #")[0].strip()
            if part and not part.startswith(SKIPPED):
                out.append(part)
    return out


def _sqlite3_shell(args: list[str], cwd: Path) -> str:
    """``sqlite3 [-header] [-column] FILE SQL`` through Python's sqlite3 (no shell needed)."""
    words = [a for a in args if not a.startswith("-")]
    database, sql = words[0], words[1]
    if sql.startswith("."):
        return ""  # dot-commands (.backup) are the shell's own
    with sqlite3.connect(cwd / database) as conn:
        return "\n".join(" ".join(map(str, row)) for row in conn.execute(sql))


def run_command(command: str, cwd: Path) -> str:
    """Run one documented command in ``cwd``; its stdout (fails the test on exit status != 0)."""
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        words = words[1:]  # environment prefixes (PYTHONPATH=$PWD): set below
    if words[0] == "sqlite3" and shutil.which("sqlite3") is None:
        return _sqlite3_shell(words[1:], cwd)
    if words[0] == "polydom":
        words = [sys.executable, "-m", "polydom.app.cli", *words[1:]]
    elif words[0] == "python":
        words = [sys.executable, *words[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command!r} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture
def repository_root(tmp_path: Path) -> Path:
    """A folder laid out like the repository root, after the README's Python example ran."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    readme = (ROOT / "README.md").read_text()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in re.findall(r"```python\n(.*?)```", readme, flags=re.S):
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert (tmp_path / "index.db").exists()
    return tmp_path


def test_the_docs_have_commands_to_run():
    names = {path.name: commands_of(path) for path in DOCS}
    assert any(c.startswith("polydom demo") for c in names["README.md"])
    assert any(c.startswith("polydom build examples/") for c in names["demo.md"])
    assert any(c.startswith("sqlite3") for c in names["storage.md"])


@pytest.mark.slow
@pytest.mark.parametrize("doc", [p.name for p in DOCS if p.name != "README.md"])
def test_every_command_of_a_doc_runs_from_the_repository_root(doc, repository_root):
    pytest.importorskip("matplotlib")
    path = next(p for p in DOCS if p.name == doc)
    for command in commands_of(path):
        run_command(command, repository_root)


@pytest.mark.slow
def test_every_command_of_the_readme_runs_from_the_repository_root(repository_root):
    pytest.importorskip("skimage")
    pytest.importorskip("matplotlib")
    for command in commands_of(ROOT / "README.md"):
        if command.startswith("polydom demo"):
            command += " --no-progress"  # the bars go to stderr; the run is the same
        run_command(command, repository_root)
    assert (repository_root / "polydom_demo.db").exists()
