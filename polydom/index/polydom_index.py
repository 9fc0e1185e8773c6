"""PolyDomIndex and its Index-All baseline: skylines per size range from the kinetic sweep."""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.candidate_arrays import CandidateArrays
from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_budget, check_domain, check_size, shown
from polydom.curves.poly import (
    ZERO_TOL,
    candidate_roots,
    difference,
    difference_nonnegative,
    interval_points,
    surely_nonnegative,
)
from polydom.errors import ArgumentTypeError, InvalidArgumentError
from polydom.index.dominance import MAX_PRUNE_TESTS, check_max_prune_tests, prune_columns
from polydom.index.sweep import (
    MAX_CROSSINGS,
    MAX_MEMORY,
    check_max_crossings,
    check_max_memory,
    check_memory,
    check_sweep_work,
    coefficient_matrix,
    kinetic_sweep,
)
from polydom.index.table import RULES, SkylineTable, check_rule

__all__ = ["PolyDomIndex", "IndexAll", "candidate_columns", "validate_candidates"]


def validate_candidates(
    candidates: Sequence[Candidate], n_min: float, n_max: float
) -> tuple[list[Candidate], float, float]:
    """Check a candidate list for an index: non-empty, unique keys, curves >= 0 on the domain.

    Returns the list, ``n_min`` and ``n_max`` as floats.  Raises ``TypeError`` (not an
    iterable of candidates) or ``ValueError`` naming the problem; nothing is modified.

    Runtime complexity: O(K * L) (see :func:`candidate_columns`).
    """
    pool, _, _, lo, hi = candidate_columns(candidates, n_min, n_max)
    return list(pool), lo, hi


def candidate_columns(
    candidates: Sequence[Candidate] | CandidateArrays, n_min: float, n_max: float
) -> tuple[Sequence[Candidate], np.ndarray, np.ndarray, float, float]:
    """The pool an index is built over, with its ``(K, L)`` coefficient matrix, its
    accuracies and the domain, after the checks of :func:`validate_candidates`.

    A :class:`~polydom.curves.candidate_arrays.CandidateArrays` is taken as it is (its
    columns were checked when it was made); a list is checked candidate by candidate for
    its type and keys.  Curves are non-negative on the domain when every coefficient is
    (``n_min >= 0``): decided for the whole matrix at once; only the other rows are checked
    exactly (:func:`polydom.curves.poly.difference_nonnegative`); curves of degree <= 2
    whose minimum on the domain is clearly positive are decided at once too
    (:func:`polydom.curves.poly.surely_nonnegative`).

    Runtime complexity: O(K * L) vectorised, plus O(L**3) per curve left undecided (a
    negative coefficient and a minimum within rounding of 0, or a degree above 2).
    """
    lo, hi = check_domain(n_min, n_max)
    if isinstance(candidates, CandidateArrays):
        pool: Sequence[Candidate] = candidates
        if not len(pool):
            raise InvalidArgumentError("candidates must not be empty")
        coef, acc, keys = pool.coefficients, pool.accuracies, pool.keys
    else:
        if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates,
                                                                            Iterable):
            raise ArgumentTypeError(
                f"candidates must be an iterable of polydom.Candidate, got "
                f"{shown(candidates)} ({type(candidates).__name__})"
            )
        pool = list(candidates)
        if not pool:
            raise InvalidArgumentError("candidates must not be empty")
        seen = set()
        for k, c in enumerate(pool):
            if not isinstance(c, Candidate):
                raise ArgumentTypeError(
                    f"candidates[{k}] must be a polydom.Candidate, got {shown(c)} "
                    f"({type(c).__name__})"
                )
            if c.key in seen:
                raise InvalidArgumentError(f"duplicate candidate key {c.key!r}")
            seen.add(c.key)
        coef = coefficient_matrix([c.cost for c in pool])
        acc = np.fromiter((c.accuracy for c in pool), dtype=np.float64, count=len(pool))
        keys = None
    sure = surely_nonnegative(coef, lo, hi)
    for i in np.flatnonzero(~sure).tolist():
        row = coef[i]
        if not difference_nonnegative(row, lo, hi, ZERO_TOL * np.abs(row)):
            key = keys[i] if keys is not None else pool[i].key
            raise InvalidArgumentError(
                f"cost curve of candidate {key!r} ({CostCurve(row)}) is negative somewhere "
                f"on [{lo!r}, {hi!r}]"
            )
    return pool, coef, acc, lo, hi


