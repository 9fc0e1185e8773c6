"""What a feature costs depends on what ran before it: the in-situ protocol against serving.

Serving computes only the chosen set, so a one-feature set's feature always runs right
after a model prediction (and the index lookup); in an in-situ pass that predicts once per
item, five of six features run right after another feature of the same item, with warm
caches and branch history.  On digits images (one side each of 8-64, 6 features, a
LogisticRegression pipeline as the model), per feature and clock, four ways of timing the
same items:

``per item``     the protocol before issue 29's follow-up: items in a shuffled order, an
                 item's features back to back, a prediction before each item's features;
``per feature``  the same with a prediction before every feature;
``in situ``      ``Featurizer.featurize_in_situ`` now: the (item, feature) pairs in a
                 shuffled order, each alone right after a prediction;
``served``       what serving a one-feature set pays: ``Featurizer.compute`` on each (item,
                 feature) pair alone, right after a prediction, in another shuffled order
                 (the cost of a lookup between them left out).

Printed per feature: the median of each, and the share of ``served`` timings above each
protocol's 95th percentile at the item's size (what a q0.95 curve fitted on that protocol
would let through: about 0.05 if the protocol times as serving pays); medians over rounds.

    PYTHONPATH=$PWD python benchmarks/feature_context_bench.py [--timer cpu|wall]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from polydom.app.tables import format_table
from polydom.app.workloads.images import load_digits_workload
from polydom.serving.featurizer import CLOCKS

FEATURES = ("thumbnail", "zones", "projections", "hog", "spectrum", "harris")


def grouped(fz, items, predict, rows, seed, before_each):
    """The earlier protocols: items shuffled, an item's features back to back (shuffled),
    a prediction before each item's features, or before every feature."""
    rng = np.random.default_rng(seed)
    out = {name: np.empty(len(items)) for name in fz.names}
    for i in rng.permutation(len(items)):
        for k, j in enumerate(rng.permutation(len(fz.names))):
            if before_each or k == 0:
                predict(rows[(i + 1) % len(items)])
            name = fz.names[j]
            out[name][i] = fz.compute(items[i], name).seconds
    return out


def served_alone(fz, items, predict, rows, seed):
    """Each (item, feature) computed alone after a prediction, in a shuffled order."""
    rng = np.random.default_rng(seed)
    out = {name: np.empty(len(items)) for name in fz.names}
    visits = [(i, name) for i in range(len(items)) for name in fz.names]
    for v in rng.permutation(len(visits)):
        i, name = visits[v]
        predict(rows[(i + 1) % len(items)])
        out[name][i] = fz.compute(items[i], name).seconds
    return out


def above_p95(served, timed, sizes):
    """Share of served timings above the 95th percentile of ``timed`` at the same size."""
    over = []
    for n in np.unique(sizes):
        at = sizes == n
        over.append(served[at] > np.quantile(timed[at], 0.95))
    return float(np.mean(np.concatenate(over)))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timer", choices=sorted(CLOCKS), default="cpu")
    p.add_argument("--digits", type=int, default=600)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    sides = (8, 16, 32, 64)
    wl = load_digits_workload(sides=sides, digits=args.digits, seed=0, features=FEATURES)
    fz = wl.featurizer
    fz.timer = CLOCKS[args.timer]
    rng = np.random.default_rng(0)
    count = len(wl.items) // len(sides)
    pick = [int(rng.integers(len(sides))) * count + d for d in range(count)]
    items, labels = [wl.items[i] for i in pick], np.asarray(wl.labels)[pick]
    rows = fz.transform(items)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)).fit(rows, labels)

    def predict(row):
        return model.predict(row[None, :])

    sizes = np.array([fz.size(item) for item in items])
    print(f"feature_context_bench: {len(items)} digits (one side each of {sides}), "
          f"{len(FEATURES)} features, {args.timer} clock, {args.rounds} rounds; "
          f"{os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    per_round = []
    for r in range(args.rounds):
        ways = [grouped(fz, items, predict, rows, 10 + r, False),
                grouped(fz, items, predict, rows, 20 + r, True),
                fz.featurize_in_situ(items, predict=predict, seed=30 + r).timings]
        alone = served_alone(fz, items, predict, rows, seed=40 + r)
        per_round.append({name: [*[np.median(w[name]) * 1e6 for w in ways],
                                 np.median(alone[name]) * 1e6,
                                 *[above_p95(alone[name], w[name], sizes) for w in ways]]
                          for name in fz.names})
    body = [[name, *[round(float(v), 3) for v in
                     np.median([r[name] for r in per_round], axis=0)]] for name in fz.names]
    print(format_table(["feature", "per item us", "per feature us", "in situ us",
                        "served us", "served > per item p95", "served > per feature p95",
                        "served > in situ p95"], body))
    print(f"load average after {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
