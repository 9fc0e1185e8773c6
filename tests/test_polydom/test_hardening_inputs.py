"""Hostile and careless inputs of the Python API (issue 14): each entry point validates its
arguments in one place and raises ``TypeError`` / ``ValueError`` naming the argument."""

import fractions
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lattice
import learners
import learners.columns
import polydom
import polydom.index.polydom_index
from polydom import Candidate, CostCurve, IndexAll, NaiveLookup, PolyDomIndex
from polydom.curves.parse import MAX_DEGREE, MAX_PARSE_LENGTH
from tests.strategies import examples

CANDS = [
    Candidate("cheap", 0.6, "0.3 + 0.7*n"),
    Candidate("good", 0.9, "0.1 + 1.1*n + 0.3*n**2"),
]


@pytest.fixture(scope="module")
def index():
    return PolyDomIndex.build(CANDS, n_min=0.0, n_max=100.0)


# ------------------------------------------------------------- unbounded polynomial degree
@pytest.mark.parametrize("text", ["((n**32)**32)**32", "(n**16)*(n**17)", "(n+1)**32*n",
                                  "((n**2)**4)**5"])
@pytest.mark.timeout(30)  # a hang guard, not a speed claim: expanding these would take ages
def test_unbounded_polynomial_degree_is_refused_quickly(text):
    with pytest.raises(ValueError, match=f"degree .* the limit is {MAX_DEGREE}"):
        CostCurve.parse(text)


def test_polynomial_degree_up_to_the_limit_is_accepted():
    assert CostCurve.parse("(n + 1)**32").degree == MAX_DEGREE
    assert CostCurve.parse("(n**16)*(n**16) - n**32 + n").degree == 1


def test_cost_curve_coefficients_beyond_the_degree_limit_are_refused():
    with pytest.raises(ValueError, match=f"degree at most {MAX_DEGREE}"):
        CostCurve([1.0] * (MAX_DEGREE + 2))


def test_cost_text_longer_than_the_limit_is_refused():
    with pytest.raises(ValueError, match=f"longer than {MAX_PARSE_LENGTH}"):
        CostCurve.parse("1" + "+n" * MAX_PARSE_LENGTH)


@pytest.mark.parametrize("text", ["-" * 1990 + "n", "1" + "+n" * 990])
def test_deeply_nested_cost_text_raises_value_error_not_recursion_error(text):
    try:
        CostCurve.parse(text)
    except ValueError as exc:
        assert "nested too deeply" in str(exc)


def test_overflowing_constant_power_is_refused():
    with pytest.raises(ValueError, match="overflows"):
        CostCurve.parse("((9**32)**32)**32")


def test_degree_limit_of_a_config_cost_fails_the_build_at_once(tmp_path):
    from polydom.app.config_build import ConfigError, build_from_config

    config = {"data": "breast_cancer", "learner": "tree", "store": str(tmp_path / "x.db"),
              "features": {"a": [0]}, "costs": {"a": "((n**32)**32)**32"}}
    with pytest.raises(ConfigError, match="degree"):
        build_from_config(config, out=lambda s: None)
    assert not (tmp_path / "x.db").exists()


# ------------------------------------------------------------- lookup and lookup_many
def test_lookup_of_an_array_size_says_use_lookup_many(index):
    with pytest.raises(TypeError, match="size must be a single real number.*shape \\(2,\\)"):
        index.lookup(np.array([5.0, 6.0]), 9.0)


@pytest.mark.parametrize(
    "size, budget, name",
    [("5", 9.0, "size"), (5.0, "9", "budget"), (True, 9.0, "size"), (5.0, False, "budget"),
     (1j, 9.0, "size"), (None, 9.0, "size"), (5.0, [9.0], "budget")],
)
def test_lookup_refuses_strings_bools_complex_and_none(index, size, budget, name):
    for lookup in (index, NaiveLookup.build(CANDS, 0.0, 100.0), index.for_budget(1.0)):
        with pytest.raises(TypeError, match=f"{name} must be"):
            if isinstance(lookup, polydom.index.polydom_index.FixedBudgetIndex):
                if name == "budget":
                    index.for_budget(budget)
                else:
                    lookup.lookup(size)
            else:
                lookup.lookup(size, budget)


