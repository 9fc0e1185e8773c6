"""No unbounded path (issue 38 item 4): pruning's exact work, memory and publish each have a
limit, refused in one line naming it; the adversarial families are built or refused fast."""

from __future__ import annotations

import numpy as np
import pytest

import polydom
from polydom import CandidateArrays, PolyDomIndex
from polydom.errors import InvalidArgumentError
from polydom.index.sweep import crossing_lower_bound
from tests.index_oracle import full_scan


def staircase(k: int) -> CandidateArrays:
    i = np.arange(k, dtype=float)
    return CandidateArrays([f"s{j}" for j in range(k)], 0.5 + 0.5 * i / k,
                           np.stack([1.0 + i, np.full(k, 0.5)], axis=1))


def parabolas(k: int, n_max: float = 1000.0) -> CandidateArrays:
    """Every pair crosses twice; the order at both ends is the same."""
    i = np.arange(k, dtype=float)
    alpha, beta, m = 1.0 + (k - i), 4.0 * (2.0 * i + 1.0) / n_max**2, n_max / 2.0
    return CandidateArrays([f"p{j}" for j in range(k)], 0.5 + 0.5 * i / k,
                           np.stack([alpha + beta * m * m, -2.0 * beta * m, beta], axis=1))


def test_a_staircase_that_all_survives_needs_no_exact_comparison():
    table = PolyDomIndex.build(staircase(20_000), 0.0, 1000.0, max_prune_tests=0)
    assert table.stats_["undominated"] == 20_000 and len(table) == 1
    assert table.lookup(10.0, 100.0).key == "s94"  # 1 + 94 + 0.5 * 10 = 100


def test_parabolas_crossing_inside_are_refused_up_front():
    pool = parabolas(3000)
    at = [pool.coefficients @ [1.0, n, n * n] for n in (0.0, 500.0, 1000.0)]
    # the same order at both ends (they show no crossing), the reverse at the middle
    assert (np.argsort(at[0]) == np.argsort(at[2])).all()
    assert (np.argsort(at[1]) == np.argsort(at[0])[::-1]).all()
    assert crossing_lower_bound(pool.coefficients[:50], 0.0, 1000.0) >= 50 * 49 // 2
    with pytest.raises(InvalidArgumentError, match=r"^the cost curves of the 3,000 candidates "
                                                   r"cross at least [0-9,]+ times"):
        PolyDomIndex.build(pool, 0.0, 1000.0)


def test_pruning_beyond_its_limit_is_refused_in_one_line():
    rng = np.random.default_rng(0)
    coef = rng.uniform(0, 1, (400, 3)) * [10.0, 1.0, 0.01]
    pool = CandidateArrays([f"c{i}" for i in range(400)], rng.uniform(0.5, 1, 400), coef)
    with pytest.raises(InvalidArgumentError) as caught:
        PolyDomIndex.build(pool, 0.0, 100.0, max_prune_tests=10)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("pruning the 400 candidates needs more than "
                                        "max_prune_tests=10 curve comparisons")
    table = PolyDomIndex.build(pool, 0.0, 100.0)
    for n, b in [(3.0, 5.0), (50.0, 20.0), (99.0, 100.0)]:
        got, want = table.lookup(n, b), full_scan(list(pool), n, b)
        assert (got and got.key) == (want and want.key)


def test_memory_beyond_its_limit_is_refused_before_pruning():
    with pytest.raises(InvalidArgumentError, match=r"needs more than [0-9,.]+ MiB for its "
                                                   r"working arrays; the limit is "
                                                   r"max_memory=1,000,000 bytes"):
        PolyDomIndex.build(staircase(20_000), 0.0, 1000.0, max_memory=1_000_000)
    with pytest.raises(InvalidArgumentError, match="max_memory must be an integer >= 1"):
        PolyDomIndex.build(staircase(2), 0.0, 1000.0, max_memory=0)


def test_a_publish_beyond_its_limit_writes_nothing(tmp_path):
    from storage import IndexStore

    url = f"sqlite:///{tmp_path / 'limit.db'}"
    table = PolyDomIndex.build(staircase(50), 0.0, 1000.0)
    costs = {"a": "1"}
    with IndexStore(url) as store:
        build = store.begin_build({"alpha": 1.0}, costs)
        with pytest.raises(InvalidArgumentError, match=r"^publishing the index writes [0-9,]+ "
                                                       r"rows .* max_publish_rows=10: pass"):
            store.publish(build, polydom.Index(table, costs), max_publish_rows=10)
        assert store.list_builds()[0].status == "building"
        store.publish(build, polydom.Index(table, costs))
    assert polydom.open_index(url).lookup(1.0, 30.0).key == "s28"
