"""What one ``open_index`` of a build costs: SQL statements (by the table each reads) and CPU.

Makes (once) a SQLite store of K model-less candidates whose cost curves never cross, then
opens its current build: the statements of one open, and the CPU seconds of opens (median
and min of 7, after a warm-up).  Run it with ``PYTHONPATH`` set to two checkouts, on the same
store, to compare them (benchmarks/RESULTS.md, "Opening a build reads each table once").

    PYTHONPATH=$PWD python benchmarks/open_once_bench.py --store /tmp/open_once.db
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter
from pathlib import Path

_FROM = re.compile(r"\bFROM\s+(\w+)", re.IGNORECASE)


def make_store(path: Path, k: int) -> None:
    """A store of ``k`` candidates on 8 atoms, each cost ``a * (1 + 0.01 n)``."""
    import numpy as np

    import polydom
    import storage

    rng = np.random.default_rng(0)
    atoms = {f"f{i}": f"{i + 1} + 0.01*n" for i in range(8)}
    names = list(atoms)
    cands = []
    for i in range(k):
        a = float(rng.uniform(1, 50))
        cands.append(polydom.Candidate(
            f"c{i}", float(rng.uniform(0.5, 1.0)), [a, a * 0.01],
            frozenset(rng.choice(names, size=rng.integers(1, 4), replace=False).tolist()),
            learner="lattice", accuracy_se=0.01, fold_scores=(0.5, 0.6)))
    table = polydom.PolyDomIndex.build(cands, 0.0, 1000.0)
    with storage.IndexStore(f"sqlite:///{path}") as st:
        build_id = st.begin_build({"alpha": 1.0}, atoms)
        st.publish(build_id, polydom.Index(table, atoms))


def statements(url: str) -> Counter:
    """SELECT statements of one open, by the table each reads first."""
    import sqlalchemy as sa

    import polydom

    counts: Counter = Counter()

    def seen(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("SELECT"):
            found = _FROM.search(statement)
            counts[found.group(1) if found else "?"] += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        polydom.open_index(url)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="/tmp/open_once.db")
    parser.add_argument("--candidates", type=int, default=10_000)
    args = parser.parse_args()
    import polydom

    path = Path(args.store)
    if not path.exists():
        make_store(path, args.candidates)
    url = f"sqlite:///{path}"
    polydom.open_index(url)  # warm-up
    counts = statements(url)
    times = []
    for _ in range(7):
        start = time.process_time()
        polydom.open_index(url)
        times.append(time.process_time() - start)
    repeated = {t: n for t, n in sorted(counts.items()) if n > 1}
    print(f"SELECT statements: {sum(counts.values())}; tables read more than once: "
          f"{repeated or 'none'}")
    print(f"open_index CPU s: median {statistics.median(times):.4f}, min {min(times):.4f}")


if __name__ == "__main__":
    main()
