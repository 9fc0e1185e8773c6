"""A synthetic population with costed features, to draw training rows and fresh rows from.

A hidden score ``z`` sets the label (``z + noise > 0``); feature group ``g`` holds two
columns, ``z`` seen through noise that shrinks as the group's cost grows, and a nuisance
column.  Cheap groups are weak, dear ones strong, so a budgeted learner buys dear groups for
the rows the cheap ones leave in doubt, and its cost per row varies from row to row.
``COSTS`` are per-item cost curves in the item size ``n``.
"""

from __future__ import annotations

import numpy as np

#: Cost curve of each feature group (atoms, two columns each).
COSTS = {"g0": "1", "g1": "2", "g2": "3 + 0.01*n", "g3": "6", "g4": "10 + 0.02*n"}
#: Noise on ``z`` in each group's informative column (cheap groups are weak).
NOISE = {"g0": 2.0, "g1": 1.5, "g2": 1.0, "g3": 0.6, "g4": 0.3}
#: Columns of each group.
GROUPS = {g: [2 * i, 2 * i + 1] for i, g in enumerate(COSTS)}


def population(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` rows ``(X, y)`` of the population, drawn with ``seed``.

    Runtime complexity: O(rows * groups).
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(rows)
    y = (z + 0.3 * rng.standard_normal(rows) > 0).astype(np.int64)
    X = np.empty((rows, 2 * len(COSTS)))
    for g, (informative, nuisance) in GROUPS.items():
        X[:, informative] = z * np.abs(z) + NOISE[g] * rng.standard_normal(rows)
        X[:, nuisance] = rng.standard_normal(rows)
    return X, y
