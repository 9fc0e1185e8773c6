"""CostCurve.from_rows and Candidate.from_columns: what one-by-one construction gives, faster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from polydom import Candidate, CostCurve
from storage.codec import stored_curves

coefficient = st.one_of(st.just(0.0), st.just(-0.0),
                        st.floats(-1e6, 1e6, width=64, allow_subnormal=False))


@given(arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(1, 5)), elements=coefficient))
def test_from_rows_equals_one_curve_per_row(matrix):
    bulk = CostCurve.from_rows(matrix)
    single = [CostCurve(row) for row in matrix]
    assert bulk == single
    for a, b in zip(bulk, single, strict=True):
        assert a.coefficients.tolist() == b.coefficients.tolist()
        assert hash(a) == hash(b) and a(3.5) == b(3.5)
        assert not a.coefficients.flags.writeable


@pytest.mark.parametrize("bad, match", [
    ([[1.0, np.nan]], "finite.*row 0"),
    ([[1.0], [np.inf]], "finite.*row 1"),
    ([1.0, 2.0], r"\(k, L\) matrix"),
    (np.zeros((2, 0)), r"\(k, L\) matrix"),
])
def test_from_rows_rejects_bad_matrices(bad, match):
    with pytest.raises(ValueError, match=match):
        CostCurve.from_rows(bad)


def test_from_columns_equals_the_constructor():
    curves = CostCurve.from_rows([[1.0, 2.0], [3.0, 0.0], [0.5, 0.25]])
    cols = dict(keys=["a", ("b", 1), "c"], accuracies=[0.5, 0.75, 1.0], costs=curves,
                features=[frozenset({"x"}), frozenset(), frozenset({"x", "y"})],
                payloads=[None, "m", None], needs=[None, {"x": 0.5}, {"y": 1.0}],
                learners=["lattice", None, "cegb"])
    bulk = Candidate.from_columns(**cols)
    single = [Candidate(*row) for row in zip(*cols.values(), strict=True)]
    assert bulk == single
    for a, b in zip(bulk, single, strict=True):
        assert (a.needs, a.learner, a.payload, a.cost) == (b.needs, b.learner, b.payload, b.cost)


def test_from_columns_falls_back_to_the_constructor_for_raw_values():
    (c,) = Candidate.from_columns(["a"], [0.5], ["1 + n"], [["x"]])
    assert c == Candidate("a", 0.5, "1 + n", ["x"])


@pytest.mark.parametrize("change, match", [
    ({"accuracies": [0.5, 1.5]}, r"accuracy of candidate 'b' must be in \[0, 1\]"),
    ({"needs": [None, {"x": 2.0}]}, "probability of 'x' must be in"),
    ({"keys": ["a", ["unhashable"]]}, "must be hashable"),
    ({"learners": [None, 3]}, "learner of candidate 'b' must be a string"),
])
def test_from_columns_rejects_what_the_constructor_rejects(change, match):
    cols = dict(keys=["a", "b"], accuracies=[0.5, 0.6], costs=CostCurve.from_rows([[1], [2]]),
                features=[frozenset({"x"})] * 2)
    cols.update(change)
    with pytest.raises(ValueError, match=match):
        Candidate.from_columns(**cols)


def test_stored_curves_scatter_rows_by_id_and_name_missing_ones():
    rows = [(5, 1, 2.0), (2, 0, 1.0), (5, 0, 0.5), (9, 3, 4.0)]
    curves = stored_curves([2, 5], rows, "candidate")
    assert [c.coefficients.tolist() for c in curves] == [[1.0], [0.5, 2.0]]
    with pytest.raises(ValueError, match="candidate 7 are missing"):
        stored_curves([2, 7], rows, "candidate")
    with pytest.raises(ValueError, match="malformed"):
        stored_curves([2], [(2, -1, 1.0)], "candidate")
