"""One name per candidate on every door: the formatter (:func:`polydom.curves.names.
candidate_name`), the SQL views, Datasette's canned queries, the CLI (text rows, ``--json``)
and HTTP give the same text, in the order the build's features were given; stores written
before the formatter (schema versions 1 and 2) name their candidates the same way."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

import polydom
import storage
from polydom.app.cli import main
from polydom.curves.names import candidate_name

DATA = Path(__file__).parent / "data"
ATOMS = {"marriage": "1 + 0.01*n", "demographics": "2", "work": "0.5 + 0.02*n", "x13": "1",
         "x2": "1"}
#: Lattice keys in the user's order (not sorted), a text key and the empty model.
KEYS = [(), ("work",), ("marriage", "demographics", "work"), ("x13", "x2"), "cegb[0.5]"]


def _candidates() -> list[polydom.Candidate]:
    out = []
    for i, key in enumerate(KEYS):
        feats = frozenset(key) if isinstance(key, tuple) else frozenset({"work"})
        out.append(polydom.Candidate(key, 0.5 + 0.1 * i, [1.0 + 2.0 * i, 0.0], feats,
                                     learner="lattice"))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('names') / 'index.db'}"
    table = polydom.PolyDomIndex.build(_candidates(), 0.0, 100.0)
    with storage.IndexStore(url) as st:
        build_id = st.begin_build({"alpha": 1.0}, ATOMS)
        st.publish(build_id, polydom.Index(table, ATOMS, info={"alpha": 1.0}))
    return url


def _sql(url: str, query: str, params: dict | None = None) -> list[tuple]:
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
        return conn.execute(query, params or {}).fetchall()


def test_the_formatter_keeps_the_key_order():
    assert candidate_name(("marriage", "demographics", "work")) == "marriage+demographics+work"
    assert candidate_name(("x13", "x2")) == "x13+x2"
    assert candidate_name(()) == "{}"


def test_sql_views_and_datasette_queries_give_the_formatters_name(store):
    index = polydom.open_index(store)
    names = {candidate_name(c.key) for c in index.candidates}
    assert "marriage+demographics+work" in names and "x13+x2" in names
    rows = _sql(store, "SELECT candidate_id, candidate FROM skyline")
    assert rows and all(name == candidate_name(index.candidates[cid].key) for cid, name in rows)
    assert {name for _, name in _sql(store, "SELECT candidate_id, key FROM candidates")} == names
    from polydom.app.commands.browse import CANNED_QUERIES

    for query, column in (("skyline_at_size", 5), ("model_for_size_and_budget", 3)):
        sql = CANNED_QUERIES[query]["sql"]
        (got,) = {r[column] for r in _sql(store, sql, {"n": 50.0, "budget": 1000.0})
                  if query != "skyline_at_size" or r[4] == 4}
        assert got == "cegb[0.5]"
    shown = {r[1] for r in _sql(store, CANNED_QUERIES["candidates_by_learner"]["sql"],
                                 {"learner": ""})}
    assert shown == names


def test_cli_and_http_give_the_formatters_name(store, capsys):
    index = polydom.open_index(store)
    want = [candidate_name(index.table.candidates[p].key)
            for p in index.table.skyline_positions[0]]
    assert main(["inspect", store, "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["skyline"]
    assert [e["candidate"] for e in entries] == want
    assert main(["inspect", store]) == 0
    assert "marriage+demographics+work" in capsys.readouterr().out
    budget = index.table.candidates[index.table.skyline_positions[0][2]].cost(50.0)
    assert main(["lookup", store, "--size", "50", "--budget", repr(budget), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["model"]["name"] == want[2] == candidate_name(index.lookup(50.0, budget).key)

    pytest.importorskip("starlette", reason="the serve extra (starlette) is not installed")
    httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
    from polydom.app.service import make_app

    async def ask() -> list:
        transport = httpx.ASGITransport(app=make_app(index, refresh_seconds=None))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            params = {"size": "50", "budget": repr(budget)}
            return [await client.get(p, params=params) for p in ("/lookup", "/explain")]

    looked, explained = asyncio.run(ask())
    assert looked.json()["model"]["name"] == want[2]
    assert [e["key"] for e in explained.json()["skyline"]] == want


def _view_names(name: str, folder: Path) -> tuple[polydom.Index, list[tuple]]:
    """The index and the ``skyline_all`` names of a copy of the committed store ``name``
    (a store in WAL mode gets -wal/-shm files beside it when opened: never in the tree)."""
    store = folder / name
    shutil.copyfile(DATA / name, store)
    index = polydom.open_index(f"sqlite:///{store}?mode=ro")
    rows = _sql(f"sqlite:///{store}",
                "SELECT candidate_id, candidate FROM skyline_all WHERE build_id = "
                f"{int(index.info['build_id'])}")
    assert rows
    return index, rows


def test_a_version_2_stores_views_give_the_formatters_name(tmp_path):
    index, rows = _view_names("schema_v2.db", tmp_path)
    for cid, shown in rows:
        assert shown == candidate_name(index.candidates[cid].key)


def test_a_version_1_stores_views_keep_the_keys_repr(tmp_path):
    """Version 1 wrote a lattice key's repr into ``candidates.key`` (its views show
    ``('a', 'b')``; docs/storage.md says so); every other door names it ``a+b``."""
    index, rows = _view_names("schema_v1.db", tmp_path)
    for cid, shown in rows:
        assert shown == repr(index.candidates[cid].key)
