"""One index over a lattice of bundles and CEGB over single-column atoms, stored and reopened.

Breast cancer with per-column costs: the 10 "mean" columns cost 1 each, the 10 "error"
columns 5, the 10 "worst" columns 20.  The lattice explores the three blocks (bundles of
their columns' atoms); CEGB picks columns row by row.  Both kinds of candidates compare on
one scale: their cost curves come from the atoms they need.
"""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import learners
import polydom
import storage

pytest.importorskip("lightgbm")

BLOCKS = {"mean": range(0, 10), "error": range(10, 20), "worst": range(20, 30)}
PRICE = {"mean": 1.0, "error": 5.0, "worst": 20.0}


def block_model() -> polydom.CostModel:
    atoms, columns, bundles = {}, {}, {}
    for block, cols in BLOCKS.items():
        bundles[block] = [f"x{j}" for j in cols]
        for j in cols:
            atoms[f"x{j}"] = [PRICE[block]]
            columns[f"x{j}"] = [j]
    return polydom.CostModel(atoms, bundles=bundles, columns=columns)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    model = block_model()
    lattice_learner = learners.SklearnLearner(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)), X_tr, y_tr,
        features=model, cv=(X_va, y_va))
    cegb = learners.sweep(learners.CEGBClassifier(n_estimators=15, num_leaves=8, random_state=0),
                          [0.0005, 0.005], X_tr, y_tr, model, evaluation=(X_va, y_va),
                          learner="cegb")
    url = f"sqlite:///{tmp_path_factory.mktemp('mixed') / 'mixed.db'}"
    index = polydom.build_index(model, lattice_learner, extra_candidates=cegb, store=url)
    return X_va, y_va, model, cegb, url, index


def test_cegb_candidates_need_single_column_atoms_with_their_probabilities(mixed):
    _, _, model, cegb, _, _ = mixed
    for cand in cegb:
        assert cand.learner == "cegb" and cand.needs
        assert set(cand.needs) <= set(model.atoms)
        assert all(0.0 <= p <= 1.0 for p in cand.needs.values())
        assert cand.cost == model.expected_cost(cand.needs)
        assert cand.payload.columns == model.columns_of(cand.needs)


def test_lattice_and_cegb_candidates_share_one_index(mixed):
    *_, index = mixed
    learners_in = {c.learner for c in index.candidates}
    assert learners_in == {"sklearn:StandardScaler+LogisticRegression", "cegb"}
    model = block_model()
    for cand in index.candidates:
        if cand.learner != "cegb":
            assert cand.cost(1.0) == sum(10 * PRICE[b] for b in cand.features)
            assert cand.needs == dict.fromkeys(sorted(model.atoms_of(cand.features)), 1.0)


def test_predict_cuts_each_model_its_columns_from_its_needs(mixed):
    X_va, _, model, _, _, index = mixed
    for budget in (10.0, 31.0, 60.0, 300.0):
        hit = index.lookup(1.0, budget)
        cols = model.columns_of(hit.candidate.needs)
        np.testing.assert_array_equal(index.predict(X_va, 1.0, budget),
                                      hit.model.predict(X_va[:, cols]))


def test_reopened_mixed_index_answers_the_same_with_needs_and_learners(mixed):
    X_va, _, _, _, url, index = mixed
    opened = polydom.open_index(url)
    assert opened.cost_model == index.cost_model
    by_key = {c.key: c for c in opened.candidates}
    for cand in index.candidates:
        assert by_key[cand.key].needs == pytest.approx(cand.needs)
        assert by_key[cand.key].learner == cand.learner
    for budget in (0.5, 5.0, 12.0, 31.0, 60.0, 200.0, 260.0):
        a, b = index.lookup(1.0, budget), opened.lookup(1.0, budget)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.key == b.key
            np.testing.assert_array_equal(index.predict(X_va, 1.0, budget),
                                          opened.predict(X_va, 1.0, budget))


def test_sql_skyline_view_answers_as_open_index(mixed):
    *_, url, _ = mixed
    opened = polydom.open_index(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT range_id, rank, candidate_id, learner, accuracy, cost_at_n_lo "
            "FROM skyline ORDER BY range_id, rank")).all()
    engine.dispose()
    expected = [
        (r, k, pos, opened.candidates[pos].learner, opened.candidates[pos].accuracy)
        for r, sky in enumerate(opened.table.skyline_positions) for k, pos in enumerate(sky)
    ]
    assert [tuple(row[:5]) for row in rows] == expected
    with storage.IndexStore(url, create=False) as st:
        for budget in (5.0, 12.0, 31.0, 60.0, 200.0, 260.0):
            assert st.sql_lookup(1.0, budget) == opened.table.lookup_position(1.0, budget)


def test_a_candidate_needing_an_atom_without_a_cost_curve_is_refused_and_nothing_stored(
        mixed, tmp_path):
    *_, index = mixed
    learner = learners.SyntheticLearner(lambda fs: 0.5 + 0.1 * len(fs))
    bad = polydom.Candidate("b", 0.9, "1", needs={"x99": 1.0})
    url = f"sqlite:///{tmp_path / 'bad.db'}"
    with pytest.raises(ValueError, match="candidate 'b' needs atomic feature 'x99'"):
        polydom.build_index({"a": "1"}, learner, extra_candidates=[bad], store=url)
    assert not (tmp_path / "bad.db").exists()
