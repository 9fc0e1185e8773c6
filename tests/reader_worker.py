"""A reader process for the many-readers tests: look up, refresh, check every answer.

    python tests/reader_worker.py URL EXPECTED_JSON SECONDS

EXPECTED_JSON holds ``{"queries": [[size, budget], ...], "answers": {build_id: [key or
null, ...]}}``.  The worker opens the index once, then until SECONDS have passed: refreshes
it and answers every query, counting an iteration as *mixed* when its answers are not
exactly those of the build the index reports.  Prints one JSON line: lookups, errors,
mixed, builds (the build ids seen, in order) and seconds.
"""

from __future__ import annotations

import json
import sys
import time

import polydom


def main(url: str, expected_path: str, seconds: float) -> dict:
    with open(expected_path) as f:
        expected = json.load(f)
    queries = [tuple(q) for q in expected["queries"]]
    answers = {int(b): a for b, a in expected["answers"].items()}
    index = polydom.open_index(url)
    lookups = errors = mixed = 0
    builds: list[int] = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            index.refresh()
            build = index.info["build_id"]
            got = []
            for size, budget in queries:
                hit = index.lookup(size, budget)
                got.append(None if hit is None else hit.key)
            lookups += len(queries)
        except Exception as exc:  # counted and reported, never hidden
            errors += 1
            print(f"reader error: {exc!r}", file=sys.stderr)
            continue
        if not builds or builds[-1] != build:
            builds.append(build)
        if got != answers.get(build):
            mixed += 1
    return {"lookups": lookups, "errors": errors, "mixed": mixed, "builds": builds,
            "seconds": time.perf_counter() - start}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], float(sys.argv[3]))))
