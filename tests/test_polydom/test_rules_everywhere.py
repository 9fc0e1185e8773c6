"""The lookup rule "one_se" beyond ``lookup``: the fixed-budget index and ``explain``, each
against the full index (itself checked against full scans) and a full scan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polydom
import polydom.errors
from polydom import Candidate, PolyDomIndex
from tests.strategies import domains
from tests.test_polydom.test_index_properties import query_sizes
from tests.test_polydom.test_index_rules import assert_rule_answer, pools_with_errors

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(pools_with_errors(), domains, st.integers(0, 60).map(float))
def test_fixed_budget_one_se_answers_as_the_index_and_a_full_scan(cands, domain, budget):
    lo, hi = domain
    index = PolyDomIndex.build(cands, lo, hi)
    fixed = index.for_budget(budget)
    sizes = set(query_sizes(index, lo, hi))
    for p in fixed.breakpoints.tolist():
        sizes.update(x for x in (p, p + 1e-7, p - 1e-7) if lo <= x <= hi)
    at_budget = _AtBudget(fixed, index)
    for size in sorted(sizes):
        assert_rule_answer(index, cands, size, budget)  # the index against the scan
        assert_rule_answer(at_budget, cands, size, budget)  # the fixed budget's: the same
        for rule in ("best", "one_se"):
            got, want = fixed.lookup(size, rule), index.lookup(size, budget, rule)
            # only at a floating tie (a cost equal to the budget up to rounding) may the
            # answers differ
            assert (got and got.key) == (want and want.key) or _tie(cands, size, budget), (
                size, rule)


class _AtBudget:
    """A fixed-budget index seen as ``lookup(size, budget, rule)`` for its one budget."""

    def __init__(self, fixed, index) -> None:
        self.fixed = fixed
        self.breakpoints = np.union1d(fixed.breakpoints, index.breakpoints)

    def lookup(self, size: float, budget: float, rule: str = "best"):
        assert budget == self.fixed.budget
        return self.fixed.lookup(size, rule)


def _tie(cands: list[Candidate], size: float, budget: float) -> bool:
    """Whether some candidate's cost at ``size`` equals ``budget`` up to the rounding of
    evaluating it (1e-9 of the sum of its terms' magnitudes)."""
    for c in cands:
        terms = np.abs(c.cost.coefficients) * size ** np.arange(c.cost.coefficients.size)
        if abs(c.cost(size) - budget) <= 1e-9 * (1.0 + budget + float(terms.sum())):
            return True
    return False


def test_fixed_budget_one_se_takes_the_cheapest_within_one_standard_error():
    cands = [Candidate("cheap", 0.80, "1 + n"), Candidate("mid", 0.86, "5 + n"),
             Candidate("best", 0.90, "10 + n", accuracy_se=0.05)]
    fixed = PolyDomIndex.build(cands, 0.0, 100.0).for_budget(20.0)
    assert [fixed.lookup(n).key for n in (0.0, 10.0, 14.0, 19.0)] == [
        "best", "best", "mid", "cheap"]
    assert [fixed.lookup(n, "one_se").key for n in (0.0, 10.0, 14.0, 19.0)] == [
        "mid", "mid", "mid", "cheap"]
    assert fixed.lookup(30.0, "one_se") is None
    with pytest.raises(ValueError, match="rule must be one of 'best', 'one_se', got 'cheap'"):
        fixed.lookup(1.0, "cheap")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools_with_errors(), st.floats(0.0, 40.0), st.floats(0.0, 2000.0))
def test_explain_one_se_names_the_choice_and_the_best_that_fits(cands, size, budget):
    index = polydom.Index(PolyDomIndex.build(cands, 0.0, 40.0), {})
    e = index.explain(size, budget, rule="one_se")
    hit, best = index.lookup(size, budget, "one_se"), index.lookup(size, budget)
    assert e.rule == "one_se"
    assert (e.chosen and e.chosen.candidate) is (hit and hit.candidate)
    assert (e.best and e.best.candidate) is (best and best.candidate)
    best_rank = -1 if e.best is None else e.best.rank
    assert [s.fits for s in e.skyline] == [s.rank <= best_rank for s in e.skyline]
    if e.chosen is not None:
        floor = e.best.accuracy - e.best.candidate.accuracy_se
        assert e.chosen.accuracy >= floor and e.chosen.rank <= e.best.rank
        assert all(s.accuracy < floor for s in e.skyline[:e.chosen.rank])
        assert "standard error" in e.reason
        if e.chosen is not e.best:
            assert "within one standard error" in e.reason
    plain = index.explain(size, budget)
    assert plain.rule == "best" and plain.best is plain.chosen


def test_explain_one_se_in_words():
    cands = [Candidate("cheap", 0.80, "1", learner="tree"),
             Candidate("mid", 0.86, "5", learner="cegb"),
             Candidate("best", 0.90, "10", learner="lattice", accuracy_se=0.05)]
    index = polydom.Index(PolyDomIndex.build(cands, 0.0, 100.0), {})
    e = index.explain(1.0, 20.0, rule="one_se")
    assert (e.chosen.key, e.best.key, e.next_dearer.key) == ("mid", "best", "best")
    assert e.next_dearer.fits and e.extra_budget < 0
    assert e.reason == ("mid (cegb, accuracy 0.86) is the cheapest model that fits within one "
                        "standard error of the most accurate one that fits (accuracy at least "
                        "0.85, best (lattice, accuracy 0.9) minus its standard error 0.05)")


def test_an_index_without_standard_errors_refuses_one_se_everywhere():
    cands = [Candidate("a", 0.8, "1", features={"x"}), Candidate("b", 0.9, "n", features={"x"})]
    why = "build 3 of 'sqlite:///old.db' is in a store of schema version 2, which keeps none"
    index = polydom.Index(PolyDomIndex.build(cands, 0.0, 10.0), {"x": "1"},
                          info={"no_standard_errors": why})
    for ask in (lambda: index.lookup(1.0, 5.0, "one_se"),
                lambda: index.lookup_many(np.ones(2), np.ones(2), "one_se"),
                lambda: index.explain(1.0, 5.0, "one_se"),
                lambda: index.check_rule("one_se")):
        with pytest.raises(polydom.errors.RuleUnavailableError,
                           match=r"^rule 'one_se' needs each candidate's standard error, but "
                                 + why.replace(".", r"\.")):
            ask()
    assert index.lookup(1.0, 5.0).key == "b" and index.check_rule("best") == "best"
    with pytest.raises(ValueError, match="rule must be one of"):
        index.check_rule("cheapest")
