"""ADAPT's q-step: branch losses and the closed-form I-projection of the routing posterior.

Nan and Saligrama, *Adaptive Classification for Prediction Under a Budget* (NIPS 2017), (OPT1):
with the gate ``g`` and the low-cost model ``f1`` fixed, the posterior ``q_i = q(z=0 | x_i)``
(probability of sending row ``i`` to the high-cost model ``f0``) minimises

    (1/N) sum_i [(1 - q_i) A_i + q_i B_i - H(q_i)]    s.t.  (1/N) sum_i q_i <= P_full

with ``A_i = softplus(-y_i f1(x_i)) + softplus(g(x_i))`` (the low-cost branch),
``B_i = -log p(y_i | x_i; f0) + softplus(-g(x_i))`` (the high-cost branch) and ``H`` the binary
entropy.  The solution is ``q_i = sigmoid(A_i - B_i - beta)`` for the smallest ``beta >= 0``
meeting the constraint (spec section 2.3); ``beta`` is found by bisection on the strictly
decreasing mean.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, logit, logsumexp

from polydom.errors import InvalidArgumentError

__all__ = [
    "branch_losses",
    "entropy",
    "lpc_branch_losses",
    "lpc_loss",
    "q_objective",
    "solve_q",
]

_P_MIN = 1e-12


def branch_losses(
    y_sign: np.ndarray, f1_score: np.ndarray, g_score: np.ndarray, p0_true: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row losses ``(A, B)`` of the low-cost and the high-cost branch.

    Parameters
    ----------
    y_sign : ndarray of {-1, +1}
    f1_score, g_score : ndarray
        Margins of the low-cost model and of the gate (``g > 0``: send to ``f0``).
    p0_true : ndarray
        The high-cost model's probability of the true label (clipped to ``[1e-12, 1]``).

    Runtime complexity: O(rows).
    """
    return lpc_branch_losses(np.logaddexp(0.0, -y_sign * f1_score), g_score, p0_true)


def lpc_branch_losses(
    lpc_loss: np.ndarray, g_score: np.ndarray, p0_true: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` from the low-cost model's per-row loss (any loss: logistic, softmax).

    ``A = lpc_loss + softplus(g)``, ``B = -log p0(y | x) + softplus(-g)``: the q-step of
    many classes is the binary one with the softmax cross-entropy as the low-cost loss
    (spec section 2.10).  Runtime complexity: O(rows).
    """
    A = np.asarray(lpc_loss, dtype=np.float64) + np.logaddexp(0.0, g_score)
    B = -np.log(np.clip(p0_true, _P_MIN, 1.0)) + np.logaddexp(0.0, -g_score)
    return A, B


def lpc_loss(y: np.ndarray, zf: np.ndarray) -> np.ndarray:
    """Per-row loss of the low-cost model: logistic (``y`` in {-1, +1}, ``zf`` margins) or,
    for a softmax (``zf`` rows x classes, ``y`` class indices), the cross-entropy.  O(rows * M).
    """
    if zf.ndim == 1:
        return np.logaddexp(0.0, -y * zf)
    return logsumexp(zf, axis=1) - zf[np.arange(len(y)), y]


def entropy(q: np.ndarray) -> np.ndarray:
    """Binary entropy ``-q log q - (1-q) log(1-q)`` (0 at 0 and 1).  O(rows)."""
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(q * np.log(q)) - (1.0 - q) * np.log1p(-q)
    return np.nan_to_num(h, nan=0.0)


def q_objective(q: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """Value of (OPT1): ``mean((1 - q) A + q B - H(q))``.  O(rows)."""
    return float(np.mean((1.0 - q) * A + q * B - entropy(q)))


def solve_q(
    A: np.ndarray, B: np.ndarray, p_full: float, mode: str = "le", tol: float = 1e-12
) -> tuple[np.ndarray, float]:
    """Closed-form q-step: ``q_i = sigmoid(A_i - B_i - beta)`` and the multiplier ``beta``.

    ``mode="le"`` (the paper): ``mean(q) <= p_full`` with ``beta >= 0``, ``beta = 0`` when the
    constraint does not bind.  ``mode="eq"`` (the authors' code): ``mean(q) = p_full``, so
    ``beta`` may be negative; ``p_full = 1`` gives ``q = 1`` everywhere.  ``p_full = 0`` gives
    ``q = 0`` (``beta = inf``) in both modes.

    Runtime complexity: O(rows * log((max d - min d) / tol)) with ``d = A - B``.

    >>> q, beta = solve_q(np.array([0.0, 0.0]), np.array([0.0, 0.0]), 0.25)
    >>> np.round(q, 6).tolist(), round(beta, 6)
    ([0.25, 0.25], 1.098612)
    """
    if mode not in ("le", "eq"):
        raise InvalidArgumentError(f"mode must be 'le' or 'eq', got {mode!r}")
    if not 0.0 <= p_full <= 1.0:
        raise InvalidArgumentError(f"p_full must be in [0, 1], got {p_full!r}")
    d = np.asarray(A, dtype=np.float64) - np.asarray(B, dtype=np.float64)
    if p_full == 0.0:
        return np.zeros_like(d), math.inf
    if p_full == 1.0:
        return (np.ones_like(d), -math.inf) if mode == "eq" else (expit(d), 0.0)
    q = expit(d)
    if mode == "le" and q.mean() <= p_full:
        return q, 0.0
    target = float(logit(p_full))
    lo = 0.0 if mode == "le" else float(d.min()) - target - 1.0
    hi = float(d.max()) - target + 1.0
    lo = min(lo, hi)
    for _ in range(200):
        beta = 0.5 * (lo + hi)
        if expit(d - beta).mean() > p_full:
            lo = beta
        else:
            hi = beta
        if hi - lo < tol:
            break
    beta = hi  # the feasible end of the bracket: mean(q) <= p_full
    return expit(d - beta), beta
