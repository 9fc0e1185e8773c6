"""Ties that are ties (issue 36, item 4): accuracies equal as estimated (the same counts over
the same folds) compare equal, so the lookup gives the tie to the cheaper model, as a full
scan over exact fractions does."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
from learners.evaluation import FoldEstimate
from polydom.curves.accuracy import fold_mean


@st.composite
def pools(draw):
    """Candidates whose fold counts are permutations of a few base splits (equal folds):
    many exact ties between models of different costs."""
    folds = draw(st.integers(3, 6))
    rows = draw(st.integers(7, 60))
    bases = draw(st.lists(st.lists(st.integers(0, rows), min_size=folds, max_size=folds),
                          min_size=1, max_size=3))
    n = draw(st.integers(2, 8))
    costs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n, unique=True))
    cands = []
    for i, cost in enumerate(costs):
        counts = draw(st.permutations(bases[draw(st.integers(0, len(bases) - 1))]))
        cands.append((f"c{i}", counts, cost))
    return rows, cands, draw(st.integers(1, 45))


@settings(max_examples=60, deadline=None)
@given(pools())
def test_the_lookup_gives_an_exact_tie_to_the_cheaper_model_as_a_full_scan_does(pool):
    rows, cands, budget = pool
    candidates, exact = [], {}
    for key, counts, cost in cands:
        estimate = FoldEstimate.of([k / rows for k in counts], [rows] * len(counts))
        candidates.append(polydom.Candidate(key, estimate.mean, str(cost), features={key}))
        exact[key] = (Fraction(sum(counts), rows * len(counts)), cost)
    index = polydom.PolyDomIndex.build(candidates, 0.0, 10.0)
    fitting = [k for k, (_, cost) in exact.items() if cost <= budget]
    want = min(fitting, key=lambda k: (-exact[k][0], exact[k][1]), default=None)
    hit = index.lookup(1.0, float(budget))
    assert (None if hit is None else hit.key) == want


def test_the_same_counts_in_other_folds_are_one_accuracy():
    # modechoice's case: 152 of 210 right either way, split differently over 5 folds of 42
    a = fold_mean([31 / 42, 30 / 42, 30 / 42, 31 / 42, 30 / 42], [42] * 5)
    b = fold_mean([30 / 42, 30 / 42, 31 / 42, 30 / 42, 31 / 42], [42] * 5)
    assert a == b == 152 / 210


def test_a_score_that_is_no_fraction_of_its_rows_is_kept_exactly():
    assert fold_mean([0.123456789, 0.5], [10, 10]) == (0.123456789 + 0.5) / 2
