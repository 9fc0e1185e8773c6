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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from itertools import pairwise

import numpy as np

from polydom.curves.poly import (
    REL_TOL,
    compare_right,
    compare_right_2,
    difference,
    float_sign_changes,
    sign_change_roots,
    tol_x,
    values_equal,
    values_equal_2,
)
from polydom.errors import InvalidArgumentError

__all__ = ["BOUND_POINTS", "MAX_CROSSINGS", "MAX_MEMORY", "PrefixMax", "SweepResult",
           "bound_points", "check_max_crossings", "check_max_memory", "check_memory",
           "check_sweep_work", "coefficient_matrix",
           "crossing_lower_bound", "initial_order", "inversions", "kinetic_sweep",
           "skyline_of",
           "surviving_pruning"]

#: Default bound of the sweep's work: crossing events (about 90 microseconds each on one
#: shared core, so about 45 s).  ``max_crossings`` of :meth:`polydom.PolyDomIndex.build`
#: and :func:`polydom.build_index` raises it.
MAX_CROSSINGS = 500_000

#: Default bound of a build's memory, bytes (:func:`check_memory`): 2 GiB.
#: ``max_memory`` of :meth:`polydom.PolyDomIndex.build` and :func:`polydom.build_index`
#: sets it.
MAX_MEMORY = 2 << 30
#: Bytes a build holds per candidate while it prunes (coefficients, values and tolerances
#: at two sizes, ranks, priorities), and per skyline entry it records.
BYTES_PER_CANDIDATE = 160
BYTES_PER_ENTRY = 40


