"""How fast a fresh process opens a store and looks up: ``open_index(url).lookup(...)``, timed
next to ``python -c pass``, on four stores; and what the first prediction imports.

Four stores are built once from small build configs of the breast-cancer data (three feature
groups, costs 1, 5 and 20): a lattice of logistic regressions (``lattice``), a lattice of
decision trees (``tree``), the logistic lattice with two CEGB candidates (``cegb``) and with
two DAG candidates (``dag``).  Then, in turns (one run of every command, then the next round,
so that load changes hit every command alike), ``--repeats`` fresh interpreters each run
``python -c pass`` and, per store, ``import polydom; polydom.open_index(url).lookup(10, B)``.
Wall and CPU (user + system of the child) medians and their ratios to ``python -c pass`` in
the same run are printed, with the load average (on a shared machine the CPU ratio is the
steadier one: compare within a table).

A second table, from one fresh process per store (not timed), counts the modules loaded after
the open and the lookup, and names the libraries and learner modules the first
prediction of a model then imports: the most accurate candidate of the store's own learner
(``lattice``: logistic, ``tree``: tree, ``cegb``: CEGB, ``dag``: DAG), its stored model built
and asked to predict 20 rows.

With ``--baseline DIR`` (another checkout, e.g. main before a change: ``git worktree add
/tmp/base main``) the open and lookup are also timed from that tree, side by side, on the
same four stores built by that tree (a tree reads the stores of its own schema).

    PYTHONPATH=$PWD python benchmarks/open_bench.py --repeats 9 [--baseline /tmp/base]
        [--stores /tmp/open_bench_stores]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: store -> (the lattice's learner, a budgeted learner section of the config or "")
STORES = {
    "lattice": ("logistic", ""),
    "tree": ("tree", ""),
    "cegb": ("logistic", '[[budgeted]]\nlearner = "cegb"\ntradeoffs = [0.001, 0.01]\n'
                         "params = { n_estimators = 20, num_leaves = 8 }\n"),
    "dag": ("logistic", '[[budgeted]]\nlearner = "dag"\ntradeoffs = [0.005, 0.05]\n'
                        "params = { cv = 3 }\n"),
}
#: store -> the learner whose candidate the first prediction should use
CHOSEN = {"lattice": "logistic", "tree": "tree", "cegb": "cegb", "dag": "dag"}
CONFIG = """data = "breast_cancer"
learner = "{learner}"
store = "{name}.db"
cv = 3
seed = 0
[features]
mean = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
error = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
worst = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29]
[costs]
mean = "1"
error = "5"
worst = "20"
{budgeted}"""
#: what a fresh process runs on a store (the url is argv[1])
OPEN_AND_LOOKUP = ("import sys, polydom; "
                   "polydom.open_index(sys.argv[1]).lookup(size=10.0, budget=30.0)")
#: libraries and project packages the module table reports
WATCHED = ("sklearn", "skops", "lightgbm", "scipy", "pandas", "sympy", "lattice",
           "learners.budgeted.cegb", "learners.budgeted.dag", "learners.budgeted.cstc",
           "learners.budgeted.adapt", "learners.sklearn_learner", "polydom.app")

PROBE = r"""
import json, sys
import numpy as np
import polydom
url, learner, rows = sys.argv[1], sys.argv[2], sys.argv[3]
index = polydom.open_index(url)
index.lookup(size=10.0, budget=30.0)
after_open = set(sys.modules)
from polydom.index import resolve_payload
chosen = max((c for c in index.candidates if c.learner == learner), key=lambda c: c.accuracy)
X = np.load(rows)
resolve_payload(chosen.payload).predict(X[:, index.model_columns(chosen.needs)])
print(json.dumps({"open": sorted(after_open), "predict": sorted(set(sys.modules) - after_open),
                  "key": str(chosen.key)}))
