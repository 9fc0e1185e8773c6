"""One publisher process of the publish race tests (imports only polydom and storage, so
that spawned workers start quickly)."""

from __future__ import annotations

import time

import lattice.expansion
import polydom
import storage

ATOMS = {"a": "1 + n", "b": "2", "c": "0.5*n"}
SETS = [frozenset(s) for s in ({"a"}, {"b"}, {"c"}, {"a", "b"}, {"a", "c"}, {"b", "c"})]


def publish(url: str, learner: str, start_at: float) -> str:
    """One publisher: begin a build, store its expansions, publish; ``"ok <id>"`` or the
    one-line error it ended with."""
    try:
        with storage.IndexStore(url) as st:
            build_id = st.begin_build({"alpha": 1.0, "learner": learner}, ATOMS)
            cache = st.expansion_cache(build_id)
            while time.time() < start_at:  # every publisher writes at the same moment
                time.sleep(0.001)
            for i, fs in enumerate(SETS):
                if fs not in cache:
                    cache[fs] = lattice.Expansion(fs, 0.5 + 0.01 * i + 0.001 * len(learner))
            candidates = [polydom.Candidate("+".join(sorted(fs)), cache[fs].accuracy,
                                            polydom.CostCurve.total(
                                                [polydom.CostCurve.parse(ATOMS[a]) for a in fs]),
                                            fs) for fs in SETS]
            st.publish(build_id, polydom.Index(
                polydom.PolyDomIndex.build(candidates, 0.0, 100.0), ATOMS))
            return f"ok {build_id}"
    except Exception as exc:  # noqa: BLE001 - reported to the test, which names it
        return f"{type(exc).__name__}: {exc}"




def create(url: str, start_at: float) -> str:
    """Open (create) the store at ``url`` at ``start_at`` and write to it at once (begin a
    build): ``"ok"`` or the one-line error."""
    while time.time() < start_at:
        time.sleep(0.001)
    try:
        with storage.IndexStore(url) as st:
            st.begin_build({"alpha": 1.0, "learner": "creator"}, ATOMS)
            return "ok"
    except Exception as exc:  # noqa: BLE001 - reported to the test, which names it
        return f"{type(exc).__name__}: {exc}"
