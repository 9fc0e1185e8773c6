"""Scale-out benchmark (issue 13): executors, big lattices, many readers, fast open_index.

    PYTHONPATH=$PWD python benchmarks/scale_bench.py [--only build,lattice,readers,open]
        [--pg-url URL] [--workdir DIR] [--sizes 1000,10000,100000]

* build: one realistic build (scikit-learn, 3-fold CV, on the digits' eight pixel rows as
  features, alpha 1.02; ``--estimator logistic`` or ``forest``) in-process (1 worker), on a
  2-process pool and on a 2-worker ``LocalCluster`` (processes, one thread each; with Dask's
  default worker environment and with ``MALLOC_TRIM_THRESHOLD_`` unset), interleaved over
  ``--repeats`` runs; median wall time, speed-up, and a check that every run stored the same
  candidates (no speed-up is printed otherwise).
* lattice: ``lattice.progressive`` under a budget of 1,000 trainings (synthetic learner) for
  m = 16, 20, 24: time and tracemalloc peak, with the "paper" traversal (and "complete" at
  m = 16 for contrast).
* readers: 4 reader processes loop over lookups and ``index.refresh()`` while two new builds
  are published; lookups per second, errors and mixed answers (an iteration whose answers
  are not exactly those of the build the reader reports).  PostgreSQL with ``--pg-url`` (or
  ``POLYDOM_TEST_PG_URL``), else SQLite.
* open: ``polydom.open_index`` of stores with 10^3, 10^4, 10^5 candidates (median of 3 after
  a warm-up; wall and CPU time, the latter less disturbed by other jobs).  Run the same
  command with ``PYTHONPATH`` at an older checkout to get the "before" column; the stores
  are cached in ``--workdir``.
* open_parts (not in the default ``--only``): the steps of an open from the index arrays at
  the largest ``--sizes``, CPU time each.
* open_pg (not in the default ``--only``): as open, each size one build in the PostgreSQL
  database of ``--pg-url`` (published there on the first run).
* index (issue 38; not in the default ``--only``): pools of ``--index-sizes`` candidates
  (the realistic family: 40 atoms of degree <= 2, 5-20 a candidate, accuracy rising with
  information), each size in a fresh process: build, publish, the store (its published
  part and its side record), open in a fresh process against a process that only imports
  the read path, open warm, lookup against two bisects, lookup_many against a numpy scan
  of every candidate (and the mismatches), peak memory; then the adversarial families
  (a staircase of parallel lines, lines that all cross, parabolas that cross twice) built
  or refused, and the sweep's CPU per crossing on random lines and parabolas at K = 1,000.
  CPU seconds (``time.process_time``) with wall beside, medians of ``--repeats``; growth
  exponents between sizes.

Every section prints the 1-minute load average next to its numbers: this machine is shared.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


# ---------------------------------------------------------------------------- build
def digits_learner(estimator: str = "logistic"):
    """The digits' eight pixel rows as features, and a learner with 3-fold CV.

    ``logistic``: standardised logistic regression (~65 ms an expansion on one core);
    ``forest``: a 200-tree random forest (~0.8 s an expansion), for trainings long enough
    that a cluster's per-task overhead is small next to them.
    """
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import learners

    X, y = load_digits(return_X_y=True)
    features = {f"row{r}": list(range(8 * r, 8 * r + 8)) for r in range(8)}
    if estimator == "logistic":
        est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    elif estimator == "forest":
        est = RandomForestClassifier(n_estimators=200, n_jobs=1, random_state=0)
    else:
        raise SystemExit(f"unknown --estimator {estimator!r}")
    return learners.SklearnLearner(est, X, y, features=features, cv=3), features


def digits_costs(features):
    return {name: f"{1 + i} + {0.05 * (i + 1)}*n" for i, name in enumerate(features)}


def _warm_imports(_: int) -> int:
    """A no-op task that imports what an expansion needs (a long-lived cluster's workers
    have done this long before a build starts)."""
    import sklearn.linear_model  # noqa: F401

    import learners  # noqa: F401
    import polydom  # noqa: F401

    return os.getpid()


def local_cluster(trim: bool):
    """A 2-worker ``LocalCluster`` (processes, one thread each), warmed up.

    ``trim=True`` keeps Dask's default ``MALLOC_TRIM_THRESHOLD_=65536`` in every worker's
    environment (``distributed.nanny.pre-spawn-environ``); ``trim=False`` unsets it, which
    Dask's configuration allows with ``None``.  With it, glibc returns freed memory to the
    kernel eagerly and numpy's many medium-sized temporaries are mapped and unmapped again
    and again: one expansion of this workload takes ~45% longer in a worker than in-process.
    """
    import dask
    import distributed

    key = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
    with dask.config.set({key: 65536 if trim else None}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    client.wait_for_workers(2)
    client.gather(client.map(_warm_imports, range(4), pure=False))
    return cluster, client


def bench_build(workdir: Path, repeats: int = 3, estimator: str = "logistic",
                rows: str = "inprocess,pool,dask,dask-untrimmed") -> None:
    from threadpoolctl import threadpool_limits

    import polydom

    learner, features = digits_learner(estimator)
    costs = digits_costs(features)
    everything = {"inprocess": ("1 worker (in-process)", None),
                  "pool": ("2-process pool", "processes:2"),
                  "dask": ("2-worker LocalCluster, Dask defaults", True),
                  "dask-untrimmed": ("2-worker LocalCluster, MALLOC_TRIM_THRESHOLD_ unset",
                                     False)}
    wanted = ["inprocess"] + [r for r in rows.split(",") if r != "inprocess"]
    unknown = [r for r in wanted if r not in everything]
    if unknown:
        raise SystemExit(f"unknown --executors {unknown}; choose from {list(everything)}")
    executors = [everything[r] for r in wanted]  # in-process first: the speed-up's baseline
    walls: dict[str, list[float]] = {name: [] for name, _ in executors}
    trained, keys, loads = {}, {}, {}
    for _ in range(repeats):  # interleaved, so a burst of load hits every executor
        for name, executor in executors:
            cluster = None
            if isinstance(executor, bool):  # one cluster at a time: idle ones cost CPU too
                cluster, executor = local_cluster(trim=executor)
            url = f"sqlite:///{workdir / 'build.db'}"
            Path(url[len("sqlite:///"):]).unlink(missing_ok=True)
            before = load()
            try:
                start = time.perf_counter()
                with threadpool_limits(1):  # one core per worker, as the pool and Dask do
                    index = polydom.build_index(costs, learner, alpha=1.02, n_max=64.0,
                                                store=url, executor=executor)
                walls[name].append(time.perf_counter() - start)
            finally:
                if cluster is not None:
                    executor.close()
                    cluster.close()
            keys.setdefault(name, []).append([(c.key, c.accuracy) for c in index.candidates])
            trained[name] = index.info["trained"]
            loads.setdefault(name, []).append(f"{before.split()[-1]}/{load().split()[-1]}")
    base = statistics.median(walls[executors[0][0]])
    reference = keys[executors[0][0]][0]
    same = all(k == reference for runs in keys.values() for k in runs)
    print(f"\n## build: digits rows x {estimator} (3-fold CV), alpha 1.02, "
          f"median of {repeats}\n")
    print("| executor | trainings | wall s (median) | all runs s | speed-up | load before/after |")
    print("|---|---:|---:|---|---:|---|")
    for name, _ in executors:
        med = statistics.median(walls[name])
        runs = ", ".join(f"{w:.1f}" for w in walls[name])
        print(f"| {name} | {trained[name]} | {med:.1f} | {runs} | {base / med:.2f}x | "
              f"{'; '.join(loads[name])} |")
    print(f"\nsame candidates and accuracies in every run of every executor: {same}")
    if not same:
        raise SystemExit("executors disagree: no speed-up is reported for different indexes")


# ---------------------------------------------------------------------------- lattice
def synthetic_lattice(m: int):
    import learners

    rng = np.random.default_rng(m)
    w = rng.uniform(0.05, 1.0, m)
    names = [f"f{i}" for i in range(m)]
    idx = {n: i for i, n in enumerate(names)}
    costs = {n: [float(rng.uniform(1, 10)), float(rng.uniform(0, 0.1))] for n in names}

    def acc(fs):
        return round(0.5 + 0.45 * (1 - math.exp(-sum(w[idx[f]] for f in fs) / 3)), 4)

    return costs, learners.SyntheticLearner(acc)


def bench_lattice() -> None:
    import lattice

    print("\n## lattice: progressive (alpha 2.0 down by 0.1) under 1,000 trainings\n")
    print("| m | traversal | alpha reached | trained | checks | pruned | time s | peak MiB | "
          "load |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for m, traversal in [(16, "complete"), (16, "paper"), (20, "paper"), (24, "paper")]:
        costs, learner = synthetic_lattice(m)
        tracemalloc.start()
        start = time.perf_counter()
        p = lattice.progressive(costs, learner, max_expansions=1000, start=2.0, step=0.1,
                                traversal=traversal)
        wall = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        e = p.exploration
        print(f"| {m} | {traversal} | {p.alpha:g} | {p.trained} | {e.stats['checks']} | "
              f"{len(e.pruned)} | {wall:.2f} | {peak / 2**20:.1f} | {load()} |")


# ---------------------------------------------------------------------------- stores
COSTS = {"g0": "1 + 0.5*n", "g1": "2 + 0.4*n + 0.001*n**2", "g2": "3 + 0.3*n + 0.002*n**2",
         "g3": "4 + 0.2*n + 0.003*n**2", "g4": "5 + 0.1*n + 0.004*n**2"}
N_MAX = 1000.0


def random_candidates(n: int, seed: int, prefix: str):
    import polydom

    rng = np.random.default_rng(seed)
    names = list(COSTS)
    out = []
    for i in range(n):
        coefs = [rng.uniform(0, 50), rng.uniform(0, 2), rng.uniform(0, 0.01)]
        feats = rng.choice(names, size=rng.integers(1, 4), replace=False).tolist()
        out.append(polydom.Candidate(f"{prefix}{i}", rng.uniform(0.5, 1.0), coefs, feats))
    return out


def publish(url: str, n: int, seed: int, prefix: str) -> tuple[int, object]:
    import polydom
    from storage import IndexStore

    table = polydom.PolyDomIndex.build(random_candidates(n, seed, prefix), 0.0, N_MAX)
    index = polydom.Index(table, COSTS, info={"alpha": 1.0})
    with IndexStore(url) as store:
        build_id = store.begin_build({"alpha": 1.0, "seed": seed, "n": n}, COSTS)
        store.publish(build_id, index)
    return build_id, index


def bench_open(workdir: Path, sizes: list[int], pg_url: str | None = None) -> None:
    """``open_index`` per size: a SQLite file per size in ``workdir``, or with ``pg_url``
    one build per size in that PostgreSQL database (opened with ``build=``)."""
    import polydom

    where = "PostgreSQL" if pg_url else "SQLite"
    print(f"\n## open_index ({where}): stored candidates -> a ready index (median of 3, "
          "after a warm-up)\n")
    print("| candidates | open_index wall s | open_index CPU s | load |")
    print("|---:|---:|---:|---|")
    for n in sizes:
        build = None
        if pg_url:
            url = pg_url
            known = polydom.list_builds(url) if _has_store(url) else []
            found = [b.build_id for b in known
                     if b.params.get("n") == n and b.status == "complete"]
            build = found[0] if found else publish(url, n, 0, "c")[0]
        else:
            path = workdir / f"open_{n}.db"
            if not path.exists():
                publish(f"sqlite:///{path}", n, 0, "c")
            url = f"sqlite:///{path}"
        polydom.open_index(url, build=build)
        times, cpu = [], []
        for _ in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            polydom.open_index(url, build=build)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        print(f"| {n} | {statistics.median(times):.3f} | {statistics.median(cpu):.3f} | "
              f"{load()} |", flush=True)


def _has_store(url: str) -> bool:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        return "schema_info" in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


def bench_open_parts(workdir: Path, n: int) -> None:
    """Where an open from the index arrays spends its time (CPU, min of 3, collector paused
    as ``load_index`` does): the blob decoded, the rows fetched (the same SELECTs through
    the standard ``sqlite3`` module) and checked against it, then curves, candidates and
    the skyline table built."""
    import gc
    import sqlite3

    import polydom
    from storage import SCHEMA_VERSION, index_arrays
    from storage.candidate_fields import candidates_from, read_candidates, sealed_fields

    fields = sealed_fields(SCHEMA_VERSION)
    path = workdir / f"open_{n}.db"
    if not path.exists():
        publish(f"sqlite:///{path}", n, 0, "c")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    build = conn.execute("SELECT id FROM builds WHERE is_current").fetchone()[0]
    blob = conn.execute("SELECT blob FROM build_arrays WHERE build_id = ?", (build,)).fetchone()[0]
    atoms = [r[0] for r in conn.execute(
        "SELECT name FROM features WHERE build_id = ? ORDER BY feature_id", (build,))]
    queries = [
        f"SELECT candidate_id, {', '.join(f.name for f in fields)} FROM candidates "
        "WHERE build_id = ? ORDER BY candidate_id",
        "SELECT candidate_id, degree, coefficient FROM candidate_costs WHERE build_id = ?",
        "SELECT candidate_id, feature_id, probability FROM candidate_needs WHERE build_id = ? "
        "ORDER BY candidate_id, feature_id",
        "SELECT range_id, n_lo, n_hi FROM ranges WHERE build_id = ? ORDER BY range_id",
        "SELECT range_id, rank, candidate_id FROM skyline_entries WHERE build_id = ? "
        "ORDER BY range_id, rank",
    ]
    timings: dict[str, float] = {}

    def timed(name, f):
        best = math.inf
        for _ in range(3):
            start = time.process_time()
            out = f()
            best = min(best, time.process_time() - start)
        timings[name] = best
        return out

    gc.disable()
    try:
        arrays = timed("decode the blob", lambda: index_arrays.decode(blob, build, atoms, fields))
        rows = timed("fetch the rows", lambda: [conn.execute(q, (build,)).fetchall()
                                                for q in queries])
        timed("check the rows", lambda: index_arrays.check_rows(arrays, *rows))
        curves = timed("cost curves", lambda: polydom.CostCurve.from_rows(arrays.coefficients))
        feeds = timed("read the columns", lambda: read_candidates(
            SCHEMA_VERSION, arrays.columns, "bench",
            done=frozenset(f.name for f in fields if f.array == "key")))
        cands = timed("candidates", lambda: candidates_from(feeds, curves, None, arrays.needs))
        timed("skyline table", lambda: polydom.PolyDomIndex(
            cands, arrays.n_min, arrays.n_max, arrays.breaks, arrays.skylines))
    finally:
        gc.enable()
    conn.close()
    print(f"\n## open_index from the arrays, {n} candidates: CPU s per step (min of 3)\n")
    print("| step | CPU s |")
    print("|---|---:|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.4f} |")
    print(f"\n{load()}")


# ---------------------------------------------------------------------------- readers
QUERIES = [(float(n), float(b)) for n in np.linspace(0, N_MAX, 9) for b in (5, 20, 60, 500)]


def answers(index) -> list:
    return [None if (h := index.lookup(n, b)) is None else h.key for n, b in QUERIES]


def reader(url: str, expected: dict, seconds: float, ready, out) -> None:
    import polydom

    index = polydom.open_index(url)
    ready.put(index.info["build_id"])
    lookups = errors = mixed = 0
    builds: list[int] = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            index.refresh()
            build = index.info["build_id"]
            got = answers(index)
            lookups += len(QUERIES)
        except Exception as exc:
            errors += 1
            print(f"reader error: {exc!r}", file=sys.stderr)
            continue
        if not builds or builds[-1] != build:
            builds.append(build)
        mixed += got != expected.get(build)
    out.put({"lookups": lookups, "errors": errors, "mixed": mixed, "builds": builds,
             "seconds": time.perf_counter() - start})


def fresh_pg_database(base_url: str) -> str:
    import uuid

    import sqlalchemy as sa

    base = sa.engine.make_url(base_url)
    name = "scale_bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def bench_readers(workdir: Path, pg_url: str | None, seconds: float = 12.0) -> None:
    import polydom

    url = fresh_pg_database(pg_url) if pg_url else f"sqlite:///{workdir / 'readers.db'}"
    if not pg_url:
        Path(workdir / "readers.db").unlink(missing_ok=True)
    n = 2000
    first_id, first = publish(url, n, 1, "a")
    expected = {first_id: answers(first)}
    later = []
    for k, seed in enumerate((2, 3), start=1):
        table = polydom.PolyDomIndex.build(random_candidates(n, seed, f"s{seed}-"), 0.0, N_MAX)
        later.append((seed, table))
        expected[first_id + k] = answers(polydom.Index(table, COSTS))
    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=reader, args=(url, expected, seconds, ready, out))
             for _ in range(4)]
    for p in procs:
        p.start()
    for _ in procs:  # every reader has opened the first build before anything is published
        ready.get(timeout=600)
    time.sleep(seconds / 4)
    from storage import IndexStore

    for seed, table in later:
        with IndexStore(url) as store:
            build_id = store.begin_build({"alpha": 1.0, "seed": seed, "n": n}, COSTS)
            store.publish(build_id, polydom.Index(table, COSTS, info={"alpha": 1.0}))
        assert build_id in expected, (build_id, list(expected))
        time.sleep(seconds / 6)
    reports = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    total = sum(r["lookups"] for r in reports)
    span = max(r["seconds"] for r in reports)
    backend = "PostgreSQL" if pg_url else "SQLite"
    print(f"\n## readers: 4 processes on {backend}, {n} candidates per build, two builds "
          f"published while they read\n")
    print("| reader | lookups | lookups/s | errors | mixed | builds seen |")
    print("|---:|---:|---:|---:|---:|---|")
    for i, r in enumerate(reports):
        print(f"| {i} | {r['lookups']} | {r['lookups'] / r['seconds']:.0f} | {r['errors']} | "
              f"{r['mixed']} | {r['builds']} |")
    print(f"\ntotal {total / span:.0f} lookups/s (each iteration: one refresh() and "
          f"{len(QUERIES)} lookups), errors {sum(r['errors'] for r in reports)}, mixed "
          f"{sum(r['mixed'] for r in reports)}; {load()}")


# ---------------------------------------------------------------------------- index
N_INDEX = 1000.0  # the realistic family's domain is [0, N_INDEX]


def realistic_pool(k: int, seed: int = 0, atoms: int = 40):
    """``k`` candidates over ``atoms`` atoms of degree <= 2: each needs 5-20 of them (its
    cost their sum), its accuracy rises with the information they carry (plus noise).
    Returns the pool (:class:`polydom.CandidateArrays`) and the atoms' curves."""
    import polydom

    rng = np.random.default_rng(seed)
    curves = np.stack([rng.uniform(0, 10, atoms), rng.uniform(0, 0.1, atoms),
                       rng.uniform(0, 1e-4, atoms)], axis=1)
    weight = rng.uniform(0.02, 0.12, atoms)
    count = rng.integers(5, 21, k)
    ranks = np.argsort(np.argsort(rng.random((k, atoms)), axis=1), axis=1)
    mask = ranks < count[:, None]
    acc = 1.0 - 0.5 * np.exp(mask.astype(float) @ np.log1p(-weight))
    acc = np.clip(acc + rng.normal(0, 0.005, k), 0.0, 1.0)
    names = [f"a{i}" for i in range(atoms)]
    pool = polydom.CandidateArrays([f"c{i}" for i in range(k)], acc,
                                   mask.astype(float) @ curves, mask, names)
    return pool, {n: curves[i].tolist() for i, n in enumerate(names)}


