"""Poly-Dom lattice exploration (spec 4.1, 4.2): expand few feature sets, keep the undominated.

The explorer walks the lattice of feature sets from both ends (the paper's Algorithm 2,
EXPAND-ENUMERATE) and trains a model only for sets that no pruning rule excuses:

* **Sandwich** (Properties 3.3 / 3.11): ``s`` is skipped when an expanded proper subset ``G``
  and an expanded proper superset ``K`` satisfy ``alpha * (a(G) - delta) >= a(K)``.
* **Covering** (Property 3.4): a batch shortcut for sandwich tests of the neighbours of a
  freshly expanded set; it only skips tests that would succeed, so the output is identical.
* **Cost pruning** (optional, beyond the paper): see :func:`explore`.

Each pass of a round hands its unpruned sets to an executor as one batch (in-process, a
process pool or a Dask cluster, :mod:`lattice.executor`); see :meth:`_Explorer._pass` for why
this decides exactly what a one-by-one walk decides.

The expanded sets are then reduced to candidates by exact polynomial-cost dominance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, MutableMapping
from functools import cached_property
from typing import Any

import numpy as np

from lattice.anytime import DEFAULT_WEIGHTS, AnytimeRun, Stop, check_weights
from lattice.executor import make_executor
from lattice.expansion import Expansion, learner_name
from lattice.feature_space import (
    WORD_FEATURES,
    BudgetExhausted,
    Expander,
    FeatureSpace,
    set_key,
)
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_domain, check_real
from polydom.curves.poly import ACC_TOL
from polydom.errors import InvalidArgumentError
from polydom.index.dominance import cost_le_many, prune_dominated

__all__ = ["Exploration", "explore"]

_TRAVERSALS = ("complete", "paper", "anytime")
_SCOPES = ("expanded", "frontier")


class Exploration:
    """What an exploration of the lattice produced.

    Attributes
    ----------
    expanded : dict of frozenset to Expansion
        Every feature set the explorer decided to expand, in expansion order (the paper's
        Metric 1 is its length).  Sets served by the cache count as expanded too.
    candidates : list of polydom.Candidate
        The expanded sets no other expanded set dominates (``candidate_alpha``), key = the
        set's feature names in feature order, cost = the sum of its features' curves,
        payload = the fitted model.  Computed on first access.
    pruned : dict of frozenset to str
        Sets checked and not expanded, with the rule that excused them (``"sandwich"`` or
        ``"cost"``).
    features : tuple of str
        The lattice's feature order (bit ``i`` of a mask is ``features[i]``).
    costs : dict of str to CostCurve
        Cost curve of each lattice feature alone (a bundle: the sum of its atoms).
    cost_model : polydom.CostModel
        The atoms, bundles and columns the costs come from.
    alpha, delta, candidate_alpha : float
    domain : tuple of float
        ``(n_min, n_max)``, the sizes cost comparisons hold on.
    complete : bool
        False when the training budget ran out before the traversal ended (then nothing is
        guaranteed).
    stats : dict
        Counts: ``expanded``, ``trained``, ``cache_hits``, ``checks``, ``sandwiched``,
        ``cost_pruned``, ``covering_skips``, ``fit_seconds``, and the options used.
    learner : str
        Name of the learner that trained the expansions (:func:`lattice.learner_name`),
        every candidate's ``learner``.
    """

    def __init__(
        self,
        space: FeatureSpace,
        expanded: dict[int, Expansion],
        pruned: dict[int, str],
        *,
        alpha: float,
        delta: float,
        candidate_alpha: float,
        complete: bool,
        stats: dict[str, Any],
        learner: str,
    ) -> None:
        self._space = space
        self._masks = list(expanded)
        self.expanded = {space.names_of(m): e for m, e in expanded.items()}
        self._pruned_masks = dict(pruned)
        self.pruned = {space.names_of(m): r for m, r in pruned.items()}
        self.features = space.names
        self.costs = dict(space.curves)
        self.cost_model = space.model
        self.alpha = alpha
        self.delta = delta
        self.candidate_alpha = candidate_alpha
        self.domain = (space.n_min, space.n_max)
        self.complete = complete
        self.stats = dict(stats)
        self.learner = learner

    def __repr__(self) -> str:
        return (
            f"Exploration(features={len(self.features)}, expanded={len(self.expanded)}, "
            f"alpha={self.alpha!r}, delta={self.delta!r}, complete={self.complete})"
        )

    @property
    def n_expanded(self) -> int:
        """Number of expanded sets (Metric 1)."""
        return len(self.expanded)

    def key_of(self, features: frozenset) -> tuple[str, ...]:
        """Candidate key of a feature set: its names in the lattice's feature order."""
        return self._space.key(self._space.mask(features))

    def cost_of(self, features: frozenset) -> CostCurve:
        """Cost curve of a feature set (sum of its atoms' curves, each atom once)."""
        return self._space.cost(self._space.mask(features))

    def all_candidates(self) -> list[Candidate]:
        """One candidate per expanded set, in expansion order (before dominance pruning).

        Each needs the atoms of its features with probability 1; its ``learner`` is the
        exploration's (the name of the learner that trained it); its accuracy's standard
        error and fold scores are the expansion's.
        """
        sp = self._space
        return [
            Candidate(sp.key(m), e.accuracy, sp.cost(m), e.features, e.model,
                      needs=dict.fromkeys(sorted(sp.atoms(m)), 1.0), learner=self.learner,
                      accuracy_se=e.accuracy_se, fold_scores=e.fold_scores)
            for m, e in zip(self._masks, self.expanded.values(), strict=True)
        ]

    @cached_property
    def candidates(self) -> list[Candidate]:
        """Expanded sets that survive dominance pruning (Algorithm 1, spec 4.2).

        Runtime complexity: O(E * K) cost comparisons for E expanded sets and K survivors.
        """
        cands = self.all_candidates()
        keep = prune_dominated(cands, self.domain[0], self.domain[1], self.candidate_alpha)
        return [cands[i] for i in keep]

    # ------------------------------------------------------------------ invariants
    def _check(self) -> None:
        """Assert the invariants of the exploration (for tests).

        Every expansion is filed under its own feature set, with an accuracy in [0, 1];
        expanded and pruned sets are disjoint; counts add up.  For a complete run: the empty
        set and the full set are expanded; every sandwich-pruned set is still sandwiched by
        the final expanded sets (an expanded proper subset G and superset K with
        ``alpha * (a(G) - delta) >= a(K) - ACC_TOL``), every cost-pruned set has its
        witness, and with the complete traversal every set of the lattice was either
        expanded or pruned; the candidates are expanded sets of which none dominates
        another (with ``candidate_alpha == 1``).
        """
        sp = self._space
        masks = np.array(self._masks, dtype=np.int64 if sp.m <= WORD_FEATURES else object)
        accs = np.array([e.accuracy for e in self.expanded.values()])
        assert len(set(self._masks)) == len(self._masks)
        for m, (fs, e) in zip(self._masks, self.expanded.items(), strict=True):
            assert sp.names_of(m) == fs == frozenset(e.features)
            assert 0.0 <= e.accuracy <= 1.0
        assert not set(self._masks) & set(self._pruned_masks)
        assert self.stats["trained"] + self.stats["cache_hits"] == len(self._masks)
        assert self.stats["sandwiched"] + self.stats["cost_pruned"] >= len(self._pruned_masks)
        if not self.complete:
            return
        assert 0 in self._masks and sp.full in self._masks
        if self.stats["traversal"] in ("complete", "anytime") and sp.m <= 20:
            assert len(self._masks) + len(self._pruned_masks) == 1 << sp.m
        a, d = self.alpha, self.delta
        coefs = sp.cost_coefs(masks) if len(masks) else None
        for s, reason in self._pruned_masks.items():
            both = masks & s
            sub = both == masks
            sup = both == s
            lo = accs[sub].max() if sub.any() else -math.inf
            hi = accs[sup].min() if sup.any() else math.inf
            if reason == "sandwich":
                assert a * (lo - d) >= hi - ACC_TOL, (sp.key(s), lo, hi)
            else:
                assert reason == "cost"
                ok = a * (accs - d) >= hi + d - ACC_TOL
                target = sp.cost(s)
                assert any(
                    CostCurve(coefs[j]).le(target, *self.domain) for j in np.flatnonzero(ok)
                ), sp.key(s)
        if self.candidate_alpha == 1.0:
            cands = self.candidates
            keys = {sp.key(m) for m in self._masks}
            assert all(c.key in keys for c in cands)
            assert len(prune_dominated(cands, *self.domain)) == len(cands)


