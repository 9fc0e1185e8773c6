"""Candidate pruning by dominance: subset and polynomial cost dominance (Properties 3.6/3.7).

``Y`` dominates ``X`` on a size domain ``D`` when ``c_Y(n) <= c_X(n)`` for every ``n`` in
``D`` and ``a(Y) >= a(X)``; exact ties (same polynomial, same accuracy) go to the smaller
key.  With ``alpha = 1`` this is a strict partial order, removing every dominated candidate
is exact for the index: a dominated candidate is on no skyline at any size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.poly import ACC_TOL, ZERO_TOL, difference_nonnegative
from polydom.errors import InvalidArgumentError

__all__ = ["MAX_PRUNE_TESTS", "canonical_order", "check_max_prune_tests", "cost_le_many",
           "prune_columns", "prune_dominated"]


def canonical_order(keys: Sequence[object]) -> list[int]:
    """Positions of ``keys`` in their canonical (sorted) order, used for every tie-break.

    Keys of one type sort naturally; mixed types sort by type name, then repr.
    """
    try:
        return sorted(range(len(keys)), key=lambda i: keys[i])
    except TypeError:
        def fallback(i: int) -> tuple:
            k = keys[i]
            return (type(k).__name__, repr(k))
        return sorted(range(len(keys)), key=fallback)


def _sample_points(lo: float, hi: float) -> np.ndarray:
    if lo == hi:
        return np.array([lo])
    if np.isinf(hi):
        return lo + np.concatenate(([0.0], np.logspace(-3, 9, 25)))
    return np.linspace(lo, hi, 17)


def cost_le_many(
    coefs: np.ndarray, target: np.ndarray, lo: float, hi: float, first: bool = False
) -> np.ndarray:
    """For each row ``r`` of ``coefs``: is ``r(n) <= target(n)`` on all of ``[lo, hi]``?

    ``coefs`` is ``(k, L)`` and ``target`` ``(L,)``, both lowest degree first, padded with
    zeros.  Decided by coefficients where possible (``lo >= 0``), rejected by sampled points
    where possible, and settled exactly by :func:`difference_nonnegative` otherwise.  With
    ``first`` the exact checks stop at the first row found to hold (the others stay False):
    enough to know whether any row holds.

    Runtime complexity: O(k * L) vectorised, plus O(L**3) per undecided row.
    """
    with np.errstate(over="ignore"):
        diff = target[None, :] - coefs
    if not np.all(np.isfinite(diff)):
        # coefficients of opposite signs near the largest float: halve both sides (the same
        # order, the same tolerances relative to them) so the differences are finite
        coefs, target = np.ldexp(coefs, -1), np.ldexp(target, -1)
        diff = target[None, :] - coefs
    if lo >= 0.0:
        result = np.all(diff >= 0.0, axis=1)
    else:
        result = np.zeros(coefs.shape[0], dtype=bool)
    if first and result.any():
        return result
    undecided = np.flatnonzero(~result)
    if undecided.size == 0:
        return result
    pts = _sample_points(lo, hi)
    # values beyond the largest float overflow (inf, NaN): handled below, not warned about
    with np.errstate(over="ignore", invalid="ignore"):
        powers = pts[None, :] ** np.arange(coefs.shape[1])[:, None]  # (L, P)
        d_vals = diff[undecided] @ powers
        # the tolerance: ZERO_TOL times the absolute coefficients at |n| (``powers``
        # alternate in sign below 0), scaled before the sums: it overflows only where a
        # term does
        scaled = ZERO_TOL * np.abs(target)[None, :] + ZERO_TOL * np.abs(coefs[undecided])
        tol = scaled @ np.abs(powers)
    # a difference that overflows to -inf (or to NaN: terms of both signs overflowed) is no
    # evidence of "<=": an infinite tolerance would otherwise excuse it
    holds = (d_vals >= -tol) & ~np.isneginf(d_vals) & ~np.isnan(d_vals)
    plausible = undecided[np.all(holds, axis=1)]
    for row in plausible:
        result[row] = difference_nonnegative(
            diff[row], lo, hi, ZERO_TOL * np.abs(target) + ZERO_TOL * np.abs(coefs[row])
        )
        if first and result[row]:
            break
    return result


def prune_dominated(
    candidates: Sequence[Candidate],
    n_min: float = 0.0,
    n_max: float = float("inf"),
    alpha: float = 1.0,
    max_tests: int | None = None,
) -> list[int]:
    """Positions of the candidates that no other candidate dominates on ``[n_min, n_max]``.

    With ``alpha == 1`` (the default) this removes exactly the dominated candidates
    (Definition 3.1 with the key tie-break): the result is the set of maximal elements, in
    canonical order (accuracy descending, then key).  With ``alpha > 1`` the undominated ones
    then go through the spec's "safe" mode: taken by accuracy ascending, one is dropped when
    an already kept one costs no more everywhere and ``alpha * a(kept) >= a(dropped) -
    ACC_TOL``.  Kept candidates are never dropped later, so every dropped candidate has a
    kept one within ``alpha`` at no more cost: the loss of a lookup is bounded by ``alpha``
    (no chains of approximations).

    Runtime complexity: as :func:`prune_columns`.
    """
    if alpha < 1.0 or not np.isfinite(alpha):
        raise InvalidArgumentError(f"alpha must be finite and >= 1, got {alpha!r}")
    k = len(candidates)
    if k == 0:
        return []
    width = max(c.cost.coefficients.size for c in candidates)
    coef = np.zeros((k, width))
    for i, c in enumerate(candidates):
        coef[i, : c.cost.coefficients.size] = c.cost.coefficients
    acc = np.array([c.accuracy for c in candidates])
    return prune_columns(coef, acc, [c.key for c in candidates], n_min, n_max, alpha,
                         max_tests)


#: Default bound of pruning's exact work: curves compared in its third test
#: (:func:`prune_columns`), about 10 nanoseconds each on one shared core.  ``max_prune_tests``
#: of :meth:`polydom.PolyDomIndex.build` and :func:`polydom.build_index` sets it.
MAX_PRUNE_TESTS = 500_000_000

#: Candidates tested against the kept ones at once by coefficients (see prune_columns).
_BLOCK = 1024
#: Kept candidates the block test compares with (the most accurate ones).
_KILLERS = 2048


def check_max_prune_tests(value: object) -> int | None:
    """``value`` when it is None or an integer >= 0 (a limit of pruning's pair tests)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise InvalidArgumentError(f"max_prune_tests must be an integer >= 0 or None, got "
                                   f"{value!r}")
    return value


