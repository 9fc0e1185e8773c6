"""CSTC: the cost-sensitive tree of classifiers (Xu et al., ICML 2013; JMLR 15, 2014).

A tree of linear classifiers over a feature map phi(x) (raw columns, or the boosting trick of
:mod:`learners.budgeted.cstc.feature_map`).  An input starts at the root; each inner node sends it
to its upper child when ``phi(x) @ beta > theta``, else to its lower one; the node whose
terminal it reaches predicts ``phi(x) @ beta``.  Features are computed on demand, the first
time a node on the input's path needs them, so different inputs pay for different atomic
features, each once.  Training minimises the relaxed expected cost objective of
:mod:`learners.budgeted.cstc.engine` (soft sigmoid routing, mixed-norm cost with reach
probabilities, cyclic block coordinate descent, top-down initialisation, bottom-up pruning on
a validation split, leaf fine-tuning).

:class:`CSTCClassifier` (binary: squared loss on +-1; multiclass: one tree per class,
one-vs-rest, a row paying the union of its paths' features), :class:`CSTCRegressor`; both
follow the budgeted-learner contract of :mod:`learners.budgeted.contract`.

Deviations from the paper, all off by default (spec 2.2, 2.5, 2.7): ``routing_temperature``
(sharper sigmoid), ``support_threshold`` (drop weights below a fraction of a node's largest
before fine-tuning), ``finetune_routing="hard"`` (fine-tune leaves on the rows that reach
them at test time).  Together they make the paper's synthetic result reproducible
(``benchmarks/cstc_bench.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils.fixes import parse_version
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from learners.budgeted.contract import BudgetedClassifierMixin, check_feature_costs, params_json
from learners.budgeted.cstc.engine import (
    TreeStructure,
    exact_path_cost,
    exit_terminals,
    fit_tree,
    path_atoms,
)
from learners.budgeted.cstc.feature_map import BoostedTreeMap, LinearMap, map_from_arrays
from learners.budgeted.on_demand import OnDemandFeaturizer, compute_feature
from learners.columns import column_groups
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction

__all__ = [
    "CSTCClassifier",
    "CSTCRegressor",
    "CostTreeBase",
    "OneVsRestOutputs",
    "check_number",
    "class_weights",
    "cstc_criterion",
]


def check_number(name: str, value: Any, low: float, low_ok: bool = True) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a finite number >= (>) ``low``."""
    ok = isinstance(value, int | float | np.number) and np.isfinite(value) and (
        value >= low if low_ok else value > low)
    if not ok:
        raise InvalidArgumentError(
            f"{name} must be a finite number {'>=' if low_ok else '>'} {low}, "
            f"got {value!r}")