class _Explorer:
    """State of one run of Algorithm 2 (bitmask lattice, numpy arrays of expanded sets)."""

    def __init__(
        self,
        space: FeatureSpace,
        expander: Expander,
        alpha: float,
        delta: float,
        scope: str,
        traversal: str,
        covering: bool,
        cost_pruning: bool,
        preset: dict[int, Expansion] | None = None,
    ) -> None:
        self.sp = space
        self.expander = expander
        self.alpha = alpha
        self.delta = delta
        self.scope = scope
        self.traversal = traversal
        self.covering = covering and scope == "expanded"
        self.cost_pruning = cost_pruning and scope == "expanded"
        cap = 1 << space.m
        self.emask = np.zeros(min(cap, 1024), dtype=np.int64)
        self.eacc = np.zeros(min(cap, 1024))
        self.ecoef = np.zeros((min(cap, 1024), space.coef.shape[1]))
        self.k = 0
        self.expanded: dict[int, Expansion] = {}
        self.pruned: dict[int, str] = {}
        self.covered: set[int] = set()
        self.frontier_top: set[int] = set()
        self.frontier_bottom: set[int] = set()
        self.counts = {"checks": 0, "sandwiched": 0, "cost_pruned": 0, "covering_skips": 0}
        # Sets expanded before the run (the any-time explorer's): they take part in every
        # test from the start and, once the traversal reaches them, propagate like a set it
        # expanded itself.  None: the plain Algorithm 2.
        self.preset: set[int] = set()
        for mask, exp in (preset or {}).items():
            self._add(mask, exp)
            self.preset.add(mask)

    # -------------------------------------------------------------- expanded-set arrays
    def _add(self, mask: int, exp: Expansion) -> None:
        if self.k == self.emask.size:
            grow = self.emask.size * 2
            self.emask = np.resize(self.emask, grow)
            self.eacc = np.resize(self.eacc, grow)
            self.ecoef = np.resize(self.ecoef, (grow, self.ecoef.shape[1]))
        self.emask[self.k] = mask
        self.eacc[self.k] = exp.accuracy
        if self.cost_pruning:
            self.ecoef[self.k] = self.sp.cost_coefs([mask])[0]
        self.k += 1
        self.expanded[mask] = exp

    def _bounds(self, s: int) -> tuple[float, float, np.ndarray]:
        """Best expanded proper subset, worst expanded proper superset, subset flags."""
        if self.scope == "frontier":
            lows = [self.expanded[f].accuracy for f in self.frontier_bottom if f & s == f != s]
            highs = [self.expanded[f].accuracy for f in self.frontier_top if f & s == s != f]
            return (max(lows, default=-math.inf), min(highs, default=math.inf), None)
        em = self.emask[: self.k]
        ea = self.eacc[: self.k]
        both = em & s
        sub = both == em
        sup = both == s
        lo = float(np.max(ea, where=sub, initial=-math.inf))
        hi = float(np.min(ea, where=sup, initial=math.inf))
        return lo, hi, sub

    def _pruned(self, s: int) -> bool:
        """Apply the pruning rules to an unexpanded ``s``; record why when pruned."""
        self.counts["checks"] += 1
        if s in self.covered:
            self.counts["covering_skips"] += 1
            self.counts["sandwiched"] += 1
            self.pruned[s] = "sandwich"
            return True
        lo, hi, sub = self._bounds(s)
        if self.alpha * (lo - self.delta) >= hi - ACC_TOL:
            self.counts["sandwiched"] += 1
            self.pruned[s] = "sandwich"
            return True
        if self.cost_pruning and math.isfinite(hi) and self._cost_dominated(s, hi, sub):
            self.counts["cost_pruned"] += 1
            self.pruned[s] = "cost"
            return True
        return False

    def _cost_dominated(self, s: int, hi: float, sub: np.ndarray) -> bool:
        """Is there an expanded H, not a subset of s, with c_H <= c_s on the domain and
        alpha * (a(H) - delta) >= hi + delta?"""
        ea = self.eacc[: self.k]
        ok = (self.alpha * (ea - self.delta) >= hi + self.delta - ACC_TOL) & ~sub
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return False
        target = self.sp.cost_coefs([s])[0]
        return bool(
            cost_le_many(self.ecoef[idx], target, self.sp.n_min, self.sp.n_max, first=True).any()
        )

    def _file(self, s: int, exp: Expansion, from_top: bool) -> None:
        """Record the expansion of ``s``: arrays, frontiers and the covering marks."""
        self._add(s, exp)
        self.pruned.pop(s, None)
        sp = self.sp
        if from_top:
            self.frontier_top = (self.frontier_top | {s}) - set(_parents(s, sp.full))
        else:
            self.frontier_bottom = (self.frontier_bottom | {s}) - set(_children(s))
        if self.covering:
            self._cover(s, exp.accuracy, from_top)

    def _expand_batch(self, batch: list[int], from_top: bool) -> None:
        """Train a batch (through the executor, in any order) and file it in batch order;
        raise :class:`BudgetExhausted` after filing what finished when the budget ran out."""
        done, exhausted = self.expander.expand_batch(batch)
        for s, exp in done.items():
            self._file(s, exp, from_top)
        if exhausted:
            raise BudgetExhausted

    def _waits_on(self, s: int, batch: list[int]) -> bool:
        """Must the pending ``batch`` be trained before ``s`` is tested?

        With ``scope="expanded"`` only cost pruning looks at sets of the same size as ``s``
        (a pass's sets all have one size, so no sandwich or covering test involves a
        batch-mate); a pending ``H`` with ``c_H <= c_s`` on the domain decides the test by
        its accuracy, not yet known.  With ``scope="frontier"`` always: expanding a set
        removes its parents (children) from the top (bottom) frontier, which a batch-mate's
        test reads, so that paper-literal mode trains one set at a time.
        """
        if not batch:
            return False
        if self.scope == "frontier":
            return True
        if not self.cost_pruning:
            return False
        lo, hi, _ = self._bounds(s)
        if not math.isfinite(hi) or self.alpha * (lo - self.delta) >= hi - ACC_TOL:
            return False
        target = self.sp.cost_coefs([s])[0]
        pending = self.sp.cost_coefs(batch)
        return bool(
            cost_le_many(pending, target, self.sp.n_min, self.sp.n_max, first=True).any()
        )

    def _cover(self, s: int, acc: float, from_top: bool) -> None:
        """Covering shortcut (Property 3.4 and its inverse): mark neighbours of ``s`` that
        are certainly sandwiched, so that their test is skipped."""
        em = self.emask[: self.k]
        ea = self.eacc[: self.k]
        both = em & s
        if from_top:
            S = (both == em) & (em != s) & (self.alpha * (ea - self.delta) >= acc - ACC_TOL)
            if S.any() and int(np.bitwise_and.reduce(em[S])) == 0:
                self.covered.update(c for c in _children(s) if c not in self.expanded)
        else:
            S = (both == s) & (em != s) & (self.alpha * (acc - self.delta) >= ea - ACC_TOL)
            if S.any() and int(np.bitwise_or.reduce(em[S])) == self.sp.full:
                self.covered.update(
                    p for p in _parents(s, self.sp.full) if p not in self.expanded
                )

    # -------------------------------------------------------------- Algorithm 2
    def run(self) -> None:
        full = self.sp.full
        checked: set[int] = set()
        active_top, active_bottom = {full}, {0}
        while active_top or active_bottom:
            # top pass first (the paper's order), then the bottom pass
            next_top = self._pass(active_top, checked, True, _children)
            next_bottom = self._pass(active_bottom, checked, False, lambda s: _parents(s, full))
            active_top, active_bottom = next_top, next_bottom

    def _pass(
        self, active: set[int], checked: set[int], from_top: bool, onward: Callable
    ) -> set[int]:
        """One round from one side: test each active set in canonical order, train those
        that are not pruned as one batch, and return the sets to visit next (``onward`` of
        each expanded set, and with the complete traversal of each pruned one too).

        The active sets of a pass all have the same size (the top pass of round ``k``
        visits sets of ``m - k`` features, the bottom pass sets of ``k``), so the sandwich
        and covering tests of one never depend on another's accuracy: testing them all
        before training any decides exactly what testing and training them one by one
        decides.  Cost pruning and the frontier scope are the exceptions
        (:meth:`_waits_on`): the batch is trained early when a pending set may decide a test.
        """
        full = self.sp.full
        complete = self.traversal == "complete"
        nxt: set[int] = set()
        batch: list[int] = []

        def train() -> None:
            self._expand_batch(batch, from_top)
            for t in batch:
                nxt.update(onward(t))
            batch.clear()

        deadline = self.expander.deadline
        for s in sorted(active, key=set_key):
            if deadline is not None and time.perf_counter() >= deadline:
                raise BudgetExhausted  # a time budget also bounds the checks, not only fits
            if s in self.expanded:
                if s in self.preset:           # reached for the first time: propagate
                    self.preset.discard(s)
                    nxt.update(onward(s))
                continue
            if complete:
                if s in checked:
                    continue
                checked.add(s)
            if s != full and s != 0:
                if self._waits_on(s, batch):
                    train()
                if self._pruned(s):
                    if complete:
                        nxt.update(onward(s))
                    continue
            batch.append(s)
        if batch:
            train()
        return nxt


