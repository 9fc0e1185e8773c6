"""The any-time explorer: good feature sets at every budget under a training cap (20-1000 features).

The complete traversal (:func:`lattice.explore`) proves its guarantee by checking all ``2**m``
sets; with 20+ features and a cap on trainings it spends the cap near the top and the bottom
of the lattice and serves poor sets in between.  This explorer spends the cap where the
skyline (best accuracy per cost) can still improve, in three phases:

1. **Seeds: greedy forward paths** at several cost weights.  The empty set, the full set and
   every single feature are trained; then, for each weight ``lam``, a forward path adds one
   feature at a time, the one maximising ``gain - lam * marginal cost`` (``lam = 0``:
   Greedy-Acc, scikit-learn's ``SequentialFeatureSelector``'s rule; ``"ratio"``: gain per
   unit of marginal cost).  Gains are evaluated *lazily* (Minoux's accelerated greedy): each
   feature keeps the gain it last showed, the stalest best ones are re-trained on the current
   prefix until the best fresh gain beats every stale one (at least ``fresh`` candidates per
   step), so a step trains a handful of sets instead of ``m``.  A path ends at the full set,
   after ``patience`` steps without a better accuracy, or when its share of the cap is spent.
   Paths of different weights share trained sets (the memo), so equal paths cost nothing.
2. **Best first.**  The rest of the cap goes to the neighbours of the skyline's sets (one
   feature added, or one removed), highest estimated improvement first: estimated accuracy
   (the set's accuracy plus the feature's last gain, or minus it) above the skyline's at that
   cost.  A set is never trained when the sandwich rule (an expanded subset ``G`` and
   superset ``K`` with ``alpha * (a(G) - delta) >= a(K)``) or the cost rule (an expanded
   ``H`` no dearer on the whole domain with ``alpha * (a(H) - delta) >= hi + delta``) excuses
   it: both are the complete traversal's sound rules (see :func:`lattice.explore`), so a
   pruned set is alpha-dominated by an expanded one.
3. **Coverage.**  When no cap can stop it (no cap, or one of at least ``2**m`` trainings),
   best first stops once no estimate beats the skyline and the complete traversal runs with
   everything trained so far as expanded sets (nothing is trained twice): the result is
   ``complete`` and carries the complete traversal's guarantee, and its expanded sets
   include the complete traversal's, so the index is at least as good as
   :func:`lattice.explore`'s.  Under a smaller cap best first spends all of it instead
   (least negative estimate first once none is positive).

What holds under a cap.  The result is ``complete=False`` and alpha is not guaranteed.  What
*is* proved is an upper bound per budget from the expansions made:
:func:`lattice.cap_bound` (Axiom 3.10 with ``delta``: ``a(F) <= a(K) + delta`` for every
expanded superset ``K``).

Runtime complexity: the trainings (at most the cap) plus O(E * m) bookkeeping per training for
E expanded sets (sandwich and skyline checks are vectorised over the expanded sets).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lattice.expansion import Expansion
from lattice.feature_space import Expander, FeatureSpace
from polydom.curves.cost_curve import CostCurve
from polydom.curves.poly import ACC_TOL
from polydom.errors import InvalidArgumentError

__all__ = ["DEFAULT_WEIGHTS", "AnytimeRun", "Stop", "cap_bound", "check_weights"]

#: Cost weights of the seed paths: 0 (accuracy gain first), gain per unit cost, and two
#: weights in accuracy per median feature cost.
DEFAULT_WEIGHTS: tuple = (0.0, "ratio", 0.01, 0.05)


def check_weights(weights: Any) -> tuple:
    """The seed paths' cost weights: numbers >= 0 (``inf`` allowed) or ``"ratio"``."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
        raise InvalidArgumentError(
            f"weights must be a non-empty sequence of numbers >= 0 or 'ratio', got {weights!r}")
    out = []
    for w in weights:
        if w == "ratio":
            out.append("ratio")
            continue
        if isinstance(w, bool) or not isinstance(w, (int, float)) or math.isnan(w) or w < 0:
            raise InvalidArgumentError(
                f"weights must be numbers >= 0 (inf allowed) or 'ratio', got {w!r}")
        out.append(float(w))
    return tuple(out)