def adversarial_pool(family: str, k: int):
    """A pool of ``k`` candidates of an adversarial family on ``[0, N_INDEX]`` (accuracy
    rising with the cost at 0, so that every curve is on the front there):

    * ``staircase``: parallel lines ``1 + i + 0.5 n``: none crosses, all survive pruning;
    * ``lines``: the tangents of ``sqrt(n)`` at sizes spread over the domain: every pair
      crosses once, each at its own size;
    * ``parabolas``: ``a_i + b_i (n - 500)**2``, the order at the middle the reverse of the
      order at both ends: every pair crosses twice.
    """
    import polydom

    i = np.arange(k, dtype=float)
    acc = 0.5 + 0.5 * i / k
    if family == "staircase":
        coef = np.stack([1.0 + i, np.full(k, 0.5)], axis=1)
    elif family == "lines":
        t = N_INDEX * (i + 1.0) / (k + 1.0)
        coef = np.stack([np.sqrt(t) / 2.0, 1.0 / (2.0 * np.sqrt(t))], axis=1)
    else:
        alpha = 1.0 + (k - i)
        beta = 4.0 * (2.0 * i + 1.0) / N_INDEX**2
        m = N_INDEX / 2.0
        coef = np.stack([alpha + beta * m * m, -2.0 * beta * m, beta], axis=1)
    return polydom.CandidateArrays([f"{family[0]}{j}" for j in range(k)], acc, coef)


