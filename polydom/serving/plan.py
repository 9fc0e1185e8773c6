"""Workload budgets: the model (or cascade) per item size that maximises expected accuracy
while the expected cost per item over a size distribution stays within a budget.

Users budget a workload (items of many sizes per hour), not one item at a time: a plan may
spend more on the sizes where a dearer model gains much and less where it gains little, as
long as the mean cost per item stays within the budget.  :func:`plan_workload` solves this
multiple-choice knapsack over the index's candidates; :func:`uniform_plan` is the baseline
that gives every item the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_budget, check_sizes
from polydom.errors import InvalidArgumentError
from polydom.index.table import SkylineTable

__all__ = ["PlanRow", "WorkloadPlan", "per_item_budget", "plan_workload", "uniform_plan"]

#: Relative slack on the budget for floating-point sums.
_REL = 1e-12


@dataclass(frozen=True)
class PlanRow:
    """One bin of sizes of a plan and the candidate it serves them with.

    Attributes
    ----------
    n_lo, n_hi : float
        Smallest and largest size of the bin (equal for a single size).
    weight : float
        Probability of the bin's sizes under the workload (the rows' weights sum to 1).
    key : hashable
        Key of the chosen candidate.
    accuracy : float
        Its accuracy.
    cost : float
        Its mean cost over the bin's sizes (weighted): the bin's expected cost per item.
    budget : float
        The per-item budget to serve the bin with: the chosen candidate's largest cost at
        the bin's sizes (a lookup at any of them with this budget returns a model at least
        as accurate).
    candidate : Candidate
        The chosen candidate.
    """

    n_lo: float
    n_hi: float
    weight: float
    key: Any
    accuracy: float
    cost: float
    budget: float
    candidate: Candidate = field(repr=False)


@dataclass(frozen=True)
class WorkloadPlan:
    """A model per bin of sizes, with the workload's expected accuracy and cost per item.

    Attributes
    ----------
    rows : list of PlanRow
        One per bin, by size.
    budget : float
        Mean cost per item allowed.
    expected_accuracy : float
        ``sum_j weight_j * accuracy_j``.
    expected_cost : float
        ``sum_j weight_j * cost_j`` (never above ``budget``).
    method : str
        ``"exact"`` (Pareto dynamic programme), ``"lagrangian"`` or ``"uniform"``.
    gap : float
        Upper bound on how much expected accuracy the optimum has over this plan (0 when
        exact; for the uniform baseline NaN).
    least_cost : float
        Expected cost per item of the cheapest plan (the cheapest candidate in every bin):
        the smallest feasible budget.
    full_cost : float
        Expected cost per item of the most accurate plan (the most accurate candidate in
        every bin): no larger budget helps.
    """

    rows: list[PlanRow]
    budget: float
    expected_accuracy: float
    expected_cost: float
    method: str
    gap: float
    least_cost: float = math.nan
    full_cost: float = math.nan

    def row_for(self, size: float) -> PlanRow:
        """The bin of ``size``: the last row with ``n_lo <= size`` (the first row below it).

        Runtime complexity: O(log bins).
        """
        los = [r.n_lo for r in self.rows]
        j = max(0, int(np.searchsorted(los, float(size), side="right")) - 1)
        return self.rows[j]

    def candidate_for(self, size: float) -> Candidate:
        """The candidate the plan serves ``size`` with (its bin's)."""
        return self.row_for(size).candidate

    def table(self, limit: int = 0) -> list[list[Any]]:
        """Rows for printing: n_lo, n_hi, weight, candidate, accuracy, mean cost, budget."""
        rows = self.rows if limit <= 0 else self.rows[:limit]
        return [[r.n_lo, r.n_hi, r.weight, str(r.key), r.accuracy, r.cost, r.budget]
                for r in rows]


def per_item_budget(cost_per_hour: float, rate: float) -> float:
    """Mean cost per item of a budget per hour at ``rate`` items per hour.

    >>> per_item_budget(3600.0, 7200.0)
    0.5

    Raises
    ------
    ValueError
        Naming ``cost_per_hour`` (negative, NaN, inf) or ``rate`` (not > 0, inf).
    """
    cost = check_budget(cost_per_hour)
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"rate must be a number of items per hour, got {rate!r}") from None
    if not (math.isfinite(r) and r > 0):
        raise InvalidArgumentError(f"rate must be finite and > 0 items per hour, got {rate!r}")
    return cost / r


