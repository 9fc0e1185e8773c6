"""Telemetry of served sets in the store: which candidate served an item, the order its atoms
ran, each one's seconds and the total (issue 37).

:func:`check_served_sets` checks records against a published build (its atoms, its domain,
its seal) before anything is written; :func:`append_served_sets` writes all of them or none
(``served_sets``, :mod:`storage.schema`); :func:`read_served_sets` returns them in arrival
order, each row checked when read (well-formed JSON, the build's atoms, times as a write
accepts them, the total their sum): a row that fails raises
:class:`polydom.errors.DamagedStoreError` naming it, never a set nobody served.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.errors import DamagedStoreError, TelemetryError
from polydom.index.served_set import ServedSet, check_served_set
from storage import schema as S
from storage.build_records import build_row
from storage.codec import canonical_json
from storage.cost_model_rows import atom_order
from storage.database import Database, now
from storage.telemetry import _check_seal, _unit, check_id, check_read_window

__all__ = ["StoredServedSet", "append_served_sets", "check_served_sets", "read_served_sets"]

#: Served sets one call reads at most unless asked (``last``): a bounded answer.
READ_LIMIT = 1_000_000


@dataclass(frozen=True)
class StoredServedSet:
    """One stored served set: its row id, the build that served it, and the record."""

    id: int
    build_id: int
    record: ServedSet


def _key_json(candidate: Any) -> str:
    return canonical_json(list(candidate) if isinstance(candidate, tuple) else candidate,
                          "a served set's candidate")


def check_served_sets(
    db: Database, conn: sa.Connection, records: Iterable[Any], build_id: int | None,
    seal: str | None,
) -> tuple[int, list[dict[str, Any]]]:
    """The build's id and the rows of ``records`` (each a :class:`ServedSet` or a
    ``(candidate, size, atoms, seconds)`` tuple), checked: atoms of the build, a size in its
    domain, times finite, ``> 0`` and bounded, a build whose unit is one of time and (with
    ``seal``) that seal.  Writes nothing.

    Runtime complexity: O(total atoms) plus two queries.

    Raises
    ------
    polydom.errors.TelemetryError
        Naming the first bad record and field.
    """
    build = build_row(db, conn, build_id)
    if build.status != "complete":
        raise TelemetryError(f"build {build.id} is {build.status}, not a published build")
    _unit(build.info, int(build.id))
    if seal is not None:
        _check_seal(db, conn, int(build.id), seal)
    atoms = set(atom_order(conn, int(build.id)))
    lo, hi = float(build.n_min), float(build.n_max)
    rows, stamp = [], now()
    for k, record in enumerate(records):
        try:
            candidate, size, names, seconds = tuple(record)[:4]
        except (TypeError, ValueError):
            raise TelemetryError(
                f"served set {k} must be (candidate, size, atoms, seconds), got "
                f"{repr(record)[:80]}") from None
        try:
            rec = check_served_set(candidate, size, names, seconds)
        except TelemetryError as exc:
            raise TelemetryError(f"served set {k}: {exc}") from None
        unknown = sorted(set(rec.atoms) - atoms)
        if unknown:
            raise TelemetryError(
                f"served set {k}: unknown atom(s) {unknown[:5]}; build {build.id}'s atoms: "
                f"{sorted(atoms)}")
        if not lo <= rec.size <= hi:
            raise TelemetryError(f"served set {k}: size {rec.size!r} is outside build "
                                 f"{build.id}'s domain [{lo:g}, {hi:g}]")
        rows.append({"build_id": int(build.id), "candidate": _key_json(rec.candidate),
                     "size": rec.size, "atoms": canonical_json(list(rec.atoms)),
                     "seconds": canonical_json(list(rec.seconds)), "total": rec.total,
                     "recorded_at": stamp})
    return int(build.id), rows


def append_served_sets(
    db: Database, records: Iterable[Any], build_id: int | None = None,
    seal: str | None = None, rows: list[dict[str, Any]] | None = None,
) -> int:
    """Store served sets against a build, all or none (:func:`check_served_sets`; ``rows``:
    rows it already made).  Returns how many were written.

    Runtime complexity: O(total atoms) checks, one transaction.
    """
    if build_id is not None:
        build_id = check_id(build_id, "build", 1, TelemetryError)
    db.check_writable()
    if rows is None:
        with db.read() as conn:
            _, rows = check_served_sets(db, conn, records, build_id, seal)
    if not rows:
        return 0
    db.add_tables(("served_sets",))
    with db.write() as conn:
        conn.execute(S.served_sets.insert(), rows)
    return len(rows)


def _damaged(row: Any, why: str) -> DamagedStoreError:
    return DamagedStoreError(f"served set row {int(row.id)} of build {int(row.build_id)} is "
                             f"damaged: {why}")


def _checked_row(row: Any, atoms_of: dict[int, set[str]], conn: sa.Connection) -> ServedSet:
    """The record a stored row holds, checked as a write checks it."""
    try:
        candidate = json.loads(row.candidate)
        names = json.loads(row.atoms)
        seconds = json.loads(row.seconds)
    except (TypeError, ValueError) as exc:
        raise _damaged(row, f"not JSON ({exc})") from None
    try:
        rec = check_served_set(candidate, row.size, names, seconds)
    except TelemetryError as exc:
        raise _damaged(row, str(exc)) from None
    build = int(row.build_id)
    if build not in atoms_of:
        atoms_of[build] = set(atom_order(conn, build))
    if atoms_of[build] and not set(rec.atoms) <= atoms_of[build]:
        raise _damaged(row, f"atoms {sorted(set(rec.atoms) - atoms_of[build])[:5]} are not "
                            "the build's")
    total = float(row.total)
    if not math.isclose(total, rec.total, rel_tol=1e-9, abs_tol=1e-15):
        raise _damaged(row, f"total {total!r} is not the sum of its times {rec.total!r}")
    return rec


def read_served_sets(
    db: Database, since_id: int = 0, build_id: int | None = None, last: int | None = None,
) -> list[StoredServedSet]:
    """Stored served sets with ``id > since_id`` (of build ``build_id`` when given), oldest
    first; the newest ``last`` when given, else at most :data:`READ_LIMIT` (the newest).
    Every row is checked when read.  Reading never writes: a store without the table has
    none.

    Runtime complexity: one query over the rows read, O(total atoms) checks.

    Raises
    ------
    ValueError
        On a bad ``since_id``, ``build_id`` or ``last``.
    polydom.errors.DamagedStoreError
        Naming the first row that fails its checks.
    """
    since_id, build_id, last, _ = check_read_window(since_id, build_id, last)
    if "served_sets" not in db.tables:
        return []
    t = S.served_sets
    query = sa.select(t.c.id, t.c.build_id, t.c.candidate, t.c.size, t.c.atoms,
                      t.c.seconds, t.c.total).where(t.c.id > since_id)
    if build_id is not None:
        query = query.where(t.c.build_id == build_id)
    query = query.order_by(t.c.id.desc()).limit(int(last or READ_LIMIT))
    atoms_of: dict[int, set[str]] = {}
    with db.read() as conn:
        rows = list(conn.execute(query))
        out = [StoredServedSet(int(r.id), int(r.build_id), _checked_row(r, atoms_of, conn))
               for r in rows]
    return out[::-1]
