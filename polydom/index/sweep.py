"""Kinetic sweep over cost curves: the sizes where the skyline changes (spec 4.3).

The curves are kept ordered by cost just right of the sweep position; a heap holds, for
every pair of neighbours, their next crossing.  At each crossing the block of curves equal
there is re-sorted by their order just right of it, new neighbours get their next crossing
pushed, and the point is kept when the local "interesting" test (the tie-aware form of the
corrected Theorem 3.13) says the skyline changed.  Every crossing of two curves happens
while they are neighbours, so no crossing is missed.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from polydom.curves.poly import (
    compare_right,
    difference,
    sign_change_roots,
    tol_x,
    values_equal,
)
from polydom.errors import InvalidArgumentError

__all__ = ["MAX_CROSSINGS", "SweepResult", "check_max_crossings", "check_sweep_work",
           "coefficient_matrix", "crossing_lower_bound", "kinetic_sweep", "skyline_of",
           "surviving_pruning"]

#: Default bound of the sweep's work: crossing events (about 90 microseconds each on one
#: shared core, so about 45 s).  ``max_crossings`` of :meth:`polydom.PolyDomIndex.build`
#: and :func:`polydom.build_index` raises it.
MAX_CROSSINGS = 500_000


@dataclass(frozen=True)
class SweepResult:
    """Breakpoints, the skyline (curve numbers by cost) of each range, and sweep counts."""

    breaks: list[float]
    skylines: list[list[int]]
    events: int
    crossings: int


def skyline_of(order: Sequence[int], accs: Sequence[float]) -> list[int]:
    """Curves of ``order`` (cheapest first) whose accuracy beats all cheaper ones (strict)."""
    best = -math.inf
    out = []
    for i in order:
        a = accs[i]
        if a > best:
            out.append(i)
            best = a
    return out


def _value(coef: list[float], x: float) -> float:
    value = 0.0
    for c in reversed(coef):
        value = value * x + c
    return value


def _members(block: Sequence[int], accs: Sequence[float], running: float) -> list[int]:
    out = []
    for i in block:
        if accs[i] > running:
            out.append(i)
            running = accs[i]
    return out


def _dense_rank(keys: np.ndarray) -> np.ndarray:
    """Rank of each row of ``keys`` (K x m, last column most significant) in ascending
    order, equal rows sharing a rank.  O(K log K * m)."""
    order = np.lexsort(keys.T)
    ordered = keys[order]
    new = np.ones(len(order), dtype=np.int64)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    return rank


def _values_at(coefs: np.ndarray, x: float) -> np.ndarray:
    """Each row's polynomial at ``x`` by Horner (an overflow is +inf, a tie with others)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.zeros(coefs.shape[0])
        for k in range(coefs.shape[1] - 1, -1, -1):
            out = out * x + coefs[:, k]
    return np.where(np.isnan(out), np.inf, out)


def crossing_lower_bound(coefs: np.ndarray, lo: float, hi: float) -> int:
    """How many pairs of curves cross at least once in ``(lo, hi)``: the pairs whose order by
    cost at ``lo`` is strictly the reverse of their order at ``hi`` (for an infinite ``hi``,
    the order as ``n`` grows: by the highest-degree coefficient first).  Ties count as no
    crossing, so the count is a lower bound of the crossings among these curves.

    ``coefs`` is ``(K, L)``, lowest degree first, padded with zeros.

    Runtime complexity: O(K log K * L).

    >>> crossing_lower_bound(np.array([[0.0, 2.0], [1.0, 1.0], [2.0, 0.0]]), 0.0, 10.0)
    3
    """
    k = coefs.shape[0]
    if k < 2 or lo == hi:
        return 0
    at_lo = _dense_rank(_values_at(coefs, lo)[:, None])
    far = coefs if math.isinf(hi) else _values_at(coefs, hi)[:, None]
    at_hi = _dense_rank(far)
    # visit by rank at lo (ties by rank at hi, so a tie at lo counts nothing), then count
    # the earlier curves whose rank at hi is strictly larger: a Fenwick tree over ranks
    sequence = at_hi[np.lexsort((at_hi, at_lo))].tolist()
    size = max(sequence) + 1
    tree = [0] * (size + 1)
    inversions = 0
    for seen, r in enumerate(sequence):
        i, not_above = r + 1, 0
        while i > 0:
            not_above += tree[i]
            i -= i & -i
        inversions += seen - not_above
        i = r + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return inversions


def coefficient_matrix(curves: Sequence) -> np.ndarray:
    """The coefficients of ``curves`` (:class:`polydom.CostCurve`) as a ``(K, L)`` matrix,
    lowest degree first, padded with zeros.  O(K * L)."""
    width = max((c.coefficients.size for c in curves), default=1)
    out = np.zeros((len(curves), width))
    for i, c in enumerate(curves):
        out[i, : c.coefficients.size] = c.coefficients
    return out


