"""Feature maps phi(x) for trees of linear classifiers, each column knowing the atoms it reads.

:class:`LinearMap` keeps the raw columns (optionally standardised); :class:`BoostedTreeMap`
is the paper's *boosting trick* (JMLR 2014, section 5): the depth-limited regression trees of
a gradient-boosted model (LightGBM) become the columns, ``phi_t(x) = h_t(x)``.  Both append a
constant bias column (zero cost, not penalised) when asked, and expose

* ``F``: atoms x map columns, ``F[a, t] = 1`` when column ``t`` reads atom ``a`` (a tree reads
  every atom it splits on: the paper's conservative charge);
* ``e``: the evaluation cost of each map column (trees: ``tree_cost``; raw columns: 0);
* ``penalised``: 1 for every column under the l1 term (all but the bias).

Both store as numeric arrays + JSON (``to_arrays`` / ``from_arrays``), never pickle.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

import numpy as np

from learners.budgeted.cstc.engine import CostModelArrays
from learners.budgeted.tree_paths import TreeEnsemble
from learners.codecs.lightgbm_text import booster_from_text
from polydom.errors import InvalidArgumentError

__all__ = ["BoostedTreeMap", "LinearMap", "map_from_arrays"]


class LinearMap:
    """Raw columns (``standardize=False``) or z-scored columns, plus an optional bias column.

    Parameters
    ----------
    owner : sequence of int
        Atom index of every input column.
    n_atoms : int
    standardize : bool
    fit_intercept : bool
    """

    kind = "linear"

    def __init__(self, owner, n_atoms: int, standardize: bool, fit_intercept: bool) -> None:
        self.owner = np.asarray(owner, dtype=np.int64)
        self.n_atoms = int(n_atoms)
        self.standardize = bool(standardize)
        self.fit_intercept = bool(fit_intercept)
        d = len(self.owner)
        self.mean = np.zeros(d)
        self.scale = np.ones(d)

    def fit(self, X: np.ndarray, target: np.ndarray | None = None) -> LinearMap:
        """Learn the column means and scales (when standardising).  Runtime: O(rows * cols)."""
        if self.standardize:
            self.mean = X.mean(axis=0)
            sd = X.std(axis=0)
            self.scale = np.where(sd > 0, sd, 1.0)
        return self

    @property
    def n_columns(self) -> int:
        """Width of phi."""
        return len(self.owner) + int(self.fit_intercept)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """phi(X), rows x ``n_columns``.  Runtime complexity: O(rows * cols)."""
        Phi = (X - self.mean) / self.scale
        if self.fit_intercept:
            Phi = np.column_stack([Phi, np.ones(len(X))])
        return Phi

    def cost_arrays(self, atom_costs: np.ndarray) -> CostModelArrays:
        """``F``, ``c``, ``e`` and the penalised mask of this map."""
        d, T = len(self.owner), self.n_columns
        F = np.zeros((self.n_atoms, T))
        F[self.owner, np.arange(d)] = 1.0
        pen = np.ones(T)
        if self.fit_intercept:
            pen[-1] = 0.0
        return CostModelArrays(F, atom_costs, np.zeros(T), pen)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays + JSON of the fitted map."""
        return ({"owner": self.owner, "mean": self.mean, "scale": self.scale},
                {"kind": self.kind, "n_atoms": self.n_atoms, "standardize": self.standardize,
                 "fit_intercept": self.fit_intercept})

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> LinearMap:
        """Rebuild from :meth:`to_arrays`."""
        out = cls(arrays["owner"], meta["n_atoms"], meta["standardize"], meta["fit_intercept"])
        out.mean = np.asarray(arrays["mean"], dtype=np.float64)
        out.scale = np.asarray(arrays["scale"], dtype=np.float64)
        return out


