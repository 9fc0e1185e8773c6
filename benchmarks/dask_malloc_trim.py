"""One scikit-learn expansion in-process vs in a Dask worker, with and without the nanny's
``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``).

    PYTHONPATH=$PWD python benchmarks/dask_malloc_trim.py [--repeats 10]

The expansion: LogisticRegression (defaults), 3-fold CV, on the first four pixel rows of the
digits (32 columns), timed inside the process that runs it (median of ``--repeats`` after one
warm-up), BLAS capped at one thread everywhere (as the nanny does).  Each setting runs in a
fresh Python process: a ``LocalCluster(processes=True)`` writes the nanny's variables into
the calling process's ``os.environ`` too, so they would leak from one setting into the next.
Prints one line per setting and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings

import dask
import distributed
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from threadpoolctl import threadpool_limits


def one_expansion(_: int = 0) -> tuple[float, float, str]:
    """Wall and CPU seconds (this thread's: the CPU time is what a loaded machine does not
    inflate) of one 3-fold CV fit, and this process's MALLOC_TRIM_THRESHOLD_."""
    X, y = load_digits(return_X_y=True)
    X = X[:, :32]
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs convergence: the same work every time
        start, cpu = time.perf_counter(), time.thread_time()
        cross_val_score(LogisticRegression(), X, y, cv=3)
        seconds, cpu = time.perf_counter() - start, time.thread_time() - cpu
    return seconds, cpu, os.environ.get("MALLOC_TRIM_THRESHOLD_", "unset")


def median_ms(run, repeats: int) -> tuple[float, float, str]:
    run(0)  # warm-up: imports, first allocations
    results = [run(i) for i in range(repeats)]
    return (1000 * statistics.median(r[0] for r in results),
            1000 * statistics.median(r[1] for r in results), results[0][2])


def in_worker(repeats: int, trim: object) -> tuple[float, float, str]:
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": trim}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        return median_ms(lambda i: client.submit(one_expansion, i, pure=False).result(),
                         repeats)


MODES = {
    "in-process": lambda repeats: median_ms(one_expansion, repeats),
    "Dask worker, nanny default": lambda repeats: in_worker(repeats, 65536),
    "Dask worker, MALLOC_TRIM_THRESHOLD_: null": lambda repeats: in_worker(repeats, None),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--mode", choices=list(MODES), help="run one setting here")
    args = parser.parse_args()
    if args.mode:
        ms, cpu_ms, trim = MODES[args.mode](args.repeats)
        print(f"{args.mode:42s} median wall {ms:6.1f} ms, CPU {cpu_ms:6.1f} ms   "
              f"MALLOC_TRIM_THRESHOLD_={trim}")
        return
    print(f"load average before: {os.getloadavg()}")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    for mode in [*MODES, "in-process"]:
        subprocess.run([sys.executable, __file__, "--mode", mode, "--repeats",
                        str(args.repeats)], check=True, env=env)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
