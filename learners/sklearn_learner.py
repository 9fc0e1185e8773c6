"""SklearnLearner: any scikit-learn estimator as the lattice's black-box learner."""

from __future__ import annotations

import hashlib
import math
import numbers
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.metrics import get_scorer
from sklearn.model_selection import cross_validate
from sklearn.pipeline import Pipeline

from lattice.expansion import Expansion
from learners.columns import normalize_features
from learners.evaluation import EvaluationProtocol, FoldEstimate
from polydom.curves.cost_model import CostModel
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["SklearnLearner", "estimator_name"]


class SklearnLearner:
    """Train a clone of ``estimator`` on the columns of a feature set and score it.

    A lattice feature is a routine that may yield many columns (a histogram, a HOG block, a
    sensor): ``features`` maps each feature name to its column indices in ``X``, or is a
    :class:`polydom.CostModel` whose features (its bundles, else its atoms) get the columns
    of their atoms (bundles may share atoms, so their columns may overlap).  A model for a
    feature set is trained on the sorted union of its features' columns (the one column
    order of :meth:`polydom.CostModel.columns_of`), which is what
    :meth:`polydom.Index.predict` feeds it.  The empty set gets the majority-class model
    (``DummyClassifier(strategy="most_frequent")``).

    Parameters
    ----------
    estimator : scikit-learn estimator
        Cloned for every feature set; never fitted itself.
    X : array of shape (rows, columns)
        Training matrix holding every feature's columns.
    y : array of shape (rows,)
        Labels.
    features : mapping of str to list of int, or list of str, or CostModel, or None
        Feature name -> column indices; a list of names gives one column each; None names
        every column ``"x<i>"``; a CostModel with columns for every atom gives its features
        the columns of their atoms.
    cv : int or EvaluationProtocol or cross-validation splitter or tuple (X_test, y_test), \
default 5
        How accuracy is estimated: a :class:`learners.EvaluationProtocol` (the build's
        one protocol: seeded folds or a held-out split of ``X``, shared with every other
        learner of the build), k-fold cross-validation on ``X`` (sklearn's
        ``cross_val_score``; stratified for classifiers), or the score on a held-out split.
        The returned model is refitted on all rows of ``X`` (but with a protocol whose
        ``refit`` is False, or a test split).  An integer is a number of folds in
        ``[2, rows]`` (``2.5`` raises ``TypeError``).  Every expansion carries the score
        of each split (``fold_scores``) and the standard error of their mean.
    scoring : str, default "accuracy"
        A scikit-learn scorer name whose values lie in ``[0, 1]``.
    name : str or None, default None
        The learner's name on its candidates and builds (:attr:`learner_name`): a build
        from a config passes the registry name (``"logistic"``); None names the estimator
        (:func:`estimator_name`, e.g. ``"sklearn:StandardScaler+LogisticRegression"``).
        A label only: it is not part of :meth:`describe`, so it never changes which stored
        expansions a build reuses.

    Attributes
    ----------
    columns_ : dict of str to list of int
        The validated feature -> columns mapping (set by the first :meth:`expand` or
        :meth:`feature_columns` call).
    calls_ : int
        Number of models trained so far; set by the first :meth:`expand`.
    """

    def __init__(
        self,
        estimator: Any,
        X: np.ndarray,
        y: np.ndarray,
        features: Mapping[str, Sequence[int]] | Sequence[str] | CostModel | None = None,
        cv: int | Any | tuple[np.ndarray, np.ndarray] = 5,
        scoring: str = "accuracy",
        name: str | None = None,
    ) -> None:
        self.estimator = estimator
        self.X = X
        self.y = y
        self.features = features
        self.cv = cv
        self.scoring = scoring
        self.name = name

    @property
    def learner_name(self) -> str:
        """The name the candidates it trains carry: ``name``, else
        :func:`estimator_name` of the estimator.

        Raises
        ------
        ValueError
            If ``name`` is given but is not a non-empty text.
        """
        if self.name is None:
            return estimator_name(self.estimator)
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgumentError(f"name must be a non-empty text or None, got {self.name!r}")
        return self.name

    def _prepare(self) -> None:
        if hasattr(self, "columns_"):
            return
        X = np.asarray(self.X)
        y = np.asarray(self.y)
        if X.ndim != 2:
            raise InvalidArgumentError(f"X must be 2-D, got shape {X.shape}")
        if y.shape != (X.shape[0],):
            raise InvalidArgumentError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if isinstance(self.cv, tuple):
            if len(self.cv) != 2:
                raise InvalidArgumentError(
                    f"cv as a tuple must be (X_test, y_test), got {len(self.cv)} items"
                )
            Xt, yt = np.asarray(self.cv[0]), np.asarray(self.cv[1])
            if Xt.ndim != 2 or Xt.shape[1] != X.shape[1] or yt.shape != (Xt.shape[0],):
                raise InvalidArgumentError(
                    f"cv test split must be X_test (rows, {X.shape[1]}) and y_test (rows,), "
                    f"got {Xt.shape} and {yt.shape}"
                )
            self._test = (Xt, yt)
        else:
            self._test = None
        self._splits = (self.cv.splits(y) if isinstance(self.cv, EvaluationProtocol)
                        else self.cv)
        self._scorer = get_scorer(self.scoring)
        self._X, self._y = X, y
        if isinstance(self.features, CostModel):
            model = self.features
            if not model.has_columns:
                raise InvalidArgumentError(
                    "features as a CostModel needs columns for every atom; atoms without: "
                    f"{sorted(set(model.atoms) - set(model.columns))}"
                )
            bad = [c for cols in model.columns.values() for c in cols if c >= X.shape[1]]
            if bad:
                raise InvalidArgumentError(
                    f"features: the cost model names column {bad[0]}, outside [0, {X.shape[1]})"
                )
            self.columns_ = {name: model.columns_of([name]) for name in model.features}
        else:
            self.columns_ = normalize_features(self.features, X.shape[1])

    def describe(self) -> str:
        """A stable text naming the estimator, the scoring, the validation and a sha256 of
        the data: two learners with the same description train the same models (storage
        uses it to decide which stored expansions a build may reuse)."""
        self._prepare()
        digest = hashlib.sha256()
        for array in (self._X, self._y, *(self._test or ())):
            arr = np.ascontiguousarray(array)
            digest.update(str((arr.dtype.str, arr.shape)).encode())
            digest.update(arr.tobytes())
        if self._test is not None:
            cv = "test-split"
        elif isinstance(self.cv, EvaluationProtocol):
            cv = repr(self.cv.describe())
        else:
            cv = repr(self.cv)
        return (
            f"SklearnLearner({self.estimator!r}, cv={cv}, scoring={self.scoring!r}, "
            f"data=sha256:{digest.hexdigest()[:16]})"
        )

    def evaluation_description(self) -> dict[str, Any]:
        """How this learner scores, as JSON-ready data (a build stores it in its ``info``).

        An :class:`learners.EvaluationProtocol` gives its
        :meth:`~learners.EvaluationProtocol.describe`; an integer ``cv`` unshuffled
        (stratified) folds, a test split one split; another splitter its ``repr``.

        Runtime complexity: O(rows) (groups are hashed).
        """
        self._prepare()
        if isinstance(self.cv, EvaluationProtocol):
            return self.cv.describe()
        if self._test is not None:
            return {"kind": "test-split", "folds": 1, "rows": int(len(self._test[1]))}
        if isinstance(self.cv, numbers.Integral):
            return {"kind": "kfold", "folds": int(self.cv), "seed": None, "shuffle": False}
        return {"kind": "splitter", "splitter": repr(self.cv)}

    def feature_columns(self) -> dict[str, list[int]]:
        """Feature name -> column indices, in the learner's feature order."""
        self._prepare()
        return {name: list(cols) for name, cols in self.columns_.items()}

    def columns_of(self, features: frozenset) -> list[int]:
        """Columns a model on ``features`` is trained on: the sorted union of their columns.

        Runtime complexity: O(c log c) for c columns.
        """
        self._prepare()
        unknown = set(features) - set(self.columns_)
        if unknown:
            raise InvalidArgumentError(
                f"unknown features {sorted(unknown)!r}; known: {list(self.columns_)}")
        return sorted({c for name in features for c in self.columns_[name]})

    def expand(self, features: frozenset) -> Expansion:
        """Estimate the accuracy of the estimator on ``features`` and refit it on all rows.

        Runtime complexity: (k + 1) fits of the estimator for k-fold cross-validation, one
        fit and one scoring with a test split.

        Raises
        ------
        TypeError
            If ``cv`` is a number that is not an integer.
        ValueError
            On an unknown feature name, an integer ``cv`` outside ``[2, rows]``, or a score
            outside ``[0, 1]``.
        """
        features = frozenset(features)
        cols = self.columns_of(features)
        if self._test is None:
            _check_folds(self._splits, self._X.shape[0])
        start = time.perf_counter()
        est = clone(self.estimator) if cols else DummyClassifier(strategy="most_frequent")
        Xf = self._X[:, cols]
        if self._test is None:
            # cross_val_score's folds and scores, keeping the fold models' out-of-fold
            # predictions (Expansion.predictions) at the cost of predicting only
            cv = cross_validate(est, Xf, self._y, cv=self._splits, scoring=self._scorer,
                                return_estimator=True, return_indices=True)
            scores = [float(v) for v in cv["test_score"]]
            tests = cv["indices"]["test"]
            repeats = self.cv.repeats if isinstance(self.cv, EvaluationProtocol) else 1
            first = len(tests) // repeats  # the folds of the first partition
            predictions = np.empty(len(self._y), dtype=self._y.dtype)
            covered = np.zeros(len(self._y), dtype=np.int64)
            for fold_model, rows in zip(cv["estimator"][:first], tests[:first], strict=True):
                predictions[rows] = fold_model.predict(Xf[rows])
                covered[rows] += 1
            if not np.all(covered == 1):  # not a partition (e.g. ShuffleSplit): no OOF rows
                predictions = None
            if isinstance(self.cv, EvaluationProtocol) and not self.cv.refit:
                model = cv["estimator"][0]  # the one held-out split's model, as scored
            else:
                model = clone(est).fit(Xf, self._y)
        else:
            model = est.fit(Xf, self._y)
            scores = [float(self._scorer(model, self._test[0][:, cols], self._test[1]))]
            tests = [self._test[1]]
            predictions = None
            repeats = 1
        bad = [v for v in scores if not (math.isfinite(v) and 0.0 <= v <= 1.0)]
        if bad:
            raise InvalidArgumentError(
                f"scoring {self.scoring!r} gave {bad[0]!r} for {sorted(features)!r}; "
                "the lattice needs accuracies in [0, 1]"
            )
        estimate = FoldEstimate.of(scores, [len(rows) for rows in tests], repeats)
        self.calls_ = getattr(self, "calls_", 0) + 1
        return Expansion(features, estimate.mean, model, time.perf_counter() - start,
                         predictions, estimate.se, estimate.scores)


