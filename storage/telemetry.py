"""Telemetry in the store: the seconds each atomic feature took on served items.

:func:`append_timings` checks every record against a published build (a known atomic
feature, a size inside the build's domain, seconds in [1 ns, 1 day]) before it opens a
transaction, and writes all of them or none; :func:`read_timings` returns them in arrival
order and checks every row it reads again, whatever wrote it (a writer of the database
needs no polydom to add rows: ``0`` s, ``5e-324`` s or ``1e300`` s would scale a curve to
zero or beyond any budget).  Rows live in ``served_timings`` (:mod:`storage.schema`), whose
CHECK constraints hold the same bounds on both dialects for stores made since they exist.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa

from polydom.curves.units import (
    MAX_TIMING_SECONDS,
    MIN_TIMING_SECONDS,
    check_seconds,
    check_size_value,
    seconds_to_store,
    unit_name,
)
from polydom.errors import InvalidArgumentError, TelemetryError
from storage import schema as S
from storage.build_records import build_row
from storage.cost_model_rows import atom_order
from storage.database import Database, now

__all__ = ["StoredTiming", "TelemetryError", "append_timings", "read_timings"]

#: One stored timing: (id, build_id, feature, size, seconds).
StoredTiming = tuple[int, int, str, float, float]


def _record(record: Any, k: int) -> tuple[str, float, float]:
    try:
        feature, size, seconds = record
    except (TypeError, ValueError):
        raise TelemetryError(
            f"timing record {k} must be (feature, size, seconds), got {record!r}"
        ) from None
    return feature, size, seconds


#: Largest id a database integer holds (build ids, timing ids).
MAX_ID = 2**63 - 1


def check_id(value: Any, name: str, least: int, error: type[Exception]) -> int:
    """``value`` as an int in ``[least, MAX_ID]``, else ``error`` naming ``name``.  O(1)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not least <= value <= MAX_ID:
        shown = (f"an integer of {value.bit_length()} bits"
                 if isinstance(value, int) and value > MAX_ID else repr(value)[:80])
        raise error(f"{name} must be an integer in [{least}, 2**63 - 1], got {shown}")
    return int(value)


def check_read_window(since_id: Any, build_id: Any = None, last: Any = None,
                      until_id: Any = None) -> tuple[int, int | None, int | None, int | None]:
    """The checked window of a telemetry read: ``(since_id, build_id, last, until_id)``,
    ids as in :func:`check_id` (``None`` kept for the optional ones), ``last`` a positive
    integer or ``None``.  O(1).

    Raises
    ------
    polydom.errors.InvalidArgumentError
        Naming the first bad field.
    """
    since_id = check_id(since_id, "since_id", 0, InvalidArgumentError)
    if until_id is not None:
        until_id = check_id(until_id, "until_id", 0, InvalidArgumentError)
    if build_id is not None:
        build_id = check_id(build_id, "build_id", 0, InvalidArgumentError)
    if last is not None and (isinstance(last, bool) or not isinstance(last, (int, np.integer))
                             or last < 1):
        raise InvalidArgumentError(f"last must be a positive integer, got {last!r}")
    return since_id, build_id, (None if last is None else int(last)), until_id


def _check_seal(db: Database, conn: sa.Connection, build_id: int, seal: str) -> None:
    """Refuse timings measured against a build whose seal is ``seal`` when the store's build
    ``build_id`` has another seal (or none): they belong to another store's build."""
    mine = None
    if "build_seals" in db.tables:
        mine = conn.execute(sa.select(S.build_seals.c.index_digest).where(
            S.build_seals.c.build_id == build_id)).scalar()
    if mine != seal:
        raise TelemetryError(
            f"timings of the build sealed {str(seal)[:12]!r}... are not for build {build_id} "
            f"of {db.display_url!r} (sealed {str(mine)[:12]!r}...): another store's build; "
            "nothing stored")


def _unit(info: str | None, build_id: int) -> None:
    """Refuse timings for a build whose cost unit is not a unit of time."""
    try:
        parsed = json.loads(info or "{}")
    except ValueError:
        parsed = {}
    try:
        seconds_to_store(unit_name(parsed), f"timings for build {build_id}")
    except InvalidArgumentError as exc:
        raise TelemetryError(str(exc)) from None


