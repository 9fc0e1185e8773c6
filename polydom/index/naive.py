"""NaiveLookup baseline: no index, every query scans all candidates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_budget, check_queries, check_size
from polydom.index.dominance import canonical_order
from polydom.index.polydom_index import validate_candidates
from polydom.index.table import check_rule

__all__ = ["NaiveLookup"]


class NaiveLookup:
    """Answer each query by evaluating every candidate's cost (numpy, vectorised).

    Same interface and answers as :class:`polydom.PolyDomIndex`: the most accurate candidate
    with cost ``<= budget`` at ``size``, ties to the lower cost there, then the smaller key
    (``rule="one_se"``: the cheapest that fits within one standard error of that one, ties
    to the more accurate, then the smaller key).  Its size (``entries``) is the number of
    candidates.
    """

    def __init__(self, candidates: Sequence[Candidate], n_min: float, n_max: float) -> None:
        self._candidates = list(candidates)
        self._lo, self._hi = n_min, n_max
        k = len(self._candidates)
        width = max(c.cost.coefficients.size for c in self._candidates)
        self._coef = np.zeros((width, k))  # row w: coefficient of n**w
        for i, c in enumerate(self._candidates):
            self._coef[: c.cost.coefficients.size, i] = c.cost.coefficients
        self._acc = np.array([c.accuracy for c in self._candidates])
        self._floor = np.array([c.accuracy - c.accuracy_se for c in self._candidates])
        rank = np.empty(k, dtype=np.int64)
        rank[canonical_order([c.key for c in self._candidates])] = np.arange(k)
        self._rank = rank

    @classmethod
    def build(
        cls,
        candidates: Sequence[Candidate],
        n_min: float = 0.0,
        n_max: float = float("inf"),
    ) -> NaiveLookup:
        """Keep the candidates as they are (after the same validation as the index)."""
        cands, lo, hi = validate_candidates(candidates, n_min, n_max)
        return cls(cands, lo, hi)

    @property
    def candidates(self) -> list[Candidate]:
        """The candidates, in their given order."""
        return list(self._candidates)

    @property
    def breakpoints(self) -> np.ndarray:
        """A single range starting at ``n_min`` (no index)."""
        return np.array([self._lo])

    @property
    def entries(self) -> int:
        """Number of stored candidates."""
        return len(self._candidates)

    def _costs(self, size: float) -> np.ndarray:
        v = np.zeros(self._coef.shape[1])
        with np.errstate(over="ignore"):  # a cost beyond the largest float is inf: no fit
            for w in range(self._coef.shape[0] - 1, -1, -1):
                v = v * size + self._coef[w]
        return v

    def lookup_position(self, size: float, budget: float, rule: str = "best") -> int:
        """Position of the answer in :attr:`candidates`, -1 when nothing fits.

        Runtime complexity: O(K * d).
        """
        check_rule(rule)
        n = check_size(size, self._lo, self._hi)
        b = check_budget(budget)
        costs = self._costs(n)
        fits = np.flatnonzero(costs <= b)
        if fits.size == 0:
            return -1
        best = fits[self._acc[fits] == self._acc[fits].max()]
        if best.size > 1:
            cheapest = best[costs[best] == costs[best].min()]
            best = cheapest[np.argsort(self._rank[cheapest])]
        if rule == "best":
            return int(best[0])
        near = fits[self._acc[fits] >= self._floor[best[0]]]
        near = near[costs[near] == costs[near].min()]
        near = near[self._acc[near] == self._acc[near].max()]
        return int(near[np.argmin(self._rank[near])])

    def lookup(self, size: float, budget: float, rule: str = "best") -> Candidate | None:
        """The answer itself, or None.  Runtime complexity: O(K * d)."""
        j = self.lookup_position(size, budget, rule)
        return None if j < 0 else self._candidates[j]

    def lookup_many(
        self, sizes: np.ndarray, budgets: np.ndarray, rule: str = "best"
    ) -> np.ndarray:
        """Vectorised lookups (scanning all candidates per query).  O(Q * K * d)."""
        check_rule(rule)
        n, b = check_queries(sizes, budgets, self._lo, self._hi)
        out = np.array(
            [self.lookup_position(x, y, rule) for x, y in zip(n.ravel(), b.ravel(),
                                                               strict=True)],
            dtype=np.int64,
        )
        return out.reshape(n.shape)

    def skyline(self, size: float) -> list[Candidate]:
        """Skyline at ``size`` computed from scratch (sort by cost, keep accuracy records)."""
        n = check_size(size, self._lo, self._hi)
        costs = self._costs(n)
        order = sorted(range(len(costs)), key=lambda i: (costs[i], -self._acc[i], self._rank[i]))
        best, out = -1.0, []
        for i in order:
            if self._acc[i] > best:
                out.append(self._candidates[i])
                best = self._acc[i]
        return out
