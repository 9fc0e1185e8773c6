"""Do the image features mean the same at every side?  Train at small sides, test at all.

A LogisticRegression per feature (and on all 12) is trained on digits rendered at the
training sides and scored on held-out digits (never seen at any side) at every side.

    PYTHONPATH=. python benchmarks/feature_transfer.py                 # train at 8 and 16
    PYTHONPATH=. python benchmarks/feature_transfer.py --train 16 32
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from polydom.app.workloads.images import load_digits_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, nargs="+", default=[8, 16], help="training sides")
    parser.add_argument("--digits", type=int, default=600, help="digits drawn (70%% train)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    sides = sorted(set(args.train) | {8, 16, 32, 64, 128})
    wl = load_digits_workload(sides=sides, digits=args.digits, seed=args.seed)
    fz = wl.featurizer
    X = fz.transform(wl.items)
    train = np.isin(wl.digit, np.unique(wl.digit)[: int(0.7 * args.digits)])
    fit_rows = train & np.isin(wl.sizes, args.train)
    print(f"trained at sides {args.train} on {int(fit_rows.sum())} rows; held-out accuracy "
          f"({int((~train & (wl.sizes == sides[0])).sum())} digits per side)")
    print(f"{'feature':<16}" + "".join(f"{s:>8}" for s in sides))
    for name in [*fz.names, None]:
        cols = fz.columns[name] if name else list(range(fz.n_columns))
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        clf.fit(X[np.ix_(fit_rows, cols)], wl.labels[fit_rows])
        accs = []
        for side in sides:
            held = ~train & (wl.sizes == side)
            accs.append(clf.score(X[np.ix_(held, cols)], wl.labels[held]))
        print(f"{name or 'all 12':<16}" + "".join(f"{a:>8.3f}" for a in accs))


if __name__ == "__main__":
    main()
