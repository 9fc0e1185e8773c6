"""CEGB and GreedyMiser classifiers on LightGBM's built-in cost-efficient gradient boosting.

Boosting is LightGBM's (``lightgbm.train`` with its ``cegb_*`` parameters); this module maps
the paper's quantities onto those parameters, measures per-row prediction cost from the
fitted trees (:mod:`learners.budgeted.tree_paths`), and predicts single items on demand.

What LightGBM's documentation leaves unclear (read from its source, spec section 2.5, and
checked by our tests):

* ``cegb_penalty_split`` is multiplied by the number of training rows in the leaf being
  split: it is the paper's evaluation cost ``alpha * |I_p|``, i.e. ``alpha`` per row per
  split node a row passes.
* ``cegb_penalty_feature_lazy[m]`` is paid once per (row, feature) across *all* trees of the
  model: a per-row bitset remembers which rows already had ``m`` tested on their path (the
  paper's ``beta_m``, Eq. 4).  Only rows of the leaf being split are marked (in-bag rows when
  bagging is on).
* ``cegb_penalty_feature_coupled[m]`` is paid once per *model*, the first time ``m`` is used
  in any split (the paper's ``gamma_m``, Eq. 5); later splits on ``m`` are free.
* LightGBM's split gain has no factor 1/2 (``G_l^2/H_l + G_r^2/H_r - G_p^2/H_p``), so its
  ``cegb_tradeoff`` is ``2 * lambda`` of the paper's Eq. 12.  ``tradeoff`` here is the
  paper's ``lambda``; we pass ``cegb_tradeoff = 2 * tradeoff``.
* Penalties are subtracted after the best threshold of a (leaf, feature) is found, so they
  change which leaf/feature is split and whether to split, never the threshold; a split
  whose penalised gain is ``<= 0`` is not made (a large tradeoff gives an empty model).

Feature groups: LightGBM charges penalties per column.  When a feature spans several
columns (``feature_groups``), the true cost of a group is paid once, for its first column.
LightGBM cannot share a payment between columns, so the training penalty of each column is
the group's full cost (``group_penalty="full"``, an upper bound: further columns of an
already-paid group are charged again) or the group's cost divided by its width
(``"shared"``: the whole group costs at most the group's cost).  Measured usage and cost
(:meth:`CEGBClassifier.feature_usage`) are exact per group either way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from learners.budgeted.contract import (
    BudgetedClassifierMixin,
    check_feature_costs,
    column_groups,
    group_usage,
    params_json,
)
from learners.budgeted.on_demand import OnDemandFeaturizer, walk_on_demand
from learners.budgeted.tree_paths import TreeEnsemble
from learners.codecs.lightgbm_text import booster_from_text
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction

__all__ = ["CEGBClassifier", "GreedyMiserClassifier"]

_RESERVED = (
    "objective",
    "num_class",
    "cegb_tradeoff",
    "cegb_penalty_split",
    "cegb_penalty_feature_lazy",
    "cegb_penalty_feature_coupled",
    "linear_tree",
    "num_iterations",
)


def _first_order_binary(preds: np.ndarray, data: lgb.Dataset) -> tuple[np.ndarray, np.ndarray]:
    y = data.get_label()
    return expit(preds) - y, np.ones_like(preds)


def _first_order_multiclass(preds: np.ndarray, data: lgb.Dataset) -> tuple[np.ndarray, np.ndarray]:
    y = data.get_label().astype(np.int64)
    p = softmax(preds, axis=1)
    p[np.arange(len(y)), y] -= 1.0
    return p, np.ones_like(p)


class CEGBClassifier(BudgetedClassifierMixin, ClassifierMixin, BaseEstimator):
    """Cost-efficient gradient boosting (Peter et al., NIPS 2017) on LightGBM.

    Parameters
    ----------
    feature_costs : sequence of float or mapping of str to float, optional
        Cost of each feature at the reference size the model is trained for: one number per
        column, or per group of ``feature_groups`` (a sequence in group order or a mapping by
        group name).  None means all zero (plain LightGBM).
    tradeoff : float, default 1.0
        The paper's ``lambda`` (accuracy/cost trade-off); LightGBM gets ``2 * tradeoff``.
    cost_kind : {"lazy", "coupled"}, default "lazy"
        ``"lazy"``: a feature is paid once per row, when a tree on that row's path first
        tests it (on-demand computation).  ``"coupled"``: paid once per model, when any split
        first uses it (computed for all rows at once).
    split_cost : float, default 0.0
        The paper's ``alpha``: cost of evaluating one split node for one row.
    feature_groups : mapping of str to list of int, optional
        Named column groups, partitioning the columns; a group is one feature for cost
        purposes.  Default: column ``j`` is feature ``"x{j}"``.
    group_penalty : {"full", "shared"}, default "full"
        How a group's cost is put on its columns for training (see the module docstring).
    n_estimators : int, default 100
        Boosting rounds.
    learning_rate : float, default 0.1
    num_leaves : int, default 31
    max_depth : int, default -1
        -1: no limit (LightGBM's leaf-wise, best-first growth limited by ``num_leaves``).
    first_order : bool, default False
        Fit the negative gradient by least squares (hessian 1), as GreedyMiser does.
    random_state : int, optional
        LightGBM's ``seed``.
    n_jobs : int, optional
        LightGBM threads; None means 1 (deterministic, and no oversubscription), -1 all cores.
    **lightgbm_params
        Any other LightGBM parameter, passed through untouched (``verbosity`` defaults to
        -1).  ``objective``, ``num_class``, ``linear_tree`` and the ``cegb_*`` keys are set by
        this class and rejected here.

    Attributes
    ----------
    booster_ : lightgbm.Booster
    train_params_ : dict
        The exact parameters given to ``lightgbm.train``.
    classes_ : ndarray
    n_features_in_ : int
    feature_groups_ : dict of str to list of int
    feature_costs_ : ndarray
        Cost of each feature (group) used for training.
    ensemble_ : TreeEnsemble
        The trees as arrays, with per-leaf path masks.
    used_features_ : ndarray of bool
        Features that some split of the model tests.

    Notes
    -----
    Fit: LightGBM's, O(n_estimators * n_classes * rows * columns) with histograms.
    ``feature_usage``: LightGBM's leaf prediction plus O(rows * trees * columns / 8).
    """

    learner_name = "cegb"

    def __init__(
        self,
        feature_costs: Sequence[float] | Mapping[str, float] | None = None,
        tradeoff: float = 1.0,
        cost_kind: str = "lazy",
        split_cost: float = 0.0,
        feature_groups: Mapping[str, Sequence[int]] | None = None,
        group_penalty: str = "full",
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        num_leaves: int = 31,
        max_depth: int = -1,
        first_order: bool = False,
        random_state: int | None = None,
        n_jobs: int | None = None,
        **lightgbm_params: Any,
    ) -> None:
        self.feature_costs = feature_costs
        self.tradeoff = tradeoff
        self.cost_kind = cost_kind
        self.split_cost = split_cost
        self.feature_groups = feature_groups
        self.group_penalty = group_penalty
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.first_order = first_order
        self.random_state = random_state
        self.n_jobs = n_jobs
        self._lightgbm_params = dict(lightgbm_params)

    # ---- scikit-learn parameter plumbing for **lightgbm_params ----
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters, including the LightGBM pass-through ones."""
        params = super().get_params(deep=deep)
        params.update(self._lightgbm_params)
        return params

    def set_params(self, **params: Any) -> CEGBClassifier:
        """Set parameters; unknown keys are LightGBM pass-through parameters."""
        own = set(self._get_param_names())
        for name, value in params.items():
            if name in own:
                setattr(self, name, value)
            else:
                self._lightgbm_params[name] = value
        return self

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ---- fitting ----
    def _validate_params(self, n_columns: int) -> tuple[dict[str, list[int]], np.ndarray]:
        if self.cost_kind not in ("lazy", "coupled"):
            raise InvalidArgumentError(
                f"cost_kind must be 'lazy' or 'coupled', got {self.cost_kind!r}")
        if self.group_penalty not in ("full", "shared"):
            raise InvalidArgumentError(
                f"group_penalty must be 'full' or 'shared', got {self.group_penalty!r}"
            )
        for name in ("tradeoff", "split_cost"):
            v = getattr(self, name)
            if not (isinstance(v, int | float | np.number) and np.isfinite(v) and v >= 0):
                raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
        bad = sorted(k for k in self._lightgbm_params if k in _RESERVED)
        if bad:
            raise InvalidArgumentError(
                f"lightgbm_params may not set {bad}: CEGBClassifier sets them")
        groups = column_groups(self.feature_groups, n_columns)
        names = list(groups)
        costs = check_feature_costs(self.feature_costs, names)
        return groups, costs

    def _column_penalties(self) -> np.ndarray:
        pen = np.zeros(self.n_features_in_)
        for cost, cols in zip(self.feature_costs_, self.feature_groups_.values(), strict=True):
            pen[cols] = cost / len(cols) if self.group_penalty == "shared" else cost
        return pen

    def fit(
        self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> CEGBClassifier:
        """Fit the boosted trees with the cost penalties.

        Parameters
        ----------
        X : array-like of shape (rows, columns); NaN allowed (LightGBM's missing values)
        y : array-like of shape (rows,)
        sample_weight : array-like of shape (rows,), optional

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise InvalidArgumentError(
                f"CEGBClassifier needs samples of at least 2 classes in y; got 1 class "
                f"({self.classes_[0]!r})"
            )
        self.feature_groups_, self.feature_costs_ = self._validate_params(X.shape[1])
        weight = None if sample_weight is None else _check_sample_weight(sample_weight, X)
        if weight is not None and len(np.unique(y_enc[weight > 0])) < 2:
            raise InvalidArgumentError(
                "sample_weight leaves samples of only 1 class with positive weight")
        binary = n_classes == 2
        params: dict[str, Any] = {"verbosity": -1}
        params.update(self._lightgbm_params)
        if self.first_order:
            params["objective"] = _first_order_binary if binary else _first_order_multiclass
        else:
            params["objective"] = "binary" if binary else "multiclass"
        if not binary:
            params["num_class"] = n_classes
        params.update(
            learning_rate=self.learning_rate,
            num_leaves=self.num_leaves,
            max_depth=self.max_depth,
            cegb_tradeoff=2.0 * float(self.tradeoff),
            cegb_penalty_split=float(self.split_cost),
        )
        if self.random_state is not None:
            params["seed"] = int(self.random_state)
        if "num_threads" not in params:
            params["num_threads"] = (
                1 if self.n_jobs is None else (0 if self.n_jobs == -1 else int(self.n_jobs))
            )
        pen = self._column_penalties().tolist()
        zeros = [0.0] * X.shape[1]
        params["cegb_penalty_feature_lazy"] = pen if self.cost_kind == "lazy" else zeros
        params["cegb_penalty_feature_coupled"] = pen if self.cost_kind == "coupled" else zeros
        self.train_params_ = params
        self.booster_ = self._train(params, X, y_enc, weight)
        self._sigmoid = float(params.get("sigmoid", 1.0))
        self.ensemble_ = TreeEnsemble.from_booster(self.booster_)
        self.used_features_ = group_usage(
            self.ensemble_.used_columns[None, :], self.feature_groups_
        )[0]
        return self

    def _train(
        self, params: dict[str, Any], X: np.ndarray, y: np.ndarray, weight: np.ndarray | None
    ) -> lgb.Booster:
        rounds = int(self.n_estimators)
        try:
            return lgb.train(params, lgb.Dataset(X, y, weight=weight), num_boost_round=rounds)
        except lgb.basic.LightGBMError as exc:
            # LightGBM aborts (CEGB code, or a custom objective) when binning left no
            # splittable column (tiny data).  No split is possible then: the model is the
            # constant that plain training with the built-in objective gives.
            if "num_features()) > (0)" not in str(exc):
                raise
        plain = {k: v for k, v in params.items() if not k.startswith("cegb_")}
        plain["objective"] = "binary" if len(self.classes_) == 2 else "multiclass"
        return lgb.train(plain, lgb.Dataset(X, y, weight=weight), num_boost_round=rounds)

    # ---- storage: numeric arrays + JSON, no pickle ----
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as numeric arrays and a JSON-able dict (``storage``'s array format).

        The booster is its LightGBM text model (as bytes); nothing needs pickle.  Register
        the class with ``storage.register_array_model`` to store it in an index database.

        Runtime complexity: O(model size).

        Raises
        ------
        ValueError
            If the model is not fitted, or a parameter has no JSON form.
        """
        check_is_fitted(self)
        params = params_json(self.get_params(deep=False))
        meta: dict[str, Any] = {
            "params": params,
            "n_features_in": int(self.n_features_in_),
            "groups": self.feature_groups_,
            "sigmoid": self._sigmoid,
        }
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"parameters of {type(self).__name__} have no JSON form: {exc}"
            ) from None
        arrays = {
            "booster": np.frombuffer(self.booster_.model_to_string().encode(), dtype=np.uint8),
            "feature_costs": np.asarray(self.feature_costs_, dtype=np.float64),
        }
        if self.classes_.dtype.hasobject:
            meta["classes"] = [str(c) for c in self.classes_]
        else:
            arrays["classes"] = self.classes_
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]):
        """Rebuild a fitted model from :meth:`to_arrays` (predictions and usage unchanged).

        Runtime complexity: O(model size).
        """
        model = cls(**meta["params"])
        model.booster_ = booster_from_text(bytes(arrays["booster"]).decode(), "CEGB booster")
        model.classes_ = (
            np.asarray(arrays["classes"])
            if "classes" in arrays
            else np.asarray(meta["classes"], dtype=object)
        )
        model.n_features_in_ = int(meta["n_features_in"])
        model.feature_groups_ = {str(k): list(v) for k, v in meta["groups"].items()}
        model.feature_costs_ = np.asarray(arrays["feature_costs"], dtype=np.float64)
        model._sigmoid = float(meta["sigmoid"])
        model.ensemble_ = TreeEnsemble.from_booster(model.booster_)
        model.used_features_ = group_usage(
            model.ensemble_.used_columns[None, :], model.feature_groups_
        )[0]
        return model

    # ---- prediction ----
    def _X(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, reset=False, ensure_all_finite="allow-nan", dtype=np.float64)

    def _proba_from_raw(self, raw: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.float64).reshape(raw.shape[0], -1)
        if len(self.classes_) == 2:
            p1 = expit(self._sigmoid * raw[:, 0])
            return np.column_stack([1.0 - p1, p1])
        return softmax(raw, axis=1)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Raw margins: shape (rows,) for binary, (rows, classes) for multiclass."""
        X = self._X(X)
        return self.booster_.predict(X, raw_score=True)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (rows, classes).  Runtime: O(rows * total depth)."""
        X = self._X(X)
        return self._proba_from_raw(self.booster_.predict(X, raw_score=True))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted classes.  Runtime complexity: O(rows * total depth)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    # ---- per-row cost ----
    def leaves(self, X: np.ndarray) -> np.ndarray:
        """LightGBM leaf index of every (row, tree)."""
        X = self._X(X)
        leaves = self.booster_.predict(X, pred_leaf=True)
        return np.asarray(leaves, dtype=np.int64).reshape(-1, self.ensemble_.n_trees)

    def column_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x columns: the columns tested on each row's paths over all trees."""
        return self.ensemble_.column_usage(self.leaves(X))

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x features (groups): which features the model needed for each row.

        A feature is needed by a row when a split on one of its columns lies on the row's
        root-to-leaf path in at least one tree (lazy, on-demand acquisition).

        Runtime complexity: O(rows * total depth + rows * trees * columns / 8).
        """
        return group_usage(self.column_usage(X), self.feature_groups_)

    def split_evaluations(self, X: np.ndarray) -> np.ndarray:
        """Number of split nodes each row passes over all trees."""
        return self.ensemble_.split_evaluations(self.leaves(X))

    def prediction_cost(self, X: np.ndarray) -> np.ndarray:
        """Per-row cost at the training costs: ``sum_f feature_costs_[f] 1[f used] +
        split_cost * split_evaluations``."""
        leaves = self.leaves(X)
        usage = group_usage(self.ensemble_.column_usage(leaves), self.feature_groups_)
        return usage @ self.feature_costs_ + float(self.split_cost) * (
            self.ensemble_.split_evaluations(leaves)
        )

    # ---- on-demand prediction ----
    def predict_item(self, item: Any, featurizer: OnDemandFeaturizer) -> ItemPrediction:
        """Predict one item, computing a feature only when a split on the item's path needs it.

        The trees are walked node by node (:func:`learners.budgeted.on_demand.walk_on_demand`);
        at a split on a column whose feature has not been computed for this item yet,
        ``featurizer.compute(item, name)`` is called (and timed) and its values are cached
        for the remaining trees.  Features off the item's paths are never computed.

        Parameters
        ----------
        item : object
            Whatever the featurizer understands (an image, a record, ...).
        featurizer : OnDemandFeaturizer
            Has ``compute(item, name) -> values of that feature's columns``.

        Returns
        -------
        polydom.index.item_prediction.ItemPrediction
            ``label`` and ``proba`` equal ``predict``/``predict_proba`` on the item's full
            feature row; ``computed`` and ``feature_seconds`` say what was computed.

        Runtime complexity: O(total depth) plus the computed features.
        """
        check_is_fitted(self)
        row = walk_on_demand(
            self.ensemble_, self.feature_groups_, self.n_features_in_, item, featurizer
        )
        proba = self._proba_from_raw(row.raw_score[None, :])[0]
        return ItemPrediction(
            self.classes_[int(np.argmax(proba))],
            computed=row.computed,
            feature_seconds=row.feature_seconds,
            model_features=self.used_feature_names_,
            proba=proba,
            raw_score=row.raw_score,
            split_evaluations=row.split_evaluations,
        )


class GreedyMiserClassifier(CEGBClassifier):
    """GreedyMiser (Xu, Weinberger, Chapelle, ICML 2012) as a mode of CEGB on LightGBM.

    Spec 2.6: every feature cost is *coupled* (paid once for the model, when the feature is
    new to the ensemble), trees are shallow and depth-limited (``max_depth=4``,
    ``num_leaves=16``), the negative gradient is fitted by least squares
    (``first_order=True``, hessian 1), no split penalty.  Differences from the original,
    which LightGBM cannot express: trees are grown leaf-wise up to the depth limit rather
    than level by level (with 16 leaves and depth 4 a tree that fills its budget is the
    complete depth-4 tree either way), and a feature first used inside the current tree is
    free for the rest of that tree (the original charges it until the tree is finished).

    Parameters are those of :class:`CEGBClassifier` with GreedyMiser's defaults.
    """

    learner_name = "greedymiser"

    def __init__(
        self,
        feature_costs: Sequence[float] | Mapping[str, float] | None = None,
        tradeoff: float = 1.0,
        cost_kind: str = "coupled",
        split_cost: float = 0.0,
        feature_groups: Mapping[str, Sequence[int]] | None = None,
        group_penalty: str = "full",
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        num_leaves: int = 16,
        max_depth: int = 4,
        first_order: bool = True,
        random_state: int | None = None,
        n_jobs: int | None = None,
        **lightgbm_params: Any,
    ) -> None:
        super().__init__(
            feature_costs=feature_costs,
            tradeoff=tradeoff,
            cost_kind=cost_kind,
            split_cost=split_cost,
            feature_groups=feature_groups,
            group_penalty=group_penalty,
            n_estimators=n_estimators,
            learning_rate=learning_rate,
            num_leaves=num_leaves,
            max_depth=max_depth,
            first_order=first_order,
            random_state=random_state,
            n_jobs=n_jobs,
            **lightgbm_params,
        )
