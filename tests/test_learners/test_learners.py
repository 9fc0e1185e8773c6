"""Learners: SklearnLearner really trains (CV accuracy as sklearn computes it); SyntheticLearner."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import lattice.expansion
import learners


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    # 30 columns, grouped as the dataset's three descriptors: mean, error, worst
    groups = {"mean": list(range(0, 10)), "error": list(range(10, 20)),
              "worst": list(range(20, 30))}
    return X, y, groups


def test_sklearn_learner_cv_accuracy_is_what_sklearn_computes(cancer):
    X, y, groups = cancer
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    learner = learners.SklearnLearner(est, X, y, features=groups, cv=5)
    exp = learner.expand(frozenset({"worst", "mean"}))
    cols = groups["mean"] + groups["worst"]
    expected = cross_val_score(est, X[:, cols], y, cv=5, scoring="accuracy").mean()
    assert exp.accuracy == pytest.approx(expected, abs=1e-12)
    assert exp.accuracy > 0.9
    assert exp.features == frozenset({"worst", "mean"})
    assert exp.fit_seconds > 0.0
    # the model is fitted on all rows, on the features' columns in the learner's order
    assert exp.model is not est
    assert exp.model[-1].n_features_in_ == 20
    refit = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X[:, cols], y)
    np.testing.assert_allclose(exp.model.predict_proba(X[:, cols]),
                               refit.predict_proba(X[:, cols]))
    assert learner.calls_ == 1


def test_empty_set_gets_the_majority_class_model(cancer):
    X, y, groups = cancer
    exp = learners.SklearnLearner(LogisticRegression(), X, y, features=groups).expand(frozenset())
    majority = np.bincount(y).max() / y.size
    assert exp.accuracy == pytest.approx(majority, abs=0.01)
    assert (exp.model.predict(np.zeros((3, 0))) == np.bincount(y).argmax()).all()


def test_held_out_split_scores_on_the_test_rows():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(y))
    tr, te = perm[:100], perm[100:]
    learner = learners.SklearnLearner(DecisionTreeClassifier(random_state=0), X[tr], y[tr],
                                      features=["sl", "sw", "pl", "pw"], cv=(X[te], y[te]))
    exp = learner.expand(frozenset({"pl", "pw"}))
    model = DecisionTreeClassifier(random_state=0).fit(X[tr][:, [2, 3]], y[tr])
    assert exp.accuracy == model.score(X[te][:, [2, 3]], y[te])
    assert learner.columns_of(frozenset({"pw", "sl"})) == [0, 3]


def test_feature_mapping_defaults_and_validation():
    X = np.zeros((6, 3))
    y = np.array([0, 1] * 3)
    assert learners.SklearnLearner(LogisticRegression(), X, y).feature_columns() == {
        "x0": [0], "x1": [1], "x2": [2]}
    for features, match in (({"a": [0, 1], "b": [1]}, "column 1"), ({"a": [5]}, "outside"),
                            ({"a": []}, "no columns"), (["a", "b"], "one name per column")):
        with pytest.raises(ValueError, match=match):
            learners.SklearnLearner(LogisticRegression(), X, y, features=features).expand(
                frozenset())
    with pytest.raises(ValueError, match="unknown"):
        learners.SklearnLearner(LogisticRegression(), X, y).expand(frozenset({"zz"}))


def test_scoring_outside_unit_interval_is_rejected(cancer):
    X, y, groups = cancer
    learner = learners.SklearnLearner(LogisticRegression(max_iter=50), X[:100], y[:100],
                                      features=groups, scoring="neg_log_loss", cv=3)
    with pytest.raises(ValueError, match="scoring"):
        learner.expand(frozenset({"mean"}))


def test_learners_expand_a_feature_set_into_its_scored_expansion():
    exp = learners.SyntheticLearner(lambda fs: 0.5 + 0.1 * len(fs)).expand(frozenset({"x0"}))
    assert exp.features == frozenset({"x0"}) and exp.accuracy == pytest.approx(0.6)
    X, y = load_iris(return_X_y=True)
    learner = learners.SklearnLearner(LogisticRegression(max_iter=500), X, y,
                                      features={"sepal": [0, 1], "petal": [2, 3]}, cv=3)
    exp = learner.expand(frozenset({"petal"}))
    assert exp.features == frozenset({"petal"})
    assert 0.9 <= exp.accuracy <= 1.0  # petal widths separate iris almost perfectly
    assert (exp.model.predict(X[:, [2, 3]]) == y).mean() >= 0.9


def test_synthetic_learner_scores_without_a_model_and_validates():
    learner = learners.SyntheticLearner(lambda fs: 0.5 + 0.1 * len(fs))
    exp = learner.expand(frozenset({"a", "b"}))
    assert isinstance(exp, lattice.Expansion)
    assert exp.accuracy == pytest.approx(0.7) and exp.model is None and learner.calls_ == 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        learners.SyntheticLearner(lambda fs: 1.5).expand(frozenset())
    with pytest.raises(ValueError, match="number"):
        learners.SyntheticLearner(lambda fs: "x").expand(frozenset())
