"""The CSTC/CSCC engine against the spec's invariants (specs/cstc-cscc.md, section 6)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad
from sklearn.linear_model import Lasso

from learners.budgeted.cstc.engine import (
    CostModelArrays,
    TreeStructure,
    block_constants,
    exact_path_cost,
    exit_terminals,
    finetune_leaves,
    finetune_objective,
    fit_tree,
    grow,
    initialise,
    internal_surrogate,
    leaf_solve,
    objective,
    path_atoms,
    predict_terminals,
    prune,
    relaxed_path_cost,
    routing,
    weighted_median_threshold,
)
from tests.strategies import examples


def random_problem(seed, n=30, T=5, d=3, structure=None, sparsity=0.0):
    rng = np.random.default_rng(seed)
    st_ = structure or TreeStructure.full(int(rng.integers(1, 4)))
    Phi = rng.normal(size=(n, T))
    F = (rng.uniform(size=(d, T)) < 0.5).astype(float)
    cm = CostModelArrays(F, rng.uniform(0, 2, d), rng.uniform(0, 1, T), np.ones(T))
    B = rng.normal(size=(st_.n_nodes, T))
    B[rng.uniform(size=B.shape) < sparsity] = 0.0
    theta = rng.normal(size=st_.n_nodes)
    theta[st_.is_leaf] = -np.inf
    return rng, Phi, rng.normal(size=n), rng.uniform(0.5, 2, n), cm, st_, B, theta


structures = st.one_of(
    st.integers(1, 3).map(TreeStructure.full),
    st.integers(1, 4).map(TreeStructure.cascade),
    st.sampled_from([(0, 1), (0, 2), (0, 1, 2, 4), (0, 2, 6, 14), (0, 1, 2, 3, 6)]).map(
        TreeStructure),
)


@settings(max_examples=examples(40))
@given(structures, st.integers(0, 10_000), st.floats(0.1, 10))
def test_routing_is_a_distribution_soft_and_hard(structure, seed, tau):
    _, Phi, _, _, _, st_, B, theta = random_problem(seed, structure=structure)
    st_._check()
    Z = Phi @ B.T - theta
    for hard in (False, True):
        P, PT, _ = routing(Z, st_, tau, hard=hard)
        assert ((P >= 0) & (P <= 1)).all() and ((PT >= 0) & (PT <= 1)).all()
        np.testing.assert_allclose(PT.sum(axis=1), 1.0, rtol=1e-12)
        if hard:
            assert ((PT == 1).sum(axis=1) == 1).all()
            np.testing.assert_array_equal(PT.argmax(axis=1), exit_terminals(Phi, B, theta, st_))


def test_every_level_of_a_full_tree_holds_all_probability():
    _, Phi, _, _, _, st_, B, theta = random_problem(1, structure=TreeStructure.full(3))
    P, _, _ = routing(Phi @ B.T - theta, st_)
    for level in range(3):
        np.testing.assert_allclose(P[:, st_.depth == level].sum(axis=1), 1.0)


def test_soft_routing_tends_to_hard_as_weights_scale():
    _, Phi, _, _, _, st_, B, theta = random_problem(2, structure=TreeStructure.full(3))
    inner = ~st_.is_leaf
    _, hard, _ = routing(Phi @ B.T - theta, st_, hard=True)
    gaps = []
    for s in (1.0, 10.0, 1e3, 1e6):
        Bs, ts = B.copy(), theta.copy()
        Bs[inner] *= s
        ts[inner] *= s
        _, soft, _ = routing(Phi @ Bs.T - ts, st_)
        gaps.append(np.abs(soft - hard).max())
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 1e-6


def brute_force_cost(phi, B, theta, st_, cm):
    """Walk one row down the tree node by node; pay each column / atom once."""
    k, cols = 0, set()
    while True:
        cols |= set(np.flatnonzero(B[k]).tolist())
        if st_.is_leaf[k]:
            break
        nxt = st_.up[k] if phi @ B[k] > theta[k] else st_.low[k]
        if nxt < 0:
            break
        k = nxt
    atoms = {a for t in cols for a in np.flatnonzero(cm.F[:, t])}
    return sum(cm.e[t] for t in cols) + sum(cm.c[a] for a in atoms)


@settings(max_examples=examples(30))
@given(structures, st.integers(0, 10_000))
def test_exact_cost_equals_a_brute_force_walk(structure, seed):
    _, Phi, _, _, cm, st_, B, theta = random_problem(seed, structure=structure, sparsity=0.6)
    cost = exact_path_cost(B, st_, cm)[exit_terminals(Phi, B, theta, st_)]
    expected = [brute_force_cost(p, B, theta, st_, cm) for p in Phi]
    np.testing.assert_allclose(cost, expected)


def test_a_feature_used_twice_on_a_path_is_paid_once():
    st_ = TreeStructure.cascade(2)
    cm = CostModelArrays(np.eye(2), np.array([3.0, 5.0]), np.zeros(2), np.ones(2))
    B = np.array([[1.0, 0.0], [2.0, 0.0]])
    assert exact_path_cost(B, st_, cm).tolist() == [3.0, 3.0]
    B[1, 1] = 1.0
    assert exact_path_cost(B, st_, cm).tolist() == [3.0, 8.0]


def test_a_node_with_zero_weights_on_the_path_changes_no_cost():
    _, Phi, _, _, cm, _, B, theta = random_problem(3, structure=TreeStructure.cascade(2),
                                                   sparsity=0.5)
    longer = TreeStructure.cascade(3)
    B3 = np.vstack([B[:1], B[1:2], np.zeros_like(B[:1])])
    th3 = np.array([theta[0], -1e300, -np.inf])   # stage 2 passes every row on, stage 3 is mute
    two = exact_path_cost(B, TreeStructure.cascade(2), cm)[-1]
    assert exact_path_cost(B3, longer, cm)[-1] == two
    assert exit_terminals(Phi, B3, th3, longer).max() == longer.n_terminals - 1


def test_relaxed_cost_properties():
    one = TreeStructure.full(1)
    cm = CostModelArrays(np.eye(3), np.array([1.0, 2.0, 4.0]), np.zeros(3), np.ones(3))
    b = np.array([[0.5, -2.0, 0.0]])
    assert relaxed_path_cost(b, one, cm)[0] == pytest.approx(0.5 + 4.0)        # (a) l1
    two = TreeStructure.cascade(2)
    same = np.array([[0.7, 0, 0], [0.7, 0, 0]])
    other = np.array([[0.7, 0, 0], [0, 0.7 / 2, 0]])       # feature 1 costs 2: equal c|w|
    assert relaxed_path_cost(same, two, cm)[-1] == pytest.approx(np.sqrt(2) * 0.7)   # (b)
    assert relaxed_path_cost(other, two, cm)[-1] == pytest.approx(2 * 0.7)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(3, 3))
    st3 = TreeStructure.full(2)
    np.testing.assert_allclose(relaxed_path_cost(-3.0 * B, st3, cm),            # (c)
                               3.0 * relaxed_path_cost(B, st3, cm))
    B[:, 2] = 0.0                                                                # (d)
    B[1] = 0.0
    rel, ex = relaxed_path_cost(B, st3, cm), exact_path_cost(B, st3, cm)
    assert ((rel == 0) == (ex == 0)).all()


@pytest.mark.parametrize("mode", ["tree", "cascade"])
@pytest.mark.parametrize("tau", [0.5, 1.0, 5.0])
def test_inner_node_gradient_matches_finite_differences(mode, tau):
    structure = TreeStructure.full(3) if mode == "tree" else TreeStructure.cascade(3)
    for seed, k in ((0, 0), (1, 1)):
        _, Phi, y, w, cm, st_, B, theta = random_problem(seed, structure=structure)
        blk = block_constants(Phi, y, w, B, theta, st_, k, tau, mode)
        f = internal_surrogate(Phi, y, blk, cm, 0.7, 0.3, tau, B[k])
        x = np.concatenate([B[k], [theta[k]]])
        value, grad = (lambda v, f=f: f(v)[0]), (lambda v, f=f: f(v)[1])
        err = check_grad(value, grad, x, epsilon=1e-7)
        assert err <= 1e-5 * np.linalg.norm(grad(x))


@pytest.mark.parametrize("mode", ["tree", "cascade"])
def test_surrogate_majorises_the_objective(mode):
    """Lemma 1: Q_k(x) - Q_k(x0) >= J(x) - J(x0) for any x (Q touches J at x0)."""
    structure = TreeStructure.full(3) if mode == "tree" else TreeStructure.cascade(3)
    rng, Phi, y, w, cm, st_, B, theta = random_problem(4, structure=structure)
    k = 1
    blk = block_constants(Phi, y, w, B, theta, st_, k, 2.0, mode)
    f = internal_surrogate(Phi, y, blk, cm, 0.7, 0.3, 2.0, B[k])
    x0 = np.concatenate([B[k], [theta[k]]])

    def J(x):
        Bx, tx = B.copy(), theta.copy()
        Bx[k], tx[k] = x[:-1], x[-1]
        return objective(Phi, y, w, Bx, tx, st_, cm, 0.7, 0.3, 2.0, mode)

    for _ in range(20):
        x = x0 + rng.normal(size=x0.size) * rng.uniform(0.01, 1)
        assert f(x)[0] - f(x0)[0] >= J(x) - J(x0) - 1e-10


def test_leaf_closed_form_zeroes_the_surrogate_gradient_and_is_weighted_least_squares():
    rng, Phi, y, w, cm, _, _, _ = random_problem(5, n=40)
    b = leaf_solve(Phi, y, w, 1.0, np.zeros(5), cm, 0.0, 0.0, None, 1, 1e-12)
    ref = np.linalg.lstsq(Phi * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-8)
    a_ev = rng.uniform(0, 1, 5)
    b0 = leaf_solve(Phi, y, w, 0.6, a_ev, cm, 0.5, 0.1, None, 1, 1e-12)
    # one more step from b0 solves the surrogate built at b0; its gradient there is zero
    b1 = leaf_solve(Phi, y, w, 0.6, a_ev, cm, 0.5, 0.1, b0, 1, 1e-12)
    gam, eta_ev = np.abs(b0), np.sqrt(a_ev + b0**2)
    eta_f = np.sqrt(cm.F @ a_ev + cm.F @ b0**2)
    H = 0.1 / gam + 0.5 * 0.6 * (cm.e / eta_ev + (cm.c / eta_f) @ cm.F)
    grad = Phi.T @ (w * (Phi @ b1 - y)) / len(y) + H * b1
    assert np.abs(grad).max() < 1e-6


def test_depth_one_without_costs_is_the_lasso():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 6))
    y = X @ np.array([1.5, 0, 0, -2, 0.3, 0]) + 0.5 + rng.normal(size=200) * 0.3
    Phi = np.column_stack([X, np.ones(200)])
    cm = CostModelArrays(np.eye(6, 7), np.zeros(6), np.zeros(7), np.r_[np.ones(6), 0.0])
    fit = fit_tree(Phi, y, np.ones(200), cm, structure=TreeStructure.full(1), lam=3.0,
                   rho=0.05, irls_iters=200, tol=1e-12, finetune=False)
    ref = Lasso(alpha=0.05, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(fit.B[0], np.r_[ref.coef_, ref.intercept_], atol=1e-3)


def quadrant_problem(seed=0, n=600):
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    q = np.where(x > 0, np.where(z > 0, 0, 2), np.where(z > 0, 1, 3))
    y = np.array([-10.0, -5.0, 10.0, 5.0])[q] + rng.normal(size=n)
    feats = np.column_stack([np.where(q == j, y, rng.permutation(y)) for j in range(4)])
    Phi = np.column_stack([feats, np.sign(x), np.sign(z), np.ones(n)])
    cm = CostModelArrays(np.eye(6, 7), np.array([10, 10, 10, 10, 1, 1.0]), np.zeros(7),
                         np.r_[np.ones(6), 0.0])
    return Phi, y, cm


@pytest.mark.parametrize("mode", ["tree", "cascade"])
def test_the_relaxed_objective_never_increases_across_sweeps(mode):
    Phi, y, cm = quadrant_problem()
    structure = TreeStructure.full(3) if mode == "tree" else TreeStructure.cascade(3)
    fit = fit_tree(Phi, y, np.ones(len(y)), cm, structure=structure, lam=0.02, rho=0.01,
                   max_sweeps=4, tol=0.0)
    trace = np.array(fit.objective_trace)
    assert (np.diff(trace) <= 1e-10 * np.abs(trace[:-1])).all()
    assert trace[-1] < trace[0]          # the sweeps do descend, not only refuse to climb


def test_huge_tradeoff_leaves_only_the_bias():
    Phi, y, cm = quadrant_problem()
    fit = fit_tree(Phi, y, np.ones(len(y)), cm, structure=TreeStructure.full(2), lam=1e6,
                   rho=0.01)
    assert not fit.B[:, :6].any()
    assert (exact_path_cost(fit.B, fit.structure, cm) == 0).all()


def test_scaling_costs_by_a_and_the_tradeoff_by_one_over_a_changes_nothing():
    Phi, y, cm = quadrant_problem(n=300)
    fits = []
    for a in (1.0, 3.0):
        scaled = CostModelArrays(cm.F, cm.c * a, cm.e * a, cm.penalised)
        fits.append(fit_tree(Phi, y, np.ones(len(y)), scaled, structure=TreeStructure.full(2),
                             lam=0.02 / a, rho=0.01, max_sweeps=2))
    np.testing.assert_allclose(fits[0].B, fits[1].B, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fits[0].theta, fits[1].theta, rtol=1e-6, atol=1e-8)


def test_permuting_training_rows_gives_the_same_model():
    Phi, y, cm = quadrant_problem(n=300)
    perm = np.random.default_rng(1).permutation(len(y))
    kw = dict(structure=TreeStructure.full(2), lam=0.02, rho=0.01, max_sweeps=2)
    a = fit_tree(Phi, y, np.ones(len(y)), cm, **kw)
    b = fit_tree(Phi[perm], y[perm], np.ones(len(y)), cm, **kw)
    np.testing.assert_allclose(a.B, b.B, rtol=1e-6, atol=1e-8)


def test_pruning_never_lowers_the_validation_metric():
    Phi, y, cm = quadrant_problem(n=400)
    Pv, yv, _ = quadrant_problem(seed=1, n=300)
    fit = fit_tree(Phi, y, np.ones(len(y)), cm, structure=TreeStructure.full(3), lam=0.05,
                   rho=0.01, max_sweeps=0, finetune=False)

    def metric(p, t):
        return -float(np.mean((p - t) ** 2))

    before = metric(predict_terminals(Pv, fit.B, fit.theta, fit.structure), yv)
    B, theta, pruned = prune(fit.B, fit.theta, fit.structure, Pv, yv, metric)
    assert metric(predict_terminals(Pv, B, theta, pruned), yv) >= before
    pruned._check()


def test_finetuning_keeps_the_support_and_lowers_the_leaf_loss():
    Phi, y, cm = quadrant_problem(n=400)
    w = np.ones(len(y))
    fit = fit_tree(Phi, y, w, cm, structure=TreeStructure.full(3), lam=0.05, rho=0.01,
                   max_sweeps=2, finetune=False)
    st_, B, theta = fit.structure, fit.B, fit.theta
    for kind in ("soft", "hard"):
        tuned = finetune_leaves(Phi, y, w, B, theta, st_, cm, 0.01, 1.0, "tree", kind, 5, 1e-6)
        assert not (tuned[B == 0]).any()
        P, _, _ = routing(Phi @ B.T - theta, st_, hard=kind == "hard")
        for k in np.flatnonzero(st_.is_leaf):
            assert finetune_objective(Phi, y, P[:, k], tuned[k], 0.01, cm.penalised) <= (
                finetune_objective(Phi, y, P[:, k], B[k], 0.01, cm.penalised) + 1e-12)
        cols_before, _ = path_atoms(B, st_, cm)
        cols_after, _ = path_atoms(tuned, st_, cm)
        assert (cols_after <= cols_before).all()


def test_cascade_costs_are_nested_and_thresholds_only_lower_them():
    _, Phi, _, _, cm, st_, B, theta = random_problem(7, n=80,
                                                     structure=TreeStructure.cascade(4),
                                                     sparsity=0.5)
    path_cost = exact_path_cost(B, st_, cm)
    assert (np.diff(path_cost) >= 0).all()                                       # (a)

    def costs(th):
        return path_cost[exit_terminals(Phi, B, th, st_)]

    def soft_cost(th):
        _, PT, _ = routing(Phi @ B.T - th, st_)
        return PT.mean(axis=0) @ path_cost

    for k in range(3):
        prev, prev_soft = costs(theta), soft_cost(theta)
        for delta in (0.5, 1.0, 3.0):
            th = theta.copy()
            th[k] += delta
            assert (costs(th) <= prev).all()                                     # (b)
            assert soft_cost(th) <= prev_soft + 1e-12                            # (c)
            prev, prev_soft = costs(th), soft_cost(th)
    th = theta.copy()
    th[:3] = -np.inf
    assert (costs(th) == path_cost[-1]).all()                                    # (d)
    th[0] = np.inf
    assert (costs(th) == path_cost[0]).all()


def test_weighted_median_threshold_keeps_ties_together():
    v = np.array([1.0, 1.0, 1.0, 2.0])
    assert weighted_median_threshold(v, np.ones(4)) == 1.5
    assert weighted_median_threshold(np.ones(3), np.ones(3)) == 1.0


def test_structure_without_a_subtree_turns_its_slot_into_a_terminal():
    st_ = TreeStructure.full(3).without(1)
    assert st_.heap == (0, 2, 5, 6)
    assert st_.term_of[0, 2] >= 0 and st_.is_leaf.tolist() == [False, False, True, True]
    st_._check()
    with pytest.raises(ValueError, match="parent"):
        TreeStructure((0, 3))


@pytest.mark.parametrize("mode", ["tree", "cascade"])
def test_greedy_growth_only_adds_nodes_that_raise_the_validation_metric(mode):
    Phi, y, cm = quadrant_problem(n=400)
    Pv, yv, _ = quadrant_problem(seed=1, n=300)

    def metric(p, t):
        return -float(np.mean((p - t) ** 2))

    root = TreeStructure((0,))
    B0, t0 = initialise(Phi, y, np.ones(len(y)), root, cm, 0.02, 0.01, 1.0, mode, 20, 1e-6)
    B, theta, grown = grow(Phi, y, np.ones(len(y)), cm, 0.02, 0.01, 1.0, mode, 20, 1e-6,
                           Pv, yv, metric, 3)
    grown._check()
    assert grown.n_nodes > 1 and max(grown.depth) <= 2
    if mode == "cascade":
        assert grown.heap == TreeStructure.cascade(grown.n_nodes).heap
    assert metric(predict_terminals(Pv, B, theta, grown), yv) > metric(
        predict_terminals(Pv, B0, t0, root), yv)
