"""`polydom browse` budgets in bytes sent (issue 35 item 2): a value's cost is its encoding
(an emoji 12 bytes of JSON, a control character 6, ``&`` 5 bytes of HTML), per statement and
per response; and any store file name works (``_internal.db``, spaces, dots).

One browse server (module scope) serves a store named ``_internal.db``, which Datasette
renames ``_internal_2`` (the guard used to be keyed by the file's stem, and every page then
answered 500).  Every query the tests send is checked against the stated budget, and the
server's peak RSS is read from ``/proc`` before and after.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="the serve extra (datasette) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
pytest.importorskip("matplotlib", reason="matplotlib is not installed")

from polydom.app.browse_guard import (  # noqa: E402
    MAX_RESPONSE_BYTES,
    MAX_RESULT_BYTES,
    ResponseBudget,
    encoded_bytes,
)
from polydom.app.commands.browse import add_browse  # noqa: E402
from tests import serve_support as V  # noqa: E402
from tests.test_app.test_hardening_browse import _peak_rss_mb, _publish, _server_pid  # noqa: E402

pytestmark = pytest.mark.timeout(240)

#: Requests of a few dozen bytes whose answers, encoded, are far over the budgets (the
#: first made 720 MB of JSON and a 3.9 GB process on the old code, which counted characters).
WORST = [
    "select replace(printf('%.*c', 4000000, 'x'), 'x', '\U0001F600') as t "
    "from candidates limit 15",
    "select printf('%.*c', 15000000, char(1)) as a, printf('%.*c', 15000000, char(2)) as b, "
    "printf('%.*c', 15000000, char(3)) as c, printf('%.*c', 15000000, char(4)) as d",
    "select replace(printf('%.*c', 8000000, 'x'), 'x', '&') as t from candidates limit 3",
    "select replace(printf('%.*c', 4000000, 'x'), 'x', '\"') as t from candidates limit 3",
]


@pytest.fixture(scope="module")
def internal(tmp_path_factory):
    store = _publish(tmp_path_factory.mktemp("named") / "_internal.db", "ms")
    with V.live_server(str(store), verb="browse") as address:
        with httpx.Client(timeout=120) as client:
            yield address, client, store


def _query(client, address: str, sql: str, shape: str = "array"):
    return client.get(f"{address}.json", params={"sql": sql, "_shape": shape})


def test_a_store_named_internal_is_served_and_guarded(internal):
    address, client, _ = internal
    assert address.endswith("/_internal_2")
    got = _query(client, address, "select count(*) as n from builds")
    assert got.status_code == 200 and got.json() == [{"n": 1}]
    assert client.get(address).status_code == 200
    denied = _query(client, address, "select fts3_tokenizer('simple') as p")
    assert denied.status_code == 400 and "not authorized" in denied.text


def test_worst_case_encodings_stay_within_the_budgets(internal):
    address, client, store = internal
    pid = _server_pid(store)
    before = _peak_rss_mb(pid)
    peaks = []
    for sql in WORST:
        for shape in ("array", "objects"):
            got = _query(client, address, sql, shape)
            assert got.status_code == 400, (sql[:60], got.status_code, len(got.content))
            assert len(got.content) <= MAX_RESPONSE_BYTES
        page = client.get(address, params={"sql": sql})  # the HTML page of the same
        assert page.status_code == 400 and len(page.content) <= MAX_RESPONSE_BYTES
        peaks.append(round(_peak_rss_mb(pid)))
    # just under the per-statement budget: served, and what is sent is within the budget
    fits = _query(client, address, "select replace(printf('%.*c', 2000000, 'x'), 'x', "
                                   "'\U0001F600') as t")
    assert fits.status_code == 200
    assert 24_000_000 <= len(fits.content) <= MAX_RESPONSE_BYTES
    grew = _peak_rss_mb(pid) - before
    print(f"browse peak RSS {before:.0f} MB before, after each worst case {peaks} MB, "
          f"+{grew:.0f} MB in all")
    assert grew < 800, (before, peaks, grew)  # the first query alone reached 3.9 GB before


def test_any_file_name_works(tmp_path):
    store = _publish(tmp_path / "my store.v2.db", "ms")
    with V.live_server(str(store), verb="browse") as address, httpx.Client(timeout=60) as client:
        got = _query(client, address, "select count(*) as n from builds")
        assert got.status_code == 200 and got.json() == [{"n": 1}]
        assert _query(client, address, "select fts3_tokenizer('x') as p").status_code == 400


@pytest.mark.parametrize("text, json_bytes", [
    ("x" * 10, 12), ("\U0001F600" * 10, 122), ("\x01" * 10, 62), ('"' * 10, 22),
    ("é" * 10, 62),
])
def test_a_values_cost_is_at_least_its_json_encoding(text, json_bytes):
    import json

    assert len(json.dumps(text)) == json_bytes
    assert encoded_bytes(text) >= json_bytes
    assert encoded_bytes("&" * 10) >= len("&amp;" * 10)


def _asgi(parts: list[bytes]):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for k, part in enumerate(parts):
            await send({"type": "http.response.body", "body": part,
                        "more_body": k < len(parts) - 1})
    return app


def _sent(parts: list[bytes], limit: int) -> list[dict]:
    out: list[dict] = []

    async def send(message):
        out.append(message)

    asyncio.run(ResponseBudget(_asgi(parts), limit)({"type": "http"}, None, send))
    return out


def test_one_response_over_its_budget_is_a_400_and_a_stream_is_cut():
    over = _sent([b"x" * 101], 100)
    assert over[0]["status"] == 400 and b"answer too large" in over[1]["body"]
    cut = _sent([b"x" * 60, b"y" * 60, b"z" * 60], 100)
    assert cut[0]["status"] == 200
    assert sum(len(m.get("body", b"")) for m in cut[1:]) == 100
    assert cut[-1]["more_body"] is False and len(cut) == 3
    assert _sent([b"x" * 100], 100)[0]["status"] == 200


def test_the_budgets_are_stated_in_help():
    import argparse

    parser = argparse.ArgumentParser()
    add_browse(parser.add_subparsers())
    text = parser._subparsers._group_actions[0].choices["browse"].format_help()
    assert f"{MAX_RESULT_BYTES // 2**20} MiB once encoded" in " ".join(text.split())
    assert f"{MAX_RESPONSE_BYTES // 2**20} MiB sent" in " ".join(text.split())


def test_docs_state_the_budgets():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "serving.md").read_text()
    assert f"{MAX_RESULT_BYTES // 2**20} MiB" in doc and f"{MAX_RESPONSE_BYTES // 2**20} MiB" in doc