"""


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a timed child: ``tree`` on the path, and bytecode written (as a
    user's installation has it: without, every edited module compiles at every start)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree)}


def build_stores(folder: Path, tree: Path = ROOT) -> dict[str, str]:
    """Build the four stores in ``folder`` with the code of ``tree`` (those already there are
kept); their SQLAlchemy URLs.

    Runtime complexity: four small builds (seconds each).
    """
    folder.mkdir(parents=True, exist_ok=True)
    urls = {}
    for name, (learner, budgeted) in STORES.items():
        urls[name] = f"sqlite:///{folder / f'{name}.db'}"
        if (folder / f"{name}.db").exists():
            continue
        config = folder / f"{name}.toml"
        config.write_text(CONFIG.format(learner=learner, name=name, budgeted=budgeted))
        subprocess.run([sys.executable, "-m", "polydom.app.cli", "build", str(config)],
                       cwd=tree, check=True, capture_output=True,
                       env=child_env(tree))
    return urls


def timed(argv: list[str], tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one fresh interpreter running
    ``argv`` from ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], cwd=tree, capture_output=True,
                          env=child_env(tree))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{argv} failed in {tree}: {done.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _under(modules: list[str], prefix: str) -> int:
    return sum(m == prefix or m.startswith(prefix + ".") for m in modules)


def module_table(urls: dict[str, str], rows: Path) -> None:
    """Print, per store, the modules after open + lookup and what the first predict adds."""
    print("| store | modules after open + lookup | of them sklearn/scipy/pandas/lattice/learner "
          "rooms | model | first predict imports (modules) |")
    print("|---|---:|---:|---|---|")
    for name, url in urls.items():
        out = subprocess.run([sys.executable, "-c", PROBE, url, CHOSEN[name], str(rows)],
                             cwd=ROOT, check=True, capture_output=True, text=True,
                             env=child_env(ROOT))
        found = json.loads(out.stdout)
        heavy = sum(_under(found["open"], p) for p in WATCHED)
        added = ", ".join(f"{p} ({_under(found['predict'], p)})" for p in WATCHED
                          if _under(found["predict"], p)) or "nothing watched"
        print(f"| {name} | {len(found['open'])} | {heavy} | {found['key']} | {added} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--baseline", type=Path, help="another checkout timed side by side")
    parser.add_argument("--stores", type=Path,
                        help="keep the stores in this folder (built once, reused by later runs)")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.stores or Path(scratch)
        stores = {name: build_stores(folder / name.replace(" ", "_"), tree)
                  for name, tree in trees.items()}  # each tree reads stores it wrote
        urls = stores["this tree"]
        rows = folder / "rows.npy"
        subprocess.run([sys.executable, "-c", "import sys, numpy as np; from sklearn.datasets "
                        "import load_breast_cancer; np.save(sys.argv[1], "
                        "load_breast_cancer().data[:20])", str(rows)], check=True)
        runs = [("python -c pass", "this tree", ROOT, ["-c", "pass"])]
        runs += [(f"open_index + lookup: {name}", tree_name, tree,
                  ["-c", OPEN_AND_LOOKUP, stores[tree_name][name]])
                 for name in STORES for tree_name, tree in trees.items()]
        load_before = os.getloadavg()
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _, _, tree, argv in runs:  # one untimed round: bytecode written
            timed(argv, tree)
        for _ in range(args.repeats):
            for label, tree_name, tree, argv in runs:
                times.setdefault((label, tree_name), []).append(timed(argv, tree))
        load_after = os.getloadavg()
        base = times[("python -c pass", "this tree")]
        floor = statistics.median(w for w, _ in base)
        cpu_floor = statistics.median(c for _, c in base)
        print(f"{args.repeats} runs each, medians; load average {load_before[0]:.1f} before, "
              f"{load_after[0]:.1f} after ({os.cpu_count()} cores)")
        print()
        print("| command | tree | wall s | wall / python -c pass | CPU s | CPU / python -c pass |")
        print("|---|---|---:|---:|---:|---:|")
        for (label, tree_name), values in times.items():
            wall = statistics.median(w for w, _ in values)
            cpu = statistics.median(c for _, c in values)
            print(f"| {label} | {tree_name} | {wall:.3f} | {wall / floor:.2f} | {cpu:.3f} | "
                  f"{cpu / cpu_floor:.2f} |", flush=True)
        print()
        module_table(urls, rows)


if __name__ == "__main__":
    main()