class Stop(Exception):
    """The cap (or the phase's share of it) is spent."""


class AnytimeRun:
    """State of one any-time exploration (sets as Python-integer masks).

    Attributes
    ----------
    expanded : dict of int to Expansion
        In expansion order.
    pruned : dict of int to str
        Sets the best-first phase skipped, with the rule (``"sandwich"`` or ``"cost"``).
    counts : dict
        ``checks``, ``sandwiched``, ``cost_pruned``, ``covering_skips`` (the complete
        traversal's names) and per phase the trainings: ``seed_trained``,
        ``best_first_trained``, ``coverage_trained``.
    """

    def __init__(
        self,
        space: FeatureSpace,
        expander: Expander,
        alpha: float,
        delta: float,
        *,
        size: float,
        weights: tuple,
        seed_share: float,
        fresh: int,
        patience: int,
        cost_pruning: bool,
    ) -> None:
        self.space = space
        self.expander = expander
        self.alpha, self.delta = alpha, delta
        self.size = size
        self.weights = weights
        self.seed_share = seed_share
        self.fresh = fresh
        self.patience = patience
        self.cost_pruning = cost_pruning
        self.expanded: dict[int, Expansion] = {}
        self.pruned: dict[int, str] = {}
        self.counts = {"checks": 0, "sandwiched": 0, "cost_pruned": 0, "covering_skips": 0,
                       "seed_trained": 0, "best_first_trained": 0, "coverage_trained": 0,
                       "seed_paths": 0}
        m = space.m
        self._unit = np.array([space.cost(1 << i)(size) for i in range(m)], dtype=np.float64)
        # The expanded sets as arrays grown by doubling: 0/1 rows, accuracies, reference costs.
        self._n = 0
        self._bits = np.zeros((16, m), dtype=bool)
        self._acc = np.zeros(16)
        self._cost = np.zeros(16)
        self._coef: list[np.ndarray] = []   # cost coefficients (domain checks)
        self._costs: dict[int, float] = {}  # memo of reference costs
        #: Last measured gain of adding each feature (to any prefix).
        self.gain = np.zeros(m)
        self.limit: int | None = None      # trainings allowed in the current phase

    # ------------------------------------------------------------------ bookkeeping
    @property
    def trained(self) -> int:
        return self.expander.trained

    def _cost_at(self, mask: int) -> float:
        """Cost of a set at the reference size (memoised)."""
        c = self._costs.get(mask)
        if c is None:
            if self.space.shared:
                c = float(self.space.cost(mask)(self.size))
            else:
                c = float(self._unit[self.space.bits([mask])[0].astype(bool)].sum())
            self._costs[mask] = c
        return c

    def _file(self, mask: int, exp: Expansion) -> None:
        if self._n == len(self._acc):
            grow = len(self._acc)
            self._bits = np.vstack([self._bits, np.zeros_like(self._bits[:grow])])
            self._acc = np.concatenate([self._acc, np.zeros(grow)])
            self._cost = np.concatenate([self._cost, np.zeros(grow)])
        self.expanded[mask] = exp
        self._bits[self._n] = self.space.bits([mask])[0].astype(bool)
        self._acc[self._n] = float(exp.accuracy)
        self._cost[self._n] = self._cost_at(mask)
        self._coef.append(self.space.cost_coefs([mask])[0])
        self._n += 1
        self.pruned.pop(mask, None)

    def accuracy(self, mask: int) -> float:
        """The accuracy of a set, training it if it is new (raises :class:`Stop` at the cap)."""
        return self.train([mask])[mask]

    def train(self, masks: list[int]) -> dict[int, float]:
        """Accuracies of ``masks``, the new ones trained as one batch (within the cap)."""
        out = {m: self.expanded[m].accuracy for m in masks if m in self.expanded}
        todo = [m for m in dict.fromkeys(masks) if m not in self.expanded]
        if self.limit is not None:
            room = self.limit - self.trained
            if room <= 0 and todo:
                raise Stop
            todo = todo[:max(room, 0)] if len(todo) > room else todo
        if todo:
            done, exhausted = self.expander.expand_batch(todo)
            for m in todo:
                if m in done:
                    self._file(m, done[m])
                    out[m] = done[m].accuracy
            if exhausted or len(done) < len(todo):
                raise Stop
        missing = [m for m in masks if m not in out]
        if missing:
            raise Stop
        return out

    # ------------------------------------------------------------------ pruning rules
    def _arrays(self):
        n = self._n
        return self._bits[:n], self._acc[:n], self._cost[:n]

    def excused(self, mask: int) -> str | None:
        """``"sandwich"`` or ``"cost"`` when a sound rule excuses ``mask``, else None.

        Sandwich: an expanded proper subset ``G`` and superset ``K`` with
        ``alpha * (a(G) - delta) >= a(K)`` (then ``a(F) <= alpha * a(G)`` and ``c_G <= c_F``).
        Cost: an expanded ``H`` with ``c_H <= c_F`` on the domain and
        ``alpha * (a(H) - delta) >= hi(F) + delta``, ``hi`` the worst expanded superset.
        """
        self.counts["checks"] += 1
        bits, acc, _ = self._arrays()
        row = self.space.bits([mask])[0].astype(bool)
        inside = ~(bits & ~row).any(axis=1)          # expanded sets inside F
        contains = ~(row & ~bits).any(axis=1)        # expanded sets containing F
        size = int(row.sum())
        sizes = bits.sum(axis=1)
        sub = inside & (sizes < size)
        sup = contains & (sizes > size)
        lo = acc[sub].max() if sub.any() else -math.inf
        hi = acc[sup].min() if sup.any() else math.inf
        if self.alpha * (lo - self.delta) >= hi - ACC_TOL:
            self.counts["sandwiched"] += 1
            return "sandwich"
        if self.cost_pruning and math.isfinite(hi):
            ok = np.flatnonzero(self.alpha * (acc - self.delta) >= hi + self.delta - ACC_TOL)
            target = self.space.cost(mask)
            lo_n, hi_n = self.space.n_min, self.space.n_max
            for j in ok:
                if CostCurve(self._coef[j]).le(target, lo_n, hi_n):
                    self.counts["cost_pruned"] += 1
                    return "cost"
        return None

    def skyline_at(self, cost: float) -> float:
        """Best expanded accuracy at reference cost ``<= cost``."""
        _, acc, costs = self._arrays()
        fit = costs <= cost * (1 + 1e-12) + 1e-12
        return float(acc[fit].max()) if fit.any() else -math.inf

    # ------------------------------------------------------------------ phase 1
    def _marginal(self, cur: int, i: int) -> float:
        return self._cost_at(cur | 1 << i) - self._cost_at(cur)

    def _score(self, weight, gain: float, marginal: float) -> float:
        if weight == "ratio":
            return gain / max(marginal, 1e-12)
        if math.isinf(weight):
            return -marginal + 1e-9 * gain
        return gain - weight * marginal

    def seed(self) -> None:
        """Empty set, full set, every single feature; then one lazy forward path per weight."""
        sp = self.space
        base = self.train([0])[0]
        self.train([sp.full])
        singles = self.train([1 << i for i in range(sp.m)])
        for i in range(sp.m):
            self.gain[i] = singles[1 << i] - base
        scale = float(np.median(self._unit[self._unit > 0])) if (self._unit > 0).any() else 1.0
        for w in self.weights:
            weight = w if w == "ratio" or math.isinf(w) else w / scale
            self.counts["seed_paths"] += 1
            self._path(weight)

    def _path(self, weight) -> None:
        """One lazy forward path from the empty set.

        Each feature keeps the gain it showed on the latest prefix it was tried on (the
        singletons' gains to start).  A step pops features by their (stale) score, re-trains
        a stale one on the current prefix and pushes it back, and sets a fresh one aside,
        until ``fresh`` fresh ones are aside: the first of them is taken (it scored at least
        as well as every stale score left, which overestimates when gains diminish).
        """
        sp = self.space
        cur, acc_cur, best, idle, step = 0, self.expanded[0].accuracy, -math.inf, 0, 0
        gain = {i: float(self.gain[i]) for i in range(sp.m)}   # stale gains of this path
        fresh_at = dict.fromkeys(range(sp.m), 0)              # step each gain was measured at
        while cur != sp.full and idle < self.patience:
            rem = [i for i in range(sp.m) if not cur >> i & 1]
            marg = {i: self._marginal(cur, i) for i in rem}
            heap = [(-self._score(weight, gain[i], marg[i]), marg[i], i) for i in rem]
            heapq.heapify(heap)
            aside: list[tuple[float, float, int]] = []
            while heap and len(aside) < min(self.fresh, len(rem)):
                entry = heapq.heappop(heap)
                i = entry[2]
                if fresh_at[i] == step:
                    aside.append(entry)
                    continue
                gain[i] = self.accuracy(cur | 1 << i) - acc_cur
                self.gain[i] = gain[i]
                fresh_at[i] = step
                heapq.heappush(heap, (-self._score(weight, gain[i], marg[i]), marg[i], i))
            pick = min(aside)[2]
            cur |= 1 << pick
            step += 1
            acc_cur = self.accuracy(cur)
            if acc_cur > best + ACC_TOL:
                best, idle = acc_cur, 0
            else:
                idle += 1

    # ------------------------------------------------------------------ phase 2
    def _neighbours(self, mask: int) -> list[tuple[float, int]]:
        """(estimated accuracy, set) of the sets one feature away from an expanded set."""
        a = self.expanded[mask].accuracy
        out = []
        for i in range(self.space.m):
            bit = 1 << i
            nb = mask ^ bit
            if nb in self.expanded or nb in self.pruned:
                continue
            est = a + max(self.gain[i], 0.0) if not mask & bit else a - max(self.gain[i], 0.0)
            out.append((est, nb))
        return out

    def _on_skyline(self, mask: int) -> bool:
        a = self.expanded[mask].accuracy
        return a >= self.skyline_at(self._cost_at(mask)) - ACC_TOL

    def best_first(self, positive_only: bool = True) -> None:
        """Train the neighbours of skyline sets, largest estimated improvement first.

        An entry's potential is its estimated accuracy minus the skyline's accuracy at its
        cost; the skyline only rises, so a popped entry is re-scored and pushed back when it
        fell below the next one.  With ``positive_only`` it stops when no entry has a
        positive potential (the coverage phase takes over); else it goes on, least negative
        first, until the cap or until no neighbour of a skyline set is left.
        """
        heap: list[tuple[float, int, float, int]] = []
        tick = 0

        def push(mask: int) -> None:
            nonlocal tick
            for est, nb in self._neighbours(mask):
                tick += 1
                heapq.heappush(heap, (-(est - self.skyline_at(self._cost_at(nb))), tick, est, nb))

        for mask in list(self.expanded):
            if self._on_skyline(mask):
                push(mask)
        while heap:
            _, _, est, nb = heapq.heappop(heap)
            if nb in self.expanded or nb in self.pruned:
                continue
            now = est - self.skyline_at(self._cost_at(nb))
            if heap and now < -heap[0][0] - 1e-12:
                tick += 1
                heapq.heappush(heap, (-now, tick, est, nb))
                continue
            if now <= 0.0 and positive_only:
                return
            rule = self.excused(nb)
            if rule is not None:
                self.pruned[nb] = rule
                continue
            self.accuracy(nb)
            if self._on_skyline(nb):
                push(nb)




