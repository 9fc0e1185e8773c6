"""Every command of the README and docs/ runs as written, from where a reader runs it.

A reader runs them from the repository root.  Each test copies what the commands read
(``examples/``) into a fresh folder that stands for the root, runs the README's Python
example there first (it writes ``index.db``, which the SQL and command-line examples read),
then each command of one document in order, and requires exit status 0.

Commands are: lines starting with ``$ `` in fenced blocks, the lines of shell blocks
(``bash``, ``sh``, ``console``, ``shell``) without ``$ `` prompts, and ``python examples/...``
in backticks; a shell block whose first line is ``# needs a server`` or ``# not run by the
tests: REASON`` is not run.
Output shown under a ``$ `` command (the lines up to the next ``$ `` line or the block's
end) is what the run prints, within :func:`same_output`'s tolerance: words equal, numbers
within 1% (relative); durations (``in 54.2 s``), the reader's store paths
(``sqlite:////home/me/...``), times of day and blob digests (skops archives differ from run
to run) not compared.  A document whose commands show output has its own Python run first
(after the README's), as its reader runs it.
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


def _python_blocks(text: str) -> list[str]:
    """The ``python`` blocks of a Markdown text (an interactive session's ``>>>`` lines)."""
    out = []
    for block in re.findall(r"```(?:python|py)\n(.*?)```", text, flags=re.S):
        if block.lstrip().startswith(">>> "):
            block = "\n".join(line[4:] for line in block.splitlines()
                              if line.startswith((">>> ", "... ")))
        out.append(block)
    return out


def outputs_in(text: str) -> dict[str, list[str]]:
    """The output a Markdown text shows under each ``$ `` command (the lines up to the next
    ``$ `` line or the end of the block), by command, in document order; commands shown
    without output are left out."""
    shown: dict[str, list[str]] = {}
    for block in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S):
        if block.group(2).startswith(NOT_RUN_MARKS):
            continue
        command, lines = None, []
        for line in [*block.group(2).splitlines(), "$ "]:
            if line.startswith("$ "):
                if command and any(x.strip() for x in lines):
                    shown.setdefault(command, []).append("\n".join(lines))
                command, lines = line[2:].split("  #")[0].strip(), []
            else:
                lines.append(line)
    return shown


#: Words of an output that differ from run to run or reader to reader, and what they become.
VOLATILE = ((re.compile(r"\bin \d+(\.\d+)? s\b"), "in <seconds> s"),
            (re.compile(r"sqlite:///\S+"), "<store>"),
            (re.compile(r"\b\d{4}-\d\d-\d\dT[\d:.]+Z"), "<time>"),
            (re.compile(r"\b[0-9a-f]{12}\b"), "<digest>"),
            (re.compile(r"-{2,}"), "--"))
#: Relative tolerance of the numbers of a shown output.
RELATIVE = 0.01


def _words(text: str) -> list[str]:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return [w.strip(",;:()[]{}\"'") for w in text.split()]


def _number(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def same_output(shown: str, printed: str, relative: float = RELATIVE) -> str | None:
    """None when ``printed`` is the output ``shown`` (word by word; numbers within
    ``relative``; :data:`VOLATILE` words not compared), else the first difference.

    Runtime complexity: O(length of the outputs).

    >>> same_output("accuracy 0.916", "accuracy 0.9161") is None
    True
    >>> same_output("8 candidates", "7 candidates")
    "word 1: shown '8', printed '7'"
    """
    a, b = _words(shown), _words(printed)
    for i, (x, y) in enumerate(zip(a, b, strict=False), 1):
        u, v = _number(x), _number(y)
        same = (abs(u - v) <= relative * max(abs(u), abs(v)) if u is not None and
                v is not None else x == y)
        if not same:
            return f"word {i}: shown {x!r}, printed {y!r}"
    if len(a) != len(b):
        return f"shown {len(a)} words, printed {len(b)}"
    return None


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
    shown = outputs_in(path.read_text())
    code = "\n".join(_python_blocks(path.read_text()))
    if shown and code:  # the reader ran the document's Python before its commands
        (repository_root / "snippets.py").write_text(code)
        run_command("python snippets.py", repository_root)
    for command in commands_of(path):
        printed = run_command(command, repository_root)
        if shown.get(command):
            difference = same_output(shown[command].pop(0), printed)
            assert difference is None, f"{doc}: {command!r} printed other output " \
                f"({difference}):\n{printed}"


@pytest.mark.slow
def test_every_command_of_the_readme_runs_from_the_repository_root(repository_root):
    pytest.importorskip("skimage")
    pytest.importorskip("matplotlib")
    shown = outputs_in((ROOT / "README.md").read_text())
    for command in commands_of(ROOT / "README.md"):
        written = command
        if command.startswith("polydom demo"):
            command += " --no-progress"  # the bars go to stderr; the run is the same
        printed = run_command(command, repository_root)
        if shown.get(written):
            difference = same_output(shown[written].pop(0), printed)
            assert difference is None, f"README.md: {written!r} printed other output " \
                f"({difference}):\n{printed}"
    assert (repository_root / "polydom_demo.db").exists()
