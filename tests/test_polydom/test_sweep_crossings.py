"""The kinetic sweep where several curves cross at (nearly) one point, against exact oracles.

The sweep (:func:`polydom.index.sweep.kinetic_sweep`, spec 4.3) pops every crossing within
``tol_x`` of the first as one event, widens the re-sorted block to the curves equal there and
to any neighbour that is out of order just right of the point, and merges blocks that meet
while widening.  These paths run only when several curves meet at one point, and the
widening only when curves of very different slopes meet (a steep curve is "equal" to a
neighbour at a tolerance that a shallow one is not).  The oracles here share nothing with the
sweep: crossing points and skylines are computed in exact rational arithmetic
(:mod:`fractions`; sympy's root isolation through :mod:`tests.curve_oracle` beyond degree 1),
skylines at probe points strictly inside the ranges, and the expected breaks by hand.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polydom.index.sweep import kinetic_sweep
from tests.curve_oracle import exact_sign_changes, exact_value

# an endless loop in the sweep fails this file's tests fast (they take milliseconds)
pytestmark = pytest.mark.timeout(60)


# ---------------------------------------------------------------- exact oracle
def _exact_difference(a: list[float], b: list[float]) -> list[Fraction]:
    width = max(len(a), len(b))
    d = [(Fraction(a[k]) if k < len(a) else Fraction(0))
         - (Fraction(b[k]) if k < len(b) else Fraction(0)) for k in range(width)]
    while len(d) > 1 and d[-1] == 0:
        d.pop()
    return d


def exact_crossings(curves: list[list[float]], lo: float, hi: float) -> list[Fraction]:
    """Every point in ``(lo, hi)`` where two curves cross (their difference changes sign),
    ascending and exact: the root of a linear difference as a fraction, sympy's isolated
    roots of odd multiplicity otherwise (rounded to the nearest float)."""
    points = set()
    for i in range(len(curves)):
        for j in range(i + 1, len(curves)):
            d = _exact_difference(curves[i], curves[j])
            if len(d) == 2:
                roots = [-d[0] / d[1]]
            elif len(d) > 2:
                roots = [Fraction(r) for r in exact_sign_changes(d, lo, hi)]
            else:
                roots = []
            points.update(r for r in roots if lo < r and (math.isinf(hi) or r < hi))
    return sorted(points)


def exact_skyline(curves: list[list[float]], accs: list[float], x: Fraction) -> list[int]:
    """Curve numbers of the skyline at ``x``: by exact cost, equal costs by number (the
    priority order), kept when strictly more accurate than every cheaper one."""
    values = [exact_value(c, x) for c in curves]
    best, out = -math.inf, []
    for i in sorted(range(len(curves)), key=lambda i: (values[i], i)):
        if accs[i] > best:
            out.append(i)
            best = accs[i]
    return out


def _clusters(points: list[Fraction], rel: float) -> list[list[Fraction]]:
    out: list[list[Fraction]] = []
    for x in points:
        if out and x - out[-1][-1] <= rel * max(1, abs(x)):
            out[-1].append(x)
        else:
            out.append([x])
    return out


def assert_sweep_is_exact(curves: list[list[float]], accs: list[float], lo: float,
                          hi: float, rel: float = 1e-6) -> None:
    """Both sweeps (minimal and keep_all) against the exact crossings and skylines.

    Crossing points closer than ``rel`` (relative) form a cluster.  Between clusters the
    skyline of the range holding the midpoint must be the exact one there; every break lies
    in a cluster; a cluster that is one point up to rounding (1e-13 relative) holds exactly
    one break of Index-All; Index-All keeps a range per reordering, and the minimal sweep
    never repeats a skyline.  ``rel`` is wider for multiple roots (located to ~1e-5).
    """
    coefs = [np.asarray(c, dtype=float) for c in curves]
    every = kinetic_sweep(coefs, accs, lo, hi, keep_all=True)
    minimal = kinetic_sweep(coefs, accs, lo, hi)
    clusters = _clusters(exact_crossings(curves, lo, hi), rel)
    edges = [Fraction(lo)] + [x for c in clusters for x in (c[0], c[-1])] + [hi]
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        probe = a + 1 if math.isinf(b) else (a + Fraction(b)) / 2
        want = exact_skyline(curves, accs, probe)
        for result in (every, minimal):
            k = bisect.bisect_right(result.breaks, float(probe)) - 1
            assert result.skylines[k] == want, (float(probe), result)

    def nearest(x: float) -> int:
        """The cluster nearest to a break, which must lie in it (within ``rel``)."""
        gaps = [max(float(c[0]) - x, x - float(c[-1]), 0.0) for c in clusters]
        k = min(range(len(gaps)), key=gaps.__getitem__)
        assert gaps[k] <= rel * max(1.0, abs(x)), (x, result)
        return k

    for result in (minimal, every):
        assert result.breaks[0] == lo
        assert result.events >= result.crossings
        homes = [nearest(x) for x in result.breaks[1:]]  # the breaks of Index-All last
    for k, c in enumerate(clusters):
        if c[-1] - c[0] <= Fraction(1e-13) * max(1, abs(c[0])):
            assert homes.count(k) == 1, (float(c[0]), every)
    assert every.crossings == minimal.crossings == len(every.breaks) - 1
    assert all(a != b for a, b in zip(minimal.skylines, minimal.skylines[1:], strict=False))


def numbered(named: dict[str, tuple[list[float], float]]) -> tuple[list[str], list, list]:
    """Curves numbered in priority order (accuracy descending, then name)."""
    names = sorted(named, key=lambda k: (-named[k][1], k))
    return names, [named[k][0] for k in names], [named[k][1] for k in names]


# ---------------------------------------------------------------- hand-computed fixtures
def test_one_size_compares_the_values_of_curves_of_different_degrees():
    # at n = 5: n and 5 cost the same (the more accurate, curve 0, is the skyline alone);
    # n**2 = 25 is dearer than 5.5 + 0 n, n = 5 cheaper than 5.5
    coefs = [np.array([0.0, 1.0]), np.array([5.0])]
    assert kinetic_sweep(coefs, [0.9, 0.5], 5.0, 5.0).skylines == [[0]]
    coefs = [np.array([5.5]), np.array([0.0, 1.0]), np.array([0.0, 0.0, 1.0])]
    result = kinetic_sweep(coefs, [0.9, 0.6, 0.5], 5.0, 5.0)
    assert (result.breaks, result.skylines) == ([5.0], [[1, 0]])
    assert (result.events, result.crossings) == (0, 0)


def test_a_queued_crossing_of_curves_no_longer_adjacent_does_not_end_the_sweep():
    """c2 = 3 + 6n, c1 = c2 + 2(n - 2)^3, c0 = c2 + (n - 2)^3 (n - 1.5).

    By cost: c1 c2 c0 up to 1.5 (c0 crosses c2 there), c1 c0 c2 up to 2, where all three
    meet (triple roots, located only to ~1e-5), c2 c0 c1 up to 3.5 (c0 - c1 = (n - 2)^3
    (n - 3.5)), c2 c1 c0 after.  The crossing of c1 and c2 queued at the start is stale after
    1.5 (c0 lies between them), and its inexact root pops alone: the sweep must skip it and
    go on to 2 and 3.5.  Accuracies .9, .7, .6: skylines [c1 c0], [c1 c0], [c2 c0],
    [c2 c1 c0].
    """
    curves = [[15.0, -20.0, 21.0, -7.5, 1.0], [-13.0, 30.0, -12.0, 2.0], [3.0, 6.0]]
    accs = [0.9, 0.7, 0.6]
    coefs = [np.array(c) for c in curves]
    minimal = kinetic_sweep(coefs, accs, 0.0, 10.0)
    assert minimal.skylines == [[1, 0], [2, 0], [2, 1, 0]]
    assert minimal.breaks == pytest.approx([0.0, 2.0, 3.5], rel=1e-4)
    every = kinetic_sweep(coefs, accs, 0.0, 10.0, keep_all=True)
    assert every.skylines == [[1, 0], [1, 0], [2, 0], [2, 1, 0]]
    assert every.breaks == pytest.approx([0.0, 1.5, 2.0, 3.5], rel=1e-4)
    assert every.crossings == minimal.crossings == 3
    assert_sweep_is_exact(curves, accs, 0.0, 10.0, rel=1e-4)


def test_triple_crossings_at_one_point_are_one_reordering():
    """Four cubics through (2, 5): 5 + s (n - 2) + c (n - 2)^3 with (s, c) = (1, 1),
    (1, -1), (1, 0.5), (2, 0): the first three meet with triple roots (located to ~1e-5, so
    the sweep may revisit the point), the fourth crosses them simply.  One reordering, one
    range in Index-All; the order after 2 by cost is the reverse of the order before it."""
    def cubic(s: float, c: float) -> list[float]:
        # 5 + s (n - 2) + c (n - 2)^3 expanded
        return [5.0 - 2.0 * s - 8.0 * c, s + 12.0 * c, -6.0 * c, c]

    curves = [cubic(1.0, 1.0), cubic(1.0, -1.0), cubic(1.0, 0.5), cubic(2.0, 0.0)]
    accs = [0.9, 0.8, 0.7, 0.6]
    # on [1.5, 2.5] they cross only at 2 (c0 - c3 = t (t^2 - 1), c2 - c3 = t (t^2 / 2 - 1),
    # t = n - 2); before 2 by cost: c3 (slope 2) c0 c2 c1; after: c1 c2 c0 c3
    every = kinetic_sweep([np.array(c) for c in curves], accs, 1.5, 2.5, keep_all=True)
    assert every.skylines == [[3, 0], [1, 0]]
    assert every.breaks == pytest.approx([1.5, 2.0], rel=1e-4)
    assert every.crossings == 1
    assert_sweep_is_exact(curves, accs, 1.5, 2.5, rel=1e-4)


@pytest.mark.parametrize("side", ["left", "right"])
def test_a_line_crossing_two_parallels_a_rounding_error_apart_is_one_crossing(side):
    """U1 = n and U2 = n +- 1e-13 (parallel: their difference is a constant, never "equal"),
    crossed at n = 1 by V = 3 - 2n (from above) or W = 2n - 1 (from below).  V meets U2
    3.3e-14 before U1 (W meets U2 1e-13 before), one point up to rounding: the block of the
    first pair must widen over the parallel (to the left for V, to the right for W), and
    Index-All has one range there.  Accuracies .9, .8, .7 for U1, U2 and the crossing line:
    skylines [U1] then [V, U1] (from above), [W, U2, U1] then [U2, U1] (from below)."""
    if side == "left":
        curves = [[0.0, 1.0], [1e-13, 1.0], [3.0, -2.0]]
        skylines = [[0], [2, 0]]
    else:
        curves = [[0.0, 1.0], [-1e-13, 1.0], [-1.0, 2.0]]
        skylines = [[2, 1, 0], [1, 0]]
    accs = [0.9, 0.8, 0.7]
    coefs = [np.array(c) for c in curves]
    for keep_all in (False, True):
        result = kinetic_sweep(coefs, accs, 0.0, 2.0, keep_all=keep_all)
        assert result.skylines == skylines
        assert result.breaks == pytest.approx([0.0, 1.0], rel=1e-12)
        assert result.crossings == 1
    assert_sweep_is_exact(curves, accs, 0.0, 2.0)


def test_a_curve_touching_a_crossing_pair_joins_its_block():
    """A = n and B = 1 cross at n = 1, where T = n - (n - 1)^2 touches A from below (no
    crossing of its own: T - A = -(n - 1)^2) and crosses B (T - B = (n - 1)(2 - n)).  By
    cost T A B before 1, B T A after; only A-B is queued (T-B are not neighbours), so the
    block of A, B must take in T, equal to them at 1, on its left.  Accuracies T .9, A .8,
    B .7: skylines [T], then [B, T]."""
    curves = [[-1.0, 3.0, -1.0], [0.0, 1.0], [1.0]]  # T, A, B
    accs = [0.9, 0.8, 0.7]
    coefs = [np.array(c) for c in curves]
    for keep_all in (False, True):
        result = kinetic_sweep(coefs, accs, 0.5, 1.5, keep_all=keep_all)
        assert result.skylines == [[0], [2, 0]]
        assert result.breaks == pytest.approx([0.5, 1.0], rel=1e-9)
        assert (result.events, result.crossings) == (1, 1)
    assert_sweep_is_exact(curves, accs, 0.5, 1.5)


def test_a_steep_line_through_a_crossing_passes_a_line_just_above_it_at_once():
    """A = n, B = 2n - 1 and the steep S = 1 + 1e7 (n - 1) meet at n = 1 (by cost S B A
    before, A B S after); R = 1 + 5e-6 + 0.5 (n - 1) passes 5e-6 above them, within the
    tolerance of S's large coefficients (S - R changes sign 5e-13 after 1) but not of A's or
    B's (they cross R at 1 + 1e-5 and 1 + 3.3e-6).  The re-sorted block S B A must widen
    over R because its last curve, S, passes it: one range at 1 in Index-All, not two."""
    curves = [[0.0, 1.0], [-1.0, 2.0], [1.0 - 1e7, 1e7], [1.0 + 5e-6 - 0.5, 0.5]]  # A B S R
    accs = [0.9, 0.8, 0.7, 0.6]
    every = kinetic_sweep([np.array(c) for c in curves], accs, 0.0, 2.0, keep_all=True)
    assert every.breaks[:2] == pytest.approx([0.0, 1.0], rel=1e-12)
    assert every.breaks[2] > 1.0 + 1e-6
    assert_sweep_is_exact(curves, accs, 0.0, 2.0)


def test_a_block_widened_into_the_next_block_merges_it():
    """Three groups cross at n = 1 at costs 1, 10 and 20 in one event (three blocks):

    A1 = n, A2 = 2n - 1; B1 = n + 9, B2 = 10 + 1e6 (n - 1) (steep); C1 = n + 19, C2 = 2n + 18;
    between them H = 5 and G = 10 + 1e-9 + 0.5 (n - 1), a hair above the B group at 1.
    B2 passes G 1e-15 after 1 ("equal" at 1 at the tolerance of B2's large coefficients, not
    at G's and B1's): the re-sorted B block widens over G up to the C block, which must be
    merged into it and re-sorted too (C1, acc .99, gets cheaper than C2, .98).  By cost at
    1 - 1e-6: A2 A1 H B2 B1 G C2 C1; at 1 + 1e-6: A1 A2 H G B1 B2 C1 C2 (G and B1 cross at
    1 + 2e-9, B2 then passes the C group at about 1 + 1e-5).
    """
    named = {
        "A1": ([0.0, 1.0], 0.50), "A2": ([-1.0, 2.0], 0.55), "H": ([5.0], 0.52),
        "B1": ([9.0, 1.0], 0.60), "B2": ([10.0 - 1e6, 1e6], 0.62),
        "G": ([10.0 + 1e-9 - 0.5, 0.5], 0.58),
        "C1": ([19.0, 1.0], 0.99), "C2": ([18.0, 2.0], 0.98),
    }
    names, curves, accs = numbered(named)
    coefs = [np.array(c) for c in curves]
    for result in (kinetic_sweep(coefs, accs, 0.0, 2.0, keep_all=True),
                   kinetic_sweep(coefs, accs, 0.0, 2.0)):
        def at(x: float, result=result) -> list[str]:
            return [names[i] for i in result.skylines[bisect.bisect_right(result.breaks, x) - 1]]

        assert at(1 - 1e-6) == ["A2", "B2", "C2", "C1"]
        assert at(1 + 1e-6) == ["A1", "A2", "G", "B1", "B2", "C1"]
    assert_sweep_is_exact(curves, accs, 0.0, 2.0)


def test_a_steep_curve_through_a_crossing_widens_the_block_on_both_sides():
    """At n = 3 the shallow P = n and Q = 6 - n cross at cost 3; the steep S = 3 + 1e6 (n - 3)
    and T = 3 - 1e6 (n - 3) pass through the same point, and L = 3 - 1e-9 + 0.25 (n - 3),
    R = 3 + 1e-9 - 0.25 (n - 3) pass a hair below and above it.  Only the steep curves are
    "equal" to L and R at 3 at their tolerance, so the re-sorted block must widen to both
    sides; after 3 by cost: T, then the shallow ones, then S."""
    named = {
        "P": ([0.0, 1.0], 0.7), "Q": ([6.0, -1.0], 0.6),
        "S": ([3.0 - 3e6, 1e6], 0.9), "T": ([3.0 + 3e6, -1e6], 0.5),
        "L": ([3.0 - 1e-9 - 0.75, 0.25], 0.8), "R": ([3.0 + 1e-9 + 0.75, -0.25], 0.65),
    }
    names, curves, accs = numbered(named)
    assert_sweep_is_exact(curves, accs, 2.0, 4.0)
    assert_sweep_is_exact(curves, accs, 0.0, math.inf)


# ---------------------------------------------------------------- pencils of lines
SLOPES = st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, 3e5, 1e6, 1e7])


@st.composite
def pencils(draw):
    """Lines through one point ``(x0, y)`` for one to three heights ``y`` (several blocks in
    one event), slopes from shallow to 1e7 (repeats give identical curves), optionally a line
    a hair (1e-9 relative) above each point that only the steep lines cross there, and a
    constant; accuracies with ties, the curves numbered in priority order."""
    x0 = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.0]))
    heights = draw(st.lists(st.sampled_from([1.0, 5.0, 20.0, 50.0]), min_size=1, max_size=3,
                            unique=True))
    curves = []
    for y in heights:
        for s in draw(st.lists(SLOPES, min_size=2, max_size=3)):
            curves.append([y - s * x0, s])
        if draw(st.booleans()):
            curves.append([y * (1 + 1e-9) - 0.5 * x0, 0.5])
    if draw(st.booleans()):
        curves.append([draw(st.sampled_from([30.0, 60.0])), 0.0])
    curves = draw(st.permutations(curves))
    accs = sorted(draw(st.lists(st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9, 0.95]),
                                min_size=len(curves), max_size=len(curves))), reverse=True)
    lo, hi = draw(st.sampled_from([(0.0, math.inf), (0.0, 20.0), (x0 - 0.25, x0 + 5.0)]))
    return curves, accs, lo, hi


@given(pencils())
def test_pencils_of_lines_sweep_as_the_exact_oracle(pencil):
    curves, accs, lo, hi = pencil
    assert_sweep_is_exact(curves, accs, lo, hi)