def _children(s: int) -> list[int]:
    out = []
    rest = s
    while rest:
        low = rest & -rest
        out.append(s ^ low)
        rest ^= low
    return out


def _parents(s: int, full: int) -> list[int]:
    out = []
    rest = full & ~s
    while rest:
        low = rest & -rest
        out.append(s | low)
        rest ^= low
    return out


def check_alpha_delta(alpha: float, delta: float) -> tuple[float, float]:
    """Validate ``alpha >= 1`` and ``delta >= 0`` (finite); return them as floats."""
    a, d = check_real(alpha, "alpha"), check_real(delta, "delta")
    if not (math.isfinite(a) and a >= 1.0):
        raise InvalidArgumentError(f"alpha must be finite and >= 1, got {alpha!r}")
    if not (math.isfinite(d) and d >= 0.0):
        raise InvalidArgumentError(f"delta must be finite and >= 0, got {delta!r}")
    return a, d


def resolve_candidate_alpha(candidate_alpha: float | str, alpha: float) -> float:
    """``candidate_alpha``: a number >= 1, or ``"same"`` for the exploration's alpha."""
    if candidate_alpha == "same":
        return alpha
    ca = check_real(candidate_alpha, "candidate_alpha")
    if not (math.isfinite(ca) and ca >= 1.0):
        raise InvalidArgumentError(
            f"candidate_alpha must be a number >= 1 or 'same', got {candidate_alpha!r}"
        )
    return ca


