"""A build's index arrays (``build_arrays``): open_index reads them instead of the rows, gives
the index the rows give, and refuses a blob that was edited, corrupted or moved."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
import storage
from storage import index_arrays
from storage.blobs import sha256_hex
from storage.candidate_fields import sealed_fields
from tests.strategies import candidate_pools, domains, examples

ATOMS = {"a": "1 + n", "b": "2", "c": "0.5*n**2", "d": "3 + 0.1*n"}
#: Keys of every storable kind, and strings that trip text encodings.
ODD_KEYS = [7, -3, 2.5, ("a", "b"), ("x", 1), frozenset({"p", "q"}), True, None,
            'quote"d', "back\\slash", "nul\x00key", "\u00e9t\u00e9", "", "line\nbreak"]
LEARNERS = [None, "lattice", "cegb", "odd\x00learner"]


@st.composite
def stores(draw):
    """Candidates with keys of every kind, feature sets, needs and learners, a domain and an
    index kind: what a random published build holds."""
    pool = draw(candidate_pools(max_size=12))
    lo, hi = draw(domains)
    atoms = list(ATOMS)
    out = []
    odd = draw(st.lists(st.sampled_from(ODD_KEYS), max_size=4, unique_by=repr))
    for i, cand in enumerate(pool):
        key = odd[i] if i < len(odd) else cand.key
        feats = frozenset(draw(st.lists(st.sampled_from([*atoms, "zz"]), max_size=3)))
        needs = None  # default: the features, each with probability 1
        if "zz" in feats or draw(st.booleans()):  # "zz" is no atom: not needed
            needs = {a: draw(st.sampled_from([0.0, 0.25, 1.0 / 3.0, 1.0]))
                     for a in draw(st.lists(st.sampled_from(atoms), max_size=4, unique=True))}
        out.append(polydom.Candidate(key, cand.accuracy, cand.cost, feats, None, needs,
                                     draw(st.sampled_from(LEARNERS))))
    kind = draw(st.sampled_from([polydom.PolyDomIndex, polydom.IndexAll]))
    return out, lo, hi, kind


def publish(url: str, candidates, lo: float, hi: float, kind=polydom.PolyDomIndex,
            params=None) -> int:
    table = kind.build(candidates, lo, hi)
    with storage.IndexStore(url) as st_:
        build_id = st_.begin_build(params or {"alpha": 1.0, "n": len(candidates)}, ATOMS)
        st_.publish(build_id, polydom.Index(table, ATOMS, info={"alpha": 1.0}))
    return build_id


def assert_same_index(a: polydom.Index, b: polydom.Index) -> None:
    """Every part that decides a lookup or is shown to a user, compared exactly."""
    assert type(a.table) is type(b.table)
    assert a.table.domain == b.table.domain
    assert a.table.breakpoints.tobytes() == b.table.breakpoints.tobytes()
    assert a.table.skyline_positions == b.table.skyline_positions
    assert a.table.stats_ == b.table.stats_
    assert {k: v for k, v in a.info.items() if k != "read_from"} == {
        k: v for k, v in b.info.items() if k != "read_from"}
    assert a.cost_model.atoms == b.cost_model.atoms
    for x, y in zip(a.candidates, b.candidates, strict=True):
        assert (type(x.key), x.key) == (type(y.key), y.key)
        assert x.accuracy == y.accuracy
        assert x.cost.coefficients.tobytes() == y.cost.coefficients.tobytes()
        assert x.features == y.features
        assert list(x.needs.items()) == list(y.needs.items())
        assert x.learner == y.learner


def probes(index: polydom.Index) -> tuple[np.ndarray, np.ndarray]:
    """Sizes at and around every breakpoint; budgets at, just under and just over the cost
    of every candidate there (exact ties included)."""
    lo, hi = index.table.domain
    sizes = set()
    for b in index.table.breakpoints.tolist():
        sizes.update({b, math.nextafter(b, math.inf), b + 0.5, 2.0 * b + 1.0})
        if b > lo:
            sizes.add(math.nextafter(b, -math.inf))
    if math.isfinite(hi):
        sizes.add(hi)
    sizes = sorted(s for s in sizes if lo <= s <= hi)
    n, c = [], []
    for s in sizes:
        for cand in index.candidates:
            cost = float(cand.cost(s))
            for budget in (cost, math.nextafter(cost, -math.inf), math.nextafter(cost, math.inf)):
                if 0.0 <= budget < math.inf:
                    n.append(s)
                    c.append(budget)
        n.append(s)
        c.append(0.0)
    return np.array(n), np.array(c)


@settings(max_examples=examples(40))
@given(stores())
def test_the_arrays_give_the_index_the_rows_give_for_every_size_and_budget(store):
    candidates, lo, hi, kind = store
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/s.db"
        publish(url, candidates, lo, hi, kind)
        with storage.IndexStore(url, read_only=True) as st_:
            fast = st_.load_index()
            rows = st_.load_index(rebuild=True)  # the rows (sealed: no sweep)
        # the dominated candidates are read from the store's side record on first use
        assert_same_index(fast, rows)
    assert fast.info["read_from"] == "arrays" and rows.info["read_from"] == "rows"
    assert "rebuilt" not in rows.info
    sizes, budgets = probes(rows)
    np.testing.assert_array_equal(fast.lookup_many(sizes, budgets),
                                  rows.lookup_many(sizes, budgets))
    for s, b in zip(sizes.tolist()[::7], budgets.tolist()[::7], strict=True):
        assert fast.table.lookup_position(s, b) == rows.table.lookup_position(s, b)


# ---------------------------------------------------------------- a store to tamper with
RANDOM = [polydom.Candidate(f"c{i}", 0.5 + 0.04 * i, [10.0 - i, 0.1 * i, 0.001 * (i % 3)],
                            {"a", "b"} if i % 2 else {"c"}) for i in range(10)]


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "s.db"
    publish(f"sqlite:///{path}", RANDOM, 0.0, 100.0)
    return path


def _sql(path: Path, sql: str, *args) -> None:
    """Run ``sql`` and close the connection (its WAL checkpointed into the file now, not when
    the collector happens to close it)."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql, args)


