"""End to end on real data: explore the lattice of feature groups of scikit-learn's
breast-cancer data, persist the index in SQLite, reopen it and serve budgeted predictions.

    python examples/end_to_end.py [--store index.db]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom

# Five groups of the 30 measurements, each with a cost curve in the item size n (think of
# n as the resolution of the scan the measurements are taken from).
FEATURES = {
    "mean": list(range(0, 10)),
    "error": list(range(10, 20)),
    "worst_size": [20, 21, 22, 23],
    "worst_shape": [24, 25, 26, 27],
    "worst_other": [28, 29],
}
COSTS = {
    "mean": "2 + 0.01*n",
    "error": "1 + 0.05*n",
    "worst_size": "5",
    "worst_shape": "0.5 + 0.002*n**2",
    "worst_other": "0.2*n",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="SQLite file to write (default: a temporary one)")
    args = parser.parse_args()
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp()) / "index.db"

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    learner = learners.SklearnLearner(model, X_train, y_train, features=FEATURES, cv=5)
    built = polydom.build_index(COSTS, learner, alpha=1.05, n_max=1000.0,
                                store=f"sqlite:///{store}")
    info = built.info
    print(f"explored {info['lattice_size']} feature sets: trained {info['trained']}, "
          f"{info['candidates']} candidates, {info['ranges']} size ranges, "
          f"{info['entries']} skyline cells -> {store} (build {info['build_id']})")

    index = polydom.open_index(f"sqlite:///{store}")
    print("\nsize range        skyline (cheapest first: features, accuracy)")
    for (n_lo, n_hi), sky in zip(index.table.ranges, index.table.skylines, strict=True):
        cells = "; ".join(f"{'+'.join(sorted(c.features)) or '(prior)'} {c.accuracy:.3f}"
                          for c in sky)
        print(f"[{n_lo:7.1f}, {n_hi:7.1f})  {cells}")

    print("\nsize  budget  model                                 cost  test accuracy")
    for size in (10.0, 200.0, 800.0):
        for budget in (2.0, 8.0, 30.0, 2000.0):
            hit = index.lookup(size, budget)
            acc = (index.predict(X_test, size, budget) == y_test).mean()
            name = "+".join(sorted(hit.features)) or "(prior)"
            print(f"{size:5.0f} {budget:7.1f}  {name:<36} {hit.cost:6.1f}  {acc:.3f}")


if __name__ == "__main__":
    main()
