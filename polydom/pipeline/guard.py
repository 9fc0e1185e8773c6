"""The in-situ guard of a stored build: calibrate it on held-out timings and publish it.

:func:`guard_index` is what ``polydom build`` runs after a build whose config names a
``target_overrun`` and what ``polydom calibrate`` runs on a store's current build: the
timings (seconds per held-out item, per atom) are converted into the store's unit
(:func:`polydom.curves.units.seconds_to_store`), :meth:`polydom.Index.calibrated` gives
every candidate its split-conformal factor or offset at ``target_overrun`` (and at each of
``levels``, for :meth:`polydom.Index.at_overrun`), and the calibrated index is published as
the new current build (:func:`polydom.pipeline.recalibrate.publish_index`: only while the
build it came from is still current).  No model is retrained; the models are stored again
with the new build.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.units import seconds_to_store, unit_name
from polydom.index.built import Index
from polydom.pipeline.recalibrate import publish_index

__all__ = ["guard_index"]


def guard_index(
    url: str | os.PathLike,
    index: Index,
    sizes: Sequence[float] | np.ndarray,
    timings: Mapping[str, Sequence[float] | np.ndarray],
    target_overrun: float,
    levels: Sequence[float] = (),
    score: str = "auto",
    seed: int = 0,
    key: bytes | str | None = None,
    source: str = "timings",
    replaces: int | None | str = "origin",
) -> Index:
    """Calibrate ``index`` (a build of the store at ``url``) at ``target_overrun`` on the
    held-out in-situ ``timings`` and publish it; the published index (its
    ``info["build_id"]`` the new build).

    ``timings[atom][i]`` is the seconds atom ``atom`` took on held-out item ``i`` of size
    ``sizes[i]``, timed as serving computes it (docs/in_situ.md); ``source`` says where
    they came from, in the new build's parameters.  The new build is published only while
    build ``replaces`` is current (default: ``index``'s own build; None: whatever is).

    Runtime complexity: O(L * K * (A + I)) for L levels, K candidates, A atoms and I items,
    plus a sweep and one publish (the models stored again).

    Raises
    ------
    ValueError
        As :meth:`polydom.Index.calibrated` (too few items for the target, an atom a
        candidate needs without timings, a negative or NaN timing), or for a store whose
        unit is not one of time.
    CurrentBuildChangedError
        When another build was published meanwhile (nothing replaces it).
    """
    per_second = seconds_to_store(unit_name(index.info), "timings")
    converted = {atom: np.asarray(t, dtype=np.float64) * per_second
                 for atom, t in timings.items()}
    guarded = index.calibrated(np.asarray(sizes, dtype=np.float64), converted,
                               target_overrun, score=score, levels=levels, seed=seed)
    origin = index.info.get("build_id")
    note: dict[str, Any] = {"guarded_from": origin, "target_overrun": float(target_overrun),
                            "levels": [float(v) for v in levels], "score": score,
                            "items": int(np.asarray(sizes).size), "source": str(source)}
    publish_index(url, guarded, note, key=key,
                  replaces=origin if replaces == "origin" else replaces)
    return guarded
