"""ADAPT-LIN's solver (spec section 6, invariants 10-13): gradients, descent, sparsity, scale."""

import numpy as np
import pytest

from learners.budgeted.adapt.lin import (
    LinearGatePair,
    fit_adapt_lin,
    group_norms,
    smooth_loss,
)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(120, 4))
    y = np.where(Z[:, 0] + 0.5 * Z[:, 1] + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)
    p0 = np.clip(0.8 + 0.15 * rng.normal(size=120), 0.05, 0.99)
    groups = [np.array([0]), np.array([1]), np.array([2, 3])]
    return Z, y, p0, groups


def _starts(k, n, seed=0):
    rng = np.random.default_rng(seed)
    zero = LinearGatePair(np.zeros(k), 0.0, np.zeros(k), 0.0)
    return [zero] + [
        LinearGatePair(rng.normal(size=k), rng.normal(), rng.normal(size=k), rng.normal())
        for _ in range(n - 1)
    ]


def test_smooth_gradient_matches_finite_differences(problem):
    Z, y, _, _ = problem
    rng = np.random.default_rng(1)
    q = rng.uniform(size=len(y))
    theta = rng.normal(size=10)

    def unpack(t):
        return t[:4], t[4], t[5:9], t[9]

    _, gwg, gbg, gwf, gbf = smooth_loss(Z, y, q, *unpack(theta))
    grad = np.concatenate([gwg, [gbg], gwf, [gbf]])
    eps = 1e-6
    numeric = np.array(
        [
            (
                smooth_loss(Z, y, q, *unpack(theta + eps * e))[0]
                - smooth_loss(Z, y, q, *unpack(theta - eps * e))[0]
            )
            / (2 * eps)
            for e in np.eye(10)
        ]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("gamma", [0.0, 0.02, 0.1])
def test_alternating_minimisation_never_increases_the_objective(problem, gamma):
    Z, y, p0, groups = problem
    for start in _starts(4, 3):
        pair = fit_adapt_lin(
            Z, y, p0, groups, np.ones(3), gamma, 0.4, starts=[start], max_iter=8, inner_iter=100
        )
        assert np.all(np.diff(pair.history) <= 1e-8)


def test_a_large_penalty_selects_no_feature(problem):
    Z, y, p0, groups = problem
    pair = fit_adapt_lin(
        Z, y, p0, groups, np.ones(3), 10.0, 0.4, starts=_starts(4, 3), max_iter=5, inner_iter=100
    )
    assert not np.any(pair.wg) and not np.any(pair.wf)


def test_multi_start_keeps_the_lowest_objective(problem):
    Z, y, p0, groups = problem
    starts = _starts(4, 4, seed=3)
    runs = [
        fit_adapt_lin(
            Z, y, p0, groups, np.ones(3), 0.02, 0.4, starts=[s], max_iter=6, inner_iter=100
        )
        for s in starts
    ]
    best = fit_adapt_lin(
        Z, y, p0, groups, np.ones(3), 0.02, 0.4, starts=starts, max_iter=6, inner_iter=100
    )
    # selection compares the (OPT) values before pruning (the last entry of each history)
    finals = [r.history[-1] for r in runs]
    assert best.start == int(np.argmin(finals))
    assert best.history[-1] == pytest.approx(min(finals), abs=1e-12)


def test_scaling_costs_by_k_and_gamma_by_one_over_k_gives_the_same_model(problem):
    Z, y, p0, groups = problem
    costs = np.array([1.0, 2.0, 0.5])
    kw = dict(starts=_starts(4, 2), max_iter=4, inner_iter=100)
    a = fit_adapt_lin(Z, y, p0, groups, costs, 0.03, 0.4, **kw)
    b = fit_adapt_lin(Z, y, p0, groups, 4.0 * costs, 0.03 / 4.0, 0.4, **kw)
    np.testing.assert_allclose(a.wg, b.wg, atol=1e-9)
    np.testing.assert_allclose(a.wf, b.wf, atol=1e-9)


def test_group_norm_couples_gate_and_low_cost_weights():
    wg = np.array([3.0, 0.0, 1.0])
    wf = np.array([4.0, 0.0, 1.0])
    np.testing.assert_allclose(
        group_norms(wg, wf, [np.array([0]), np.array([1, 2])]), [5.0, 2.0**0.5]
    )
