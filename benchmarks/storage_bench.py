"""Storage benchmark: open time and lookup latency of a stored index, SQLite vs PostgreSQL.

    python benchmarks/storage_bench.py [--candidates 10000] [--queries 2000] [--repeats 5]
                                       [--pg URL] [--out benchmarks/results/storage.md]

An index over K candidates (random non-negative quadratic cost curves, accuracy rising with
cost so that many stay undominated; no models: the numbers are the index's own cost, not
model decoding) is published to a fresh SQLite file
and, when a PostgreSQL URL is given (``--pg`` or ``POLYDOM_TEST_PG_URL``), to a fresh
PostgreSQL database.  For each backend, medians over repeats of:

* publish: writing the build (one transaction);
* open: ``polydom.open_index(url)`` (connect, read every row, rebuild the index, no sweep);
* first lookup: the first ``lookup`` after opening;
* lookup: per-query time through the loaded index vs the same query in SQL over the views
  (``storage.LOOKUP_SQL``, one connection, ``Q`` queries), with their answers compared.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import sqlalchemy as sa

import polydom
from storage import LOOKUP_SQL, IndexStore

N_MAX = 10_000.0
FEATURES = {f"f{i}": polydom.CostCurve([1.0 + i, 0.01 * (i + 1)]) for i in range(8)}


def random_index(k: int, seed: int = 0) -> polydom.Index:
    rng = np.random.default_rng(seed)
    names = list(FEATURES)
    cands = []
    for i in range(k):
        coefs = [rng.uniform(0, 100), rng.uniform(0, 1), rng.uniform(0, 1e-4)]
        feats = rng.choice(names, size=rng.integers(1, 5), replace=False).tolist()
        # accuracy grows with the cost at a random size: many candidates stay undominated
        n = rng.uniform(0, N_MAX)
        cost = coefs[0] + coefs[1] * n + coefs[2] * n * n
        accuracy = min(1.0, 0.5 + 0.45 * (cost / 1e4) ** 0.3 + rng.normal(0, 0.01))
        cands.append(polydom.Candidate(f"c{i}", max(0.0, accuracy), coefs, feats))
    table = polydom.PolyDomIndex.build(cands, 0.0, N_MAX)
    return polydom.Index(table, FEATURES, info={"alpha": 1.0})


def median_ms(values: list[float]) -> float:
    return 1e3 * statistics.median(values)


def bench_backend(url: str, index: polydom.Index, sizes, budgets, repeats: int) -> dict:
    publish = []
    for r in range(repeats):
        with IndexStore(url) as store:
            build_id = store.begin_build({"alpha": 1.0, "repeat": r}, FEATURES)
            start = time.perf_counter()
            store.publish(build_id, index)
            publish.append(time.perf_counter() - start)
    opens, firsts = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        loaded = polydom.open_index(url)
        opened = time.perf_counter()
        loaded.lookup(float(sizes[0]), float(budgets[0]))
        firsts.append(time.perf_counter() - opened)
        opens.append(opened - start)
    pairs = list(zip(sizes.tolist(), budgets.tolist(), strict=True))
    py_times = []
    for _ in range(repeats):
        start = time.perf_counter()
        py_answers = [loaded.table.lookup_position(n, b) for n, b in pairs]
        py_times.append((time.perf_counter() - start) / len(pairs))
    build_id = loaded.info["build_id"]
    engine = sa.create_engine(url)
    sql = sa.text(LOOKUP_SQL)
    sql_times = []
    with engine.connect() as conn:
        for _ in range(max(1, repeats // 2)):
            start = time.perf_counter()
            sql_answers = []
            for n, b in pairs:
                row = conn.execute(sql, {"b": build_id, "n": n, "budget": b}).first()
                sql_answers.append(-1 if row is None else int(row.candidate_id))
            sql_times.append((time.perf_counter() - start) / len(pairs))
    engine.dispose()
    agree = sum(a == b for a, b in zip(py_answers, sql_answers, strict=True))
    return {
        "publish_ms": median_ms(publish),
        "open_ms": median_ms(opens),
        "first_us": 1e3 * median_ms(firsts),
        "py_us": 1e3 * median_ms(py_times),
        "sql_us": 1e3 * median_ms(sql_times),
        "agree": agree,
        "queries": len(pairs),
    }


def fresh_pg(admin_url: str) -> tuple[str, object]:
    base = sa.engine.make_url(admin_url)
    name = "polydom_bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()

    return base.set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pg", default=os.environ.get("POLYDOM_TEST_PG_URL"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    start = time.perf_counter()
    index = random_index(args.candidates)
    build_s = time.perf_counter() - start
    rng = np.random.default_rng(1)
    sizes = rng.uniform(0.0, N_MAX * 0.999, args.queries)
    budgets = rng.uniform(0.0, 2_000.0, args.queries)
    table = index.table
    print(
        f"index: {len(table.candidates)} candidates, {table.stats_['undominated']} undominated, "
        f"{len(table)} ranges, {table.entries} skyline entries (sweep {build_s:.1f} s)"
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["SQLite (file)"] = bench_backend(
            f"sqlite:///{Path(tmp) / 'bench.db'}", index, sizes, budgets, args.repeats
        )
    if args.pg:
        url, drop = fresh_pg(args.pg)
        try:
            results["PostgreSQL 127.0.0.1"] = bench_backend(
                url, index, sizes, budgets, args.repeats
            )
        finally:
            drop()
    else:
        print("PostgreSQL skipped: no --pg URL and POLYDOM_TEST_PG_URL unset")

    header = (
        "| backend | publish (ms) | open_index (ms) | first lookup (us) | lookup, loaded "
        "index (us) | lookup, SQL over views (us) | SQL / index | answers equal |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [header]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['publish_ms']:.0f} | {r['open_ms']:.0f} | {r['first_us']:.1f} | "
            f"{r['py_us']:.1f} | {r['sql_us']:.0f} | {r['sql_us'] / r['py_us']:.0f}x | "
            f"{r['agree']}/{r['queries']} |"
        )
    report = "\n".join(lines)
    print(report)
    if args.out:
        command = "python " + " ".join(["benchmarks/storage_bench.py", *sys.argv[1:]])
        text = (
            "# Storage benchmark\n\n"
            f"Command: `{command}` (PostgreSQL from `source .ci/postgres.sh`)\n\n"
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, SQLAlchemy {sa.__version__}, "
            f"SQLite {__import__('sqlite3').sqlite_version}.\n\n"
            f"Index: {len(table.candidates)} candidates (random quadratic costs, no models), "
            f"{table.stats_['undominated']} undominated, {len(table)} ranges, "
            f"{table.entries} skyline entries.  {args.queries} random queries, medians over "
            f"{args.repeats} repeats.\n\n" + report + "\n"
        )
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
