"""Budget adherence in situ: over-budget rate and accuracy of four ways to get cost curves.

On PLAID (time series, size = length) and digits (images, size = side), one run builds the
lattice once (expansions shared) and serves held-out items with ``predict_item`` at budgets
from the cheapest useful model to the dearest set, interleaving the methods item by item:

(a) ``max fit``      today's profiling: ``Featurizer.profile(statistic="max")``, a warm loop
                      of 3 repeats per item and feature, non-negative least squares;
(b) ``in situ``       the new default: ``Featurizer.profile_in_situ`` (every feature once per
                      item, shuffled, with model predictions between items), curves at the
                      0.95 quantile of in-situ time;
(c) ``guard``         (b) calibrated to ``target_overrun=0.05`` on held-out items timed in
                      situ (split conformal per candidate, ``Index.calibrated``);
(d) ``size-agnostic`` (c)'s models, each costed at the largest size (no index over sizes).

Then, on PLAID: drift (every feature made 2x slower mid-stream by running it and then
spinning as long again; a ``DriftMonitor`` on the telemetry flags it, ``polydom.recalibrate``
publishes a re-swept build from the timings recorded since, the reader ``refresh()``es), and
the over-budget rate while another process keeps one core busy.

    PYTHONPATH=$PWD python benchmarks/adherence_bench.py            # both workloads, drift, busy
    PYTHONPATH=$PWD python benchmarks/adherence_bench.py --quick    # fewer items (about 1/2)
    PYTHONPATH=$PWD python benchmarks/adherence_bench.py --workload plaid --timer cpu

Prints the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom
from polydom.app.insitu_run import (
    build_in_situ,
    choose_budgets,
    serve_side_by_side,
    size_agnostic,
    split_items,
)
from polydom.app.tables import format_table
from polydom.serving.telemetry import TimingRecord

Q = 0.05


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def plaid(args):
    from polydom.app.workloads.timeseries import load_plaid_workload

    wl = load_plaid_workload(series=args.series, seed=args.seed)
    return (wl.items, wl.labels, wl.featurizer, wl.cost_model,
            float(wl.sizes.min()), float(wl.sizes.max()))


def digits(args):
    from polydom.app.workloads.images import load_digits_workload

    sides = (8, 16, 32, 64)
    wl = load_digits_workload(sides=sides, digits=args.digits, seed=args.seed,
                              features=("thumbnail", "zones", "projections", "hog", "spectrum",
                                        "harris"))
    rng = np.random.default_rng(args.seed)
    count = len(wl.items) // len(sides)
    pick = [int(rng.integers(len(sides))) * count + d for d in range(count)]  # one side each
    items = [wl.items[i] for i in pick]
    model = polydom.CostModel({n: [0.0] for n in wl.featurizer.names},
                              columns=wl.featurizer.columns)
    return items, wl.labels[pick], wl.featurizer, model, 8.0, 64.0


def slowed(fz: polydom.Featurizer, factor: float) -> polydom.Featurizer:
    """The same features, each made ``factor`` times slower: run, then spin the extra time."""
    out = polydom.Featurizer(size=fz.size_function, timer=fz.timer)

    def wrap(routine):
        def slow(item):
            start = time.perf_counter()
            value = routine(item)
            until = start + factor * (time.perf_counter() - start)
            while time.perf_counter() < until:
                pass
            return value
        return slow

    for name in fz.names:
        out.add(name, wrap(fz.routine(name)), len(fz.columns[name]))
    return out


def table(rows, methods, budgets, unit=1e3):
    head = ["budget ms"] + [f"{m} {k}" for m in methods for k in ("over", "acc")]
    body = []
    for b in budgets:
        line = [float(f"{b / 1e-3:.3g}")]
        for m in methods:
            r = next(r for r in rows if r.method == m and r.budget == b)
            line += [round(r.over, 3), round(r.accuracy, 3)]
        body.append(line)
    return format_table(head, body)


def run_workload(name, loader, args, out):
    t0 = time.perf_counter()
    items, labels, fz, skeleton, n_min, n_max = loader(args)
    if args.timer == "cpu":
        fz.timer = time.process_time
    train, cal, test = split_items(len(items), 0.5, 0.2, seed=args.seed)
    test = test[: args.test_items]
    cache: dict = {}
    built = build_in_situ(items, labels, fz, skeleton, train, cal, n_min, n_max,
                          target_overrun=Q, profile_items=args.profile_items, alpha=args.alpha,
                          max_iter=200, cache=cache, seed=args.seed,
                          progress=lambda t: out(f"  [{name}] {t}"))
    # (a) today's profiling: a warm loop of repeats per feature, max per size, least squares
    prof_items = [items[i] for i in train[: args.profile_items]]
    t1 = time.perf_counter()
    warm = fz.profile(prof_items, repeats=3, statistic="max", degree=2)
    warm_seconds = time.perf_counter() - t1
    model_a = polydom.CostModel(warm.curves, bundles={k: sorted(v) for k, v in
                                                      skeleton.bundles.items()},
                                columns=skeleton.columns)
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))
    learner = learners.SklearnLearner(est, built.rows, np.asarray(labels)[train],
                                      features=model_a, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index_a = polydom.build_index(model_a, learner, alpha=args.alpha, n_min=n_min,
                                      n_max=n_max, cache=cache, cost_pruning=True,
                                      cost_unit="s")
    methods = {
        "a max fit": index_a,
        "b in situ": built.index,
        "c guard": built.guarded,
        "d size-agnostic": size_agnostic(built.guarded, n_max),
    }
    budgets = choose_budgets(built.guarded, np.array([fz.size(items[i]) for i in test]),
                             args.budgets)
    out(f"\n## {name}: {len(train)} training, {len(cal)} calibration, {len(test)} test items; "
        f"sizes [{n_min:g}, {n_max:g}]; {len(built.index.candidates)} candidates; "
        f"timer {args.timer}; load before serving {_load()}")
    out(f"profiling cost: in situ {built.seconds['profile']:.1f} s ({args.profile_items} items, "
        f"one pass), warm max fit {warm_seconds:.1f} s (3 repeats + warm-up); calibration "
        f"pass {built.seconds['calibrate']:.1f} s ({len(cal)} items)")
    factors = built.guarded.overrun_factors()
    out(f"guard factors (q={Q}): median {np.median(factors):.2f}, range "
        f"[{factors.min():.2f}, {factors.max():.2f}]")
    t1 = time.perf_counter()
    rows = serve_side_by_side(methods, [items[i] for i in test], np.asarray(labels)[test],
                              budgets, fz, seed=args.seed)
    out(f"served {len(test)} items x {len(budgets)} budgets x {len(methods)} methods in "
        f"{time.perf_counter() - t1:.0f} s; load after {_load()}")
    out(table(rows, list(methods), budgets))
    for m in methods:
        worst = max(r.over for r in rows if r.method == m)
        mean_acc = np.mean([r.accuracy for r in rows if r.method == m])
        out(f"  {m:16s} worst over-budget rate {worst:.3f}, mean accuracy {mean_acc:.3f}")
    out(f"[{name}] {time.perf_counter() - t0:.0f} s")
    return items, labels, fz, built, test, budgets


def drift(name, items, labels, fz, built, test, budgets, args, out):
    """Every feature 2x slower mid-stream: detect, recalibrate, refresh; rates per phase."""
    folder = Path(tempfile.mkdtemp(prefix="adherence_"))
    url = f"sqlite:///{folder / 'drift.db'}"
    guarded = built.guarded
    polydom.publish_index(url, guarded, {"adherence_bench": name})
    reader = polydom.open_index(url)
    buf = polydom.TimingBuffer()
    monitor = polydom.DriftMonitor(reader.costs, quantile=1 - Q, window=args.window)
    mid = budgets[len(budgets) // 2 - 1: len(budgets) // 2 + 1]
    slow = slowed(fz, 2.0)
    rng = np.random.default_rng(args.seed + 5)
    stream = rng.choice(test, size=4 * args.phase, replace=True)
    phase, served, over = "before", 0, {"before": [], "drifted": [], "after": []}
    counts = {"flagged after": None, "recalibrated after": None}
    since = 0
    flagged_at = None
    false_alarms: list[int] = []
    current = fz
    for k, i in enumerate(stream):
        if k == args.phase:
            current = slow
            phase = "drifted"
            drift_start = served
        b = mid[k % len(mid)]
        pred = reader.predict_item(items[i], b, current, telemetry=buf)
        served += 1
        over[phase].append(pred.seconds > b)
        fresh = [TimingRecord(f, pred.size, t) for f, t in pred.feature_seconds.items()]
        flagged = monitor.update_many(fresh)
        if flagged and phase == "before":
            false_alarms.append(served)
            monitor.reset()
        if flagged and phase == "drifted" and flagged_at is None:
            flagged_at = served
            counts["flagged after"] = served - drift_start
            _, since = polydom.store_timings(url, buf.drain())
        if flagged_at is not None and phase == "drifted" and served - flagged_at >= args.collect:
            polydom.store_timings(url, buf.drain())
            report = reader.recalibrate(since_id=since, min_records=10)
            monitor.reset(reader.costs)
            counts["recalibrated after"] = served - drift_start
            phase = "after"
            scales = report.scales
        if phase == "after" and len(over["after"]) >= args.phase:
            break
    out(f"\n## drift on {name}: every feature 2x slower after {args.phase} served items "
        f"(budgets {[float(f'{b * 1e3:.3g}') for b in mid]} ms alternating); load {_load()}")
    rows = [[p, len(v), round(float(np.mean(v)), 3) if v else "-"] for p, v in over.items()]
    out(format_table(["phase", "items", "over-budget rate"], rows))
    out(f"false alarms before the drift: {len(false_alarms)} (monitor reset after each); "
        f"drift flagged after {counts['flagged after']} served items (monitor window "
        f"{args.window}, tail and median tests); recalibrated (new build published, reader "
        f"refreshed) after {counts['recalibrated after']} served items since the drift")
    if counts["recalibrated after"] is not None:
        out(f"scales: median {np.median(list(scales.values())):.2f}, range "
            f"[{min(scales.values()):.2f}, {max(scales.values()):.2f}]")


def busy(name, items, labels, fz, built, test, budgets, args, out):
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        methods = {"b in situ": built.index, "c guard": built.guarded}
        rows = serve_side_by_side(methods, [items[i] for i in test], np.asarray(labels)[test],
                                  budgets, fz, seed=args.seed + 1)
    finally:
        hog.terminate()
        hog.wait()
    out(f"\n## {name} while another process keeps one core busy (load {_load()})")
    out(table(rows, list(methods), budgets))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", nargs="+", default=["plaid", "digits"],
                   choices=["plaid", "digits"])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--timer", choices=["wall", "cpu"], default="wall")
    p.add_argument("--budgets", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=1.1)
    p.add_argument("--no-drift", action="store_true")
    p.add_argument("--no-busy", action="store_true")
    args = p.parse_args(argv)
    args.series = 500 if args.quick else None
    args.digits = 500 if args.quick else 900
    args.test_items = 100 if args.quick else 200
    args.profile_items = 120 if args.quick else 200
    args.phase = 100 if args.quick else 200
    args.window = 30
    args.collect = 30
    out = print
    out(f"adherence_bench: target_overrun={Q}, load average {_load()} (1/5/15 min), "
        f"{os.cpu_count()} cores")
    t0 = time.perf_counter()
    for name in args.workload:
        loader = plaid if name == "plaid" else digits
        state = run_workload(name, loader, args, out)
        if name == "plaid" and not args.no_drift:
            drift(name, *state, args, out)
        if name == "plaid" and not args.no_busy:
            busy(name, *state, args, out)
    out(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {_load()}")


if __name__ == "__main__":
    main()
