"""Seeded quadrant data sets: the paper's synthetic regression and our classification variants.

Both have four expensive features (cost 10), one per quadrant of the ``(x, z)`` plane, each
informative only inside its quadrant, and two cheap features (cost 1) that tell the quadrant.
A perfect model reads both cheap features and its quadrant's expensive one: cost 12 per row
(all six: 42).  Columns: ``[e++, e-+, e+-, e--, x, z]`` (``QUADRANT_COSTS`` order).

* :func:`quadrant_regression`: the paper's section 6.1 (spec 5.1): cheap features ``sign(x)``
  and ``sign(z)``, label means -10 / -5 / +10 / +5 by quadrant plus ``N(0, 1)`` noise;
  expensive feature ``q`` equals the label inside quadrant ``q``, a permutation of the labels
  outside.
* :func:`quadrant_classification` (ours): cheap features ``x`` and ``z`` themselves
  (continuous: a router must find the threshold), binary labels whose positive rate differs
  by quadrant (``rates``); expensive feature ``q`` is ``+-1`` by label plus ``N(0, noise)``
  inside quadrant ``q`` and ``N(0, 1)`` outside, independent of the label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["QUADRANT_COSTS", "QUADRANT_GROUPS", "quadrant_classification",
           "quadrant_regression"]

#: feature costs of the quadrant data sets, in column order
QUADRANT_COSTS = {"e++": 10.0, "e-+": 10.0, "e+-": 10.0, "e--": 10.0, "x": 1.0, "z": 1.0}
#: one column per feature
QUADRANT_GROUPS = {name: [j] for j, name in enumerate(QUADRANT_COSTS)}


def _quadrant(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """0: (+, +), 1: (-, +), 2: (+, -), 3: (-, -) in (x, z)."""
    return np.where(x > 0, np.where(z > 0, 0, 2), np.where(z > 0, 1, 3))


def quadrant_regression(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's synthetic regression (section 6.1): ``n`` rows, reproducible by ``seed``.

    Runtime complexity: O(n).

    >>> X, y = quadrant_regression(4, 0)
    >>> X.shape, sorted(set(X[:, 4].tolist()) | set(X[:, 5].tolist())) == [-1.0, 1.0]
    ((4, 6), True)
    """
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    q = _quadrant(x, z)
    y = np.array([-10.0, -5.0, 10.0, 5.0])[q] + rng.normal(size=n)
    expensive = [np.where(q == j, y, rng.permutation(y)) for j in range(4)]
    return np.column_stack([*expensive, np.sign(x), np.sign(z)]), y


def quadrant_classification(n: int, seed: int,
                            rates: Sequence[float] = (0.2, 0.4, 0.9, 0.65),
                            noise: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Binary classification on the quadrants (ours): ``P(y = 1 | quadrant q) = rates[q]``.

    Parameters
    ----------
    n : int
        Rows.
    seed : int
        Seeds everything.
    rates : four floats in [0, 1], default (0.2, 0.4, 0.9, 0.65)
        Positive rate per quadrant (order of ``QUADRANT_COSTS``' expensive features).
    noise : float, default 0.3
        Standard deviation of the noise on the informative expensive feature (the Bayes
        error is about ``Phi(-1 / noise)``: 0.0004 at 0.3).

    Returns
    -------
    X : ndarray (n, 6)
    y : ndarray (n,) of 0/1

    Runtime complexity: O(n).

    >>> X, y = quadrant_classification(1000, 0)
    >>> inside = (X[:, 4] > 0) & (X[:, 5] > 0)
    >>> bool(np.mean((X[inside, 0] > 0) == (y[inside] == 1)) > 0.99)
    True
    """
    rates = np.asarray(rates, dtype=np.float64)
    if rates.shape != (4,) or not np.all((rates >= 0) & (rates <= 1)):
        raise InvalidArgumentError(f"rates must be four numbers in [0, 1], got {rates.tolist()}")
    if not (np.isfinite(noise) and noise >= 0):
        raise InvalidArgumentError(f"noise must be a finite number >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    q = _quadrant(x, z)
    y = (rng.uniform(size=n) < rates[q]).astype(np.int64)
    signal = 2.0 * y - 1.0
    expensive = [np.where(q == j, signal + noise * rng.normal(size=n), rng.normal(size=n))
                 for j in range(4)]
    return np.column_stack([*expensive, x, z]), y
