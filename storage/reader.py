"""The read path of an index store: published indexes, build listings, SQL over the views.

Every function reads in one transaction (a consistent snapshot) and writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.errors import PolydomError
from polydom.index.built import Index
from polydom.index.polydom_index import IndexAll, PolyDomIndex
from polydom.index.table import SkylineTable
from storage import schema as S
from storage.blobs import BlobDigest, load_model
from storage.codec import decode_key, stored_curve, stored_curves
from storage.database import Database
from storage.seal import index_seal

__all__ = [
    "TABLE_KINDS",
    "IndexIntegrityError",
    "BuildRecord",
    "build_row",
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
            raise ValueError(f"url {db.display_url!r} has no complete build yet")
        return row
    if isinstance(build_id, bool) or not isinstance(build_id, (int, np.integer)):
        raise ValueError(f"build must be an integer build id, got {build_id!r}")
    row = conn.execute(sa.select(b).where(b.c.id == int(build_id))).first()
    if row is None:
        raise ValueError(f"build {build_id!r} does not exist in {db.display_url!r}")
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
        raise ValueError(f"build {build_id}: atoms {missing} have no stored cost coefficients")
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


class IndexIntegrityError(PolydomError, ValueError):
    """A published build whose rows no longer match its seal (edited after publishing)."""


def load_index(
    db: Database,
    build: int | None = None,
    trusted: bool = False,
    models: bool = True,
    rebuild: bool = False,
) -> Index:
    """Rebuild a published index from its rows (no sweep): the current build by default.

    The rows are checked against the build's seal (:mod:`storage.seal`); a mismatch raises
    :class:`IndexIntegrityError`, or with ``rebuild=True`` the skylines are swept again from
    the stored candidates as they now are (``info["rebuilt"]`` says so).

    See :meth:`storage.IndexStore.load_index`.

    Runtime complexity: O(K * d + E) rows plus decoding the K models.
    """
    if models:
        db.check_key()
    with db.read() as conn:
        row = build_row(db, conn, build)
        build_id = int(row.id)
        if row.status != "complete":
            raise ValueError(f"build {build_id} is not complete (status {row.status!r})")
        sealed = None
        if "build_seals" in db.tables:
            sealed = conn.execute(
                sa.select(S.build_seals.c.index_digest).where(
                    S.build_seals.c.build_id == build_id
                )
            ).scalar()
        cost_model = stored_cost_model(db, conn, build_id)
        atoms = list(cost_model.atoms)
        c, cc, x = S.candidates, S.candidate_costs, S.expansions
        cols = [
            c.c.candidate_id,
            c.c.key,
            c.c.key_json,
            c.c.accuracy,
            c.c.features_json,
            c.c.expansion_id,
            c.c.model_format,
            c.c.model_sha256,
        ]
        if db.schema_version >= 2:
            cols.append(c.c.learner)
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
                    raise ValueError(
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
        breaks = [r.n_lo for r in range_rows]
        entry_rows = conn.execute(
            sa.select(se.c.range_id, se.c.rank, se.c.candidate_id)
            .where(se.c.build_id == build_id)
            .order_by(se.c.range_id, se.c.rank)
        ).all()
        sky: list[list[int]] = [[] for _ in breaks]
        for r in entry_rows:
            if not 0 <= r.range_id < len(sky):
                raise IndexIntegrityError(
                    f"build {build_id}: skyline entry of unknown range {r.range_id}"
                )
            sky[r.range_id].append(r.candidate_id)
    rebuilt = False
    if sealed is not None:
        if db.store_key_id is not None:
            db.check_key()  # a signed seal is checked with the key, or not opened
        found = index_seal(
            db.digest if db.store_key_id is not None else BlobDigest(),
            (float(row.n_min), float(row.n_max), row.index_kind),
            [(r.candidate_id, r.key_json, float(r.accuracy), r.features_json,
              r.learner if db.schema_version >= 2 else None, r.expansion_id, r.model_sha256)
             for r in cands],
            [tuple(r) for r in coef_rows],
            need_rows,
            [(r.range_id, float(r.n_lo), float(r.n_hi)) for r in range_rows],
            [(r.range_id, r.rank, r.candidate_id) for r in entry_rows],
        )
        if found != sealed:
            if not rebuild:
                raise IndexIntegrityError(
                    f"build {build_id} of {db.display_url!r}: its candidates or skylines were "
                    "edited after publishing (the rows do not match the build's seal); "
                    "refusing to open it.  open_index(..., rebuild=True) sweeps the skylines "
                    "again from the stored candidates as they now are"
                )
            rebuilt = True
    exp_models: dict[int, Any] = {}
    feature_sets: dict[str, frozenset] = {}
    payloads: list[Any] = []
    features: list[frozenset] = []
    for r in cands:
        payload = None
        if models and r.expansion_id is not None:
            if r.expansion_id not in exp_models:
                e = exp_rows[r.expansion_id]
                exp_models[r.expansion_id] = load_model(
                    e.model_blob,
                    e.model_format,
                    e.model_sha256,
                    trusted=trusted,
                    what=f"model of expansion {e.id} ({e.features}) of build {build_id}",
                    digest=db.digest,
                )
            payload = exp_models[r.expansion_id]
        elif models:
            payload = load_model(
                r.model_blob,
                r.model_format,
                r.model_sha256,
                trusted=trusted,
                what=f"model of candidate {r.key!r} of build {build_id}",
                digest=db.digest,
            )
        payloads.append(payload)
        fs = feature_sets.get(r.features_json)
        if fs is None:
            fs = feature_sets[r.features_json] = frozenset(json.loads(r.features_json))
        features.append(fs)
    ids = [r.candidate_id for r in cands]
    v2 = db.schema_version >= 2
    candidates = Candidate.from_columns(
        [decode_key(r.key_json) for r in cands],
        [r.accuracy for r in cands],
        stored_curves(ids, coef_rows, f"build {build_id}: candidate"),
        features,
        payloads,
        [needs.get(i, {}) for i in ids] if v2 else None,
        [r.learner for r in cands] if v2 else None,
    )
    if rebuilt:
        table = TABLE_KINDS.get(row.index_kind, PolyDomIndex).build(
            candidates, row.n_min, row.n_max
        )
    else:
        table = TABLE_KINDS.get(row.index_kind, PolyDomIndex)(
            candidates, row.n_min, row.n_max, breaks, sky, json.loads(row.stats or "{}")
        )
    info = json.loads(row.info or "{}")
    info["build_id"] = build_id
    info["sealed"] = sealed is not None
    if rebuilt:
        info["rebuilt"] = "skylines swept again from the stored candidates (seal mismatch)"
    info["schema_version"] = db.schema_version
    return Index(table, cost_model, info=info)


def list_builds(db: Database) -> list[BuildRecord]:
    """Every build, oldest first, with its status and row counts.

    Runtime complexity: one query over the ``build_summary`` view.
    """
    with db.read() as conn:
        rows = conn.execute(sa.text("SELECT * FROM build_summary ORDER BY build_id")).all()
        stored = {r.id: r for r in conn.execute(
            sa.select(S.builds.c.id, S.builds.c.params, S.builds.c.info))}
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