def _check_folds(cv: Any, rows: int) -> None:
    """An integer ``cv`` is a number of folds in ``[2, rows]`` (not 2.5, not True)."""
    if isinstance(cv, (bool, np.bool_)) or (
        isinstance(cv, numbers.Real) and not isinstance(cv, numbers.Integral)
    ):
        raise ArgumentTypeError(f"cv must be an integer number of folds, got {cv!r}")
    if isinstance(cv, numbers.Integral) and not 2 <= cv <= rows:
        raise InvalidArgumentError(
            f"cv must be between 2 and the number of rows ({rows}), got {cv!r}")


def estimator_name(estimator: Any) -> str:
    """The learner name of a scikit-learn estimator that is not in the registry:
    ``"sklearn:"`` and its class name, a pipeline's steps joined by ``+`` (``passthrough``
    steps left out), so ``make_pipeline(StandardScaler(), LogisticRegression())`` is
    ``"sklearn:StandardScaler+LogisticRegression"``.  Parameters are not part of it (they
    are in :meth:`SklearnLearner.describe`).

    Runtime complexity: O(steps).

    >>> from sklearn.tree import DecisionTreeClassifier
    >>> estimator_name(DecisionTreeClassifier(max_depth=3))
    'sklearn:DecisionTreeClassifier'
    """
    return "sklearn:" + _classes(estimator)


def _classes(estimator: Any) -> str:
    if isinstance(estimator, Pipeline):
        return "+".join(_classes(step) for _, step in estimator.steps
                        if step is not None and step != "passthrough")
    return type(estimator).__name__
