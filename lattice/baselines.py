"""Baselines of the lattice: Naive-Expand-All, and Greedy / Greedy-Acc / Greedy-Cost (spec 4.5)."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from lattice.expansion import Expansion, learner_name
from lattice.explore import Exploration, _check_learner_features, resolve_candidate_alpha
from lattice.feature_space import Expander, FeatureSpace, set_key
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.domain import check_budget, check_domain, check_size
from polydom.errors import InvalidArgumentError

__all__ = [
    "PAPER_LAMBDAS",
    "GreedyResult",
    "expand_all",
    "greedy",
    "greedy_acc",
    "greedy_cost",
]

#: The paper's lambda set for Greedy (section 5.2).
PAPER_LAMBDAS = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)


def expand_all(
    costs: Mapping[str, Any] | CostModel,
    learner: Any,
    cache: MutableMapping | None = None,
    *,
    candidate_alpha: float | str = 1.0,
    n_min: float = 0.0,
    n_max: float = math.inf,
) -> Exploration:
    """Naive-Expand-All: train every one of the 2**m feature sets (exact, alpha = 1).

    Sets are expanded in ascending (size, bitmask) order.

    Runtime complexity: 2**m trainings.
    """
    lo, hi = check_domain(n_min, n_max)
    name = learner_name(learner)
    space = FeatureSpace(costs, lo, hi)
    _check_learner_features(learner, space)
    expander = Expander(learner, space, cache)
    expanded = {s: expander(s) for s in sorted(range(1 << space.m), key=set_key)}
    stats = {
        "expanded": len(expanded),
        "trained": expander.trained,
        "cache_hits": expander.cache_hits,
        "fit_seconds": expander.fit_seconds,
        "checks": 0,
        "sandwiched": 0,
        "cost_pruned": 0,
        "covering_skips": 0,
        "traversal": "all",
        "scope": "expanded",
        "covering": False,
        "cost_pruning": False,
    }
    return Exploration(
        space, expanded, {}, alpha=1.0, delta=0.0,
        candidate_alpha=resolve_candidate_alpha(candidate_alpha, 1.0),
        complete=True, stats=stats, learner=name,
    )


class GreedyResult:
    """Sequences of nested feature sets per lambda, their index, and any-time retrieval.

    Attributes
    ----------
    lambdas : tuple of float
        The trade-offs, in the given order (``inf`` means "cheapest feature first").
    size : float
        The size ``n0`` at which costs were compared (the paper: the median item size).
    sequences : dict of float to list of frozenset
        For each lambda, the chain of ``m`` nested sets, the last one the full set.
    expanded : dict of frozenset to Expansion
        Every set trained (distinct over all lambdas), including the empty set.
    skyline : list of tuple
        ``(cost at n0, accuracy, lambda, prefix length, features)`` of the sets on the
        accuracy/cost skyline at ``n0`` (over all sequences and the empty set), cheapest
        first; a set in several sequences keeps the first lambda.
    """

    def __init__(
        self,
        space: FeatureSpace,
        lambdas: tuple[float, ...],
        size: float,
        sequences: dict[float, list[int]],
        expanded: dict[int, Expansion],
        stats: dict[str, Any],
    ) -> None:
        self._space = space
        self.lambdas = lambdas
        self.size = size
        self._seq = sequences
        self.sequences = {lam: [space.names_of(s) for s in seq] for lam, seq in sequences.items()}
        self._expanded = expanded
        self.expanded = {space.names_of(s): e for s, e in expanded.items()}
        self.costs = dict(space.curves)
        self.stats = dict(stats)
        entries: dict[int, tuple[float, int]] = {0: (lambdas[0], 0)}
        for lam in lambdas:
            for pos, s in enumerate(sequences[lam], start=1):
                entries.setdefault(s, (lam, pos))
        rows = sorted(
            (space.cost(s)(size), -expanded[s].accuracy, set_key(s), s) for s in entries
        )
        self._sky: list[tuple[float, float, float, int, int]] = []
        best = -math.inf
        for cost, neg_acc, _, s in rows:
            if -neg_acc > best:
                best = -neg_acc
                lam, pos = entries[s]
                self._sky.append((cost, -neg_acc, lam, pos, s))
        self._sky_costs = [row[0] for row in self._sky]
        self.skyline = [(c, a, lam, pos, space.names_of(s)) for c, a, lam, pos, s in self._sky]

    def __repr__(self) -> str:
        return (
            f"GreedyResult(lambdas={len(self.lambdas)}, expanded={len(self.expanded)}, "
            f"size={self.size!r})"
        )

    @property
    def n_expanded(self) -> int:
        """Number of distinct sets trained (Metric 1)."""
        return len(self._expanded)

    def cost_of(self, features: frozenset) -> CostCurve:
        """Cost curve of a feature set."""
        return self._space.cost(self._space.mask(features))

    def retrieve(self, size: float, budget: float) -> Expansion:
        """Any-time retrieval (spec 4.5): the longest prefix of the chosen sequence that fits.

        The skyline at ``n0`` picks the lambda of the most accurate set whose cost at ``n0``
        is within ``budget``; its sequence is then walked with the true costs at ``size``,
        one feature at a time, while the prefix still fits.  The empty set's model when no
        prefix fits.

        Runtime complexity: O(log S + m * d).

        Raises
        ------
        ValueError
            If ``size`` or ``budget`` is NaN, infinite or negative.
        """
        n = check_size(size, 0.0, math.inf)
        b = check_budget(budget)
        j = bisect_right(self._sky_costs, b) - 1
        lam = self._sky[max(j, 0)][2]
        best = 0
        for s in self._seq[lam]:
            if self._space.cost(s)(n) <= b:
                best = s
            else:
                break
        return self._expanded[best]

    def _check(self) -> None:
        """Assert the invariants: chains of m nested sets ending at the full set, skyline
        cheapest first with strictly increasing accuracy."""
        full = self._space.full
        for seq in self._seq.values():
            assert len(seq) == self._space.m
            prev = 0
            for s in seq:
                assert s & prev == prev and (s ^ prev).bit_count() == 1
                prev = s
            assert not seq or seq[-1] == full
        costs = [r[0] for r in self._sky]
        accs = [r[1] for r in self._sky]
        assert costs == sorted(costs)
        assert all(a < b for a, b in zip(accs, accs[1:], strict=False))


def greedy(
    costs: Mapping[str, Any] | CostModel,
    learner: Any,
    size: float = 1.0,
    lambdas: Sequence[float] = PAPER_LAMBDAS,
    cache: MutableMapping | None = None,
) -> GreedyResult:
    """Greedy candidate sequences (the paper's Algorithm 4, after Xu et al.'s Greedy Miser).

    For each lambda, start from the empty set and add, one at a time, the feature ``f``
    maximising ``a(cur + f) - a(cur) - lambda * c(f | cur, size)``; ties go to the smaller
    ``c(f | cur, size)``, then the larger accuracy gain, then the earlier feature.
    ``c(f | cur, size)`` is the *marginal* cost of ``f``: the cost of its atoms that ``cur``
    has not paid yet.  Without shared atoms it is ``c(f, size)``, the paper's rule; with a
    :class:`polydom.CostModel` whose bundles share atoms, a feature whose atoms are already
    paid costs nothing more, which is what adding it really costs (``c(cur + f) - c(cur)``,
    as set costs pay each atom once).
    ``lambda = inf`` adds the cheapest feature (accuracy only breaks cost ties, and only
    tied sets are trained).  Sets are memoised across lambdas.

    Parameters
    ----------
    costs : polydom.CostModel or mapping of str to cost curve
    learner : object with ``expand``
    size : float, default 1.0
        The single size ``n0`` costs are compared at (the paper: median item size; 1 in the
        synthetic experiments, whose training items all have size 1).
    lambdas : sequence of float
        Trade-offs (>= 0, ``inf`` allowed); the paper's set by default.
    cache : mutable mapping, optional
        Earlier expansions, as in :func:`lattice.explore`.

    Runtime complexity: at most ``len(lambdas) * m * (m + 1) / 2`` distinct trainings plus
    the empty set.
    """
    n0 = check_size(size, 0.0, math.inf)
    lams = tuple(float(x) for x in lambdas)
    if not lams:
        raise InvalidArgumentError("lambdas must not be empty")
    for lam in lams:
        if math.isnan(lam) or lam < 0.0:
            raise InvalidArgumentError(f"lambdas must be >= 0 (inf allowed), got {lam!r}")
    space = FeatureSpace(costs, 0.0, math.inf)
    _check_learner_features(learner, space)
    expander = Expander(learner, space, cache)
    expanded: dict[int, Expansion] = {}

    def acc(s: int) -> float:
        if s not in expanded:
            expanded[s] = expander(s)
        return expanded[s].accuracy

    atom_cost = {a: c(n0) for a, c in space.model.units.items()}
    feature_atoms = [space.model.units_of([name]) for name in space.names]

    def marginal(cur: int, i: int) -> float:
        """Cost at n0 of adding feature i to the set cur: its units (atoms, shared steps,
        the start) not yet paid."""
        paid = space.model.units_of(space.names_of(cur)) if space.shared else frozenset()
        return sum(atom_cost[a] for a in sorted(feature_atoms[i] - paid))

    acc(0)
    sequences: dict[float, list[int]] = {}
    for lam in lams:
        if lam in sequences:
            continue
        cur, rem, seq = 0, list(range(space.m)), []
        while rem:
            base = acc(cur)
            unit = {i: marginal(cur, i) for i in rem}
            if math.isinf(lam):
                cheapest = min(unit[i] for i in rem)
                tied = [i for i in rem if unit[i] == cheapest]
                pick = tied[0] if len(tied) == 1 else min(
                    tied, key=lambda i: (-(acc(cur | 1 << i) - base), i)
                )
            else:
                pick = min(
                    rem,
                    key=lambda i: (
                        -((acc(cur | 1 << i) - base) - lam * unit[i]),
                        unit[i],
                        -(acc(cur | 1 << i) - base),
                        i,
                    ),
                )
            cur |= 1 << pick
            acc(cur)  # the sequence's model for this prefix
            rem.remove(pick)
            seq.append(cur)
        sequences[lam] = seq
    stats = {
        "expanded": len(expanded),
        "trained": expander.trained,
        "cache_hits": expander.cache_hits,
        "fit_seconds": expander.fit_seconds,
    }
    return GreedyResult(space, lams, n0, sequences, expanded, stats)


def greedy_acc(
    costs: Mapping[str, Any] | CostModel,
    learner: Any,
    size: float = 1.0,
    cache: MutableMapping | None = None,
) -> GreedyResult:
    """Greedy-Acc (corrected, spec 4.5): one sequence with lambda = 0, largest gain first."""
    return greedy(costs, learner, size, (0.0,), cache)


def greedy_cost(
    costs: Mapping[str, Any] | CostModel,
    learner: Any,
    size: float = 1.0,
    cache: MutableMapping | None = None,
) -> GreedyResult:
    """Greedy-Cost (corrected, spec 4.5): one sequence with lambda = inf, cheapest first."""
    return greedy(costs, learner, size, (math.inf,), cache)
