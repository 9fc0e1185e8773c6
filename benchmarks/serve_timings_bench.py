"""What `polydom serve --record-timings` costs a request, and whether every timing is stored.

    PYTHONPATH=$PWD python benchmarks/serve_timings_bench.py [--requests 2000] [--rounds 3]
                                                             [--items 4] [--concurrency 8]
                                                             [--every 0.5]

1. Builds three copies of the store of ``serve_bench.py`` (breast-cancer data, 15 trained
   logistic regressions over five column groups) and starts a real ``polydom serve`` on
   each, on loopback, all with a featurizer of raw items (``{"size", "x"}``): one plain,
   one with ``--record-timings --timings-every EVERY`` (a write to its store every EVERY
   seconds while the load runs), one with ``--record-timings`` writing only at shutdown
   (the request path's append alone).
2. In each of ``--rounds`` rounds, sends ``--requests`` ``POST /predict`` requests of
   ``--items`` raw items each to every server in turn (the order rotates between rounds,
   so the machine's load falls on all alike), ``--concurrency`` in flight, and records
   every request's latency.
3. Prints per server the median over rounds of p50 / p99 latency and requests/s, and the
   ratios to the plain server; then stops every server with SIGTERM (a clean shutdown:
   the last write) and compares the timings each recording server reported on
   ``/metrics`` with the rows in its store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from serve_bench import GROUPS, N_MAX, build_store, load, pct, table
from sklearn.datasets import load_breast_cancer

import polydom
from storage import IndexStore

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _size(item: dict) -> float:
    return item["size"]


def _group(cols: list[int]):
    return lambda item: [item["x"][c] for c in cols]


def featurizer() -> polydom.Featurizer:
    """Raw items ``{"size": n, "x": [30 numbers]}``: one feature per column group."""
    fz = polydom.Featurizer(size=_size)
    for name, cols in GROUPS.items():
        fz.add(name, _group(cols), len(cols))
    return fz


def start(url: str, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "polydom.app.cli", "serve", url, "--port", "0",
         "--featurizer", "serve_timings_bench:featurizer", *args],
        cwd=HERE, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"polydom serve did not start: {line!r}")
    return proc, line.split()[-1]


def metric(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--items", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--every", type=float, default=0.5)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    X, _ = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)

    def request() -> tuple:
        rows = rng.integers(len(X), size=args.items)
        sizes = rng.uniform(0.0, N_MAX, args.items)
        items = [{"size": float(s), "x": X[r].tolist()} for s, r in zip(sizes, rows,
                                                                         strict=True)]
        return ("POST", "/predict", {"budget": 600.0, "items": items})

    servers = {  # name -> extra arguments of `polydom serve`
        "plain": [],
        "record, writes every EVERY s": ["--record-timings", "--timings-every", str(args.every)],
        "record, writes at shutdown": ["--record-timings", "--timings-every", "86400"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        urls = {name: f"sqlite:///{tmp}/store{k}.db" for k, name in enumerate(servers)}
        for url in urls.values():
            build_store(url)
        running = {name: start(urls[name], *extra) for name, extra in servers.items()}
        stats: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
        errors = dict.fromkeys(servers, 0)
        texts: dict[str, str] = {}
        try:
            names = list(servers)
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:  # rotated
                    reqs = [request() for _ in range(args.requests)]
                    answers, seconds, wall = asyncio.run(
                        load(running[name][1], reqs, args.concurrency))
                    errors[name] += sum(not isinstance(a, dict) for a in answers)
                    stats[name].append((pct(seconds, 50), pct(seconds, 99),
                                        len(seconds) / wall))
                    shown = name.replace("EVERY", f"{args.every:g}")
                    print(f"round {r}: {shown}: {len(seconds) / wall:,.0f} req/s, p50 "
                          f"{1e3 * pct(seconds, 50):.2f} ms, p99 {1e3 * pct(seconds, 99):.2f} ms",
                          flush=True)
            import httpx

            for name in servers:
                texts[name] = httpx.get(f"{running[name][1]}/metrics", timeout=30).text
        finally:
            for proc, _ in running.values():  # SIGTERM: a clean shutdown, the last write
                proc.send_signal(signal.SIGTERM)
            for proc, _ in running.values():
                proc.wait(timeout=120)
        stored_rows = {}
        for name, url in urls.items():
            with IndexStore(url, read_only=True) as store:
                stored_rows[name] = len(store.timings())

    def med(name: str, k: int) -> float:
        return statistics.median(s[k] for s in stats[name])

    rows = []
    for name in servers:
        rows.append([name.replace("EVERY", f"{args.every:g}"), f"{args.rounds} x {args.requests}",
                     f"{med(name, 2):,.0f}", f"{1e3 * med(name, 0):.2f}",
                     f"{1e3 * med(name, 1):.2f}",
                     f"{med(name, 2) / med('plain', 2):.3f}",
                     f"{med(name, 0) / med('plain', 0):.3f}", f"{errors[name]}"])
    print(f"\nPOST /predict, {args.items} raw items per request, {args.concurrency} in "
          "flight, the servers in rotating order (medians over rounds)\n")
    print(table(["server", "requests", "req/s", "p50 ms", "p99 ms", "req/s vs plain",
                 "p50 vs plain", "errors"], rows))
    for name in list(servers)[1:]:
        text = texts[name]
        recorded = metric(text, "polydom_timings_recorded_total")
        dropped = metric(text, "polydom_timings_dropped_total")
        print(f"\n{name.replace('EVERY', f'{args.every:g}')}: before shutdown recorded "
              f"{recorded:.0f}, stored {metric(text, 'polydom_timings_stored_total'):.0f}, "
              f"dropped {dropped:.0f}, buffered {metric(text, 'polydom_timings_buffered'):.0f}, "
              f"write errors {metric(text, 'polydom_timings_write_errors_total'):.0f}; rows in "
              f"served_timings after its clean shutdown: {stored_rows[name]} "
              f"(recorded - dropped = {recorded - dropped:.0f})")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
