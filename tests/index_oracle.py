"""Brute-force oracles for the index: full scans and the canonical breaks, written apart from
the library's own sweep (dense sign checks instead of Taylor orders)."""

from __future__ import annotations

import math

import numpy as np

from polydom import Candidate


def _key_rank(cands: list[Candidate]) -> dict:
    try:
        ordered = sorted(c.key for c in cands)
    except TypeError:
        ordered = sorted((c.key for c in cands), key=lambda k: (type(k).__name__, repr(k)))
    return {k: i for i, k in enumerate(ordered)}


def full_scan(cands: list[Candidate], size: float, budget: float) -> Candidate | None:
    """The best candidate with cost <= budget at size: accuracy, then lower cost, then key."""
    rank = _key_rank(cands)
    fitting = [c for c in cands if c.cost(size) <= budget]
    if not fitting:
        return None
    return min(fitting, key=lambda c: (-c.accuracy, c.cost(size), rank[c.key]))


def full_scan_many(cands: list[Candidate], sizes: np.ndarray, budgets: np.ndarray) -> list:
    """:func:`full_scan` for many queries at once (numpy ``polyval`` per candidate): the best
    fitting candidate per query by accuracy, then lower cost, then key, or None."""
    rank = _key_rank(cands)
    costs = np.array([np.polynomial.polynomial.polyval(sizes, c.cost.coefficients)
                      for c in cands])  # (K, Q)
    acc = np.array([c.accuracy for c in cands])[:, None]
    keys = np.array([rank[c.key] for c in cands])[:, None]
    fits = costs <= budgets[None, :]
    best_acc = np.where(fits, acc, -np.inf).max(axis=0)
    tied = fits & (acc == best_acc[None, :])
    best_cost = np.where(tied, costs, np.inf).min(axis=0)
    tied &= costs == best_cost[None, :]
    pick = np.where(tied, keys, len(cands)).argmin(axis=0)
    return [cands[p] if np.isfinite(a) else None for p, a in zip(pick, best_acc, strict=True)]


def skyline_at(cands: list[Candidate], size: float) -> list:
    """Keys of the skyline at one size: sort by (cost, -accuracy, key), keep accuracy records."""
    rank = _key_rank(cands)
    order = sorted(cands, key=lambda c: (c.cost(size), -c.accuracy, rank[c.key]))
    best, out = -1.0, []
    for c in order:
        if c.accuracy > best:
            out.append(c.key)
            best = c.accuracy
    return out


def pair_crossings(a: np.ndarray, b: np.ndarray, lo: float, hi: float) -> list[float]:
    """Sign changes of a - b in (lo, hi), from eigenvalue roots confirmed by sampling."""
    d = np.zeros(max(a.size, b.size))
    d[: a.size] += a
    d[: b.size] -= b
    nz = np.flatnonzero(d)
    if nz.size <= 1 and (nz.size == 0 or nz[-1] == 0):
        return []
    d = d[: nz[-1] + 1]
    out = []
    # multiple roots spread into near-real pairs: accept generously, confirm by sign change
    for r in np.polynomial.polynomial.polyroots(d):
        if abs(r.imag) > 1e-3 * max(1.0, abs(r.real)):
            continue
        x = r.real
        if not (lo < x < hi) or x - lo <= 1e-9 * max(1.0, lo):
            continue
        eps = 1e-4 * max(1.0, abs(x))
        left = np.polynomial.polynomial.polyval(x - eps, d)
        right = np.polynomial.polynomial.polyval(x + eps, d)
        if left * right < 0 and not any(abs(x - y) <= 2 * eps for y in out):
            out.append(float(x))
    return out


def all_crossings(cands: list[Candidate], lo: float, hi: float) -> list[float]:
    """Every pairwise crossing in (lo, hi), merged when closer than 1e-5 relative."""
    pts = []
    for i in range(len(cands)):
        for j in range(i + 1, len(cands)):
            pts += pair_crossings(cands[i].cost.coefficients, cands[j].cost.coefficients, lo, hi)
    merged: list[float] = []
    for x in sorted(pts):
        if merged and x - merged[-1] <= 1e-5 * max(1.0, abs(x)):
            continue
        merged.append(x)
    return merged


def canonical_index(cands: list[Candidate], lo: float, hi: float):
    """(breaks, skylines as key lists): a range starts where the skyline changes."""
    starts = [lo, *all_crossings(cands, lo, hi)]
    breaks, skylines = [], []
    for k, s in enumerate(starts):
        nxt = starts[k + 1] if k + 1 < len(starts) else hi
        # an irrational fraction of the way in, so a probe never lands on a touch point
        if s == nxt:
            probe = s
        elif math.isinf(nxt):
            probe = 1.5 * s + 1.2345678
        else:
            probe = s + 0.41421356 * (nxt - s)
        sky = skyline_at(cands, probe)
        if not skylines or sky != skylines[-1]:
            breaks.append(s)
            skylines.append(sky)
    return breaks, skylines, starts


def min_gap(points: list[float]) -> float:
    """Smallest relative gap between consecutive points (inf for fewer than two)."""
    gaps = [(b - a) / max(1.0, abs(b)) for a, b in zip(points, points[1:], strict=False)]
    return min(gaps, default=math.inf)


def full_scan_one_se(cands: list[Candidate], size: float, budget: float) -> Candidate | None:
    """The one-SE rule by a full scan: the cheapest fitting candidate whose accuracy is at
    least ``best.accuracy - best.accuracy_se`` for the :func:`full_scan` answer ``best``;
    ties to the more accurate, then the smaller key."""
    best = full_scan(cands, size, budget)
    if best is None:
        return None
    rank = _key_rank(cands)
    floor = best.accuracy - best.accuracy_se
    near = [c for c in cands if c.cost(size) <= budget and c.accuracy >= floor]
    return min(near, key=lambda c: (c.cost(size), -c.accuracy, rank[c.key]))