def cap_bound(exploration: Any, size: float, budget: float) -> float:
    """An upper bound on the accuracy of *every* feature set that fits ``budget`` at ``size``,
    proved from the expansions made (any exploration, capped or not).

    Axiom 3.10 with the exploration's ``delta`` says ``a(F) <= a(K) + delta`` for every
    expanded ``K`` containing ``F``; so ``a(F) <= hi(F) = min over expanded K ⊇ F of
    a(K) + delta``.  For a value ``v``, let ``L_v`` be the expanded sets with
    ``a(K) + delta < v``: a set with ``hi(F) >= v`` lies inside none of them, i.e. holds a
    feature outside each.  The cheapest such set is a weighted hitting set of the
    complements, found exactly by a small integer program (``scipy.optimize.milp``, HiGHS;
    a feature's atoms are paid once when bundles share them).  The bound is the largest
    ``v`` among the ``a(K) + delta`` whose cheapest hitting set fits the budget (the cost
    grows with ``v``: a binary search).

    *Proof.*  Take any ``F`` with ``c_F(size) <= budget`` and let ``v = hi(F)`` (a value
    ``a(K) + delta``; the full set is expanded, so ``hi`` is finite).  ``F`` lies in no set of
    ``L_v``, so it is a hitting set of their complements and the cheapest one costs at most
    ``c_F(size) <= budget``; hence the bound is ``>= v = hi(F) >= a(F)``.  With the full set
    not expanded nothing is bounded and 1.0 is returned.

    The bound minus the index's accuracy at ``(size, budget)`` is what a capped run
    certifies: no set the cap left untrained can beat the served one by more (for a learner
    obeying the axiom).  It is exact on what was expanded, loose where few supersets were.

    Runtime complexity: O(log E) integer programs over ``m`` binaries (plus one per atom
    with shared atoms) and up to E covering rows, for E expanded sets.
    """
    from scipy.optimize import LinearConstraint, milp
    from scipy.sparse import csr_matrix

    from polydom.curves.domain import check_budget, check_size

    space = exploration._space
    n = check_size(size, space.n_min, space.n_max)
    b = check_budget(budget)
    masks = list(exploration._masks)
    accs = [e.accuracy for e in exploration.expanded.values()]
    d = exploration.delta
    if space.full not in set(masks):
        return 1.0
    bits = space.bits(masks).astype(bool)
    m = space.m
    empty = float(space.cost(0)(n))
    # With shared units a set pays each unit once (its start and steps among them): the
    # integer program counts units only, which never exceeds a set's true cost (sound).
    base = 0.0 if space.shared else empty
    if space.shared:
        inc = np.asarray(space._incidence, dtype=bool)
        unit = np.array([float(np.polynomial.polynomial.polyval(n, row)) for row in space.coef])
        n_var = m + inc.shape[1]
        cost = np.concatenate([np.zeros(m), unit])
        fi, ui = np.nonzero(inc)
        link = csr_matrix((np.concatenate([-np.ones(fi.size), np.ones(fi.size)]),
                           (np.repeat(np.arange(fi.size), 2),
                            np.ravel(np.column_stack([fi, m + ui])))), shape=(fi.size, n_var))
    else:
        cost = np.array([float(space.cost(1 << i)(n)) - base for i in range(m)])
        n_var, link = m, None
    values = sorted({a + d for a in accs})
    order = np.argsort(accs)
    sorted_acc = np.asarray(accs)[order]

    def cheapest(v: float) -> float:
        rows = bits[order[: int(np.searchsorted(sorted_acc + d, v, side="left"))]]
        if not rows.size:
            return empty
        outside = ~rows
        if not outside.any(axis=1).all():
            return math.inf                      # the full set is below v: nothing hits it
        a = np.zeros((len(outside), n_var))
        a[:, :m] = outside
        cons = [LinearConstraint(a, lb=1.0, ub=np.inf)]
        if link is not None:
            cons.append(LinearConstraint(link, lb=0.0, ub=np.inf))
        res = milp(cost, constraints=cons, integrality=np.ones(n_var),
                   bounds=(np.zeros(n_var), np.ones(n_var)))
        return base + float(res.fun) if res.success else math.inf

    lo, hi = 0, len(values) - 1          # values[lo] always fits: v = min accuracy + delta
    if cheapest(values[0]) > b * (1 + 1e-12) + 1e-12:
        return -math.inf                 # no set fits the budget at all
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cheapest(values[mid]) <= b * (1 + 1e-12) + 1e-12:
            lo = mid
        else:
            hi = mid - 1
    return float(min(1.0, values[lo]))
