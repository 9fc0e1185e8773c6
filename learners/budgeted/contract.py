"""The budgeted-learner contract: per-row feature usage -> cost curves -> polydom Candidates.

Every budgeted learner (CEGB, GreedyMiser here; CSTC/CSCC, DAG, ADAPT later) is a
scikit-learn classifier whose per-feature costs (``feature_costs``, at a reference size) and
accuracy/cost trade-off (``tradeoff``) are parameters, and which reports, through
``feature_usage(X)``, a boolean matrix rows x features of what it needed for each row.
Adaptive models need different features for different rows, so the cost of such a model at
item size ``n`` is a random quantity; the index stores its

* **expected** cost  ``sum_f P(f acquired) * c_f(n)``  with ``P`` the fraction of held-out rows
  that needed ``f`` (``cost="expected"``), or its
* **worst** cost  ``sum_{f used by any row} c_f(n)``  (``cost="worst"``),

both polynomials in ``n`` (a non-negative combination of the features' cost curves).

A *feature* is a named group of columns (``feature_groups``: name -> columns); computing any
column of a group computes the whole group and pays its cost once.  Without groups, column
``j`` is the feature ``"x{j}"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score

from lattice.executor import map_in_order
from learners.budgeted.former_names import current_class_path
from learners.columns import column_groups
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel

__all__ = [
    "BudgetedClassifierMixin",
    "ColumnSubsetModel",
    "column_groups",
    "expected_cost_curve",
    "group_usage",
    "row_costs",
    "sweep_candidates",
    "sweep_features",
    "worst_cost_curve",
]


def group_usage(column_usage: np.ndarray, groups: Mapping[str, Sequence[int]]) -> np.ndarray:
    """Rows x groups usage: a group is used by a row when any of its columns is.

    Runtime complexity: O(rows * n_columns).
    """
    column_usage = np.asarray(column_usage, dtype=bool)
    out = np.zeros((column_usage.shape[0], len(groups)), dtype=bool)
    for g, cols in enumerate(groups.values()):
        out[:, g] = column_usage[:, list(cols)].any(axis=1)
    return out


def _model(costs: Mapping[str, Any], names: Sequence[str]) -> CostModel:
    missing = [n for n in names if n not in costs]
    if missing:
        raise ValueError(f"costs has no curve for features {missing}")
    return CostModel({n: costs[n] for n in names})


def expected_cost_curve(
    usage: np.ndarray, costs: Mapping[str, Any], names: Sequence[str]
) -> CostCurve:
    """Expected cost ``sum_f P(f used) * c_f(n)`` with ``P`` the fraction of rows using ``f``.

    The features are atoms here: :meth:`polydom.CostModel.needs_from_usage` then
    :meth:`polydom.CostModel.expected_cost` (their one home).

    Runtime complexity: O(rows * features + features * degree).

    >>> u = np.array([[True, False], [True, True]])
    >>> expected_cost_curve(u, {"a": "1", "b": "2*n"}, ["a", "b"])(3.0)
    4.0
    """
    model = _model(costs, names)
    return model.expected_cost(model.needs_from_usage(usage, names))


def worst_cost_curve(used: np.ndarray, costs: Mapping[str, Any], names: Sequence[str]) -> CostCurve:
    """Worst-case cost: the sum of the curves of every feature used by any row.

    ``used`` is a rows x features matrix or a per-feature boolean vector.

    Runtime complexity: O(rows * features).
    """
    used = np.asarray(used, dtype=bool)
    if used.ndim == 2:
        used = used.any(axis=0)
    if used.shape != (len(names),):
        raise ValueError(f"used must cover {len(names)} features, got shape {used.shape}")
    return _model(costs, names).cost([n for n, u in zip(names, used, strict=True) if u])


def row_costs(
    usage: np.ndarray, costs: Mapping[str, Any], names: Sequence[str], size: float
) -> np.ndarray:
    """Cost of each row at item size ``size``: ``sum_{f used by the row} c_f(size)``.

    Runtime complexity: O(rows * features).
    """
    usage = np.asarray(usage, dtype=bool)
    atoms = _model(costs, names).atoms
    values = np.array([float(atoms[n](float(size))) for n in names])
    return usage.astype(np.float64) @ values


class ColumnSubsetModel:
    """A full-width model served with only the columns of the features it may use.

    :meth:`polydom.Index.predict` passes a model only the columns of its candidate's
    ``features`` (in the order of the index's feature mapping).  A budgeted model is fitted on
    every column but tests only some; this wrapper puts the given columns back in place and
    fills the others with NaN, which the model never reads.

    Parameters
    ----------
    estimator : fitted classifier
        Fitted on all ``n_columns`` columns.
    columns : sequence of int
        Full-matrix positions of the columns it receives, in the order it receives them.
    n_columns : int
        Width of the matrix the estimator was fitted on.
    """

    def __init__(self, estimator: Any, columns: Sequence[int], n_columns: int) -> None:
        self.estimator = estimator
        self.columns = [int(c) for c in columns]
        self.n_columns = int(n_columns)

    @property
    def classes_(self) -> np.ndarray:
        """Classes of the wrapped estimator."""
        return self.estimator.classes_

    def _full(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.columns):
            raise ValueError(f"X must have shape (rows, {len(self.columns)}), got {X.shape}")
        full = np.full((X.shape[0], self.n_columns), np.nan)
        full[:, self.columns] = X
        return full

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """State as arrays + JSON (``storage``'s array format); the estimator must have
        ``to_arrays`` too, and its class must live in the ``learners`` package.

        Runtime complexity: that of the estimator's ``to_arrays``.
        """
        est_cls = type(self.estimator)
        if not est_cls.__module__.startswith("learners.") or not callable(
            getattr(self.estimator, "to_arrays", None)
        ):
            raise ValueError(
                f"estimator {est_cls.__name__} cannot be stored as arrays "
                "(needs to_arrays and a class of the learners package)"
            )
        arrays, meta = self.estimator.to_arrays()
        out = {f"estimator.{k}": v for k, v in arrays.items()}
        out["columns"] = np.asarray(self.columns, dtype=np.int64)
        return out, {
            "n_columns": self.n_columns,
            "estimator": f"{est_cls.__module__}:{est_cls.__qualname__}",
            "estimator_meta": meta,
        }

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
    ) -> ColumnSubsetModel:
        """Rebuild from :meth:`to_arrays`; only budgeted learners of the ``learners``
        package load (``"module:Name"``, a module under ``learners.``, a plain class name
        naming a :class:`BudgetedClassifierMixin` subclass).

        Runtime complexity: that of the estimator's ``from_arrays``.
        """
        module, _, qualname = current_class_path(str(meta["estimator"])).partition(":")
        if not module.startswith("learners.") or not qualname.isidentifier():
            raise ValueError(f"refusing to load estimator class {meta['estimator']!r}")
        est_cls = getattr(importlib.import_module(module), qualname, None)
        if not (isinstance(est_cls, type) and issubclass(est_cls, BudgetedClassifierMixin)):
            raise ValueError(f"refusing to load estimator class {meta['estimator']!r} (not a "
                             "budgeted learner of the learners package)")
        inner = {k[len("estimator.") :]: v for k, v in arrays.items() if k.startswith("estimator.")}
        estimator = est_cls.from_arrays(inner, meta["estimator_meta"])
        return cls(estimator, [int(c) for c in arrays["columns"]], int(meta["n_columns"]))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predict from the model's own columns.  Runtime complexity: that of the estimator."""
        return self.estimator.predict(self._full(X))

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities from the model's own columns."""
        return self.estimator.predict_proba(self._full(X))

    def __getattr__(self, name: str) -> Any:
        # on-demand serving: predict_item(item, featurizer) when the estimator has it
        if name == "predict_item" and "estimator" in self.__dict__:
            return self.estimator.predict_item
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class BudgetedClassifierMixin:
    """Cost accounting shared by budgeted classifiers.

    A subclass provides ``feature_usage(X)`` (rows x features, features in the order of
    ``feature_names_``), ``feature_groups_`` (name -> columns) and ``n_features_in_``, and
    ``used_features_`` (boolean per feature: may the model need it for some row).
    """

    def acquired_(self, X: np.ndarray) -> np.ndarray:  # noqa: D401 - contract name
        """Alias of ``feature_usage(X)``: which features the model acquired for each row."""
        return self.feature_usage(X)

    @property
    def feature_names_(self) -> list[str]:
        """Names of the features (column groups), in the order of ``feature_usage`` columns."""
        return list(self.feature_groups_)

    def expected_cost(self, X: np.ndarray, costs: Mapping[str, Any]) -> CostCurve:
        """Expected cost curve over the rows of ``X``: ``sum_f P(f used) c_f(n)``.

        Runtime complexity: that of ``feature_usage(X)``.
        """
        return expected_cost_curve(self.feature_usage(X), costs, self.feature_names_)

    def worst_cost(self, costs: Mapping[str, Any]) -> CostCurve:
        """Cost curve of every feature the model may use for some row."""
        return worst_cost_curve(self.used_features_, costs, self.feature_names_)

    def subset_model(self, columns: Sequence[int] | None = None) -> ColumnSubsetModel:
        """This model behind a :class:`ColumnSubsetModel` taking only the columns it may need.

        ``columns`` (full-matrix positions, in the order the model will receive them)
        defaults to the sorted union of the columns of its used features: the order of
        :meth:`polydom.CostModel.columns_of`, in which :meth:`polydom.Index.predict` cuts
        rows.

        Runtime complexity: O(columns).
        """
        if columns is None:
            used = self.used_feature_names_
            columns = sorted(
                {c for name, cs in self.feature_groups_.items() if name in used for c in cs}
            )
        return ColumnSubsetModel(self, columns, self.n_features_in_)

    @property
    def used_feature_names_(self) -> frozenset:
        """Names of the features the model may use for some row."""
        return frozenset(
            n for n, u in zip(self.feature_names_, self.used_features_, strict=True) if u
        )

    def candidate_needs(
        self, X: np.ndarray, cost_model: CostModel | Mapping[str, Any], cost: str = "expected"
    ) -> dict[str, float]:
        """The atoms this model needs, with the probability that each is needed.

        Every atom of a feature the model may use is listed (so that the index hands the
        model all the columns it may read); with ``cost="expected"`` its probability is the
        fraction of the rows of ``X`` that needed it (per-row union of the atoms of the
        features each row used, :meth:`polydom.CostModel.needs_from_usage`), with
        ``"worst"`` it is 1.

        Runtime complexity: that of ``feature_usage(X)`` plus O(rows * atoms).
        """
        model = CostModel.coerce(cost_model)
        used = model.atoms_of(self.used_feature_names_)
        if cost == "worst":
            return dict.fromkeys(sorted(used), 1.0)
        if cost != "expected":
            raise ValueError(f"cost must be 'expected' or 'worst', got {cost!r}")
        p = model.needs_from_usage(self.feature_usage(X), self.feature_names_)
        return {a: p.get(a, 0.0) for a in sorted(used | set(p))}

    def to_candidate(
        self,
        X: np.ndarray,
        y: np.ndarray,
        costs: CostModel | Mapping[str, Any],
        key: Hashable,
        cost: str = "expected",
        split_cost: CostCurve | str | float | None = None,
        learner: str | None = None,
    ) -> Candidate:
        """This fitted model as a :class:`polydom.Candidate`, scored on held-out ``(X, y)``.

        Parameters
        ----------
        X, y : held-out rows and labels
            Accuracy and the usage probabilities are measured on them.
        costs : polydom.CostModel or mapping of str to CostCurve or str
            The cost model: every name of ``feature_names_`` must be one of its atoms or
            bundles (a plain mapping is a model of atoms only).
        key : hashable
            The candidate's key.
        cost : {"expected", "worst"}
            ``"expected"``: needs are the fraction of the rows of ``X`` that needed each
            atom, cost ``sum_a p_a c_a(n)``; ``"worst"``: every atom the model may use, at 1.
        split_cost : CostCurve or str or float, optional
            Cost of evaluating one split node for one row (the paper's ``alpha``, possibly
            depending on ``n``).  Adds ``E[split evaluations] * split_cost(n)`` (``"expected"``)
            or ``max`` over the rows of ``X`` (``"worst"``); needs ``split_evaluations(X)``.
        learner : str, optional
            Name of the learner recorded on the candidate (default: the class name).

        Returns
        -------
        Candidate
            ``features`` = the features the model may use; ``needs`` = :meth:`candidate_needs`;
            cost = ``cost_model.expected_cost(needs)`` (+ the split cost); ``payload`` =
            :meth:`subset_model` taking ``cost_model.columns_of(needs)`` when the model has
            columns, else its used features' columns.

        Runtime complexity: that of ``predict(X)`` plus ``feature_usage(X)``.
        """
        model = CostModel.coerce(costs)
        needs = self.candidate_needs(X, model, cost)
        curve = model.expected_cost(needs)
        if split_cost is not None:
            if not callable(getattr(self, "split_evaluations", None)):
                raise ValueError(
                    f"split_cost needs a learner with split_evaluations(X); "
                    f"{type(self).__name__} has none"
                )
            splits = np.asarray(self.split_evaluations(X), dtype=np.float64)
            per_row = float(splits.mean() if cost == "expected" else splits.max(initial=0.0))
            curve = curve + per_row * CostCurve.coerce(split_cost)
        acc = float(accuracy_score(y, self.predict(X)))
        columns = model.columns_of(needs) if model.has_columns and model.atoms else None
        return Candidate(
            key,
            acc,
            curve,
            self.used_feature_names_,
            self.subset_model(columns),
            needs=needs,
            learner=learner or type(self).__name__,
        )


def _training_names(estimator: Any, model: CostModel, plain: bool, n_columns: int) -> list[str]:
    """The feature names a sweep trains ``estimator`` on (its groups, else the model's)."""
    groups = estimator.get_params().get("feature_groups")
    if groups is not None:
        names = [str(n) for n in groups]
    elif plain:
        names = list(model.atoms)
    else:
        names = [f"x{j}" for j in range(n_columns)]
    for name in names:
        model.atoms_of([name])  # ValueError naming a feature the cost model lacks
    return names


def sweep_features(
    estimator: Any, costs: CostModel | Mapping[str, Any], n_columns: int
) -> tuple[CostModel, dict[str, Any], list[str]]:
    """What a sweep trains on: the cost model, parameters to set, and the feature names.

    The names are the estimator's ``feature_groups`` names; without groups, a CostModel whose
    atoms' columns partition the ``n_columns`` columns gives its atoms (and the parameters set
    ``feature_groups`` to them), a plain mapping its keys, else ``"x{j}"`` per column.  Every
    name must be an atom or bundle of the cost model (``ValueError`` naming it otherwise).
    Training costs at a reference size ``s`` are ``cost_model.cost([name])(s)``.  An
    estimator with a ``feature_atoms`` parameter (one that pays an atom shared by two of its
    features once, like the DAG) also gets ``feature_atoms = {name: its atoms}`` here, and
    ``atom_costs`` at each reference size from the sweep.

    Runtime complexity: O(columns + names * atoms).
    """
    plain = not isinstance(costs, CostModel)
    model = CostModel.coerce(costs)
    params: dict[str, Any] = {}
    if (
        not plain
        and estimator.get_params().get("feature_groups") is None
        and model.has_columns
        and sorted(c for cols in model.columns.values() for c in cols) == list(range(n_columns))
    ):
        params["feature_groups"] = model.columns  # the atoms, when they partition the columns
        names = list(model.atoms)
    else:
        names = _training_names(estimator, model, plain, n_columns)
    if "feature_atoms" in estimator.get_params():
        params["feature_atoms"] = {n: sorted(model.atoms_of([n])) for n in names}
    return model, params, names


def sweep_candidates(
    estimator: Any,
    tradeoffs: Iterable[float],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_eval: np.ndarray,
    y_eval: np.ndarray,
    costs: Mapping[str, Any],
    sizes: Iterable[float] = (1.0,),
    cost: str = "expected",
    key: str | None = None,
    split_cost: CostCurve | str | float | None = None,
    learner: str | None = None,
    executor: Any = None,
) -> list[Candidate]:
    """Fit ``estimator`` over a grid of trade-offs and reference sizes; one Candidate each.

    For every ``tradeoff`` and reference size ``s``, a clone of ``estimator`` is fitted with
    ``tradeoff=tradeoff`` and ``feature_costs={f: c_f(s)}`` (the costs at the size the model is
    meant for), scored on ``(X_eval, y_eval)``, and turned into a Candidate whose cost curve is
    its expected (or worst) cost at every size.  The candidates go into
    ``polydom.build_index(..., extra_candidates=...)`` or ``PolyDomIndex.build``.

    Parameters
    ----------
    estimator : budgeted classifier
        Prototype with ``tradeoff``, ``feature_costs`` and ``feature_groups`` parameters.
        Its features (``feature_groups`` names) must be atoms or bundles of ``costs``.
        Without ``feature_groups``: with a plain mapping, its keys; with a CostModel whose
        atoms' columns partition the columns of ``X_train``, the atoms (``feature_groups``
        is set to them); else ``"x{j}"`` per column.
    tradeoffs : iterable of float
    X_train, y_train : training data (all columns)
    X_eval, y_eval : held-out data for accuracy and usage probabilities
    costs : polydom.CostModel or mapping of str to CostCurve or str
        Training costs of a feature are ``cost_model.cost([feature])`` at each reference
        size (a bundle: its atoms' sum); candidates' curves come from their needs.
    sizes : iterable of float, default (1.0,)
        Reference sizes at which the training costs are taken.
    cost : {"expected", "worst"}
    key : str, optional
        Key prefix (default: the estimator's class name).
    split_cost : CostCurve or str or float, optional
        Per-row cost of one split evaluation, added to the candidates' curves (see
        :meth:`BudgetedClassifierMixin.to_candidate`).  For CEGB it is also the training
        penalty ``split_cost=split_cost(s)`` at each reference size.
    learner : str, optional
        Name recorded on every candidate (default: the estimator's class name).
    executor : None, str, lattice.Executor or distributed.Client
        Where the fits run (see :func:`lattice.make_executor`): one task per
        (trade-off, reference size), the data shipped to each worker once.  The candidates
        are the same, in the same order, with every executor.

    Returns
    -------
    list of Candidate
        Keys ``"{key}(tradeoff=..., n=...)"``, sizes outer and trade-offs inner; payloads
        are fitted models.

    Runtime complexity: ``len(tradeoffs) * len(sizes)`` fits, ``workers`` at a time.
    """
    prefix = key or type(estimator).__name__
    model, params, names = sweep_features(estimator, costs, np.asarray(X_train).shape[1])
    ts = list(tradeoffs)
    grid = [(t, s) for s in sizes for t in ts]
    sweep = _Sweep(estimator, X_train, y_train, X_eval, y_eval, model, names, params, cost,
                   prefix, split_cost, learner)
    return map_in_order(executor, sweep, _fit_sweep_point, grid)


@dataclass(frozen=True)
class _Sweep:
    """What every fit of a sweep shares (shipped to each worker once)."""

    estimator: Any
    X_train: np.ndarray
    y_train: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    model: CostModel
    names: list[str]
    params: dict[str, Any]
    cost: str
    prefix: str
    split_cost: CostCurve | str | float | None
    learner: str | None


def _fit_sweep_point(sweep: _Sweep, t: float, s: float) -> Candidate:
    """One fit of a sweep (an executor task): the estimator at trade-off ``t`` and
    reference size ``s``, as a Candidate."""
    params = dict(sweep.params)
    params["feature_costs"] = {n: float(sweep.model.cost([n])(float(s))) for n in sweep.names}
    if "feature_atoms" in params:  # shared atoms paid once: the atoms' own costs at s
        curves = sweep.model.atoms
        used = sorted({a for atoms in params["feature_atoms"].values() for a in atoms})
        params["atom_costs"] = {a: float(curves[a](float(s))) for a in used}
    if sweep.split_cost is not None:
        params["split_cost"] = float(CostCurve.coerce(sweep.split_cost)(float(s)))
    est = clone(sweep.estimator).set_params(tradeoff=float(t), **params)
    est.fit(sweep.X_train, sweep.y_train)
    return est.to_candidate(
        sweep.X_eval,
        sweep.y_eval,
        sweep.model,
        f"{sweep.prefix}(tradeoff={t:g}, n={s:g})",
        cost=sweep.cost,
        split_cost=sweep.split_cost,
        learner=sweep.learner,
    )
