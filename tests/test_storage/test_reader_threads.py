"""Threads sharing one index: lookups and refreshes at once never fail, mix builds or go back."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import polydom
from storage import IndexStore
from tests.storage_support import BUILD_PARAMS, COSTS, GROUPS, N_MAX, random_candidates

#: (size, budget) pairs; the ones every build answers are kept per test.
QUERIES = [(float(n), float(b)) for n in np.linspace(0, N_MAX, 9) for b in (30, 60, 200, 900)]


def table(prefix: str, seed: int) -> polydom.PolyDomIndex:
    return polydom.PolyDomIndex.build(random_candidates(60, seed, prefix), 0.0, N_MAX)


def keys(index: polydom.Index, queries: list) -> list:
    return [None if (h := index.lookup(n, b)) is None else h.key for n, b in queries]


@pytest.fixture
def fine_switching():
    """Switch threads every few microseconds (not every 5 ms) so races show up."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def hammer(index: polydom.Index, expected: dict[str, list], queries: list,
           until: threading.Event, lookers: int = 3, refreshers: int = 2) -> dict:
    """``lookers`` threads look every query up (and check each answer against the build its
    key names), ``refreshers`` threads refresh and record the build ids they see, until
    ``until`` is set; one more thread watches the build id.  Returns the counts, the
    errors and the build ids each refresher and the watcher saw, in order."""
    errors: list[BaseException] = []
    mixed: list[tuple] = []
    counts = {"lookups": 0, "refreshes": 0, "switches": 0}
    seen: list[list[int]] = [[] for _ in range(refreshers + 1)]
    lock = threading.Lock()

    def look() -> None:
        n = 0
        try:
            while not until.is_set():
                for q, (size, budget) in enumerate(queries):
                    hit = index.lookup(size, budget)
                    build = hit.key.split("-")[0]
                    if hit.key != expected[build][q] or hit.cost != hit.candidate.cost(size):
                        mixed.append((q, hit.key, expected[build][q]))
                    n += 1
        except BaseException as exc:  # reported by the test, never hidden
            errors.append(exc)
        with lock:
            counts["lookups"] += n

    def refresh(mine: list[int]) -> None:
        n = switched = 0
        try:
            while not until.is_set():
                switched += index.refresh()
                mine.append(index.info["build_id"])
                n += 1
        except BaseException as exc:
            errors.append(exc)
        with lock:
            counts["refreshes"] += n
            counts["switches"] += switched

    def watch(mine: list[int]) -> None:
        while not until.is_set():
            mine.append(index.info["build_id"])

    threads = [threading.Thread(target=look) for _ in range(lookers)]
    threads += [threading.Thread(target=refresh, args=(mine,)) for mine in seen[:-1]]
    threads.append(threading.Thread(target=watch, args=(seen[-1],)))
    for t in threads:
        t.start()
    return {"threads": threads, "errors": errors, "mixed": mixed, "counts": counts,
            "seen": seen}


def finish(run: dict) -> dict:
    for t in run["threads"]:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread hung"
    assert run["errors"] == [], run["errors"][:3]
    assert run["mixed"] == [], run["mixed"][:3]
    assert run["counts"]["lookups"] > 0
    for ids in run["seen"]:
        assert ids == sorted(ids), "an index went back to an older build"
    return run["counts"]


def test_threads_share_an_index_while_builds_are_published(tmp_path, fine_switching):
    url = f"sqlite:///{tmp_path / 'index.db'}"
    tables = {f"b{k}": table(f"b{k}-", k) for k in range(4)}
    every = {name: keys(polydom.Index(t, COSTS, GROUPS), QUERIES) for name, t in tables.items()}
    answered = [q for q, _ in enumerate(QUERIES) if all(a[q] for a in every.values())]
    queries = [QUERIES[q] for q in answered]
    expected = {name: [a[q] for q in answered] for name, a in every.items()}
    assert len(queries) >= 10

    def publish(name: str) -> int:
        with IndexStore(url) as store:
            build_id = store.begin_build({**BUILD_PARAMS, "seed": int(name[1:])}, COSTS, GROUPS)
            store.publish(build_id, polydom.Index(tables[name], COSTS, GROUPS, {"alpha": 1.0}))
        return build_id

    publish("b0")
    index = polydom.open_index(url)
    until = threading.Event()
    run = hammer(index, expected, queries, until)
    last = None
    for name in ("b1", "b2", "b3"):
        time.sleep(0.3)
        last = publish(name)
    time.sleep(0.5)
    until.set()
    counts = finish(run)
    assert index.info["build_id"] == last
    assert keys(index, queries) == expected["b3"]
    assert 1 <= counts["switches"] <= 3  # one switch per publish at most: never twice
    assert index.refresh() is False


def rotating_source(builds: list[polydom.Index]) -> Callable[[int], polydom.Index]:
    """A source (see :meth:`polydom.Index.follow`) with a newer build at every call: the
    given tables in turn, each time under the next build id."""
    counter = iter(range(1, 10**9))
    lock = threading.Lock()

    def newest(build_id: int) -> polydom.Index:
        with lock:
            n = next(counter)
        time.sleep(0)  # let another refresher in between choosing and switching
        base = builds[n % len(builds)]
        return polydom.Index(base.table, COSTS, GROUPS, {"build_id": n}).follow(newest)

    return newest


def test_refreshes_switching_all_the_time_never_mix_builds(fine_switching):
    builds = [polydom.Index(table(f"r{k}-", 10 + k), COSTS, GROUPS) for k in range(2)]
    every = {f"r{k}": keys(b, QUERIES) for k, b in enumerate(builds)}
    answered = [q for q, _ in enumerate(QUERIES) if all(a[q] for a in every.values())]
    queries = [QUERIES[q] for q in answered]
    expected = {name: [a[q] for q in answered] for name, a in every.items()}
    assert len(queries) >= 10 and expected["r0"] != expected["r1"]
    index = polydom.Index(builds[0].table, COSTS, GROUPS, {"build_id": 0})
    index.follow(rotating_source(builds))
    until = threading.Event()
    run = hammer(index, expected, queries, until)
    time.sleep(1.5)
    until.set()
    counts = finish(run)
    assert counts["switches"] == counts["refreshes"] > 20  # every refresh switched


def test_an_index_copies_and_pickles_without_its_lock():
    import copy
    import pickle

    index = polydom.Index(table("c-", 1), COSTS, GROUPS, {"build_id": 7})
    for twin in (copy.deepcopy(index), pickle.loads(pickle.dumps(index))):
        assert twin._refresh_lock is not index._refresh_lock
        assert keys(twin, QUERIES) == keys(index, QUERIES)