def prune_columns(
    coef: np.ndarray,
    acc: np.ndarray,
    keys: Sequence[object],
    n_min: float = 0.0,
    n_max: float = float("inf"),
    alpha: float = 1.0,
    max_tests: int | None = None,
) -> list[int]:
    """:func:`prune_dominated` over columns: a ``(K, L)`` coefficient matrix (lowest degree
    first, zero-padded), the accuracies and the keys.

    Candidates are taken by priority (accuracy descending, then key); one is dominated when
    an earlier one costs no more everywhere (dominance is transitive, so testing the kept
    ones suffices).  Three tests, cheapest first, decide most candidates without the exact
    one: (1) blocks of candidates are compared at once with the most accurate kept ones by
    coefficients (``n_min >= 0``: no coefficient larger means no more cost anywhere, as
    :func:`cost_le_many` decides it); (2) a dominating curve costs no more at ``n_min`` and
    at the far end of the domain (``n_max``, or the last sampled size of an unbounded
    one), so a Fenwick tree over the kept curves' values at ``n_min`` holding the least
    value at the far end says in O(log K) whether any kept curve could (when none could,
    the candidate is kept without a test); (3) else the exact test against the kept curves
    not dearer at ``n_min`` (:func:`cost_le_many`).

    Runtime complexity: O(K log K * L) when the tests (1) and (2) decide (a staircase of
    parallel lines that all survive; a pool dominated by few curves), plus O(S * L) numpy
    work for each candidate that reaches (3), for S kept.  ``max_tests`` bounds the pairs
    compared in (3): past it, ``InvalidArgumentError`` naming the limit.
    """
    if alpha < 1.0 or not np.isfinite(alpha):
        raise InvalidArgumentError(f"alpha must be finite and >= 1, got {alpha!r}")
    check_max_prune_tests(max_tests)
    k = coef.shape[0]
    if k == 0:
        return []
    width = coef.shape[1]
    rank = np.empty(k, dtype=np.int64)
    rank[canonical_order(keys)] = np.arange(k)
    order = np.lexsort((rank, -acc)).tolist()
    acc_list = acc.tolist()

    # A curve that costs no more everywhere costs no more at n_min: the kept candidates
    # dearer there (beyond twice the tolerance cost_le_many grants) are never tested.  A
    # value that overflowed (NaN in the comparison) is no evidence: such a one is tested.
    points = _sample_points(n_min, n_max)
    start = points[0] ** np.arange(width)
    far = points[-1] ** np.arange(width)
    with np.errstate(over="ignore", invalid="ignore"):
        at_start = coef @ start
        slack = 2.0 * ZERO_TOL * (np.abs(coef) @ np.abs(start))
        at_far = coef @ far
        slack_far = 2.0 * ZERO_TOL * (np.abs(coef) @ np.abs(far))
        # the filter's keys: a kept y may dominate x only if lo_key[y] <= lo_cap[x] and
        # far_key[y] <= far_cap[x] (a value that is not finite bounds nothing)
        lo_key = np.where(np.isfinite(at_start - slack), at_start - slack, -np.inf)
        lo_cap = np.where(np.isfinite(at_start + slack), at_start + slack, np.inf)
        far_key = np.where(np.isfinite(at_far - slack_far), at_far - slack_far, -np.inf)
        far_cap = np.where(np.isfinite(at_far + slack_far), at_far + slack_far, np.inf)
    lo_sorted = np.sort(lo_key)
    slot = (np.searchsorted(lo_sorted, lo_key, side="left") + 1).tolist()  # Fenwick slots
    reach = np.searchsorted(lo_sorted, lo_cap, side="right").tolist()
    far_key_l, far_cap_l = far_key.tolist(), far_cap.tolist()
    tree = [math.inf] * (k + 1)
    coefwise = n_min >= 0.0

    kept: list[int] = []
    kept_arr = np.empty(k, dtype=np.int64)  # kept, as an array (its first len(kept) slots)
    by_accuracy: dict[float, list[int]] = {}
    killed = np.zeros(k, dtype=bool)
    tests = 0
    for step, x in enumerate(order):
        if coefwise and step % _BLOCK == 0 and kept:
            killers = coef[kept_arr[: min(len(kept), _KILLERS)]]
            block = np.array(order[step : step + _BLOCK])
            killed[block] = np.all(killers[None, :, :] <= coef[block][:, None, :],
                                   axis=2).any(axis=1)
        if killed[x]:
            continue
        if kept:
            # (2): the least far value among kept curves not dearer at n_min
            i, least = reach[x], math.inf
            while i > 0:
                if tree[i] < least:
                    least = tree[i]
                i -= i & -i
            if least <= far_cap_l[x] or math.isnan(least):
                held = kept_arr[: len(kept)]
                with np.errstate(invalid="ignore"):
                    dearer = at_start[x] - at_start[held] < -(slack[x] + slack[held])
                near = held[~dearer]
                tests += near.size
                if max_tests is not None and tests > max_tests:
                    raise InvalidArgumentError(
                        f"pruning the {k:,} candidates needs more than max_prune_tests="
                        f"{max_tests:,} curve comparisons (their curves cross a lot, or "
                        "many survive): pass a larger max_prune_tests to "
                        "polydom.build_index or PolyDomIndex.build, or give fewer candidates")
                if near.size and cost_le_many(coef[near], coef[x], n_min, n_max,
                                              first=True).any():
                    continue
            # x may dominate kept candidates of the same accuracy (strictly cheaper somewhere).
            beaten = {
                j for j in by_accuracy.get(acc_list[x], ())
                if cost_le_many(coef[x][None, :], coef[j], n_min, n_max)[0]
            }
            if beaten:
                kept = [j for j in kept if j not in beaten]
                kept_arr[: len(kept)] = kept
                by_accuracy[acc_list[x]] = [j for j in by_accuracy[acc_list[x]]
                                            if j not in beaten]
                tree = [math.inf] * (k + 1)  # rebuilt without the beaten (rare)
                for j in kept:
                    _fenwick_min(tree, slot[j], far_key_l[j])
        kept_arr[len(kept)] = x
        kept.append(x)
        by_accuracy.setdefault(acc_list[x], []).append(x)
        _fenwick_min(tree, slot[x], far_key_l[x])
    if alpha > 1.0:
        # Safe mode: ascending accuracy, a candidate goes when a KEPT cheaper one is within
        # alpha of it; kept ones are never removed later, so errors cannot chain.
        loose: list[int] = []
        for x in sorted(kept, key=lambda i: (acc[i], rank[i])):
            if loose:
                near = np.array([j for j in loose if alpha * acc[j] >= acc[x] - ACC_TOL])
                if near.size and cost_le_many(coef[near], coef[x], n_min, n_max, True).any():
                    continue
            loose.append(x)
        kept = loose
    return sorted(kept, key=lambda i: (-acc[i], rank[i]))


def _fenwick_min(tree: list[float], i: int, value: float) -> None:
    """Lower the prefix minima of a Fenwick tree from slot ``i`` on to ``value``."""
    n = len(tree)
    while i < n:
        if value < tree[i]:
            tree[i] = value
        i += i & -i
