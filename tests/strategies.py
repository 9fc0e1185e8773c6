"""Hypothesis strategies for cost curves, candidate pools and domains."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from polydom import Candidate, CostCurve

BASE_EXAMPLES = 100  # max_examples of the "default" profile (tests/conftest.py)


def examples(n: int) -> int:
    """``n`` examples under the default profile, scaled by the loaded profile's budget.

    >>> examples(40) == max(1, round(40 * settings.default.max_examples / BASE_EXAMPLES))
    True
    """
    return max(1, round(n * settings.default.max_examples / BASE_EXAMPLES))


small_int_coefs = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=4)
wide_coefs = st.lists(
    st.one_of(
        st.just(0.0),
        st.floats(1e-9, 1e6, allow_nan=False, allow_infinity=False),
    ),
    min_size=1,
    max_size=5,
)
accuracies = st.one_of(
    st.sampled_from([0.5, 0.6, 0.7, 0.75, 0.8, 0.9]),  # forces equal accuracies
    st.floats(0.0, 1.0, allow_nan=False),
)


@st.composite
def curves(draw, coefs=None) -> CostCurve:
    """A non-negative curve on [0, inf): non-negative coefficients, or a square that touches 0."""
    kind = draw(st.sampled_from(["int", "wide", "touch"]))
    if coefs is not None:
        kind = "given"
    if kind == "touch":
        r = draw(st.integers(1, 8))
        k = draw(st.integers(1, 3))
        base = draw(st.integers(0, 4))
        return CostCurve([k * r * r + base, -2.0 * k * r, float(k)])  # k (n - r)^2 + base
    strategy = {"int": small_int_coefs, "wide": wide_coefs}.get(kind, coefs)
    return CostCurve(draw(strategy))


@st.composite
def candidate_pools(draw, max_size: int = 9, coefs=None) -> list[Candidate]:
    """Pools with duplicated curves and accuracies, touching curves, constants, degree 0..4."""
    k = draw(st.integers(1, max_size))
    pool = []
    for i in range(k):
        if pool and draw(st.integers(0, 5)) == 0:
            cost = draw(st.sampled_from(pool)).cost  # identical curve
        else:
            cost = draw(curves(coefs))
        pool.append(Candidate(f"c{i}", draw(accuracies), cost))
    return pool


domains = st.one_of(
    st.just((0.0, float("inf"))),
    st.tuples(st.integers(0, 10), st.integers(0, 100)).map(
        lambda t: (float(t[0]), float(t[0] + t[1]))
    ),
    # unbounded above from a positive start, and wide finite ranges
    st.integers(1, 1000).map(lambda lo: (float(lo), float("inf"))),
    st.tuples(st.integers(0, 1000), st.integers(1, 10**5)).map(
        lambda t: (float(t[0]), float(t[0] + t[1]))
    ),
)


@st.composite
def large_pools(draw, min_size: int = 50, max_size: int = 300) -> list[Candidate]:
    """Hundreds of candidates: continuous accuracies, coefficients over ten orders of
    magnitude (the leading terms decide far out, the constants near 0)."""
    k = draw(st.integers(min_size, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    degree = rng.integers(0, 4, k)
    pool = []
    for i in range(k):
        scale = 10.0 ** rng.uniform(-4, 6, degree[i] + 1)
        pool.append(Candidate(f"c{i}", float(rng.uniform(0.3, 1.0)),
                              CostCurve((rng.uniform(0, 1, degree[i] + 1) * scale).tolist())))
    return pool
