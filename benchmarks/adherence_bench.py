"""Budget adherence in situ (issue 29): the guard against an oracle, at two targets, under load.

On PLAID (time series, size = length) and digits (images, size = side), for each timer
(CPU, wall) and each load (quiet; one core kept busy by a CPU hog during the evidence
passes and the serving), the in-situ pipeline (``polydom/app/insitu_run.py``) builds the
index with every trained set kept (``keep_trained=True``; the lattice's expansions are
shared between the runs of a workload) and guards it:

``guard``  ``Index.calibrated`` at ``target_overrun`` 0.05 (and 0.01, a level it holds:
           ``at_overrun``), score "auto", on the evidence: the held-out calibration items
           and the unprofiled training items, both timed in situ;
``oracle`` the same method fitted on half of the test items' own in-situ times (taken
           minutes before serving them, among every trained set): the best a guard could
           do without seeing the item; both serve the other half.

Every test item of the served half is served at every budget (geometric, from the cheapest
useful model to the dearest set) by every method with ``predict_item``, the servings in a
shuffled order (each follows another item's, as in a stream).  Printed
per budget: over-budget rate and accuracy of each; then the checks: worst over-budget rate
<= target + 0.02, mean accuracy over the budgets within 0.02 of the oracle's.

Then, on PLAID (CPU timer): ``DriftRecalibration`` (what ``polydom serve
--recalibrate-on-drift`` runs) on a published guarded build, fed by the served timings:
false alarms per 1,000 stationary items, and items served between a 2x slowdown of every
feature and the recalibrated build.

    PYTHONPATH=$PWD python benchmarks/adherence_bench.py              # all (several minutes)
    PYTHONPATH=$PWD python benchmarks/adherence_bench.py --workload plaid --timer cpu --no-hog
    PYTHONPATH=$PWD python benchmarks/adherence_bench.py --no-drift --seeds 16

With ``--seeds N`` the whole evaluation runs for seeds seed, ..., seed+N-1 (each a new
split into training, calibration and test items, and new fit and served halves), every
seed printed as above, then per cell (workload, timer, hog, serving, target) over the
seeds: the mean of (guard - oracle mean accuracy over the budgets) against -0.02, and the
guard's over-budget rate at its worst budget (budgets matched by rank, each rate averaged
over the seeds) against target + 0.02, each with its standard error across seeds (a
running summary after every seed; the last covers them all).

Prints the load average (the machine is shared) before and after each part.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

import polydom
import polydom.pipeline.recalibrate
from polydom.app.insitu_run import (
    ServedRow,
    build_in_situ,
    choose_budgets,
    serve_side_by_side,
    split_items,
)
from polydom.app.tables import format_table
from polydom.serving.drift_recalibration import DriftRecalibration
from polydom.serving.featurizer import CLOCKS
from polydom.serving.item_serving import predict_item
from polydom.serving.served_calibration import calibrate_on_served
from polydom.serving.telemetry import TimingBuffer
from polydom.serving.timing_recorder import TimingRecorder

TARGETS = (0.05, 0.01)


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


@contextlib.contextmanager
def cpu_hog(on: bool):
    """One process spinning on a core while the block runs (nothing when ``on`` is False)."""
    if not on:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        hog.terminate()
        hog.wait()


def _part(run, pos):
    """Sizes and per-atom timings of the items at ``pos`` of an in-situ run."""
    return run.sizes[pos], {a: t[pos] for a, t in run.timings.items()}


def replay(built, joint, parts, labels, budgets, seed):
    """Guard and oracle replayed on recorded, exchangeable timings (no serving): the guard
    fitted on the calibration items of the joint pass, the oracle on the fit half, both
    answering for the served half's sizes; an item overruns when its recorded time of the
    chosen set exceeds the budget; its label comes from the chosen model on its row."""
    guard = built.index.calibrated(*_part(joint, parts[0]), TARGETS[0], levels=TARGETS[1:],
                                   seed=seed)
    oracle = built.index.calibrated(*_part(joint, parts[1]), TARGETS[0], levels=TARGETS[1:],
                                    seed=seed)
    sizes, timings = _part(joint, parts[2])
    rows = joint.rows[parts[2]]
    out = []
    for q in TARGETS:
        for name, index in ((f"guard {q:g}", guard.at_overrun(q)),
                            (f"oracle {q:g}", oracle.at_overrun(q))):
            for b in budgets:
                over, right = [], []
                for i, n in enumerate(sizes):
                    hit = index.lookup(float(n), b)
                    if hit is None:
                        over.append(False)
                        right.append(False)
                        continue
                    paid = sum(p * timings[a][i] for a, p in hit.candidate.needs.items())
                    over.append(paid > b)
                    label = index.predict(rows[i: i + 1], float(n), b)[0]
                    right.append(label == labels[i])
                out.append(ServedRow(name, b, len(sizes), float(np.mean(over)),
                                     float(np.mean(right)), float("nan"), float("nan")))
    return out


def alone(index):
    """Per candidate of ``index`` (in order), an index holding that candidate only (the
    same cost model and domain; no overrun levels): what serves it alone."""
    info = {k: v for k, v in index.info.items() if k != "overrun"}
    n_min, n_max = index.table.domain
    return [polydom.Index(type(index.table).build([c], n_min, n_max), index.cost_model,
                          info=info) for c in index.candidates]


def edges(guard, items, fz, q, seed):
    """Each candidate served alone at its own edge: every item served (``predict_item``,
    lookup, features, prediction) by an index holding that candidate only, at a budget
    equal to its calibrated cost at the item's size; the (item, candidate) servings in a
    shuffled order (each follows another item's, as in a stream).  Returns (atoms,
    realised over-budget rate) per candidate: the per-set rate the guard promises to keep
    at most ``q``."""
    index = guard.at_overrun(q)
    singles = [(len(c.needs), one, c.cost)
               for c, one in zip(index.candidates, alone(index), strict=True) if c.needs]
    over = [[] for _ in singles]
    sizes = [float(fz.size(item)) for item in items]
    for visit in np.random.default_rng(seed).permutation(len(items) * len(singles)).tolist():
        i, k = divmod(visit, len(singles))
        _, one, cost = singles[k]
        b = float(cost(sizes[i]))
        over[k].append(predict_item(one, items[i], b * (1 + 1e-9), fz).seconds > b)
    return [(atoms, float(np.mean(o))) for (atoms, _, _), o in zip(singles, over, strict=True)]


def served_oracle(index, items, fz, qs, seed):
    """The guard method fitted on each set's own *served* timings instead of the in-situ
    protocol's per-atom ones: every item served by every candidate alone (as in
    :func:`edges`, at no budget limit), each candidate's conformal bound (score "auto")
    taken on its served times.  Exact per set where the protocol charges every atom a
    set's cold start; what the protocol's conservatism costs is the accuracy between it
    and the guard fitted on the same items in situ (both answer for the other items)."""
    from polydom.curves.calibration import calibrate_overrun

    cands = index.candidates
    live = [k for k, c in enumerate(cands) if c.needs]
    singles = alone(index)
    sizes = np.array([float(fz.size(item)) for item in items])
    served = {k: np.empty(len(items)) for k in live}
    for visit in np.random.default_rng(seed).permutation(len(items) * len(live)).tolist():
        i, j = divmod(visit, len(live))
        k = live[j]
        served[k][i] = predict_item(singles[k], items[i], 1e9, fz).seconds
    out = {}
    for q in qs:
        curves = []
        for k, c in enumerate(cands):
            if k not in served:
                curves.append(c.cost)
                continue
            cal = calibrate_overrun([c.cost], [{"set": 1.0}], sizes, {"set": served[k]}, q,
                                    seed=seed)
            curves.append(cal.curves([c.cost])[0])
        out[q] = index.with_candidate_costs(curves)
    return out


def served_evidence(index, items, budgets, fz, seed):
    """What serving records (issue 37): every item served once at every budget by
    ``index`` (the deployed guard), the servings shuffled, each served set recorded (the
    candidate, its atoms in the order they ran, their seconds)."""
    buf = TimingBuffer(capacity=len(items) * len(budgets))
    order = np.random.default_rng(seed).permutation(len(items) * len(budgets)).tolist()
    for visit in order:
        i, j = divmod(visit, len(budgets))
        predict_item(index, items[i], budgets[j], fz, telemetry=buf)
    return buf.drain_sets()


def pooled(rounds):
    """Rows of several serving rounds of the same items, averaged per (method, budget)."""
    out = []
    for row in rounds[0]:
        same = [r for rows in rounds for r in rows
                if r.method == row.method and r.budget == row.budget]
        out.append(dataclasses.replace(row, items=sum(r.items for r in same),
                                over=float(np.mean([r.over for r in same])),
                                accuracy=float(np.mean([r.accuracy for r in same]))))
    return out


def slowed(fz: polydom.Featurizer, factor: float) -> polydom.Featurizer:
    """The same features, each made ``factor`` times slower: run, then spin the extra time
    (measured on the featurizer's own timer)."""
    out = polydom.Featurizer(size=fz.size_function, timer=fz.timer)
    clock = fz.timer

    def wrap(routine):
        def slow(item):
            start = clock()
            value = routine(item)
            until = start + factor * (clock() - start)
            while clock() < until:
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


class Check(NamedTuple):
    """The single-run checks of one target on served rows (guard against oracle)."""

    overs: list[float]
    worst: float
    oracle_worst: float
    acc_guard: float
    acc_oracle: float
    ok_over: bool
    ok_acc: bool


def check(rows, q) -> Check:
    """Worst over-budget rate of the guard at ``q`` against ``q + 0.02`` and its mean
    accuracy over the budgets against the oracle's less 0.02."""
    g = [r for r in rows if r.method == f"guard {q:g}"]
    o = [r for r in rows if r.method == f"oracle {q:g}"]
    worst = max(r.over for r in g)
    acc_g = float(np.mean([r.accuracy for r in g]))
    acc_o = float(np.mean([r.accuracy for r in o]))
    return Check([r.over for r in g], worst, max(r.over for r in o), acc_g, acc_o,
                 worst <= q + 0.02, acc_g >= acc_o - 0.02)


def run_config(name, data, args, out, timer, hog, cache):
    """One (workload, timer, load): build, guard, oracle, serve; returns the checks."""
    items, labels, fz, skeleton, n_min, n_max = data
    fz.timer = CLOCKS[timer]
    labels = np.asarray(labels)
    train, cal, test = split_items(len(items), 0.45, 0.15, seed=args.seed)
    rng = np.random.default_rng(args.seed + 3)
    test = rng.permutation(test)[: 2 * args.test_items]
    fit_half, serve_half = np.sort(test[: len(test) // 2]), np.sort(test[len(test) // 2:])
    t0 = time.perf_counter()
    load_before = _load()
    with cpu_hog(hog):
        built = build_in_situ(items, labels, fz, skeleton, train, cal, n_min, n_max,
                              target_overrun=TARGETS[0], profile_items=args.profile_items,
                              alpha=args.alpha, max_iter=200, cache=cache, seed=args.seed,
                              levels=TARGETS[1:])
        # one in-situ pass over the calibration and test items, shuffled together: the
        # oracle's evidence (its fit half) and the replay's exchangeable timings
        joint_ids = np.concatenate([cal, fit_half, serve_half])
        joint = fz.featurize_in_situ([items[i] for i in joint_ids],
                                     predict=lambda row: built.standin.predict(row[None, :]),
                                     seed=args.seed + 4)
        parts = np.split(np.arange(joint_ids.size), [len(cal), len(cal) + len(fit_half)])
        oracle = built.index.calibrated(*_part(joint, parts[1]), TARGETS[0],
                                        levels=TARGETS[1:], seed=args.seed)
        guard = built.guarded
        methods = {}
        for q in TARGETS:
            methods[f"guard {q:g}"] = guard.at_overrun(q)
            methods[f"oracle {q:g}"] = oracle.at_overrun(q)
        budgets = choose_budgets(guard, np.array([fz.size(items[i]) for i in serve_half]),
                                 args.budgets)
        if args.edges or args.sets:  # the same method on each set's served timings
            qs = TARGETS if args.sets else TARGETS[:1]
            for q, index in served_oracle(built.index, [items[i] for i in fit_half], fz, qs,
                                          args.seed + 8).items():
                methods[f"served {q:g}"] = index
        if args.sets:  # calibrated on what the deployed guard served (issue 37)
            t1 = time.process_time()
            evidence = served_evidence(guard.at_overrun(TARGETS[0]),
                                       [items[i] for i in fit_half], budgets, fz,
                                       args.seed + 9)
            for q in TARGETS:  # half the records and in-situ items fit, the others score
                methods[f"sets {q:g}"] = calibrate_on_served(
                    built.index, evidence, q, insitu=built.evidence, seed=args.seed)
            fitted = methods[f"sets {TARGETS[0]:g}"].cost_model
            sets_info = (len(evidence), time.process_time() - t1, fitted)
        rows = pooled([serve_side_by_side(methods, [items[i] for i in serve_half],
                                          labels[serve_half], budgets, fz, seed=args.seed + r)
                       for r in range(args.rounds)])
        edge = (edges(guard, [items[i] for i in serve_half], fz, TARGETS[0], args.seed + 7)
                if args.edges else None)
    replayed = replay(built, joint, parts, labels[serve_half], budgets, args.seed)
    over = guard.info["overrun"]
    chosen = over["chosen"]
    held = [v for v in over["held_out"] if v is not None]
    out(f"\n### {name}, {timer} timer, {'one core kept busy by a CPU hog' if hog else 'no hog'}"
        f" (load before {load_before}, after {_load()})")
    out(f"{len(train)} training items ({built.index.info['expansions']} sets trained, "
        f"{len(built.index.candidates)} candidates kept), evidence {over['items']} items "
        f"({len(cal)} held out + {over['items'] - len(cal)} unprofiled training items); "
        f"oracle fitted on {len(fit_half)} test items, both serve the other {len(serve_half)} "
        f"({args.rounds} rounds); "
        f"guard scores: {chosen.count('ratio')} ratio, {chosen.count('excess')} excess; "
        f"held-out cross-check (selection split) overrun median "
        f"{np.median(held) if held else float('nan'):.3f} at target {TARGETS[0]}")
    out(table(rows, list(methods), budgets))
    if edge is not None:
        rates = np.array([r for _, r in edge])
        one = np.array([a == 1 for a, _ in edge])
        g = [r for r in rows if r.method == f"guard {TARGETS[0]:g}"]
        o = [r for r in rows if r.method == f"oracle {TARGETS[0]:g}"]
        sv = [r for r in rows if r.method == f"served {TARGETS[0]:g}"]
        acc = [float(np.mean([r.accuracy for r in m])) for m in (g, o, sv)]
        args.edge_log.setdefault((name, timer, hog), []).append(
            (float(np.median(rates)), float(rates.mean()), float(rates.max()),
             acc[2] - acc[1], acc[2] - acc[0], max(r.over for r in sv)))
        out(f"  served-timing guard (each set's own served times on the {len(fit_half)} fit "
            f"items, target {TARGETS[0]}): mean accuracy {acc[2]:.3f} against the oracle "
            f"{acc[1]:.3f} and the guard {acc[0]:.3f}; worst over-budget rate "
            f"{max(r.over for r in sv):.3f}")
        out(f"  each candidate alone at its own edge (its calibrated cost at target "
            f"{TARGETS[0]}, {len(serve_half)} items, live): realised rate over "
            f"{len(edge)} candidates median {np.median(rates):.3f}, mean {rates.mean():.3f}, "
            f"max {rates.max():.3f}; one-atom sets {one.sum()} (mean "
            f"{rates[one].mean() if one.any() else float('nan'):.3f}), larger sets "
            f"{(~one).sum()} (mean {rates[~one].mean() if (~one).any() else float('nan'):.3f})")
    if args.sets:
        n_ev, cpu, fitted = sets_info
        start = fitted.start(float(np.median([fz.size(items[i]) for i in fit_half])))
        out(f"  sets guard: fitted on {n_ev} served sets (the deployed guard serving the "
            f"{len(fit_half)} fit items at every budget) and {over['items']} evidence items "
            f"in situ; start {start * 1e6:.1f} us at the median size; fit + serving "
            f"{cpu:.1f} s CPU")
        for q in TARGETS:
            s_rows = [r for r in rows if r.method == f"sets {q:g}"]
            v_rows = [r for r in rows if r.method == f"served {q:g}"]
            g_rows = [r for r in rows if r.method == f"guard {q:g}"]
            acc = [float(np.mean([r.accuracy for r in m])) for m in (s_rows, v_rows, g_rows)]
            worst = max(r.over for r in s_rows)
            how = methods[f"sets {q:g}"].info["overrun"]["served"]
            args.sets_log.setdefault((name, timer, hog, q), []).append(
                (acc[0] - acc[1], worst, [r.over for r in s_rows], acc[0], acc[1], acc[2]))
            out(f"  target {q:g}: sets guard worst over-budget rate {worst:.3f} "
                f"(<= {q + 0.02:.2f}: {'yes' if worst <= q + 0.02 else 'NO'}); mean accuracy "
                f"sets {acc[0]:.3f}, served-timings guard {acc[1]:.3f} (>= it - 0.005: "
                f"{'yes' if acc[0] >= acc[1] - 0.005 else 'NO'}), today's guard {acc[2]:.3f}; "
                f"bounds: {how.count('set')} per set, {how.count('in situ')} on in-situ "
                f"totals, {how.count('family')} per family")
    checks = []
    for q in TARGETS:
        c = check(rows, q)
        out(f"  target {q:g}: guard worst over-budget rate {c.worst:.3f} "
            f"(<= {q + 0.02:.2f}: {'yes' if c.ok_over else 'NO'}), oracle worst "
            f"{c.oracle_worst:.3f}; mean accuracy guard {c.acc_guard:.3f}, oracle "
            f"{c.acc_oracle:.3f} (within 0.02: {'yes' if c.ok_acc else 'NO'})")
        checks.append((name, timer, hog, q, c.worst, c.acc_guard, c.acc_oracle, c.ok_over,
                       c.ok_acc, "live", c.overs))
    out(f"  replay (the same method on exchangeable timings: calibration and test items timed "
        f"in one shuffled in-situ pass; guard fitted on the {len(cal)} calibration items, "
        f"oracle on the {len(fit_half)} fit-half items, the served half replayed: over = its "
        f"recorded time of the chosen set above the budget):")
    out(table(replayed, [m for m in methods if m.split()[0] in ("guard", "oracle")], budgets))
    for q in TARGETS:
        c = check(replayed, q)
        out(f"  replay, target {q:g}: guard worst over-budget rate {c.worst:.3f} (oracle "
            f"{c.oracle_worst:.3f}); mean accuracy guard {c.acc_guard:.3f}, oracle "
            f"{c.acc_oracle:.3f}")
        checks.append((name, timer, hog, q, c.worst, c.acc_guard, c.acc_oracle, c.ok_over,
                       c.ok_acc, "replay", c.overs))
    out(f"  [{time.perf_counter() - t0:.0f} s]")
    return built, budgets, checks


def drift(name, data, built, budgets, args, out):
    """``DriftRecalibration`` on served timings: false alarms, then a 2x slowdown."""
    items, labels, fz, *_ = data
    fz.timer = CLOCKS["cpu"]
    folder = Path(tempfile.mkdtemp(prefix="adherence_"))
    url = f"sqlite:///{folder / 'drift.db'}"
    polydom.pipeline.recalibrate.publish_index(url, built.guarded, {"adherence_bench": name})
    reader = polydom.open_index(url)
    drift_watch = DriftRecalibration(reader, min_interval=0.0, collect=args.collect)
    recorder = TimingRecorder(drift_watch.sink(functools.partial(polydom.store_timings, url)))
    mid = budgets[len(budgets) // 2 - 1: len(budgets) // 2 + 1]
    slow = slowed(fz, 2.0)
    rng = np.random.default_rng(args.seed + 5)
    stream = rng.integers(len(items), size=args.stationary + 3 * args.phase)
    first = reader.info["build_id"]
    over = {"stationary": [], "drifted": [], "after": []}
    phase, current, served_at_drift, switched_after = "stationary", fz, None, None
    t0 = time.perf_counter()
    for k, i in enumerate(stream):
        if k == args.stationary:
            phase, current, served_at_drift = "drifted", slow, k
            false_alarms = drift_watch.counts["alarms"]
            false_builds = drift_watch.counts["recalibrations"]
        b = mid[k % len(mid)]
        pred = reader.predict_item(items[i], b, current)
        recorder.record(reader.snapshot(), pred)
        over[phase].append(pred.seconds > b)
        if k % args.flush == args.flush - 1:
            before = drift_watch.counts["recalibrations"]
            recorder.flush()
            if phase == "drifted" and drift_watch.counts["recalibrations"] > before:
                switched_after = k + 1 - served_at_drift
                phase = "after"
        if phase == "after" and len(over["after"]) >= args.phase:
            break
    out(f"\n### drift on {name} (CPU timer, DriftRecalibration as `serve "
        f"--recalibrate-on-drift` runs it: timings stored every {args.flush} items, monitor "
        f"defaults, collect {args.collect}); budgets {[float(f'{b * 1e3:.3g}') for b in mid]} "
        f"ms alternating; load {_load()}; {time.perf_counter() - t0:.0f} s")
    rows = [[p, len(v), round(float(np.mean(v)), 3) if v else "-"] for p, v in over.items()]
    out(format_table(["phase", "items", "over-budget rate"], rows))
    out(f"false alarms: {false_alarms} in {args.stationary} stationary items "
        f"({1000 * false_alarms / args.stationary:.2f} per 1,000; {false_builds} builds "
        f"published by them); every feature 2x slower from item {args.stationary}: "
        f"{'not recalibrated' if switched_after is None else switched_after} items served "
        f"between the drift and the recalibrated build (build {first} -> "
        f"{reader.info['build_id']}); steps {drift_watch.counts}")
    report = drift_watch.last_report
    if report is not None:
        scales = np.array(list(report.scales.values()))
        out(f"the recalibration's atom scales (2x drift): median {np.median(scales):.2f}, "
            f"range {scales.min():.2f}-{scales.max():.2f} over {scales.size} atoms")


def evaluate(args, out):
    """One seed's evaluation (every workload, timer and load): prints it, returns the checks:
    (workload, timer, hog, target, worst over, mean acc guard, mean acc oracle, over ok,
    acc ok, serving, the guard's over-budget rate per budget)."""
    out(f"adherence_bench: targets {TARGETS}, load average {_load()} (1/5/15 min), "
        f"{os.cpu_count()} cores")
    t0 = time.perf_counter()
    checks = []
    for name in args.workload:
        data = (plaid if name == "plaid" else digits)(args)
        cache: dict = {}
        for timer in args.timer:
            for hog in (False, True)[: 1 if args.no_hog else 2]:
                built, budgets, done = run_config(name, data, args, out, timer, hog, cache)
                checks += done
                if name == "plaid" and timer == "cpu" and not hog and not args.no_drift:
                    drift(name, data, built, budgets, args, out)
    out("\n### checks")
    out(format_table(["workload", "timer", "hog", "serving", "target", "worst over",
                      "<= target+0.02", "mean acc guard", "mean acc oracle", "within 0.02"],
                     [[n, t, "yes" if h else "no", k, q, round(w, 3), "yes" if a else "NO",
                       round(g, 3), round(o, 3), "yes" if b else "NO"]
                      for n, t, h, q, w, g, o, a, b, k, _ in checks]))
    out(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {_load()}")
    return checks


def _mean_se(values) -> tuple[float, float]:
    """Mean and standard error (sample sd / sqrt(n); nan for one value)."""
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def _verdict(ok: bool, margin: float, se: float) -> str:
    """"yes"/"NO", with "?" when the threshold lies within 2 standard errors of the mean."""
    return ("yes" if ok else "NO") + ("?" if abs(margin) < 2 * se else "")


def edge_summary(log, out):
    """Per (workload, timer, load), over the seeds: the candidates' realised rates at their
    own edge (median, mean and max over candidates), each averaged over the seeds."""
    body = []
    for (n, t, h), runs in log.items():
        med, mean, top, vs_oracle, vs_guard, over = np.array(runs).T
        body.append([n, t, "yes" if h else "no", len(runs), round(float(med.mean()), 3),
                     round(float(mean.mean()), 3), round(_mean_se(mean)[1], 3),
                     round(float(top.mean()), 3), round(float(vs_oracle.mean()), 3),
                     round(_mean_se(vs_oracle)[1], 3), round(float(vs_guard.mean()), 3),
                     round(_mean_se(vs_guard)[1], 3), round(float(over.mean()), 3)])
    out(f"\n### each candidate alone at its own edge, target {TARGETS[0]} (live; means over "
        "seeds); the served-timing guard's mean accuracy minus the oracle's and the guard's")
    out(format_table(["workload", "timer", "hog", "seeds", "median over candidates",
                      "mean over candidates", "se", "max over candidates",
                      "served - oracle acc", "se", "served - guard acc", "se",
                      "served worst over"], body))


def sets_summary(log, out):
    """Per live cell (workload, timer, hog, target), over the seeds: the sets guard's mean
    accuracy minus the served-timings guard's (>= -0.005) and its over-budget rate at its
    worst budget (by rank, averaged over the seeds; <= target + 0.02)."""
    body = []
    for (n, t, h, q), runs in log.items():
        gap, gap_se = _mean_se([r[0] for r in runs])
        per_budget = np.array([r[2] for r in runs])
        means = per_budget.mean(axis=0)
        at = int(np.argmax(means))
        over, over_se = _mean_se(per_budget[:, at])
        body.append([n, t, "yes" if h else "no", q, len(runs),
                     round(float(np.mean([r[3] for r in runs])), 3),
                     round(float(np.mean([r[4] for r in runs])), 3),
                     round(float(np.mean([r[5] for r in runs])), 3),
                     round(gap, 3), round(gap_se, 3),
                     _verdict(gap >= -0.005, gap + 0.005, gap_se),
                     round(over, 3), round(over_se, 3),
                     _verdict(over <= q + 0.02, over - q - 0.02, over_se)])
    out("\n### the sets guard (calibrated on served sets), live, over the seeds")
    out(format_table(["workload", "timer", "hog", "target", "seeds", "acc sets",
                      "acc served-timings guard", "acc today's guard", "sets - served",
                      "se", ">= -0.005", "worst over", "se", "<= target+0.02"], body))


def summary(per_seed, out):
    """Per cell (workload, timer, hog, serving, target), over the seeds: the mean of (guard -
    oracle mean accuracy over the budgets) against -0.02, and the guard's over-budget rate
    per budget (budgets matched by rank: each seed chooses its own geometric ladder) averaged
    over the seeds, its worst budget against target + 0.02; each with its standard error
    across seeds."""
    cells = {}
    for checks in per_seed:
        for n, t, h, q, w, g, o, _, _, k, overs in checks:
            cells.setdefault((n, t, h, k, q), []).append((g - o, w, overs))
    body = []
    for (n, t, h, k, q), runs in cells.items():
        gap, gap_se = _mean_se([r[0] for r in runs])
        per_budget = np.array([r[2] for r in runs])
        means = per_budget.mean(axis=0)
        at = int(np.argmax(means))
        over, over_se = _mean_se(per_budget[:, at])
        worst, worst_se = _mean_se([r[1] for r in runs])
        body.append([n, t, "yes" if h else "no", k, q, len(runs),
                     round(gap, 3), round(gap_se, 3),
                     _verdict(gap >= -0.02, gap + 0.02, gap_se),
                     at + 1, round(over, 3), round(over_se, 3),
                     _verdict(over <= q + 0.02, over - q - 0.02, over_se),
                     round(worst, 3), round(worst_se, 3)])
    out(f"\n### over {len(per_seed)} seeds (mean and standard error across seeds; '?': the "
        f"threshold lies within 2 standard errors)")
    out(format_table(["workload", "timer", "hog", "serving", "target", "seeds",
                      "acc guard-oracle", "se", ">= -0.02", "worst budget #", "over there",
                      "se", "<= target+0.02", "mean of per-seed worst over", "se"], body))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", nargs="+", default=["plaid", "digits"],
                   choices=["plaid", "digits"])
    p.add_argument("--timer", nargs="+", default=["cpu", "wall"], choices=["cpu", "wall"])
    p.add_argument("--no-hog", action="store_true", help="skip the runs under a CPU hog")
    p.add_argument("--budgets", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1,
                   help="run the whole evaluation for seeds seed, seed+1, ... (each a new "
                        "split of the items) and print means and standard errors per cell")
    p.add_argument("--alpha", type=float, default=1.1)
    p.add_argument("--test-items", type=int, default=150,
                   help="served test items (as many more fit the oracle)")
    p.add_argument("--rounds", type=int, default=2,
                   help="times each served item is served at each budget (each a new timing)")
    p.add_argument("--no-drift", action="store_true")
    p.add_argument("--edges", action="store_true",
                   help="also serve each candidate alone at its own calibrated cost (target "
                        f"{TARGETS[0]}) and print the realised rates")
    p.add_argument("--sets", action="store_true",
                   help="also the guard calibrated on served sets (issue 37): the deployed "
                        "guard serves the fit items, the cost model is fitted on those "
                        "served sets, each set bound per set or per family; compared with "
                        "the served-timings guard at both targets")
    p.add_argument("--log-json", help="write every seed's checks and sets-guard rows here "
                                       "(JSON), for --aggregate")
    p.add_argument("--aggregate", nargs="+", metavar="JSON",
                   help="print the summaries over the seeds of several --log-json files "
                        "(runs of one seed each, e.g. in parallel) and exit")
    args = p.parse_args(argv)
    out = functools.partial(print, flush=True)
    if args.aggregate:
        per_seed, sets_log = [], {}
        for path in args.aggregate:
            logged = json.loads(Path(path).read_text())
            per_seed += [[tuple(c) for c in checks] for checks in logged["checks"]]
            for key, runs in logged["sets"]:
                sets_log.setdefault(tuple(key), []).extend(runs)
        summary(per_seed, out)
        if sets_log:
            sets_summary(sets_log, out)
        return
    if args.seeds < 1:
        p.error(f"--seeds must be at least 1, got {args.seeds}")
    args.edge_log = {}
    args.sets_log = {}
    args.series = None
    args.digits = 900
    args.profile_items = 150
    args.stationary, args.phase, args.collect, args.flush = 1000, 150, 300, 10
    t0 = time.perf_counter()
    per_seed = []
    first = args.seed
    for s in range(args.seeds):
        args.seed = first + s
        if s:
            out(f"\n## seed {args.seed}")
        per_seed.append(evaluate(args, out))
        if s:  # a running summary: the last one covers every seed
            summary(per_seed, out)
            if args.edge_log:
                edge_summary(args.edge_log, out)
        if args.sets_log:
            sets_summary(args.sets_log, out)
        if args.log_json:
            Path(args.log_json).write_text(json.dumps(
                {"checks": per_seed, "sets": [[list(k), v] for k, v in args.sets_log.items()]},
                default=lambda v: v.item()))
            out(f"\n{s + 1} seeds {time.perf_counter() - t0:.0f} s; load average {_load()}")


if __name__ == "__main__":
    main()