class CostTreeBase(BudgetedClassifierMixin, BaseEstimator):
    """Shared machinery of CSTC and CSCC: validation, feature maps, one tree per output.

    Subclasses set ``_mode`` (``"tree"`` or ``"cascade"``) and ``_structure()``, and their
    ``fit`` encodes the targets (one per output) for ``_fit_outputs``.  See
    :class:`CSTCClassifier` for the parameters.
    """

    _mode = "tree"

    #: values of the parameters left at None: the paper's (``paper_defaults=True``, and
    #: CSCC, which has no switch) and ours (docs/cstc.md, "Defaults")
    PAPER_SETTINGS = {"routing_temperature": 1.0, "support_threshold": 0.0,
                      "finetune_routing": "soft", "router_init": "leaf"}
    OUR_SETTINGS = {"routing_temperature": 20.0, "support_threshold": 0.05,
                    "finetune_routing": "hard", "router_init": "split"}

    # ---- parameters ----
    def _setting(self, name: str) -> Any:
        """A deviation parameter's value: as given, else by ``paper_defaults``."""
        value = getattr(self, name, None)
        if value is not None:
            return value
        paper = getattr(self, "paper_defaults", True)
        return (self.PAPER_SETTINGS if paper else self.OUR_SETTINGS)[name]

    def _structure(self) -> TreeStructure:
        check_number("depth", self.depth, 1)
        return TreeStructure.full(int(self.depth))

    def _validate_params(self) -> None:
        check_number("tradeoff", self.tradeoff, 0.0)
        check_number("rho", self.rho, 0.0)
        if not isinstance(getattr(self, "paper_defaults", True), bool | np.bool_):
            raise InvalidArgumentError(
                f"paper_defaults must be True or False, got {self.paper_defaults!r}")
        check_number("routing_temperature", self._setting("routing_temperature"), 0.0,
                     low_ok=False)
        check_number("support_threshold", self._setting("support_threshold"), 0.0)
        check_number("tol", self.tol, 0.0)
        check_number("max_sweeps", self.max_sweeps, 0)
        check_number("irls_iters", self.irls_iters, 1)
        if self.feature_map not in ("identity", "standard", "boosted"):
            raise InvalidArgumentError(
                "feature_map must be 'identity', 'standard' or 'boosted', got "
                f"{self.feature_map!r}")
        if self.structure not in ("prune", "greedy", "full"):
            raise InvalidArgumentError(
                "structure must be 'prune', 'greedy' or 'full', got "
                f"{self.structure!r}")
        if self._setting("finetune_routing") not in ("soft", "hard"):
            raise InvalidArgumentError(
                "finetune_routing must be None, 'soft' or 'hard', got "
                f"{self.finetune_routing!r}")
        if self._setting("router_init") not in ("split", "leaf"):
            raise InvalidArgumentError(
                "router_init must be None, 'split' or 'leaf', got "
                f"{self.router_init!r}")
        vf = self.validation_fraction
        if vf is not None and not (isinstance(vf, float | int) and 0 < vf < 1):
            raise InvalidArgumentError(f"validation_fraction must be None or in (0, 1), got {vf!r}")
        if self.feature_map == "boosted":
            check_number("n_trees", self.n_trees, 1)
            check_number("tree_depth", self.tree_depth, 1)
            check_number("tree_learning_rate", self.tree_learning_rate, 0.0, low_ok=False)
            check_number("tree_cost", self.tree_cost, 0.0)
            check_number("tree_cost_tradeoff", self.tree_cost_tradeoff, 0.0)

    def _new_map(self, owner: np.ndarray, n_atoms: int):
        if self.feature_map == "boosted":
            return BoostedTreeMap(owner, n_atoms, int(self.n_trees), int(self.tree_depth),
                                  float(self.tree_learning_rate), float(self.tree_cost),
                                  bool(self.fit_intercept), self.random_state,
                                  column_penalty=self.feature_costs_[owner],
                                  penalty_tradeoff=float(self.tree_cost_tradeoff))
        return LinearMap(owner, n_atoms, self.feature_map == "standard",
                         bool(self.fit_intercept))

    # ---- fitting ----
    def _split(self, n: int, strat: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        idx = np.arange(n)
        vf = self.validation_fraction
        if vf is None or n * vf < 2 or n * (1 - vf) < 2:
            return idx, None
        if strat is not None:
            _, counts = np.unique(strat, return_counts=True)
            n_val = int(np.ceil(n * vf))
            if counts.min() < 2 or n_val < len(counts) or n - n_val < len(counts):
                return idx, None
        tr, va = train_test_split(idx, test_size=vf, stratify=strat,
                                  random_state=self.random_state)
        return np.sort(tr), np.sort(va)

    def _fit_outputs(self, X: np.ndarray, targets: list[np.ndarray], weights: np.ndarray,
                     strat: np.ndarray | None, metric) -> None:
        self._validate_params()
        self.feature_groups_ = column_groups(self.feature_groups, X.shape[1])
        names = list(self.feature_groups_)
        self.feature_costs_ = check_feature_costs(self.feature_costs, names)
        owner = np.empty(X.shape[1], dtype=np.int64)
        for a, cols in enumerate(self.feature_groups_.values()):
            owner[cols] = a
        structure = self._structure()
        tr, va = self._split(len(X), strat)
        self.maps_, self.trees_, self.objective_traces_ = [], [], []
        for target in targets:
            self._fit_output(X, target, weights, owner, structure, tr, va, metric)
        self._derive()

    def _fit_output(self, X, target, weights, owner, structure, tr, va, metric) -> None:
        fmap = self._new_map(owner, len(self.feature_groups_)).fit(X[tr], target[tr])
        cm = fmap.cost_arrays(self.feature_costs_)
        validation = None
        if va is not None:
            validation = (fmap.transform(X[va]), target[va], weights[va])
        fit = fit_tree(
            fmap.transform(X[tr]), target[tr], weights[tr], cm, structure=structure,
            lam=float(self.tradeoff), rho=float(self.rho),
            tau=float(self._setting("routing_temperature")), mode=self._mode,
            prune_structure=self.structure == "prune",
            grow_structure=self.structure == "greedy",
            validation=None if validation is None else validation[:2],
            metric=None if validation is None else _bind(metric, validation[2]),
            max_sweeps=int(self.max_sweeps), irls_iters=int(self.irls_iters),
            tol=float(self.tol), support_threshold=float(self._setting("support_threshold")),
            finetune=bool(self.finetune), finetune_routing=self._setting("finetune_routing"),
            router_init=self._setting("router_init"))
        self.maps_.append(fmap)
        self.trees_.append((fit.structure, fit.B, fit.theta))
        self.objective_traces_.append(list(fit.objective_trace))

    def _derive(self) -> None:
        """Per-output path usage tables and ``used_features_`` from the fitted trees."""
        self._paths = []
        used = np.zeros(len(self.feature_groups_), dtype=bool)
        for fmap, (st, B, _) in zip(self.maps_, self.trees_, strict=True):
            cm = fmap.cost_arrays(self.feature_costs_)
            cols, atoms = path_atoms(B, st, cm)
            self._paths.append((cm, cols, atoms))
            used |= atoms.any(axis=0)
        self.used_features_ = used

    # ---- prediction ----
    def _X(self, X: np.ndarray) -> np.ndarray:
        """Validated rows; NaN is allowed only in columns of features the model never uses
        (what :class:`ColumnSubsetModel` puts there), and read as 0."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite="allow-nan")
        nan = np.isnan(X)
        if nan.any():
            unused = np.ones(X.shape[1], dtype=bool)
            for used, cols in zip(self.used_features_, self.feature_groups_.values(),
                                  strict=True):
                unused[cols] = not used
            bad = np.flatnonzero(nan.any(axis=0) & ~unused)
            if bad.size:
                raise InvalidArgumentError(
                    f"Input X contains NaN in columns {bad.tolist()}, which the "
                    "model may use")
            X = np.where(nan, 0.0, X)
        return X

    def _exits(self, X: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        with threadpool_limits(1, user_api="blas"):
            for fmap, (st, B, theta) in zip(self.maps_, self.trees_, strict=True):
                Phi = fmap.transform(X)
                out.append((Phi, exit_terminals(Phi, B, theta, st)))
        return out

    def _scores(self, X: np.ndarray) -> np.ndarray:
        X = self._X(X)
        cols = []
        for (Phi, term), (st, B, _) in zip(self._exits(X), self.trees_, strict=True):
            cols.append(np.einsum("ij,ij->i", Phi, B[st.term_node[term]]))
        return np.column_stack(cols)

    def exit_nodes(self, X: np.ndarray) -> np.ndarray:
        """Heap index of the node whose prediction each row gets (rows x outputs).

        Runtime complexity: O(rows * (T + depth)) per output.
        """
        X = self._X(X)
        return np.column_stack([np.asarray(st.heap)[st.term_node[term]]
                                for (_, term), (st, _, _) in zip(self._exits(X), self.trees_,
                                                                 strict=True)])

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x features: the atomic features on each row's root-to-exit path(s).

        A feature read by several nodes of a path (or by several one-vs-rest trees) is
        counted once.  Runtime complexity: O(rows * (T + depth + features)) per output.
        """
        X = self._X(X)
        usage = np.zeros((len(X), len(self.feature_groups_)), dtype=bool)
        for (_, term), (_, _, atoms) in zip(self._exits(X), self._paths, strict=True):
            usage |= atoms[term]
        return usage

    def map_column_usage(self, X: np.ndarray) -> list[np.ndarray]:
        """Per output: rows x map columns with a non-zero weight on the row's path."""
        X = self._X(X)
        return [cols[term] for (_, term), (_, cols, _) in zip(self._exits(X), self._paths,
                                                               strict=True)]

    def predict_cost(self, X: np.ndarray) -> np.ndarray:
        """Exact per-row cost at the training costs: every atom (``feature_costs``) and every
        map column (``tree_cost``) on the row's path(s), each paid once (paper Eq. 20-21).

        Runtime complexity: that of :meth:`feature_usage`.
        """
        X = self._X(X)
        atoms = np.zeros((len(X), len(self.feature_groups_)), dtype=bool)
        total = np.zeros(len(X))
        for (_, term), (cm, cols, at) in zip(self._exits(X), self._paths, strict=True):
            atoms |= at[term]
            total += cols[term] @ cm.e
        return total + atoms @ self.feature_costs_

    def predict_item(self, item: Any, featurizer: OnDemandFeaturizer) -> ItemPrediction:
        """Predict one item, computing a feature only when a node on its path needs it.

        The tree (every one-vs-rest tree, in turn) is walked from the root: before a node is
        evaluated, the atomic features its non-zero weights read that are not computed yet
        are computed (``featurizer.compute(item, name)``, timed) and cached.  Features off the
        item's paths are never computed; the features computed are ``feature_usage`` of the
        item's row.

        Returns
        -------
        polydom.index.item_prediction.ItemPrediction
            ``label`` equals ``predict`` on the item's full row (a regressor: the value);
            ``raw_score`` holds the exit scores (``decision_function``); ``split_evaluations``
            counts the classifier nodes evaluated.

        Runtime complexity: O(path length * T) per output plus the computed features.
        """
        check_is_fitted(self)
        if not callable(getattr(featurizer, "compute", None)):
            raise InvalidArgumentError(
                f"featurizer must have a compute(item, name) method, got {featurizer!r}")
        names = list(self.feature_groups_)
        x = np.zeros((1, self.n_features_in_))
        seconds: dict[str, float] = {}
        order: list[str] = []
        scores, nodes = [], 0
        for fmap, (st, B, theta), (cm, _, _) in zip(self.maps_, self.trees_, self._paths,
                                                    strict=True):
            k = 0
            while True:
                for a in np.flatnonzero(cm.F[:, B[k] != 0].any(axis=1)):
                    name = names[a]
                    if name not in seconds:
                        cols = self.feature_groups_[name]
                        x[0, cols], seconds[name] = compute_feature(featurizer, item, name,
                                                                    len(cols))
                        order.append(name)
                nodes += 1
                z = float(fmap.transform(x)[0] @ B[k])
                nxt = -1 if st.is_leaf[k] else (st.up[k] if z > theta[k] else st.low[k])
                if nxt < 0:
                    scores.append(z)
                    break
                k = int(nxt)
        raw = np.array(scores)
        if not hasattr(self, "classes_"):
            label = raw[0]
        elif len(self.classes_) == 2:
            label = self.classes_[int(raw[0] > 0)]
        else:
            label = self.classes_[int(np.argmax(raw))]
        return ItemPrediction(label, computed=tuple(order), feature_seconds=seconds,
                              model_features=self.used_feature_names_, raw_score=raw,
                              split_evaluations=nodes)

    def path_costs_(self) -> list[np.ndarray]:
        """Exact cost of every terminal's path, per output (at the training costs)."""
        check_is_fitted(self)
        return [exact_path_cost(B, st, cm)
                for (st, B, _), (cm, _, _) in zip(self.trees_, self._paths, strict=True)]

    def describe(self, output: int = 0, digits: int = 3) -> str:
        """The tree of one output as text: per node its heap index, threshold, and the
        non-zero weights by feature name.  Runtime complexity: O(nodes * T)."""
        check_is_fitted(self)
        st, B, theta = self.trees_[output]
        fmap = self.maps_[output]
        names = list(self.feature_groups_)
        if isinstance(fmap, LinearMap):
            cols = list(range(len(fmap.owner)))
            labels = [f"{names[fmap.owner[j]]}[{j}]" for j in cols]
        else:
            labels = [f"tree{t}" for t in range(fmap.n_columns - int(fmap.fit_intercept))]
        if fmap.fit_intercept:
            labels.append("bias")
        lines = []
        for k, h in enumerate(st.heap):
            nz = np.flatnonzero(B[k])
            w = ", ".join(f"{labels[t]}={B[k, t]:.{digits}g}" for t in nz)
            kind = "leaf" if st.is_leaf[k] else f"theta={theta[k]:.{digits}g}"
            exits = [s for s in (1, -1) if st.term_of[k, s + 1] >= 0 and not st.is_leaf[k]]
            ex = "".join(f", exit {'up' if s > 0 else 'low'}" for s in exits)
            lines.append(f"{'  ' * int(st.depth[k])}v{h} ({kind}{ex}): {w or '-'}")
        return "\n".join(lines)

    # ---- storage ----
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as numeric arrays + JSON (no pickle).

        Runtime complexity: O(model size).
        """
        check_is_fitted(self)
        params = params_json(self.get_params(deep=False))
        arrays: dict[str, np.ndarray] = {"feature_costs": self.feature_costs_}
        maps_meta = []
        for o, (fmap, (st, B, theta)) in enumerate(zip(self.maps_, self.trees_, strict=True)):
            m_arrays, m_meta = fmap.to_arrays()
            arrays.update({f"out{o}.map.{k}": v for k, v in m_arrays.items()})
            arrays[f"out{o}.heap"] = np.asarray(st.heap, dtype=np.int64)
            arrays[f"out{o}.B"] = B
            arrays[f"out{o}.theta"] = theta
            maps_meta.append(m_meta)
        meta: dict[str, Any] = {"params": params, "n_features_in": int(self.n_features_in_),
                                # pairs, not a mapping: a store may sort JSON keys
                                "groups": [[k, v] for k, v in self.feature_groups_.items()],
                                "maps": maps_meta}
        if hasattr(self, "classes_"):
            if self.classes_.dtype.hasobject:
                meta["classes"] = [str(c) for c in self.classes_]
            else:
                arrays["classes"] = self.classes_
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"parameters of {type(self).__name__} have no JSON form: {exc}"
                ) from None
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]):
        """Rebuild a fitted model from :meth:`to_arrays` (predictions and usage unchanged).

        Runtime complexity: O(model size).
        """
        model = cls(**meta["params"])
        model.n_features_in_ = int(meta["n_features_in"])
        model.feature_groups_ = {str(k): [int(c) for c in v] for k, v in meta["groups"]}
        model.feature_costs_ = np.asarray(arrays["feature_costs"], dtype=np.float64)
        if "classes" in arrays:
            model.classes_ = np.asarray(arrays["classes"])
        elif "classes" in meta:
            model.classes_ = np.asarray(meta["classes"], dtype=object)
        model.maps_, model.trees_, model.objective_traces_ = [], [], []
        for o, m_meta in enumerate(meta["maps"]):
            prefix = f"out{o}.map."
            m_arrays = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
            model.maps_.append(map_from_arrays(m_arrays, m_meta))
            st = TreeStructure(tuple(int(h) for h in arrays[f"out{o}.heap"]))
            model.trees_.append((st, np.asarray(arrays[f"out{o}.B"], dtype=np.float64),
                                 np.asarray(arrays[f"out{o}.theta"], dtype=np.float64)))
        model._derive()
        return model

    def _check(self) -> None:
        """Assert the fitted invariants: structures valid, leaves at -inf, usage consistent."""
        for st, B, theta in self.trees_:
            st._check()
            assert B.shape[0] == st.n_nodes == len(theta)
            assert np.all(np.isneginf(theta[st.is_leaf]))
            assert np.all(np.isfinite(theta[~st.is_leaf]))
        union = np.zeros_like(self.used_features_)
        for _, _, atoms in self._paths:
            union |= atoms.any(axis=0)
        assert (union == self.used_features_).all()


def _bind(metric, weights):
    return lambda pred, y: metric(pred, y, weights)


def _weighted_accuracy(pred: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(w @ ((pred > 0) == (y > 0))) / max(float(w.sum()), 1e-300)


def _neg_weighted_mse(pred: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return -float(w @ (pred - y) ** 2) / max(float(w.sum()), 1e-300)


def class_weights(class_weight: Any, classes: np.ndarray, y_enc: np.ndarray) -> np.ndarray:
    """Row weights from ``class_weight``: None (all 1), ``"balanced"`` (n / (k n_c)), or a
    mapping class -> weight (missing classes get 1).

    >>> class_weights("balanced", np.array([0, 1]), np.array([0, 0, 0, 1])).tolist()
    [0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 2.0]
    """
    if class_weight is None:
        return np.ones(len(y_enc))
    if isinstance(class_weight, str) and class_weight == "balanced":
        counts = np.bincount(y_enc, minlength=len(classes))
        per = len(y_enc) / (len(classes) * np.maximum(counts, 1))
    elif isinstance(class_weight, Mapping):
        lookup = {str(k): v for k, v in class_weight.items()}
        unknown = sorted(str(k) for k in class_weight if str(k) not in map(str, classes))
        if unknown:
            raise InvalidArgumentError(f"class_weight names unknown classes {unknown}")
        per = np.array([float(lookup.get(str(c), 1.0)) for c in classes])
        if not np.all(np.isfinite(per) & (per > 0)):
            raise InvalidArgumentError(
                f"class_weight values must be finite and > 0, got {class_weight!r}")
    else:
        raise InvalidArgumentError(
            f"class_weight must be None, 'balanced' or a mapping, got "
            f"{class_weight!r}")
    return per[y_enc]


class OneVsRestOutputs(ClassifierMixin):
    """Binary: one output on +-1 (``classes_[1]`` is +1); multiclass: one-vs-rest outputs."""

    def fit(self, X: np.ndarray, y: np.ndarray):
        """Fit on ``(X, y)``; a validation split (``validation_fraction``) of the rows drives
        pruning and early stopping.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise InvalidArgumentError(
                f"{type(self).__name__} needs samples of at least 2 classes in y; "
                f"got 1 class ({self.classes_[0]!r})")
        w = class_weights(self.class_weight, self.classes_, y_enc)
        if len(self.classes_) == 2:
            targets = [np.where(y_enc == 1, 1.0, -1.0)]
        else:
            targets = [np.where(y_enc == c, 1.0, -1.0) for c in range(len(self.classes_))]
        self._fit_outputs(X, targets, w, y_enc, _weighted_accuracy)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Exit-node scores: shape (rows,) for binary (> 0 means ``classes_[1]``), else
        (rows, classes).  Runtime complexity: O(rows * (T + depth)) per output."""
        s = self._scores(X)
        return s[:, 0] if len(self.classes_) == 2 else s

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted classes (hard routing).  Runtime complexity: that of decision_function."""
        s = self._scores(X)
        if len(self.classes_) == 2:
            return self.classes_[(s[:, 0] > 0).astype(np.int64)]
        return self.classes_[np.argmax(s, axis=1)]


class CSTCClassifier(OneVsRestOutputs, CostTreeBase):
    """Cost-sensitive tree of classifiers (CSTC, Xu et al. JMLR 2014) as a budgeted learner.

    Parameters
    ----------
    feature_costs : sequence of float or mapping of str to float, optional
        Cost of each (atomic) feature at the reference size; one per column, or per group of
        ``feature_groups``.  None: all zero.
    tradeoff : float, default 1.0
        The paper's ``lambda`` (accuracy/cost trade-off).
    feature_groups : mapping of str to list of int, optional
        Named column groups (atomic features, each paid once per row).  Default: column ``j``
        is feature ``"x{j}"``.
    depth : int, default 3
        Levels of the full tree built before pruning (``2**depth - 1`` nodes).
    rho : float, default 1e-3
        l1 coefficient per node (not weighted by reach probability).
    feature_map : {"identity", "standard", "boosted"}, default "identity"
        phi(x): raw columns (the paper's linear CSTC), z-scored columns, or the boosting
        trick (LightGBM regression trees on the training target).
    n_trees, tree_depth, tree_learning_rate, tree_cost : boosting-trick settings
        Defaults 100, 4, 0.1, 0.0 (``tree_cost`` is each tree's evaluation cost ``e_t``).
    tree_cost_tradeoff : float, default 0.0
        Grow the boosting trick's trees cost-aware (GreedyMiser-style: LightGBM's coupled
        feature penalty, ``feature_costs`` times this); 0 is the paper's plain boosting.
    structure : {"prune", "greedy", "full"}, default "prune"
        Prune the initialised full tree bottom-up on the validation split (the paper's
        choice), grow it greedily node by node while validation improves (paper 3.6.2; at
        most ``depth`` levels), or keep the full tree.
    validation_fraction : float or None, default 0.2
        Rows held out (stratified) for pruning and early stopping; None (or too few rows)
        trains on all rows, without either.
    max_sweeps, irls_iters, tol : optimisation (Algorithm 1) limits; defaults 5, 50, 1e-4
        (sweeps, Lemma-1 re-weightings per node and block, relative change to stop).
    routing_temperature : float, optional
        ``tau`` of ``sigmoid(tau * (phi @ beta - theta))``.  None: 20 (ours: routing nearly
        hard on +-1 targets), 1 under ``paper_defaults``.
    support_threshold : float, optional
        Before fine-tuning, zero weights below this fraction of the node's largest.  None:
        0.05 (ours), 0 under ``paper_defaults``.
    finetune : bool, default True
    finetune_routing : {"soft", "hard"}, optional
        Rows a leaf is fine-tuned on: by soft reach probability, or those that reach it at
        test time.  None: "hard" (ours), "soft" under ``paper_defaults``.
    router_init : {"split", "leaf"}, optional
        How an inner node starts: the cost-aware one-column split of
        :mod:`learners.budgeted.cstc.split_init` (ours), or solved as the last node with the
        threshold at its median (the paper).  None: "split", "leaf" under ``paper_defaults``.
    paper_defaults : bool, default False
        The four settings above left at None take the paper's values (a paper-faithful fit).
    class_weight : None, "balanced" or mapping, default None
    fit_intercept : bool, default True
        Append a bias column (zero cost, no l1).
    random_state : int, optional
        Seeds the validation split and the booster.

    Attributes
    ----------
    classes_, n_features_in_, feature_groups_, feature_costs_ : as in the contract
    used_features_ : ndarray of bool
        Features on some terminal's path (may be needed for some row).
    maps_ : list of feature maps (one per output)
    trees_ : list of (TreeStructure, B, theta), one per output (binary: one)
    objective_traces_ : list of list of float
        Relaxed objective after initialisation and after every sweep (non-increasing).

    Notes
    -----
    Fit: O(sweeps * nodes * irls_iters * (L-BFGS evaluations) * rows * T) per output; a
    7-node tree on 1,000 rows and 7 columns takes well under a second.
    Prediction and ``feature_usage``: O(rows * (T * nodes + features)).
    """

    learner_name = "cstc"

    def __init__(self, feature_costs: Sequence[float] | Mapping[str, float] | None = None,
                 tradeoff: float = 1.0, feature_groups: Mapping[str, Sequence[int]] | None = None,
                 depth: int = 3, rho: float = 1e-3, feature_map: str = "identity",
                 n_trees: int = 100, tree_depth: int = 4, tree_learning_rate: float = 0.1,
                 tree_cost: float = 0.0, tree_cost_tradeoff: float = 0.0,
                 structure: str = "prune",
                 validation_fraction: float | None = 0.2, max_sweeps: int = 5,
                 irls_iters: int = 50, tol: float = 1e-4,
                 routing_temperature: float | None = None,
                 support_threshold: float | None = None, finetune: bool = True,
                 finetune_routing: str | None = None, router_init: str | None = None,
                 paper_defaults: bool = False, class_weight: Any = None,
                 fit_intercept: bool = True, random_state: int | None = None) -> None:
        self.feature_costs = feature_costs
        self.tradeoff = tradeoff
        self.feature_groups = feature_groups
        self.depth = depth
        self.rho = rho
        self.feature_map = feature_map
        self.n_trees = n_trees
        self.tree_depth = tree_depth
        self.tree_learning_rate = tree_learning_rate
        self.tree_cost = tree_cost
        self.tree_cost_tradeoff = tree_cost_tradeoff
        self.structure = structure
        self.validation_fraction = validation_fraction
        self.max_sweeps = max_sweeps
        self.irls_iters = irls_iters
        self.tol = tol
        self.routing_temperature = routing_temperature
        self.support_threshold = support_threshold
        self.finetune = finetune
        self.finetune_routing = finetune_routing
        self.router_init = router_init
        self.paper_defaults = paper_defaults
        self.class_weight = class_weight
        self.fit_intercept = fit_intercept
        self.random_state = random_state


class CSTCRegressor(RegressorMixin, CostTreeBase):
    """CSTC for real-valued targets (squared loss); the parameters of :class:`CSTCClassifier`
    without ``class_weight``.  ``feature_usage`` and ``predict_cost`` as there.
    """

    learner_name = "cstc"

    def __init__(self, feature_costs: Sequence[float] | Mapping[str, float] | None = None,
                 tradeoff: float = 1.0, feature_groups: Mapping[str, Sequence[int]] | None = None,
                 depth: int = 3, rho: float = 1e-3, feature_map: str = "identity",
                 n_trees: int = 100, tree_depth: int = 4, tree_learning_rate: float = 0.1,
                 tree_cost: float = 0.0, tree_cost_tradeoff: float = 0.0,
                 structure: str = "prune",
                 validation_fraction: float | None = 0.2, max_sweeps: int = 5,
                 irls_iters: int = 50, tol: float = 1e-4,
                 routing_temperature: float | None = None,
                 support_threshold: float | None = None, finetune: bool = True,
                 finetune_routing: str | None = None, router_init: str | None = None,
                 paper_defaults: bool = False, fit_intercept: bool = True,
                 random_state: int | None = None) -> None:
        self.feature_costs = feature_costs
        self.tradeoff = tradeoff
        self.feature_groups = feature_groups
        self.depth = depth
        self.rho = rho
        self.feature_map = feature_map
        self.n_trees = n_trees
        self.tree_depth = tree_depth
        self.tree_learning_rate = tree_learning_rate
        self.tree_cost = tree_cost
        self.tree_cost_tradeoff = tree_cost_tradeoff
        self.structure = structure
        self.validation_fraction = validation_fraction
        self.max_sweeps = max_sweeps
        self.irls_iters = irls_iters
        self.tol = tol
        self.routing_temperature = routing_temperature
        self.support_threshold = support_threshold
        self.finetune = finetune
        self.finetune_routing = finetune_routing
        self.router_init = router_init
        self.paper_defaults = paper_defaults
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray) -> CSTCRegressor:
        """Fit on ``(X, y)`` (validation split as in :class:`CSTCClassifier`).

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self._fit_outputs(X, [np.asarray(y, dtype=np.float64)], np.ones(len(y)), None,
                          _neg_weighted_mse)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Exit-node predictions (hard routing).  Runtime: O(rows * (T * nodes + depth))."""
        return self._scores(X)[:, 0]