def _blob(path: Path, build_id: int = 1) -> bytes:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT blob FROM build_arrays WHERE build_id = ?",
                            (build_id,)).fetchone()[0]


def _open_unchanged(path: Path, **kwargs) -> polydom.Index:
    """open_index, checking that the file was not written."""
    before = path.read_bytes()
    try:
        return polydom.open_index(path, **kwargs)
    finally:
        assert path.read_bytes() == before


def test_a_published_build_opens_from_its_arrays(db):
    index = _open_unchanged(db)
    assert index.info["read_from"] == "arrays" and index.info["sealed"] is True
    assert index.lookup(50.0, 12.0) == polydom.open_index(db, rebuild=True).lookup(50.0, 12.0)


def test_an_edited_byte_of_the_arrays_is_refused_and_nothing_is_written(db):
    blob = bytearray(_blob(db))
    blob[len(blob) // 2] ^= 0xFF
    _sql(db, "UPDATE build_arrays SET blob = ?", bytes(blob))
    with pytest.raises(storage.IndexIntegrityError, match="fail their sha256 check"):
        _open_unchanged(db)


def test_garbage_arrays_with_a_recomputed_digest_are_refused(db):
    garbage = b"PK\x03\x04 not an archive"
    _sql(db, "UPDATE build_arrays SET blob = ?, digest = ?", garbage, sha256_hex(garbage))
    with pytest.raises(storage.IndexIntegrityError, match="do not decode"):
        _open_unchanged(db)


def test_arrays_whose_columns_disagree_are_refused(db):
    index = polydom.open_index(db)
    table = index.table
    fields = sealed_fields(storage.SCHEMA_VERSION)
    good = index_arrays.decode(_blob(db), 1, list(ATOMS), fields)
    rows = [(i, *(None if f.nullable else {"float": 0.5, "key": '"x"', "text": "[]"}[f.array]
                  for f in fields)) for i in range(10)]
    bad = index_arrays.encode(
        1, good.seal, "PolyDomIndex", table.domain, [c.key for c in table.candidates],
        fields, rows, [c.cost.coefficients for c in table.candidates], [],
        table.breakpoints.tolist(),
        [[99] for _ in table.skyline_positions], good.header)  # an entry of no candidate
    _sql(db, "UPDATE build_arrays SET blob = ?, digest = ?", bad, sha256_hex(bad))
    with pytest.raises(storage.IndexIntegrityError, match="sky_candidates"):
        _open_unchanged(db)


def test_arrays_moved_to_another_build_are_refused(tmp_path):
    path = tmp_path / "s.db"
    publish(f"sqlite:///{path}", RANDOM, 0.0, 100.0, params={"alpha": 1.0})
    publish(f"sqlite:///{path}", RANDOM[:5], 0.0, 100.0, params={"alpha": 2.0})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE build_arrays SET blob = (SELECT blob FROM build_arrays b "
                     "WHERE b.build_id = 1), digest = (SELECT digest FROM build_arrays b "
                     "WHERE b.build_id = 1) WHERE build_id = 2")
    with pytest.raises(storage.IndexIntegrityError, match="written for build 1"):
        _open_unchanged(path)


def test_a_resealed_build_is_refused_by_its_arrays(db):
    _sql(db, "UPDATE build_seals SET index_digest = ?", "0" * 64)
    with pytest.raises(storage.IndexIntegrityError, match="do not match the build's seal"):
        _open_unchanged(db)


def test_a_build_without_arrays_opens_from_its_verified_rows(db):
    expected = polydom.open_index(db)
    _sql(db, "DELETE FROM build_arrays")
    index = _open_unchanged(db)
    assert index.info["read_from"] == "rows"
    assert_same_index(index, expected)
    _sql(db, "UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0")
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        _open_unchanged(db)


@pytest.mark.parametrize("sql, group", [
    ("UPDATE candidates SET accuracy = 0.999 WHERE candidate_id = 0", "candidates"),
    ("UPDATE candidates SET key_json = '\"x\"' WHERE candidate_id = 3", "candidates"),
    ("UPDATE candidates SET features_json = '[]' WHERE candidate_id = 1", "candidates"),
    ("UPDATE candidates SET learner = 'cegb' WHERE candidate_id = 2", "candidates"),
    ("UPDATE candidates SET accuracy = 'high' WHERE candidate_id = 4", "candidates"),
    ("UPDATE candidate_costs SET coefficient = 0 WHERE candidate_id = 1", "cost coefficients"),
    ("UPDATE candidate_costs SET coefficient = 'x' WHERE candidate_id = 1", "cost coefficients"),
    ("INSERT INTO candidate_costs VALUES (1, 0, 7, 0.0)", "cost coefficients"),
    ("UPDATE candidate_needs SET probability = 0.5 WHERE candidate_id = 0", "needs"),
    ("UPDATE ranges SET n_hi = 99 WHERE range_id = 0", "ranges"),
    ("DELETE FROM skyline_entries WHERE rank = 0 AND range_id = 0", "skyline entries"),
])
def test_rows_edited_after_publishing_are_refused_next_to_the_arrays(db, sql, group):
    _sql(db, sql)
    with pytest.raises(storage.IndexIntegrityError, match=f"its {group} rows do not match"):
        _open_unchanged(db)
    if "'" not in sql:  # numbers edited: rebuild=True sweeps the rows as they now are
        assert "rebuilt" in polydom.open_index(db, rebuild=True).info
    _sql(db, "DELETE FROM build_arrays")  # the row path refuses them too
    with pytest.raises(storage.IndexIntegrityError, match="edited after publishing"):
        _open_unchanged(db)


def test_a_store_key_signs_the_arrays(tmp_path):
    path = tmp_path / "k.db"
    table = polydom.PolyDomIndex.build(RANDOM, 0.0, 100.0)
    with storage.IndexStore(path, key="s3cret") as st_:
        st_.publish(st_.begin_build({"alpha": 1.0}, ATOMS), polydom.Index(table, ATOMS))
    assert polydom.open_index(path, key="s3cret").info["read_from"] == "arrays"
    blob = _blob(path)
    _sql(path, "UPDATE build_arrays SET digest = ?", sha256_hex(blob))
    with pytest.raises(storage.IndexIntegrityError, match="HMAC"):
        _open_unchanged(path, key="s3cret")
    with pytest.raises(storage.StoreKeyError):
        _open_unchanged(path)


def test_refresh_switches_to_a_new_build_read_from_its_arrays(tmp_path):
    path = tmp_path / "s.db"
    publish(f"sqlite:///{path}", RANDOM, 0.0, 100.0, params={"alpha": 1.0})
    index = polydom.open_index(path)
    publish(f"sqlite:///{path}", RANDOM[:4], 0.0, 100.0, params={"alpha": 2.0})
    assert index.refresh() is True
    assert index.info["build_id"] == 2 and index.info["read_from"] == "arrays"
    assert [c.key for c in index.candidates] == [c.key for c in RANDOM[:4]]


def test_a_store_made_before_the_arrays_gets_them_with_its_next_build(tmp_path):
    path = tmp_path / "old.db"
    publish(f"sqlite:///{path}", RANDOM, 0.0, 100.0, params={"alpha": 1.0})
    _sql(path, "DROP TABLE build_arrays")  # as a store of schema 2 before the table existed
    assert _open_unchanged(path).info["read_from"] == "rows"
    publish(f"sqlite:///{path}", RANDOM[:5], 0.0, 100.0, params={"alpha": 2.0})
    assert polydom.open_index(path).info["read_from"] == "arrays"
    assert polydom.open_index(path, build=1).info["read_from"] == "rows"


def test_arrays_and_rows_agree_on_every_backend_and_an_edit_is_refused(store_url):
    odd = [polydom.Candidate(key, 0.3 + 0.05 * i, [1.0 + i, 0.5], {"a"}, None,
                             {"a": 1.0, "c": 0.25}, "cegb" if i % 2 else None)
           for i, key in enumerate([("a", 1), frozenset({"p"}), "back\\slash", 'q"', 9])]
    publish(store_url, RANDOM + odd, 0.0, math.inf)
    fast = polydom.open_index(store_url)
    assert fast.info["read_from"] == "arrays"
    assert_same_index(fast, polydom.open_index(store_url, rebuild=True))
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE candidate_needs SET probability = 0.5 "
                             "WHERE candidate_id = 12"))
    engine.dispose()
    with pytest.raises(storage.IndexIntegrityError, match="its needs rows do not match"):
        polydom.open_index(store_url)
