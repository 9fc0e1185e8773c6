"""The binned threshold search of a stage sequence against row-by-row counting (brute force)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polydom.serving.cascade_fit import _exits, _search_sequence, _threshold_grid


def brute_force(conf, correct, deltas, budget, grid, z):
    """Every threshold combination, each row's exit stage and cost counted one by one."""
    L, n = conf.shape
    per = min(grid, max(2, int((1 << 15) ** (1.0 / (L - 1))))) if L > 1 else 1
    grids = [_threshold_grid(conf[k], per) for k in range(L - 1)]
    cum = np.cumsum(deltas, axis=0)
    best = None
    for combo in itertools.product(*grids):
        thresholds = (*combo, 0.0)
        exits = _exits(conf, thresholds)
        acc = correct[exits, np.arange(n)].sum() / n          # exact count
        row_cost = cum[exits]                                  # rows x checks
        mean = row_cost.mean(axis=0)
        spread = row_cost.std(axis=0) / np.sqrt(n)
        fits = np.all(mean + z * spread <= budget * (1 + 1e-12) + 1e-9)
        if not (fits and (exits == L - 1).any()):
            continue
        key = (-acc, mean[-1])
        if best is None or key < best[0]:
            best = (key, acc, mean, thresholds)
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(2, 60), st.integers(0, 2**31 - 1),
       st.sampled_from([0.0, 1.0]), st.sampled_from([3, 8, 64]))
def test_binned_search_matches_row_by_row_counting(stages, rows, seed, z, grid):
    rng = np.random.default_rng(seed)
    conf = np.round(rng.random((stages, rows)), 1 + seed % 3)
    correct = rng.random((stages, rows)) < 0.7
    deltas = rng.random((stages, 3)) * 3
    budget = float(rng.random() * deltas.sum(axis=0).max() * 1.3)
    acc, mean, thresholds = _search_sequence(conf, correct, deltas, budget, grid, z)
    best = brute_force(conf, correct, deltas, budget, grid, z)
    if best is None:
        assert thresholds == () and acc == -np.inf
        return
    _, b_acc, b_mean, _ = best
    assert thresholds, "the search missed a feasible choice"
    assert abs(acc - b_acc) < 1e-12
    assert abs(mean[-1] - b_mean[-1]) < 1e-9
    # The returned thresholds really give the returned numbers.
    exits = _exits(conf, thresholds)
    assert abs(correct[exits, np.arange(rows)].mean() - acc) < 1e-12
    assert np.allclose(np.cumsum(deltas, axis=0)[exits].mean(axis=0), mean)
