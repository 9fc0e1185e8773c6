"""ServedSet: one served item as the set that served it paid it (issue 37).

The candidate that served the item, the item's size, the atoms in the order they ran, each
one's seconds and the total.  A set's first atom pays the set's start and the shared steps
it uses; the next ones only what is left, which per-atom timings cannot tell apart.  Made
by serving (:func:`polydom.serving.telemetry.served_set_of`), stored by
:mod:`storage.served_sets`, fitted by :mod:`polydom.curves.served_fit`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from polydom.curves.units import check_seconds, check_size_value
from polydom.errors import TelemetryError

__all__ = ["MAX_SET_ATOMS", "ServedSet", "check_served_set"]


class ServedSet(NamedTuple):
    """One served item: the candidate that served it (its key), the item's size, the atoms
    in the order they ran, each atom's seconds (same order) and their total."""

    candidate: Any
    size: float
    atoms: tuple[str, ...]
    seconds: tuple[float, ...]
    total: float


#: Atoms one served-set record may hold (a larger one is refused: a bounded row).
MAX_SET_ATOMS = 4096


def check_served_set(candidate: Any, size: Any, atoms: Any, seconds: Any) -> ServedSet:
    """A :class:`ServedSet` after checking it: a candidate key (a string, or a tuple or list
    of strings), a finite size >= 0, one or more distinct non-empty atom names (at most
    :data:`MAX_SET_ATOMS`), as many seconds, each finite, > 0 and bounded
    (:func:`polydom.curves.units.check_seconds`); the total is their sum.

    Runtime complexity: O(atoms).

    Raises
    ------
    polydom.errors.TelemetryError
        A ``ValueError`` naming the bad field.
    """
    if isinstance(candidate, list):
        candidate = tuple(candidate)
    if not (isinstance(candidate, str) or (isinstance(candidate, tuple) and all(
            isinstance(k, str) for k in candidate))):
        raise TelemetryError(
            f"a served set's candidate must be a string or a tuple of strings, got "
            f"{repr(candidate)[:80]}")
    if isinstance(atoms, str) or not isinstance(atoms, (tuple, list)) \
            or not isinstance(seconds, (tuple, list)):
        raise TelemetryError(
            f"a served set's atoms and seconds must be lists, got {repr(atoms)[:80]} and "
            f"{repr(seconds)[:80]}")
    if not atoms or len(atoms) != len(seconds) or len(atoms) > MAX_SET_ATOMS:
        raise TelemetryError(
            f"a served set needs 1 to {MAX_SET_ATOMS} atoms with one time each, got "
            f"{len(atoms)} atoms and {len(seconds)} times")
    if len(set(atoms)) != len(atoms):
        raise TelemetryError(f"a served set names an atom twice: {list(atoms)[:20]}")
    for a in atoms:
        if not isinstance(a, str) or not a:
            raise TelemetryError(f"a served set's atom must be a non-empty string, got {a!r}")
    size = check_size_value(size, "a served set's size")
    times = tuple(check_seconds(t, f"the time of atom {a!r} of a served set")
                  for a, t in zip(atoms, seconds, strict=True))
    return ServedSet(candidate, size, tuple(atoms), times, math.fsum(times))