class BoostedTreeMap:
    """The boosting trick: columns are the trees of a LightGBM least-squares booster.

    Parameters
    ----------
    owner : sequence of int
        Atom index of every input column.
    n_atoms : int
    n_trees, depth, learning_rate : LightGBM rounds, ``max_depth`` (``num_leaves = 2**depth``)
        and shrinkage (the paper: T = 3000, depth 4 on LTR; the rate only rescales beta).
    tree_cost : float
        Evaluation cost ``e_t`` of every tree (the paper's unit in LTR: 1).
    fit_intercept : bool
    random_state : int, optional
    column_penalty : sequence of float, optional
        Cost of every input column's atom.  With ``penalty_tradeoff > 0`` the trees are grown
        cost-aware, GreedyMiser-style (spec 2.10): LightGBM's coupled CEGB penalty charges a
        column's cost the first time the ensemble splits on it.
    penalty_tradeoff : float, default 0.0
        0 is the paper's plain least-squares boosting.
    """

    kind = "boosted"

    def __init__(self, owner, n_atoms: int, n_trees: int, depth: int, learning_rate: float,
                 tree_cost: float, fit_intercept: bool, random_state: int | None = None,
                 column_penalty=None, penalty_tradeoff: float = 0.0) -> None:
        self.owner = np.asarray(owner, dtype=np.int64)
        self.column_penalty = (None if column_penalty is None
                               else np.asarray(column_penalty, dtype=np.float64))
        self.penalty_tradeoff = float(penalty_tradeoff)
        self.n_atoms = int(n_atoms)
        self.n_trees = int(n_trees)
        self.depth = int(depth)
        self.learning_rate = float(learning_rate)
        self.tree_cost = float(tree_cost)
        self.fit_intercept = bool(fit_intercept)
        self.random_state = random_state
        self.booster = None
        self.ensemble = None

    def fit(self, X: np.ndarray, target: np.ndarray) -> BoostedTreeMap:
        """Boost ``n_trees`` regression trees on ``target`` (squared loss).

        Runtime complexity: LightGBM's, O(n_trees * rows * cols) with histograms.
        """
        lgb = import_module("lightgbm")
        params = {"objective": "regression", "max_depth": self.depth,
                  "num_leaves": 2**self.depth, "learning_rate": self.learning_rate,
                  "min_data_in_leaf": 5, "num_threads": 1, "verbosity": -1,
                  "deterministic": True, "seed": 0 if self.random_state is None
                  else int(self.random_state)}
        if self.penalty_tradeoff > 0 and self.column_penalty is not None:
            params["cegb_tradeoff"] = self.penalty_tradeoff
            params["cegb_penalty_feature_coupled"] = self.column_penalty.tolist()
        self.booster = lgb.train(params, lgb.Dataset(X, target), num_boost_round=self.n_trees)
        self.ensemble = TreeEnsemble.from_booster(self.booster)
        return self

    @property
    def n_columns(self) -> int:
        """Width of phi: trees (+ bias)."""
        return self.ensemble.n_trees + int(self.fit_intercept)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """phi(X): every tree's output on every row (+ bias).  Runtime: O(rows * total depth)."""
        leaves = self.ensemble.apply(X)
        ens = self.ensemble
        cols = [tree.value[ens.leaf_node[t][leaves[:, t]]] for t, tree in enumerate(ens.trees)]
        if self.fit_intercept:
            cols.append(np.ones(len(X)))
        return np.column_stack(cols) if cols else np.zeros((len(X), 0))

    def cost_arrays(self, atom_costs: np.ndarray) -> CostModelArrays:
        """``F`` from the atoms every tree splits on; ``e`` = ``tree_cost`` per tree."""
        ens = self.ensemble
        F = np.zeros((self.n_atoms, self.n_columns))
        e = np.zeros(self.n_columns)
        pen = np.ones(self.n_columns)
        for t in range(ens.n_trees):
            cols = np.flatnonzero(ens.leaf_columns[t].any(axis=0))
            F[self.owner[cols], t] = 1.0
            e[t] = self.tree_cost
        if self.fit_intercept:
            pen[-1] = 0.0
        return CostModelArrays(F, atom_costs, e, pen)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays + JSON; the booster is its LightGBM text model (as bytes)."""
        text = self.booster.model_to_string().encode()
        return ({"owner": self.owner, "booster": np.frombuffer(text, dtype=np.uint8)},
                {"kind": self.kind, "n_atoms": self.n_atoms, "n_trees": self.n_trees,
                 "depth": self.depth, "learning_rate": self.learning_rate,
                 "tree_cost": self.tree_cost, "fit_intercept": self.fit_intercept,
                 "random_state": self.random_state})

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray],
                    meta: Mapping[str, Any]) -> BoostedTreeMap:
        """Rebuild from :meth:`to_arrays`."""
        out = cls(arrays["owner"], meta["n_atoms"], meta["n_trees"], meta["depth"],
                  meta["learning_rate"], meta["tree_cost"], meta["fit_intercept"],
                  meta["random_state"])
        out.booster = booster_from_text(bytes(arrays["booster"]).decode(), "CSTC feature map")
        out.ensemble = TreeEnsemble.from_booster(out.booster)
        return out


def map_from_arrays(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]):
    """A stored feature map, by its ``kind``."""
    kinds = {"linear": LinearMap, "boosted": BoostedTreeMap}
    if meta.get("kind") not in kinds:
        raise InvalidArgumentError(f"unknown feature map kind {meta.get('kind')!r}")
    return kinds[meta["kind"]].from_arrays(arrays, meta)