def test_lookup_accepts_ints_fractions_and_numpy_scalars(index):
    expected = index.lookup(5.0, 40.0)
    for size in (5, fractions.Fraction(5), np.int32(5), np.float64(5.0), np.array(5.0)):
        assert index.lookup(size, 40) is expected


def test_numpy_float32_size_answers_as_the_same_python_float(index):
    # Found with the old float32 arithmetic: at this size the budget is exactly the cost of
    # "good" in float64, and float32 rounding priced it over budget (answer "cheap").
    size = np.float32(6.369616985321045)
    budget = 19.278184845760258
    assert index.lookup(float(size), budget).key == "good"
    assert index.lookup(size, budget).key == "good"
    assert index.lookup(size, np.float32(budget)) is index.lookup(
        float(size), float(np.float32(budget)))
    sizes = np.array([size], dtype=np.float32)
    assert index.lookup_many(sizes, np.array([budget])).tolist() == [1]


@pytest.mark.parametrize(
    "sizes, budgets, error, fragment",
    [
        (np.ones(3), np.ones(2), ValueError, "do not broadcast"),
        ([[1.0, 2.0], [3.0]], 5.0, ValueError, "ragged"),
        (["1", "2"], 5.0, TypeError, "sizes must be an array of real numbers"),
        ("12", 5.0, TypeError, "sizes must be an array"),
        ([1.0, 2.0], [1j, 2j], TypeError, "budgets must be an array of real numbers"),
        ([True, False], 5.0, TypeError, "sizes must be an array of real numbers"),
        ([1.0, None], 5.0, TypeError, "sizes"),
    ],
)
def test_lookup_many_refuses_mismatched_ragged_text_and_complex(index, sizes, budgets, error,
                                                                fragment):
    for lookup in (index, NaiveLookup.build(CANDS, 0.0, 100.0)):
        with pytest.raises(error, match=fragment):
            lookup.lookup_many(sizes, budgets)


def test_lookup_many_broadcasts_and_matches_lookup(index):
    sizes = np.array([[1.0], [5.0]], dtype=np.float32)
    out = index.lookup_many(sizes, [2.0, 40.0])
    assert out.shape == (2, 2)
    for (i, j), pos in np.ndenumerate(out):
        hit = index.lookup_position(float(sizes[i, 0]), [2.0, 40.0][j])
        assert pos == hit


# ------------------------------------------------------------- candidates and builds
@pytest.mark.parametrize("accuracy", ["0.5", True, None, 0.5j, [0.5]])
def test_candidate_accuracy_that_is_not_a_real_number_is_refused(accuracy):
    with pytest.raises(TypeError, match="accuracy of candidate 'a' must be a real number"):
        Candidate("a", accuracy, "n")


def test_candidate_accuracy_numpy_float32_is_stored_as_a_python_float():
    cand = Candidate("a", np.float32(0.5), "n")
    assert type(cand.accuracy) is float and cand.accuracy == 0.5


@pytest.mark.parametrize("build", [PolyDomIndex.build, IndexAll.build, NaiveLookup.build])
@pytest.mark.parametrize("candidates", [None, 5, "ab", {"a": CANDS[0]}])
def test_build_of_something_that_is_not_a_list_of_candidates_is_refused(build, candidates):
    with pytest.raises(TypeError, match="candidates must be an iterable of polydom.Candidate"):
        build(candidates)


def test_build_names_the_position_of_a_stray_element():
    with pytest.raises(TypeError, match=r"candidates\[1\] must be a polydom.Candidate, got 'x'"):
        PolyDomIndex.build([CANDS[0], "x"])


