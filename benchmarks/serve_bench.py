"""`polydom serve` under load on loopback vs the in-process index (issue 24).

    PYTHONPATH=$PWD python benchmarks/serve_bench.py [--queries 10000] [--concurrency 8]
                                                     [--builds 10]

1. Builds a store (breast-cancer data, five column groups, every set of one or two groups:
   15 standardised logistic regressions), starts the real command line ``polydom serve``
   in a subprocess on 127.0.0.1 (port picked by the OS) and opens the same store in
   process.
2. Sends ``--queries`` random (size, budget) queries to ``GET /lookup`` and as many
   ``POST /predict`` (one feature row each) from a bounded async httpx load generator
   (``--concurrency`` requests in flight, one keep-alive connection each, only
   127.0.0.1), and checks every answer against ``index.lookup`` / ``index.predict`` in
   process: mismatches are counted (and must be 0).
3. Times the same calls in process, one at a time (p50 / p99 per call, calls/s), and
   ``/lookup`` through the same app in process (httpx's ASGI transport: the Starlette
   stack's own cost without sockets or the server's event loop).
4. Publishes ``--builds`` new builds into the store while the load generator keeps asking
   ``/lookup``; every answer names its build and is checked against that build's own
   answers (errors, mixed answers; both must be 0).

Prints markdown tables (latency percentiles of the client's request time, throughput) and
the load average of the machine before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import lattice.expansion
import polydom
from polydom.app.service import key_text
from storage import IndexStore

ROOT = Path(__file__).resolve().parent.parent
GROUPS = {f"g{i}": list(range(6 * i, 6 * i + 6)) for i in range(5)}
COSTS = {f"g{i}": polydom.CostCurve([1.0 + i, 0.5 - 0.1 * i, 0.001 * i]) for i in range(5)}
N_MAX = 1000.0
PARAMS = {"alpha": 1.0, "delta": 0.0, "learner": "StandardScaler+LogisticRegression",
          "domain": [0.0, N_MAX]}


def _index(candidates: list[polydom.Candidate]) -> polydom.Index:
    table = polydom.PolyDomIndex.build(candidates, 0.0, N_MAX)
    return polydom.Index(table, COSTS, GROUPS, {"alpha": 1.0, "cost_unit": "ms"})


def build_store(url: str) -> None:
    """Publish 15 trained models (every set of one or two groups)."""
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:400], order[400:]
    cands = []
    with IndexStore(url) as store:
        build_id = store.begin_build(PARAMS, COSTS, GROUPS)
        cache = store.expansion_cache(build_id)
        for r in (1, 2):
            for names in itertools.combinations(GROUPS, r):
                cols = [c for n in names for c in GROUPS[n]]
                model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
                model.fit(X[np.ix_(train, cols)], y[train])
                acc = float(model.score(X[np.ix_(test, cols)], y[test]))
                fs = frozenset(names)
                cache[fs] = lattice.Expansion(fs, acc, model, 0.0)
                cands.append(polydom.Candidate(
                    "+".join(names), acc, polydom.CostCurve.total([COSTS[n] for n in names]),
                    fs, cache[fs].model, learner="lattice"))
        store.publish(build_id, _index(cands))


def publish_random(url: str, seed: int) -> tuple[int, polydom.Index]:
    """Publish 40 model-less random candidates keyed by the seed; the build and its index."""
    rng = np.random.default_rng(seed)
    cands = [polydom.Candidate(f"s{seed}_{i}", float(rng.uniform(0.5, 1.0)),
                               [rng.uniform(0, 50), rng.uniform(0, 2), rng.uniform(0, 0.01)],
                               frozenset(rng.choice(list(GROUPS), 2, replace=False).tolist()))
             for i in range(40)]
    index = _index(cands)
    with IndexStore(url) as store:
        build_id = store.begin_build({**PARAMS, "seed": seed}, COSTS, GROUPS)
        store.publish(build_id, index)
    return build_id, index


def queries(n: int, seed: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    sizes = rng.uniform(0.0, N_MAX, n)
    budgets = np.exp(rng.uniform(np.log(0.5), np.log(5000.0), n))
    return [(float(a), float(b)) for a, b in zip(sizes, budgets, strict=True)]


def start_server(url: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "polydom.app.cli", "serve", url, "--port", "0",
         "--refresh", "0.1"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"polydom serve did not start: {line!r}")
    return proc, line.split()[-1]


async def load(base: str, requests: list, concurrency: int) -> tuple[list, list[float], float]:
    """Send ``requests`` (("GET"|"POST", path, params-or-json)) with ``concurrency`` in
    flight; returns the responses (JSON or an error text), per-request seconds, wall."""
    answers: list = [None] * len(requests)
    seconds = [0.0] * len(requests)
    todo = iter(range(len(requests)))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def worker(client: httpx.AsyncClient) -> None:
        for i in todo:
            method, path, payload = requests[i]
            t = time.perf_counter()
            try:
                if method == "GET":
                    got = await client.get(path, params=payload)
                else:
                    got = await client.post(path, json=payload)
                answers[i] = got.json() if got.status_code == 200 else f"{got.status_code}"
            except httpx.HTTPError as exc:
                answers[i] = f"error {exc!r}"
            seconds[i] = time.perf_counter() - t

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return answers, seconds, wall


async def asgi_lookups(index: polydom.Index, qs: list) -> tuple[list[float], float]:
    """The same app in this process through httpx's ASGI transport (no socket, no server
    loop): what the Starlette stack itself costs per request, one at a time."""
    from polydom.app.service import make_app

    app = make_app(index, refresh_seconds=None)
    seconds = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://asgi") as client:
        t0 = time.perf_counter()
        for n, b in qs:
            t = time.perf_counter()
            await client.get("/lookup", params={"size": repr(n), "budget": repr(b)})
            seconds.append(time.perf_counter() - t)
        wall = time.perf_counter() - t0
    return seconds, wall


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def row(name: str, seconds: list[float], wall: float) -> list[str]:
    return [name, f"{len(seconds)}", f"{len(seconds) / wall:,.0f}",
            f"{1e3 * pct(seconds, 50):.3f}", f"{1e3 * pct(seconds, 99):.3f}"]


def in_process(calls: list, repeat: int = 1) -> tuple[list[float], float]:
    seconds = []
    t0 = time.perf_counter()
    for _ in range(repeat):
        for call in calls:
            t = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - t)
    return seconds, time.perf_counter() - t0


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--builds", type=int, default=10)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    folder = tempfile.TemporaryDirectory(prefix="serve-bench-")
    url = f"sqlite:///{folder.name}/index.db"
    build_store(url)
    index = polydom.open_index(url)
    X, _ = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(1)
    qs = queries(args.queries, seed=2)
    rows = [X[i: i + 1] for i in rng.choice(len(X), len(qs))]
    proc, base = start_server(url)
    try:
        # 2. answers over HTTP, checked against the index in process -----------------------
        lookups = [("GET", "/lookup", {"size": repr(n), "budget": repr(b)}) for n, b in qs]
        got, lookup_s, lookup_wall = asyncio.run(load(base, lookups, args.concurrency))
        bad_lookup = 0
        for (n, b), answer in zip(qs, got, strict=True):
            hit = index.lookup(n, b)
            want = None if hit is None else (key_text(hit.key), hit.accuracy, hit.cost)
            have = None if not isinstance(answer, dict) or answer["model"] is None else (
                answer["model"]["key"], answer["model"]["accuracy"], answer["model"]["cost"])
            bad_lookup += (not isinstance(answer, dict)) or want != have
        predicts = [("POST", "/predict", {"size": n, "budget": b, "rows": r.tolist()})
                    for (n, b), r in zip(qs, rows, strict=True)]
        got, predict_s, predict_wall = asyncio.run(load(base, predicts, args.concurrency))
        bad_predict = 0
        fitted = 0
        for (n, b), r, answer in zip(qs, rows, got, strict=True):
            hit = index.lookup(n, b)
            want = None if hit is None else index.predict(r, n, b).tolist()
            fitted += hit is not None
            bad_predict += (not isinstance(answer, dict)) or answer["labels"] != want
        # 3. the same calls in process ---------------------------------------------------
        ip_lookup_s, ip_lookup_wall = in_process([lambda q=q: index.lookup(*q) for q in qs])
        asgi_s, asgi_wall = asyncio.run(asgi_lookups(index, qs))
        ip_predict_s, ip_predict_wall = in_process(
            [lambda q=q, r=r: index.lookup(*q) and index.predict(r, *q)
             for q, r in zip(qs, rows, strict=True)])
        print(f"\n{args.queries} random queries, {args.concurrency} requests in flight "
              f"(async httpx, keep-alive, 127.0.0.1); {fitted} of them find a model; "
              f"answers that differ from the in-process call: /lookup {bad_lookup}, "
              f"/predict {bad_predict}\n")
        print(table(["call", "calls", "calls/s", "p50 ms", "p99 ms"], [
            row("GET /lookup over HTTP", lookup_s, lookup_wall),
            row("GET /lookup, ASGI app in process (no socket, 1 at a time)", asgi_s, asgi_wall),
            row("index.lookup in process", ip_lookup_s, ip_lookup_wall),
            row("POST /predict (1 row) over HTTP", predict_s, predict_wall),
            row("index.lookup + index.predict in process", ip_predict_s, ip_predict_wall),
        ]))
        # 4. builds published under load --------------------------------------------------
        probe = queries(50, seed=3)
        expected: dict[int, list] = {}

        def record(build: int, idx: polydom.Index) -> None:
            expected[build] = [None if (h := idx.lookup(n, b)) is None else key_text(h.key)
                               for n, b in probe]

        record(index.info["build_id"], index)
        stop = threading.Event()
        seen: list = []

        def publisher() -> None:
            for seed in range(1, args.builds + 1):
                record(*publish_random(url, seed))
                time.sleep(0.3)
            stop.set()

        async def hammer() -> None:
            while not stop.is_set():
                requests = [("GET", "/lookup", {"size": repr(n), "budget": repr(b)})
                            for n, b in probe]
                answers, _, _ = await load(base, requests, args.concurrency)
                seen.extend(enumerate(answers))

        thread = threading.Thread(target=publisher)
        thread.start()
        asyncio.run(hammer())
        thread.join()
        time.sleep(0.5)
        final, _, _ = asyncio.run(load(base, [("GET", "/healthz", {})], 1))
        errors = sum(not isinstance(a, dict) for _, a in seen)
        mixed = sum(isinstance(a, dict) and expected[a["build"]][i] != (
            None if a["model"] is None else a["model"]["key"]) for i, a in seen)
        builds = sorted({a["build"] for _, a in seen if isinstance(a, dict)})
        print(f"\nwhile {args.builds} builds were published: {len(seen)} lookups, "
              f"{errors} errors, {mixed} mixed answers; builds answered from: {builds}; "
              f"serving build {final[0]['build']} at the end (last published "
              f"{max(expected)})")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        folder.cleanup()
    print(f"\nload average after: {os.getloadavg()}")
    print(f"median in-process lookup {1e6 * statistics.median(ip_lookup_s):.1f} us")


if __name__ == "__main__":
    main()
