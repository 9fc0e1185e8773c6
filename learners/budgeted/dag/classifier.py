"""DAGClassifier: adaptive sensor acquisition by a DAG (Wang, Trapeznikov & Saligrama, NIPS 2015).

A sensor is a named group of columns with a cost (``feature_groups``, ``feature_costs``).
The model is a DAG whose states are sets of acquired sensors
(:mod:`learners.budgeted.dag.graph`), a classifier per state
(:mod:`learners.budgeted.dag.subset_bank`) and a policy per state, learned backward by Graph
Reduce (:mod:`learners.budgeted.dag.graph_reduce`) as cost-sensitive problems solved by filter
trees (:mod:`learners.budgeted.dag.filter_tree`).  A row starts with no sensor; each state's
policy, reading only the acquired sensors, either stops and classifies with the state's
classifier or acquires more.  The loss trained for is the paper's Eq. 1::

    L_s(x, y) = 1[f_s(x) != y] + tradeoff * cost(s),   cost(s) = sum_{m in s} feature_costs[m]

so ``tradeoff`` is the uniform sensor cost ``delta`` of the paper's budget sweep (with unit
``feature_costs``).  Sensors may share atomic features (``feature_atoms``, ``atom_costs``:
two bundles of a ``polydom.CostModel`` that need the same atom); then ``cost(s)`` pays each
atom of the sensors of ``s`` once, and an edge ``s -> s'`` costs the atoms newly acquired,
``cost(s') - cost(s)`` (a sensor whose atoms are all acquired is free).

With many sensors the DAG is built over unions of a few subsets: Algorithm 2
(``subsets="greedy"``) or nested forward-selection prefixes (``"forward"``, an extension)
from :mod:`learners.budgeted.dag.subset_selection`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from learners.budgeted.contract import BudgetedClassifierMixin, check_feature_costs
from learners.budgeted.dag.filter_tree import ConstantPolicy, FilterTree
from learners.budgeted.dag.graph import SensorGraph, chain_graph, union_graph
from learners.budgeted.dag.graph_reduce import GraphPolicy, graph_reduce, state_columns
from learners.budgeted.dag.subset_bank import BankEntry, SubsetBank, train_bank
from learners.budgeted.dag.subset_selection import forward_prefixes, greedy_subsets
from learners.budgeted.on_demand import OnDemandFeaturizer, compute_feature
from learners.budgeted.sklearn_blobs import dump_estimator, load_estimator
from learners.columns import column_groups
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction

__all__ = ["DAGClassifier"]

#: Most blocks a DAG is built over (2^12 states); more needs subsets="greedy"/"forward".
MAX_BLOCKS = 12


def _default_estimator() -> Any:
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _check_sensor_keys(mapping: Mapping, names: list[str], what: str) -> None:
    """Refuse a per-sensor ``mapping`` whose keys are not exactly the sensors ``names``."""
    unknown = sorted(str(k) for k in mapping if str(k) not in names)
    missing = [n for n in names if n not in mapping]
    if unknown or missing:
        raise InvalidArgumentError(f"{what} {names}; unknown sensors {unknown}, missing {missing}")


class DAGClassifier(BudgetedClassifierMixin, ClassifierMixin, BaseEstimator):
    """Adaptive sensor acquisition: a DAG of sensor subsets with policies learned backward.

    Parameters
    ----------
    feature_groups : mapping of str to list of int, optional
        The sensors: name -> columns (disjoint, covering every column).  None: one sensor
        per column, ``"x{j}"``.
    feature_costs : mapping of str to float or sequence of float, optional
        Cost of each sensor (>= 0).  None: 1 each (then ``tradeoff`` is the paper's
        uniform cost ``delta``), or with ``feature_atoms`` the sum of its atoms' costs.
    feature_atoms : mapping of str to list of str, optional
        The atomic features each sensor needs (every sensor listed; a ``polydom.CostModel``'s
        ``atoms_of``).  Atoms shared by sensors are paid once by a row acquiring several of
        them.  Given together with ``atom_costs``; ``feature_costs``, if given, must equal
        each sensor's atoms' total.  :func:`learners.sweep` sets both from its cost
        model.
    atom_costs : mapping of str to float, optional
        Cost of every atom of ``feature_atoms`` (finite, >= 0).
    tradeoff : float, default 0.01
        Multiplies the sensor costs in the training loss (error + tradeoff * cost); the
        budget is swept by this value.  Costs >= 1 per sensor never pay off with the 0/1
        loss.
    estimator : scikit-learn classifier, optional
        The classifier bank's model (one clone per state), also the scorer of subset
        selection.  Default: ``StandardScaler`` + ``LogisticRegression(max_iter=1000)``.
    policy_estimator : scikit-learn classifier, optional
        The binary classifier of the filter trees, fitted with ``sample_weight``.
        Default: as ``estimator``.
    graph : {"full", "chain"}, default "full"
        ``"full"``: all unions of the blocks (every subset for one sensor per block, the
        paper's small-sensor DAG); ``"chain"``: the fixed-order cascade of the blocks in
        order (a baseline).
    subsets : None, "greedy", "forward" or sequence of sequence of str
        The blocks the DAG acquires.  None: one block per sensor; ``"greedy"``: the paper's
        Algorithm 2; ``"forward"``: nested prefixes of one forward selection (an extension);
        or explicit blocks of sensor names.
    n_subsets : int, default 7
        ``t`` for ``"greedy"`` / ``"forward"``.
    subset_budget : float, optional
        ``B``: total cost of the selected subsets, each sensor at its own cost (a sensor in
        two subsets, or an atom shared by two sensors, counts each time, as in the paper's
        Eq. 11).  Default: a third of all sensors' cost.
    stop_on_zero_gain : bool, default False
        Algorithm 2 stops when no addition raises its reward.
    add_full : bool, default True
        Add the block of all sensors to selected subsets (the paper's 8th subset).
    selection_split : float, default 0.5
        Held-out fraction of the training rows that scores subset candidates.
    cv : int, default 5
        Folds of the bank's out-of-fold predictions (the stop-and-classify losses).
    bank : SubsetBank or mapping of frozenset to Expansion, optional
        Classifiers already trained for sensor subsets (a previous fit's ``bank_``, or a
        lattice exploration's ``expanded``); only the missing states are trained.  They must
        have been trained on the same rows.
    random_state : int, default 0
        Seed of the selection split.

    Attributes
    ----------
    feature_groups_ : dict of str to list of int
    feature_costs_ : ndarray
        Cost of each sensor alone.
    state_costs_ : ndarray of shape (K,)
        Cost of the sensors of each state of ``graph_`` (each atom paid once); a row's
        acquisition cost is that of its final state.
    classes_ : ndarray
    graph_ : SensorGraph
    blocks_ : list of frozenset
        The blocks the DAG was built over.
    bank_ : SubsetBank
    policy_ : GraphPolicy
    selection_ : SubsetSelection or None
    used_features_ : ndarray of bool
        Sensors of the states some row may reach under the learned policies.
    train_risk_ : float
        Mean training path loss (error + tradeoff * cost) of the learned policies.
    timings_ : dict of str to float
        Seconds spent in ``selection``, ``bank`` and ``policies``.
    bank_fits_ : int
        Bank estimator fits this ``fit`` made (reused states cost none).

    Notes
    -----
    Fit: ``(cv + 1)`` bank fits per state not reused, and a filter tree per state with
    features and children (at most ``M 2^(M-1)`` binary fits for the full DAG over ``M``
    sensors).  Predict: at most ``M + 1`` policy evaluations and one classifier per row.
    """

    learner_name = "dag"

    def __init__(
        self,
        feature_groups: Mapping[str, Sequence[int]] | None = None,
        feature_costs: Mapping[str, float] | Sequence[float] | None = None,
        feature_atoms: Mapping[str, Sequence[str]] | None = None,
        atom_costs: Mapping[str, float] | None = None,
        tradeoff: float = 0.01,
        estimator: Any = None,
        policy_estimator: Any = None,
        graph: str = "full",
        subsets: str | Sequence[Sequence[str]] | None = None,
        n_subsets: int = 7,
        subset_budget: float | None = None,
        stop_on_zero_gain: bool = False,
        add_full: bool = True,
        selection_split: float = 0.5,
        cv: int = 5,
        bank: SubsetBank | Mapping[frozenset, Any] | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.feature_groups = feature_groups
        self.feature_costs = feature_costs
        self.feature_atoms = feature_atoms
        self.atom_costs = atom_costs
        self.tradeoff = tradeoff
        self.estimator = estimator
        self.policy_estimator = policy_estimator
        self.graph = graph
        self.subsets = subsets
        self.n_subsets = n_subsets
        self.subset_budget = subset_budget
        self.stop_on_zero_gain = stop_on_zero_gain
        self.add_full = add_full
        self.selection_split = selection_split
        self.cv = cv
        self.bank = bank
        self.random_state = random_state

    # ---- validation ----
    def _atoms(self, names: list[str]) -> tuple[dict[str, tuple], dict[str, float]] | None:
        """``feature_atoms`` and ``atom_costs`` validated (None when neither is given)."""
        fa, ac = self.feature_atoms, self.atom_costs
        if fa is None and ac is None:
            return None
        if fa is None or ac is None:
            given = "feature_atoms" if ac is None else "atom_costs"
            raise InvalidArgumentError(
                f"feature_atoms and atom_costs go together; got {given} without the other"
            )
        if not isinstance(fa, Mapping):
            raise InvalidArgumentError(
                f"feature_atoms must be a mapping sensor -> atoms, got {fa!r}")
        if not isinstance(ac, Mapping):
            raise InvalidArgumentError(f"atom_costs must be a mapping atom -> cost, got {ac!r}")
        costs: dict[str, float] = {}
        for a, c in ac.items():
            try:
                c = float(c)
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"atom_costs[{a!r}] must be a number, got {c!r}") from None
            if not (np.isfinite(c) and c >= 0):
                raise InvalidArgumentError(f"atom_costs[{a!r}] must be finite and >= 0, got {c!r}")
            costs[str(a)] = c
        _check_sensor_keys(fa, names, "feature_atoms must list the atoms of every sensor")
        atoms: dict[str, tuple] = {}
        for n in names:
            members = fa[n]
            if isinstance(members, str) or not isinstance(members, Iterable):
                raise InvalidArgumentError(
                    f"feature_atoms[{n!r}] must be a list of atom names, got {members!r}"
                )
            members = tuple(sorted({str(a) for a in members}))
            if not members:
                raise InvalidArgumentError(f"feature_atoms[{n!r}] is empty")
            priceless = [a for a in members if a not in costs]
            if priceless:
                raise InvalidArgumentError(
                    f"feature_atoms[{n!r}] names atoms without a cost in atom_costs: {priceless}"
                )
            atoms[n] = members
        unused = sorted(set(costs) - {a for m in atoms.values() for a in m})
        if unused:
            raise InvalidArgumentError(f"atom_costs names atoms no sensor needs: {unused}")
        return atoms, costs

    def _costs(self, names: list[str]) -> np.ndarray:
        """Each sensor's own cost, validated; sets ``feature_atoms_`` and ``atom_costs_``."""
        shared = self._atoms(names)
        self.feature_atoms_, self.atom_costs_ = shared if shared else (None, None)
        own = (
            None if shared is None
            else np.array([math.fsum(shared[1][a] for a in shared[0][n]) for n in names])
        )
        if self.feature_costs is None and own is not None:
            costs = own
        else:
            costs = check_feature_costs(self.feature_costs, names, default=1.0, what="sensor")
        if own is not None:
            off = {n: (float(c), float(o)) for n, c, o in zip(names, costs, own, strict=True)
                   if not np.isclose(c, o, rtol=1e-9, atol=1e-12)}
            if off:
                raise InvalidArgumentError(
                    "feature_costs must equal each sensor's atoms' total under atom_costs; "
                    f"(given, atoms' total) differ for {off}"
                )
        return costs

    def _state_costs(self, states: Sequence[frozenset]) -> np.ndarray:
        """Cost of holding each state's sensors: each atom paid once (or each sensor's cost).

        Runtime complexity: O(K * atoms).
        """
        if self.feature_atoms_ is None:
            cost_of = dict(zip(self.feature_groups_, self.feature_costs_.tolist(), strict=True))
            return np.array([math.fsum(cost_of[m] for m in sorted(s)) for s in states])
        atoms, price = self.feature_atoms_, self.atom_costs_
        return np.array(
            [math.fsum(price[a] for a in sorted({a for m in s for a in atoms[m]}))
             for s in states]
        )

    def _check_params(self) -> None:
        t = self.tradeoff
        if not (isinstance(t, int | float | np.number) and np.isfinite(t) and t >= 0):
            raise InvalidArgumentError(f"tradeoff must be a finite number >= 0, got {t!r}")
        if self.graph not in ("full", "chain"):
            raise InvalidArgumentError(f"graph must be 'full' or 'chain', got {self.graph!r}")
        if not (isinstance(self.cv, int | np.integer) and self.cv >= 2):
            raise InvalidArgumentError(f"cv must be an integer >= 2, got {self.cv!r}")
        if not (isinstance(self.n_subsets, int | np.integer) and self.n_subsets >= 1):
            raise InvalidArgumentError(f"n_subsets must be an integer >= 1, got {self.n_subsets!r}")
        if not 0.0 < float(self.selection_split) < 1.0:
            raise InvalidArgumentError(
                f"selection_split must lie in (0, 1), got {self.selection_split!r}")

    def _explicit_blocks(self, names: list[str]) -> list[frozenset]:
        if isinstance(self.subsets, str) or not isinstance(self.subsets, Iterable):
            raise InvalidArgumentError(
                "subsets must be None, 'greedy', 'forward' or a list of sensor-name lists, "
                f"got {self.subsets!r}"
            )
        blocks = []
        for i, block in enumerate(self.subsets):
            if isinstance(block, str):
                raise InvalidArgumentError(
                    f"subsets[{i}] must be a list of sensor names, got {block!r}")
            block = frozenset(str(m) for m in block)
            unknown = sorted(block - set(names))
            if unknown:
                raise InvalidArgumentError(f"subsets[{i}] names unknown sensors {unknown}")
            if not block:
                raise InvalidArgumentError(f"subsets[{i}] is empty")
            blocks.append(block)
        if not blocks:
            raise InvalidArgumentError("subsets is empty")
        return blocks

    # ---- fitting ----
    def fit(self, X: np.ndarray, y: np.ndarray) -> DAGClassifier:
        """Select blocks (if asked), train the bank, learn the policies by Graph Reduce.

        Parameters
        ----------
        X : array-like of shape (rows, columns), finite
        y : array-like of shape (rows,)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On bad parameters: an empty or overlapping sensor, an unknown sensor name in
            ``feature_costs`` or ``subsets``, a negative cost, a DAG over more than
            ``MAX_BLOCKS`` blocks.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        groups = column_groups(self.feature_groups, X.shape[1])
        names = list(groups)
        self.feature_groups_ = groups
        self.feature_costs_ = self._costs(names)
        cost_of = dict(zip(names, self.feature_costs_.tolist(), strict=True))
        estimator = self.estimator if self.estimator is not None else _default_estimator()
        policy_est = (
            self.policy_estimator if self.policy_estimator is not None else _default_estimator()
        )
        self.timings_ = {"selection": 0.0, "bank": 0.0, "policies": 0.0}
        self.selection_ = None
        start = time.perf_counter()
        reuse = self.bank
        selection_key = None
        if self.subsets is None:
            blocks = [frozenset([m]) for m in names]
        elif self.subsets in ("greedy", "forward"):
            selection_key = self._selection_key(estimator, groups, cost_of, len(y))
            held = reuse.selections.get(selection_key) if isinstance(reuse, SubsetBank) else None
            if held is not None:   # the bank's rows and settings: the same selection
                self.selection_ = held
                blocks = self._blocks_of(held, names)
            else:
                blocks = self._select(estimator, X, y, groups, cost_of)
        else:
            blocks = self._explicit_blocks(names)
        self.timings_["selection"] = time.perf_counter() - start
        if len(blocks) > MAX_BLOCKS:
            raise InvalidArgumentError(
                f"a DAG over {len(blocks)} blocks has up to 2^{len(blocks)} states (at most "
                f"{MAX_BLOCKS} blocks); group the sensors or use subsets='greedy'/'forward'"
            )
        self.blocks_ = blocks
        graph = chain_graph(blocks) if self.graph == "chain" else union_graph(blocks)
        self.graph_ = graph

        start = time.perf_counter()
        if isinstance(reuse, SubsetBank) and reuse.n_rows != len(y):
            raise InvalidArgumentError(f"bank covers {reuse.n_rows} rows, X has {len(y)}")
        self.bank_ = train_bank(estimator, X, y, groups, graph.states, self.cv, reuse)
        if isinstance(reuse, SubsetBank):
            self.bank_.selections.update(reuse.selections)
        if selection_key is not None:
            self.bank_.selections[selection_key] = self.selection_
        self.bank_fits_ = self.bank_.fits
        self.timings_["bank"] = time.perf_counter() - start

        start = time.perf_counter()
        columns = state_columns(graph, groups)
        sc_loss = self.bank_.losses(graph.states, y)
        self.state_costs_ = self._state_costs(graph.states)
        state_cost = float(self.tradeoff) * self.state_costs_

        def learn(Xs: np.ndarray, W: np.ndarray) -> FilterTree:
            return FilterTree(policy_est).fit(Xs, W)

        self.policy_ = graph_reduce(graph, columns, X, sc_loss, state_cost, learn)
        self.timings_["policies"] = time.perf_counter() - start
        self.train_risk_ = self.policy_.train_risk
        self.used_features_ = self._reachable_sensors()
        return self

    def _selection_key(self, estimator, groups, cost_of, n_rows) -> tuple:
        """What decides a block selection on a bank's rows: the mode and its settings, the
        sensors and their costs, the estimator's parameters (the tradeoff is not among them:
        a sweep over it selects once)."""
        return (self.subsets, int(self.n_subsets), self.subset_budget,
                float(self.selection_split), self.random_state, bool(self.stop_on_zero_gain),
                bool(self.add_full), tuple((k, tuple(v)) for k, v in groups.items()),
                tuple(sorted(cost_of.items())), repr(estimator), int(n_rows))

    def _blocks_of(self, selection, names) -> list[frozenset]:
        blocks = list(selection.subsets)
        full = frozenset(names)
        if self.add_full and full not in blocks:
            blocks.append(full)
        return blocks or [full]

    def _select(self, estimator, X, y, groups, cost_of) -> list[frozenset]:
        names = list(groups)
        budget = (
            sum(cost_of.values()) / 3.0 if self.subset_budget is None else self.subset_budget
        )
        _, counts = np.unique(y, return_counts=True)
        stratify = y if counts.min() >= 2 else None
        X_fit, X_eval, y_fit, y_eval = train_test_split(
            X, y, test_size=float(self.selection_split), random_state=self.random_state,
            stratify=stratify,
        )
        select = greedy_subsets if self.subsets == "greedy" else forward_prefixes
        kwargs = {"stop_on_zero_gain": self.stop_on_zero_gain} if select is greedy_subsets else {}
        self.selection_ = select(
            estimator, X_fit, y_fit, X_eval, y_eval, groups, int(self.n_subsets),
            float(budget), cost_of, **kwargs,
        )
        return self._blocks_of(self.selection_, names)

    def _reachable_sensors(self) -> np.ndarray:
        graph, policies = self.graph_, self.policy_.policies
        reached, todo = {0}, [0]
        while todo:
            k = todo.pop()
            if policies[k] is None:
                continue
            for a in policies[k].possible_actions():
                if a > 0:
                    c = graph.children[k][a - 1]
                    if c not in reached:
                        reached.add(c)
                        todo.append(c)
        sensors = frozenset().union(*(graph.states[k] for k in reached))
        return np.array([m in sensors for m in self.feature_groups_])

    def _check(self, X: np.ndarray, y: np.ndarray) -> None:
        """Assert the fitted model's invariants on its training rows ``X, y``.

        The graph's structure (spec 6, items 1-2), the reported risk equal to the routed path
        loss (item 7), every path a chain of growing states (item 4), and the acquired
        sensors inside ``used_features_``.
        """
        self.graph_._check()
        X = np.asarray(X, dtype=np.float64)
        state_cost = float(self.tradeoff) * self.state_costs_
        self.policy_._check(X, self.bank_.losses(self.graph_.states, y), state_cost)
        states = self.graph_.states
        for path in self.policy_.paths(X):
            assert path[0] == 0
            assert all(states[a] < states[b] for a, b in zip(path, path[1:], strict=False))
        assert not (self.feature_usage(X) & ~self.used_features_).any()

    # ---- prediction ----
    def _X(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "policy_")
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite="allow-nan")
        read = [c for m, u in zip(self.feature_groups_, self.used_features_, strict=True) if u
                for c in self.feature_groups_[m]]
        if np.isnan(X[:, read]).any():
            raise InvalidArgumentError(
                "Input X contains NaN in columns of sensors the model may acquire "
                "(only the columns of sensors it never uses may be NaN)"
            )
        return X

    def route(self, X: np.ndarray) -> np.ndarray:
        """Index (into ``graph_.states``) of the state each row stops and classifies at.

        Runtime complexity: at most ``M + 1`` policy predictions per row.
        """
        return self.policy_.route(self._X(X))

    def _by_state(self, X: np.ndarray, method: str) -> tuple[np.ndarray, list]:
        X = self._X(X)
        final = self.policy_.route(X)
        parts = []
        for k in np.unique(final):
            rows = np.flatnonzero(final == k)
            model = self.bank_[self.graph_.states[k]].model
            Xs = X[np.ix_(rows, self.policy_.columns[k])]
            parts.append((rows, model, getattr(model, method)(Xs)))
        return final, parts

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Class of every row: the classifier of the state its policy path stops at.

        Runtime complexity: routing plus one classifier prediction per row.
        """
        X = self._X(X)
        _, parts = self._by_state(X, "predict")
        out = np.empty(len(X), dtype=self.classes_.dtype)
        for rows, _, pred in parts:
            out[rows] = pred
        return out

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities from each row's final classifier (order of ``classes_``).

        Runtime complexity: as :meth:`predict`.
        """
        X = self._X(X)
        _, parts = self._by_state(X, "predict_proba")
        out = np.zeros((len(X), len(self.classes_)))
        for rows, model, proba in parts:
            pos = np.searchsorted(self.classes_, model.classes_)
            out[np.ix_(rows, pos)] = proba
        return out

    def feature_usage(self, X: np.ndarray) -> np.ndarray:
        """Rows x sensors: the sensors each row acquired (those of its final state).

        Runtime complexity: routing plus O(rows * sensors).
        """
        final = self.route(X)
        member = np.array(
            [[m in s for m in self.feature_groups_] for s in self.graph_.states], dtype=bool
        ).reshape(len(self.graph_), len(self.feature_groups_))
        return member[final]

    def prediction_cost(self, X: np.ndarray) -> np.ndarray:
        """Per-row acquisition cost at the training costs: ``state_costs_`` of the row's
        final state (the sensors' costs, each shared atom paid once).

        Runtime complexity: as :meth:`route`.
        """
        return self.state_costs_[self.route(X)]

    # ---- on-demand prediction ----
    def predict_item(self, item: Any, featurizer: OnDemandFeaturizer) -> ItemPrediction:
        """Predict one item, computing a sensor only when the policy acquires it.

        From the empty state, each policy reads the sensors acquired so far and either stops
        or moves to a child state; the child's new sensors are computed with
        ``featurizer.compute(item, name)`` (timed; a ``polydom.Featurizer`` reports its own
        seconds), in the order of ``feature_groups_``.  Sensors off the item's path are never
        computed.

        Parameters
        ----------
        item : object
            Whatever the featurizer understands.
        featurizer : OnDemandFeaturizer
            ``compute(item, name)`` gives the sensor's values (one per column, in
            ``feature_groups_[name]`` order).

        Returns
        -------
        ItemPrediction
            ``label`` and ``proba`` equal ``predict`` / ``predict_proba`` on the item's full
            row; ``computed`` lists the sensors in the order they were acquired.

        Runtime complexity: at most ``M + 1`` policy evaluations plus the sensors computed.
        """
        check_is_fitted(self, "policy_")
        if not callable(getattr(featurizer, "compute", None)):
            raise InvalidArgumentError(
                f"featurizer must have a compute(item, name) method, got {featurizer!r}"
            )
        states, columns = self.graph_.states, self.policy_.columns
        x = np.full(self.n_features_in_, np.nan)
        seconds: dict[str, float] = {}
        k = 0
        while (nxt := self.policy_.next_state(k, x[columns[k]])) is not None:
            for name in (m for m in self.feature_groups_ if m in states[nxt] - states[k]):
                cols = self.feature_groups_[name]
                x[cols], seconds[name] = compute_feature(featurizer, item, name, len(cols))
            k = nxt
        model = self.bank_[states[k]].model
        xs = x[columns[k]].reshape(1, -1)
        proba = None
        if callable(getattr(model, "predict_proba", None)):
            proba = np.zeros(len(self.classes_))
            proba[np.searchsorted(self.classes_, model.classes_)] = model.predict_proba(xs)[0]
        return ItemPrediction(
            model.predict(xs)[0],
            computed=tuple(seconds),
            feature_seconds=seconds,
            model_features=self.used_feature_names_,
            proba=proba,
        )

    # ---- storage: arrays + JSON, sub-models as skops bytes, no pickle ----
    def sweep_shared(self, X: np.ndarray, y: np.ndarray, first: Mapping[str, Any],
                     **options: Any) -> dict[str, Any]:
        """The classifier bank and the blocks, trained once per split on its training rows
        (by a fit with the grid's first parameters ``first``) and shared by every setting
        there: each fit of the sweep learns only its policies.  The bank does not depend on
        the costs; with ``subsets="greedy"`` / ``"forward"`` the blocks are those selected
        at the first reference size.

        Runtime complexity: one fit (bank, selection and policies).
        """
        trained = clone(self).set_params(**first).fit(X, y)
        return {"bank": trained.bank_, "subsets": [sorted(b) for b in trained.blocks_],
                "add_full": False}

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Fitted state as arrays and JSON (``storage``'s array format), without pickle.

        The bank's models and the filter trees' binary classifiers are stored as skops
        byte arrays (:mod:`learners.budgeted.sklearn_blobs`), written and loaded only when
        every class they name is on the allow-list of :mod:`polydom.blobs.allowlist`.  The
        ``estimator``, ``policy_estimator`` and ``bank`` parameters are not stored (a loaded
        model predicts; refitting it uses the defaults).

        Runtime complexity: O(model size).
        """
        check_is_fitted(self, "policy_")
        arrays: dict[str, np.ndarray] = {"feature_costs": self.feature_costs_.copy()}
        policies = []
        for k, policy in enumerate(self.policy_.policies):
            if policy is None:
                policies.append(None)
            elif isinstance(policy, ConstantPolicy):
                policies.append({"constant": policy.action})
            else:
                levels = []
                for li, level in enumerate(policy.levels_):
                    row = []
                    for mi, (left, right, model) in enumerate(level):
                        if isinstance(model, int):
                            row.append([left, right, model])
                        else:
                            key = f"policy.{k}.{li}.{mi}"
                            arrays[key] = dump_estimator(model, key)
                            row.append([left, right, key])
                    levels.append(row)
                policies.append({"n_actions": policy.n_actions_, "levels": levels})
        for k, s in enumerate(self.graph_.states):
            arrays[f"bank.{k}"] = dump_estimator(self.bank_[s].model, f"bank.{k}")
        if self.classes_.dtype.hasobject:
            classes_meta = [str(c) for c in self.classes_]
        else:
            arrays["classes"] = self.classes_
            classes_meta = None
        params = {
            "feature_groups": self.feature_groups_,
            "feature_costs": dict(zip(self.feature_groups_, self.feature_costs_.tolist(),
                                      strict=True)),
            "feature_atoms": (None if self.feature_atoms_ is None
                              else {n: list(a) for n, a in self.feature_atoms_.items()}),
            "atom_costs": self.atom_costs_,
            "tradeoff": float(self.tradeoff),
            "graph": self.graph,
            "subsets": [sorted(b) for b in self.blocks_],
            "add_full": False,
            "cv": int(self.cv),
        }
        meta = {
            "params": params,
            "n_features_in": int(self.n_features_in_),
            "states": [sorted(s) for s in self.graph_.states],
            "children": [list(c) for c in self.graph_.children],
            "columns": self.policy_.columns,
            "policies": policies,
            "train_risk": float(self.train_risk_),
            "classes": classes_meta,
        }
        json.dumps(meta)
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]):
        """Rebuild a fitted model from :meth:`to_arrays` (same routes and predictions).

        Runtime complexity: O(model size).
        """
        model = cls(**meta["params"])
        states = tuple(frozenset(s) for s in meta["states"])
        graph = SensorGraph(states, tuple(tuple(c) for c in meta["children"]))
        graph._check()
        policies: list[Any] = []
        for p in meta["policies"]:
            if p is None:
                policies.append(None)
            elif "constant" in p:
                policies.append(ConstantPolicy(int(p["constant"])))
            else:
                tree = FilterTree(None)
                tree.n_actions_ = int(p["n_actions"])
                tree.n_fits_ = 0
                tree.levels_ = [
                    [
                        (int(left), int(right),
                         int(m) if isinstance(m, int) else load_estimator(arrays[m], m))
                        for left, right, m in level
                    ]
                    for level in p["levels"]
                ]
                policies.append(tree)
        model.graph_ = graph
        model.blocks_ = [frozenset(b) for b in meta["params"]["subsets"]]
        model.policy_ = GraphPolicy(graph, [list(c) for c in meta["columns"]], policies,
                                    float(meta["train_risk"]))
        n = 0
        entries = {
            s: BankEntry(load_estimator(arrays[f"bank.{k}"], f"bank.{k}"), np.empty(n), 0)
            for k, s in enumerate(states)
        }
        model.bank_ = SubsetBank(entries, n)
        groups = meta["params"]["feature_groups"]
        model.feature_groups_ = {str(k): list(v) for k, v in groups.items()}
        model.feature_costs_ = np.asarray(arrays["feature_costs"], dtype=np.float64)
        model.feature_atoms_, model.atom_costs_ = model._atoms(list(model.feature_groups_)) or (
            None, None)
        model.state_costs_ = model._state_costs(states)
        model.n_features_in_ = int(meta["n_features_in"])
        model.classes_ = (
            np.asarray(arrays["classes"]) if meta["classes"] is None
            else np.asarray(meta["classes"], dtype=object)
        )
        model.train_risk_ = float(meta["train_risk"])
        model.selection_ = None
        model.used_features_ = model._reachable_sensors()
        return model
