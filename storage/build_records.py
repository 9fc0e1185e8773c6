"""A store's builds as rows: a build's ``builds`` row, the current build, the listing of
every build, a build's rows of the ``skyline_all`` view and the lookup in plain SQL.

Read by both the read path and the write path (which checks a build's row before it
publishes); every function reads in one transaction and writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from polydom.errors import InvalidArgumentError
from polydom.index.polydom_index import IndexAll, PolyDomIndex
from polydom.index.table import SkylineTable
from storage import schema as S
from storage.database import Database

__all__ = [
    "TABLE_KINDS",
    "BuildRecord",
    "build_row",
    "current_build_id",
    "list_builds",
    "skyline_rows",
    "sql_lookup",
]

#: The skyline table classes a build may be published as, by their stored name.
TABLE_KINDS: dict[str, type[SkylineTable]] = {
    "PolyDomIndex": PolyDomIndex,
    "IndexAll": IndexAll,
}


@dataclass(frozen=True)
class BuildRecord:
    """One row of :func:`list_builds`."""

    build_id: int
    status: str
    is_current: bool
    created_at: str
    completed_at: str | None
    alpha: float | None
    delta: float | None
    learner: str | None
    n_min: float | None
    n_max: float | None
    n_features: int
    n_expansions: int
    n_candidates: int
    n_ranges: int
    n_entries: int
    params: dict = field(repr=False, default_factory=dict)
    #: The error of a failed build (its first line), else None.
    error: str | None = None
    #: Its number in the publication log (``index.info["publication"]`` of the current
    #: build; what ``open_index(min_publication=)`` compares), None before it is published.
    publication: int | None = None


def build_row(db: Database, conn: sa.Connection, build_id: int | None) -> sa.Row:
    """The ``builds`` row of ``build_id`` (the current build when None).

    Runtime complexity: one indexed query.

    Raises
    ------
    ValueError
        If there is no current build, or ``build_id`` is not an integer or unknown.
    """
    b = S.builds
    if build_id is None:
        row = conn.execute(sa.select(b).where(b.c.is_current)).first()
        if row is None:
            raise InvalidArgumentError(f"url {db.display_url!r} has no complete build yet")
        return row
    if isinstance(build_id, bool) or not isinstance(build_id, (int, np.integer)):
        raise InvalidArgumentError(f"build must be an integer build id, got {build_id!r}")
    row = conn.execute(sa.select(b).where(b.c.id == int(build_id))).first()
    if row is None:
        raise InvalidArgumentError(f"build {build_id!r} does not exist in {db.display_url!r}")
    return row


def current_build_id(db: Database) -> int | None:
    """Id of the current (latest published) build; None when nothing is published yet.

    Runtime complexity: one indexed query.
    """
    b = S.builds
    with db.read() as conn:
        found = conn.execute(sa.select(b.c.id).where(b.c.is_current)).scalar()
    return None if found is None else int(found)


def list_builds(db: Database) -> list[BuildRecord]:
    """Every build, oldest first, with its status, row counts and publication number.

    Runtime complexity: one query over the ``build_summary`` view, one over the log.
    """
    with db.read() as conn:
        rows = conn.execute(sa.text("SELECT * FROM build_summary ORDER BY build_id")).all()
        stored = {r.id: r for r in conn.execute(
            sa.select(S.builds.c.id, S.builds.c.params, S.builds.c.info))}
        numbers = ({int(r.build_id): int(r.sequence) for r in conn.execute(
            sa.select(S.publications.c.build_id, S.publications.c.sequence))}
            if "publications" in db.tables else {})
    return [
        BuildRecord(
            build_id=int(r.build_id),
            status=r.status,
            is_current=bool(r.is_current),
            created_at=r.created_at,
            completed_at=r.completed_at,
            alpha=r.alpha,
            delta=r.delta,
            learner=r.learner,
            n_min=r.n_min,
            n_max=r.n_max,
            n_features=int(r.n_features),
            n_expansions=int(r.n_expansions),
            n_candidates=int(r.n_candidates),
            n_ranges=int(r.n_ranges),
            n_entries=int(r.n_entries),
            params=json.loads(stored[r.build_id].params),
            error=_error(r.status, stored[r.build_id].info),
            publication=numbers.get(int(r.build_id)),
        )
        for r in rows
    ]


def _error(status: str, info: str | None) -> str | None:
    if status != "failed" or not info:
        return None
    try:
        return json.loads(info).get("error")
    except (ValueError, AttributeError):
        return None


def skyline_rows(db: Database, build: int | None = None) -> list[dict[str, Any]]:
    """Rows of the ``skyline_all`` view for one complete build (current by default).

    Runtime complexity: one query; reads no model blobs.
    """
    with db.read() as conn:
        build_id = int(build_row(db, conn, build).id)
        rows = conn.execute(
            sa.text("SELECT * FROM skyline_all WHERE build_id = :b ORDER BY range_id, rank"),
            {"b": build_id},
        ).mappings().all()
    return [dict(r) for r in rows]


def sql_lookup(db: Database, size: float, budget: float, build: int | None = None) -> int:
    """Candidate position that :data:`storage.schema.LOOKUP_SQL` returns (-1: none fits).

    Runtime complexity: one query (index range scan over the build's skyline rows).
    """
    with db.read() as conn:
        build_id = int(build_row(db, conn, build).id)
        found = conn.execute(
            sa.text(S.LOOKUP_SQL), {"b": build_id, "n": float(size), "budget": float(budget)}
        ).first()
    return -1 if found is None else int(found.candidate_id)
