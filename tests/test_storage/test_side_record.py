"""A published build holds the candidates a lookup can return; the others are its side
record (build_pools), sealed with the build, read only when every candidate is asked for."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import polydom
from polydom.errors import IndexIntegrityError
from storage import IndexStore, pool_record

COSTS = {"a": "1 + n", "b": "2 + 0.5*n", "c": "0.1*n**2"}


def pool(k: int = 300, seed: int = 0) -> polydom.CandidateArrays:
    rng = np.random.default_rng(seed)
    feats = rng.random((k, 3)) < 0.6
    atoms = np.array([[1.0, 1.0, 0.0], [2.0, 0.5, 0.0], [0.0, 0.0, 0.1]])
    acc = np.round(0.5 + 0.15 * feats.sum(axis=1) + rng.uniform(-0.1, 0.1, k), 3).clip(0, 1)
    extra = rng.uniform(0, 3, (k, 1)) * [1.0, 0.0, 0.0]
    return polydom.CandidateArrays([f"k{i}" for i in range(k)], acc,
                                   feats.astype(float) @ atoms + extra, feats, list(COSTS))


def publish(url: str, table) -> int:
    with IndexStore(url) as store:
        build = store.begin_build({"alpha": 1.0}, COSTS)
        store.publish(build, polydom.Index(table, COSTS))
    return build


@pytest.fixture
def stored(tmp_path):
    url = f"sqlite:///{tmp_path / 'side.db'}"
    table = polydom.PolyDomIndex.build(pool(), 0.0, 20.0)
    publish(url, table)
    return url, table, tmp_path / "side.db"


def test_rows_hold_the_skyline_candidates_and_the_side_record_the_rest(stored):
    url, table, path = stored
    conn = sqlite3.connect(path)
    ids = [r[0] for r in conn.execute("SELECT candidate_id FROM candidates ORDER BY 1")]
    (count,) = conn.execute("SELECT candidates FROM build_pools").fetchone()
    assert ids == table.answerable and count == 300 - len(ids) > 0
    shown = {r[0] for r in conn.execute("SELECT candidate FROM skyline")}
    assert shown == {table.candidates[i].key for i in ids}


def test_open_never_reads_the_side_record_and_answers_as_built(stored, monkeypatch):
    url, table, _ = stored

    def never(*args, **kwargs):
        raise AssertionError("the side record was read")

    monkeypatch.setattr(pool_record, "decode", never)
    index = polydom.open_index(url)
    rng = np.random.default_rng(1)
    sizes, budgets = rng.uniform(0, 20, 3000), rng.uniform(0, 60, 3000)
    assert np.array_equal(index.lookup_many(sizes, budgets), table.lookup_many(sizes, budgets))
    assert [index.lookup(float(n), float(b)) and index.lookup(float(n), float(b)).key
            for n, b in zip(sizes[:200], budgets[:200], strict=True)] == [
        table.lookup(float(n), float(b)) and table.lookup(float(n), float(b)).key
        for n, b in zip(sizes[:200], budgets[:200], strict=True)]


def test_every_candidate_comes_back_in_its_place(stored):
    url, table, _ = stored
    index = polydom.open_index(url)
    assert index.candidates == table.candidates
    assert [c.needs for c in index.candidates] == [c.needs for c in table.candidates]


def test_a_recalibration_sweeps_the_dominated_candidates_too(stored):
    url, table, _ = stored
    index = polydom.open_index(url)
    slower = index.with_atom_costs({"a": "10 + 10*n"})
    expected = polydom.PolyDomIndex.build(
        [c for c in slower.candidates], 0.0, 20.0)
    assert slower.table.skyline_positions == expected.skyline_positions


def test_a_dominated_candidate_comes_up_when_an_atom_slows_down(tmp_path):
    url = f"sqlite:///{tmp_path / 'up.db'}"
    costs = {"a": "1 + n", "b": "2 + n"}
    cands = [polydom.Candidate("x", 0.8, "1 + n", {"a"}),
             polydom.Candidate("y", 0.7, "2 + n", {"b"})]
    with IndexStore(url) as store:
        build = store.begin_build({"alpha": 1.0}, costs)
        store.publish(build, polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 20.0), costs))
    index = polydom.open_index(url)
    assert index.table.answerable == [0]
    slower = index.with_atom_costs({"a": "10 + 10*n"})
    assert slower.lookup(5.0, 8.0).key == "y"


def test_an_edited_side_record_is_refused_when_read(stored):
    url, _, path = stored
    conn = sqlite3.connect(path)
    blob = bytearray(conn.execute("SELECT blob FROM build_pools").fetchone()[0])
    blob[len(blob) // 2] ^= 1
    conn.execute("UPDATE build_pools SET blob = ?", (bytes(blob),))
    conn.commit()
    index = polydom.open_index(url)  # the blob is not read to answer
    assert index.lookup(5.0, 50.0) is not None
    with pytest.raises(IndexIntegrityError, match="side record.*fails its sealed digest"):
        _ = index.candidates


def test_a_side_record_moved_or_deleted_is_refused_at_open(stored):
    url, _, path = stored
    conn = sqlite3.connect(path)
    conn.execute("UPDATE build_pools SET candidates = candidates - 1")
    conn.commit()
    with pytest.raises(IndexIntegrityError):
        polydom.open_index(url)
    conn.execute("DELETE FROM build_pools")
    conn.commit()
    with pytest.raises(IndexIntegrityError):
        polydom.open_index(url)


def test_a_pool_of_candidate_objects_with_models_keeps_them(tmp_path):
    from sklearn.dummy import DummyClassifier

    url = f"sqlite:///{tmp_path / 'models.db'}"
    model = DummyClassifier().fit([[0.0], [1.0]], [0, 1])
    cands = [polydom.Candidate("cheap", 0.6, "1 + n", {"a"}, model),
             polydom.Candidate("worse", 0.5, "2 + n", {"a"}, model, learner="cegb"),
             polydom.Candidate("good", 0.9, "2 + 0.5*n", {"b"})]
    table = polydom.PolyDomIndex.build(cands, 0.0, 20.0)
    assert table.answerable == [0, 2]
    publish(url, table)
    index = polydom.open_index(url)
    worse = index.candidates[1]
    assert (worse.key, worse.learner, worse.cost) == ("worse", "cegb", cands[1].cost)
    assert worse.payload is not None
    assert worse.payload.predict([[0.0]]).tolist() == model.predict([[0.0]]).tolist()
