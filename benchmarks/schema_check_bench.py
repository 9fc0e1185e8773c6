"""What comparing a store's schema whole costs when it is opened (issue 35 item 1).

Opens one SQLite store (a published build of 40 random candidates) REPEATS times and
prints, as medians, the wall and CPU seconds of ``polydom.open_index`` and of the schema
check alone (``storage.schema_check.check_sqlite_schema`` on an open read transaction),
and the check's share of the open.  The expected objects are made once per process; the
first open (which makes them) is reported apart.

    nice -n 10 python benchmarks/schema_check_bench.py [REPEATS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import polydom
import storage
import storage.database
import storage.schema_check
from tests import storage_support as S


def _timed(call) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(repeats: int = 30) -> None:
    folder = Path(tempfile.mkdtemp(prefix="schema-bench-"))
    url = f"sqlite:///{folder / 'index.db'}"
    index = S.index_of(S.random_candidates(40, seed=1), {"alpha": 1.0, "cost_unit": "ms"})
    with storage.IndexStore(url) as store:
        store.publish(store.begin_build(S.BUILD_PARAMS, S.COSTS, S.GROUPS), index)
    storage.schema_check._sqlite_cache.clear()
    first = _timed(lambda: polydom.open_index(url, models=False))
    opens = [_timed(lambda: polydom.open_index(url, models=False)) for _ in range(repeats)]
    db = storage.database.Database(url, read_only=True)

    def check() -> None:
        with db.read() as conn:
            storage.schema_check.check_sqlite_schema(conn, url)

    checks = [_timed(check) for _ in range(repeats)]
    db.close()
    rows = [("first open_index (makes the expected objects)", *first)]
    rows.append(("open_index, median", statistics.median(w for w, _ in opens),
                 statistics.median(c for _, c in opens)))
    rows.append(("schema check alone, median", statistics.median(w for w, _ in checks),
                 statistics.median(c for _, c in checks)))
    print(f"{'what':48} {'wall ms':>9} {'cpu ms':>9}")
    for what, wall, cpu in rows:
        print(f"{what:48} {wall * 1e3:9.2f} {cpu * 1e3:9.2f}")
    share = rows[2][2] / rows[1][2] if rows[1][2] else float("nan")
    print(f"check / open (cpu): {share:.1%}  ({repeats} repeats)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
