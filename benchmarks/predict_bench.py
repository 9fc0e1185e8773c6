"""``polydom predict`` (the batch door) against a plain loop over ``Index.lookup`` and
``Index.predict_hit``, and its peak memory against the data file's length.

The store is built by ``polydom build`` from the wine example (examples/wine.csv, 13
feature columns, a logistic regression per feature set; domain [1, 100], costs in units).
The data: rows drawn from the wine rows with a size per row drawn over the domain, written
as CSV (and ``.npy``).  Each timed run is a fresh interpreter that opens the store and
reads the file:

* ``door``: ``python -m polydom.app.cli predict URL --data FILE --out preds.csv --budget B
  --size-from n`` (reads in chunks, one lookup_many and one predict call per chosen model
  per chunk, writes CSV);
* ``loop``: the same file read with the csv module, then for each row
  ``hit = index.lookup(size, B)`` and ``index.predict_hit(hit, row[None])`` (writes nothing;
  the first ``--loop-rows`` rows: its cost per row does not depend on the count).

The loop's labels are compared with the door's, row by row.  Each child imports scikit-learn
and skops and opens the store before its clock starts (both pay those alike); wall and CPU
seconds (``process_time`` of the child) of the rest are medians over ``--repeats`` runs;
peak memory is the child's ``ru_maxrss``, for door runs over files of growing length.

    nice -n 10 python benchmarks/predict_bench.py --rows 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUDGET = "30"

CONFIG = """
data = "{data}"
target = "cultivar"
learner = "logistic"
store = "{store}"
domain = [1, 100]
cv = 3

[features]
basic = ["alcohol", "ash", "magnesium"]
acids = ["malic_acid", "alcalinity_of_ash"]
phenols = ["*phenols", "flavanoids", "proanthocyanins"]
colour = ["color_intensity", "hue", "od280*"]
proline = ["12:13"]

[costs]
basic = "1 + 0.1*n"
acids = "2 + 0.2*n"
phenols = "6 + 0.5*n"
colour = "0.5 + 0.2*n"
proline = "12 + n"
"""

#: What both children do before the clock starts: import what a prediction needs and open
#: the store (a fresh interpreter's start and imports are not what is compared).
WARM = """
import json, resource, sys, time
import numpy as np
import skops.io, sklearn.pipeline
import polydom
from polydom.app.cli import main

