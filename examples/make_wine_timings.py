"""Write examples/wine_timings.csv: held-out in-situ timings for examples/wine_guard.toml.

The wine table's features are columns read from a file, so nothing here can be timed for
real; this script simulates what timing 150 held-out batches in situ would give: for each
batch a size n drawn in [1, 100] and, per atomic feature, its curve of wine_guard.toml in
ms times a log-normal factor (sigma 0.3: a machine that is sometimes slower, sometimes
faster than the curves), plus, on 4% of the (batch, feature) pairs, a 3 ms preemption.
Seconds, as a timer gives them.  Deterministic (seed 0).

    python examples/make_wine_timings.py
"""

import csv
from pathlib import Path

import numpy as np

CURVES = {  # ms at size n: the [costs] of wine_guard.toml
    "basic": lambda n: 1 + 0.1 * n,
    "acids": lambda n: 2 + 0.2 * n,
    "phenols": lambda n: 6 + 0.5 * n,
    "colour": lambda n: 4 + 0.35 * n,
    "proline": lambda n: 12 + n,
}


def main() -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 101, 150)
    rows = []
    for n in sizes:
        seconds = [CURVES[a](n) * rng.lognormal(0.0, 0.3) / 1000
                   + (0.003 if rng.random() < 0.04 else 0.0) for a in CURVES]
        rows.append([int(n), *(f"{s:.6g}" for s in seconds)])
    path = Path(__file__).with_name("wine_timings.csv")
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["size", *CURVES])
        writer.writerows(rows)
    print(f"wrote {len(rows)} held-out items to {path}")


if __name__ == "__main__":
    main()
