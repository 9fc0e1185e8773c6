"""Standard errors and fold scores in a store (schema version 3): kept, sealed, resumed.

Candidates and expansions keep ``accuracy_se`` and ``fold_scores``; a reopened index answers
``rule="one_se"`` exactly as the index that was stored; a resumed build keeps the fold
scores of the expansions it reuses without training them again; an edit of a stored
standard error or fold score is refused by the seals.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

import lattice.expansion
import learners
import polydom
import storage
from polydom.app.cli import main
from polydom.curves.names import candidate_name
from tests.strategies import domains
from tests.test_polydom.test_index_properties import query_budgets, query_sizes
from tests.test_polydom.test_index_rules import assert_rule_answer, pools_with_errors

COSTS = {"a": "1", "b": "n", "c": "2 + 0.5*n"}


def small_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = (X[:, 0] + 0.6 * X[:, 1] - 0.3 * X[:, 2] + rng.normal(scale=0.8, size=90) > 0)
    return X, y.astype(int)


def small_learner(cls: type = learners.SklearnLearner,
                  C: float = 1.0) -> learners.SklearnLearner:
    X, y = small_data()
    return cls(LogisticRegression(C=C, max_iter=500), X, y, features=list(COSTS),
               cv=learners.EvaluationProtocol(folds=3, seed=0))


def _extra() -> polydom.Candidate:
    return polydom.Candidate("own", 0.61, "0.5 + 0.01*n", features={"a"}, needs={"a": 1.0},
                             learner="tree", accuracy_se=0.0375, fold_scores=(0.6, 0.575, 0.66))


def _by_key(index: polydom.Index) -> dict:
    return {c.key: (c.accuracy, c.accuracy_se, c.fold_scores) for c in index.candidates}


def _key_of(index: polydom.Index, entry: dict) -> object:
    """The key of the candidate an inspect entry names."""
    return next(c.key for c in index.candidates if candidate_name(c.key) == entry["candidate"])


def test_standard_errors_and_fold_scores_round_trip(store_url, capsys):
    built = polydom.build_index(COSTS, small_learner(), alpha=1.0, n_min=0.0, n_max=100.0,
                                store=store_url, extra_candidates=[_extra()])
    expected = _by_key(built)
    assert all(len(folds) == 3 for _, _, folds in expected.values())
    assert sum(se > 0 for _, se, _ in expected.values()) >= 3
    from_arrays = polydom.open_index(store_url)
    from_rows = polydom.open_index(store_url, rebuild=True)
    assert (from_arrays.info["read_from"], from_rows.info["read_from"]) == ("arrays", "rows")
    assert _by_key(from_arrays) == expected
    assert _by_key(from_rows) == expected
    with storage.IndexStore(store_url, read_only=True) as st_:
        rows = st_.skyline_rows()
    shown = {candidate_name(c.key): c for c in built.candidates}
    assert rows
    for row in rows:
        cand = shown[row["candidate"]]
        assert row["accuracy_se"] == cand.accuracy_se
        assert tuple(json.loads(row["fold_scores"])) == cand.fold_scores
    capsys.readouterr()
    assert main(["inspect", store_url, "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["skyline"]
    assert entries and all(e["accuracy_se"] == expected[_key_of(built, e)][1] for e in entries)
    assert any(e["accuracy_se"] > 0 for e in entries)


def test_every_lookup_rule_of_a_reopened_build_answers_as_the_stored_index(store_url):
    built = polydom.build_index(COSTS, small_learner(), alpha=1.0, n_min=0.0, n_max=100.0,
                                store=store_url, extra_candidates=[_extra()])
    reopened = polydom.open_index(store_url)
    sizes = np.repeat(np.linspace(0.0, 100.0, 41), 41)
    budgets = np.tile(np.linspace(0.0, 60.0, 41), 41)
    for rule in ("best", "one_se"):
        assert (reopened.lookup_many(sizes, budgets, rule)
                == built.lookup_many(sizes, budgets, rule)).all()
    best = built.lookup_many(sizes, budgets)
    assert (built.lookup_many(sizes, budgets, "one_se") != best)[best >= 0].any(), (
        "one_se never differs from best here: the test would prove nothing")


@st.composite
def pools_with_folds(draw):
    """Pools with standard errors and fold scores (0 to 5 splits)."""
    pool = draw(pools_with_errors())
    scores = st.lists(st.floats(0.0, 1.0), max_size=5).map(tuple)
    return [dataclasses.replace(c, fold_scores=draw(scores)) for c in pool]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pools_with_folds(), domains)
def test_one_se_on_a_reopened_index_equals_the_stored_index_and_a_full_scan(
        tmp_path, cands, domain):
    lo, hi = domain
    url = f"sqlite:///{tmp_path / 'rules.db'}"
    memory = polydom.Index(polydom.PolyDomIndex.build(cands, lo, hi), {"x": "1"})
    with storage.IndexStore(url) as st_:
        build_id = st_.begin_build({"example": uuid.uuid4().hex}, {"x": "1"})
        st_.publish(build_id, memory)
    reopened = polydom.open_index(url, build=build_id)
    from_rows = polydom.open_index(url, build=build_id, rebuild=True)  # the rows read path
    assert _by_key(reopened) == _by_key(memory) == _by_key(from_rows)
    pairs = [(s, b) for s in query_sizes(memory.table, lo, hi)
             for b in query_budgets(cands, s)]
    for size, budget in pairs:
        want = memory.lookup(size, budget, "one_se")
        for index in (reopened, from_rows):
            got = index.lookup(size, budget, "one_se")
            assert (got and got.key) == (want and want.key)
        assert_rule_answer(reopened.table, cands, size, budget)
    s, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    many = memory.lookup_many(s, b, "one_se")
    assert (reopened.lookup_many(s, b, "one_se") == many).all()
    assert (from_rows.lookup_many(s, b, "one_se") == many).all()


class _CrashingLearner(learners.SklearnLearner):
    """A real SklearnLearner whose process dies (an exception) before its 4th training."""

    def expand(self, features: frozenset) -> lattice.Expansion:
        if getattr(self, "calls_", 0) >= 3:
            raise RuntimeError("the training machine went away")
        return super().expand(features)


def test_a_resumed_build_keeps_the_fold_scores_of_the_expansions_it_reuses(store_url):
    with pytest.raises(RuntimeError, match="went away"):
        polydom.build_index(COSTS, small_learner(_CrashingLearner), alpha=1.0, n_min=0.0,
                            n_max=100.0, store=store_url)
    [failed] = polydom.list_builds(store_url)
    assert failed.status == "failed" and failed.n_expansions == 3
    with storage.IndexStore(store_url, read_only=True) as st_:
        cache = st_.expansion_cache(failed.build_id)
        stored = {fs: cache[fs] for fs in cache}
    assert len(stored) == 3 and all(len(e.fold_scores) == 3 for e in stored.values())

    again = small_learner()
    resumed = polydom.build_index(COSTS, again, alpha=1.0, n_min=0.0, n_max=100.0,
                                  store=store_url)
    [build] = polydom.list_builds(store_url)
    assert build.build_id == failed.build_id and build.status == "complete"
    assert resumed.info["cache_hits"] == 3
    assert again.calls_ == resumed.info["expansions"] - 3  # stored sets: not trained again
    fresh = polydom.build_index(COSTS, small_learner(), alpha=1.0, n_min=0.0, n_max=100.0)
    assert _by_key(resumed) == _by_key(fresh)
    assert _by_key(polydom.open_index(store_url)) == _by_key(fresh)
    lattice = {c.features: c for c in resumed.candidates}
    kept = [fs for fs in stored if fs in lattice]
    assert kept
    for fs in kept:
        assert (lattice[fs].accuracy_se, lattice[fs].fold_scores) == (
            stored[fs].accuracy_se, stored[fs].fold_scores)


def _sql(path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for s in statements:
            conn.execute(s)


@pytest.mark.parametrize("edit", ["accuracy_se = accuracy_se + 0.25",
                                  "fold_scores = '[1.0, 1.0, 1.0]'"])
def test_an_edited_expansion_standard_error_or_fold_score_is_refused(tmp_path, edit):
    path = tmp_path / "x.db"
    polydom.build_index(COSTS, small_learner(), alpha=1.0, n_min=0.0, n_max=100.0,
                        store=f"sqlite:///{path}")
    _sql(path, f"UPDATE expansions SET {edit}")
    with pytest.raises(storage.IndexIntegrityError, match="expansions"):
        polydom.open_index(path)
    [build] = polydom.list_builds(path)
    with storage.IndexStore(path, read_only=True) as st_:
        cache = st_.expansion_cache(build.build_id)
        with pytest.raises(storage.IndexIntegrityError, match="edited after it was stored"):
            cache[next(iter(cache))]
