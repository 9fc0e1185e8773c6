"""What storing standard errors and fold scores costs: publish and open, with and without.

    python benchmarks/uncertainty_open_bench.py [--candidates 10000] [--folds 5] [--repeats 5]

The same K random candidates (storage_bench.py's index: quadratic curves, accuracy rising
with cost, no models) are published to two fresh SQLite stores, once with no uncertainty
(``accuracy_se`` 0, no fold scores: one distinct fold-score text) and once with a standard
error and ``--folds`` distinct fold scores per candidate (K distinct texts, each decoded
once on open).  Medians over repeats of ``store.publish`` and ``polydom.open_index`` (from
the index arrays, the rows checked against them), side by side with their ratio, and a
check that the reopened candidates carry exactly what was stored.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import polydom
from storage import IndexStore

sys.path.insert(0, str(Path(__file__).parent))
from storage_bench import FEATURES, random_index  # noqa: E402


def with_uncertainty(index: polydom.Index, folds: int, seed: int = 2) -> polydom.Index:
    """The index's candidates, each with a standard error and ``folds`` fold scores whose
    mean is (up to rounding) its accuracy."""
    rng = np.random.default_rng(seed)
    cands = []
    for c in index.candidates:
        noise = rng.normal(0.0, 0.02, folds)
        scores = np.clip(c.accuracy + noise - noise.mean(), 0.0, 1.0)
        se = float(scores.std(ddof=1) / np.sqrt(folds))
        cands.append(dataclasses.replace(c, accuracy_se=se, fold_scores=tuple(scores)))
    table = polydom.PolyDomIndex.build(cands, *index.table.domain)
    return polydom.Index(table, FEATURES, info=dict(index.info))


def bench(path: Path, index: polydom.Index, repeats: int) -> tuple[float, float]:
    """Median publish and open seconds; the last open is checked against ``index``."""
    url = f"sqlite:///{path}"
    publish, opens = [], []
    for r in range(repeats):
        with IndexStore(url) as store:
            build_id = store.begin_build({"alpha": 1.0, "repeat": r}, FEATURES)
            start = time.perf_counter()
            store.publish(build_id, index)
            publish.append(time.perf_counter() - start)
    for _ in range(repeats):
        start = time.perf_counter()
        loaded = polydom.open_index(url)
        opens.append(time.perf_counter() - start)
    got = [(c.key, c.accuracy_se, c.fold_scores) for c in loaded.candidates]
    want = [(c.key, c.accuracy_se, c.fold_scores) for c in index.candidates]
    if got != want:
        raise SystemExit("reopened candidates differ from the stored ones")
    return statistics.median(publish), statistics.median(opens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    plain = random_index(args.candidates)
    rich = with_uncertainty(plain, args.folds)
    print(f"{args.candidates} candidates, {plain.table.entries} skyline entries; "
          f"medians of {args.repeats} repeats (SQLite, arrays path)")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [(name, *bench(Path(tmp) / f"{name}.db", index, args.repeats))
                for name, index in (("no uncertainty", plain),
                                    (f"se + {args.folds} fold scores", rich))]
    (_, p0, o0), (_, p1, o1) = rows
    print(f"{'candidates carry':<24} {'publish ms':>11} {'open ms':>9}")
    for name, p, o in rows:
        print(f"{name:<24} {1e3 * p:>11.1f} {1e3 * o:>9.1f}")
    print(f"{'ratio':<24} {p1 / p0:>11.2f} {o1 / o0:>9.2f}")


if __name__ == "__main__":
    main()