# scikit-learn 1.8 deprecates ``penalty`` for ``l1_ratio``; before it, l1_ratio needs elasticnet
_L1 = {"l1_ratio": 1.0} if parse_version(sklearn.__version__) >= parse_version("1.8") else {
    "penalty": "l1"}


def cstc_criterion(X: np.ndarray, y: np.ndarray, C: float = 1.0) -> tuple[np.ndarray, bool]:
    """The paper's test of whether CSTC suits a data set (JMLR 2014, section 6.8).

    For every pair of neighbouring labels (sorted: 0v1, 1v2, ...) an l1-regularised logistic
    regression is fitted on the rows of those two labels; ``J[i, j]`` is the Jaccard
    coefficient of the supports of classifiers ``i`` and ``j``.  CSTC assumes that similar
    labels are predicted from similar features, i.e. ``J`` decreases away from its diagonal.

    Parameters
    ----------
    X : array of shape (rows, columns)
    y : array of shape (rows,), at least 3 ordered labels
    C : float, default 1.0
        Inverse l1 strength (``LogisticRegression(penalty="l1", solver="liblinear", C=C)``).

    Returns
    -------
    J : ndarray of shape (labels - 1, labels - 1)
        Symmetric, unit diagonal, entries in [0, 1].
    monotone : bool
        Whether every row of ``J`` is non-increasing away from the diagonal.

    Runtime complexity: ``labels - 1`` liblinear fits.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    labels = np.unique(y)
    if len(labels) < 3:
        raise InvalidArgumentError(
            f"cstc_criterion needs at least 3 labels in y, got {len(labels)}")
    supports = []
    for lo, hi in zip(labels[:-1], labels[1:], strict=True):
        rows = (y == lo) | (y == hi)
        clf = LogisticRegression(solver="liblinear", C=C, **_L1)
        clf.fit(X[rows], y[rows] == hi)
        supports.append(set(np.flatnonzero(clf.coef_[0]).tolist()))
    m = len(supports)
    J = np.ones((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            union = supports[i] | supports[j]
            J[i, j] = J[j, i] = len(supports[i] & supports[j]) / len(union) if union else 1.0
    monotone = all(
        (np.diff(J[i, i:]) <= 1e-12).all() and (np.diff(J[i, : i + 1]) >= -1e-12).all()
        for i in range(m))
    return J, bool(monotone)
