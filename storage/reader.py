"""The read path of an index store: published indexes, build listings, SQL over the views.

Every function reads in one transaction (a consistent snapshot) and writes nothing.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import sqlalchemy as sa

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.names import candidate_name
from polydom.errors import InvalidArgumentError
from polydom.index.built import Index
from polydom.index.lazy_payload import LazyPayload
from polydom.index.polydom_index import IndexAll, PolyDomIndex
from polydom.index.table import SkylineTable
from storage import index_arrays, publications
from storage import schema as S
from storage.blobs import BlobDigest, load_model
from storage.candidate_fields import fold_scores_from_text, sealed_fields
from storage.codec import decode_key, stored_curve, stored_curves
from storage.database import Database
from storage.seal import (
    LEGACY_SEALED_COLUMNS,
    IndexIntegrityError,
    expansion_seal,
    index_seal,
    info_digest,
    rows_digest,
    seal_header,
)

__all__ = [
    "TABLE_KINDS",
    "IndexIntegrityError",
    "BuildRecord",
    "build_row",
    "check_expansion",
    "cost_model_digest",
    "expansion_digest",
    "expansion_select",
    "current_build_id",
    "feature_costs",
    "atom_order",
    "bundle_members",
    "feature_order",
    "stored_cost_model",
    "list_builds",
    "load_index",
    "skyline_rows",
    "sql_lookup",
    "verified_expansions",
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


def atom_order(conn: sa.Connection, build_id: int) -> list[str]:
    """Atomic feature names of a build in their stored order."""
    f = S.features
    rows = conn.execute(
        sa.select(f.c.name).where(f.c.build_id == build_id).order_by(f.c.feature_id)
    )
    return [r.name for r in rows]


def bundle_members(db: Database, conn: sa.Connection, build_id: int) -> dict[str, list[str]]:
    """Bundles of a build in their stored order, each with its atoms (empty when the lattice
    ran over the atoms, and for a store of schema version 1)."""
    if db.schema_version < 2:
        return {}
    u, ua, f = S.bundles, S.bundle_atoms, S.features
    out: dict[str, list[str]] = {
        r.name: []
        for r in conn.execute(
            sa.select(u.c.name).where(u.c.build_id == build_id).order_by(u.c.bundle_id)
        )
    }
    joined = ua.join(
        u, (u.c.build_id == ua.c.build_id) & (u.c.bundle_id == ua.c.bundle_id)
    ).join(f, (f.c.build_id == ua.c.build_id) & (f.c.feature_id == ua.c.feature_id))
    rows = conn.execute(
        sa.select(u.c.name, f.c.name.label("atom"))
        .select_from(joined)
        .where(ua.c.build_id == build_id)
        .order_by(ua.c.bundle_id, ua.c.feature_id)
    )
    for r in rows:
        out[r.name].append(r.atom)
    return out


def feature_order(db: Database, conn: sa.Connection, build_id: int) -> list[str]:
    """The lattice's feature names of a build, in order (bit ``i`` of an expansion's mask
    is name ``i``): its bundles when it has any, else its atoms."""
    bundles = bundle_members(db, conn, build_id)
    return list(bundles) if bundles else atom_order(conn, build_id)


def stored_cost_model(db: Database, conn: sa.Connection, build_id: int) -> CostModel:
    """The cost model of a build: atoms with curves and columns, and bundles.

    Runtime complexity: O(atoms * degree + bundle members) rows.

    Raises
    ------
    ValueError
        If the stored rows do not form a valid cost model (naming what is wrong).
    """
    f = S.features
    rows = conn.execute(
        sa.select(f.c.feature_id, f.c.name, f.c.columns)
        .where(f.c.build_id == build_id)
        .order_by(f.c.feature_id)
    ).all()
    curves = feature_costs(conn, build_id)
    missing = [r.name for r in rows if r.feature_id not in curves]
    if missing:
        raise InvalidArgumentError(
            f"build {build_id}: atoms {missing} have no stored cost coefficients")
    return CostModel(
        {r.name: curves[r.feature_id] for r in rows},
        bundle_members(db, conn, build_id) or None,
        {r.name: json.loads(r.columns) for r in rows},
    )


def current_build_id(db: Database) -> int | None:
    """Id of the current (latest published) build; None when nothing is published yet.

    Runtime complexity: one indexed query.
    """
    b = S.builds
    with db.read() as conn:
        found = conn.execute(sa.select(b.c.id).where(b.c.is_current)).scalar()
    return None if found is None else int(found)


def feature_costs(conn: sa.Connection, build_id: int) -> dict[int, CostCurve]:
    """Cost curve of every feature of a build, by ``feature_id``."""
    fc = S.feature_costs
    coefs: dict[int, dict[int, float]] = {}
    for r in conn.execute(sa.select(fc).where(fc.c.build_id == build_id)):
        coefs.setdefault(r.feature_id, {})[r.degree] = r.coefficient
    return {
        i: stored_curve(coefs[i], f"feature {i} of build {build_id}") for i in sorted(coefs)
    }


# ---------------------------------------------------------------------------- seal header
def cost_model_digest(db: Database, conn: sa.Connection, build_id: int) -> str:
    """sha256 over the rows that make a build's cost model (``features``,
    ``feature_costs``, ``bundles``, ``bundle_atoms``): names, columns, cost coefficients.
    A version-2 seal covers it, so an edit of a feature's columns, name or cost is refused.

    Runtime complexity: O(atoms * degree + bundle members) rows.
    """
    f, fc, u, ua = S.features, S.feature_costs, S.bundles, S.bundle_atoms
    groups = {
        "features": conn.execute(
            sa.select(f.c.feature_id, f.c.name, f.c.columns, f.c.cost, f.c.degree)
            .where(f.c.build_id == build_id)).all(),
        "feature_costs": conn.execute(
            sa.select(fc.c.feature_id, fc.c.degree, fc.c.coefficient)
            .where(fc.c.build_id == build_id)).all(),
    }
    if db.schema_version >= 2:
        groups["bundles"] = conn.execute(
            sa.select(u.c.bundle_id, u.c.name).where(u.c.build_id == build_id)).all()
        groups["bundle_atoms"] = conn.execute(
            sa.select(ua.c.bundle_id, ua.c.feature_id).where(ua.c.build_id == build_id)).all()
    return rows_digest(groups)


def expansion_select(db: Database, *extra: Any) -> sa.Select:
    """Expansion rows with what their seal covers (``sealed``: the columns in seal order,
    the predictions' digest last) and their stored seal (``stored_seal``)."""
    x = S.expansions
    cols = [x.c.id, x.c.expansion_key, x.c.feature_mask, x.c.features, x.c.accuracy,
            x.c.fit_seconds, x.c.model_format, x.c.model_sha256]
    if db.schema_version >= 3:
        cols += [x.c.accuracy_se, x.c.fold_scores]
    else:  # a store of an older version keeps neither
        cols += [sa.null().label("accuracy_se"), sa.null().label("fold_scores")]
    source = x
    if "expansion_predictions" in db.tables:
        xp = S.expansion_predictions
        source = source.outerjoin(xp, xp.c.expansion_id == x.c.id)
        cols.append(xp.c.digest.label("predictions_digest"))
    else:
        cols.append(sa.null().label("predictions_digest"))
    if "expansion_seals" in db.tables:
        xs = S.expansion_seals
        source = source.outerjoin(xs, xs.c.expansion_id == x.c.id)
        cols.append(xs.c.digest.label("stored_seal"))
    else:
        cols.append(sa.null().label("stored_seal"))
    return sa.select(*cols, *extra).select_from(source)


def expansion_digest(db: Database, row: sa.Row) -> str:
    """The seal of an expansion row of :func:`expansion_select`, as it now is (in a store
    of schema version 3 or later it covers the standard error and the fold scores too)."""
    sealed = [row.id, row.expansion_key, row.feature_mask, row.features, row.accuracy,
              row.fit_seconds, row.model_format, row.model_sha256, row.predictions_digest]
    if db.schema_version >= 3:
        sealed += [row.accuracy_se, row.fold_scores]
    return expansion_seal(_seal_digest(db), sealed)


def check_expansion(db: Database, row: sa.Row) -> str:
    """The seal of an expansion row, checked against the stored one: what a build that
    reuses the expansion (the expansion cache, :func:`storage.builds.publish`) relies on.

    An expansion stored before seals existed has none: accepted in an unsigned store (a
    writer could recompute a sha256 anyway), refused in a signed one.

    Runtime complexity: O(1).

    Raises
    ------
    IndexIntegrityError
        If the row does not match its seal, or a signed store's expansion has none.
    """
    found = expansion_digest(db, row)
    if row.stored_seal == found:
        return found
    what = f"expansion {row.id} ({row.features}) of {db.display_url!r}"
    if row.stored_seal is None and db.store_key_id is None:
        return found
    if row.stored_seal is None:
        raise IndexIntegrityError(
            f"{what} has no seal (stored by an older polydom), so its accuracy and model "
            "cannot be verified under the store key; refusing to reuse it (build into a new "
            "store)")
    raise IndexIntegrityError(
        f"{what} was edited after it was stored (its accuracy, feature set, training key "
        "or model digest do not match its seal); refusing to reuse it")


def verified_expansions(
    db: Database, conn: sa.Connection, ids: list[int], expansion_key: str
) -> dict[str, str]:
    """``{str(id): seal}`` of the expansions ``ids`` a build links to, each checked
    (:func:`check_expansion`) and trained with ``expansion_key``.

    Runtime complexity: one query, O(len(ids)) rows.

    Raises
    ------
    IndexIntegrityError
        As :func:`check_expansion`, or if an expansion is missing or of another training key.
    """
    out: dict[str, str] = {}
    for start in range(0, len(ids), 10_000):  # bound the number of bound parameters
        for r in conn.execute(expansion_select(db).where(
                S.expansions.c.id.in_(ids[start:start + 10_000]))):
            if r.expansion_key != expansion_key:
                raise IndexIntegrityError(
                    f"expansion {r.id} of {db.display_url!r} was trained for other "
                    "parameters than this build's; refusing to link to it")
            out[str(r.id)] = check_expansion(db, r)
    missing = sorted(set(ids) - {int(i) for i in out})
    if missing:
        raise IndexIntegrityError(f"expansion {missing[0]} of {db.display_url!r} does not "
                                  "exist; refusing to link to it")
    return out


def _header(
    db: Database, conn: sa.Connection, row: sa.Row, linked: list[int], head: bool = False,
    info: bool = False,
) -> dict[str, Any]:
    """The version-2 seal header of a published build as its rows now are: domain, kind,
    training key, publication number, cost model digest, the seals of the expansions
    ``linked`` (recomputed from their rows; a missing one is left out); ``head``: the part
    saying it was published with a head record; ``info``: the digest of its ``info`` text
    (cost unit, evaluation protocol, ...)."""
    build_id = int(row.id)
    publication = None
    if "publications" in db.tables:
        publication = conn.execute(sa.select(S.publications.c.sequence).where(
            S.publications.c.build_id == build_id)).scalar()
    expansions = {}
    for start in range(0, len(linked), 10_000):
        for r in conn.execute(expansion_select(db).where(
                S.expansions.c.id.in_(linked[start:start + 10_000]))):
            expansions[str(r.id)] = expansion_digest(db, r)
    return seal_header(row.n_min, row.n_max, row.index_kind, row.expansion_key, publication,
                       cost_model_digest(db, conn, build_id), expansions, head,
                       (row.info or "") if info else None)


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
        cost_model = stored_cost_model(db, conn, build_id)
        stored = None
        if not rebuild and "build_arrays" in db.tables:
            ba = S.build_arrays
            stored = conn.execute(
                sa.select(ba.c.format, ba.c.digest, ba.c.blob).where(ba.c.build_id == build_id)
            ).first()
            if stored is not None and stored.format != index_arrays.FORMAT:
                stored = None  # another layout (older or newer): the rows say the same
        if stored is not None:
            arrays, own, exps = _read_arrays(db, conn, row, sealed, list(cost_model.atoms),
                                             stored, models)
        else:
            rows = _read_rows(db, conn, build_id, list(cost_model.atoms), models)
            header = _header(db, conn, row, sorted({r.expansion_id for r in rows.cands
                                                    if r.expansion_id is not None}))
    rebuilt = False
    with _collector_paused():
        if stored is not None:
            with_head, info_sealed = bool(arrays.header.get("head")), "info" in arrays.header
        else:
            rebuilt, with_head, info_sealed = _rows_edited(db, row, sealed, rows, header,
                                                           rebuild)
        if build is None and not rebuilt:
            publications.check_head(db, _seal_digest(db), build_id, publication, sealed,
                                    head, with_head)
        if min_publication is not None:
            publications.check_min_publication(db, build_id, publication, min_publication)
        if stored is not None:
            table = _arrays_table(db, row, arrays, own, exps, trusted, models)
        else:
            table = _rows_table(db, row, rows, trusted, models, rebuilt)
    info = json.loads(row.info or "{}")
    info["build_id"] = build_id
    info["sealed"] = sealed is not None
    info["info_sealed"] = info_sealed
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
    return Index(table, cost_model, info=info)


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


def _seal_digest(db: Database) -> BlobDigest:
    """How a build's seal and arrays were digested: under the store key for a signed store
    (checked: a signed build is opened with its key or not at all), else plain sha256."""
    if db.store_key_id is not None:
        db.check_key()
        return db.digest
    return BlobDigest()


# ---------------------------------------------------------------------------- from arrays
#: What each part of a seal header is, in errors.
_HEADER_PARTS = {
    "n_min": "domain", "n_max": "domain", "kind": "index kind",
    "expansion_key": "training key (builds.expansion_key)",
    "publication": "publication number (publications)",
    "cost_model": "cost model (feature names, columns or costs)",
    "expansions": "expansions (an expansion's accuracy, feature set, model or blob binding)",
    "info": "info (builds.info: cost unit, evaluation protocol, ...)",
}


def _read_arrays(
    db: Database,
    conn: sa.Connection,
    row: sa.Row,
    sealed: str | None,
    atoms: list[str],
    stored: sa.Row,
    models: bool,
) -> tuple[index_arrays.IndexArrays, dict[int, tuple], dict[int, sa.Row]]:
    """The checked, decoded arrays of a build, and the models they link to: the
    candidates' own (``(format, blob)`` by position; their digests are the arrays', equal
    to the rows') and the expansions' rows (by id); no models unless ``models``.

    The blob must match its digest, name this build and its seal, its header must equal
    the one recomputed from the rows (:func:`_header`), and the build's rows must equal it
    (:func:`storage.index_arrays.check_rows`): an edit of either is refused.
    """
    build_id = int(row.id)
    where = f"build {build_id} of {db.display_url!r}"
    digest = _seal_digest(db)
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
    linked = np.unique(arrays.expansion_id[arrays.expansion_id >= 0]).tolist()
    if arrays.seal != sealed:
        raise IndexIntegrityError(
            f"{where}: its index arrays do not match the build's seal (the build was "
            "edited after publishing); refusing to open it.  open_index(..., "
            "rebuild=True) reads the build's rows instead"
        )
    header = _header(db, conn, row, linked, bool(arrays.header.get("head")),
                     "info" in arrays.header)
    differs = [k for k in header if arrays.header.get(k) != header[k]]
    if differs or set(arrays.header) != set(header):
        part = _HEADER_PARTS.get(differs[0], differs[0]) if differs else "header"
        raise IndexIntegrityError(
            f"{where}: its {part} changed after publishing (the rows differ from the "
            "build's sealed index arrays); refusing to open it"
        )
    c, cc, cn = S.candidates, S.candidate_costs, S.candidate_needs
    rng, se = S.ranges, S.skyline_entries
    cols = [c.c.candidate_id, *(c.c[f.name] for f in fields)]
    width = len(cols)
    if models and arrays.own_models:
        cols += [c.c.model_format, c.c.model_blob]
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
    own = ({pos: cands[pos][width:] for pos in arrays.own_models} if len(cols) > width
           else {})
    exps: dict[int, sa.Row] = {}
    x = S.expansions
    for start in range(0, len(linked) if models else 0, 10_000):
        for r in conn.execute(
            sa.select(x.c.id, x.c.features, x.c.model_format, x.c.model_sha256,
                      x.c.model_blob).where(x.c.id.in_(linked[start:start + 10_000]))
        ):
            exps[int(r.id)] = r
    return arrays, own, exps
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


def _arrays_table(
    db: Database,
    row: sa.Row,
    arrays: index_arrays.IndexArrays,
    own: dict[int, tuple],
    exps: dict[int, sa.Row],
    trusted: bool,
    models: bool,
) -> SkylineTable:
    """The skyline table of a build from its decoded arrays, models attached."""
    build_id = int(row.id)
    payloads: list[Any] = [None] * len(arrays.keys)
    if models:
        loaded: dict[int, Any] = {}
        for pos, eid in enumerate(arrays.expansion_id.tolist()):
            if eid < 0:
                continue
            if eid not in loaded:
                e = exps.get(eid)
                if e is None:
                    raise IndexIntegrityError(
                        f"build {build_id}: expansion {eid} that its index arrays name "
                        "does not exist; refusing to open it"
                    )
                loaded[eid] = _expansion_model(db, e, build_id, trusted)
            payloads[pos] = loaded[eid]
        for pos, (fmt, blob) in own.items():
            payloads[pos] = _lazy_model(
                db, blob, fmt, arrays.own_models[pos], trusted,
                f"model of candidate {candidate_name(arrays.keys[pos])!r} of build {build_id}")
    candidates = Candidate.from_columns(
        arrays.keys,
        arrays.accuracy,
        CostCurve.from_rows(arrays.coefficients),
        arrays.features,
        payloads,
        arrays.needs,
        arrays.learners,
        *_uncertainty(db, arrays.columns, f"build {build_id}"),
    )
    return TABLE_KINDS.get(arrays.kind, PolyDomIndex)(
        candidates, arrays.n_min, arrays.n_max, arrays.breaks, arrays.skylines,
        json.loads(row.stats or "{}"),
    )


def _expansion_model(db: Database, e: sa.Row, build_id: int, trusted: bool) -> Any:
    return _lazy_model(db, e.model_blob, e.model_format, e.model_sha256, trusted,
                       f"model of expansion {e.id} ({e.features}) of build {build_id}")


def _lazy_model(db: Database, blob: Any, fmt: str | None, digest: str | None, trusted: bool,
                what: str) -> LazyPayload | None:
    """A stored model to be checked and decoded on first use (None: no model).

    The blob's bytes are read now, in the open's transaction; its digest (sha256, or HMAC
    under the store key), then our structural checks, then the decoder run when the model
    is first used (:func:`storage.blobs.load_model`), so opening decodes nothing and a
    model that fails its checks raises its one-line error there.
    """
    if fmt is None:
        return None
    return LazyPayload(partial(load_model, None if blob is None else bytes(blob), fmt, digest,
                               trusted=trusted, what=what, digest=db.digest), what)


# ---------------------------------------------------------------------------- from rows
@dataclass
class _Rows:
    """What the row path reads of a build in its transaction."""

    cands: list[sa.Row]
    coef_rows: list[sa.Row]
    need_rows: list[tuple]
    needs: dict[int, dict[str, float]]
    exp_rows: dict[int, sa.Row]
    range_rows: list[sa.Row]
    entry_rows: list[sa.Row]
    sky: list[list[int]]


def _read_rows(
    db: Database, conn: sa.Connection, build_id: int, atoms: list[str], models: bool
) -> _Rows:
    """The index rows of a build (candidates, coefficients, needs, ranges, skylines) and
    the expansion rows its candidates link to (with ``models``)."""
    c, cc, x = S.candidates, S.candidate_costs, S.expansions
    cols = [c.c.candidate_id, c.c.key, *(c.c[f.name] for f in sealed_fields(db.schema_version)),
            c.c.model_format]
    if models:
        cols.append(c.c.model_blob)
    cands = conn.execute(
        sa.select(*cols).where(c.c.build_id == build_id).order_by(c.c.candidate_id)
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
    exp_rows = {}
    if models:
        linked = (
            sa.select(c.c.expansion_id)
            .where(c.c.build_id == build_id, c.c.expansion_id.is_not(None))
            .scalar_subquery()
        )
        for r in conn.execute(
            sa.select(x.c.id, x.c.features, x.c.model_format, x.c.model_sha256,
                      x.c.model_blob).where(x.c.id.in_(linked))
        ):
            exp_rows[r.id] = r
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
    return _Rows(cands, coef_rows, need_rows, needs, exp_rows, range_rows, entry_rows, sky)


def _rows_edited(
    db: Database, row: sa.Row, sealed: str | None, rows: _Rows, header: dict[str, Any],
    rebuild: bool,
) -> tuple[bool, bool, bool]:
    """Whether the rows differ from the build's seal (then: refused, or with ``rebuild``
    swept again; False for a build without a seal), whether the seal that matched says
    the build was published with a head record, and whether it covers the build's info.
    The seal is recomputed as version 2 (the current layout, with ``header``: with the head
    and info parts, with one of them, then without either), then as version 1 (builds
    published before it)."""
    if sealed is None:
        return False, False, False
    v2 = db.schema_version >= 2
    digest = _seal_digest(db)
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
        found = {
            index_seal(digest, header, current, *groups),
            index_seal(digest, (float(row.n_min), float(row.n_max), row.index_kind),
                       [(r.candidate_id, *(getattr(r, n) if v2 or n != "learner" else None
                                           for n in LEGACY_SEALED_COLUMNS))
                        for r in rows.cands], *groups),
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


def _rows_table(
    db: Database, row: sa.Row, rows: _Rows, trusted: bool, models: bool, rebuilt: bool
) -> SkylineTable:
    """The skyline table of a build from its rows (swept again when ``rebuilt``)."""
    build_id = int(row.id)
    cands = rows.cands
    exp_models: dict[int, Any] = {}
    feature_sets: dict[str, frozenset] = {}
    payloads: list[Any] = []
    features: list[frozenset] = []
    for r in cands:
        payload = None
        if models and r.expansion_id is not None:
            if r.expansion_id not in rows.exp_rows:
                raise IndexIntegrityError(
                    f"build {build_id}: expansion {r.expansion_id} that candidate {r.key!r} "
                    "uses does not exist; refusing to open it")
            if r.expansion_id not in exp_models:
                exp_models[r.expansion_id] = _expansion_model(
                    db, rows.exp_rows[r.expansion_id], build_id, trusted)
            payload = exp_models[r.expansion_id]
        elif models:
            payload = _lazy_model(db, r.model_blob, r.model_format, r.model_sha256, trusted,
                                  f"model of candidate {r.key!r} of build {build_id}")
        payloads.append(payload)
        fs = feature_sets.get(r.features_json)
        if fs is None:
            fs = feature_sets[r.features_json] = frozenset(json.loads(r.features_json))
        features.append(fs)
    ids = [r.candidate_id for r in cands]
    v2 = db.schema_version >= 2
    columns = ({name: [getattr(r, name) for r in cands] for name in _UNCERTAINTY}
               if db.schema_version >= 3 else {})
    candidates = Candidate.from_columns(
        [decode_key(r.key_json) for r in cands],
        [r.accuracy for r in cands],
        stored_curves(ids, rows.coef_rows, f"build {build_id}: candidate"),
        features,
        payloads,
        [rows.needs.get(i, {}) for i in ids] if v2 else None,
        [r.learner for r in cands] if v2 else None,
        *_uncertainty(db, columns, f"build {build_id}"),
    )
    kind = TABLE_KINDS.get(row.index_kind, PolyDomIndex)
    if rebuilt:
        return kind.build(candidates, row.n_min, row.n_max)
    breaks = [r.n_lo for r in rows.range_rows]
    return kind(candidates, row.n_min, row.n_max, breaks, rows.sky,
                json.loads(row.stats or "{}"))


#: The candidate fields that hold an accuracy's uncertainty (schema version 3 on).
_UNCERTAINTY = ("accuracy_se", "fold_scores")


def _uncertainty(
    db: Database, columns: dict[str, list], what: str
) -> tuple[list[float] | None, list[tuple[float, ...]] | None]:
    """The candidates' standard errors and fold scores from their stored columns (None,
    None for a store of a schema version that keeps neither).

    Runtime complexity: O(K) plus one JSON decode per distinct fold-score text.
    """
    if db.schema_version < 3:
        return None, None
    decoded: dict[str, tuple[float, ...]] = {}
    folds = []
    for text in columns["fold_scores"]:
        found = decoded.get(text)
        if found is None:
            found = decoded[text] = fold_scores_from_text(text, f"{what}: a candidate")
        folds.append(found)
    return columns["accuracy_se"], folds


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