@pytest.mark.parametrize("n_min, n_max, name", [("0", 5.0, "n_min"), (0.0, "5", "n_max"),
                                                (False, 5.0, "n_min")])
def test_build_domain_must_be_real_numbers(n_min, n_max, name):
    with pytest.raises(TypeError, match=f"{name} must be a real number"):
        PolyDomIndex.build(CANDS, n_min, n_max)


def test_build_index_with_no_features_is_refused():
    learner = learners.SyntheticLearner(lambda features: 0.5)
    with pytest.raises(ValueError, match="costs must name at least one feature"):
        polydom.build_index({}, learner)


def test_build_index_refuses_costs_that_are_not_a_mapping_and_a_learner_without_expand():
    learner = learners.SyntheticLearner(lambda features: 0.5)
    with pytest.raises(TypeError, match="costs must be a CostModel or a mapping"):
        polydom.build_index(["a"], learner)
    with pytest.raises(TypeError, match="learner must have an expand"):
        polydom.build_index({"a": "1"}, object())
    with pytest.raises(TypeError, match="store must be a SQLAlchemy URL or a file path"):
        polydom.build_index({"a": "1"}, learner, store=5)


@pytest.mark.parametrize("name", ["", "   "])
def test_feature_named_empty_is_refused(name):
    with pytest.raises(ValueError, match="non-empty string"):
        Candidate("a", 0.5, "n", features={name})
    with pytest.raises(ValueError, match="non-empty string"):
        lattice.explore({name: "1"}, learners.SyntheticLearner(lambda f: 0.5))
    with pytest.raises(ValueError, match="non-empty string"):
        learners.columns.normalize_features({name: [0]}, 2)


def test_feature_name_that_is_not_a_string_is_refused():
    with pytest.raises(TypeError, match="feature name in costs must be a string, got 3"):
        lattice.explore({3: "1"}, learners.SyntheticLearner(lambda f: 0.5))


@pytest.mark.parametrize("column", [2.0, 1.5, "1", True, None])
def test_non_integer_column_names_are_refused(column):
    with pytest.raises(TypeError, match=r"column of features\['a'\] must be an integer"):
        learners.columns.normalize_features({"a": [column]}, 4)
    X, y = np.zeros((6, 4)), np.array([0, 1] * 3)
    with pytest.raises(TypeError, match="integer column index"):
        learners.SklearnLearner(None, X, y, features={"a": [column]}).feature_columns()


@pytest.mark.parametrize("cv, error", [(2.5, TypeError), (True, TypeError), (1, ValueError),
                                       (7, ValueError)])
def test_cv_that_is_not_a_number_of_folds_in_range_is_refused(cv, error):
    X, y = np.zeros((6, 2)), np.array([0, 1] * 3)
    with pytest.raises(error, match="cv must be"):
        learners.SklearnLearner(None, X, y, cv=cv).expand(frozenset({"x0"}))


def test_numpy_integer_columns_are_accepted():
    assert learners.columns.normalize_features({"a": [np.int64(1), 2]}, 4) == {"a": [1, 2]}


# ------------------------------------------------------------- property tests: junk
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(),
    st.complex_numbers(allow_nan=True),
    st.text(max_size=12),
    st.binary(max_size=4),
    st.fractions(),
    st.lists(st.one_of(st.floats(), st.integers(-5, 5), st.text(max_size=2)), max_size=4),
    st.lists(st.lists(st.floats(-5, 5), max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-3, 3), max_size=3),
    st.tuples(st.integers(), st.text(max_size=2)),
    st.builds(np.float32, st.floats(width=32)),
    st.builds(np.array, st.lists(st.floats(), max_size=3)),
    st.just(object()),
)
COST_TEXT = st.text(alphabet="n0123456789.+-*/()e^ x", max_size=40)
ALLOWED = (TypeError, ValueError)


def _only_allowed_errors(call, *args, **kwargs):
    """Run ``call``; it may succeed or raise TypeError / ValueError, nothing else."""
    try:
        call(*args, **kwargs)
    except ALLOWED:
        pass