def explore(
    costs: Mapping[str, Any],
    learner: Any,
    alpha: float = 1.0,
    delta: float = 0.0,
    traversal: str = "complete",
    max_expansions: int | None = None,
    cache: MutableMapping | None = None,
    *,
    scope: str = "expanded",
    covering: bool = True,
    cost_pruning: bool = False,
    candidate_alpha: float | str = 1.0,
    n_min: float = 0.0,
    n_max: float = math.inf,
    executor: Any = None,
    progress: Callable[[Expansion], Any] | None = None,
    reference_size: float | None = None,
    seed_weights: Any = DEFAULT_WEIGHTS,
    seed_share: float = 0.5,
    fresh: int = 2,
    patience: int = 3,
    _deadline: float | None = None,
) -> Exploration:
    """Expand the feature-set lattice with Poly-Dom's pruning (spec 4.1) and build candidates.

    Round by round, the top pass checks the sets just below the expanded ones (starting at
    the full set), then the bottom pass the sets just above (starting at the empty set), each
    in ascending (size, bitmask) order.  A checked set is expanded unless a pruning rule
    excuses it.  The empty and the full set are always expanded, in round 1.

    Guarantee (``traversal="complete"``, ``candidate_alpha=1``, a learner whose accuracy
    obeys Axiom 3.10 with ``delta``): for every size ``n`` in ``[n_min, n_max]`` and budget
    ``B``, the best candidate ``C`` that fits satisfies ``alpha * a(C) >= a(F)`` for every
    feature set ``F`` with ``c(F, n) <= B`` (up to ``alpha * ACC_TOL``).  Every pruned set
    ``F`` is alpha-dominated by an expanded set: by the sandwich's subset ``G``
    (``c_G <= c_F`` as costs are non-negative, and ``a(F) <= a(K) + delta <=
    alpha * (a(G) - delta) + delta <= alpha * a(G)``), or by cost pruning's ``H`` below.

    *Shared atoms.*  With a :class:`polydom.CostModel` whose bundles share atoms, a set's
    cost (each atom once) is no longer the sum of its features' costs, but it stays
    *monotone*: ``G <= F`` implies ``atoms(G) <= atoms(F)`` and, the atoms' curves being
    non-negative, ``c_G(n) <= c_F(n)``.  The sandwich and covering rules use nothing else
    (``c_G <= c_F`` for the subset, accuracies for the rest); cost pruning compares the
    actual cost curves of ``H`` and ``F``, never a sum; candidate pruning compares the
    candidates' curves.  So the guarantee holds unchanged for any monotone set cost.

    **Cost pruning** (``cost_pruning=True``, beyond the paper).  A set ``F`` is also not
    expanded when some expanded set ``H`` (any set, not only a subset) has
    ``c_H(n) <= c_F(n)`` for all ``n`` in ``[n_min, n_max]`` and
    ``alpha * (a(H) - delta) >= hi(F) + delta``, where ``hi(F)`` is the smallest accuracy
    among the expanded proper supersets of ``F``.

    *Proof of soundness.*  Let ``K`` be the expanded superset with ``a(K) = hi(F)``.  By
    Axiom 3.10, ``a(F) <= a(K) + delta = hi(F) + delta <= alpha * (a(H) - delta) <=
    alpha * a(H)``.  So at every size of the domain ``H`` costs no more than ``F`` and
    ``alpha * a(H) >= a(F)``: whenever ``F`` fits a budget, ``H`` fits it too and is within
    the factor alpha.  ``H`` is expanded (never itself pruned), so the dominance does not
    chain, and expanded sets only accumulate, so the witness stays valid until the end.
    Candidate pruning with exact dominance then keeps, for every expanded set, one candidate
    at least as accurate and no more expensive.  Hence the guarantee above holds with cost
    pruning on.  (The rule is applied only with ``scope="expanded"``.)

    Parameters
    ----------
    costs : polydom.CostModel or mapping of str to CostCurve or str or coefficients
        Cost curve of each feature; the mapping's order is the lattice's feature order.
        A :class:`polydom.CostModel` with bundles makes its bundles the lattice's features
        and a set pays each of their atoms once.  Every curve must be non-negative on
        ``[n_min, n_max]``.
    learner : object with ``expand(frozenset) -> lattice.Expansion``
        The black box (see :mod:`learners`).
    alpha : float, default 1.0
        Multiplicative approximation factor (>= 1; 1 is exact).
    delta : float, default 0.0
        Tolerated violation of monotone accuracy (Axiom 3.10, Property 3.11).
    traversal : {"complete", "paper", "anytime"}, default "complete"
        "complete" checks every set once and propagates through pruned sets (makes
        Theorem 3.5 provable); "paper" stops propagation at pruned sets, as the pseudocode;
        "anytime" spends a training cap where the skyline can still improve (seed paths,
        best first, then the complete traversal if the cap allows; :mod:`lattice.anytime`),
        for 20 to 1024 features (the other two take at most 62).
    max_expansions : int or None
        Stop after this many trainings (cache hits are free); the result is then marked
        ``complete=False``.  The any-time traversal's cap.
    cache : mutable mapping of frozenset to Expansion, optional
        Earlier expansions: consulted before training; every new expansion is written into
        it as soon as it is trained.
    scope : {"expanded", "frontier"}, default "expanded"
        Sandwich dominators: every expanded set (reproduces the paper's Figure 2), or the
        paper-literal top/bottom frontiers.
    covering : bool, default True
        Use the covering shortcut (output-identical; scope "expanded" only).
    cost_pruning : bool, default False
        Also prune by cost dominance against any expanded set (see above).
    candidate_alpha : float or "same", default 1.0
        Dominance factor of candidate pruning; 1 keeps the end-to-end guarantee at alpha.
    n_min, n_max : float
        The size domain for every cost comparison.
    executor : None, str, lattice.executor.Executor or distributed.Client
        Where trainings run (see :func:`lattice.make_executor`): in-process by default,
        ``"processes:N"``, ``"dask://host:port"``, a Dask client.  Each pass's unpruned sets
        go out as one batch; the pruning decisions, the expanded sets and their order are
        the same with every executor.  An executor given as a string is closed at the end.
    progress : callable, optional
        Called with each newly trained :class:`Expansion` as it arrives (a progress bar).
    reference_size, seed_weights, seed_share, fresh, patience
        The any-time traversal's options (ignored by the others): the size costs are
        compared at (default: ``n_min``, or the middle of a finite domain), the seed paths'
        cost weights (:data:`lattice.anytime.DEFAULT_WEIGHTS`), the share of the cap the
        seeds may use, the fresh evaluations per forward step, and the steps without a
        better accuracy that end a path.

    Returns
    -------
    Exploration

    Raises
    ------
    polydom.errors.ExecutorError
        On a bad ``executor`` (before any training).

    Runtime complexity: O(2**m * E) vectorised work for E expanded sets (each of the 2**m
    sets is checked once against the expanded ones), plus E trainings, run ``workers`` at a
    time within a pass.

    Memory, and big lattices.  Nothing is allocated per set of the lattice: the expanded
    sets live in numpy arrays grown by doubling (bitmask, accuracy, cost coefficients: O(E)),
    the checked and pruned sets in a set and a dict, and a pass holds only its active sets
    and one batch.  So memory is proportional to what was *visited*: O((E + P) * (m + d))
    for P checked sets of degree-d costs.  What gets visited is the traversal's choice:
    ``"complete"`` checks every one of the 2**m sets (the guarantee needs it), so P = 2**m
    and time and memory grow with the lattice; ``"paper"`` checks only the neighbours of
    expanded sets (P <= E * m), so a lattice of 20+ features costs what is trained, not
    2**m.  Measured with :func:`lattice.progressive` under a budget of 1,000 trainings
    (``benchmarks/scale_bench.py``, tracemalloc peaks in benchmarks/RESULTS.md, section
    "Scale-out"): with m = 16 the complete traversal checks all 65,534 sets, the paper
    traversal about 3,000, and with m = 24 still about 3,000 checks in about 12 MiB.  A
    time budget (``max_seconds`` of :func:`lattice.progressive`) bounds the checks as well
    as the trainings.
    """
    alpha, delta = check_alpha_delta(alpha, delta)
    name = learner_name(learner)  # a bad name is refused before anything trains
    _check_search_options(traversal, scope, max_expansions)
    ca = resolve_candidate_alpha(candidate_alpha, alpha)
    lo, hi = check_domain(n_min, n_max)
    space = FeatureSpace(costs, lo, hi)
    if traversal != "anytime" and space.m > WORD_FEATURES:
        raise InvalidArgumentError(
            f"the {traversal} traversal takes at most {WORD_FEATURES} features, got "
            f"{space.m}: use traversal='anytime' with max_expansions")
    anytime = None
    if traversal == "anytime":
        anytime = _anytime_options(space, reference_size, seed_weights, seed_share, fresh,
                                   patience)
        if cache is None:
            cache = {}  # the coverage phase re-visits the seeds: served, never re-trained
    _check_learner_features(learner, space)
    ex = make_executor(executor)
    try:
        with ex.session(learner) as session:
            expander = Expander(
                learner, space, cache, max_expansions, _deadline, session, progress
            )
            if anytime is not None:
                run, complete = _explore_anytime(space, expander, alpha, delta, covering,
                                                 cost_pruning, max_expansions, anytime)
            else:
                run = _Explorer(
                    space, expander, alpha, delta, scope, traversal, covering, cost_pruning
                )
                complete = True
                try:
                    run.run()
                except BudgetExhausted:
                    complete = False
    finally:
        if ex is not executor:
            ex.close()
    return Exploration(
        space,
        run.expanded,
        run.pruned,
        alpha=alpha,
        delta=delta,
        candidate_alpha=ca,
        complete=complete,
        stats=_search_stats(run, expander, traversal, scope),
        learner=name,
    )


