"""A set's cost as serving pays it, on a workload with shared steps (issue 37, must-show 2).

Digits rendered at sides 16-64, five image features: ``thumbnail``, ``zones`` and three that
share the step ``gradient`` (``hog``, ``edges``, ``harris``; :mod:`polydom.app.workloads.images`).
Every one of the 31 non-empty sets is served as serving serves it (``predict_item`` on an
index holding that set only: lookup, the set's features in its order, a prediction), the
servings shuffled so each follows another item's.

Items are split three ways:

* A (the fit): the in-situ protocol's timings (each atom alone after a prediction) and
  each item served by 8 random sets; two models fitted by the same median regression
  (:func:`polydom.curves.served_fit.fit_served_costs`):
  ``additive``: a set is the sum of its atoms, each fitted on its in-situ timings (the
  protocol's model until now); ``served``: a start, the atoms and the shared step, fitted on
  the served sets (what each atom paid in its order) and the in-situ timings;
* B (the guard's scores): every item served by every set; the guard's conformal bound per
  set at target 0.05 (:func:`polydom.curves.served_fit.served_bounds`) on each model;
* C (the test): every item served by every set: realised totals.

Printed per set: the median over its test servings of realised / predicted for each model,
the guarded curve's realised overrun rate; then over the sets: the largest median error
of each model and the overrun rates' mean and maximum.

    PYTHONPATH=$PWD python benchmarks/shared_steps_bench.py [--digits 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np
from sklearn.dummy import DummyClassifier

import polydom
from polydom.app.tables import format_table
from polydom.app.workloads.images import load_digits_workload
from polydom.curves.served_fit import fit_served_costs, served_bounds
from polydom.serving.featurizer import CLOCKS
from polydom.serving.item_serving import predict_item
from polydom.serving.telemetry import TimingBuffer

FEATURES = ("thumbnail", "zones", "hog", "edges", "harris")
SIDES = (16, 32, 48, 64)
TARGET = 0.05


def set_indexes(fz, sets):
    """One index per set, holding that set only (what serves it alone)."""
    model = DummyClassifier(strategy="constant", constant=0).fit(np.zeros((1, fz.n_columns)),
                                                                 [0])
    costs = polydom.CostModel({a: [0.0] for a in fz.names}, columns=fz.columns)
    out = []
    for s in sets:
        cand = polydom.Candidate(s, 0.5, "0", features=set(s), payload=model)
        out.append(polydom.Index(polydom.PolyDomIndex.build([cand], 0.0, 1e3), costs))
    return out


def serve(indexes, items, plan, fz, seed):
    """Serve ``plan`` = [(item position, set position)] shuffled; the served sets."""
    buf = TimingBuffer(capacity=len(plan) + 1)
    for visit in np.random.default_rng(seed).permutation(len(plan)).tolist():
        i, k = plan[visit]
        predict_item(indexes[k], items[i], 1e9, fz, telemetry=buf)
    return buf.drain_sets()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--digits", type=int, default=120, help="digits per part (A, B, C)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"shared_steps_bench: load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
          flush=True)
    wl = load_digits_workload(sides=SIDES, digits=3 * args.digits, features=FEATURES,
                              seed=args.seed)
    fz = wl.featurizer
    fz.timer = CLOCKS["cpu"]
    rng = np.random.default_rng(args.seed)
    count = len(wl.items) // len(SIDES)
    pick = [int(rng.integers(len(SIDES))) * count + d for d in range(count)]  # one side each
    items = [wl.items[i] for i in pick]
    a, b, c = (list(range(k * args.digits, (k + 1) * args.digits)) for k in range(3))
    sets = [tuple(s) for r in range(1, len(FEATURES) + 1)
            for s in itertools.combinations(FEATURES, r)]
    indexes = set_indexes(fz, sets)
    structure = polydom.CostModel({f: [0.0] for f in fz.names}, columns=fz.columns,
                                  steps={s: [0.0] for s in fz.steps}, uses=fz.uses, start=[0.0])
    additive = polydom.CostModel({f: [0.0] for f in fz.names}, columns=fz.columns)
    print(f"{len(items)} digits ({args.digits} per part), sides {SIDES}, features "
          f"{list(FEATURES)}, shared steps {fz.uses}; {len(sets)} sets", flush=True)

    standin = DummyClassifier(strategy="prior").fit(np.zeros((2, fz.n_columns)), [0, 1])
    insitu = fz.featurize_in_situ([items[i] for i in a],
                                  predict=lambda row: standin.predict(row[None, :]),
                                  seed=args.seed)
    fit_plan = [(i, int(k)) for i in a for k in rng.choice(len(sets), 8, replace=False)]
    fit_served = serve(indexes, items, fit_plan, fz, args.seed + 1)
    score = serve(indexes, items, [(i, k) for i in b for k in range(len(sets))], fz,
                  args.seed + 2)
    test = serve(indexes, items, [(i, k) for i in c for k in range(len(sets))], fz,
                 args.seed + 3)
    models = {
        "additive": fit_served_costs(additive, [], (insitu.sizes, insitu.timings)),
        "served": fit_served_costs(structure, fit_served, (insitu.sizes, insitu.timings)),
    }
    # the additive model has no start: fit_served_costs gives it one; a set is then the sum
    # of its atoms alone, the start counted once per atom, as the protocol charges it
    models["additive"] = polydom.CostModel(
        {f: models["additive"].cost([f]) for f in fz.names}, columns=fz.columns)
    position = {s: k for k, s in enumerate(sets)}

    def totals(records):
        out = {k: ([], []) for k in range(len(sets))}
        for r in records:
            sizes, ts = out[position[r.candidate]]
            sizes.append(r.size)
            ts.append(r.total)
        return {k: (np.array(s), np.array(t)) for k, (s, t) in out.items()}

    scored, tested = totals(score), totals(test)
    body, summary = [], {}
    for name, model in models.items():
        predicted = [model.cost(s) for s in sets]
        factors, offsets, _ = served_bounds(predicted, scored, TARGET, seed=args.seed)
        med, over = [], []
        for k in range(len(sets)):
            sizes, t = tested[k]
            pred = predicted[k](sizes)
            med.append(float(np.median(t / pred)))
            over.append(float(np.mean(t > factors[k] * pred + offsets[k])))
        summary[name] = (np.array(med), np.array(over))
    for k, s in enumerate(sets):
        body.append(["+".join(s), len(tested[k][1]),
                     round(summary["served"][0][k], 3), round(summary["additive"][0][k], 3),
                     round(summary["served"][1][k], 3), round(summary["additive"][1][k], 3)])
    print(format_table(["set", "test servings", "served: median realised/predicted",
                        "additive: median realised/predicted", "served guard over",
                        "additive guard over"], body))
    fitted = models["served"]
    print(f"\nserved model: start {fitted.start(32.0) * 1e6:.1f} us, gradient "
          f"{fitted.steps['gradient'](32.0) * 1e6:.1f} us at side 32 (CPU clock)")
    rows = []
    for name, (med, over) in summary.items():
        err = np.abs(med - 1.0)
        rows.append([name, round(float(np.median(err)), 3), round(float(err.max()), 3),
                     int((err <= 0.05).sum()), len(sets), round(float(over.mean()), 3),
                     round(float(over.max()), 3)])
    print(format_table(["model", "median |median ratio - 1| over sets", "max over sets",
                        "sets within 5%", "sets", f"guard {TARGET} over: mean over sets",
                        "max over sets"], rows))
    print(f"\n{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
