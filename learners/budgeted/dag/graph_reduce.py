"""Graph Reduce (Wang et al., Algorithm 1): node policies learned backward over a sensor DAG.

The paper's Algorithm 1 repeatedly picks a node whose children are all leaves, learns its
policy as a cost-sensitive problem over its actions, folds the learned decision's cost into
the edges entering the node and removes its outgoing edges.  Processing the states in reverse
topological order does exactly that (spec 2.4).  With ``V_i(s)`` the cost-to-go of training
row ``i`` from state ``s`` under the policies already learned below ``s``::

    w_i[SC] = sc_loss[i, s]                              (classify with the sensors of s)
    w_i[c]  = state_cost[i, c] - state_cost[i, s] + V_i(c)   (acquire c \\ s, then go on)
    pi_s    = Learn({(x_i restricted to the sensors of s, w_i)})   on all n rows
    V_i(s)  = w_i[pi_s(x_i)]

``V_i`` uses the *learned* decisions below, not the best ones: an empirical dynamic program.
Every policy is trained on all rows, not only those that reach it (paper, section 2.2).
The root sees no feature: its policy is the constant ``argmin_a sum_i w_i[a]``.  The training
risk of the system is ``mean_i V_i(root)``, which equals the mean path loss of routing the
training rows (spec 6, item 7; checked by :meth:`GraphPolicy._check`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learners.budgeted.dag.filter_tree import ConstantPolicy
from learners.budgeted.dag.graph import SensorGraph
from polydom.errors import InvalidArgumentError

__all__ = ["GraphPolicy", "graph_reduce", "state_columns"]


def state_columns(
    graph: SensorGraph, sensor_columns: Mapping[str, Sequence[int]]
) -> list[list[int]]:
    """Columns of every state: the sorted union of its sensors' columns.

    The one column order of every model on a feature set (``polydom.CostModel.columns_of``,
    ``SklearnLearner.columns_of``), so the lattice's models can serve as the DAG's bank.

    Runtime complexity: O(K * c log c) for c columns.
    """
    return [
        sorted({int(c) for name, cols in sensor_columns.items() if name in state for c in cols})
        for state in graph.states
    ]


@dataclass
class GraphPolicy:
    """The learned node policies of a sensor DAG.

    Attributes
    ----------
    graph : SensorGraph
    columns : list of list of int
        Columns each state's policy (and classifier) reads.
    policies : list
        Per state: a fitted cost-sensitive policy (``predict(X_state) -> action``: 0 = SC,
        ``j`` = move to ``graph.children[k][j - 1]``), or None for a state with SC only.
    train_risk : float
        ``mean_i V_i(root)``: mean training path loss (error + acquisition cost).
    values : ndarray of shape (n, K)
        ``V_i(s)`` of every training row and state.
    order : list of int
        States in the order their policies were learned.
    n_binary_fits : int
        Binary classifiers fitted over all filter trees.
    """

    graph: SensorGraph
    columns: list
    policies: list
    train_risk: float = 0.0
    values: np.ndarray = field(default=None, repr=False)
    order: list = field(default_factory=list)
    n_binary_fits: int = 0

    def route(self, X: np.ndarray) -> np.ndarray:
        """Final state of every row: follow the policies from the root until SC.

        Only the columns of a row's current state are read at each step (no peeking).

        Runtime complexity: one policy prediction per (state, rows there).
        """
        return self._walk(X, None)

    def paths(self, X: np.ndarray) -> list[list[int]]:
        """The states every row visits, root first, final state last.

        Runtime complexity: as :meth:`route`, plus O(n * path length).
        """
        paths: list[list[int]] = [[0] for _ in range(len(X))]
        self._walk(X, paths)
        return paths

    def _walk(self, X: np.ndarray, paths: list[list[int]] | None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        state = np.zeros(len(X), dtype=np.int64)
        for k, policy in enumerate(self.policies):
            rows = np.flatnonzero(state == k)
            if policy is None or rows.size == 0:
                continue
            action = np.asarray(policy.predict(X[np.ix_(rows, self.columns[k])]), dtype=np.int64)
            move = action > 0
            kids = np.asarray(self.graph.children[k], dtype=np.int64)
            state[rows[move]] = kids[action[move] - 1]
            if paths is not None:
                for r in rows[move]:
                    paths[r].append(int(state[r]))
        return state

    def next_state(self, k: int, x_state: np.ndarray) -> int | None:
        """Where one row at state ``k`` goes (None: stop and classify).

        ``x_state``: the row's values of the state's columns.

        Runtime complexity: one policy prediction.
        """
        policy = self.policies[k]
        if policy is None:
            return None
        a = int(policy.predict(np.asarray(x_state, dtype=np.float64).reshape(1, -1))[0])
        return None if a == 0 else self.graph.children[k][a - 1]

    def _check(self, X: np.ndarray, sc_loss: np.ndarray, state_cost: np.ndarray) -> None:
        """Assert that routing the training rows reproduces the reported risk (spec 6.7)."""
        final = self.route(X)
        n = len(X)
        cost = np.broadcast_to(state_cost, (n, len(self.graph)))
        loss = sc_loss[np.arange(n), final] + cost[np.arange(n), final] - cost[:, 0]
        assert np.allclose(loss.mean(), self.train_risk, rtol=1e-9, atol=1e-12)
        assert np.allclose(loss, self.values[:, 0], rtol=1e-9, atol=1e-12)


def graph_reduce(
    graph: SensorGraph,
    columns: Sequence[Sequence[int]],
    X: np.ndarray,
    sc_loss: np.ndarray,
    state_cost: np.ndarray,
    learn: Callable[[np.ndarray, np.ndarray], Any],
) -> GraphPolicy:
    """Learn every node policy of ``graph`` backward (paper Algorithm 1).

    Parameters
    ----------
    graph : SensorGraph
    columns : sequence of sequence of int
        Columns of ``X`` each state may read (:func:`state_columns`).
    X : ndarray of shape (n, columns)
        Training rows.
    sc_loss : ndarray of shape (n, K)
        Loss of classifying row ``i`` at state ``k`` (0/1 error of the state's classifier,
        or any loss: the paper's Eq. 10 ``D``).
    state_cost : ndarray of shape (K,) or (n, K)
        Acquisition cost of holding each state's sensors (per row for example-dependent
        costs); the edge ``s -> c`` costs ``state_cost[c] - state_cost[s]``.
    learn : callable (X_state, W) -> policy
        A cost-sensitive learner (e.g. ``FilterTree(estimator).fit``); called for every state
        with at least one column and one child.  The policy's ``predict`` returns actions.

    Returns
    -------
    GraphPolicy

    Runtime complexity: one ``learn`` per non-terminal state with features (a filter tree
    fits at most ``|T(s)| - 1`` binaries: ``M 2^(M-1)`` in all for the full DAG) plus
    O(n K) bookkeeping.
    """
    X = np.asarray(X, dtype=np.float64)
    sc_loss = np.asarray(sc_loss, dtype=np.float64)
    n, K = sc_loss.shape
    if K != len(graph) or len(columns) != K or len(X) != n:
        raise InvalidArgumentError(
            f"sc_loss must have shape ({len(X)}, {len(graph)}) and columns {len(graph)} "
            f"entries; got {sc_loss.shape} and {len(columns)}"
        )
    cost = np.broadcast_to(np.asarray(state_cost, dtype=np.float64), (n, K))
    V = np.zeros((n, K))
    policies: list[Any] = [None] * K
    order, fits = [], 0
    rows = np.arange(n)
    for k in range(K - 1, -1, -1):
        kids = graph.children[k]
        if not kids:
            V[:, k] = sc_loss[:, k]
            continue
        W = np.column_stack(
            [sc_loss[:, k]] + [cost[:, c] - cost[:, k] + V[:, c] for c in kids]
        )
        if columns[k]:
            policy = learn(X[:, list(columns[k])], W)
            fits += int(getattr(policy, "n_fits_", 0))
        else:
            policy = ConstantPolicy.fit(W)
        action = np.asarray(policy.predict(X[:, list(columns[k])]), dtype=np.int64)
        V[:, k] = W[rows, action]
        policies[k] = policy
        order.append(k)
    return GraphPolicy(graph, [list(c) for c in columns], policies, float(V[:, 0].mean()),
                       V, order, fits)