def _table(index: Any) -> SkylineTable:
    table = getattr(index, "table", index)
    if not isinstance(table, SkylineTable):
        raise InvalidArgumentError(f"index must be a polydom.Index or PolyDomIndex, got {index!r}")
    return table


def _distribution(table: SkylineTable, sizes: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(sizes, dtype=np.float64).ravel()
    if n.size == 0:
        raise InvalidArgumentError(
            "sizes must not be empty (a sample of item sizes or histogram sizes)")
    lo, hi = table.domain
    n = check_sizes(n, lo, hi)
    if weights is None:
        w = np.ones_like(n)
    else:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.shape != n.shape:
            raise InvalidArgumentError(
                f"weights must have one value per size ({n.size}), got {w.size}")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0)) or w.sum() <= 0:
            raise InvalidArgumentError(
                f"weights must be finite, >= 0 and not all 0, got {w.tolist()}")
    values, inverse = np.unique(n, return_inverse=True)
    mass = np.bincount(inverse, weights=w)
    keep = mass > 0
    return values[keep], mass[keep] / mass.sum()


def _bins(values: np.ndarray, mass: np.ndarray, max_bins: int) -> list[np.ndarray]:
    """Contiguous groups of distinct sizes, at most ``max_bins``, of about equal weight."""
    if values.size <= max_bins:
        return [np.array([i]) for i in range(values.size)]
    edges = np.searchsorted(np.cumsum(mass), np.linspace(0, 1, max_bins + 1)[1:-1])
    return [g for g in np.split(np.arange(values.size), np.unique(edges + 1)) if g.size]


@dataclass
class _Bin:
    sizes: np.ndarray
    mass: np.ndarray
    weight: float
    options: list[int]  # candidate positions, Pareto in (mean cost, accuracy), by cost
    cost: np.ndarray  # mean cost of each option over the bin
    acc: np.ndarray
    peak: np.ndarray  # largest cost of each option over the bin's sizes


def _prepare(
    table: SkylineTable, values: np.ndarray, mass: np.ndarray, max_bins: int
) -> list[_Bin]:
    cands = table.candidates
    acc = np.array([c.accuracy for c in cands])
    curves = np.array([c.cost(values) for c in cands])  # candidates x sizes
    out = []
    for group in _bins(values, mass, max_bins):
        m = mass[group]
        weight = float(m.sum())
        mean = curves[:, group] @ (m / weight)
        order = np.lexsort((-acc, mean))
        keep, best = [], -np.inf
        for k in order:
            if acc[k] > best:
                keep.append(int(k))
                best = acc[k]
        out.append(_Bin(values[group], m, weight, keep, mean[keep], acc[keep],
                        curves[keep][:, group].max(axis=1)))
    return out


