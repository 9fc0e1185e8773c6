"""Brute-force oracles for the lattice: every one of the 2**m feature sets, no pruning."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import strategies as st

import polydom

ACC_TOL = 1e-12


def names(m: int) -> list[str]:
    return [f"f{i + 1}" for i in range(m)]


def all_sets(m: int) -> list[frozenset]:
    fs = names(m)
    return [frozenset(c) for r in range(m + 1) for c in itertools.combinations(fs, r)]


def set_cost(costs: dict, features: frozenset) -> polydom.CostCurve:
    order = sorted(features, key=lambda f: list(costs).index(f))
    return polydom.CostCurve.total(polydom.CostCurve.coerce(costs[f]) for f in order)


class Optimum:
    """Vectorised brute force: best accuracy of all sets that fit, per (size, budget)."""

    def __init__(self, acc: dict, costs: dict) -> None:
        self.sets = list(acc)
        self.acc = np.array([acc[s] for s in self.sets])
        self.curves = [set_cost(costs, s) for s in self.sets]
        self._at: dict = {}

    def costs_at(self, size: float) -> np.ndarray:
        if size not in self._at:
            self._at[size] = np.array([c(size) for c in self.curves])
        return self._at[size]

    def __call__(self, size: float, budget: float) -> float:
        fits = self.costs_at(size) <= budget
        return float(self.acc[fits].max()) if fits.any() else -math.inf

    def grid(self, sizes) -> list[tuple[float, float]]:
        """(size, budget) pairs: budgets at every set's cost there, and just around it."""
        out = []
        for n in sizes:
            for v in np.unique(self.costs_at(float(n))):
                for b in (v, v * (1 + 1e-9) + 1e-9, max(v * (1 - 1e-9) - 1e-9, 0.0)):
                    out.append((float(n), float(b)))
            out.append((float(n), 0.0))
        return out


def violation(acc: dict) -> float:
    """Largest a(G) - a(F) over G ⊊ F (0 for a monotone table)."""
    worst = 0.0
    for g, ag in acc.items():
        for f, af in acc.items():
            if g < f:
                worst = max(worst, ag - af)
    return worst


def sandwiched_by_pair(acc: dict, alpha: float, delta: float) -> set:
    """Sets F with some G ⊊ F ⊊ K in the whole lattice and alpha * (a(G) - delta) >= a(K)."""
    out = set()
    items = list(acc.items())
    for f, _ in items:
        lo = max((a for g, a in items if g < f), default=-math.inf)
        hi = min((a for k, a in items if f < k), default=math.inf)
        if alpha * (lo - delta) >= hi - ACC_TOL:
            out.add(f)
    return out


def skyline_at(acc: dict, costs: dict, size: float) -> set:
    """Brute-force n-skyline: sorted by cost, keep strictly better accuracies.  Costs are
    compared to 12 significant digits: sums of the same curves in another order differ in
    the last bit, and the library treats such costs as equal (its rounding tolerance)."""
    rows = sorted(
        (float(f"{set_cost(costs, fs)(size):.12g}"), -a, sorted(fs), fs) for fs, a in acc.items()
    )
    best, out = -math.inf, set()
    for _, neg, _, fs in rows:
        if -neg > best:
            out.add(fs)
            best = -neg
    return out


