"""Write ``examples/wine.csv``: scikit-learn's bundled wine data as a user's own CSV file.

178 wines, 13 chemical measurements and the cultivar (0, 1, 2) they come from, one row per
wine under a header of column names.  Nothing is downloaded: the data ships with
scikit-learn.  ``examples/wine.toml`` builds an index from the file
(``polydom build examples/wine.toml``).

    python examples/make_wine_csv.py [--out examples/wine.csv]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from sklearn.datasets import load_wine


def write_wine_csv(path: Path) -> Path:
    """Write the wine table to ``path`` (columns: the 13 measurements, then ``cultivar``)."""
    wine = load_wine()
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*wine.feature_names, "cultivar"])
        for row, label in zip(wine.data, wine.target, strict=True):
            writer.writerow([*(repr(float(v)) for v in row), int(label)])
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("wine.csv"))
    print(f"wrote {write_wine_csv(parser.parse_args().out)}")