def _pareto_dp(bins: list[_Bin], budget: float, max_frontier: int) -> list[int] | None:
    """Exact: the frontier of (total cost, total accuracy) over bins; None when too large."""
    cost = np.zeros(1)
    acc = np.zeros(1)
    parents: list[tuple[np.ndarray, np.ndarray]] = []
    limit = budget * (1 + _REL)
    for b in bins:
        c = (cost[:, None] + b.weight * b.cost[None, :]).ravel()
        a = (acc[:, None] + b.weight * b.acc[None, :]).ravel()
        origin = np.arange(c.size)
        fits = c <= limit
        c, a, origin = c[fits], a[fits], origin[fits]
        order = np.lexsort((-a, c))
        c, a, origin = c[order], a[order], origin[order]
        best = np.maximum.accumulate(a)
        keep = np.concatenate([[True], a[1:] > best[:-1]])
        c, a, origin = c[keep], a[keep], origin[keep]
        if c.size > max_frontier:
            return None
        parents.append((origin // b.cost.size, origin % b.cost.size))
        cost, acc = c, a
    j = int(np.argmax(acc))
    choice = [0] * len(bins)
    for level in range(len(bins) - 1, -1, -1):
        prev, option = parents[level]
        choice[level] = int(option[j])
        j = int(prev[j])
    return choice


def _lagrangian(bins: list[_Bin], budget: float) -> tuple[list[int], float]:
    """Greedy over the upper concave hulls of the bins' options, best slope first.

    Taking hull steps in order of decreasing accuracy gained per cost until one does not fit
    is the Lagrangian solution for that step's slope; the linear relaxation's optimum takes
    a fraction of that step, so the optimum exceeds the plan by at most the step's weighted
    gain (returned).  Later steps that still fit are then taken too (only improving).
    """
    steps = []
    for j, b in enumerate(bins):
        hull = [0]
        for k in range(1, b.cost.size):
            while len(hull) >= 2:
                p, q = hull[-2], hull[-1]
                if (b.acc[q] - b.acc[p]) * (b.cost[k] - b.cost[p]) <= (
                    (b.acc[k] - b.acc[p]) * (b.cost[q] - b.cost[p])
                ):
                    hull.pop()
                else:
                    break
            hull.append(k)
        for p, q in zip(hull, hull[1:], strict=False):
            dc, da = b.cost[q] - b.cost[p], b.acc[q] - b.acc[p]
            slope = math.inf if dc <= 0 else da / dc
            steps.append((-slope, j, p, q))
    steps.sort()
    choice = [0] * len(bins)
    spent = sum(b.weight * b.cost[0] for b in bins)
    limit = budget * (1 + _REL)
    gap = 0.0
    blocked: set[int] = set()
    for _, j, p, q in steps:
        b = bins[j]
        if j in blocked or choice[j] != p:
            continue
        extra = b.weight * (b.cost[q] - b.cost[p])
        if spent + extra <= limit:
            spent += extra
            choice[j] = q
        else:
            if not gap:
                gap = b.weight * (b.acc[q] - b.acc[p])
            blocked.add(j)
    return choice, gap


def plan_workload(
    index: Any,
    sizes: Sequence[float] | np.ndarray,
    budget: float | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    cost_per_hour: float | None = None,
    rate: float | None = None,
    max_bins: int = 64,
    max_frontier: int = 50_000,
    method: str = "auto",
) -> WorkloadPlan:
    """The candidate per size that maximises expected accuracy within a mean budget per item.

    The workload is a sample of item sizes (``weights`` None) or a histogram (``sizes`` the
    bin sizes, ``weights`` their counts).  Distinct sizes are grouped into at most
    ``max_bins`` contiguous bins of about equal weight; every item of a bin is served by one
    candidate, whose cost in the bin is its weighted mean cost over the bin's sizes (exact
    for the given distribution).  Among all candidates of the index (cascades included) only
    those on a bin's (mean cost, accuracy) Pareto front are options.  The problem is then a
    multiple-choice knapsack: maximise ``sum_j w_j acc_j`` subject to ``sum_j w_j cost_j <=
    budget``.

    ``method="exact"`` (the default ``"auto"`` tries it first) builds the Pareto frontier of
    (expected cost, expected accuracy) bin by bin, dropping dominated and over-budget partial
    plans: optimal.  When the frontier grows past ``max_frontier`` points, ``"auto"`` falls
    back to ``"lagrangian"``: a sweep of the Lagrange multiplier over the bins' concave hulls
    (greedy by accuracy gained per cost), whose expected accuracy is within ``gap`` (the
    weighted gain of the one hull step the sweep could not afford) of the optimum.  Either
    way the expected cost never exceeds the budget.

    Runtime complexity: O(K * D) to cost K candidates at D distinct sizes, plus, exact,
    O(B * F * S log(F * S)) for B bins, frontier F and S options per bin; Lagrangian,
    O(B * S log(B * S)).

    Parameters
    ----------
    index : polydom.Index or PolyDomIndex
    sizes : array-like of float
        Item sizes (a sample) or histogram sizes; inside the index's domain.
    budget : float, optional
        Mean cost per item.  Give it, or ``cost_per_hour`` and ``rate``.
    weights : array-like of float, optional
        Histogram counts (or probabilities) of ``sizes``.
    cost_per_hour, rate : float, optional
        A budget per hour and the items per hour: ``budget = cost_per_hour / rate``.
    max_bins : int, default 64
    max_frontier : int, default 50000
    method : {"auto", "exact", "lagrangian"}

    Returns
    -------
    WorkloadPlan

    Raises
    ------
    ValueError
        Naming the argument: an empty ``sizes``, a size outside the domain, bad weights,
        neither or both budget forms, a budget below the cheapest plan (the cheapest
        candidate at every size), an unknown method, ``"exact"`` past ``max_frontier``.

    >>> import polydom
    >>> cands = [polydom.Candidate("cheap", 0.7, "1"), polydom.Candidate("dear", 0.9, "n")]
    >>> index = polydom.PolyDomIndex.build(cands, 0.0, 100.0)
    >>> plan = plan_workload(index, [2.0, 2.0, 50.0], budget=2.0)
    >>> [r.key for r in plan.rows], round(plan.expected_cost, 3)
    (['dear', 'cheap'], 1.667)
    """
    table = _table(index)
    if method not in ("auto", "exact", "lagrangian"):
        raise InvalidArgumentError(
            f"method must be 'auto', 'exact' or 'lagrangian', got {method!r}")
    if (budget is None) == (cost_per_hour is None and rate is None):
        raise InvalidArgumentError(
            "give budget (mean cost per item) or cost_per_hour and rate, not both")
    if budget is None:
        if cost_per_hour is None or rate is None:
            raise InvalidArgumentError("cost_per_hour and rate go together")
        budget = per_item_budget(cost_per_hour, rate)
    budget = check_budget(budget)
    for name, value in (("max_bins", max_bins), ("max_frontier", max_frontier)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    values, mass = _distribution(table, sizes, weights)
    bins = _prepare(table, values, mass, int(max_bins))
    cheapest = sum(b.weight * b.cost[0] for b in bins)
    if budget < cheapest * (1 - _REL):
        raise InvalidArgumentError(
            f"budget {budget!r} is below the cheapest plan's mean cost per item {cheapest:g} "
            "(the cheapest candidate at every size)"
        )
    choice, gap, used = None, 0.0, "exact"
    if method in ("auto", "exact"):
        choice = _pareto_dp(bins, budget, int(max_frontier))
        if choice is None and method == "exact":
            raise InvalidArgumentError(
                f"max_frontier {max_frontier} is too small for an exact plan; "
                "raise it or use method='lagrangian'")
    if choice is None:
        choice, gap = _lagrangian(bins, budget)
        used = "lagrangian"
    return _plan(table, bins, choice, budget, used, gap)


def _plan(table: SkylineTable, bins: list[_Bin], choice: list[int], budget: float, method: str,
          gap: float) -> WorkloadPlan:
    cands = table.candidates
    rows = []
    for b, k in zip(bins, choice, strict=True):
        cand = cands[b.options[k]]
        rows.append(PlanRow(float(b.sizes[0]), float(b.sizes[-1]), b.weight, cand.key,
                            cand.accuracy, float(b.cost[k]), float(b.peak[k]), cand))
    acc = float(sum(r.weight * r.accuracy for r in rows))
    cost = float(sum(r.weight * r.cost for r in rows))
    least = float(sum(b.weight * b.cost[0] for b in bins))
    full = float(sum(b.weight * b.cost[-1] for b in bins))
    return WorkloadPlan(rows, budget, acc, cost, method, gap, least, full)


def uniform_plan(
    index: Any,
    sizes: Sequence[float] | np.ndarray,
    budget: float,
    weights: Sequence[float] | np.ndarray | None = None,
) -> WorkloadPlan:
    """The baseline: every item gets the same budget and the index's lookup for its size.

    Sizes where nothing fits the budget raise (the same budget cannot serve them).

    Runtime complexity: O(D (log R + d log S)) for D distinct sizes.

    Raises
    ------
    ValueError
        As :func:`plan_workload`, or naming the first size where no candidate fits.
    """
    table = _table(index)
    budget = check_budget(budget)
    values, mass = _distribution(table, sizes, weights)
    rows = []
    for n, w in zip(values, mass, strict=True):
        cand = table.lookup(float(n), budget)
        if cand is None:
            raise InvalidArgumentError(f"budget {budget!r}: no candidate fits at size {float(n)!r}")
        c = float(cand.cost(float(n)))
        rows.append(PlanRow(float(n), float(n), float(w), cand.key, cand.accuracy, c, budget,
                            cand))
    acc = float(sum(r.weight * r.accuracy for r in rows))
    cost = float(sum(r.weight * r.cost for r in rows))
    return WorkloadPlan(rows, budget, acc, cost, "uniform", math.nan)
