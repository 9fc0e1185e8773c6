"""Opening a published build: :func:`load_index`, the one entry of the read path.

It reads the build in one transaction (a consistent snapshot), writes nothing, and
verifies the build once: the current build against the publication log and its head
record (:mod:`storage.publications`), then the build against its seal, through its index
arrays (:mod:`storage.open_arrays`) or, for builds published without them, through its rows
(:mod:`storage.open_rows`).  Every table is read once: the cost model rows give both the
model and the digest the seal covers (:mod:`storage.cost_model_rows`), the expansion rows
both their seals and their models.  Listings, skyline rows and the plain-SQL lookup are in
:mod:`storage.build_records`.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from polydom.errors import IndexIntegrityError, InvalidArgumentError
from polydom.index.built import Index
from storage import index_arrays, publications
from storage import schema as S
from storage.build_records import build_row
from storage.cost_model_rows import read_cost_model
from storage.database import Database
from storage.expansion_seals import expansion_digest
from storage.open_arrays import arrays_table, read_arrays
from storage.open_pool import pool_row
from storage.open_rows import read_rows, rows_edited, rows_table
from storage.seal import pool_part, seal_digest, seal_header

__all__ = ["load_index"]


def load_index(
    db: Database,
    build: int | None = None,
    trusted: bool = False,
    models: bool = True,
    rebuild: bool = False,
    min_publication: int | None = None,
) -> Index:
    """Rebuild a published index (no sweep): the current build by default.

    A build published with its index arrays (``build_arrays``, :mod:`storage.index_arrays`)
    is built from them: one blob, checked against its digest (sha256, or HMAC under the
    store key) and the build's seal, turned into candidates column by column; the build's
    rows are fetched and compared with the arrays as whole columns
    (:func:`storage.index_arrays.check_rows`), and what else the seal covers (the cost model
    rows, the training key, the publication number, the seals of the expansions whose
    models the candidates use) is recomputed from the rows and compared with the arrays'
    header, so an edit of the rows or of the blob is refused.  Other builds (published
    before the arrays existed, or by an older layout) are built from their rows, checked
    against the build's seal (:mod:`storage.seal`).  Both give the same index.  The current
    build (``build`` None) must be the latest publication (``publications``), named by the
    store's head record when its seal says it was published with one, and, with
    ``min_publication``, be publication ``min_publication`` or later
    (:mod:`storage.publications`: what this can and cannot detect).

    A seal mismatch of the rows raises :class:`IndexIntegrityError`; with ``rebuild=True``
    the rows are always read and the skylines swept again from the stored candidates as they
    now are when they do not match (``info["rebuilt"]`` says so).

    See :meth:`storage.IndexStore.load_index`.

    Runtime complexity: from the arrays O(K * d + N + E) numpy work and O(K + N) Python
    objects for K candidates of degree d with N needs and E skyline entries; from the rows
    O(K * d + N + E) rows; plus decoding the K models.
    """
    publications.check_min_publication_argument(min_publication, build)
    db.check_key()  # with or without models: a key holder never reads an unsigned store
    with _collector_paused(), db.read() as conn:
        row = build_row(db, conn, build)
        build_id = int(row.id)
        if row.status != "complete":
            raise InvalidArgumentError(f"build {build_id} is not complete (status {row.status!r})")
        publication = head = None
        if build is None:
            publication = publications.check_current(db, conn, row)
            head = publications.read_head(conn)
        sealed = None
        if "build_seals" in db.tables:
            sealed = conn.execute(
                sa.select(S.build_seals.c.index_digest).where(
                    S.build_seals.c.build_id == build_id
                )
            ).scalar()
        if sealed is None and db.store_key_id is not None:
            raise IndexIntegrityError(
                f"build {build_id} of {db.display_url!r} has no seal, so nothing proves it "
                "was published by a holder of the store key; refusing to open it")
        stored_model = read_cost_model(db, conn, build_id)
        atoms = list(stored_model.model.atoms)
        sequence = _publication(db, conn, build_id, publication)
        side = pool_row(db, conn, build_id)

        def header_of(expansions: Iterable[sa.Row], head: bool,
                      info: bool) -> dict[str, Any]:
            return _header(db, row, sequence, stored_model.digest, expansions, head, info,
                           side)

        stored = None
        if not rebuild and "build_arrays" in db.tables:
            ba = S.build_arrays
            stored = conn.execute(
                sa.select(ba.c.format, ba.c.digest, ba.c.blob).where(ba.c.build_id == build_id)
            ).first()
            if stored is not None and stored.format != index_arrays.FORMAT:
                stored = None  # another layout (older or newer): the rows say the same
        if stored is not None:
            read = read_arrays(db, conn, row, sealed, atoms, stored, header_of, models)
        else:
            rows = read_rows(db, conn, build_id, atoms, models)
            header = header_of(rows.expansions.values(), False, False)
    rebuilt = False
    with _collector_paused():
        if stored is not None:
            with_head = bool(read.arrays.header.get("head"))
            info_sealed = "info" in read.arrays.header
        else:
            rebuilt, with_head, info_sealed = rows_edited(db, row, sealed, rows, header,
                                                          rebuild)
        if build is None and not rebuilt:
            publications.check_head(db, seal_digest(db), build_id, publication, sealed,
                                    head, with_head)
        if min_publication is not None:
            publications.check_min_publication(db, build_id, publication, min_publication)
        if stored is not None:
            table = arrays_table(db, row, read, trusted, models, side)
        else:
            table = rows_table(db, row, rows, trusted, models, rebuilt, side)
    info = json.loads(row.info or "{}")
    info["build_id"] = build_id
    info["sealed"] = sealed is not None
    info["info_sealed"] = info_sealed
    info["seal"] = sealed  # names the build (and its store) served timings belong to
    if publication is not None:
        info["publication"] = publication
    if rebuilt:
        info["rebuilt"] = "skylines swept again from the stored candidates (seal mismatch)"
    info["schema_version"] = db.schema_version
    if db.schema_version < 3:  # Index.check_rule refuses "one_se" with this reason
        info["no_standard_errors"] = (
            f"build {build_id} of {db.display_url!r} is in a store of schema version "
            f"{db.schema_version}, which keeps no standard errors")
    info["read_from"] = "arrays" if stored is not None else "rows"
    return Index(table, stored_model.model, info=info)


def _publication(db: Database, conn: sa.Connection, build_id: int,
                 current: int | None) -> int | None:
    """The build's number in the publication log: ``current`` when the current build was
    checked against the log (:func:`storage.publications.check_current`), else read."""
    if current is not None or "publications" not in db.tables:
        return current
    return conn.execute(sa.select(S.publications.c.sequence).where(
        S.publications.c.build_id == build_id)).scalar()


def _header(db: Database, row: sa.Row, publication: int | None, cost_model: str,
            expansions: Iterable[sa.Row], head: bool, info: bool,
            side: sa.Row | None = None) -> dict[str, Any]:
    """The version-2 seal header of a published build as its rows now are: domain, kind,
    training key, publication number, cost model digest, the seals of the expansions
    (recomputed from their rows, ``expansions``); ``head``: the part saying it was
    published with a head record; ``info``: the digest of its ``info`` text (cost unit,
    evaluation protocol, ...); ``side``: its side record's digest and count."""
    seals = {str(r.id): expansion_digest(db, r) for r in expansions}
    return seal_header(row.n_min, row.n_max, row.index_kind, row.expansion_key, publication,
                       cost_model, seals, head, (row.info or "") if info else None,
                       None if side is None else pool_part(side.digest, side.candidates))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a build's objects are made.

    Opening 10**4 candidates allocates some 10**5 tuples, dicts and candidates that all
    stay alive; each allocation burst triggers collections that traverse every live object
    of the process, which cost more than the open itself (measured: 0.20 s -> 0.07 s CPU at
    10**4 candidates).  Cycles made meanwhile are collected by the next collection after it
    resumes; it resumes unless it was paused before (by the caller, or by another thread
    doing the same).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()

