"""Which CPU clock times a feature: the process's (``time.process_time``) or the thread's
(``time.thread_time``, :data:`polydom.serving.featurizer.CLOCKS` ``"cpu"``).

The in-situ protocol times each feature where serving computes it, and serving shares its
process with model fits and predictions.  OpenBLAS (numpy's and scipy's BLAS) keeps its
worker threads spinning for a while after a multi-threaded call; ``process_time`` sums
every thread of the process, so that spinning lands in whichever feature is being timed,
in whole scheduler ticks.  This script reads both clocks around every feature call (the
featurizer's own clock is ``thread_time``; a wrapper reads ``process_time`` around the
same routine call) on digits images, one side each, in three passes of the in-situ
protocol (``Featurizer.featurize_in_situ``, a stand-in model's prediction between items):

``after fit``   right after fitting the stand-in (LogisticRegression on the training rows:
                multi-threaded BLAS), as the in-situ build's calibration pass runs;
``steady``      the same items again, nothing multi-threaded since the last pass;
``matmul/10``   a 512 x 512 matrix product (a batch prediction's BLAS call) every 10
                predictions (the protocol predicts before each (item, feature) pair).

Per pass and clock, over the items' total feature time: median, p95, p99, max, p99 /
median and the share of items above twice the median; medians over ``--rounds`` rounds.

    PYTHONPATH=$PWD python benchmarks/cpu_clock_bench.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from polydom.app.tables import format_table
from polydom.app.workloads.images import load_digits_workload
from polydom.serving.featurizer import CLOCKS, Featurizer


def dual(fz: Featurizer, record: dict[str, dict[int, float]]) -> Featurizer:
    """``fz``'s features timed by ``thread_time`` (the featurizer's clock), with each call's
    ``process_time`` kept in ``record[name][id(item)]`` by a wrapper around the same call."""
    out = Featurizer(size=fz.size_function, timer=CLOCKS["cpu"])
    for name in fz.names:
        routine = fz.routine(name)

        def wrapped(item, routine=routine, name=name):
            start = time.process_time()
            value = routine(item)
            record[name][id(item)] = time.process_time() - start
            return value

        out.add(name, wrapped, len(fz.columns[name]))
    return out


def stats(per_item: np.ndarray) -> list[float]:
    med = float(np.median(per_item))
    p95, p99 = np.quantile(per_item, [0.95, 0.99])
    return [med * 1e3, float(p95) * 1e3, float(p99) * 1e3, float(per_item.max()) * 1e3,
            float(p99) / med, float(np.mean(per_item > 2 * med))]


def one_round(items, labels, fz, seed):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(items))
    train, timed = order[: len(items) // 2], order[len(items) // 2:]
    rows = fz.transform([items[i] for i in train])
    big = rng.random((512, 512))
    out = {}
    for phase in ("after fit", "steady", "matmul/10"):
        if phase == "after fit":
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
            model.fit(rows, labels[train])
        count = [0]

        def predict(row, phase=phase, model=model, count=count):
            model.predict(row[None, :])
            count[0] += 1
            if phase == "matmul/10" and count[0] % 10 == 0:
                big @ big  # noqa: B018 (a BLAS call, as a batch prediction makes)

        record = {name: {} for name in fz.names}
        probe = dual(fz, record)
        chosen = [items[i] for i in timed]
        run = probe.featurize_in_situ(chosen, predict=predict, seed=seed + 1)
        thread = sum(run.timings.values())
        process = np.array([sum(record[name][id(item)] for name in fz.names)
                            for item in chosen])
        out[phase] = {"process_time": stats(process), "thread_time": stats(thread)}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--digits", type=int, default=600)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    sides = (8, 16, 32, 64)
    wl = load_digits_workload(sides=sides, digits=args.digits, seed=0,
                              features=("thumbnail", "zones", "projections", "hog",
                                        "spectrum", "harris"))
    rng = np.random.default_rng(0)
    count = len(wl.items) // len(sides)
    pick = [int(rng.integers(len(sides))) * count + d for d in range(count)]
    items, labels = [wl.items[i] for i in pick], np.asarray(wl.labels)[pick]
    print(f"cpu_clock_bench: {len(items)} digits (one side each of {sides}), 6 features, "
          f"{args.rounds} rounds; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    rounds = [one_round(items, labels, wl.featurizer, seed) for seed in range(args.rounds)]
    body = []
    for phase in rounds[0]:
        for clock in ("process_time", "thread_time"):
            cols = np.median([r[phase][clock] for r in rounds], axis=0)
            body.append([phase, clock, *[round(float(v), 3) for v in cols]])
    print(format_table(["pass", "clock", "median ms", "p95 ms", "p99 ms", "max ms",
                        "p99/median", "share > 2x median"], body))
    print(f"load average after {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
