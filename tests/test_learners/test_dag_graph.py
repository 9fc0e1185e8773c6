"""The DAG's building blocks: sensor graphs, filter trees, Graph Reduce (spec 001, section 6)."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.dummy import DummyClassifier
from sklearn.tree import DecisionTreeClassifier

from learners.budgeted.dag.filter_tree import ConstantPolicy, FilterTree
from learners.budgeted.dag.graph import chain_graph, full_graph, union_graph
from learners.budgeted.dag.graph_reduce import graph_reduce, state_columns
from tests.strategies import examples

SENSORS = ["a", "b", "c"]


# ---- graphs (items 1-2) ----
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5])
def test_full_graph_has_every_subset_and_one_sensor_edges(M):
    names = [f"s{j}" for j in range(M)]
    g = full_graph(names)
    g._check()
    assert len(g) == 2**M
    for s, kids, k in zip(g.states, g.children, g.n_actions, strict=True):
        assert k == M - len(s) + 1
        assert {g.states[c] - s for c in kids} == {frozenset([m]) for m in names if m not in s}
    assert g.children[g.index(names)] == ()


def test_union_graph_states_are_the_distinct_unions_of_blocks():
    blocks = [{"a", "b"}, {"b", "c"}, {"a", "b", "c", "d"}, {"a", "b"}]
    g = union_graph(blocks)
    g._check()
    sets = list(map(frozenset, blocks))
    unions = {frozenset().union(*c) for r in range(5) for c in combinations(sets, r)}
    assert set(g.states) == unions
    for s, kids in zip(g.states, g.children, strict=True):
        assert {g.states[c] for c in kids} == {s | b for b in map(frozenset, blocks) if not b <= s}


def test_union_of_singletons_is_the_full_graph():
    assert union_graph([[m] for m in SENSORS]) == full_graph(SENSORS)


def test_chain_graph_is_the_prefixes_and_skips_blocks_adding_nothing():
    g = chain_graph([["b"], ["a", "b"], ["a"], ["c"]])
    g._check()
    assert g.states == (frozenset(), frozenset("b"), frozenset("ab"), frozenset("abc"))
    assert g.children == ((1,), (2,), (3,), ())


@pytest.mark.parametrize("blocks", [[], [[]], ["ab"], [["a"], []]])
def test_bad_blocks_are_refused(blocks):
    with pytest.raises(ValueError):
        union_graph(blocks)


# ---- filter trees (items 13-15) ----
class Recorder(DummyClassifier):
    """A constant learner that remembers what it was fitted on."""

    fits: list = []

    def fit(self, X, y, sample_weight=None):
        Recorder.fits.append((np.asarray(y).copy(), np.asarray(sample_weight).copy()))
        return super().fit(X, y, sample_weight=sample_weight)


def test_filter_tree_with_two_actions_is_one_weighted_binary_problem():
    Recorder.fits = []
    X = np.arange(4.0).reshape(-1, 1)
    W = np.array([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0], [0.0, 3.0]])
    FilterTree(Recorder(strategy="most_frequent")).fit(X, W)
    (y, w), = Recorder.fits
    np.testing.assert_array_equal(y, [0, 1, 0])  # the tied row (weight 0) is dropped
    np.testing.assert_allclose(w * np.mean([1.0, 1.5, 3.0]), [1.0, 1.5, 3.0])


def test_filter_tree_with_one_action_predicts_it():
    tree = FilterTree(DecisionTreeClassifier()).fit(np.zeros((3, 1)), np.ones((3, 1)))
    np.testing.assert_array_equal(tree.predict(np.zeros((2, 1))), [0, 0])
    assert tree.n_fits_ == 0


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 7), st.integers(0, 10**6))
def test_filter_tree_with_an_exact_learner_picks_each_rows_cheapest_action(k, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    W = rng.random((40, k))
    tree = FilterTree(DecisionTreeClassifier(random_state=0)).fit(X, W)
    pred = tree.predict(X)
    assert set(pred) <= set(range(k))
    np.testing.assert_array_equal(pred, W.argmin(axis=1))
    assert tree.n_fits_ <= k - 1


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 7), st.integers(0, 10**6))
def test_filter_tree_with_constant_learners_picks_the_least_total_cost(k, seed):
    rng = np.random.default_rng(seed)
    W = rng.random((30, k))
    X = rng.normal(size=(30, 1))
    tree = FilterTree(DummyClassifier(strategy="most_frequent")).fit(X, W)
    assert set(tree.predict(X)) == {int(W.sum(axis=0).argmin())}
    assert int(W.sum(axis=0).argmin()) in tree.possible_actions()
    assert ConstantPolicy.fit(W).action == int(W.sum(axis=0).argmin())


def test_filter_tree_ignores_a_constant_added_to_one_rows_costs():
    rng = np.random.default_rng(1)
    X, W = rng.normal(size=(50, 2)), rng.random((50, 5))
    W2 = W.copy()
    W2[7] += 3.0
    a = FilterTree(DecisionTreeClassifier(random_state=0, max_depth=3)).fit(X, W)
    b = FilterTree(DecisionTreeClassifier(random_state=0, max_depth=3)).fit(X, W2)
    Xt = rng.normal(size=(200, 2))
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))


# ---- Graph Reduce (items 3, 4, 7, 8, 9, 10, 12) ----
def _problem(seed, M=3, n=60, nested=False):
    rng = np.random.default_rng(seed)
    names = [f"s{j}" for j in range(M)]
    g = full_graph(names)
    cols = state_columns(g, {m: [j] for j, m in enumerate(names)})
    X = rng.normal(size=(n, M))
    loss = (rng.random((n, len(g))) < 0.4).astype(float) + 1e-6 * rng.random((n, len(g)))
    if nested:  # non-increasing along every edge
        for k in range(len(g)):
            for c in g.children[k]:
                loss[:, c] = np.minimum(loss[:, c], loss[:, k])
    return g, cols, X, loss


def _tree_learner(estimator):
    return lambda Xs, W: FilterTree(estimator).fit(Xs, W)


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(0, 10**6), st.floats(0.0, 0.5))
def test_reported_training_risk_equals_the_routed_path_loss(seed, delta):
    g, cols, X, loss = _problem(seed)
    cost = delta * np.array([len(s) for s in g.states])
    pol = graph_reduce(g, cols, X, loss, cost, _tree_learner(DecisionTreeClassifier(max_depth=2)))
    pol._check(X, loss, cost)
    assert sorted(pol.order, reverse=True) == pol.order  # children before parents
    # every state with children is trained exactly once (the root too, as a constant)
    assert len(pol.order) == len(set(pol.order))
    assert set(pol.order) == {k for k, kids in enumerate(g.children) if kids}
    assert pol.n_binary_fits <= 3 * 2 ** (3 - 1)
    for path in pol.paths(X):  # strictly growing chains of length <= M + 1
        assert len(path) <= 4
        assert all(g.states[a] < g.states[b] for a, b in zip(path, path[1:], strict=False))


def test_constant_learners_route_every_row_to_the_best_fixed_subset():
    g, cols, X, loss = _problem(3)
    cost = 0.07 * np.array([len(s) for s in g.states])
    pol = graph_reduce(g, cols, X, loss, cost, _tree_learner(DummyClassifier()))
    final = pol.route(X)
    assert len(set(final)) == 1
    total = loss.sum(axis=0) + len(X) * cost
    assert total[final[0]] == pytest.approx(total.min())


def test_exact_learners_give_each_row_its_cheapest_superset_below_the_root():
    g, cols, X, loss = _problem(5)
    cost = 0.1 * np.array([len(s) for s in g.states])
    pol = graph_reduce(g, cols, X, loss, cost, _tree_learner(DecisionTreeClassifier()))
    for k, s in enumerate(g.states):
        if k == 0:
            continue
        sup = [j for j, t in enumerate(g.states) if s <= t]
        best = np.min(loss[:, sup] + cost[sup] - cost[k], axis=1)
        np.testing.assert_allclose(pol.values[:, k], best)
    root = min([loss[:, 0].mean()] + [(cost[c] + pol.values[:, c]).mean() for c in g.children[0]])
    assert pol.train_risk == pytest.approx(root)


def test_free_sensors_with_a_nested_bank_reach_the_full_sets_error():
    g, cols, X, loss = _problem(11, nested=True)
    pol = graph_reduce(g, cols, X, loss, np.zeros(len(g)), _tree_learner(DecisionTreeClassifier()))
    assert pol.train_risk == pytest.approx(loss[:, -1].mean())


@pytest.mark.parametrize("learner", [DummyClassifier(), DecisionTreeClassifier()])
def test_a_higher_sensor_cost_never_buys_more_or_errs_less(learner):
    g, cols, X, loss = _problem(2)
    sizes = np.array([len(s) for s in g.states])
    acquired, errors = [], []
    for delta in [0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 1.2]:
        pol = graph_reduce(g, cols, X, loss, delta * sizes, _tree_learner(learner))
        final = pol.route(X)
        acquired.append(sizes[final].mean())
        errors.append(loss[np.arange(len(X)), final].mean())
    assert all(a >= b - 1e-12 for a, b in zip(acquired, acquired[1:], strict=False))
    assert all(a <= b + 1e-12 for a, b in zip(errors, errors[1:], strict=False))
    assert acquired[-1] == 0.0


def test_per_row_costs_equal_to_the_uniform_ones_reproduce_the_standard_system():
    # spec 6 item 18: the generalised path (Eq. 10, costs per row) with c = sum of c_m
    g, cols, X, loss = _problem(4)
    cost = 0.08 * np.array([len(s) for s in g.states], dtype=float)
    learn = _tree_learner(DecisionTreeClassifier(max_depth=2, random_state=0))
    a = graph_reduce(g, cols, X, loss, cost, learn)
    b = graph_reduce(g, cols, X, loss, np.tile(cost, (len(X), 1)), learn)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.route(X), b.route(X))
    # and a row-dependent cost is what each row pays: doubling row 0's costs only
    rowwise = np.tile(cost, (len(X), 1))
    rowwise[0] *= 2
    c = graph_reduce(g, cols, X, loss, rowwise, learn)
    c._check(X, loss, rowwise)


def test_graph_reduce_checks_shapes():
    g, cols, X, loss = _problem(0)
    with pytest.raises(ValueError, match="sc_loss"):
        graph_reduce(g, cols, X, loss[:, :3], np.zeros(len(g)), _tree_learner(DummyClassifier()))
