"""PolyDomIndex and its Index-All baseline: skylines per size range from the kinetic sweep."""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_budget, check_domain, check_size, shown
from polydom.curves.poly import candidate_roots, difference, interval_points
from polydom.errors import ArgumentTypeError, InvalidArgumentError
from polydom.index.dominance import prune_dominated
from polydom.index.sweep import (
    MAX_CROSSINGS,
    check_sweep_work,
    coefficient_matrix,
    kinetic_sweep,
)
from polydom.index.table import RULES, SkylineTable, check_rule

__all__ = ["PolyDomIndex", "IndexAll", "validate_candidates"]


def validate_candidates(
    candidates: Sequence[Candidate], n_min: float, n_max: float
) -> tuple[list[Candidate], float, float]:
    """Check a candidate list for an index: non-empty, unique keys, curves >= 0 on the domain.

    Returns the list, ``n_min`` and ``n_max`` as floats.  Raises ``TypeError`` (not an
    iterable of candidates) or ``ValueError`` naming the problem; nothing is modified.
    """
    lo, hi = check_domain(n_min, n_max)
    if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates, Iterable):
        raise ArgumentTypeError(
            f"candidates must be an iterable of polydom.Candidate, got {shown(candidates)} "
            f"({type(candidates).__name__})"
        )
    cands = list(candidates)
    if not cands:
        raise InvalidArgumentError("candidates must not be empty")
    seen = set()
    for k, c in enumerate(cands):
        if not isinstance(c, Candidate):
            raise ArgumentTypeError(
                f"candidates[{k}] must be a polydom.Candidate, got {shown(c)} "
                f"({type(c).__name__})"
            )
        if c.key in seen:
            raise InvalidArgumentError(f"duplicate candidate key {c.key!r}")
        seen.add(c.key)
        if not c.cost.is_nonnegative(lo, hi):
            raise InvalidArgumentError(
                f"cost curve of candidate {c.key!r} ({c.cost}) is negative somewhere on "
                f"[{lo!r}, {hi!r}]"
            )
    return cands, lo, hi


def _sweep_table(
    cls: type[SkylineTable],
    candidates: Sequence[Candidate],
    n_min: float,
    n_max: float,
    keep_all: bool,
    max_crossings: int,
) -> SkylineTable:
    start = time.perf_counter()
    cands, lo, hi = validate_candidates(candidates, n_min, n_max)
    check_sweep_work(coefficient_matrix([c.cost for c in cands]), lo, hi, max_crossings,
                     np.array([c.accuracy for c in cands]))
    kept = prune_dominated(cands, lo, hi)  # canonical priority order
    pruned_at = time.perf_counter()
    coefs = [cands[i].cost.coefficients for i in kept]
    accs = [cands[i].accuracy for i in kept]
    result = kinetic_sweep(coefs, accs, lo, hi, keep_all=keep_all, max_crossings=max_crossings)
    skylines = [[kept[i] for i in sky] for sky in result.skylines]
    stats = {
        "candidates": len(cands),
        "undominated": len(kept),
        "events": result.events,
        "crossings": result.crossings,
        "prune_seconds": pruned_at - start,
        "build_seconds": time.perf_counter() - start,
    }
    return cls(cands, lo, hi, result.breaks, skylines, stats)


class PolyDomIndex(SkylineTable):
    """The poly-dominance index: a skyline per size range, stored only where it changes.

    Build with :meth:`build`; query with :meth:`lookup` / :meth:`lookup_many`.

    >>> idx = PolyDomIndex.build([Candidate("cheap", 0.6, "1 + n"),
    ...                           Candidate("good", 0.9, "10 + 0.1*n**2")])
    >>> idx.lookup(size=2.0, budget=5.0).key
    'cheap'
    >>> idx.lookup(size=2.0, budget=11.0).key
    'good'
    """

    @classmethod
    def build(
        cls,
        candidates: Sequence[Candidate],
        n_min: float = 0.0,
        n_max: float = float("inf"),
        max_crossings: int = MAX_CROSSINGS,
    ) -> PolyDomIndex:
        """Build the index over ``candidates`` for sizes in ``[n_min, n_max]``.

        Dominated candidates (another one costs no more at every size and is at least as
        accurate) are removed first; they are on no skyline.  The kinetic sweep then finds
        the sizes where the skyline of the rest changes.  ``n_min == n_max`` builds the index
        for one fixed size (Problem 2): one range holding that size's skyline.

        The sweep's work is bounded by ``max_crossings`` (default
        :data:`polydom.index.sweep.MAX_CROSSINGS`, 500,000 crossing events): candidates
        whose curves cross more often are refused up front when their orders at ``n_min``
        and ``n_max`` already show it (:func:`polydom.index.sweep.crossing_lower_bound`,
        O(K log K)), else when the sweep reaches the limit.

        Runtime complexity: O(K log K) for the bound, O(K * S) dominance tests for K
        candidates of which S are undominated, then O((S + X) log S) for X crossings among
        those S.

        Raises
        ------
        ValueError
            On an empty list, duplicate keys, a bad domain, a curve negative on it, or more
            than ``max_crossings`` crossings (naming the limit and how to raise it).
        """
        return _sweep_table(cls, candidates, n_min, n_max, False, max_crossings)

    def for_budget(self, budget: float) -> FixedBudgetIndex:
        """A one-dimensional index over sizes for a budget fixed in advance (Problem 3),
        answering every lookup rule.

        Runtime complexity: O(E * d**3) to build for E skyline entries; lookups O(log P).
        """
        return FixedBudgetIndex(self, budget)