@given(JUNK)
def test_junk_into_cost_curves_and_candidates_raises_only_type_or_value_errors(junk):
    _only_allowed_errors(CostCurve, junk)
    _only_allowed_errors(CostCurve.parse, junk)
    _only_allowed_errors(CostCurve.coerce, junk)
    _only_allowed_errors(Candidate, "k", junk, "n")
    _only_allowed_errors(Candidate, "k", 0.5, junk)
    _only_allowed_errors(Candidate, "k", 0.5, "n", junk)
    _only_allowed_errors(Candidate, junk, 0.5, "n")


@given(COST_TEXT)
def test_junk_cost_text_raises_only_value_errors(text):
    try:
        CostCurve.parse(text)
    except ValueError:
        pass


@given(JUNK, JUNK)
def test_junk_into_every_lookup_raises_only_type_or_value_errors(a, b):
    idx = PolyDomIndex.build(CANDS, 0.0, 100.0)
    for table in (idx, NaiveLookup.build(CANDS, 0.0, 100.0)):
        _only_allowed_errors(table.lookup, a, b)
        _only_allowed_errors(table.lookup, a, 1.0)
        _only_allowed_errors(table.lookup, 1.0, b)
        _only_allowed_errors(table.lookup_many, a, b)
        _only_allowed_errors(table.lookup_many, a, 1.0)
        _only_allowed_errors(table.skyline, a)
    _only_allowed_errors(idx.for_budget, a)
    _only_allowed_errors(idx.for_budget(1.0).lookup, a)


@given(JUNK, JUNK)
def test_junk_into_every_build_raises_only_type_or_value_errors(a, b):
    for build in (PolyDomIndex.build, IndexAll.build, NaiveLookup.build):
        _only_allowed_errors(build, a)
        _only_allowed_errors(build, CANDS, a, b)
        _only_allowed_errors(build, [CANDS[0], a])


@given(JUNK, JUNK)
def test_junk_into_the_lattice_and_learners_raises_only_type_or_value_errors(a, b):
    synthetic = learners.SyntheticLearner(lambda f: 0.5)
    _only_allowed_errors(lattice.explore, a, synthetic)
    _only_allowed_errors(lattice.explore, {"f": a}, synthetic)
    _only_allowed_errors(lattice.explore, {"f": "1"}, synthetic, alpha=a, delta=b)
    _only_allowed_errors(lattice.explore, {"f": "1"}, synthetic, n_min=a, n_max=b)
    _only_allowed_errors(polydom.build_index, a, synthetic)
    _only_allowed_errors(polydom.build_index, {"f": "1"}, a)
    _only_allowed_errors(learners.columns.normalize_features, a, 4)
    _only_allowed_errors(learners.columns.normalize_features, {"f": a}, 4)
    _only_allowed_errors(learners.columns.normalize_features, [a, b, "c", "d"], 4)


@settings(max_examples=examples(40))
@given(st.one_of(JUNK, st.text(alphabet="abc:/._", max_size=12)))
def test_junk_into_open_index_raises_only_type_or_value_errors_and_creates_nothing(junk):
    import os

    before = set(os.listdir("."))
    _only_allowed_errors(polydom.open_index, junk)
    _only_allowed_errors(polydom.list_builds, junk)
    assert set(os.listdir(".")) == before


def test_junk_free_index_still_answers_like_a_scan():
    # the checks above changed no state: lookups after junk are the plain answers
    idx = PolyDomIndex.build(CANDS, 0.0, 100.0)
    naive = NaiveLookup.build(CANDS, 0.0, 100.0)
    for n in np.linspace(0.0, 100.0, 11):
        for b in (0.0, 1.0, 10.0, 1e4):
            assert idx.lookup_position(float(n), b) == naive.lookup_position(float(n), b)
    assert math.isfinite(idx.stats_["build_seconds"])
