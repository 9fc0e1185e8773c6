"""Ranges of sizes, each with a skyline sorted by cost: the layout every index here answers from.

``breaks[i]`` starts range ``i`` (closed on the left); the last range ends at ``n_max``.
Each range holds the positions of its skyline candidates, cheapest first, with strictly
increasing accuracy.  A lookup is two binary searches: over ``breaks`` (horizontal), then
over the skyline by the cost at the query size (vertical, evaluating O(log S) polynomials).

Two lookup rules answer from the same skylines (:data:`RULES`):

* ``"best"``: the most accurate candidate that fits (ties: lower cost, then key);
* ``"one_se"``: the cheapest candidate that fits whose accuracy is at least the best's
  accuracy minus the best's standard error (``accuracy_se``): the one-standard-error rule
  of model selection (Breiman et al. 1984), which prefers a cheaper model whenever the
  evidence that the best one is better is within the noise of its estimate.

The one-SE answer is a skyline entry: every candidate that fits at size ``n`` is matched
by a skyline entry of that size that costs no more and is at least as accurate, so the
first skyline entry whose accuracy reaches the threshold is the cheapest candidate that
does.  A skyline's accuracies increase, so it is found by a second binary search below the
best entry: O(log S) more.
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_queries, check_query, check_size
from polydom.curves.poly import horner, values_equal
from polydom.errors import RuleUnavailableError
from polydom.index.rules import RULES, check_rule

__all__ = ["RULES", "RuleUnavailableError", "SkylineTable", "check_rule"]


_MAX_FLOAT = sys.float_info.max


class SkylineTable:
    """Lookup over precomputed ranges and skylines (shared by Poly-Dom and Index-All).

    Instances are made by the ``build`` class methods of subclasses, not directly.
    """

    def __init__(
        self,
        candidates: Sequence[Candidate],
        n_min: float,
        n_max: float,
        breaks: Sequence[float],
        skylines: Sequence[Sequence[int]],
        stats: dict | None = None,
    ) -> None:
        # the pool as given (a list, a CandidateArrays, a store's lazily read pool), and the
        # hot path's list: position -> candidate, filled for the positions on a skyline
        self._pool = candidates if not isinstance(candidates, (list, tuple)) else list(
            candidates)
        self._lo = float(n_min)
        self._hi = float(n_max)
        self._top = min(self._hi, _MAX_FLOAT)  # largest size accepted without a full check
        self._breaks = [float(b) for b in breaks]
        self._sky = [list(map(int, s)) for s in skylines]
        self.stats_ = dict(stats or {})
        self._answerable = sorted({i for s in self._sky for i in s})
        if isinstance(self._pool, list):
            self._candidates = self._pool
        else:
            self._candidates = [None] * len(self._pool)
            made = getattr(self._pool, "made", None)  # a CandidateArrays makes them at once
            picked = (made(self._answerable) if made is not None
                      else [self._pool[i] for i in self._answerable])
            for i, c in zip(self._answerable, picked, strict=True):
                self._candidates[i] = c
        picked = [self._candidates[i] for i in self._answerable]
        # cubic and below share one unrolled Horner in lookups (width 4)
        width = max([4, *(c.cost.coefficients.size for c in picked)])
        self._width = width
        # Per skyline candidate: coefficients highest degree first, padded to one width.
        self._horner = {
            i: (0.0,) * (width - c.cost.coefficients.size) + c.cost._horner
            for i, c in zip(self._answerable, picked, strict=True)
        }
        self._sky_horner = [[self._horner[i] for i in s] for s in self._sky]
        # per range, for the one-SE rule: accuracies (increasing) and each entry's
        # threshold, its accuracy minus its standard error
        self._sky_acc = [[self._candidates[i].accuracy for i in s] for s in self._sky]
        self._sky_floor = [
            [self._candidates[i].accuracy - self._candidates[i].accuracy_se for i in s]
            for s in self._sky
        ]
        self._arrays: tuple | None = None

    # ------------------------------------------------------------------ properties
    @property
    def candidates(self) -> list[Candidate]:
        """The candidates given to ``build``, in their given order.

        Runtime complexity: O(K); a pool given as arrays (or read lazily from a store)
        makes (reads) every candidate on the first call.
        """
        if self._pool is self._candidates:
            return list(self._candidates)
        return list(self._pool)

    @property
    def pool(self) -> Sequence[Candidate]:
        """The candidates as given to ``build`` (a list, a
        :class:`~polydom.curves.candidate_arrays.CandidateArrays`, or the pool a store
        reads on first use), without making any.  O(1)."""
        return self._pool

    @property
    def answerable(self) -> list[int]:
        """Positions of the candidates on some skyline (every answer is one), ascending.
        O(1) (a copy: O(P))."""
        return list(self._answerable)

    def candidate(self, position: int) -> Candidate:
        """The candidate at ``position`` in :attr:`candidates`.

        Runtime complexity: O(1) for a candidate on a skyline; otherwise what the pool's
        item costs (a store's pool is read on the first such call).
        """
        found = self._candidates[position]
        return self._pool[position] if found is None else found

    @property
    def domain(self) -> tuple[float, float]:
        """``(n_min, n_max)``: the sizes this index answers for."""
        return (self._lo, self._hi)

    @property
    def breakpoints(self) -> np.ndarray:
        """Start of each range, strictly increasing; ``breakpoints[0] == n_min``."""
        return np.array(self._breaks)

    @property
    def ranges(self) -> list[tuple[float, float]]:
        """``(n_lo, n_hi)`` of each range: ``[n_lo, n_hi)``, the last one closed at ``n_max``."""
        ends = [*self._breaks[1:], self._hi]
        return list(zip(self._breaks, ends, strict=True))

    @property
    def skylines(self) -> list[list[Candidate]]:
        """The skyline of each range, cheapest first."""
        return [[self._candidates[i] for i in s] for s in self._sky]

    @property
    def skyline_positions(self) -> list[list[int]]:
        """The skyline of each range as positions into :attr:`candidates`."""
        return [list(s) for s in self._sky]

    @property
    def entries(self) -> int:
        """Total skyline cells over all ranges (the paper's index size)."""
        return sum(len(s) for s in self._sky)

    def __len__(self) -> int:
        return len(self._sky)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(candidates={len(self._pool)}, "
            f"ranges={len(self._sky)}, entries={self.entries}, "
            f"domain=[{self._lo!r}, {self._hi!r}])"
        )

    # ------------------------------------------------------------------ queries
    def skyline(self, size: float, check_input: bool = True) -> list[Candidate]:
        """Candidates on the skyline at ``size``, cheapest first (``check_input=False``: the
        caller checked ``size`` already, a float inside the domain).

        Runtime complexity: O(log R + S) for R ranges and a skyline of S.
        """
        n = check_size(size, self._lo, self._hi) if check_input else size
        return [self._candidates[i] for i in self._sky[bisect_right(self._breaks, n) - 1]]

    def range_at(self, size: float, check_input: bool = True) -> tuple[float, float]:
        """``(n_lo, n_hi)`` of the range holding ``size`` (as in :attr:`ranges`;
        ``check_input=False`` as :meth:`skyline`).

        Runtime complexity: O(log R).

        Raises
        ------
        TypeError, ValueError
            As :meth:`skyline` for a bad size.
        """
        n = check_size(size, self._lo, self._hi) if check_input else size
        r = bisect_right(self._breaks, n) - 1
        return (self._breaks[r], self._breaks[r + 1] if r + 1 < len(self._breaks) else self._hi)

    def lookup(self, size: float, budget: float, rule: str = "best",
               check_input: bool = True) -> Candidate | None:
        """The most accurate candidate whose cost at ``size`` is ``<= budget``, or None.

        Ties go to the lower cost at ``size``, then to the smaller key.  With
        ``rule="one_se"``: the cheapest candidate that fits whose accuracy is at least
        ``best.accuracy - best.accuracy_se`` for the ``best`` answer (ties: the more
        accurate, then the smaller key).  ``check_input=False``: the caller checked the
        arguments already (:func:`polydom.curves.domain.check_query`, :func:`check_rule`),
        and they are trusted.

        Runtime complexity: O(log R + d * log S) for R ranges, skylines of at most S
        candidates and curves of degree d; O(log S) more for ``"one_se"``.

        Raises
        ------
        TypeError
            If ``size`` or ``budget`` is not one real number (a string, a bool, an array).
        ValueError
            If ``size`` is NaN, infinite, negative or outside the domain, ``budget`` is
            NaN, infinite or negative, or ``rule`` is not one of :data:`RULES`.
        """
        j = self.lookup_position(size, budget, rule, check_input)
        return None if j < 0 else self._candidates[j]

    def lookup_position(self, size: float, budget: float, rule: str = "best",
                        check_input: bool = True) -> int:
        """Like :meth:`lookup`, returning the position in :attr:`candidates` (-1: none fits)."""
        # Python floats inside the domain under "best" pass four comparisons (the hot
        # path); anything else is checked and cast (:func:`polydom.curves.domain.check_query`)
        if check_input and not (
            type(size) is float and type(budget) is float and rule == "best"
            and self._lo <= size <= self._top and 0.0 <= budget <= _MAX_FLOAT
        ):
            size, budget = check_query(size, budget, self._lo, self._hi)
            check_rule(rule)
        r = bisect_right(self._breaks, size) - 1
        polys = self._sky_horner[r]
        # Binary search for the last skyline entry whose cost fits.  On exit the entry at
        # lo - 1 was evaluated as fitting and the one at lo as not (or is past the end).
        lo, hi = 0, len(polys)
        if self._width == 4:
            while lo < hi:
                mid = (lo + hi) >> 1
                c3, c2, c1, c0 = polys[mid]
                if ((c3 * size + c2) * size + c1) * size + c0 <= budget:
                    lo = mid + 1
                else:
                    hi = mid
        else:
            while lo < hi:
                mid = (lo + hi) >> 1
                v = 0.0
                for c in polys[mid]:
                    v = v * size + c
                if v <= budget:
                    lo = mid + 1
                else:
                    hi = mid
        if not lo:
            return -1
        if rule == "best":
            return self._sky[r][lo - 1]
        # one_se: the first entry up to the best (lo - 1) reaching the best's threshold
        return self._sky[r][bisect_left(self._sky_acc[r], self._sky_floor[r][lo - 1], 0, lo)]

    def _padded(self) -> tuple:
        """Flat arrays for :meth:`lookup_many`, built once.

        Row ``r`` of a ``(R, S + 1)`` table holds range ``r``'s skyline; cells past its end
        cost ``+inf`` (never fit).  Returns breaks, skyline lengths, candidate ids (flat),
        one flat array per Horner coefficient (highest degree first), ``S + 1``, and the
        flat accuracies and one-SE thresholds of the cells (for ``rule="one_se"``).
        """
        if self._arrays is None:
            stride = max(len(s) for s in self._sky) + 1
            ids = np.full((len(self._sky), stride), -1, dtype=np.int64)
            coef = np.zeros((self._width, len(self._sky), stride))
            coef[-1] = np.inf
            acc = np.full((len(self._sky), stride), np.inf)
            floor = np.full((len(self._sky), stride), np.inf)
            for r, s in enumerate(self._sky):
                ids[r, : len(s)] = s
                acc[r, : len(s)] = self._sky_acc[r]
                floor[r, : len(s)] = self._sky_floor[r]
                for j, i in enumerate(s):
                    coef[:, r, j] = self._horner[i]
            lens = np.array([len(s) for s in self._sky], dtype=np.int64)
            flat = [np.ascontiguousarray(c.ravel()) for c in coef]
            self._arrays = (np.array(self._breaks), lens, ids.ravel(), flat, stride,
                            acc.ravel(), floor.ravel())
        return self._arrays

    def lookup_many(
        self, sizes: np.ndarray, budgets: np.ndarray, rule: str = "best",
        check_input: bool = True,
    ) -> np.ndarray:
        """Vectorised :meth:`lookup_position` over broadcast ``sizes`` and ``budgets``.

        Returns an int64 array of positions into :attr:`candidates`, -1 where nothing fits;
        element-wise equal to :meth:`lookup_position` with the same ``rule`` (the same
        binary searches, run for a fixed number of steps over all queries at once).
        Inputs are cast to float64 (``check_input=False``: they are float64 arrays of one
        shape, checked by :func:`polydom.curves.domain.check_queries` already).

        Raises
        ------
        TypeError
            If ``sizes`` or ``budgets`` are not arrays of real numbers (strings, complex).
        ValueError
            If they are ragged, do not broadcast, or hold a value out of range, or
            ``rule`` is not one of :data:`RULES`.

        Runtime complexity: O(Q * d * log S) numpy work for Q queries.
        """
        if check_input:
            check_rule(rule)
            n, b = check_queries(sizes, budgets, self._lo, self._hi)
        else:
            n, b = sizes, budgets
        shape = n.shape
        n, b = n.ravel(), b.ravel()
        breaks, lens, ids, flat, stride, acc, floor = self._padded()
        base = (np.searchsorted(breaks, n, side="right") - 1) * stride
        lo = np.zeros(n.size, dtype=np.int64)
        hi = lens[base // stride]
        for _ in range(int(stride).bit_length()):
            mid = (lo + hi) >> 1
            at = base + mid
            v = flat[0].take(at)
            # a cost beyond the largest float is inf (or NaN past the end): it never fits
            with np.errstate(over="ignore", invalid="ignore"):
                for c in flat[1:]:
                    v *= n
                    v += c.take(at)
            fits = v <= b
            lo = np.where(fits, mid + 1, lo)
            hi = np.where(fits, hi, mid)
        best = np.maximum(lo - 1, 0)
        pick = best
        if rule == "one_se":
            # the first cell in [0, best] whose accuracy reaches the best's threshold
            threshold = floor.take(base + best)
            first, last = np.zeros(n.size, dtype=np.int64), best + 1
            for _ in range(int(stride).bit_length()):
                active = first < last
                mid = (first + last) >> 1
                reaches = acc.take(base + np.minimum(mid, best)) >= threshold
                last = np.where(active & reaches, mid, last)
                first = np.where(active & ~reaches, mid + 1, first)
            pick = first
        out = np.where(lo > 0, ids.take(base + pick), -1)
        return out.reshape(shape)

    # ------------------------------------------------------------------ invariants
    def _check(self, minimal: bool = True) -> None:
        """Assert every invariant of the table (for tests).

        Breaks strictly increase from ``n_min``; every skyline has strictly increasing
        accuracy and non-decreasing cost inside its range; with ``minimal`` consecutive
        skylines differ.
        """
        assert self._breaks and self._breaks[0] == self._lo
        assert all(a < b for a, b in pairwise(self._breaks))
        assert self._breaks[-1] <= self._hi
        assert len(self._sky) == len(self._breaks)
        for (n_lo, n_hi), sky in zip(self.ranges, self._sky, strict=True):
            accs = [self._candidates[i].accuracy for i in sky]
            assert all(a < b for a, b in pairwise(accs)), accs
            # A size inside the range: its midpoint, written as half its width past n_lo so
            # that it cannot overflow near the largest floats (n_lo for a one-point range);
            # one past n_lo when the range is unbounded.
            probe = n_lo + 1.0 if math.isinf(n_hi) else n_lo + 0.5 * (n_hi - n_lo)
            curves = [self._candidates[i].cost.coefficients for i in sky]
            for u, v in pairwise(curves):
                assert horner(u, probe) <= horner(v, probe) or values_equal(u, v, probe), (
                    probe, [self._candidates[i].key for i in sky]
                )
        if minimal:
            assert all(a != b for a, b in pairwise(self._sky))
