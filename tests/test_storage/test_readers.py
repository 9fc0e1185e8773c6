"""Readers follow the store: refresh switches builds atomically, many processes at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import polydom
from storage import IndexStore
from tests.storage_support import (
    BUILD_PARAMS,
    COSTS,
    GROUPS,
    N_MAX,
    random_candidates,
)

ROOT = Path(__file__).resolve().parents[2]


def publish(url: str, prefix: str, seed: int, n: int = 40) -> polydom.Index:
    """Publish an index of ``n`` random candidates keyed ``{prefix}{i}``; return it."""
    table = polydom.PolyDomIndex.build(random_candidates(n, seed, prefix), 0.0, N_MAX)
    index = polydom.Index(table, COSTS, GROUPS, {"alpha": 1.0})
    with IndexStore(url) as store:
        build_id = store.begin_build({**BUILD_PARAMS, "seed": seed}, COSTS, GROUPS)
        store.publish(build_id, index)
    index.info["build_id"] = build_id
    return index


QUERIES = [(float(n), float(b)) for n in np.linspace(0, N_MAX, 7) for b in (5, 20, 60, 500)]


def answers(index: polydom.Index) -> list:
    return [None if (h := index.lookup(n, b)) is None else h.key for n, b in QUERIES]


def test_refresh_switches_to_the_newest_build_and_reports_it(store_url):
    first = publish(store_url, "a", 1)
    index = polydom.open_index(store_url)
    assert index.refresh() is False
    assert answers(index) == answers(first)
    second = publish(store_url, "b", 2)
    assert answers(index) == answers(first)  # nothing moves until asked
    assert index.refresh() is True
    assert index.info["build_id"] == second.info["build_id"]
    assert answers(index) == answers(second)
    assert index.refresh() is False


def test_a_pinned_build_or_an_unstored_index_does_not_refresh(tmp_path):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    first = publish(url, "a", 1)
    with pytest.raises(ValueError, match="does not follow a store"):
        polydom.open_index(url, build=first.info["build_id"]).refresh()
    with pytest.raises(ValueError, match="does not follow a store"):
        first.refresh()


@pytest.mark.slow
def test_reader_processes_see_one_build_at_a_time_during_a_publish(store_url, tmp_path):
    builds = {}
    first = publish(store_url, "a", 1, n=300)
    builds[first.info["build_id"]] = answers(first)
    later = [polydom.PolyDomIndex.build(random_candidates(300, s, f"s{s}-"), 0.0, N_MAX)
             for s in (2, 3)]
    expected = tmp_path / "expected.json"

    def write_expected():
        expected.write_text(json.dumps({"queries": QUERIES, "answers": builds}))

    # the ids the next two builds get are known only after publishing: predict them
    ids = [first.info["build_id"] + 1, first.info["build_id"] + 2]
    for build_id, table in zip(ids, later, strict=True):
        builds[build_id] = answers(polydom.Index(table, COSTS, GROUPS))
    write_expected()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    readers = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "reader_worker.py"),
                                 store_url, str(expected), "6"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in range(2)]
    time.sleep(2.0)
    for seed, table in zip((2, 3), later, strict=True):
        with IndexStore(store_url) as store:
            build_id = store.begin_build({**BUILD_PARAMS, "seed": seed}, COSTS, GROUPS)
            store.publish(build_id, polydom.Index(table, COSTS, GROUPS, {"alpha": 1.0}))
        assert build_id in builds
        time.sleep(0.5)
    reports = []
    for proc in readers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-2000:]
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    for report in reports:
        assert report["errors"] == 0 and report["mixed"] == 0, report
        assert report["lookups"] > 0
        assert report["builds"][-1] == ids[-1], report  # every reader reached the newest
        assert report["builds"] == sorted(report["builds"])
