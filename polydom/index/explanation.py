"""Explanation: why a lookup chose its model (the skyline at the size, the next dearer entry).

:func:`explain_lookup` answers what :meth:`polydom.Index.explain` is asked: the skyline of
the range holding the size (cheapest first, each entry with its cost at that size and
whether it fits the budget), the entry :meth:`SkylineTable.lookup` chose, the next
dearer skyline entry with the budget it would take, and one sentence saying why nothing
more accurate fits.

Why the next dearer entry is the whole story: a skyline is sorted by cost with strictly
increasing accuracy, and every candidate off the skyline is dominated (at every size of the
range) by a skyline entry at most as costly and at least as accurate.  So every candidate
more accurate than the chosen one costs at least what the next dearer entry costs, and
that entry's cost is exactly the budget that would buy a better model.  Under the rule
``"one_se"`` the chosen entry is the cheapest one within one standard error of the most
accurate entry that fits (:mod:`polydom.index.table`), and the explanation names both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_query
from polydom.curves.names import candidate_name
from polydom.index.table import SkylineTable, check_rule

__all__ = ["Explanation", "SkylineEntry", "explain_lookup"]


@dataclass(frozen=True, slots=True)
class SkylineEntry:
    """One skyline entry at a size: the candidate, its cost there, whether it fits.

    Attributes
    ----------
    rank : int
        Position on the skyline (0: cheapest).
    candidate : Candidate
        The candidate (key, accuracy, features, learner).
    cost : float
        Its cost at the explained size.
    fits : bool
        Whether the lookup counted it as within the budget (ranks up to the chosen one).
    """

    rank: int
    candidate: Candidate
    cost: float
    fits: bool

    @property
    def key(self) -> Any:
        """The candidate's key."""
        return self.candidate.key

    @property
    def accuracy(self) -> float:
        """The candidate's accuracy."""
        return self.candidate.accuracy

    @property
    def learner(self) -> str | None:
        """The learner that produced the candidate (None when not recorded)."""
        return self.candidate.learner


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why :meth:`polydom.Index.lookup` answered ``(size, budget)`` as it did.

    Attributes
    ----------
    size, budget : float
        The query.
    build : object or None
        The build the answer came from (``info["build_id"]``; None for an unstored index).
    n_lo, n_hi : float
        The range of sizes holding ``size`` (its skyline is the same across the range).
    skyline : tuple of SkylineEntry
        The skyline at ``size``, cheapest first (accuracy strictly increasing).
    chosen : SkylineEntry or None
        What the lookup returns (None: nothing fits).
    next_dearer : SkylineEntry or None
        The skyline entry after ``chosen`` (the cheapest when nothing fits); None when
        ``chosen`` is the most accurate at this size.
    reason : str
        One sentence: why nothing more accurate than ``chosen`` fits (for ``"one_se"``:
        why ``chosen`` and not the most accurate entry that fits).
    rule : str, default "best"
        The lookup rule explained (:data:`polydom.index.table.RULES`).
    best : SkylineEntry or None
        The most accurate entry that fits (``chosen`` under ``"best"``); under ``"one_se"``
        ``chosen`` is the cheapest entry whose accuracy reaches ``best``'s accuracy minus
        its standard error, and the entries between them fit too.
    """

    size: float
    budget: float
    build: Any
    n_lo: float
    n_hi: float
    skyline: tuple[SkylineEntry, ...]
    chosen: SkylineEntry | None
    next_dearer: SkylineEntry | None
    reason: str
    rule: str = "best"
    best: SkylineEntry | None = None

    @property
    def extra_budget(self) -> float:
        """What the next dearer entry costs beyond the budget (NaN when there is none)."""
        if self.next_dearer is None:
            return math.nan
        return self.next_dearer.cost - self.budget


def _name(entry: SkylineEntry) -> str:
    key = candidate_name(entry.key)
    learner = entry.learner or "learner not recorded"
    return f"{key} ({learner}, accuracy {entry.accuracy:.4g})"


def explain_lookup(table: SkylineTable, size: float, budget: float,
                   build: Any = None, rule: str = "best",
                   check_input: bool = True) -> Explanation:
    """Explain ``table.lookup(size, budget, rule)``: skyline, choice, next dearer entry,
    reason.

    The chosen entry is the one :meth:`SkylineTable.lookup` returns under ``rule`` (so an
    explanation never disagrees with a lookup, even at floating ties); entries up to the
    most accurate one that fits (``best``, the ``"best"`` answer) fit, the rest do not.
    Under ``"one_se"`` the entry after ``chosen`` may fit (it is more accurate, but within
    one standard error of ``best``): then ``extra_budget`` is not positive.
    ``check_input=False``: ``size``, ``budget`` and ``rule`` were checked already
    (:func:`polydom.curves.domain.check_query`, :func:`polydom.index.table.check_rule`).

    Runtime complexity: O(log R + d * (log S + S)) for R ranges, a skyline of S entries and
    curves of degree d.

    >>> import polydom
    >>> cands = [polydom.Candidate("cheap", 0.7, "1 + n"), polydom.Candidate("dear", 0.9, "10 + n")]
    >>> e = explain_lookup(polydom.PolyDomIndex.build(cands, 0.0, 100.0), 5.0, 8.0)
    >>> e.chosen.key, e.next_dearer.key, e.next_dearer.cost, e.extra_budget
    ('cheap', 'dear', 15.0, 7.0)

    Raises
    ------
    TypeError, ValueError
        As :meth:`SkylineTable.lookup` for a bad size, budget or rule.
    """
    if check_input:
        size, budget = check_query(size, budget, *table.domain)
        check_rule(rule)
    found = table.lookup(size, budget, rule, check_input=False)
    top = found if rule == "best" else table.lookup(size, budget, check_input=False)
    n_lo, n_hi = table.range_at(size, check_input=False)
    candidates = table.skyline(size, check_input=False)
    chosen_rank = best_rank = -1
    if found is not None:
        chosen_rank = next(i for i, c in enumerate(candidates) if c is found)
        best_rank = next(i for i, c in enumerate(candidates) if c is top)
    skyline = tuple(
        SkylineEntry(rank, cand, float(cand.cost(size)), rank <= best_rank)
        for rank, cand in enumerate(candidates)
    )
    chosen = skyline[chosen_rank] if chosen_rank >= 0 else None
    best = skyline[best_rank] if best_rank >= 0 else None
    following = chosen_rank + 1
    next_dearer = skyline[following] if following < len(skyline) else None
    if next_dearer is None and chosen is None:
        reason = f"no candidate is on the skyline at size {size:g}"
    elif next_dearer is None:
        reason = (f"{_name(chosen)} is the most accurate model at size {size:g}; "
                  "a larger budget buys nothing better")
    else:
        what = "the cheapest model" if chosen is None else "the next more accurate model"
        reason = (f"{what}, {_name(next_dearer)}, costs {next_dearer.cost:.6g} at size "
                  f"{size:g}, {next_dearer.cost - budget:.6g} over the budget {budget:g}; "
                  "every more accurate model costs at least as much")
        if chosen is None:
            reason = "nothing fits: " + reason.replace("more accurate model", "other model")
    if rule == "one_se" and best is not None:
        se = best.candidate.accuracy_se
        floor = (f"accuracy at least {best.accuracy - se:.4g}, {_name(best)} minus its "
                 f"standard error {se:.4g}")
        if chosen is not best:
            reason = (f"{_name(chosen)} is the cheapest model that fits within one standard "
                      f"error of the most accurate one that fits ({floor})")
        else:
            reason = f"no cheaper model reaches {floor}; " + reason
    return Explanation(size, budget, build, n_lo, n_hi, skyline, chosen, next_dearer, reason,
                       rule, best)
