"""The budgeted-learner contract: per-row feature usage -> cost curves -> polydom Candidates.

Every budgeted learner (CEGB / GreedyMiser, CSTC / CSCC, the DAG, ADAPT) is a scikit-learn
classifier whose per-feature costs (``feature_costs``, at a reference size) and
accuracy/cost trade-off (``tradeoff``) are parameters, and which reports, through
``feature_usage(X)``, a boolean matrix rows x features of what it needed for each row.
:class:`BudgetedLearner` lists every member the contract requires and
:func:`check_budgeted` checks an object against it (the one sweep,
:func:`learners.budgeted.sweep.sweep`, checks every prototype it is given);
:class:`BudgetedClassifierMixin` gives the cost accounting and the sweep's default hooks.
The parameters' one check (:func:`check_feature_costs`) and their one JSON form
(:func:`params_json`) live here too.
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

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from sklearn.metrics import accuracy_score

from learners.budgeted.former_names import current_class_path
from learners.columns import column_groups
from polydom.blobs.model_registry import stored_class
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = [
    "BudgetedClassifierMixin",
    "BudgetedLearner",
    "ColumnSubsetModel",
    "REQUIRED_PARAMS",
    "check_budgeted",
    "check_feature_costs",
    "column_groups",
    "expected_cost_curve",
    "group_usage",
    "params_json",
    "row_costs",
    "sweep_features",
    "worst_cost_curve",
]

#: Constructor parameters every budgeted learner has (the sweep sets them).
REQUIRED_PARAMS = ("tradeoff", "feature_costs", "feature_groups")


@runtime_checkable
class BudgetedLearner(Protocol):
    """What a budgeted learner must offer: the contract, member by member.

    A scikit-learn classifier (``fit`` returning self, ``predict``, ``get_params`` /
    ``set_params`` with :data:`REQUIRED_PARAMS` among the parameters) that reports the
    features each row needed (``feature_usage``) and the features it may need at all
    (``used_feature_names_``, ``subset_model``), is stored as arrays + JSON
    (``to_arrays`` / ``from_arrays``), is named as in :mod:`learners.registry`
    (``learner_name``), and tells the one sweep what its grid is (``sweep_options``,
    ``sweep_settings``, ``sweep_shared``, ``sweep_variants``, ``needs_from_usage``).
    :class:`BudgetedClassifierMixin` provides all but the learning itself and
    ``learner_name``.  :func:`check_budgeted` names what an object lacks.
    """

    learner_name: str
    sweep_options: Mapping[str, Any]

    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...
    def predict(self, X: np.ndarray) -> np.ndarray: ...
    def get_params(self, deep: bool = True) -> dict[str, Any]: ...
    def set_params(self, **params: Any) -> Any: ...
    def feature_usage(self, X: np.ndarray) -> np.ndarray: ...
    def subset_model(self, columns: Sequence[int] | None = None) -> Any: ...
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]: ...
    def from_arrays(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Any: ...
    def sweep_settings(self, tradeoffs: Sequence[float], **options: Any) -> list[dict]: ...
    def sweep_shared(self, X: np.ndarray, y: np.ndarray, first: Mapping[str, Any],
                     **options: Any) -> dict[str, Any]: ...
    def sweep_variants(self, X: np.ndarray, **options: Any) -> list[tuple[dict, Any]]: ...
    def needs_from_usage(self, usage: np.ndarray, cost_model: Any,
                         cost: str = "expected") -> dict[str, float]: ...


def check_budgeted(learner: Any) -> None:
    """Check ``learner`` against :class:`BudgetedLearner`: every member, the required
    parameters, and a registry name.

    Runtime complexity: O(members).

    >>> class Half:
    ...     learner_name = "half"
    ...     def fit(self, X, y): return self
    >>> check_budgeted(Half())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    polydom.errors.ArgumentTypeError: Half is not a budgeted learner: it lacks ...sweep_options

    Raises
    ------
    TypeError
        Naming the class and every member or parameter it lacks.
    """
    members = [m for m in ("fit", "predict", "get_params", "set_params", "feature_usage",
                           "subset_model", "to_arrays", "from_arrays", "sweep_settings",
                           "sweep_shared", "sweep_variants", "needs_from_usage")
               if not callable(getattr(learner, m, None))]
    name = getattr(learner, "learner_name", None)
    if not (isinstance(name, str) and name):
        members.append("learner_name")
    if not isinstance(getattr(learner, "sweep_options", None), Mapping):
        members.append("sweep_options")
    if "get_params" not in members:
        params = learner.get_params(deep=False)
        members += [f"parameter {p}" for p in REQUIRED_PARAMS if p not in params]
    if members:
        raise ArgumentTypeError(
            f"{type(learner).__name__} is not a budgeted learner: it lacks "
            f"{', '.join(members)}")


def check_feature_costs(
    feature_costs: Any, names: Sequence[str], default: float = 0.0, what: str = "feature"
) -> np.ndarray:
    """Cost per feature, in the order of ``names``, checked: finite, >= 0, every name.

    The one check of every budgeted learner's ``feature_costs`` parameter.  ``None``
    gives ``default`` for every feature (0 for boosting and trees, whose trade-off then
    has nothing to trade; the DAG's sensors cost 1 each, its paper's unit costs); a
    sequence gives one value per feature; a mapping one per name (no unknown names).
    ``what`` names the features in errors (``"sensor"`` for the DAG).

    Runtime complexity: O(features).

    >>> check_feature_costs({"a": 1, "b": 2.5}, ["a", "b"]).tolist()
    [1.0, 2.5]
    >>> check_feature_costs(None, ["a"], default=1.0).tolist()
    [1.0]

    Raises
    ------
    ValueError
        Naming the missing, unknown or bad features, or the wrong length.
    """
    if feature_costs is None:
        return np.full(len(names), float(default))
    if isinstance(feature_costs, Mapping):
        unknown = sorted(str(k) for k in feature_costs if str(k) not in names)
        if unknown:
            raise InvalidArgumentError(
                f"feature_costs names unknown {what}s {unknown}; the {what}s "
                f"are {list(names)}")
        missing = [n for n in names if n not in feature_costs]
        if missing:
            raise InvalidArgumentError(
                f"feature_costs must give a cost for every {what}; none for "
                f"{missing}")
        costs = np.array([float(feature_costs[n]) for n in names])
    else:
        costs = np.asarray(feature_costs, dtype=np.float64).ravel()
        if costs.shape != (len(names),):
            raise InvalidArgumentError(
                f"feature_costs must have one value per {what} ({len(names)}), "
                f"got {costs.size}")
    bad = [(n, float(c)) for n, c in zip(names, costs, strict=True)
           if not (np.isfinite(c) and c >= 0)]
    if bad:
        raise InvalidArgumentError(f"feature_costs must be finite and >= 0; got {bad}")
    return costs


def params_json(params: Mapping[str, Any]) -> dict[str, Any]:
    """A budgeted learner's parameters in their one JSON form (what ``to_arrays`` stores).

    ``feature_costs`` becomes a name -> float mapping or a list of floats,
    ``feature_groups`` a name -> list of int mapping, a ``class_weight`` mapping
    name -> float, numpy scalars plain numbers; everything else is kept as it is (the
    caller's ``json.dumps`` refuses what has no JSON form).

    Runtime complexity: O(size of the parameters).

    >>> params_json({"feature_costs": np.array([1, 2]), "tradeoff": np.float64(0.5)})
    {'feature_costs': [1.0, 2.0], 'tradeoff': 0.5}
    """
    out = dict(params)
    fc = out.get("feature_costs")
    if isinstance(fc, Mapping):
        out["feature_costs"] = {str(k): float(v) for k, v in fc.items()}
    elif fc is not None:
        out["feature_costs"] = np.asarray(fc, dtype=np.float64).tolist()
    if out.get("feature_groups") is not None:
        out["feature_groups"] = {str(k): [int(c) for c in np.atleast_1d(v)]
                                 for k, v in out["feature_groups"].items()}
    if isinstance(out.get("class_weight"), Mapping):
        out["class_weight"] = {str(k): float(v) for k, v in out["class_weight"].items()}
    for k, v in out.items():
        if isinstance(v, np.generic):
            out[k] = v.item()
    return out


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
        raise InvalidArgumentError(f"costs has no curve for features {missing}")
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
        raise InvalidArgumentError(f"used must cover {len(names)} features, got shape {used.shape}")
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
            raise InvalidArgumentError(
                f"X must have shape (rows, {len(self.columns)}), got {X.shape}")
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
            raise InvalidArgumentError(
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
        """Rebuild from :meth:`to_arrays`; only a registered array-model class
        (:func:`polydom.blobs.model_registry.stored_class`: the path is checked before any
        import) that is a :class:`BudgetedClassifierMixin` subclass loads.

        Runtime complexity: that of the estimator's ``from_arrays``.
        """
        est_cls = stored_class(current_class_path(str(meta["estimator"])), "its estimator")
        if not issubclass(est_cls, BudgetedClassifierMixin):
            raise InvalidArgumentError(
                f"refusing to load estimator class {meta['estimator']!r} (not a "
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

    @property
    def feature_names_(self) -> list[str]:
        """Names of the estimator's features, in the order of :meth:`feature_usage` columns."""
        return self.estimator.feature_names_

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Which features the model computes for each row of ``X`` (its own columns): rows
        x :attr:`feature_names_`, what a served model's per-row cost is priced from
        (:meth:`polydom.Hit.row_costs`).

        Runtime complexity: that of the estimator's ``feature_usage``.
        """
        return self.estimator.feature_usage(self._full(X))

    def __getattr__(self, name: str) -> Any:
        # on-demand serving: predict_item(item, featurizer) when the estimator has it
        if name == "predict_item" and "estimator" in self.__dict__:
            return self.estimator.predict_item
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class BudgetedClassifierMixin:
    """Cost accounting shared by budgeted classifiers, and the sweep's default hooks.

    A subclass provides ``feature_usage(X)`` (rows x features, features in the order of
    ``feature_names_``), ``feature_groups_`` (name -> columns) and ``n_features_in_``,
    ``used_features_`` (boolean per feature: may the model need it for some row), and
    ``learner_name``, its name in :mod:`learners.registry` (the name candidates, keys and
    stores give it).  The hooks of :func:`learners.budgeted.sweep.sweep` default to a grid
    of trade-offs, nothing shared between settings and one model per fit.
    """

    #: The learner's name in :mod:`learners.registry` (set by every subclass).
    learner_name: ClassVar[str]
    #: The sweep options this learner takes, with their defaults (``frontier`` is every
    #: learner's).
    sweep_options: ClassVar[Mapping[str, Any]] = {}

    def sweep_settings(self, tradeoffs: Sequence[float], **options: Any) -> list[dict]:
        """The grid of a sweep: parameters of each fit (default ``{"tradeoff": t}`` per
        trade-off).  Runtime complexity: O(grid)."""
        return [{"tradeoff": float(t)} for t in tradeoffs]

    def sweep_shared(
        self, X: np.ndarray, y: np.ndarray, first: Mapping[str, Any], **options: Any
    ) -> dict[str, Any]:
        """Parameters fitted once per split from its training rows ``X, y`` and shared by
        every setting there (``first``: the parameters of the grid's first fit); default
        none.  Runtime complexity: that of the subclass's shared fit."""
        return {}

    def sweep_variants(self, X: np.ndarray, **options: Any) -> list[tuple[dict, Any]]:
        """Models one fit gives, each with the parameters that name it in its key (``X``:
        the rows it is scored on, or its training rows when it is only served); default
        this fitted model alone.  Runtime complexity: O(1)."""
        return [({}, self)]

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
        """The atoms this model needs on the rows of ``X``, with the probability that each
        is needed: :meth:`needs_from_usage` of ``feature_usage(X)``.

        Runtime complexity: that of ``feature_usage(X)`` plus O(rows * atoms).
        """
        usage = self.feature_usage(X) if cost != "worst" else None
        return self.needs_from_usage(usage, cost_model, cost)

    def needs_from_usage(
        self, usage: np.ndarray | None, cost_model: CostModel | Mapping[str, Any],
        cost: str = "expected",
    ) -> dict[str, float]:
        """The atoms a model needs, with the probability that each is needed, from a
        rows x features usage matrix (this model's on held-out rows, or the out-of-fold
        usage of the models a sweep scored).

        Every atom of a feature this model may use is listed (so that the index hands the
        model all the columns it may read); with ``cost="expected"`` its probability is the
        fraction of the rows of ``usage`` that needed it (per-row union of the atoms of the
        features each row used, :meth:`polydom.CostModel.needs_from_usage`), with
        ``"worst"`` it is 1 (``usage`` is then not read).

        Runtime complexity: O(rows * atoms).
        """
        model = CostModel.coerce(cost_model)
        used = model.atoms_of(self.used_feature_names_)
        if cost == "worst":
            return dict.fromkeys(sorted(used), 1.0)
        if cost != "expected":
            raise InvalidArgumentError(f"cost must be 'expected' or 'worst', got {cost!r}")
        p = model.needs_from_usage(usage, self.feature_names_)
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
            Name of the learner recorded on the candidate (default: ``learner_name``, the
            registry's name).

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
                raise InvalidArgumentError(
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
            learner=learner or self.learner_name,
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
    features once, like the DAG) also gets ``feature_atoms = {name: its units}`` here (its
    atoms, the shared steps they use and the model's start: :meth:`CostModel.units_of`), and
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
        # the units each name pays (atoms, shared steps, the start): a unit shared by two
        # features is paid once, the one mechanism of the cost model
        params["feature_atoms"] = {n: sorted(model.units_of([n])) for n in names}
    return model, params, names
