"""Hypothesis strategies for cost curves, candidate pools and domains."""

from __future__ import annotations

from hypothesis import strategies as st

from polydom import Candidate, CostCurve

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
)