def check_max_crossings(value: object) -> int:
    """``value`` when it is an integer >= 0 (a limit of crossings), else a named error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"max_crossings must be an integer >= 0, got {value!r}")
    return value


def surviving_pruning(coefs: np.ndarray, accuracies: np.ndarray, lo: float,
                      hi: float) -> np.ndarray:
    """A mask of curves that dominance pruning keeps for sure: those strictly on the
    (cost, accuracy) front at ``lo`` or at ``hi`` (no other curve as cheap there and as
    accurate).  Dominance needs a curve cheaper or as cheap everywhere, so a curve strictly
    on the front at a point of the domain is dominated by none.  Exact duplicates count as
    not surviving (a lower bound is all this is for).

    Runtime complexity: O(K log K * L).

    >>> surviving_pruning(np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]),
    ...                   np.array([0.9, 0.5, 0.6]), 0.0, 10.0).tolist()
    [True, False, True]
    """
    keep = np.zeros(coefs.shape[0], dtype=bool)
    acc = np.asarray(accuracies, dtype=np.float64)
    far = coefs if math.isinf(hi) else _values_at(coefs, hi)[:, None]
    for rank in (_dense_rank(_values_at(coefs, lo)[:, None]), _dense_rank(far)):
        order = np.lexsort((-acc, rank))  # cheapest first; equal cost: most accurate first
        best_before = np.maximum.accumulate(np.concatenate(([-np.inf], acc[order][:-1])))
        on_front = acc[order] > best_before
        # the first of equal (cost, accuracy) twins: one of them may dominate the other
        twin = (rank[order][1:] == rank[order][:-1]) & (acc[order][1:] == acc[order][:-1])
        on_front[:-1] &= ~twin
        keep[order] |= on_front
    return keep


def check_sweep_work(coefs: np.ndarray, lo: float, hi: float, max_crossings: int,
                     accuracies: np.ndarray | None = None) -> None:
    """Refuse, before any pruning or sweeping, curves that cross more than ``max_crossings``
    times (:func:`crossing_lower_bound`), naming the limit and how to raise it.

    The sweep follows only the curves that pruning keeps, so with ``accuracies`` the count
    is taken over the curves that pruning keeps for sure (:func:`surviving_pruning`): a
    pool of many curves that cross but are dominated (2,000 random curves, say) is not
    refused for crossings the sweep never meets.

    Runtime complexity: O(K log K * L).
    """
    check_max_crossings(max_crossings)
    if coefs.shape[0] * (coefs.shape[0] - 1) // 2 * max(coefs.shape[1] - 1, 0) <= max_crossings:
        return  # even every pair crossing at every root stays within the limit
    if accuracies is not None:
        coefs = coefs[surviving_pruning(coefs, accuracies, lo, hi)]
    at_least = crossing_lower_bound(coefs, lo, hi)
    if at_least > max_crossings:
        raise InvalidArgumentError(_too_many(coefs.shape[0], at_least, max_crossings, "at least"))


def _too_many(k: int, crossings: int, limit: int, how: str) -> str:
    return (f"the cost curves of the {k:,} candidates cross {how} {crossings:,} times on the "
            f"domain; the sweep's limit is max_crossings={limit:,} (about 90 microseconds "
            "each): pass a larger max_crossings to polydom.build_index or "
            "PolyDomIndex.build, or give fewer candidates")


def kinetic_sweep(
    coefs: Sequence[np.ndarray],
    accs: Sequence[float],
    lo: float,
    hi: float,
    keep_all: bool = False,
    max_crossings: int | None = None,
) -> SweepResult:
    """Sweep curves ``0..K-1`` over ``[lo, hi]``.

    Curves are numbered in priority order: a smaller number has a higher accuracy, or the
    same accuracy and a smaller key; identical polynomials are ordered by number.

    Parameters
    ----------
    coefs : sequence of arrays
        Coefficients of each curve, lowest degree first.
    accs : sequence of float
        Accuracy of each curve (non-increasing in the curve number).
    lo, hi : float
        The size domain.
    keep_all : bool, default False
        Keep a range at every crossing (Poly-Dom-Index-All) instead of only where the
        skyline changes.
    max_crossings : int, optional
        Stop with ``InvalidArgumentError`` naming the limit after this many crossing events
        (curves that cross back and forth, which :func:`crossing_lower_bound` does not see).

    Returns
    -------
    SweepResult

    Runtime complexity: O((K + X) log K) heap work for X crossings, plus O(K) per kept
    range to record its skyline and an O(l) prefix maximum per event.
    """
    k = len(coefs)
    lists = [c.tolist() for c in coefs]
    # On a one-point domain only the values there matter, not the order just right of it.
    at_point = lo == hi

    def cmp_lo(i: int, j: int) -> int:
        if at_point:
            vi, vj = _value(lists[i], lo), _value(lists[j], lo)
            if math.isfinite(vi) and math.isfinite(vj):
                order = compare_right([vi], [vj], lo)
            else:  # a cost beyond the largest float fits no budget: dearer than any other
                order = (vi > vj) - (vi < vj)
        else:
            order = compare_right(lists[i], lists[j], lo)
        return order or (i > j) - (i < j)

    order = sorted(range(k), key=cmp_to_key(cmp_lo))
    pos = [0] * k
    for p, i in enumerate(order):
        pos[i] = p
    acc_at = [accs[i] for i in order]
    heap: list[tuple[float, int, int]] = []
    roots: dict[tuple[int, int], list[float]] = {}

    def push_next(u: int, v: int, after: float) -> None:
        """Queue the first crossing of ``u`` and ``v`` strictly after ``after``.  A root that
        is the crossing just processed (rounding put it a hair later) re-sorts nothing: the
        order there already is the order just right of it."""
        pair = (u, v) if u < v else (v, u)
        r = roots.get(pair)
        if r is None:
            d = difference(coefs[pair[0]], coefs[pair[1]])
            r = sign_change_roots(d, lo, hi, absorb_ends=False).tolist()
            roots[pair] = r
        j = bisect_right(r, after)
        if j < len(r):
            heapq.heappush(heap, (r[j], pair[0], pair[1]))

    for j in range(k - 1):
        push_next(order[j], order[j + 1], lo)

    breaks = [lo]
    skylines = [skyline_of(order, accs)]
    events = crossings = 0
    while heap:
        x = heap[0][0]
        limit = x + tol_x(x)
        lefts = set()
        while heap and heap[0][0] <= limit:
            _, u, v = heapq.heappop(heap)
            pu, pv = pos[u], pos[v]
            if abs(pu - pv) == 1:
                lefts.add(min(pu, pv))
        if not lefts:
            continue
        events += 1
        if max_crossings is not None and events > max_crossings:
            raise InvalidArgumentError(_too_many(k, max_crossings, max_crossings, "more than"))

        def equal_at(i: int, j: int, x: float = x) -> bool:
            return values_equal(lists[i], lists[j], x)

        blocks: list[list[int]] = []
        for p in sorted(lefts):
            lft, rgt = p, p + 1
            while lft > 0 and equal_at(order[lft - 1], order[lft]):
                lft -= 1
            while rgt < k - 1 and equal_at(order[rgt], order[rgt + 1]):
                rgt += 1
            if blocks and lft <= blocks[-1][1] + 1:
                blocks[-1][1] = max(blocks[-1][1], rgt)
            else:
                blocks.append([lft, rgt])

        def cmp_x(i: int, j: int, x: float = x) -> int:
            return compare_right(lists[i], lists[j], x) or (i > j) - (i < j)

        interesting = False
        changed = False
        b = 0
        while b < len(blocks):
            lft, rgt = blocks[b]
            # Sort the block by the order just right of x; a neighbour that belongs inside
            # it (it meets the block at x although its own crossing was not queued, e.g. a
            # root equal to x in floating point) widens the block, which is sorted again.
            while True:
                new = sorted(order[lft : rgt + 1], key=cmp_to_key(cmp_x))
                if lft > 0 and cmp_x(order[lft - 1], new[0]) > 0:
                    lft -= 1
                elif rgt < k - 1 and cmp_x(new[-1], order[rgt + 1]) > 0:
                    rgt += 1
                else:
                    break
                if b + 1 < len(blocks) and rgt + 1 >= blocks[b + 1][0]:
                    rgt = max(rgt, blocks.pop(b + 1)[1])
            old = order[lft : rgt + 1]
            if new != old:
                changed = True
                if not interesting:
                    running = max(acc_at[:lft], default=-math.inf)
                    interesting = _members(old, accs, running) != _members(new, accs, running)
                order[lft : rgt + 1] = new
                for p in range(lft, rgt + 1):
                    pos[order[p]] = p
                    acc_at[p] = accs[order[p]]
            for j in range(max(0, lft - 1), min(k - 2, rgt) + 1):
                push_next(order[j], order[j + 1], x)
            b += 1
        if changed:
            crossings += 1
            if interesting or keep_all:
                # the local test may flag two reorderings that cancel out: keep the point
                # only if the recomputed skyline really differs (ranges stay minimal)
                sky = skyline_of(order, accs)
                if keep_all or sky != skylines[-1]:
                    breaks.append(x)
                    skylines.append(sky)
    return SweepResult(breaks, skylines, events, crossings)
