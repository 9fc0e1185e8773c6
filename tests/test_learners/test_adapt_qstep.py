"""ADAPT's q-step (spec section 6, invariants 1-6): range, KKT, optimality, monotonicity."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import expit

from learners.budgeted.adapt.qstep import branch_losses, q_objective, solve_q

losses = arrays(np.float64, st.integers(1, 30), elements=st.floats(-20, 20))
p_fulls = st.floats(0.0, 1.0)


def _pair(d):
    return d, np.zeros_like(d)


@given(losses, p_fulls)
def test_q_is_a_probability_within_the_budget(d, p_full):
    q, beta = solve_q(*_pair(d), p_full)
    assert np.all((q >= 0) & (q <= 1))
    assert q.mean() <= p_full + 1e-9
    assert beta >= 0


@given(losses, st.floats(0.01, 0.99))
def test_eq_mode_spends_exactly_p_full(d, p_full):
    q, _ = solve_q(*_pair(d), p_full, mode="eq")
    assert abs(q.mean() - p_full) <= 1e-6


@given(losses, p_fulls)
def test_kkt_beta_zero_iff_the_constraint_is_slack(d, p_full):
    q, beta = solve_q(*_pair(d), p_full)
    free = expit(d)
    if p_full > 0 and free.mean() <= p_full:
        assert beta == 0.0
        np.testing.assert_array_equal(q, free)
    elif p_full > 0:
        assert abs(q.mean() - p_full) <= 1e-9


@given(losses, st.floats(0.05, 1.0), st.integers(0, 2**32 - 1))
def test_q_minimises_the_q_objective_over_feasible_points(d, p_full, seed):
    A, B = _pair(d)
    q, _ = solve_q(A, B, p_full)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        other = rng.uniform(size=d.shape)
        if other.mean() > p_full:
            other *= p_full / other.mean()
        assert q_objective(q, A, B) <= q_objective(other, A, B) + 1e-9


@given(losses, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_q_is_monotone_in_the_loss_gap_and_in_p_full(d, p1, p2):
    lo, hi = sorted((p1, p2))
    q_lo, _ = solve_q(*_pair(d), lo)
    q_hi, _ = solve_q(*_pair(d), hi)
    assert np.all(q_lo <= q_hi + 1e-9)
    order = np.argsort(d, kind="stable")
    assert np.all(np.diff(q_hi[order]) >= -1e-12)


@given(losses, st.floats(0.05, 0.5), st.floats(-5, 5))
def test_shifting_every_loss_changes_nothing_when_binding(d, p_full, shift):
    A = d - d.min() + 10.0  # every q would exceed p_full: the constraint binds
    B = np.zeros_like(d)
    q, _ = solve_q(A, B, p_full)
    q_shift, _ = solve_q(A + shift, B, p_full)
    np.testing.assert_allclose(q, q_shift, atol=1e-9)


def test_p_full_zero_sends_nothing_and_eq_one_sends_everything():
    d = np.linspace(-5, 5, 11)
    for mode in ("le", "eq"):
        assert np.all(solve_q(d, 0 * d, 0.0, mode)[0] == 0.0)
    assert np.all(solve_q(d, 0 * d, 1.0, "eq")[0] == 1.0)


def test_branch_losses_are_the_papers():
    y = np.array([1.0, -1.0])
    A, B = branch_losses(y, np.array([2.0, 2.0]), np.array([0.5, -1.0]), np.array([0.9, 0.2]))
    np.testing.assert_allclose(A, np.log1p(np.exp(-y * 2.0)) + np.log1p(np.exp([0.5, -1.0])))
    np.testing.assert_allclose(B, -np.log([0.9, 0.2]) + np.log1p(np.exp([-0.5, 1.0])))


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_p_full_outside_unit_interval_is_rejected(bad):
    with pytest.raises(ValueError, match="p_full"):
        solve_q(np.zeros(3), np.zeros(3), bad)