def append_timings(
    db: Database, records: Iterable[Sequence[Any]], build_id: int | None = None,
    seal: str | None = None,
) -> tuple[int, int]:
    """Store ``(feature, size, seconds)`` records against a build, all or none.

    Every record is checked before anything is written: ``feature`` an atomic feature of the
    build, ``size`` finite and inside the build's domain ``[n_min, n_max]``, ``seconds``
    finite, ``> 0`` and bounded (:func:`polydom.curves.units.check_seconds`).  The build's
    cost unit must be a unit of time (timings are seconds; a build in ``"units"`` refuses
    them).

    Runtime complexity: O(R) checks, one transaction of R rows.

    Parameters
    ----------
    db : Database
    records : iterable of (str, float, float)
    build_id : int, optional
        The build that served the items (default: the current build).
    seal : str, optional
        The seal of the build that served them (``index.info["seal"]``): the store's build
        must have it, else nothing is stored (timings of another store's build).

    Returns
    -------
    (int, int)
        Ids of the first and last row written; ``(0, -1)`` when ``records`` is empty.

    Raises
    ------
    polydom.errors.TelemetryError
        A ``ValueError`` naming the first bad record (its position and value); nothing is
        stored.
    """
    if build_id is not None:
        build_id = check_id(build_id, "build", 1, TelemetryError)
    db.check_writable()
    with db.read() as conn:
        build = build_row(db, conn, build_id)
        if build.status != "complete":
            raise TelemetryError(f"build {build.id} is {build.status}, not a published build")
        _unit(build.info, int(build.id))
        if seal is not None:
            _check_seal(db, conn, int(build.id), seal)
        atoms = set(atom_order(conn, int(build.id)))
        lo, hi = float(build.n_min), float(build.n_max)
    rows = []
    stamp = now()
    for k, record in enumerate(records):
        feature, size, seconds = _record(record, k)
        if not isinstance(feature, str) or feature not in atoms:
            raise TelemetryError(
                f"timing record {k}: unknown feature {feature!r}; build {build.id}'s atoms: "
                f"{sorted(atoms)}"
            )
        size = check_size_value(size, f"timing record {k}: size")
        seconds = check_seconds(seconds, f"timing record {k}: seconds")
        if not lo <= size <= hi:
            raise TelemetryError(
                f"timing record {k}: size {size!r} is outside build {build.id}'s domain "
                f"[{lo:g}, {hi:g}]"
            )
        rows.append({"build_id": int(build.id), "feature": feature, "size": size,
                     "seconds": seconds, "recorded_at": stamp})
    if not rows:
        return 0, -1
    db.add_tables(("served_timings",))
    t = S.served_timings
    with db.write() as conn:
        first = conn.execute(sa.select(sa.func.max(t.c.id))).scalar() or 0
        conn.execute(t.insert(), rows)
        last = conn.execute(sa.select(sa.func.max(t.c.id))).scalar()
    return int(first) + 1, int(last)


def read_timings(
    db: Database,
    since_id: int = 0,
    features: Iterable[str] | None = None,
    last: int | None = None,
    until_id: int | None = None,
    build_id: int | None = None,
) -> list[StoredTiming]:
    """Stored timings with ``since_id < id <= until_id`` (no upper bound by default) and of
    build ``build_id`` (any build by default), oldest first (the newest ``last`` per
    feature).

    Every row read is checked (:func:`_checked_row`): the table's CHECK constraints are
    not trusted, since a store made before them, or altered, may lack them.

    Runtime complexity: one query over the rows read.

    Raises
    ------
    ValueError
        If ``since_id`` is not an integer >= 0, ``until_id`` or ``build_id`` not an
        integer >= 0 or ``last`` not a positive integer.
    polydom.errors.TelemetryError
        A stored row outside the bounds (seconds not in [1 ns, 1 day] or not a finite
        number, a size not finite and >= 0, a feature not a text): one line naming its id.
    """
    since_id, build_id, last, until_id = check_read_window(since_id, build_id, last, until_id)
    if "served_timings" not in db.tables:
        return []
    t = S.served_timings
    query = sa.select(t.c.id, t.c.build_id, t.c.feature, t.c.size, t.c.seconds).where(
        t.c.id > int(since_id)).order_by(t.c.id)
    if until_id is not None:
        query = query.where(t.c.id <= int(until_id))
    if build_id is not None:
        query = query.where(t.c.build_id == int(build_id))
    wanted = None if features is None else set(features)
    if wanted is not None:
        query = query.where(t.c.feature.in_(sorted(wanted)))
    with db.read() as conn:
        rows = [_checked_row(db, r) for r in conn.execute(query)]
    if last is None:
        return rows
    kept: dict[str, list[StoredTiming]] = {}
    for row in reversed(rows):
        bucket = kept.setdefault(row[2], [])
        if len(bucket) < last:
            bucket.append(row)
    return sorted((r for bucket in kept.values() for r in bucket), key=lambda r: r[0])


def _checked_row(db: Database, row: Any) -> StoredTiming:
    """A stored row as a :data:`StoredTiming`, or one line naming it: the bounds
    :func:`append_timings` checks, whatever wrote the row.  O(1)."""
    ident, build, feature, size, seconds = row
    problem = None
    if not isinstance(feature, str):
        problem = f"feature {feature!r:.40} is not a text"
    elif not (isinstance(size, (int, float)) and not isinstance(size, bool)
              and math.isfinite(size) and size >= 0):
        problem = f"size {size!r:.40} is not a finite number >= 0"
    elif not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
              and math.isfinite(seconds)
              and MIN_TIMING_SECONDS <= seconds <= MAX_TIMING_SECONDS):
        problem = (f"seconds {seconds!r:.40} is outside [{MIN_TIMING_SECONDS:g}, "
                   f"{MAX_TIMING_SECONDS:g}]")
    if problem is not None:
        raise TelemetryError(
            f"{db.display_url!r}: stored timing id {ident}: {problem} (written outside "
            "polydom); refusing the timings (delete that row to use the others)")
    return int(ident), int(build), feature, float(size), float(seconds)
