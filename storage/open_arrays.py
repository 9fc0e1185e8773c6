"""The read path of a build published with its index arrays (``build_arrays``).

One blob, checked against its digest (sha256, or HMAC under the store key) and the build's
seal, turned into candidates column by column (:mod:`storage.index_arrays`, then
:func:`storage.candidate_fields.read_candidates`).  Each of the build's other tables is
read once, in the open's transaction: the rows the SQL views show (candidates, cost
coefficients, needs, ranges, skyline entries) are compared with the arrays as whole columns
(:func:`storage.index_arrays.check_rows`), and what else the seal covers (the cost model,
the training key, the publication number, the seals of the expansions whose models the
candidates use) with the arrays' header: an edit of the rows or of the blob is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.curves.cost_curve import CostCurve
from polydom.errors import IndexIntegrityError
from polydom.index.polydom_index import PolyDomIndex
from polydom.index.table import SkylineTable
from storage import index_arrays
from storage import schema as S
from storage.build_records import TABLE_KINDS
from storage.candidate_fields import (
    CANDIDATE_FIELDS,
    by_feed,
    candidates_from,
    read_candidates,
    sealed_fields,
)
from storage.database import Database
from storage.expansion_seals import expansion_rows
from storage.lazy_models import model_payloads
from storage.open_pool import stored_pool
from storage.seal import seal_digest

__all__ = ["HEADER_PARTS", "ArraysRead", "arrays_table", "read_arrays"]

#: What each part of a seal header is, in errors.
HEADER_PARTS = {
    "n_min": "domain", "n_max": "domain", "kind": "index kind",
    "expansion_key": "training key (builds.expansion_key)",
    "publication": "publication number (publications)",
    "cost_model": "cost model (feature names, columns or costs)",
    "expansions": "expansions (an expansion's accuracy, feature set, model or blob binding)",
    "info": "info (builds.info: cost unit, evaluation protocol, ...)",
}


@dataclass
class ArraysRead:
    """What the arrays path reads of a build in its transaction: the checked arrays, the
    candidates' own model blobs (by position; None without models) and the rows of the
    expansions they link to (by id)."""

    arrays: index_arrays.IndexArrays
    blobs: list | None
    expansions: dict[int, sa.Row]


def read_arrays(
    db: Database,
    conn: sa.Connection,
    row: sa.Row,
    sealed: str | None,
    atoms: list[str],
    stored: sa.Row,
    header_of: Any,
    models: bool,
) -> ArraysRead:
    """The checked, decoded arrays of a build and the models they link to.

    ``stored`` is the build's ``build_arrays`` row, ``sealed`` its stored seal,
    ``header_of(expansion rows, head, info)`` the seal header as the rows now are (given
    the expansion rows the arrays link to, read here once, and whether the arrays' header
    has the head and info parts).  The blob must match its digest,
    name this build and its seal, its header must equal the recomputed one, and the
    build's rows must equal it: an edit of either is refused.

    Runtime complexity: O(K * (d + fields) + N + R + E) for K candidates of degree d, N
    needs, R ranges and E skyline entries: one query per table.

    Raises
    ------
    IndexIntegrityError
        Naming the build and what differs.
    """
    build_id = int(row.id)
    where = f"build {build_id} of {db.display_url!r}"
    digest = seal_digest(db)
    blob = bytes(stored.blob) if stored.blob is not None else None
    if blob is None or not digest.matches(blob, stored.digest):
        kind = "HMAC (store key)" if digest.keyed else "sha256"
        raise IndexIntegrityError(
            f"{where}: its index arrays fail their {kind} check (the blob was edited or "
            "corrupted after publishing); refusing to open it.  open_index(..., "
            "rebuild=True) reads the build's rows instead"
        )
    fields = sealed_fields(db.schema_version)
    arrays = index_arrays.decode(blob, build_id, atoms, fields)
    if arrays.seal != sealed:
        raise IndexIntegrityError(
            f"{where}: its index arrays do not match the build's seal (the build was "
            "edited after publishing); refusing to open it.  open_index(..., "
            "rebuild=True) reads the build's rows instead"
        )
    linked = sorted(set(arrays.columns[by_feed(fields)["expansion"].name]) - {None})
    expansions = expansion_rows(db, conn, linked, models)
    header = header_of(expansions.values(), bool(arrays.header.get("head")),
                       "info" in arrays.header)
    differs = [k for k in header if arrays.header.get(k) != header[k]]
    if differs or set(arrays.header) != set(header):
        part = HEADER_PARTS.get(differs[0], differs[0]) if differs else "header"
        raise IndexIntegrityError(
            f"{where}: its {part} changed after publishing (the rows differ from the "
            "build's sealed index arrays); refusing to open it"
        )
    blobs = _check_rows(conn, build_id, arrays, fields, models, where)
    return ArraysRead(arrays, blobs, expansions if models else {})


def _check_rows(conn: sa.Connection, build_id: int, arrays: index_arrays.IndexArrays,
                fields: tuple, models: bool, where: str) -> list | None:
    """Read the build's candidate, coefficient, need, range and skyline rows once each and
    compare them with the arrays; return the candidates' own model blobs (with
    ``models``)."""
    c, cc, cn = S.candidates, S.candidate_costs, S.candidate_needs
    rng, se = S.ranges, S.skyline_entries
    cols = [c.c.candidate_id, *(c.c[f.name] for f in fields)]
    width = len(cols)
    own = any(d is not None for d in arrays.columns[by_feed(fields)["model_digest"].name])
    if models and own:
        cols.append(c.c[by_feed(CANDIDATE_FIELDS)["model_blob"].name])
    cands = _tuples(conn, sa.select(*cols).where(c.c.build_id == build_id)
                    .order_by(c.c.candidate_id))
    differs = index_arrays.check_rows(
        arrays,
        [r[:width] for r in cands] if len(cols) > width else cands,
        _tuples(conn, sa.select(cc.c.candidate_id, cc.c.degree, cc.c.coefficient)
                .where(cc.c.build_id == build_id)),
        _tuples(conn, sa.select(cn.c.candidate_id, cn.c.feature_id, cn.c.probability)
                .where(cn.c.build_id == build_id)
                .order_by(cn.c.candidate_id, cn.c.feature_id)),
        _tuples(conn, sa.select(rng.c.range_id, rng.c.n_lo, rng.c.n_hi)
                .where(rng.c.build_id == build_id).order_by(rng.c.range_id)),
        _tuples(conn, sa.select(se.c.range_id, se.c.rank, se.c.candidate_id)
                .where(se.c.build_id == build_id).order_by(se.c.range_id, se.c.rank)),
    )
    if differs is not None:
        raise IndexIntegrityError(
            f"{where}: its candidates or skylines were edited after publishing (its "
            f"{differs} rows do not match the build's sealed index arrays); refusing to open "
            "it.  open_index(..., rebuild=True) sweeps the skylines again from the stored "
            "candidates as they now are"
        )
    if not models:
        return None
    return [r[width] for r in cands] if own else [None] * len(cands)


def _tuples(conn: sa.Connection, statement: sa.Select) -> list[tuple]:
    """The rows of ``statement`` as the driver's plain tuples.

    SQLAlchemy compiles and runs the statement; the driver's cursor is read directly,
    because building a ``Row`` per row costs more than everything else an open from the
    arrays does (10**5 candidates are 10**5 rows and several times as many coefficients).
    Only for columns the driver returns as they are stored (numbers and text).
    """
    result = conn.execute(statement)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


def arrays_table(
    db: Database,
    row: sa.Row,
    read: ArraysRead,
    trusted: bool,
    models: bool,
    side: sa.Row | None = None,
) -> SkylineTable:
    """The skyline table of a build from its checked arrays, models attached; the
    candidates of its side record (``side``: :func:`storage.open_pool.pool_row`) are read
    on first use (:func:`storage.open_pool.stored_pool`).

    Runtime complexity: O(P * d + N + E) for the P published candidates, plus one read per
    distinct stored text.
    """
    build_id = int(row.id)
    arrays = read.arrays
    fields = sealed_fields(db.schema_version)
    columns: Mapping[str, list | None] = {**arrays.columns, "model_blob": read.blobs}
    keyed = frozenset(f.name for f in fields if f.array == "key")
    feeds = read_candidates(db.schema_version, columns, f"build {build_id}", done=keyed)
    payloads = (model_payloads(db, build_id, feeds, read.expansions, trusted) if models
                else None)
    candidates = candidates_from(feeds, CostCurve.from_rows(arrays.coefficients), payloads,
                                 arrays.needs)
    if arrays.size != len(arrays.ids) + (0 if side is None else int(side.candidates)):
        raise IndexIntegrityError(
            f"build {build_id}: its index arrays name a pool of {arrays.size} candidates, "
            "which its candidates and side record do not make up; refusing to open it")
    pool = stored_pool(db, build_id, arrays.ids, candidates, side, trusted, models)
    return TABLE_KINDS.get(arrays.kind, PolyDomIndex)(
        pool, arrays.n_min, arrays.n_max, arrays.breaks, arrays.skylines,
        json.loads(row.stats or "{}"),
    )
