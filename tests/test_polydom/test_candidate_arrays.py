"""CandidateArrays: a pool as columns, checked at once with the messages of Candidate(...),
indexed as the list of the same candidates is."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polydom import Candidate, CandidateArrays, PolyDomIndex


def columns(seed: int, k: int, atoms: int = 4) -> dict:
    rng = np.random.default_rng(seed)
    feats = rng.random((k, atoms)) < 0.5
    return dict(keys=[f"c{i}" for i in range(k)],
                accuracies=np.round(rng.uniform(0.5, 1.0, k), 2),
                coefficients=np.round(rng.uniform(0, 5, (k, 3)), 1) * (rng.random((k, 3)) < 0.8),
                features=feats, feature_names=[f"f{j}" for j in range(atoms)],
                learners=["lattice"] * k, accuracy_ses=rng.uniform(0, 0.01, k),
                fold_scores=rng.uniform(0.5, 1.0, (k, 3)))


def one_by_one(cols: dict) -> list[Candidate]:
    names = cols["feature_names"]
    return [Candidate(key, float(a), c.tolist(), [names[j] for j in np.flatnonzero(f)],
                      learner=lr, accuracy_se=float(se), fold_scores=tuple(fs))
            for key, a, c, f, lr, se, fs in zip(
                cols["keys"], cols["accuracies"], cols["coefficients"], cols["features"],
                cols["learners"], cols["accuracy_ses"], cols["fold_scores"], strict=True)]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 30))
def test_each_candidate_is_what_the_constructor_gives(seed, k):
    cols = columns(seed, k)
    pool, single = CandidateArrays(**cols), one_by_one(cols)
    assert len(pool) == k and list(pool) == single
    for a, b in zip(pool, single, strict=True):
        assert (a.needs, a.learner, a.accuracy_se, a.fold_scores, a.cost.coefficients.tolist()
                ) == (b.needs, b.learner, b.accuracy_se, b.fold_scores,
                      b.cost.coefficients.tolist())


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 60))
def test_an_index_over_the_arrays_is_the_index_over_the_list(seed, k):
    cols = columns(seed, k)
    from_arrays = PolyDomIndex.build(CandidateArrays(**cols), 0.0, 50.0)
    from_list = PolyDomIndex.build(one_by_one(cols), 0.0, 50.0)
    assert from_arrays.breakpoints.tolist() == from_list.breakpoints.tolist()
    assert from_arrays.skyline_positions == from_list.skyline_positions
    assert from_arrays.candidates == from_list.candidates
    rng = np.random.default_rng(seed)
    sizes, budgets = rng.uniform(0, 50, 200), rng.uniform(0, 200, 200)
    assert np.array_equal(from_arrays.lookup_many(sizes, budgets),
                          from_list.lookup_many(sizes, budgets))
    from_arrays._check()


def test_only_the_skyline_candidates_are_made():
    cols = columns(3, 500)
    pool = CandidateArrays(**cols)
    table = PolyDomIndex.build(pool, 0.0, 50.0)
    assert set(pool._made) == set(table.answerable) and len(table.answerable) < 500


@pytest.mark.parametrize("change, error, match", [
    ({"accuracies": [0.5, 1.5]}, ValueError, r"accuracy of candidate 'b' must be in \[0, 1\], "
                                             r"got 1\.5"),
    ({"accuracies": ["0.5", "1"]}, TypeError, "accuracy must be real numbers"),
    ({"keys": ["a", "a"]}, ValueError, "duplicate candidate key 'a'"),
    ({"keys": ["a", ["b"]]}, ValueError, r"candidate key must be hashable, got \['b'\]"),
    ({"coefficients": [[1.0], [np.nan]]}, ValueError,
     "cost curve of candidate 'b': coefficients must be finite"),
    ({"accuracy_ses": [0.0, -1.0]}, ValueError,
     "accuracy_se of candidate 'b' must be a finite number >= 0"),
    ({"fold_scores": [[0.5], [2.0]]}, ValueError, r"fold_scores of candidate 'b' must be in"),
    ({"needs": [[0.5], [1.5]], "atoms": ["x"]}, ValueError,
     "needs of candidate 'b': probability of 'x' must be in"),
    ({"learners": ["a", 3]}, ValueError, "learner of candidate 'b' must be a string"),
    ({"feature_names": [""], "features": [[True], [False]]}, ValueError,
     "must be a non-empty string"),
])
def test_a_bad_column_names_the_first_bad_candidate(change, error, match):
    cols = {"keys": ["a", "b"], "accuracies": [0.5, 0.75], "coefficients": [[1.0], [2.0]],
            **change}
    with pytest.raises(error, match=match):
        CandidateArrays(**cols)


def test_the_messages_are_the_constructors():
    with pytest.raises(ValueError) as one:
        Candidate("b", 1.5, [1.0])
    with pytest.raises(ValueError) as bulk:
        CandidateArrays(["a", "b"], [0.5, 1.5], [[1.0], [1.0]])
    assert str(one.value) == str(bulk.value)


def test_a_negative_curve_is_refused_by_the_index_naming_it():
    pool = CandidateArrays(["a", "b"], [0.5, 0.75], [[1.0, 0.0], [1.0, -1.0]])
    with pytest.raises(ValueError, match="cost curve of candidate 'b'.*negative"):
        PolyDomIndex.build(pool, 0.0, 10.0)