def check_max_memory(value: object) -> int:
    """``value`` when it is an integer >= 1 (a limit of bytes), else a named error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"max_memory must be an integer >= 1 (bytes), got "
                                   f"{value!r}")
    return value


def check_memory(k: int, width: int, max_memory: int) -> None:
    """Refuse, before pruning, a pool whose working arrays alone would pass ``max_memory``
    bytes (``K * (BYTES_PER_CANDIDATE + 8 * L)``), in one line naming the limit.  O(1)."""
    need = k * (BYTES_PER_CANDIDATE + 8 * width)
    if need > max_memory:
        raise InvalidArgumentError(_memory(k, need, max_memory, "its working arrays"))


def _memory(k: int, need: int, limit: int, what: str) -> str:
    return (f"indexing the {k:,} candidates needs more than {need / 2**20:,.0f} MiB for "
            f"{what}; the limit is max_memory={limit:,} bytes: pass a larger max_memory to "
            "polydom.build_index or PolyDomIndex.build, or give fewer candidates")


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


#: Sizes at which :func:`crossing_lower_bound` compares the curves' orders (the domain's
#: ends included): pairs that cross inside the domain and come back (parabolas crossing
#: twice) reverse their order between two of them.
BOUND_POINTS = 17


def bound_points(lo: float, hi: float, count: int = BOUND_POINTS) -> list[float]:
    """The sizes :func:`crossing_lower_bound` compares orders at: ``count`` evenly spaced
    over a finite ``[lo, hi]``; over an unbounded one ``lo`` and ``count - 2`` sizes
    spaced by powers of ten up to ``lo + 1e12`` (the order as ``n`` grows is compared
    last).  O(count)."""
    if lo == hi:
        return [lo]
    if math.isinf(hi):
        return [lo, *(lo + v for v in np.logspace(-3, 12, count - 2).tolist())]
    return [lo + (hi - lo) * t for t in np.linspace(0.0, 1.0, count).tolist()]


def inversions(first: np.ndarray, second: np.ndarray, limit: int | None = None) -> int:
    """How many pairs are strictly ordered one way by ``first`` and strictly the other way
    by ``second`` (two integer rank arrays; equal ranks order nothing): a merge count over
    ``second`` taken in the order of ``first``, run level by level in numpy.  Stops once
    the count passes ``limit`` (then it returns a number above ``limit``).

    Runtime complexity: O(K log**2 K) numpy work (sorts of runs at each of log K levels).

    >>> inversions(np.array([0, 1, 2]), np.array([2, 1, 0]))
    3
    >>> inversions(np.array([0, 0, 1]), np.array([1, 0, 0]))
    1
    """
    k = first.size
    if k < 2:
        return 0
    # visit by first (ties by second, so a tie in first counts nothing), then count for
    # each curve the earlier ones whose rank in second is strictly larger
    seq = second[np.lexsort((second, first))].astype(np.int64)
    top = int(seq.max()) + 1
    size = 1 << (k - 1).bit_length()
    runs = np.full(size, top, dtype=np.int64)  # padding sorts last: it adds nothing
    runs[:k] = seq
    total, width = 0, 1
    while width < size:
        blocks = runs.reshape(-1, 2, width)
        count = blocks.shape[0]
        offset = (np.arange(count, dtype=np.int64) * (top + 1))[:, None]
        left = (blocks[:, 0, :] + offset).ravel()
        right = (blocks[:, 1, :] + offset).ravel()
        # left runs are sorted: the ones above each right element are those after it
        at = np.searchsorted(left, right, side="right")
        start = np.repeat(np.arange(count, dtype=np.int64) * width, width)
        total += int((width - (at - start)).sum())
        if limit is not None and total > limit:
            return total
        runs = np.sort(blocks.reshape(count, 2 * width), axis=1).ravel()
        width *= 2
    return total


def crossing_lower_bound(coefs: np.ndarray, lo: float, hi: float,
                         limit: int | None = None) -> int:
    """A lower bound of the crossings among curves in ``(lo, hi)``: between each two
    consecutive sizes of :func:`bound_points`, the pairs whose order by cost at one is
    strictly the reverse of their order at the other cross there at least once (for an
    infinite ``hi``, the last order is the one as ``n`` grows: by the highest-degree
    coefficient first).  The intervals are disjoint, so the counts add up; ties count as no
    crossing.  The count between the two ends alone is a bound too (exact for lines); the
    larger is returned.  With ``limit``, stops once the count passes it.

    ``coefs`` is ``(K, L)``, lowest degree first, padded with zeros.

    Runtime complexity: O(P * K log**2 K * L) numpy work for P = :data:`BOUND_POINTS`.

    >>> crossing_lower_bound(np.array([[0.0, 2.0], [1.0, 1.0], [2.0, 0.0]]), 0.0, 10.0)
    3
    >>> crossing_lower_bound(np.array([[0.0, 4.0, -0.4], [1.0, 0.0, 0.0]]), 0.0, 10.0)
    2
    """
    k = coefs.shape[0]
    if k < 2 or lo == hi:
        return 0
    ranks = [_dense_rank(_values_at(coefs, x)[:, None]) for x in bound_points(lo, hi)]
    if math.isinf(hi):
        ranks.append(_dense_rank(coefs))
    # the ends alone: exact for lines (a pair tied at a size between would be missed by
    # both intervals around it)
    ends = inversions(ranks[0], ranks[-1], limit)
    if limit is not None and ends > limit:
        return ends
    total = 0
    for before, after in pairwise(ranks):
        total += inversions(before, after, None if limit is None else limit - total)
        if limit is not None and total > limit:
            break
    return max(total, ends)


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
    (cost, accuracy) front at one of the sizes of :func:`bound_points` (no other curve as
    cheap there and as accurate; for an infinite ``hi`` also as ``n`` grows).  Dominance
    needs a curve cheaper or as cheap everywhere, so a curve strictly on the front at a
    point of the domain is dominated by none.  Exact duplicates count as
    not surviving (a lower bound is all this is for).

    Runtime complexity: O(P * K log K * L) for P = :data:`BOUND_POINTS`.

    >>> surviving_pruning(np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]),
    ...                   np.array([0.9, 0.5, 0.6]), 0.0, 10.0).tolist()
    [True, False, True]
    """
    keep = np.zeros(coefs.shape[0], dtype=bool)
    acc = np.asarray(accuracies, dtype=np.float64)
    ranks = [_dense_rank(_values_at(coefs, x)[:, None]) for x in bound_points(lo, hi)]
    if math.isinf(hi):
        ranks.append(_dense_rank(coefs))
    for rank in ranks:
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
    times (:func:`crossing_lower_bound`, at the sizes of :func:`bound_points`), naming the
    limit and how to raise it.

    The sweep follows only the curves that pruning keeps, so with ``accuracies`` the count
    is taken over the curves that pruning keeps for sure (:func:`surviving_pruning`): a
    pool of many curves that cross but are dominated (2,000 random curves, say) is not
    refused for crossings the sweep never meets.

    Runtime complexity: O(P * K log**2 K * L) numpy work (:func:`crossing_lower_bound`).
    """
    check_max_crossings(max_crossings)
    if coefs.shape[0] * (coefs.shape[0] - 1) // 2 * max(coefs.shape[1] - 1, 0) <= max_crossings:
        return  # even every pair crossing at every root stays within the limit
    if accuracies is not None:
        coefs = coefs[surviving_pruning(coefs, accuracies, lo, hi)]
    at_least = crossing_lower_bound(coefs, lo, hi, max_crossings)
    if at_least > max_crossings:
        raise InvalidArgumentError(_too_many(coefs.shape[0], at_least, max_crossings, "at least"))


def _too_many(k: int, crossings: int, limit: int, how: str) -> str:
    return (f"the cost curves of the {k:,} candidates cross {how} {crossings:,} times on the "
            f"domain; the sweep's limit is max_crossings={limit:,} (about 90 microseconds "
            "each): pass a larger max_crossings to polydom.build_index or "
            "PolyDomIndex.build, or give fewer candidates")


class PrefixMax:
    """The running maximum of a list of numbers before each position, under updates: a
    segment tree (the sweep asks, at each event, for the best accuracy cheaper than a
    block of swapped curves, which a scan made O(K) per event).

    Runtime complexity: O(K) to build, O(log K) per :meth:`set` and :meth:`before`.

    >>> m = PrefixMax([0.5, 0.9, 0.7])
    >>> m.before(0), m.before(2), m.before(3)
    (-inf, 0.9, 0.9)
    >>> m.set(1, 0.1); m.before(2)
    0.5
    >>> m.swap(0); m.before(1), m.before(2)
    (0.1, 0.5)
    """

    __slots__ = ("_size", "_tree")

    def __init__(self, values: Sequence[float]) -> None:
        size = 1
        while size < max(len(values), 1):
            size *= 2
        tree = [-math.inf] * (2 * size)
        tree[size : size + len(values)] = values
        for i in range(size - 1, 0, -1):
            tree[i] = max(tree[2 * i], tree[2 * i + 1])
        self._size, self._tree = size, tree

    def set(self, i: int, value: float) -> None:
        """Position ``i`` holds ``value`` now."""
        tree = self._tree
        i += self._size
        tree[i] = value
        i >>= 1
        while i:
            tree[i] = max(tree[2 * i], tree[2 * i + 1])
            i >>= 1

    def swap(self, i: int) -> None:
        """Positions ``i`` and ``i + 1`` exchange their values (the maxima above the pair's
        common ancestor do not change)."""
        tree = self._tree
        a, b = i + self._size, i + self._size + 1
        tree[a], tree[b] = tree[b], tree[a]
        a >>= 1
        b >>= 1
        while a != b:
            left, right = tree[2 * a], tree[2 * a + 1]
            tree[a] = left if left > right else right
            left, right = tree[2 * b], tree[2 * b + 1]
            tree[b] = left if left > right else right
            a >>= 1
            b >>= 1

    def before(self, end: int) -> float:
        """The largest value at positions ``0 .. end - 1`` (-inf for none)."""
        tree = self._tree
        best = -math.inf
        lo, hi = self._size, self._size + end
        while lo < hi:
            if lo & 1:
                best = max(best, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = max(best, tree[hi])
            lo >>= 1
            hi >>= 1
        return best


def initial_order(coefs: Sequence[np.ndarray], lists: Sequence[list[float]], lo: float,
                  cmp: Callable[[int, int], int]) -> list[int]:
    """The curves ``0..K-1`` sorted by ``cmp`` (their order just right of ``lo``, ties by
    number), found by numpy where floats decide it.

    The order just right of ``lo`` is that of the Taylor coefficients at ``lo``, compared
    first to last (:func:`polydom.curves.poly.compare_right`).  The curves are sorted by
    their float Taylor coefficients at once; two neighbours whose first coefficients differ
    by more than twice the tolerance ``compare_right`` grants are in its order, so only the
    runs of closer neighbours are sorted again by ``cmp`` itself.

    Runtime complexity: O(K log K * L) numpy work plus O(r log r) comparisons per run of r
    close neighbours.
    """
    k = len(lists)
    if k < 2:
        return list(range(k))
    width = max(len(c) for c in lists)
    t = np.zeros((k, width))
    for i, c in enumerate(lists):
        t[i, : len(c)] = c
    mag = np.abs(t)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(width - 1):  # Horner shifts to lo, as poly.taylor does
            for m in range(width - 2, j - 1, -1):
                t[:, m] += lo * t[:, m + 1]
                mag[:, m] += abs(lo) * mag[:, m + 1]
    if not (np.isfinite(t).all() and np.isfinite(mag).all()):
        return sorted(range(k), key=cmp_to_key(cmp))
    idx = np.arange(k)
    order = np.lexsort((idx, *(t[:, m] for m in range(width - 1, -1, -1))))
    first, scale = t[order, 0], mag[order, 0]
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow decides nothing
        clear = (first[1:] - first[:-1]) > 4.0 * REL_TOL * (scale[1:] + scale[:-1])
    out = order.tolist()
    close = np.flatnonzero(~clear)
    if close.size == 0:
        return out
    # runs of close neighbours: [a, b] over positions
    starts = close[np.concatenate(([True], np.diff(close) > 1))]
    ends = close[np.concatenate((np.diff(close) > 1, [True]))] + 1
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        out[a : b + 1] = sorted(out[a : b + 1], key=cmp_to_key(cmp))
    return out


def kinetic_sweep(
    coefs: Sequence[np.ndarray],
    accs: Sequence[float],
    lo: float,
    hi: float,
    keep_all: bool = False,
    max_crossings: int | None = None,
    max_memory: int | None = None,
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
    max_memory : int, optional
        Stop with ``InvalidArgumentError`` naming the limit once the recorded skylines
        would take more bytes (``BYTES_PER_ENTRY`` per entry).

    Returns
    -------
    SweepResult

    Runtime complexity: O(K log K) numpy work for the first order, O((K + X) log K) heap
    and prefix-maximum work for X crossings, plus O(K) per kept range to record its
    skyline.  Curves of degree <= 2 are handled in plain floats (closed-form roots, Taylor
    orders) wherever floats decide; the exact paths of :mod:`polydom.curves.poly` take
    the rest.
    """
    k = len(coefs)
    lists = [c.tolist() for c in coefs]
    # On a one-point domain only the values there matter, not the order just right of it.
    at_point = lo == hi
    # degree <= 2: the orders and equalities written out on 3-tuples (the same float
    # operations as the general functions, which they call where floats do not decide)
    quadratic = all(len(c) <= 3 for c in lists)
    if quadratic:
        curves = [tuple(c) + (0.0,) * (3 - len(c)) for c in lists]
        compare, equal = compare_right_2, values_equal_2
    else:
        curves, compare, equal = lists, compare_right, values_equal

    def cmp_lo(i: int, j: int) -> int:
        if at_point:
            vi, vj = _value(lists[i], lo), _value(lists[j], lo)
            if math.isfinite(vi) and math.isfinite(vj):
                order = compare_right([vi], [vj], lo)
            else:  # a cost beyond the largest float fits no budget: dearer than any other
                order = (vi > vj) - (vi < vj)
        else:
            order = compare(curves[i], curves[j], lo)
        return order or (i > j) - (i < j)

    order = (sorted(range(k), key=cmp_to_key(cmp_lo)) if at_point
             else initial_order(coefs, lists, lo, cmp_lo))
    pos = [0] * k
    for p, i in enumerate(order):
        pos[i] = p
    best = PrefixMax([accs[i] for i in order])
    heap: list[tuple[float, int, int]] = []
    roots: dict[tuple[int, int], list[float]] = {}

    def push_next(u: int, v: int, after: float) -> None:
        """Queue the first crossing of ``u`` and ``v`` strictly after ``after``.  A root that
        is the crossing just processed (rounding put it a hair later) re-sorts nothing: the
        order there already is the order just right of it.  Degree <= 2 in plain floats
        where they decide (:func:`polydom.curves.poly.float_sign_changes`), else exactly."""
        pair = (u, v) if u < v else (v, u)
        r = roots.get(pair)
        if r is None:
            r = float_sign_changes(lists[pair[0]], lists[pair[1]], lo, hi)
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
    entries = [len(skylines[0])]  # recorded skyline entries (a list: the closure adds)
    entry_limit = None if max_memory is None else max_memory // BYTES_PER_ENTRY

    def record(x: float, sky: list[int]) -> None:
        entries[0] += len(sky)
        if entry_limit is not None and entries[0] > entry_limit:
            raise InvalidArgumentError(_memory(k, entries[0] * BYTES_PER_ENTRY, max_memory,
                                               "the skylines of its ranges"))
        breaks.append(x)
        skylines.append(sky)

    events = crossings = 0
    pop = heapq.heappop
    while heap:
        x = heap[0][0]
        limit = x + tol_x(x)
        if len(heap) == 1 or heap[1][0] > limit and (len(heap) == 2 or heap[2][0] > limit):
            # one crossing at x (the common case): the general steps below, written out for
            # a block of two curves that no neighbour meets at x
            _, u, v = pop(heap)
            p = pos[u]
            if pos[v] != p + 1 and pos[v] != p - 1:
                continue
            events += 1
            if max_crossings is not None and events > max_crossings:
                raise InvalidArgumentError(_too_many(k, max_crossings, max_crossings,
                                                     "more than"))
            p = min(p, pos[v])
            a, b = order[p], order[p + 1]
            if not ((p > 0 and equal(curves[order[p - 1]], curves[a], x))
                    or (p + 2 < k and equal(curves[b], curves[order[p + 2]], x))):
                c = compare(curves[a], curves[b], x) or (a > b) - (a < b)
                first, last = (b, a) if c > 0 else (a, b)
                if not ((p > 0 and (compare(curves[order[p - 1]], curves[first], x)
                                    or (order[p - 1] > first) - (order[p - 1] < first)) > 0)
                        or (p + 2 < k and (compare(curves[last], curves[order[p + 2]], x)
                                           or (last > order[p + 2]) - (last < order[p + 2]))
                            > 0)):
                    if c > 0:
                        running = best.before(p)
                        interesting = (_members((a, b), accs, running)
                                       != _members((b, a), accs, running))
                        order[p], order[p + 1] = b, a
                        pos[a], pos[b] = p + 1, p
                        best.swap(p)
                        crossings += 1
                    for j in range(max(0, p - 1), min(k - 2, p + 1) + 1):
                        push_next(order[j], order[j + 1], x)
                    if c > 0 and (interesting or keep_all):
                        sky = skyline_of(order, accs)
                        if keep_all or sky != skylines[-1]:
                            record(x, sky)
                    continue
            lefts = {p}
        else:
            lefts = set()
            while heap and heap[0][0] <= limit:
                _, u, v = pop(heap)
                pu, pv = pos[u], pos[v]
                if abs(pu - pv) == 1:
                    lefts.add(min(pu, pv))
            if not lefts:
                continue
            events += 1
            if max_crossings is not None and events > max_crossings:
                raise InvalidArgumentError(_too_many(k, max_crossings, max_crossings,
                                                     "more than"))

        def equal_at(i: int, j: int, x: float = x) -> bool:
            return equal(curves[i], curves[j], x)

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
            return compare(curves[i], curves[j], x) or (i > j) - (i < j)

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
                    running = best.before(lft)
                    interesting = _members(old, accs, running) != _members(new, accs, running)
                order[lft : rgt + 1] = new
                for p in range(lft, rgt + 1):
                    pos[order[p]] = p
                    best.set(p, accs[order[p]])
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
                    record(x, sky)
    return SweepResult(breaks, skylines, events, crossings)
