"""The read path of a build from its rows: builds published before the index arrays existed
(or in another layout), and ``open_index(..., rebuild=True)``.

Each table of the build is read once; the rows are checked against the build's seal
(:mod:`storage.seal`, recomputed over the sealed fields of
:mod:`storage.candidate_fields`) and turned into candidates through the same declarations
as the arrays path (:func:`storage.candidate_fields.read_candidates`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.errors import IndexIntegrityError, InvalidArgumentError
from polydom.index.polydom_index import PolyDomIndex
from polydom.index.table import SkylineTable
from storage import schema as S
from storage.build_records import TABLE_KINDS
from storage.candidate_fields import (
    CANDIDATE_FIELDS,
    CandidateField,
    by_feed,
    candidates_from,
    legacy_sealed_fields,
    read_candidates,
    sealed_fields,
)
from storage.codec import stored_curves
from storage.database import Database
from storage.expansion_seals import expansion_rows
from storage.lazy_models import model_payloads
from storage.open_pool import stored_pool
from storage.seal import index_seal, info_digest, seal_digest

__all__ = ["RowsRead", "read_rows", "rows_edited", "rows_table"]


@dataclass
class RowsRead:
    """What the row path reads of a build in its transaction."""

    cands: list[sa.Row]
    coef_rows: list[sa.Row]
    need_rows: list[tuple]
    needs: dict[int, dict[str, float]]
    expansions: dict[int, sa.Row]
    range_rows: list[sa.Row]
    entry_rows: list[sa.Row]
    sky: list[list[int]]


def read_rows(
    db: Database, conn: sa.Connection, build_id: int, atoms: list[str], models: bool
) -> RowsRead:
    """The index rows of a build (candidates, coefficients, needs, ranges, skylines) and
    the rows of the expansions its candidates link to (with their blobs with ``models``),
    each table read once.

    Runtime complexity: O(K * d + N + R + E) rows.

    Raises
    ------
    IndexIntegrityError
        If a skyline entry names an unknown range.
    ValueError
        If a need names an unknown atom.
    """
    c, cc = S.candidates, S.candidate_costs
    fields = _selected(db, models)
    cands = conn.execute(
        sa.select(c.c.candidate_id, *(c.c[f.name] for f in fields))
        .where(c.c.build_id == build_id).order_by(c.c.candidate_id)
    ).all()
    coef_rows = conn.execute(
        sa.select(cc.c.candidate_id, cc.c.degree, cc.c.coefficient).where(
            cc.c.build_id == build_id
        )
    ).all()
    needs: dict[int, dict[str, float]] = {}
    need_rows: list[tuple] = []
    if db.schema_version >= 2:
        cn = S.candidate_needs
        for cid, fid, p in conn.execute(
            sa.select(cn.c.candidate_id, cn.c.feature_id, cn.c.probability)
            .where(cn.c.build_id == build_id)
            .order_by(cn.c.candidate_id, cn.c.feature_id)
        ):
            need_rows.append((cid, fid, p))
            if not 0 <= fid < len(atoms):
                raise InvalidArgumentError(
                    f"build {build_id}: candidate {cid} needs unknown atom id {fid}"
                )
            needs.setdefault(cid, {})[atoms[fid]] = p
    link = by_feed(CANDIDATE_FIELDS)["expansion"].name
    linked = sorted({getattr(r, link) for r in cands} - {None})
    rng, se = S.ranges, S.skyline_entries
    range_rows = conn.execute(
        sa.select(rng.c.range_id, rng.c.n_lo, rng.c.n_hi)
        .where(rng.c.build_id == build_id)
        .order_by(rng.c.range_id)
    ).all()
    entry_rows = conn.execute(
        sa.select(se.c.range_id, se.c.rank, se.c.candidate_id)
        .where(se.c.build_id == build_id)
        .order_by(se.c.range_id, se.c.rank)
    ).all()
    sky: list[list[int]] = [[] for _ in range_rows]
    for r in entry_rows:
        if not 0 <= r.range_id < len(sky):
            raise IndexIntegrityError(
                f"build {build_id}: skyline entry of unknown range {r.range_id}"
            )
        sky[r.range_id].append(r.candidate_id)
    return RowsRead(cands, coef_rows, need_rows, needs,
                    expansion_rows(db, conn, linked, models), range_rows, entry_rows, sky)


def _selected(db: Database, models: bool) -> list[CandidateField]:
    """The candidate fields the row path reads: the sealed ones, and the model blob with
    ``models``."""
    blob = by_feed(CANDIDATE_FIELDS)["model_blob"]
    return [*sealed_fields(db.schema_version), *([blob] if models else [])]


def rows_edited(
    db: Database, row: sa.Row, sealed: str | None, rows: RowsRead, header: dict[str, Any],
    rebuild: bool,
) -> tuple[bool, bool, bool]:
    """Whether the rows differ from the build's seal (then: refused, or with ``rebuild``
    swept again; False for a build without a seal), whether the seal that matched says
    the build was published with a head record, and whether it covers the build's info.
    The seal is recomputed as version 2 (the current layout, with ``header``: with the head
    and info parts, with one of them, then without either), then as version 1 (builds
    published before it).

    Runtime complexity: O(R log R) for R rows in all.

    Raises
    ------
    IndexIntegrityError
        If the rows do not match the seal and not ``rebuild``.
    """
    if sealed is None:
        return False, False, False
    digest = seal_digest(db)
    fields = sealed_fields(db.schema_version)
    groups = (
        [tuple(r) for r in rows.coef_rows],
        rows.need_rows,
        [(r.range_id, float(r.n_lo), float(r.n_hi)) for r in rows.range_rows],
        [(r.range_id, r.rank, r.candidate_id) for r in rows.entry_rows],
    )
    try:
        current = [(r.candidate_id, *(getattr(r, f.name) for f in fields)) for r in rows.cands]
        info = info_digest(row.info)
        for head, with_info in ((True, True), (True, False), (False, True)):
            parts = {**header, **({"head": 1} if head else {}),
                     **({"info": info} if with_info else {})}
            if index_seal(digest, parts, current, *groups) == sealed:
                return False, head, with_info
        legacy = [(r.candidate_id, *(getattr(r, f.name) if f.stored_in(db.schema_version)
                                     else None for f in legacy_sealed_fields()))
                  for r in rows.cands]
        found = {
            index_seal(digest, header, current, *groups),
            index_seal(digest, (float(row.n_min), float(row.n_max), row.index_kind),
                       legacy, *groups),
        }
    except (TypeError, ValueError):  # a number edited to text: not what was sealed
        found = set()
    if sealed in found:
        return False, False, False
    if not rebuild:
        raise IndexIntegrityError(
            f"build {int(row.id)} of {db.display_url!r}: its candidates, skylines, features, "
            "info (cost unit, ...) or the expansions it uses were edited after publishing "
            "(the rows do not match the build's seal); refusing to open it.  "
            "open_index(..., rebuild=True) sweeps the skylines again from the stored "
            "candidates as they now are"
        )
    return True, False, False


def rows_table(
    db: Database, row: sa.Row, rows: RowsRead, trusted: bool, models: bool, rebuilt: bool,
    side: sa.Row | None = None,
) -> SkylineTable:
    """The skyline table of a build from its rows (swept again when ``rebuilt``, over the
    whole pool: its side record, ``side``, read then); otherwise the side record's
    candidates are read on first use (:func:`storage.open_pool.stored_pool`).

    Runtime complexity: O(P * d + N + E) for the P candidates of the rows plus one read per
    distinct stored text (and the side record when ``rebuilt``).
    """
    build_id = int(row.id)
    cands = rows.cands
    columns = {f.name: [r[i] for r in cands]
               for i, f in enumerate(_selected(db, models), start=1)}
    feeds = read_candidates(db.schema_version, columns, f"build {build_id}")
    payloads = (model_payloads(db, build_id, feeds, rows.expansions, trusted) if models
                else None)
    ids = [r.candidate_id for r in cands]
    candidates = candidates_from(
        feeds, stored_curves(ids, rows.coef_rows, f"build {build_id}: candidate"), payloads,
        [rows.needs.get(i, {}) for i in ids] if db.schema_version >= 2 else None)
    kind = TABLE_KINDS.get(row.index_kind, PolyDomIndex)
    pool = stored_pool(db, build_id, ids, candidates, side, trusted, models)
    if rebuilt:
        return kind.build(list(pool), row.n_min, row.n_max)
    breaks = [r.n_lo for r in rows.range_rows]
    return kind(pool, row.n_min, row.n_max, breaks, rows.sky,
                json.loads(row.stats or "{}"))
