"""Rerun only what a mutation run must rerun after the tests grew (an opt-in tool, not a test).

mutmut 3 resets every stored verdict when ``[tool.mutmut]``'s test selection changes, and
keeps a verdict only while its function's source is unchanged.  After tests were *added*
(never removed or weakened) a killed mutant stays killed, so a full rerun is wasted work:

``python -m tests.mutation_rerun prepare``
    copies every module's ``mutants/<module>.meta`` to ``.mutmut-backup/`` and writes
    ``.mutmut-backup/names.txt``: every mutant not killed before (survived, timed out, not
    run) and every mutant of a function whose source changed since (mutmut's own function
    hashes, computed here from the current source).
``mutmut run $(cat .mutmut-backup/names.txt)``
    reruns those under the current tests.
``python -m tests.mutation_rerun restore``
    puts back the earlier kills of functions whose source is unchanged (only where the
    rerun left "not checked"); run it after each ``mutmut run``.
``python -m tests.mutation_rerun report``
    one Markdown row per module: killed, survived, timeout, not run, score.

Runtime complexity: O(mutants) plus mutmut's mutation of each module's source.
"""

from __future__ import annotations

import collections
import json
import shutil
import sys
import tomllib
from pathlib import Path

BACKUP = Path(".mutmut-backup")
KILLED = {1, 3, -11}  # a kill: a failing test, pytest's internal error, a crash
TIMEOUT = {-24, 24, 152, 255, 36, -9}  # SIGXCPU, and SIGKILL after the CPU limit


def modules() -> list[str]:
    """The mutated modules, from ``[tool.mutmut] only_mutate``."""
    config = tomllib.loads(Path("pyproject.toml").read_text())
    return list(config["tool"]["mutmut"]["only_mutate"])


def _meta(module: str) -> Path:
    return Path("mutants") / (module + ".meta")


def _backup(module: str) -> Path:
    return BACKUP / (module.replace("/", "__") + ".meta")


def _function(key: str) -> str:
    from mutmut.utils.format_utils import mangled_name_from_mutant_name

    return mangled_name_from_mutant_name(key).rpartition(".")[2]


def prepare() -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import get_mutant_name

    BACKUP.mkdir(exist_ok=True)
    names = []
    for module in modules():
        shutil.copy(_meta(module), _backup(module))
        old = json.loads(_meta(module).read_text())
        codes, hashes = old["exit_code_by_key"], old["hash_by_function_name"]
        mutated = mutate_file_contents(module, Path(module).read_text())
        changed = {f for f, h in mutated.hash_by_function_name.items() if hashes.get(f) != h}
        keys = [get_mutant_name(Path(module), n) for n in mutated.mutant_names]
        rerun = [k for k in keys if _function(k) in changed or codes.get(k) not in KILLED]
        print(f"{module}: {len(keys)} mutants, {len(changed)} changed functions, "
              f"{len(rerun)} to run")
        names += rerun
    (BACKUP / "names.txt").write_text("".join(f"{n}\n" for n in names))


def restore() -> None:
    for module in modules():
        now = json.loads(_meta(module).read_text())
        old = json.loads(_backup(module).read_text())
        same = {f for f, h in now["hash_by_function_name"].items()
                if old["hash_by_function_name"].get(f) == h}
        put = 0
        for key, code in now["exit_code_by_key"].items():
            earlier = old["exit_code_by_key"].get(key)
            if code is None and _function(key) in same and earlier in KILLED:
                now["exit_code_by_key"][key] = earlier
                put += 1
        _meta(module).write_text(json.dumps(now, indent=4))
        print(f"{module}: {put} earlier kills put back")


def report() -> None:
    print("| module | mutants | killed | survived | timeout | not run | score |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for module in modules():
        codes = json.loads(_meta(module).read_text())["exit_code_by_key"].values()
        count = collections.Counter(
            "killed" if c in KILLED else "survived" if c == 0 else "timeout" if c in TIMEOUT
            else "not run" if c is None else "other" for c in codes
        )
        run = len(codes) - count["not run"]
        score = f"{100.0 * count['killed'] / run:.1f} %" if run else "-"
        print(f"| `{module}` | {len(codes)} | {count['killed']} | {count['survived']} | "
              f"{count['timeout']} | {count['not run']} | {score} |")


if __name__ == "__main__":
    {"prepare": prepare, "restore": restore, "report": report}[sys.argv[1]]()