# ---------------------------------------------------------------------------- strategies
@st.composite
def accuracy_tables(draw, m: int, delta: float = 0.0):
    """Accuracy tables over all subsets of m features, quantised to 0.01 (ties, plateaus),
    monotone, or monotone up to ``delta`` when ``delta > 0``."""
    kind = draw(st.sampled_from(["cf1", "cf2", "cfinf", "plateau", "family"]))
    fs = names(m)
    sets = all_sets(m)
    single = {f: draw(st.sampled_from([0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8])) for f in fs}
    acc: dict = {}
    if kind.startswith("cf"):
        k = {"cf1": 1, "cf2": 2, "cfinf": m}[kind]
        for s in sets:
            top = sorted((single[f] for f in s), reverse=True)[:k]
            acc[s] = 1.0 - float(np.prod([1.0 - a for a in top])) if s else 0.5
    elif kind == "plateau":
        for s in sets:
            base = max((acc[s - {f}] for f in s), default=0.5)
            acc[s] = min(1.0, base + draw(st.sampled_from([0.0, 0.0, 0.01, 0.1])))
    else:
        fams = draw(st.lists(st.frozensets(st.sampled_from(fs), min_size=1), min_size=1,
                             max_size=4))
        vals = [draw(st.sampled_from([0.6, 0.7, 0.75, 0.8, 0.9])) for _ in fams]
        for s in sets:
            acc[s] = max([0.5, *[v for fam, v in zip(fams, vals, strict=True) if fam <= s]])
    acc = {s: round(a, 2) for s, a in acc.items()}
    if delta > 0.0:
        half = delta / 2.0
        noise = draw(st.lists(st.sampled_from([-half, 0.0, half]), min_size=len(sets),
                              max_size=len(sets)))
        acc = {s: min(1.0, max(0.0, a + e)) for (s, a), e in zip(acc.items(), noise, strict=True)}
    return acc


@st.composite
def cost_tables(draw, m: int, ints: bool | None = None):
    """Per-feature polynomials of degree <= 3 with non-negative coefficients; sometimes
    duplicated curves, sometimes small integers (exact multi-crossings; always with
    ``ints=True``: set costs are then exact in any summation order)."""
    fs = names(m)
    ints = draw(st.booleans()) if ints is None else ints
    coef = st.integers(0, 5).map(float) if ints else st.sampled_from([0.0, 0.3, 1.0, 2.5, 7.0])
    costs = {}
    for f in fs:
        if costs and draw(st.integers(0, 4)) == 0:
            costs[f] = costs[draw(st.sampled_from(sorted(costs)))]
        else:
            costs[f] = polydom.CostCurve(draw(st.lists(coef, min_size=1, max_size=4)))
    return costs


@st.composite
def instances(draw, max_m: int = 6, delta: float = 0.0, ints: bool | None = None):
    m = draw(st.integers(1, max_m))
    return draw(accuracy_tables(m, delta)), draw(cost_tables(m, ints))


# ---------------------------------------------------------------------------- Greedy oracle
GREEDY_TOL = 1e-9


def _lexmin(options: list, keys, tol: float = GREEDY_TOL) -> list:
    """Options minimal on each key in turn, ties within ``tol`` (relative) kept together."""
    for key in keys:
        best = min(key(o) for o in options)
        options = [o for o in options if key(o) <= best + tol * max(1.0, abs(best))]
    return options


def greedy_choices(acc: dict, costs, size: float, lam: float, cur: frozenset,
                   cost_of=None) -> list:
    """Every feature Greedy may add to ``cur`` (spec 4.5, written from the paper's
    Algorithm 4, not from the library): the largest ``gain - lam * marginal cost`` at
    ``size``; ties to the smaller marginal cost, then the larger gain.  ``lam = inf``: the
    cheapest feature, ties to the larger gain.  Near-ties (GREEDY_TOL) are decided both
    ways: the choice with exact comparisons and the one with tolerant ones are allowed.
    The marginal cost is ``c(cur + f) - c(cur)``, set costs from ``cost_of(set)`` (default:
    the sum of the features' curves of ``costs``, a mapping; with shared atoms, an oracle
    that pays each atom once, and ``costs`` any iterable of the feature names)."""
    if cost_of is None:
        def cost_of(s):
            return set_cost(costs, s)
    base_acc = acc[cur]
    base_cost = cost_of(cur)(size)
    rows = []
    for f in costs:
        if f in cur:
            continue
        gain = acc[cur | {f}] - base_acc
        marginal = cost_of(cur | {f})(size) - base_cost
        rows.append((f, gain, marginal))
    if math.isinf(lam):
        keys = [lambda r: r[2], lambda r: -r[1]]
    else:
        keys = [lambda r: -(r[1] - lam * r[2]), lambda r: r[2], lambda r: -r[1]]
    # a near-tie on the score may fall either way by rounding: the choice of the exact
    # comparison (what the same floats give) and of the tolerant one are both allowed
    exact = [r[0] for r in _lexmin(rows, keys, 0.0)]
    near = [r[0] for r in _lexmin(rows, keys)]
    return near + [f for f in exact if f not in near]