def _timed(f):
    cpu, wall = time.process_time(), time.perf_counter()
    out = f()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def _scan(pool, sizes: np.ndarray, budgets: np.ndarray) -> np.ndarray:
    """The answer to each query by a numpy scan of every candidate: the most accurate that
    fits, ties to the cheaper, then to the smaller key (the lookup's rule)."""
    coef = pool.coefficients
    acc = pool.accuracies
    key_rank = np.empty(len(pool), dtype=np.int64)
    key_rank[np.argsort(np.array(pool.keys, dtype=object), kind="stable")] = np.arange(len(pool))
    out = np.empty(sizes.size, dtype=np.int64)
    for q, (n, b) in enumerate(zip(sizes.tolist(), budgets.tolist(), strict=True)):
        cost = coef[:, 0].copy()
        for j in range(1, coef.shape[1]):
            cost += coef[:, j] * n**j
        fits = np.flatnonzero(cost <= b)
        if fits.size == 0:
            out[q] = -1
            continue
        best = fits[np.lexsort((key_rank[fits], cost[fits], -acc[fits]))[0]]
        out[q] = best
    return out


def _fresh_cpu(code: str) -> float:
    """CPU seconds (user + system) of a fresh interpreter running ``code``."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", code + "\nimport resource\nr = resource."
                          "getrusage(resource.RUSAGE_SELF)\nprint(r.ru_utime + r.ru_stime)"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    return float(out.stdout.split()[-1])


def _child_modules(url: str) -> list[str]:
    """The modules a fresh process holds after ``polydom.open_index(url)``, in import
    order (private submodules of C extensions left out)."""
    import json
    import subprocess

    code = (f"import json, sys\nimport polydom\npolydom.open_index({url!r})\n"
            "print(json.dumps([m for m in sys.modules if not m.startswith('_')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_index_one(workdir: Path, k: int, repeats: int) -> dict:
    """One size of the index table, in this process (run in a fresh one per size)."""
    import bisect
    import resource
    import sqlite3

    import polydom
    from storage import IndexStore

    pool, costs = realistic_pool(k)
    builds = [_timed(lambda: polydom.PolyDomIndex.build(pool, 0.0, N_INDEX))
              for _ in range(repeats)]
    table = builds[-1][0]
    path = workdir / f"index_{k}.db"
    publishes = []
    for _ in range(repeats):
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            p.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
        with IndexStore(url) as store:
            build = store.begin_build({"alpha": 1.0, "k": k}, costs)
            index = polydom.Index(table, costs)
            publishes.append(_timed(lambda s=store, b=build, i=index: s.publish(b, i))[1:])
    conn = sqlite3.connect(path)
    (side,) = conn.execute("SELECT COALESCE(SUM(length(blob)), 0) FROM build_pools").fetchone()
    conn.close()
    size = path.stat().st_size
    warm = [_timed(lambda: polydom.open_index(url))[1:] for _ in range(repeats)]
    index = polydom.open_index(url)
    # the modules an open imports: the baseline process imports exactly these, opens nothing
    modules = _child_modules(url)
    reads = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)"
    cold = [_fresh_cpu(f"import polydom\npolydom.open_index({url!r})") for _ in range(repeats)]
    only = [_fresh_cpu(f"import polydom\n{reads}") for _ in range(repeats)]
    rng = np.random.default_rng(1)
    q = 20_000
    sizes, budgets = rng.uniform(0, N_INDEX, q), rng.uniform(0, 150, q)
    pairs = list(zip(sizes.tolist(), budgets.tolist(), strict=True))
    lookup = index.table.lookup_position
    _, lk, _ = _timed(lambda: [lookup(n, b) for n, b in pairs])
    breaks = index.table.breakpoints.tolist()
    longest = max(len(s) for s in index.table.skyline_positions)
    column = sorted(rng.uniform(0, 150, longest).tolist())
    _, bis, _ = _timed(lambda: [(bisect.bisect_right(breaks, n), bisect.bisect_right(column, b))
                                for n, b in pairs])
    _, many, _ = _timed(lambda: index.lookup_many(sizes, budgets))
    got = index.lookup_many(sizes, budgets)
    scan_q = min(q, max(200, 2_000_000 // k))
    want, scan, _ = _timed(lambda: _scan(pool, sizes[:scan_q], budgets[:scan_q]))
    mismatches = int((got[:scan_q] != want).sum())
    med = statistics.median
    return {
        "k": k, "undominated": table.stats_["undominated"], "published": len(table.answerable),
        "ranges": len(table), "crossings": table.stats_["crossings"],
        "build_cpu": med(b[1] for b in builds), "build_wall": med(b[2] for b in builds),
        "publish_cpu": med(p[0] for p in publishes), "publish_wall": med(p[1] for p in publishes),
        "file_mb": size / 1e6, "side_mb": side / 1e6,
        "open_cold_cpu": med(cold), "import_only_cpu": med(only),
        "open_warm_cpu": med(w[0] for w in warm), "open_warm_wall": med(w[1] for w in warm),
        "lookup_us": lk / q * 1e6, "bisects_us": bis / q * 1e6, "many_us": many / q * 1e6,
        "scan_us": scan / scan_q * 1e6, "scan_queries": scan_q, "mismatches": mismatches,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def bench_adversarial_one(family: str, k: int) -> dict:
    """One adversarial pool built or refused, in this process."""
    import polydom

    pool = adversarial_pool(family, k)

    def build():
        try:
            table = polydom.PolyDomIndex.build(pool, 0.0, N_INDEX)
        except ValueError as exc:
            return f"refused: {str(exc)[:60]}..."
        return f"built: {table.stats_['undominated']} kept, {len(table)} ranges"

    outcome, cpu, wall = _timed(build)
    return {"family": family, "k": k, "outcome": outcome, "cpu": cpu, "wall": wall}


def bench_sweep_rate(k: int = 1000) -> list[dict]:
    """CPU per crossing of the sweep alone on ``k`` random lines and parabolas."""
    from polydom.index.sweep import kinetic_sweep

    rng = np.random.default_rng(0)
    out = []
    for name, width in (("lines", 2), ("parabolas", 3)):
        scale = [100.0, 1.0, 1e-3][:width]
        coefs = [rng.uniform(0, 1, width) * scale for _ in range(k)]
        accs = sorted(rng.uniform(0.5, 1.0, k).tolist(), reverse=True)
        result, cpu, wall = _timed(lambda coefs=coefs, accs=accs: kinetic_sweep(
            coefs, accs, 0.0, N_INDEX, max_crossings=10**8))
        out.append({"curves": name, "k": k, "crossings": result.crossings, "cpu": cpu,
                    "wall": wall, "us_per_crossing": cpu / max(result.crossings, 1) * 1e6})
    return out


def _child(args: list[str]) -> dict:
    import json
    import subprocess

    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    if out.returncode != 0:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _slope(rows: list[dict], field: str) -> list[str]:
    out = ["-"]
    for a, b in zip(rows, rows[1:], strict=False):
        if a[field] > 0 and b[field] > 0:
            out.append(f"{math.log(b[field] / a[field]) / math.log(b['k'] / a['k']):.2f}")
        else:
            out.append("-")
    return out


def bench_index(workdir: Path, sizes: list[int], repeats: int, families: list[int]) -> None:
    rows = [_child(["--only", "index_one", "--k", str(k), "--repeats",
                    str(repeats if k <= 100_000 else 1), "--workdir", str(workdir)])
            for k in sizes]
    print("\n## index (issue 38): the realistic family, each size in a fresh process "
          f"(median of {repeats}; 1 run at 10^6); {load()}\n")
    print("| K | undominated | published | ranges | crossings | build CPU s (wall) | "
          "publish CPU s (wall) | file MB (side record) | open cold CPU s / import only | "
          "open warm CPU s (wall) | lookup us / two bisects | lookup_many us / numpy scan | "
          "mismatches (of) | peak MB |")
    print("|---:|---:|---:|---:|---:|---|---|---|---|---|---|---|---|---:|")
    for r in rows:
        print(f"| {r['k']:,} | {r['undominated']} | {r['published']} | {r['ranges']} | "
              f"{r['crossings']:,} | {r['build_cpu']:.3f} ({r['build_wall']:.2f}) | "
              f"{r['publish_cpu']:.3f} ({r['publish_wall']:.2f}) | {r['file_mb']:.2f} "
              f"({r['side_mb']:.2f}) | {r['open_cold_cpu']:.3f} / {r['import_only_cpu']:.3f}"
              f" = {r['open_cold_cpu'] / r['import_only_cpu']:.2f}x | "
              f"{r['open_warm_cpu']:.3f} ({r['open_warm_wall']:.3f}) | {r['lookup_us']:.2f} / "
              f"{r['bisects_us']:.2f} | {r['many_us']:.2f} / {r['scan_us']:.1f} | "
              f"{r['mismatches']} ({r['scan_queries']:,}) | {r['peak_mb']:.0f} |")
    print("\ngrowth exponents (log ratio of CPU over log ratio of K, size to size): build "
          f"{', '.join(_slope(rows, 'build_cpu'))}; publish "
          f"{', '.join(_slope(rows, 'publish_cpu'))}; open warm "
          f"{', '.join(_slope(rows, 'open_warm_cpu'))}")
    adv = [_child(["--only", "adversarial_one", "--family", f, "--k", str(k)])
           for f in ("staircase", "lines", "parabolas") for k in families]
    print(f"\n## adversarial pools on [0, {N_INDEX:g}] (one run each, fresh process)\n")
    print("| family | K | outcome | CPU s (wall) |")
    print("|---|---:|---|---|")
    for r in adv:
        print(f"| {r['family']} | {r['k']:,} | {r['outcome']} | {r['cpu']:.3f} "
              f"({r['wall']:.2f}) |")
    for f in ("staircase", "lines", "parabolas"):
        part = [{"k": r["k"], "cpu": r["cpu"]} for r in adv if r["family"] == f]
        print(f"\n{f}: growth exponents {', '.join(_slope(part, 'cpu'))}", end="")
    print("\n\n## the sweep alone: random curves on [0, 1000], K = 1,000\n")
    print("| curves | crossings | CPU s (wall) | CPU us per crossing |")
    print("|---|---:|---|---:|")
    for r in _child(["--only", "sweep_rate"])["rows"]:
        print(f"| {r['curves']} | {r['crossings']:,} | {r['cpu']:.2f} ({r['wall']:.2f}) | "
              f"{r['us_per_crossing']:.1f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="build,lattice,readers,open")
    parser.add_argument("--pg-url", default=os.environ.get("POLYDOM_TEST_PG_URL"))
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "polydom_scale_bench"))
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--estimator", default="logistic", choices=["logistic", "forest"],
                        help="the build section's learner (see digits_learner)")
    parser.add_argument("--repeats", type=int, default=3, help="the build section's repeats")
    parser.add_argument("--executors", default="inprocess,pool,dask,dask-untrimmed",
                        help="the build section's rows (in-process always runs first)")
    parser.add_argument("--index-sizes", default="100,1000,10000,100000,1000000",
                        help="the index section's pool sizes")
    parser.add_argument("--families", default="1000,10000,100000",
                        help="the index section's adversarial pool sizes")
    parser.add_argument("--k", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--family", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only in ("index_one", "adversarial_one", "sweep_rate"):  # a child of "index"
        import json

        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.only == "index_one":
            print(json.dumps(bench_index_one(workdir, args.k, args.repeats)))
        elif args.only == "adversarial_one":
            print(json.dumps(bench_adversarial_one(args.family, args.k)))
        else:
            print(json.dumps({"rows": bench_sweep_rate()}))
        return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    print(f"# scale_bench ({os.cpu_count()} cores, {load()})")
    if "build" in parts:
        bench_build(workdir, args.repeats, args.estimator, args.executors)
    if "lattice" in parts:
        bench_lattice()
    if "readers" in parts:
        bench_readers(workdir, args.pg_url)
    if "open" in parts:
        bench_open(workdir, [int(s) for s in args.sizes.split(",")])
    if "open_pg" in parts:
        bench_open(workdir, [int(s) for s in args.sizes.split(",")], args.pg_url)
    if "index" in parts:
        bench_index(workdir, [int(s) for s in args.index_sizes.split(",")], args.repeats,
                    [int(s) for s in args.families.split(",")])
    if "open_parts" in parts:
        bench_open_parts(workdir, max(int(s) for s in args.sizes.split(",")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
