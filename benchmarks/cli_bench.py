"""How fast the command line answers: wall and CPU medians per verb, next to ``python -c pass``.

Each command runs in a fresh interpreter (as a user runs it), ``--repeats`` times, in turns
(one run of every command, then the next round), so that load changes hit every command
alike.  With ``--baseline DIR`` (another checkout, e.g. main before a change) every polydom
command is also timed from that tree in the same rounds, side by side.  The load average
before and after is printed: the machine is shared, compare within a table.

    PYTHONPATH=$PWD python benchmarks/cli_bench.py --repeats 9 [--baseline /path/to/checkout]
        [--stores /tmp/open_bench_stores]

With ``--stores DIR``, ``polydom lookup`` is also timed on the four stores of
``benchmarks/open_bench.py`` (a lattice, a tree, a CEGB and a DAG store, built in ``DIR`` once
and reused).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


SMALL_STORE = """
import sys, learners, polydom
accuracy = {frozenset(): 0.5, frozenset({"x1"}): 0.7, frozenset({"x2"}): 0.75,
            frozenset({"x1", "x2"}): 0.9}
polydom.build_index({"x1": "1 + n", "x2": "2 + 0.5*n"},
                    learners.SyntheticLearner(accuracy.__getitem__), n_max=100.0,
                    store=sys.argv[1], cost_unit="ms")
"""


def small_store(folder: Path, tree: Path = ROOT) -> str:
    """A store of two features and four candidates (a synthetic learner: no training),
    written by the code of ``tree`` (each tree reads a store of its own schema)."""
    folder.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{folder / 'small.db'}"
    subprocess.run([sys.executable, "-c", SMALL_STORE, url], cwd=tree, check=True,
                   capture_output=True, env=child_env(tree))
    return url


def commands(url: str, stores: dict[str, str]) -> list[tuple[str, list[str]]]:
    """(label, argv after ``python``) of every timed command on the small store at ``url``;
    ``stores``: more stores (name -> URL) each looked up."""
    cli = ["-m", "polydom.app.cli"]
    return [
        ("python -c pass", ["-c", "pass"]),
        ("import polydom", ["-c", "import polydom"]),
        ("polydom --version", [*cli, "--version"]),
        ("polydom --help", [*cli, "--help"]),
        ("polydom lookup", [*cli, "lookup", url, "--size", "10", "--budget", "12"]),
        ("polydom inspect", [*cli, "inspect", url]),
        *((f"polydom lookup ({name} store)", [*cli, "lookup", where, "--size", "10",
                                              "--budget", "30"])
          for name, where in stores.items()),
    ]


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a timed child: ``tree`` on the path, and bytecode written (as a
    user's installation has it: without, every edited module compiles at every start)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree)}


def timed(argv: list[str], tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one run from ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=tree, check=False, capture_output=True,
                   env=child_env(tree))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--baseline", type=Path, help="another checkout timed side by side")
    parser.add_argument("--stores", type=Path,
                        help="also look up the four stores of benchmarks/open_bench.py, kept "
                        "in this folder (built there once)")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        from open_bench import build_stores  # benchmarks/ is the script's folder

        runs = []
        for name, tree in trees.items():  # each tree reads stores it wrote
            here = Path(folder) / name.replace(" ", "_")
            stores = {}
            if args.stores is not None:
                stores = build_stores(args.stores / name.replace(" ", "_"), tree)
            runs += [(label, name, tree, argv)
                     for label, argv in commands(small_store(here, tree), stores)
                     if name == "this tree" or label.startswith("polydom")]
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _, _, tree, argv in runs:  # one untimed round: bytecode written
            timed(argv, tree)
        for _ in range(args.repeats):
            for label, name, tree, argv in runs:
                times.setdefault((label, name), []).append(timed(argv, tree))
    load_after = os.getloadavg()
    floor = statistics.median(w for w, _ in times[("python -c pass", "this tree")])
    print(f"{args.repeats} runs each, medians; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after ({os.cpu_count()} cores)")
    print()
    print("| command | tree | wall s | CPU s | wall / python -c pass | wall - python -c pass |")
    print("|---|---|---:|---:|---:|---:|")
    for (label, name), values in times.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"| {label} | {name} | {wall:.3f} | {cpu:.3f} | {wall / floor:.2f} | "
              f"{wall - floor:+.3f} |")


if __name__ == "__main__":
    main()