def check_greedy_chain(acc: dict, costs, size: float, lam: float, chain: list,
                       cost_of=None) -> None:
    """Assert that ``chain`` (nested sets, one feature added per step) is a Greedy chain
    (``costs`` and ``cost_of`` as for :func:`greedy_choices`)."""
    cur = frozenset()
    assert len(chain) == len(costs)
    for nxt in chain:
        added = nxt - cur
        assert len(added) == 1 and cur < nxt, (cur, nxt)
        allowed = greedy_choices(acc, costs, size, lam, cur, cost_of)
        assert next(iter(added)) in allowed, (lam, sorted(cur), sorted(added), allowed)
        cur = nxt


@st.composite
def wide_instances(draw, max_m: int = 8):
    """Wider instances: up to ``max_m`` features (256 sets at 8), continuous accuracies
    (a noisy-OR of continuous single-feature accuracies, monotone), and coefficients spread
    over twelve orders of magnitude."""
    m = draw(st.integers(1, max_m))
    fs = names(m)
    single = {f: draw(st.floats(0.5, 0.99)) for f in fs}
    acc = {s: 1.0 - float(np.prod([1.0 - single[f] for f in s])) if s else 0.5
           for s in all_sets(m)}
    mags = st.sampled_from([0.0, 1e-6, 1e-3, 1.0, 1e3, 1e6])
    costs = {
        f: polydom.CostCurve([draw(mags) * draw(st.floats(1.0, 10.0))
                              for _ in range(draw(st.integers(1, 4)))])
        for f in fs
    }
    return acc, costs


def lattice_order(costs: dict, features: frozenset) -> tuple[int, int]:
    """The lattice's canonical order of a set: (size, bitmask in the costs' feature order)."""
    order = list(costs)
    return len(features), sum(1 << order.index(f) for f in features)


def greedy_skyline(acc: dict, costs: dict, size: float, lambdas, sequences: dict) -> list:
    """Greedy's skyline at ``size`` (spec 4.5), from the chains and the true accuracies:
    rows ``(cost, accuracy, lambda, prefix length, set)`` of the empty set and every set of
    every chain, a set keeping the first lambda (in the given order) whose chain holds it
    (the empty set: the first lambda, length 0); a set is on the skyline when every set
    that is cheaper, or as cheap and more accurate, or as cheap, as accurate and earlier
    in the lattice order, is strictly less accurate.  Costs must be exact (integers)."""
    origin = {frozenset(): (lambdas[0], 0)}
    for lam in lambdas:
        for pos, s in enumerate(sequences[lam], start=1):
            if s not in origin:
                origin[s] = (lam, pos)
    cost = {s: set_cost(costs, s)(size) for s in origin}

    def before(t, s):
        return (cost[t], -acc[t], lattice_order(costs, t)) < (cost[s], -acc[s],
                                                              lattice_order(costs, s))

    sky = [s for s in origin if all(acc[t] < acc[s] for t in origin if before(t, s))]
    sky.sort(key=lambda s: cost[s])
    return [(cost[s], acc[s], *origin[s], s) for s in sky]


def greedy_retrieve(acc: dict, costs: dict, n0: float, lambdas, sequences: dict,
                    size: float, budget: float) -> frozenset:
    """Any-time retrieval (spec 4.5): the most accurate skyline set whose cost at ``n0``
    is within ``budget`` names the chain (the cheapest skyline row when none is); the
    answer is that chain's longest prefix whose cost at ``size`` is within ``budget``."""
    sky = greedy_skyline(acc, costs, n0, lambdas, sequences)
    fitting = [row for row in sky if row[0] <= budget] or sky[:1]
    lam = fitting[-1][2]
    best = frozenset()
    for s in sequences[lam]:
        if set_cost(costs, s)(size) > budget:
            break
        best = s
    return best