def _sweep_table(
    cls: type[SkylineTable],
    candidates: Sequence[Candidate] | CandidateArrays,
    n_min: float,
    n_max: float,
    keep_all: bool,
    max_crossings: int,
    max_prune_tests: int | None,
    max_memory: int,
) -> SkylineTable:
    start = time.perf_counter()
    check_max_crossings(max_crossings)
    check_max_prune_tests(max_prune_tests)
    check_max_memory(max_memory)
    pool, coef, acc, lo, hi = candidate_columns(candidates, n_min, n_max)
    check_memory(coef.shape[0], coef.shape[1], max_memory)
    check_sweep_work(coef, lo, hi, max_crossings, acc)
    keys = pool.keys if isinstance(pool, CandidateArrays) else [c.key for c in pool]
    kept = prune_columns(coef, acc, keys, lo, hi,
                         max_tests=max_prune_tests)  # canonical priority order
    pruned_at = time.perf_counter()
    result = kinetic_sweep([coef[i] for i in kept], acc[kept].tolist(), lo, hi,
                           keep_all=keep_all, max_crossings=max_crossings,
                           max_memory=max_memory)
    skylines = [[kept[i] for i in sky] for sky in result.skylines]
    stats = {
        "candidates": len(pool),
        "undominated": len(kept),
        "events": result.events,
        "crossings": result.crossings,
        "prune_seconds": pruned_at - start,
        "build_seconds": time.perf_counter() - start,
    }
    return cls(pool, lo, hi, result.breaks, skylines, stats)


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
        max_prune_tests: int | None = MAX_PRUNE_TESTS,
        max_memory: int = MAX_MEMORY,
    ) -> PolyDomIndex:
        """Build the index over ``candidates`` for sizes in ``[n_min, n_max]``.

        Dominated candidates (another one costs no more at every size and is at least as
        accurate) are removed first; they are on no skyline.  The kinetic sweep then finds
        the sizes where the skyline of the rest changes.  ``n_min == n_max`` builds the index
        for one fixed size (Problem 2): one range holding that size's skyline.

        ``candidates`` is a list of :class:`Candidate` or a
        :class:`~polydom.curves.candidate_arrays.CandidateArrays` (then only the skyline's
        candidates are ever made).  No step's work is unbounded; each limit is refused in
        one line naming it and how to raise it:

        * ``max_crossings`` (default :data:`polydom.index.sweep.MAX_CROSSINGS`, 500,000
          crossing events, about 40 us of CPU each for curves of degree <= 2 on one shared
          core): candidates whose curves cross more often are refused up front when their
          orders at 17 sizes of the domain show it
          (:func:`polydom.index.sweep.crossing_lower_bound`, O(P K log**2 K) numpy work, a
          second or so at 10**5), else when the sweep reaches the limit;
        * ``max_prune_tests`` (default :data:`polydom.index.dominance.MAX_PRUNE_TESTS`,
          5 * 10**8 curve comparisons, about 10 ns each; None: no limit): the exact
          comparisons pruning makes when its cheaper tests do not decide
          (:func:`polydom.index.dominance.prune_columns`);
        * ``max_memory`` (default :data:`polydom.index.sweep.MAX_MEMORY`, 2 GiB): the
          working arrays of pruning (160 + 8 L bytes a candidate, checked up front) and the
          skylines the sweep records (40 bytes an entry, checked as they grow).

        Runtime complexity: O(K * L) checks and O(P K log**2 K) for the bound; pruning
        O(K log K * L) when its block and Fenwick tests decide (a staircase of parallel
        lines, a pool dominated by few curves), plus O(S * L) numpy work per candidate they
        do not decide, for S kept; then O((S + X) log S) for X crossings among the S.

        Raises
        ------
        ValueError
            On an empty list, duplicate keys, a bad domain, a curve negative on it, or a
            limit reached (naming it and how to raise it).
        """
        return _sweep_table(cls, candidates, n_min, n_max, False, max_crossings,
                            max_prune_tests, max_memory)

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
        max_prune_tests: int | None = MAX_PRUNE_TESTS,
        max_memory: int = MAX_MEMORY,
    ) -> IndexAll:
        """Build over ``candidates``; same arguments and errors as :meth:`PolyDomIndex.build`."""
        return _sweep_table(cls, candidates, n_min, n_max, True, max_crossings,
                            max_prune_tests, max_memory)

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