def _anytime_options(space: FeatureSpace, reference_size: Any, seed_weights: Any,
                     seed_share: Any, fresh: Any, patience: Any) -> dict[str, Any]:
    """The any-time traversal's options, checked (one-line errors naming the option)."""
    if reference_size is None:
        size = space.n_min if math.isinf(space.n_max) else 0.5 * (space.n_min + space.n_max)
    else:
        size = check_real(reference_size, "reference_size")
        if not space.n_min <= size <= space.n_max:
            raise InvalidArgumentError(
                f"reference_size must lie in the domain [{space.n_min:g}, {space.n_max:g}], "
                f"got {reference_size!r}")
    if (isinstance(seed_share, bool) or not isinstance(seed_share, (int, float))
            or not 0.0 <= seed_share <= 1.0):
        raise InvalidArgumentError(f"seed_share must be a number in [0, 1], got {seed_share!r}")
    for label, value in (("fresh", fresh), ("patience", patience)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{label} must be an integer >= 1, got {value!r}")
    return {"size": float(size), "weights": check_weights(seed_weights),
            "seed_share": float(seed_share), "fresh": fresh, "patience": patience}


class _AnytimeResult:
    """What :func:`_search_stats` and :class:`Exploration` read of a run."""

    def __init__(self, expanded, pruned, counts, covering, cost_pruning):
        self.expanded, self.pruned, self.counts = expanded, pruned, counts
        self.covering, self.cost_pruning = covering, cost_pruning


def _explore_anytime(space: FeatureSpace, expander: Expander, alpha: float, delta: float,
                     covering: bool, cost_pruning: bool, cap: int | None,
                     options: dict[str, Any]) -> tuple[_AnytimeResult, bool]:
    """Seeds, best first, then the complete traversal on what is left of the cap.

    ``complete`` is True only when the complete traversal finished (every set checked once,
    every pruned one alpha-dominated by an expanded one): then the guarantee of
    :func:`explore` holds.  Runtime complexity: the cap's trainings plus the traversal's
    checks when it runs.
    """
    run = AnytimeRun(space, expander, alpha, delta, size=options["size"],
                     weights=options["weights"], seed_share=options["seed_share"],
                     fresh=options["fresh"], patience=options["patience"],
                     cost_pruning=cost_pruning)
    run.limit = None if cap is None else max(1, math.ceil(options["seed_share"] * cap))
    try:
        run.seed()
    except Stop:
        pass
    run.counts["seed_trained"] = expander.trained
    run.limit = cap
    # The complete traversal checks all 2**m sets: it is run when the cap cannot stop it
    # (no cap, or one of at least 2**m trainings); otherwise best first spends the cap.
    cover_possible = space.m <= WORD_FEATURES and (cap is None or cap >= 1 << space.m)
    stopped = False
    try:
        run.best_first(positive_only=cover_possible)
    except Stop:
        stopped = True
    run.counts["best_first_trained"] = expander.trained - run.counts["seed_trained"]
    complete = False
    expanded, pruned = dict(run.expanded), dict(run.pruned)
    if not stopped and cover_possible:
        before = expander.trained
        cover = _Explorer(space, expander, alpha, delta, "expanded", "complete", covering,
                          cost_pruning, preset=run.expanded)
        try:
            cover.run()
            complete = True
        except BudgetExhausted:
            pass
        for mask, exp in cover.expanded.items():
            expanded.setdefault(mask, exp)
        pruned = {m: r for m, r in {**pruned, **cover.pruned}.items() if m not in expanded}
        for key in ("checks", "sandwiched", "cost_pruned", "covering_skips"):
            run.counts[key] += cover.counts[key]
        run.counts["coverage_trained"] = expander.trained - before
    run.counts["cap"] = cap
    run.counts["cache_hits_seen"] = expander.cache_hits
    expander.cache_hits = len(expanded) - expander.trained
    return _AnytimeResult(expanded, pruned, run.counts, covering, cost_pruning), complete


def _check_search_options(traversal: Any, scope: Any, max_expansions: Any) -> None:
    """Refuse an unknown traversal or scope, or a ``max_expansions`` that is not a count."""
    if traversal not in _TRAVERSALS:
        raise InvalidArgumentError(f"traversal must be one of {_TRAVERSALS}, got {traversal!r}")
    if scope not in _SCOPES:
        raise InvalidArgumentError(f"scope must be one of {_SCOPES}, got {scope!r}")
    if max_expansions is not None and (
        isinstance(max_expansions, bool) or int(max_expansions) != max_expansions
        or max_expansions < 0
    ):
        raise InvalidArgumentError(
            f"max_expansions must be a non-negative integer, got {max_expansions!r}")


def _search_stats(run: _Explorer, expander: Expander, traversal: str,
                  scope: str) -> dict[str, Any]:
    """What a search did: sets expanded and trained, cache hits, fit time, rule counts."""
    return {
        "expanded": len(run.expanded),
        "trained": expander.trained,
        "cache_hits": expander.cache_hits,
        "fit_seconds": expander.fit_seconds,
        **run.counts,
        "traversal": traversal,
        "scope": scope,
        "covering": run.covering,
        "cost_pruning": run.cost_pruning,
    }


def _check_learner_features(learner: Any, space: FeatureSpace) -> None:
    """When the learner declares its features, they must be exactly the costed ones."""
    get = getattr(learner, "feature_columns", None)
    if get is None:
        return
    names = set(get())
    if names != set(space.names):
        raise InvalidArgumentError(
            f"costs name features {sorted(space.names)!r} but the learner has "
            f"{sorted(names)!r}"
        )