class IndexAll(SkylineTable):
    """Poly-Dom-Index-All baseline: a skyline stored at every pairwise crossing point.

    Built over the same undominated candidates as :class:`PolyDomIndex` (as in the paper,
    where both index the candidate set); it differs only by keeping ranges where nothing
    changes.
    """

    @classmethod
    def build(
        cls,
        candidates: Sequence[Candidate],
        n_min: float = 0.0,
        n_max: float = float("inf"),
        max_crossings: int = MAX_CROSSINGS,
    ) -> IndexAll:
        """Build over ``candidates``; same arguments and errors as :meth:`PolyDomIndex.build`."""
        return _sweep_table(cls, candidates, n_min, n_max, True, max_crossings)

    def _check(self, minimal: bool = False) -> None:
        super()._check(minimal=minimal)


class FixedBudgetIndex:
    """Answers for one budget fixed in advance, as a function of the size alone (Problem 3).

    Holds the sorted sizes where the answer may change (range starts and the roots of
    ``c(n) = budget`` for every skyline candidate), the answer at each such size and on each
    open interval between them, under each lookup rule (:data:`polydom.index.table.RULES`).
    A lookup is one binary search.

    Why the same sizes serve both rules: inside a range, both answers are functions of how
    many of the range's skyline entries fit (``"best"`` takes the last that fits,
    ``"one_se"`` the first that reaches its threshold), and that count changes only where
    an entry's cost crosses the budget.
    """

    def __init__(self, index: SkylineTable, budget: float) -> None:
        self.budget = check_budget(budget)
        self._index = index
        lo, hi = index.domain
        # the domain's end is a point too: a root exactly there (a cost falling to the
        # budget at n_max) changes the answer at that one size only
        points = set(index.breakpoints.tolist()) | ({hi} if math.isfinite(hi) else set())
        for (n_lo, n_hi), sky in zip(index.ranges, index.skylines, strict=True):
            for cand in sky:
                # c(n) - budget, halved where a coefficient would overflow (same roots)
                shifted = difference(cand.cost.coefficients, np.array([self.budget]))
                for r in candidate_roots(shifted):
                    if n_lo < r < n_hi:
                        points.add(float(r))
        pts = sorted(points)
        # one size inside each open interval after a point (the last one ends at hi)
        probes = interval_points(pts[1:], pts[0], hi)
        self._points = pts
        #: rule -> (answer at each point, answer on the open interval after it)
        self._answers = {
            rule: ([index.lookup_position(p, self.budget, rule) for p in pts],
                   [index.lookup_position(p, self.budget, rule) for p in probes])
            for rule in RULES
        }

    @property
    def breakpoints(self) -> np.ndarray:
        """Sizes where the answer may change."""
        return np.array(self._points)

    def lookup(self, size: float, rule: str = "best") -> Candidate | None:
        """The answer at ``size`` for the fixed budget under ``rule`` (as
        :meth:`SkylineTable.lookup` answers ``(size, budget, rule)``).

        Runtime complexity: O(log P) for P breakpoints.

        Raises
        ------
        TypeError, ValueError
            For a bad size (as :meth:`SkylineTable.lookup`) or an unknown ``rule``.
        """
        at_point, after = self._answers[check_rule(rule)]
        lo, hi = self._index.domain
        n = check_size(size, lo, hi)
        k = bisect_right(self._points, n) - 1
        j = at_point[k] if self._points[k] == n else after[k]
        return None if j < 0 else self._index._candidates[j]
