"""A build's info (cost unit, evaluation protocol, ...) is covered by its seal (issue 31
item 2): editing the unit in SQL without the key is refused at open and at lookup; builds
published before the info was sealed still open, and say so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import learners
import polydom
import storage
import storage.builds
from polydom.app.cli import main

KEY = "s3cret"


def _build(path: Path, key: str | None = KEY) -> polydom.Index:
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.7,
           frozenset({"a", "b"}): 0.9}
    return polydom.build_index({"a": "1 + n", "b": "2"}, learners.SyntheticLearner(acc.get),
                               n_max=100.0, store=str(path), store_key=key, cost_unit="ms")


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


EDIT_UNIT = ("UPDATE builds SET info = "
             "replace(info, '\"cost_unit\": \"ms\"', '\"cost_unit\": \"us\"')")


@pytest.mark.parametrize("key", [KEY, None], ids=["signed", "unsigned"])
def test_an_edited_unit_is_refused_from_the_arrays_and_from_the_rows(tmp_path, key):
    path = tmp_path / "s.db"
    _build(path, key)
    index = polydom.open_index(path, key=key)
    assert index.info["cost_unit"] == "ms" and index.info["info_sealed"] is True
    _sql(path, EDIT_UNIT)
    with sqlite3.connect(path) as conn:
        assert '"cost_unit": "us"' in conn.execute("SELECT info FROM builds").fetchone()[0]
    with pytest.raises(storage.IndexIntegrityError, match="info"):
        polydom.open_index(path, key=key)
    _sql(path, "DELETE FROM build_arrays")  # the rows path recomputes the seal: refused too
    with pytest.raises(storage.IndexIntegrityError, match="info"):
        polydom.open_index(path, key=key)


def test_lookup_on_a_signed_store_with_an_edited_unit_fails_in_one_line(tmp_path, capsys):
    path = tmp_path / "s.db"
    _build(path)
    keyfile = tmp_path / "key"
    keyfile.write_text(KEY)
    argv = ["lookup", str(path), "--size", "10", "--budget", "5", "--key-file", str(keyfile)]
    assert main(argv) == 0
    assert "cost (ms)" in capsys.readouterr().out
    _sql(path, EDIT_UNIT)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "info" in err


def test_a_build_whose_seal_predates_sealed_info_opens_and_says_so(tmp_path, monkeypatch,
                                                                    capsys):
    path = tmp_path / "s.db"
    real = storage.builds.seal_header

    def without_info(*args, **kwargs):  # a build published before the info was sealed
        kwargs.pop("info", None)
        return real(*args, **kwargs)

    monkeypatch.setattr(storage.builds, "seal_header", without_info)
    _build(path)
    monkeypatch.undo()
    index = polydom.open_index(path, key=KEY)
    assert index.info["sealed"] is True and index.info["info_sealed"] is False
    _sql(path, "DELETE FROM build_arrays")
    assert polydom.open_index(path, key=KEY).info["info_sealed"] is False
    keyfile = tmp_path / "key"
    keyfile.write_text(KEY)
    assert main(["inspect", str(path), "--key-file", str(keyfile)]) == 0
    assert ("info of build 1 (cost unit, evaluation): not covered by its seal (published "
            "before the info was sealed)") in capsys.readouterr().out
    # and a build published now, in the same store, has its info sealed
    _build(path)
    assert polydom.open_index(path, key=KEY).info["info_sealed"] is True