index = polydom.open_index(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
"""

#: The plain loop: reads the CSV with the csv module, looks up and predicts row by row (the
#: first ``argv[4]`` rows), writes the labels as JSON.
LOOP = WARM + """
import csv, itertools
budget, limit = float(sys.argv[3]), int(sys.argv[4])
labels = []
with open(sys.argv[2], newline="") as handle:
    reader = csv.reader(handle)
    next(reader)
    for fields in itertools.islice(reader, limit):
        values = np.array(fields, dtype=float)
        hit = index.lookup(values[0], budget)
        labels.append(None if hit is None else
                      index.predict_hit(hit, values[None, 1:])[0].item())
json.dump(labels, open(sys.argv[5], "w"))
print(time.perf_counter() - wall, time.process_time() - cpu,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

#: The door through the CLI's main (which opens the store itself).
DOOR = WARM + """
code = main(sys.argv[2:])
print(time.perf_counter() - wall, time.process_time() - cpu,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(0 if code in (0, 1) else code)
"""


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1"}


def build_store(folder: Path) -> str:
    """Build the wine store in ``folder`` (kept when already there); its URL."""
    store = folder / "wine.db"
    if not store.exists():
        config = folder / "wine.toml"
        config.write_text(CONFIG.format(data=ROOT / "examples" / "wine.csv", store=store))
        subprocess.run([sys.executable, "-m", "polydom.app.cli", "build", str(config)],
                       check=True, capture_output=True, env=child_env())
    return f"sqlite:///{store}"


def write_data(folder: Path, rows: int, seed: int = 0) -> tuple[Path, Path]:
    """``rows`` rows (size, 13 features) as CSV and as .npy; their paths."""
    with open(ROOT / "examples" / "wine.csv", newline="") as handle:
        table = np.array([r[:-1] for r in list(csv.reader(handle))[1:]], dtype=float)
    rng = np.random.default_rng(seed)
    picked = table[rng.integers(0, len(table), rows)]
    sizes = rng.uniform(1.0, 100.0, rows).round(3)
    data = np.column_stack([sizes, picked])
    path = folder / f"rows_{rows}.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["n", *[f"c{i}" for i in range(table.shape[1])]])
        writer.writerows(data.tolist())
    npy = folder / f"rows_{rows}.npy"
    np.save(npy, data)
    return path, npy


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall and CPU seconds of the timed part of one child running ``argv`` (after its
    imports and open), and its peak RSS in KiB."""
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          env=child_env())
    if done.returncode:
        raise SystemExit(f"child failed: {done.stderr[-800:]}")
    wall, cpu, rss = done.stdout.split()[-3:]
    return float(wall), float(cpu), int(rss)


def door(url: str, data: Path, out: Path, chunk: int) -> tuple[float, float, int]:
    return timed(["-c", DOOR, url, "predict", url, "--data", str(data), "--out", str(out),
                  "--budget", BUDGET, "--size-from", "0" if data.suffix == ".npy" else "n",
                  "--chunk-rows", str(chunk), "--no-progress"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--loop-rows", type=int, default=20_000,
                        help="rows of the same file the plain loop answers (its rows/s is "
                        "flat in the count: one lookup and one predict call per row)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-rows", type=int, nargs="+", default=[25_000, 100_000, 400_000])
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="predict_bench_"))
    folder.mkdir(parents=True, exist_ok=True)
    url = build_store(folder)
    data, npy = write_data(folder, args.rows)
    out, labels = folder / "preds.csv", folder / "loop.json"

    loop_rows = min(args.loop_rows, args.rows)
    runs: dict[str, tuple[int, list]] = {
        "door (csv -> csv)": (args.rows, []), "door (npy -> jsonl)": (args.rows, []),
        "loop over Index.lookup + predict_hit (csv)": (loop_rows, [])}
    for _ in range(args.repeats):
        runs["door (csv -> csv)"][1].append(door(url, data, out, args.chunk_rows))
        runs["door (npy -> jsonl)"][1].append(
            door(url, npy, folder / "preds.jsonl", args.chunk_rows))
        runs["loop over Index.lookup + predict_hit (csv)"][1].append(
            timed(["-c", LOOP, url, str(data), BUDGET, str(loop_rows), str(labels)]))

    with open(out, newline="") as handle:
        door_labels = {int(r["line"]): r["label"] for r in csv.DictReader(handle)}
    loop_labels = json.loads(labels.read_text())
    differ = sum(door_labels.get(i + 2, "") != ("" if v is None else str(v))
                 for i, v in enumerate(loop_labels))
    rate = {name: rows / statistics.median(w for w, _, _ in values)
            for name, (rows, values) in runs.items()}
    cpu_rate = {name: rows / statistics.median(c for _, c, _ in values)
                for name, (rows, values) in runs.items()}
    loop = "loop over Index.lookup + predict_hit (csv)"
    print(f"budget {BUDGET}, chunks of {args.chunk_rows}; medians of {args.repeats} runs, "
          "each a fresh interpreter timed after its imports and open")
    print("| run | rows | wall s | CPU s | rows/s (wall) | rows/s (CPU) | x loop (wall) | "
          "x loop (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (rows, values) in runs.items():
        wall = statistics.median(w for w, _, _ in values)
        cpu = statistics.median(c for _, c, _ in values)
        print(f"| {name} | {rows:,} | {wall:.2f} | {cpu:.2f} | {rows / wall:,.0f} | "
              f"{rows / cpu:,.0f} | {rate[name] / rate[loop]:.1f} | "
              f"{cpu_rate[name] / cpu_rate[loop]:.1f} |")
    print(f"labels differing between the door and the loop: {differ} of {len(loop_labels)}")

    print("\npeak memory of the door against the file's length (csv -> csv)")
    print("| rows | file MiB | wall s | CPU s | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for rows in args.memory_rows:
        path, _ = write_data(folder, rows, seed=1)
        wall, cpu, rss = door(url, path, out, args.chunk_rows)
        print(f"| {rows:,} | {path.stat().st_size / 2**20:.1f} | {wall:.2f} | {cpu:.2f} | "
              f"{rss / 1024:.0f} |")


if __name__ == "__main__":
    main()
