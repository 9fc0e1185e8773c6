"""CheapFirstClassifier, the toy budgeted learner of docs/budgeted_learners.md: the
contract, its usage and predictions against a hand-built two-stage oracle, storage, and the
page's table of the files it touches."""

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.linear_model import LogisticRegression

import learners
import learners.budgeted.contract
import learners.registry
import storage
import storage.blobs
from learners import CheapFirstClassifier
from polydom.pipeline.open import register_learner_models

ROOT = Path(__file__).resolve().parents[2]
GROUPS = {"mean": list(range(10)), "error": list(range(10, 20)), "worst": list(range(20, 30))}
COSTS = {"mean": 5.0, "error": 1.0, "worst": 20.0}     # the cheapest is "error"


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    model = CheapFirstClassifier(COSTS, tradeoff=0.1, feature_groups=GROUPS).fit(
        X[idx[:400]], y[idx[:400]])
    return model, X[idx[:400]], y[idx[:400]], X[idx[400:]]


def test_it_is_a_registered_budgeted_learner():
    model = CheapFirstClassifier()
    assert isinstance(model, learners.budgeted.contract.BudgetedClassifierMixin)
    assert set(model.get_params()) >= {"tradeoff", "feature_costs", "feature_groups"}
    spec = learners.registry.get_learner("cheap-first")
    assert spec.kind == "budgeted" and model.learner_name == spec.name
    assert spec.classes() == [CheapFirstClassifier]
    assert isinstance(spec.make(seed=3, tradeoff=0.2), CheapFirstClassifier)


def _oracle(X_train, y_train, X, cheap_columns, tradeoff):
    """The two stages rebuilt by hand with scikit-learn: which rows stop, and the labels."""
    mean, scale = X_train.mean(axis=0), X_train.std(axis=0) + 1e-12
    Z_train, Z = (X_train - mean) / scale, (X - mean) / scale
    first = LogisticRegression(max_iter=1000).fit(Z_train[:, cheap_columns], y_train)
    full = LogisticRegression(max_iter=1000).fit(Z_train, y_train)
    p_first = first.predict_proba(Z[:, cheap_columns])
    stops = p_first.max(axis=1) >= 1 - tradeoff
    labels = np.where(stops, first.predict(Z[:, cheap_columns]), full.predict(Z))
    return stops, labels


def test_usage_and_predictions_are_the_two_stages_by_hand(cancer):
    model, X, y, X_te = cancer
    stops, labels = _oracle(X, y, X_te, GROUPS["error"], 0.1)
    assert 0 < stops.mean() < 1                       # adaptive: the check is not vacuous
    usage = model.feature_usage(X_te)
    assert model.feature_names_ == ["mean", "error", "worst"]
    np.testing.assert_array_equal(usage[:, 1], True)
    np.testing.assert_array_equal(usage[:, 0], ~stops)
    np.testing.assert_array_equal(usage[:, 2], ~stops)
    np.testing.assert_array_equal(model.predict(X_te), labels)
    np.testing.assert_allclose(model.predict_proba(X_te).sum(axis=1), 1.0)


@settings(max_examples=25, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1))
def test_a_larger_tradeoff_never_buys_more(cancer, a, b):
    model, _, _, X_te = cancer
    low, high = sorted((a, b))
    more = model.set_params(tradeoff=low).feature_usage(X_te)
    fewer = model.set_params(tradeoff=high).feature_usage(X_te)
    model.set_params(tradeoff=0.1)
    assert (fewer <= more).all()


def test_multiclass_and_the_extremes_of_the_tradeoff():
    X, y = load_wine(return_X_y=True)
    groups = {"a": list(range(6)), "b": list(range(6, 13))}
    everything = CheapFirstClassifier({"a": 2.0, "b": 1.0}, tradeoff=0.0,
                                      feature_groups=groups).fit(X, y)
    assert everything.feature_usage(X).all()
    assert everything.predict_proba(X).shape == (len(y), 3)
    cheap_only = everything.set_params(tradeoff=1.0)
    np.testing.assert_array_equal(cheap_only.feature_usage(X).any(axis=0), [False, True])


def test_stored_as_arrays_it_predicts_the_same(cancer):
    model, _, _, X_te = cancer
    register_learner_models()
    blob, fmt = storage.blobs.dump_model(model)
    assert fmt == "arrays"
    back = storage.blobs.load_model(blob, fmt, hashlib.sha256(blob).hexdigest())
    np.testing.assert_array_equal(back.predict_proba(X_te), model.predict_proba(X_te))
    np.testing.assert_array_equal(back.feature_usage(X_te), model.feature_usage(X_te))
    assert back.get_params() == model.get_params()


@pytest.mark.parametrize("params, match", [
    ({"tradeoff": 1.5}, r"tradeoff must be a number in \[0, 1\], got 1.5"),
    ({"feature_costs": {"mean": 1.0}}, r"feature_costs must give a cost for every feature; none"
                                        r" for \['error', 'worst'\]"),
    ({"feature_costs": [1.0, -2.0, 3.0]}, r"feature_costs must be finite and >= 0; got "
                                          r"\[\('error', -2.0\)\]"),
])
def test_bad_parameters_are_named(params, match):
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        CheapFirstClassifier(feature_groups=GROUPS, **params).fit(X, y)


def test_the_docs_table_gives_the_line_counts_of_the_files():
    page = (ROOT / "docs" / "budgeted_learners.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| [^|]+ \| *(\+?\d*) *\|$", page, flags=re.M)
    assert len(rows) == 8
    for path, lines in rows:
        assert (ROOT / path).is_file(), path
        if lines and not lines.startswith("+"):
            assert len((ROOT / path).read_text().splitlines()) == int(lines), path
    spec = (ROOT / "learners" / "budgeted" / "cheap_first" / "spec.py").read_text()
    assert '"cheap-first", "learners.budgeted.cheap_first.spec:cheap_first"' in spec
