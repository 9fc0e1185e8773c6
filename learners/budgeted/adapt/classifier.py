"""ADAPT (Nan and Saligrama, NIPS 2017): a cheap gate and model in front of an expensive one.

:class:`AdaptClassifier` learns a low-cost gate ``g`` and a low-cost model ``f1`` that
approximate a given, fitted, high-cost classifier ``f0`` where cheap features suffice: a row
goes to ``f0`` iff ``g(x) > threshold`` (0 in the paper), else ``f1`` answers.  Training
minimises the paper's (OPT) by alternating the closed-form q-step with a (g, f1)-step:

* ``method="lin"`` (ADAPT-LIN, :mod:`learners.budgeted.adapt.lin`): linear ``g`` and ``f1``,
  cost-weighted group lasso, random multi-start, then pruning of tiny-weight features;
* ``method="gbrt"`` (ADAPT-GBRT, :mod:`learners.budgeted.adapt.gbrt`): boosted trees with the
  paper's per-tree feature penalty, on LightGBM.

Cost of a row (features are paid once per row, whatever needs them): the gate's features,
plus the low-cost model's for rows it answers, or the high-cost model's for rows sent there
(``hpc_cost_mode="union"``, the paper's definition; ``"hpc_only"`` charges those rows only
``f0``'s features, as the authors' evaluation code does).  The two knobs of the paper are
``tradeoff`` (its ``gamma``) and ``p_full`` (the fraction of training rows the q-step may send
to ``f0``); :mod:`learners.budgeted.adapt.sweep` sweeps both into index candidates.

Many classes (spec section 2.10, an extension of the paper): with ``M > 2`` classes the
low-cost model is a softmax over ``M`` scores (ADAPT-LIN: ``lpc_coef_`` is columns x ``M``, one
group norm per feature over the gate's and all ``M`` class weights; ADAPT-GBRT: one LightGBM
multiclass booster, a tree per class per round), with one gate and the same q-step.  Two
classes keep the paper's logistic model exactly.

Pitfalls of the spec (section 2.11) and how they are handled:

1. *Soft q, hard gate*: q is soft, so the fraction routed by ``g > 0`` is not ``p_full``;
   sweep ``p_full`` densely, and ``threshold`` moves the hard rule (an extension, default 0).
2. *Local optima* (ADAPT-LIN): ``n_starts`` starts (zero, a logistic-regression ``f1``, and
   random weights), the lowest (OPT) value wins.
3. *Over-confident in-sample probabilities of f0*: ``high_cost_proba="oof"`` (default when the
   model can be cloned) uses out-of-fold probabilities from a shuffled stratified split.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from learners.budgeted.adapt.gbrt import fit_adapt_gbrt
from learners.budgeted.adapt.high_cost import HighCostModel, check_fitted_classifier
from learners.budgeted.adapt.lin import LinearGatePair, fit_adapt_lin
from learners.budgeted.adapt.sweep import BUILD_P_FULLS, check_thresholds, routing_threshold
from learners.budgeted.contract import (
    BudgetedClassifierMixin,
    check_feature_costs,
    column_groups,
    group_usage,
    params_json,
)
from learners.budgeted.on_demand import OnDemandFeaturizer, compute_feature, walk_on_demand
from learners.budgeted.tree_paths import TreeEnsemble
from learners.codecs.lightgbm_text import booster_from_text
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction

__all__ = ["AdaptClassifier"]

_METHODS = ("lin", "gbrt")


def _active(w: np.ndarray) -> np.ndarray:
    """Columns a linear model reads: a non-zero weight (for any class)."""
    return w != 0 if w.ndim == 1 else np.any(w != 0, axis=1)


def _intercept(value: Any) -> float | np.ndarray:
    """An intercept as stored: a number (binary), or one per class (many classes)."""
    return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=np.float64)


def _intercept_json(value: Any) -> float | list:
    return float(value) if np.ndim(value) == 0 else [float(v) for v in np.ravel(value)]


class _FeatureCache:
    """Computes each feature of one item at most once; remembers values, order and seconds."""

    def __init__(self, featurizer: OnDemandFeaturizer, groups: Mapping[str, list]) -> None:
        self.featurizer, self.groups = featurizer, groups
        self.values: dict[str, np.ndarray] = {}
        self.seconds: dict[str, float] = {}
        self.order: list[str] = []

    def compute(self, item: Any, name: str) -> np.ndarray:
        if name not in self.values:
            values, seconds = compute_feature(self.featurizer, item, name, len(self.groups[name]))
            self.values[name], self.seconds[name] = values, seconds
            self.order.append(name)
        return self.values[name]

    def row(self, n_columns: int) -> np.ndarray:
        x = np.full(n_columns, np.nan)
        for name, values in self.values.items():
            x[self.groups[name]] = values
        return x


class AdaptClassifier(BudgetedClassifierMixin, ClassifierMixin, BaseEstimator):
    """A gated low-cost model in front of a fitted high-cost classifier (ADAPT).

    Parameters
    ----------
    high_cost_model : fitted classifier
        ``f0``: any fitted classifier with ``predict_proba`` and ``classes_`` (or unfitted with
        ``fit_high_cost=True``).  It is treated as frozen: cloning this estimator keeps the
        same fitted object (see :meth:`__sklearn_clone__`).
    method : {"lin", "gbrt"}, default "lin"
    p_full : float in [0, 1], default 0.5
        Fraction of training rows the q-step may send to the high-cost model.
    tradeoff : float >= 0, default 0.01
        The paper's ``gamma``: weight of the feature-cost penalty.  ADAPT-LIN's loss is a mean
        over rows, ADAPT-GBRT's a sum (as the authors' code), so useful values differ by about
        the number of rows.
    feature_costs : mapping of str to float or sequence of float, optional
        Cost of each feature (``feature_groups`` name, or ``"x{j}"``); None: unit costs.
    feature_groups : mapping of str to list of int, optional
        Named column groups (a feature is paid once for all its columns).
    high_cost_columns : sequence of int, optional
        Columns of the full row the high-cost model takes, in the order it takes them; None:
        the whole row.
    fit_high_cost : bool, default False
        Fit a clone of ``high_cost_model`` on the training data first.
    high_cost_proba : {"auto", "oof", "fitted"} or ndarray, default "auto"
        Probabilities of ``f0`` on the training rows: out-of-fold (``cv`` folds of a clone),
        or the fitted model's own; ``"auto"``: out-of-fold when the model is a clonable
        scikit-learn estimator and every class has ``cv`` rows.  An array (rows x classes, for the
        sorted labels; e.g. from :meth:`high_cost_train_proba`) is used as given.
    cv : int, default 5
    q_constraint : {"le", "eq"}, default "le"
        ``mean(q) <= p_full`` (paper) or ``= p_full`` (the authors' code).
    hpc_cost_mode : {"union", "hpc_only"}, default "union"
    threshold : float, default 0.0
        Rows with ``g(x) > threshold`` go to the high-cost model.
    n_starts : int, default 12
        ADAPT-LIN starts (zero, logistic regression, ``n_starts - 2`` random).
    max_iter : int, default 20
        Outer (q-step) iterations.
    inner_iter : int, default 300
        ADAPT-LIN: FISTA iterations per (g, f1)-step.
    n_estimators, learning_rate, max_depth, min_child_samples
        ADAPT-GBRT trees per ensemble, shrinkage, depth (split levels), leaf size.
    random_state : int, default 0

    Attributes
    ----------
    classes_, n_features_in_, feature_groups_, feature_costs_ (ndarray, per feature)
    high_cost_ : HighCostModel
    high_cost_proba_ : str
        "oof", "fitted" or "given": what the q-step used.
    used_features_ : ndarray of bool
        Features some row may need (gate, low-cost model, high-cost model).
    objective_ : float
        ADAPT-LIN: the (OPT) value of the selected start.
    history_ : list
        ADAPT-LIN: (OPT) value per outer iteration; ADAPT-GBRT: (mean q, training accuracy).
    """

    learner_name = "adapt"
    #: The sweep's grid (spec 2.6: ``p_full`` dense around (0.4, 0.8), pitfall 1), routing
    #: thresholds scored per fit, and the efficient frontier kept per reference size.
    sweep_options = {"p_fulls": BUILD_P_FULLS, "thresholds": (0.0, "quantile"),
                     "frontier": True}

    def __init__(
        self,
        high_cost_model: Any = None,
        method: str = "lin",
        p_full: float = 0.5,
        tradeoff: float = 0.01,
        feature_costs: Mapping[str, float] | Sequence[float] | None = None,
        feature_groups: Mapping[str, Sequence[int]] | None = None,
        high_cost_columns: Sequence[int] | None = None,
        fit_high_cost: bool = False,
        high_cost_proba: str = "auto",
        cv: int = 5,
        q_constraint: str = "le",
        hpc_cost_mode: str = "union",
        threshold: float = 0.0,
        n_starts: int = 12,
        max_iter: int = 20,
        inner_iter: int = 300,
        n_estimators: int = 50,
        learning_rate: float = 0.1,
        max_depth: int = 3,
        min_child_samples: int = 5,
        random_state: int = 0,
    ) -> None:
        self.high_cost_model = high_cost_model
        self.method = method
        self.p_full = p_full
        self.tradeoff = tradeoff
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.high_cost_columns = high_cost_columns
        self.fit_high_cost = fit_high_cost
        self.high_cost_proba = high_cost_proba
        self.cv = cv
        self.q_constraint = q_constraint
        self.hpc_cost_mode = hpc_cost_mode
        self.threshold = threshold
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.inner_iter = inner_iter
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.random_state = random_state

    def __sklearn_clone__(self) -> AdaptClassifier:
        """Clone the parameters but keep the fitted high-cost model itself (it is frozen).

        With ``fit_high_cost=True`` the high-cost model is cloned like any parameter.
        """
        params = self.get_params(deep=False)
        hpc = params.pop("high_cost_model")
        params = {k: clone(v, safe=False) for k, v in params.items()}
        if self.fit_high_cost:
            hpc = clone(hpc, safe=False)
        return type(self)(high_cost_model=hpc, **params)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.allow_nan = False
        return tags

    @classmethod
    def from_index(cls, index: Any, size: float, budget: float, **params: Any) -> AdaptClassifier:
        """An unfitted ADAPT whose high-cost model is the index's choice at ``(size, budget)``.

        The features, their columns and their costs at ``size`` come from the index
        (``index.columns``, ``index.costs``); the high-cost model takes the columns the index
        would cut for it (``index.model_columns(hit.features)``).  Fit it on full matrices laid
        out as the index's training data.

        Parameters
        ----------
        index : polydom Index
            A built index with models (``lookup`` returns a Hit with ``.model``).
        size, budget : float
            The query whose answer is approximated (a large budget: the most accurate entry).
        **params
            Any other parameter of :class:`AdaptClassifier`.

        Raises
        ------
        ValueError
            If nothing fits ``budget`` at ``size`` or the hit has no model.

        Runtime complexity: one index lookup plus O(features).
        """
        hit = index.lookup(size, budget)
        if hit is None:
            raise InvalidArgumentError(f"no index entry fits budget {budget!r} at size {size!r}")
        if hit.model is None:
            raise InvalidArgumentError(
                f"index entry {hit.key!r} has no fitted model to approximate")
        groups = {name: list(cols) for name, cols in index.columns.items()}
        costs = {name: float(index.costs[name](float(size))) for name in groups}
        return cls(
            high_cost_model=hit.model,
            feature_groups=groups,
            feature_costs=costs,
            high_cost_columns=list(index.model_columns(hit.features)),
            **params,
        )

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        if self.method not in _METHODS:
            raise InvalidArgumentError(f"method must be one of {_METHODS}, got {self.method!r}")
        p = self.p_full
        if not (isinstance(p, int | float | np.number) and 0.0 <= float(p) <= 1.0):
            raise InvalidArgumentError(f"p_full must be a number in [0, 1], got {p!r}")
        t = self.tradeoff
        if not (isinstance(t, int | float | np.number) and math.isfinite(t) and t >= 0):
            raise InvalidArgumentError(f"tradeoff must be a finite number >= 0, got {t!r}")
        if not (
            isinstance(self.threshold, int | float | np.number) and math.isfinite(self.threshold)
        ):
            raise InvalidArgumentError(f"threshold must be a finite number, got {self.threshold!r}")
        for name, allowed in (
            ("q_constraint", ("le", "eq")),
            ("hpc_cost_mode", ("union", "hpc_only")),
        ):
            if getattr(self, name) not in allowed:
                raise InvalidArgumentError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in (
            "n_starts",
            "max_iter",
            "inner_iter",
            "n_estimators",
            "max_depth",
            "min_child_samples",
            "cv",
        ):
            v = getattr(self, name)
            if not (isinstance(v, int | np.integer) and v >= 1):
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {v!r}")
        hp = self.high_cost_proba
        if isinstance(hp, str) and hp not in ("auto", "oof", "fitted"):
            raise InvalidArgumentError(
                f"high_cost_proba must be 'auto', 'oof', 'fitted' or an array, got {hp!r}"
            )
        if not (isinstance(self.learning_rate, int | float) and self.learning_rate > 0):
            raise InvalidArgumentError(f"learning_rate must be > 0, got {self.learning_rate!r}")

    def _costs(self, names: list[str]) -> np.ndarray:
        return check_feature_costs(self.feature_costs, names, default=1.0)

    def _high_cost_columns(self, n_columns: int) -> list[int]:
        if self.high_cost_columns is None:
            return list(range(n_columns))
        cols = [int(c) for c in np.atleast_1d(np.asarray(self.high_cost_columns))]
        if not cols or not all(0 <= c < n_columns for c in cols) or len(set(cols)) < len(cols):
            raise InvalidArgumentError(
                f"high_cost_columns must be distinct columns in [0, {n_columns}), "
                f"got {self.high_cost_columns!r}"
            )
        return cols

    # ------------------------------------------------------------------ fitting
    def fit(self, X: np.ndarray, y: np.ndarray) -> AdaptClassifier:
        """Fit the gate and the low-cost model around the high-cost model.

        Parameters
        ----------
        X : array-like (rows, columns), finite
        y : array-like (rows,), two or more classes

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For an unfitted (or unsuitable) high-cost model, ``p_full`` outside [0, 1],
            costs for unknown features, fewer than two classes, or other bad parameters.

        Runtime complexity: ADAPT-LIN O(n_starts * max_iter * inner_iter * rows * columns);
        ADAPT-GBRT O(max_iter * n_estimators) LightGBM trees; plus ``cv`` fits of the
        high-cost model for out-of-fold probabilities.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type not in ("binary", "multiclass"):
            raise InvalidArgumentError(
                "AdaptClassifier needs binary or multiclass labels; "
                f"the type of the target is {y_type}."
            )
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise InvalidArgumentError(
                "AdaptClassifier needs at least two classes, got 1 class: "
                f"{self.classes_[0].item()!r}")
        n, k = X.shape
        self.feature_groups_ = column_groups(self.feature_groups, k)
        names = list(self.feature_groups_)
        self.feature_costs_ = self._costs(names)
        hpc_cols = self._high_cost_columns(k)
        estimator = self.high_cost_model
        if self.fit_high_cost:
            if estimator is None:
                raise InvalidArgumentError(
                    "high_cost_model must be given (None with fit_high_cost=True)")
            estimator = clone(estimator).fit(X[:, hpc_cols], y)
        check_fitted_classifier(estimator, "high_cost_model")
        self.high_cost_ = HighCostModel(estimator, hpc_cols, k)
        p0 = self._train_proba(X, y, y_enc)
        # Two classes: the paper's signs and logistic model; more: class indices, softmax.
        y_sign = np.where(y_enc == 1, 1.0, -1.0) if len(self.classes_) == 2 else y_enc
        groups = [np.asarray(c, dtype=np.int64) for c in self.feature_groups_.values()]
        if self.method == "lin":
            self._fit_lin(X, y_sign, p0, groups)
        else:
            self._fit_gbrt(X, y_sign, p0, groups)
        self.used_features_ = (
            self._model_used()
            | group_usage(np.isin(np.arange(k), hpc_cols)[None, :], self.feature_groups_)[0]
        )
        return self

    def _proba_matrix(self, hpc: HighCostModel, X, y, classes, y_enc) -> tuple[np.ndarray, str]:
        """f0's probabilities of ``classes`` on the training rows, and how they were made."""
        mode = self.high_cost_proba
        if not isinstance(mode, str):
            proba = np.asarray(mode, dtype=np.float64)
            width = len(classes)
            if proba.shape != (len(y), width) or not np.all((proba >= 0) & (proba <= 1)):
                raise InvalidArgumentError(
                    f"high_cost_proba as an array must hold probabilities of shape "
                    f"({len(y)}, {width}), got shape {proba.shape}"
                )
            return proba, "given"
        smallest = int(np.bincount(y_enc).min())
        if mode == "auto":
            clonable = isinstance(hpc.estimator, BaseEstimator)
            mode = "oof" if clonable and smallest >= self.cv else "fitted"
        if mode == "fitted":
            return hpc.proba_of(X, classes), mode
        if smallest < self.cv:
            raise InvalidArgumentError(
                f"high_cost_proba='oof' needs cv={self.cv} rows of every class; the "
                f"smallest class has {smallest}"
            )
        folds = StratifiedKFold(self.cv, shuffle=True, random_state=self.random_state)
        proba = cross_val_predict(
            clone(hpc.estimator), X[:, hpc.columns], y, cv=folds, method="predict_proba"
        )
        return proba[:, [list(np.unique(y).tolist()).index(c) for c in classes]], mode

    def high_cost_train_proba(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The high-cost model's probabilities on training rows, as :meth:`fit` computes them.

        Rows x classes, for the sorted labels of ``y``.  Passing the result as ``high_cost_proba``
        lets a sweep compute out-of-fold probabilities once instead of at every fit.

        Runtime complexity: ``cv`` fits of the high-cost model (out-of-fold) or one
        ``predict_proba``.
        """
        self._check_params()
        if self.fit_high_cost:
            raise InvalidArgumentError(
                "high_cost_train_proba needs a fitted high_cost_model (fit_high_cost=False)"
            )
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise InvalidArgumentError(f"X must be 2-dimensional, got shape {X.shape}")
        classes, y_enc = np.unique(np.asarray(y), return_inverse=True)
        check_fitted_classifier(self.high_cost_model, "high_cost_model")
        hpc = HighCostModel(self.high_cost_model, self._high_cost_columns(X.shape[1]), X.shape[1])
        return self._proba_matrix(hpc, X, np.asarray(y), classes, y_enc)[0]

    def _train_proba(self, X: np.ndarray, y: np.ndarray, y_enc: np.ndarray) -> np.ndarray:
        proba, self.high_cost_proba_ = self._proba_matrix(
            self.high_cost_, X, y, self.classes_, y_enc
        )
        self._hpc_train_correct = np.argmax(proba, axis=1) == y_enc
        return proba[np.arange(len(y_enc)), y_enc]

    def _fit_lin(self, X, y_sign, p0, groups) -> None:
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        Z = (X - self.mean_) / self.scale_
        k = X.shape[1]
        zero = np.zeros(k)
        m = len(self.classes_)
        shape = (k,) if m == 2 else (k, m)

        def intercept(value):
            return float(value) if m == 2 else np.asarray(value, dtype=np.float64)

        starts = [LinearGatePair(zero.copy(), 0.0, np.zeros(shape), intercept(np.zeros(m))
                                 if m > 2 else 0.0)]
        if self.n_starts >= 2:
            lr = LogisticRegression(C=1.0, max_iter=500).fit(Z, y_sign)
            coef = lr.coef_[0].copy() if m == 2 else lr.coef_.T.copy()
            bias = lr.intercept_[0] if m == 2 else lr.intercept_.copy()
            starts.append(LinearGatePair(zero.copy(), 0.0, coef, intercept(bias)))
        rng = np.random.default_rng(self.random_state)
        sd = 2.0 / math.sqrt(max(1.0, k / 2.0))
        for _ in range(self.n_starts - len(starts)):
            starts.append(
                LinearGatePair(
                    rng.normal(0.0, sd, k),
                    float(rng.normal()),
                    rng.normal(0.0, sd, shape),
                    intercept(rng.normal() if m == 2 else rng.normal(size=m)),
                )
            )
        pair = fit_adapt_lin(
            Z,
            y_sign,
            p0,
            groups,
            self.feature_costs_,
            float(self.tradeoff),
            float(self.p_full),
            mode=self.q_constraint,
            starts=starts,
            max_iter=self.max_iter,
            inner_iter=self.inner_iter,
        )
        self.gate_coef_, self.gate_intercept_ = pair.wg, pair.bg
        self.lpc_coef_, self.lpc_intercept_ = pair.wf, pair.bf
        self.objective_, self.history_, self.start_ = pair.objective, pair.history, pair.start
        self.n_iter_ = len(pair.history) - 1

    def _fit_gbrt(self, X, y_sign, p0, groups) -> None:
        pair = fit_adapt_gbrt(
            X,
            y_sign,
            p0,
            self._hpc_train_correct,
            groups,
            self.feature_costs_,
            float(self.tradeoff),
            float(self.p_full),
            mode=self.q_constraint,
            threshold=float(self.threshold),
            n_estimators=self.n_estimators,
            learning_rate=float(self.learning_rate),
            max_depth=self.max_depth,
            min_child_samples=self.min_child_samples,
            max_iter=self.max_iter,
            random_state=self.random_state,
            n_classes=len(self.classes_),
        )
        self._set_boosters(pair.gate, pair.gate_intercept, pair.lpc, pair.lpc_intercept)
        self.history_ = pair.history
        self.n_iter_ = len(pair.history)

    def _set_boosters(self, gate, gate_intercept, lpc, lpc_intercept) -> None:
        self.gate_booster_, self.gate_intercept_ = gate, float(gate_intercept)
        self.lpc_booster_, self.lpc_intercept_ = lpc, _intercept(lpc_intercept)
        self.gate_trees_ = TreeEnsemble.from_booster(gate)
        self.lpc_trees_ = TreeEnsemble.from_booster(lpc)

    def _model_used(self) -> np.ndarray:
        """Features the gate or the low-cost model may test (per feature)."""
        if self.method == "lin":
            cols = _active(self.gate_coef_) | _active(self.lpc_coef_)
        else:
            cols = self.gate_trees_.used_columns | self.lpc_trees_.used_columns
        return group_usage(cols[None, :], self.feature_groups_)[0]

    # ------------------------------------------------------------------ prediction
    def _X(self, X: np.ndarray) -> np.ndarray:
        """Validated rows; NaN is allowed only in columns no part of the model reads (as
        :class:`ColumnSubsetModel` fills them)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan", dtype=np.float64)
        needed = [
            c
            for name, u in zip(self.feature_groups_, self.used_features_, strict=True)
            if u
            for c in self.feature_groups_[name]
        ]
        if np.isnan(X[:, needed]).any():
            raise InvalidArgumentError("Input X contains NaN in columns the model reads")
        return X

    def _raw(self, X: np.ndarray, which: str) -> np.ndarray:
        """Gate margins, or the low-cost model's margins (rows x classes with many classes)."""
        if self.method == "lin":
            w = self.gate_coef_ if which == "gate" else self.lpc_coef_
            b = self.gate_intercept_ if which == "gate" else self.lpc_intercept_
            act = _active(w)
            z = (X[:, act] - self.mean_[act]) / self.scale_[act]
            return z @ w[act] + b
        booster = self.gate_booster_ if which == "gate" else self.lpc_booster_
        b = self.gate_intercept_ if which == "gate" else self.lpc_intercept_
        if booster.current_iteration() == 0:
            return np.broadcast_to(b, (X.shape[0], *np.shape(b))).astype(np.float64)
        return booster.predict(X, raw_score=True) + b

    def _lpc_proba(self, raw: np.ndarray) -> np.ndarray:
        """The low-cost model's class probabilities from its margins."""
        if raw.ndim == 1:
            p1 = expit(raw)
            return np.column_stack([1.0 - p1, p1])
        return softmax(raw, axis=1)

    def gate_score(self, X: np.ndarray) -> np.ndarray:
        """``g(x)``: rows with ``g > threshold`` go to the high-cost model.  O(rows * model)."""
        return self._raw(self._X(X), "gate")

    def lpc_score(self, X: np.ndarray) -> np.ndarray:
        """``f1(x)``: the low-cost model's margin (positive: ``classes_[1]``); with many
        classes its rows x classes scores (softmax: the probabilities)."""
        return self._raw(self._X(X), "lpc")

    def routes(self, X: np.ndarray) -> np.ndarray:
        """Boolean per row: sent to the high-cost model.  O(rows * gate)."""
        return self.gate_score(X) > self.threshold

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Composite probabilities: the high-cost model's on routed rows, ``sigmoid(f1)``
        (many classes: ``softmax(f1)``) else.

        Runtime complexity: gate and low-cost model on every row, the high-cost model on the
        routed rows only.
        """
        X = self._X(X)
        to_hpc = self._raw(X, "gate") > self.threshold
        proba = self._lpc_proba(self._raw(X, "lpc"))
        if to_hpc.any():
            proba[to_hpc] = self.high_cost_.proba_of(X[to_hpc], self.classes_)
        return proba

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Composite predictions.  Runtime: that of :meth:`predict_proba`."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Log-odds of ``classes_[1]`` under the composite model; with many classes the
        log-probabilities of every class (rows x classes)."""
        check_is_fitted(self)
        if len(self.classes_) > 2:
            return np.log(np.clip(self.predict_proba(X), 1e-15, 1.0))
        p = np.clip(self.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
        return np.log(p) - np.log1p(-p)

    # ------------------------------------------------------------------ cost
    def _column_usage(self, X: np.ndarray, which: str) -> np.ndarray:
        if self.method == "lin":
            w = self.gate_coef_ if which == "gate" else self.lpc_coef_
            return np.broadcast_to(_active(w), X.shape).copy()
        booster = self.gate_booster_ if which == "gate" else self.lpc_booster_
        trees = self.gate_trees_ if which == "gate" else self.lpc_trees_
        if trees.n_trees == 0:
            return np.zeros(X.shape, dtype=bool)
        leaves = np.asarray(booster.predict(X, pred_leaf=True), dtype=np.int64)
        return trees.column_usage(leaves.reshape(X.shape[0], -1))

    def column_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x columns needed: gate, plus low-cost or high-cost model by the route.

        Runtime complexity: O(rows * columns) plus the models' path computations.
        """
        X = self._X(X)
        gate = self._column_usage(X, "gate")
        to_hpc = self._raw(X, "gate") > self.threshold
        usage = gate | self._column_usage(X, "lpc")
        if to_hpc.any():
            hpc = self.high_cost_.column_usage(X[to_hpc])
            usage[to_hpc] = hpc if self.hpc_cost_mode == "hpc_only" else hpc | gate[to_hpc]
        return usage

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x features (order of ``feature_groups_``): what each row needed, each once.

        Runtime complexity: that of :meth:`column_usage`.
        """
        return group_usage(self.column_usage(X), self.feature_groups_)

    def prediction_cost(self, X: np.ndarray) -> np.ndarray:
        """Per-row cost at the training costs: ``feature_usage(X) @ feature_costs_``."""
        return self.feature_usage(X) @ self.feature_costs_

    # ------------------------------------------------------------------ on demand
    def predict_item(self, item: Any, featurizer: OnDemandFeaturizer) -> ItemPrediction:
        """Predict one item computing features on demand: the gate's first, the rest if needed.

        ADAPT-LIN computes the gate's features, then those of the low-cost model or of the
        high-cost model (every feature it reads) depending on the route; ADAPT-GBRT walks each
        tree (:func:`learners.budgeted.on_demand.walk_on_demand`) and computes a feature when a
        split on the item's path first needs it.  Each feature is computed once.

        Returns
        -------
        polydom.index.item_prediction.ItemPrediction
            ``label``/``proba`` equal ``predict``/``predict_proba`` on the item's full row;
            ``raw_score`` is ``[g(x), f1(x)]`` (``f1`` NaN when routed to the high-cost model;
            with many classes ``f1(x)`` is its score per class).

        Runtime complexity: O(model size) plus the computed features.
        """
        check_is_fitted(self)
        if not callable(getattr(featurizer, "compute", None)):
            raise InvalidArgumentError(
                f"featurizer must have a compute(item, name) method, got {featurizer!r}"
            )
        cache = _FeatureCache(featurizer, self.feature_groups_)
        owner = np.empty(self.n_features_in_, dtype=object)
        for name, cols in self.feature_groups_.items():
            owner[cols] = name
        splits = 0

        def score(which: str) -> float:
            nonlocal splits
            if self.method == "lin":
                w = self.gate_coef_ if which == "gate" else self.lpc_coef_
                for col in np.flatnonzero(_active(w)):
                    cache.compute(item, owner[col])
                return self._raw(cache.row(self.n_features_in_)[None, :], which)[0]
            trees = self.gate_trees_ if which == "gate" else self.lpc_trees_
            b = self.gate_intercept_ if which == "gate" else self.lpc_intercept_
            walk = walk_on_demand(trees, self.feature_groups_, self.n_features_in_, item, cache)
            splits += walk.split_evaluations
            return walk.raw_score.sum() + b if np.ndim(b) == 0 else walk.raw_score + b

        g = float(score("gate"))
        if g > self.threshold:
            for col in self.high_cost_.columns:
                cache.compute(item, owner[col])
            row = cache.row(self.n_features_in_)
            proba = self.high_cost_.proba_of(row[None, :], self.classes_)[0]
            raw = np.array([g, np.nan])
        else:
            f = score("lpc")
            proba = self._lpc_proba(np.atleast_1d(f)[None, :] if np.ndim(f) else
                                    np.array([float(f)]))[0]
            raw = np.concatenate([[g], np.atleast_1d(f)])
        return ItemPrediction(
            self.classes_[int(np.argmax(proba))],
            computed=tuple(cache.order),
            feature_seconds=dict(cache.seconds),
            model_features=self.used_feature_names_,
            proba=proba,
            raw_score=raw,
            split_evaluations=splits,
        )

    # ------------------------------------------------------------------ storage
    # ---- the sweep's hooks (learners.budgeted.sweep) ----
    def sweep_settings(self, tradeoffs: Sequence[float], p_fulls: Sequence[float] = BUILD_P_FULLS,
                       **options: Any) -> list[dict]:
        """The paper's two cost knobs (section 4): every ``(tradeoff, p_full)`` pair.

        Runtime complexity: O(len(tradeoffs) * len(p_fulls)).
        """
        return [{"tradeoff": float(t), "p_full": float(p)} for t in tradeoffs for p in p_fulls]

    def sweep_shared(self, X: np.ndarray, y: np.ndarray, first: Mapping[str, Any],
                     **options: Any) -> dict[str, Any]:
        """The high-cost model, fitted once on a split's training rows when
        ``fit_high_cost`` (a build names an unfitted one), and its training probabilities
        when every fit would compute them: shared by every setting of the split.

        Runtime complexity: one high-cost fit (plus its cross-validated probabilities).
        """
        shared: dict[str, Any] = {}
        X = np.asarray(X, dtype=np.float64)
        if self.fit_high_cost:
            cols = self._high_cost_columns(X.shape[1])
            shared["high_cost_model"] = clone(self.high_cost_model).fit(X[:, cols], y)
            shared["fit_high_cost"] = False
        proto = clone(self).set_params(**shared) if shared else self
        if isinstance(proto.high_cost_proba, str):
            shared["high_cost_proba"] = proto.high_cost_train_proba(X, y)
        return shared

    def sweep_variants(self, X: np.ndarray, thresholds: Sequence[float | str] = (0.0,),
                       **options: Any) -> list[tuple[dict, Any]]:
        """This fit under each routing threshold ``g(x) > threshold`` (spec 2.6, pitfall 1:
        an extension of the paper), without refitting; ``"quantile"`` routes the fraction
        of the rows of ``X`` closest to ``p_full``.

        Runtime complexity: one gate evaluation on ``X`` per ``"quantile"``.
        """
        out = []
        for tau in check_thresholds(thresholds):
            value = routing_threshold(self.gate_score(X), self.p_full) if tau == "quantile" \
                else tau
            model = copy.copy(self)
            model.threshold = float(value)
            out.append(({"threshold": tau}, model))
        return out

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as numeric arrays + JSON, without pickle (``storage``'s array format).

        The high-cost model is stored by :meth:`HighCostModel.to_arrays` (a ``learners``
        model's arrays, or a skops archive of a scikit-learn estimator); boosters as their
        LightGBM text.

        Runtime complexity: linear in the size of the three models.

        Raises
        ------
        ValueError
            If not fitted, or a parameter or the high-cost model has no such form.
        """
        check_is_fitted(self)
        params = self.get_params(deep=False)
        params.pop("high_cost_model")
        params = params_json(params)
        if not isinstance(params["high_cost_proba"], str):
            params["high_cost_proba"] = "given"
        if params["high_cost_columns"] is not None:
            params["high_cost_columns"] = [int(c) for c in params["high_cost_columns"]]
        hpc_arrays, hpc_meta = self.high_cost_.to_arrays()
        arrays = {f"hpc.{k}": v for k, v in hpc_arrays.items()}
        arrays["feature_costs"] = np.asarray(self.feature_costs_, dtype=np.float64)
        arrays["classes"] = self.classes_ if not self.classes_.dtype.hasobject else np.zeros(0)
        meta: dict[str, Any] = {
            "params": params,
            "n_features_in": int(self.n_features_in_),
            "groups": self.feature_groups_,
            "hpc": hpc_meta,
            "high_cost_proba": self.high_cost_proba_,
            "gate_intercept": float(self.gate_intercept_),
            "lpc_intercept": _intercept_json(self.lpc_intercept_),
        }
        if self.classes_.dtype.hasobject:
            meta["classes"] = [str(c) for c in self.classes_]
        if self.method == "lin":
            arrays.update(
                gate_coef=self.gate_coef_,
                lpc_coef=self.lpc_coef_,
                mean=self.mean_,
                scale=self.scale_,
            )
        else:
            for which, booster in (("gate", self.gate_booster_), ("lpc", self.lpc_booster_)):
                arrays[f"{which}_booster"] = np.frombuffer(
                    booster.model_to_string().encode(), dtype=np.uint8
                )
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"parameters of AdaptClassifier have no JSON form: {exc}") from None
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]):
        """Rebuild a fitted model from :meth:`to_arrays` (same predictions and usage).

        Runtime complexity: linear in the size of the stored state.
        """
        hpc = HighCostModel.from_arrays(
            {k[4:]: v for k, v in arrays.items() if k.startswith("hpc.")}, meta["hpc"]
        )
        params = dict(meta["params"])
        if params["high_cost_proba"] == "given":  # the training rows' array is not kept
            params["high_cost_proba"] = "fitted"
        model = cls(high_cost_model=hpc.estimator, **params)
        model.high_cost_ = hpc
        model.high_cost_proba_ = meta["high_cost_proba"]
        model.classes_ = (
            np.asarray(meta["classes"], dtype=object)
            if "classes" in meta
            else np.asarray(arrays["classes"])
        )
        model.n_features_in_ = int(meta["n_features_in"])
        model.feature_groups_ = {str(k): list(v) for k, v in meta["groups"].items()}
        model.feature_costs_ = np.asarray(arrays["feature_costs"], dtype=np.float64)
        if model.method == "lin":
            model.gate_coef_ = np.asarray(arrays["gate_coef"], dtype=np.float64)
            model.lpc_coef_ = np.asarray(arrays["lpc_coef"], dtype=np.float64)
            model.mean_ = np.asarray(arrays["mean"], dtype=np.float64)
            model.scale_ = np.asarray(arrays["scale"], dtype=np.float64)
            model.gate_intercept_ = float(meta["gate_intercept"])
            model.lpc_intercept_ = _intercept(meta["lpc_intercept"])
        else:
            gate, lpc = (
                booster_from_text(bytes(arrays[f"{w}_booster"]).decode(), f"ADAPT {w} booster")
                for w in ("gate", "lpc")
            )
            model._set_boosters(gate, meta["gate_intercept"], lpc, meta["lpc_intercept"])
        model.used_features_ = (
            model._model_used()
            | group_usage(
                np.isin(np.arange(model.n_features_in_), hpc.columns)[None, :],
                model.feature_groups_,
            )[0]
        )
        return model
