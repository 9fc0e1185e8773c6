"""Rollbacks that delete the newer publications (issue 25 follow-up): what a fresh reader
detects from the store alone (the head record), what it cannot (a head record put back from
a copy; an unsigned store's recomputed one), and what ``min_publication`` adds.  SQLite and
PostgreSQL (``source .ci/postgres.sh``), signed and unsigned stores."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import polydom.errors
import storage
import storage.builds
import storage.publications
from polydom.app.cli import main
from storage.blobs import BlobDigest
from storage.seal import seal_header
from tests.storage_support import execute_sql

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150], Y[:150]
FEATURES = {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]}
COSTS = {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}
KEY = "s3cret"
#: Every table holding a build's rows, what a rollback deletes of the newer build.
BUILD_ROWS = ("skyline_entries", "ranges", "candidate_needs", "candidate_costs",
              "candidates", "bundle_atoms", "bundles", "feature_costs", "features",
              "build_seals", "build_arrays", "publications")


@pytest.fixture(params=[KEY, None], ids=["signed", "unsigned"])
def key(request):
    return request.param


def _build(url: str, depth: int, key: str | None) -> polydom.Index:
    learner = learners.SklearnLearner(DecisionTreeClassifier(max_depth=depth, random_state=0),
                                      X, Y, features=FEATURES, cv=2)
    return polydom.build_index(COSTS, learner, n_max=100.0, store=url, store_key=key)


def _head(url: str) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(
                "SELECT value FROM schema_info WHERE key = 'publication_head'").scalar_one()
    finally:
        engine.dispose()


def _set_head(url: str, value: str) -> None:
    execute_sql(url, f"UPDATE schema_info SET value = '{value}' WHERE key = 'publication_head'")


def _roll_back_to_build_1(url: str) -> None:
    """Delete build 2 with every row of it (its publication and expansions included; build
    1 uses none of them) and make build 1 current: the store as it was before build 2,
    except for the head record."""
    newer = "SELECT id FROM expansions WHERE build_id = 2"
    execute_sql(url, *(f"DELETE FROM {table} WHERE build_id = 2" for table in BUILD_ROWS),
         f"DELETE FROM expansion_seals WHERE expansion_id IN ({newer})",
         f"DELETE FROM expansion_predictions WHERE expansion_id IN ({newer})",
         "DELETE FROM expansions WHERE build_id = 2",
         "DELETE FROM builds WHERE id = 2",
         "UPDATE builds SET is_current = TRUE WHERE id = 1")


def _two_builds(url: str, key: str | None) -> str:
    """Publish builds 1 and 2; the head record as it was while build 1 was current."""
    _build(url, 1, key)
    kept = _head(url)
    assert kept.startswith("1 1 ")
    _build(url, 3, key)
    assert polydom.open_index(url, key=key).info["publication"] == 2
    assert _head(url).startswith("2 2 ")
    return kept


def test_a_rollback_that_deletes_the_newer_publication_is_refused_by_a_fresh_reader(store_url, key):
    _two_builds(store_url, key)
    _roll_back_to_build_1(store_url)
    with pytest.raises(storage.IndexIntegrityError,
                       match=r"build 1 is publication 1, but the store's head record names "
                       r"publication 2 \(build 2\).*rollback") as caught:
        polydom.open_index(store_url, key=key)
    assert "\n" not in str(caught.value)
    assert polydom.open_index(store_url, key=key, build=1).info["build_id"] == 1  # pinned: fine
    # deleting the head record too: build 1 was sealed as published with one
    execute_sql(store_url, "DELETE FROM schema_info WHERE key = 'publication_head'")
    with pytest.raises(storage.IndexIntegrityError, match="head record .* which is gone"):
        polydom.open_index(store_url, key=key)
    execute_sql(store_url, "DELETE FROM build_arrays")  # the rows path reads the same from the seal
    with pytest.raises(storage.IndexIntegrityError, match="head record .* which is gone"):
        polydom.open_index(store_url, key=key)


def test_a_head_record_recomputed_without_the_key(store_url, key):
    _two_builds(store_url, key)
    _roll_back_to_build_1(store_url)
    engine = sa.create_engine(store_url)
    try:
        with engine.connect() as conn:
            seal = conn.exec_driver_sql(
                "SELECT index_digest FROM build_seals WHERE build_id = 1").scalar_one()
    finally:
        engine.dispose()
    # all a writer without the key can compute: the sha256 form
    _set_head(store_url, f"1 1 {storage.publications.head_digest(BlobDigest(), 1, 1, seal)}")
    if key is not None:
        with pytest.raises(storage.IndexIntegrityError, match=r"fails its HMAC \(store key"):
            polydom.open_index(store_url, key=key)
        return
    # an unsigned store: nothing tells it from one that never had build 2, except what the
    # reader knows
    assert polydom.open_index(store_url).info["build_id"] == 1
    with pytest.raises(storage.IndexIntegrityError, match="older than min_publication=2"):
        polydom.open_index(store_url, min_publication=2)


def test_a_head_record_put_back_from_a_copy_needs_min_publication(store_url, key):
    kept = _two_builds(store_url, key)
    _roll_back_to_build_1(store_url)
    _set_head(store_url, kept)  # e.g. a backup restored: a fresh reader cannot tell
    index = polydom.open_index(store_url, key=key)
    assert (index.info["build_id"], index.info["publication"]) == (1, 1)
    with pytest.raises(storage.IndexIntegrityError,
                       match="current build 1 is publication 1, older than min_publication=2"):
        polydom.open_index(store_url, key=key, min_publication=2)
    assert polydom.open_index(store_url, key=key, min_publication=1).info["build_id"] == 1
    # renumbering build 1 to pass min_publication: its seal covers its number
    execute_sql(store_url, "UPDATE publications SET sequence = 2 WHERE build_id = 1")
    _set_head(store_url, "2 1 " + kept.split(" ")[2])
    with pytest.raises(storage.IndexIntegrityError, match="publication number"):
        polydom.open_index(store_url, key=key, min_publication=2)


def test_a_head_record_naming_the_current_build_under_another_number_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    kept = _two_builds(url, KEY)
    _set_head(url, "2 2 " + kept.split(" ")[2])  # the right names, another build's digest
    with pytest.raises(storage.IndexIntegrityError, match="fails its HMAC"):
        polydom.open_index(url, key=KEY)
    for broken in ("garbage", "2 2", "² 2 " + kept.split(" ")[2]):
        _set_head(url, broken)
        with pytest.raises(storage.IndexIntegrityError, match="does not name a sealed"):
            polydom.open_index(url, key=KEY)


def test_builds_published_before_head_records_open_and_their_rollback_needs_min_publication(
        tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 's.db'}"
    # build 1 as the writer before head records published it: no head part, no head record
    with monkeypatch.context() as patch:
        patch.setattr(storage.builds, "seal_header",
                      lambda *args, **kw: seal_header(*args, **{**kw, "head": False}))
        patch.setattr(storage.publications, "write_head", lambda *args: None)
        _build(url, 1, KEY)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM schema_info "
                                    "WHERE key = 'publication_head'").scalar_one() == 0
    engine.dispose()
    assert polydom.open_index(url, key=KEY).info["publication"] == 1
    _build(url, 3, KEY)
    assert _head(url).startswith("2 2 ")
    _roll_back_to_build_1(url)
    execute_sql(url, "DELETE FROM schema_info WHERE key = 'publication_head'")
    for rows in (False, True):  # from the arrays, then from the rows (the seal says so)
        if rows:
            execute_sql(url, "DELETE FROM build_arrays")
        assert polydom.open_index(url, key=KEY).info["build_id"] == 1  # not detectable
        with pytest.raises(storage.IndexIntegrityError, match="min_publication=2"):
            polydom.open_index(url, key=KEY, min_publication=2)


def test_deleting_older_builds_and_reading_from_the_rows_keep_the_head_valid(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    for depth in (1, 2, 3):
        _build(url, depth, KEY)
    with storage.IndexStore(url, key=KEY) as store:
        store.delete_builds([1, 2])
    index = polydom.open_index(url, key=KEY, min_publication=3)
    assert (index.info["build_id"], index.info["publication"]) == (3, 3)
    execute_sql(url, "DELETE FROM build_arrays")
    assert polydom.open_index(url, key=KEY, min_publication=3).info["read_from"] == "rows"


def test_a_reader_with_min_publication_follows_newer_builds(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _build(url, 1, None)
    index = polydom.open_index(url, min_publication=1)
    _build(url, 3, None)
    assert index.refresh() and index.info["publication"] == 2


@pytest.mark.parametrize("least", [0, -1, True, 1.5, "2"])
def test_min_publication_must_be_a_positive_integer(tmp_path, least):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _build(url, 1, None)
    with pytest.raises(polydom.errors.MinPublicationError, match="min_publication must be"):
        polydom.open_index(url, min_publication=least)


def test_min_publication_bounds_the_current_build_only(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _build(url, 1, None)
    with pytest.raises(polydom.errors.MinPublicationError, match="cannot be combined with build=1"):
        polydom.open_index(url, build=1, min_publication=1)


def test_lookup_with_min_publication_refuses_a_rolled_back_store(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    kept = _two_builds(url, None)
    capsys.readouterr()
    assert main(["builds", "list", url, "--json"]) == 0  # where the number comes from
    listed = json.loads(capsys.readouterr().out)
    assert [(r["build"], r["publication"], r["current"]) for r in listed] == [
        (1, 1, False), (2, 2, True)]
    query = ["--size", "50", "--budget", "100"]
    assert main(["lookup", url, "--min-publication", "2", *query]) == 0
    _roll_back_to_build_1(url)
    _set_head(url, kept)
    capsys.readouterr()
    assert main(["lookup", url, *query]) == 0  # a fresh reader cannot tell
    assert main(["lookup", url, "--min-publication", "2", *query]) == 2
    err = capsys.readouterr().err
    assert "older than min_publication=2" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as stopped:
        main(["lookup", url, "--min-publication", "0", *query])
    assert stopped.value.code == 2
    assert "--min-publication: expected a publication number >= 1, got '0'" in (
        capsys.readouterr().err)
