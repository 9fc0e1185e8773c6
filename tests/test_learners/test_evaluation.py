"""EvaluationProtocol: seeded folds and held-out splits, and the statistics of fold scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score, train_test_split

import lattice
import learners
from learners.evaluation import (
    EvaluationError,
    EvaluationProtocol,
    FoldEstimate,
    paired_difference,
)

labels = st.lists(st.integers(0, 2), min_size=12, max_size=60).filter(
    lambda y: min(np.bincount(y, minlength=3)[np.unique(y)]) >= 3)


@settings(deadline=None, max_examples=40)
@given(labels, st.integers(2, 3), st.integers(0, 10**6))
def test_folds_partition_the_rows_and_repeat_for_the_same_labels(y, k, seed):
    y = np.array(y)
    a = EvaluationProtocol(folds=k, seed=seed).splits(y)
    b = EvaluationProtocol(folds=k, seed=seed).splits(y)
    assert [t.tolist() for _, t in a] == [t.tolist() for _, t in b]
    tests = np.sort(np.concatenate([t for _, t in a]))
    assert tests.tolist() == list(range(len(y)))
    for train, test in a:
        assert not set(train) & set(test) and len(train) + len(test) == len(y)
        # stratified: each class's share of a fold is within one row of its share overall
        for c in np.unique(y):
            assert abs(np.sum(y[test] == c) - np.sum(y == c) * len(test) / len(y)) <= 1.0


def test_another_seed_gives_other_folds():
    y = np.array([0, 1] * 20)
    a = EvaluationProtocol(folds=4, seed=0).splits(y)
    b = EvaluationProtocol(folds=4, seed=1).splits(y)
    assert [t.tolist() for _, t in a] != [t.tolist() for _, t in b]


def test_holdout_is_the_stratified_split_of_train_test_split():
    y = np.array([0] * 30 + [1] * 20)
    (train, test), = EvaluationProtocol(holdout=0.3, seed=7).splits(y)
    tr, te = train_test_split(np.arange(50), test_size=0.3, random_state=7, stratify=y)
    assert train.tolist() == sorted(tr) and test.tolist() == sorted(te)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(0, 9), min_size=20, max_size=60), st.integers(2, 4),
       st.booleans(), st.integers(0, 99))
def test_grouped_folds_never_split_a_group(groups, k, holdout, seed):
    groups = np.array(groups)
    if len(np.unique(groups)) < k:
        return
    y = np.arange(len(groups)) % 2
    protocol = EvaluationProtocol(folds=k, holdout=0.3 if holdout else None, seed=seed,
                                  groups=groups)
    for train, test in protocol.splits(y):
        assert not set(groups[train]) & set(groups[test])
        assert len(train) and len(test)


def test_estimate_is_the_mean_with_the_standard_error_of_the_folds():
    e = FoldEstimate.of([0.8, 0.9, 0.7, 1.0], [5, 5, 5, 5])
    assert e.mean == pytest.approx(0.85)
    assert e.se == pytest.approx(np.std([0.8, 0.9, 0.7, 1.0], ddof=1) / 2.0)
    one = FoldEstimate.of([0.9], [100])
    assert one.se == pytest.approx(math.sqrt(0.9 * 0.1 / 100))


def test_paired_difference_is_over_folds():
    a, b = [0.9, 0.8, 0.85, 0.95], [0.85, 0.8, 0.8, 0.9]
    d, se = paired_difference(a, b)
    diffs = np.subtract(a, b)
    assert d == pytest.approx(diffs.mean())
    assert se == pytest.approx(np.std(diffs, ddof=1) / 2.0)
    assert math.isnan(paired_difference([0.9], [0.8])[1])
    with pytest.raises(EvaluationError, match="same folds"):
        paired_difference([0.9, 0.8], [0.8])


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"folds": 1}, EvaluationError, "folds must be at least 2"),
    ({"folds": 2.5}, TypeError, "folds must be an integer"),
    ({"holdout": 1.0}, EvaluationError, r"holdout must be in \(0, 1\)"),
    ({"holdout": "0.3"}, TypeError, "holdout must be a share"),
    ({"seed": -1}, TypeError, "seed must be an integer"),
    ({"refit": False}, EvaluationError, "refit=False needs holdout"),
    ({"stratify": 1}, TypeError, "stratify must be True or False"),
])
def test_bad_parameters_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        EvaluationProtocol(**kwargs).check()


def test_more_folds_than_a_class_has_rows_is_a_clear_error():
    with pytest.raises(EvaluationError, match="cannot split 6 rows"):
        EvaluationProtocol(folds=5).splits(np.array([0, 0, 0, 0, 1, 1]))


def test_sklearn_learner_scores_each_fold_of_the_protocol():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200, :4], y[:200]
    est = LogisticRegression(max_iter=2000)
    protocol = EvaluationProtocol(folds=4, seed=3)
    learner = learners.SklearnLearner(est, X, y, features=["a", "b", "c", "d"], cv=protocol)
    e = learner.expand(frozenset({"a", "c"}))
    want = cross_val_score(est, X[:, [0, 2]], y,
                           cv=StratifiedKFold(4, shuffle=True, random_state=3))
    assert np.allclose(e.fold_scores, want)
    assert e.accuracy == pytest.approx(want.mean())
    assert e.accuracy_se == pytest.approx(np.std(want, ddof=1) / 2.0)
    assert e.predictions is not None and e.predictions.shape == y.shape


def test_sklearn_learner_with_a_held_out_protocol_serves_the_scored_model():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200, :4], y[:200]
    protocol = EvaluationProtocol(holdout=0.25, seed=1, refit=False)
    learner = learners.SklearnLearner(LogisticRegression(max_iter=2000), X, y, cv=protocol)
    e = learner.expand(frozenset({"x0", "x1"}))
    (train, test), = protocol.splits(y)
    assert e.fold_scores == (float(np.mean(e.model.predict(X[test][:, [0, 1]]) == y[test])),)
    assert e.accuracy_se == pytest.approx(math.sqrt(e.accuracy * (1 - e.accuracy) / len(test)))


def test_lattice_candidates_carry_fold_scores_and_standard_errors():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:150, :3], y[:150]
    learner = learners.SklearnLearner(LogisticRegression(max_iter=2000), X, y,
                                      features=["a", "b", "c"],
                                      cv=EvaluationProtocol(folds=3, seed=0))
    exp = lattice.explore({"a": "1", "b": "2", "c": "3"}, learner)
    for cand in exp.all_candidates():
        e = exp.expanded[cand.features]
        assert cand.fold_scores == e.fold_scores and len(cand.fold_scores) == 3
        assert cand.accuracy_se == e.accuracy_se
        assert cand.accuracy == pytest.approx(np.mean(cand.fold_scores))


@settings(deadline=None, max_examples=30)
@given(labels, st.integers(2, 3), st.integers(1, 4), st.integers(0, 10**6))
def test_repeated_folds_are_partitions_the_first_the_unrepeated_one(y, k, r, seed):
    y = np.array(y)
    splits = EvaluationProtocol(folds=k, seed=seed, repeats=r).splits(y)
    assert len(splits) == k * r == EvaluationProtocol(folds=k, repeats=r).get_n_splits()
    for i in range(r):  # each repeat is k folds that partition the rows
        tests = np.sort(np.concatenate([t for _, t in splits[i * k:(i + 1) * k]]))
        assert tests.tolist() == list(range(len(y)))
    once = EvaluationProtocol(folds=k, seed=seed).splits(y)
    assert [t.tolist() for _, t in splits[:k]] == [t.tolist() for _, t in once]
    again = EvaluationProtocol(folds=k, seed=seed, repeats=r).splits(y)
    assert [t.tolist() for _, t in splits] == [t.tolist() for _, t in again]


def test_repeats_use_other_partitions():
    y = np.array([0, 1] * 20)
    splits = EvaluationProtocol(folds=4, seed=0, repeats=3).splits(y)
    parts = [sorted(tuple(t.tolist()) for _, t in splits[i * 4:(i + 1) * 4]) for i in range(3)]
    assert parts[0] != parts[1] and parts[1] != parts[2] and parts[0] != parts[2]


def test_repeated_estimate_keeps_the_standard_error_of_one_partition():
    scores = [0.8, 0.9, 0.7, 1.0, 0.85, 0.75]  # 3 folds, 2 repeats
    e = FoldEstimate.of(scores, [5] * 6, repeats=2)
    assert e.mean == pytest.approx(np.mean(scores))
    assert e.se == pytest.approx(np.std(scores, ddof=1) / math.sqrt(3))
    d, se = paired_difference(scores, [0.8] * 6, repeats=2)
    assert se == pytest.approx(np.std(np.subtract(scores, 0.8), ddof=1) / math.sqrt(3))
    with pytest.raises(EvaluationError, match="dividing the number of splits"):
        FoldEstimate.of(scores[:5], [5] * 5, repeats=2)
    assert EvaluationProtocol(folds=3, repeats=2).estimate(scores, [5] * 6) == e


def test_repeated_protocol_describes_itself_and_keeps_unrepeated_descriptions():
    once = EvaluationProtocol(folds=5, seed=1)
    assert "repeats" not in once.describe()  # stored expansions keyed by it stay valid
    many = EvaluationProtocol(folds=5, seed=1, repeats=3)
    assert many.describe()["repeats"] == 3 and many.describe()["folds"] == 5
    assert str(many) == "5-fold cross-validation repeated 3 times (stratified, seed 1)"


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"repeats": 0}, EvaluationError, "repeats must be at least 1"),
    ({"repeats": 2.0}, TypeError, "repeats must be an integer"),
    ({"holdout": 0.3, "repeats": 2}, EvaluationError, "repeats=2 needs folds"),
])
def test_bad_repeats_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        EvaluationProtocol(**kwargs).check()


def test_sklearn_learner_scores_every_repeat_as_cross_val_score_does():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200, :4], y[:200]
    est = LogisticRegression(max_iter=2000)
    protocol = EvaluationProtocol(folds=4, seed=3, repeats=2)
    learner = learners.SklearnLearner(est, X, y, features=["a", "b", "c", "d"], cv=protocol)
    e = learner.expand(frozenset({"a", "c"}))
    splits = protocol.splits(y)
    want = np.concatenate([cross_val_score(est, X[:, [0, 2]], y, cv=splits[:4]),
                           cross_val_score(est, X[:, [0, 2]], y, cv=splits[4:])])
    first = cross_val_score(est, X[:, [0, 2]], y,
                            cv=StratifiedKFold(4, shuffle=True, random_state=3))
    assert np.allclose(e.fold_scores, want) and np.allclose(want[:4], first)
    assert e.accuracy == pytest.approx(want.mean())
    assert e.accuracy_se == pytest.approx(np.std(want, ddof=1) / 2.0)
    assert e.predictions is not None and e.predictions.shape == y.shape
