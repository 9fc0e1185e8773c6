"""The write path of an index store: register a build, publish its index atomically.

A build is registered by :func:`begin_build` (or resumed: an unfinished build with the same
arguments keeps its id), its expansions are committed one by one through
:class:`storage.expansion_cache.ExpansionCache`, and :func:`publish` writes every row of the
index and moves the ``is_current`` flag in one transaction.  Rows of a published build are
never changed afterwards.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa

from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.names import candidate_name
from polydom.errors import BuildPublishedError, CurrentBuildChangedError, InvalidArgumentError
from polydom.index.built import Index
from storage import index_arrays, publications
from storage import schema as S
from storage.blobs import dump_model
from storage.build_records import TABLE_KINDS, build_row
from storage.candidate_fields import (
    CANDIDATE_FIELDS,
    StoredCandidate,
    by_feed,
    candidate_row,
    sealed_fields,
    sealed_values,
)
from storage.codec import (
    canonical_json,
    digest,
    feature_mask,
    ordered_names,
)
from storage.cost_model_rows import (
    STEP_TABLES,
    cost_model_digest,
    cost_model_rows,
    lattice_order,
    read_cost_model,
)
from storage.database import Database, now
from storage.expansion_seals import verified_expansions
from storage.seal import index_seal, seal_header

__all__ = [
    "TRAINING_NEUTRAL_PARAMS",
    "BuildPublishedError",
    "KnownModels",
    "begin_build",
    "build_cost_model",
    "delete_builds",
    "fail_build",
    "publish",
]

#: Build parameters that do not change what training a feature set produces; builds that
#: differ only in these share their expansions.
TRAINING_NEUTRAL_PARAMS = frozenset({"alpha", "delta", "domain", "n_min", "n_max", "explore"})

#: The candidates' column that links a candidate to the expansion whose model it uses.
_LINK = by_feed(CANDIDATE_FIELDS)["expansion"].name

#: ``id(model) -> (model, expansion_key, expansion id)``: models an expansion cache handed
#: out or stored, so that :func:`publish` links candidates to their stored expansion.
KnownModels = dict[int, tuple[Any, str, int]]


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    return None


def _json_or_str(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True, default=str)


def build_cost_model(
    costs: CostModel | Mapping[str, CostCurve | str],
    columns: Mapping[str, Sequence[int]] | None = None,
) -> CostModel:
    """The cost model a build stores: ``costs`` with ``columns`` (atom -> columns) when
    given, else its own columns, else one column per atom in atom order.

    Runtime complexity: O(atoms + columns).

    Raises
    ------
    ValueError
        If ``costs`` is empty or not a cost model, or ``columns`` do not name exactly the
        atoms.
    """
    if not isinstance(costs, (CostModel, Mapping)) or not costs or (
        isinstance(costs, CostModel) and not costs.atoms
    ):
        raise InvalidArgumentError(
            f"costs must be a non-empty mapping name -> CostCurve, got {costs!r}")
    model = CostModel.coerce(
        {str(k): v for k, v in costs.items()} if isinstance(costs, Mapping) else costs
    )
    names = list(model.atoms)
    if columns is not None:
        if set(columns) != set(names):
            raise InvalidArgumentError(
                f"columns must name exactly the features of costs {names}, got {list(columns)}"
            )
        model = model.with_columns({name: [int(c) for c in columns[name]] for name in names})
    elif not model.has_columns:
        model = model.with_columns({name: [i] for i, name in enumerate(names)})
    return model


def begin_build(
    db: Database,
    params: Mapping[str, Any],
    costs: CostModel | Mapping[str, CostCurve | str],
    columns: Mapping[str, Sequence[int]] | None = None,
    learner: str | None = None,
    cost_models: dict[int, CostModel] | None = None,
) -> int:
    """Register a build (or find the unfinished one with identical arguments).

    See :meth:`storage.IndexStore.begin_build`.  ``cost_models`` gets ``build id -> the
    cost model as stored``, so that :func:`publish` need not read it back.

    Runtime complexity: O(F * d + B) rows written for F atoms of degree d, B bundle members.
    """
    db.check_writable()
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"params must be a mapping, got {params!r}")
    if learner is not None and not (isinstance(learner, str) and learner.strip()
                                    and "\n" not in learner):
        raise InvalidArgumentError(f"learner must be a short one-line name, got {learner!r}")
    params = dict(params)
    if learner is None and params.get("learner") is not None:
        learner = str(params["learner"])
    _check_text(db, learner, "learner")
    canonical_json(params, "params")
    model = build_cost_model(costs, columns)
    curves = model.atoms
    names = list(curves)
    for name in [*names, *model.bundles]:
        _check_text(db, name, "feature name")
    cols = model.columns
    bundles = {name: sorted(members, key=names.index) for name, members in model.bundles.items()}
    coefs = {name: curves[name].coefficients.tolist() for name in names}
    described = {"costs": coefs, "columns": cols}
    if bundles:
        described["bundles"] = bundles
    params_key = digest({"params": params, **described}, "params")
    training = {k: v for k, v in params.items() if k not in TRAINING_NEUTRAL_PARAMS}
    lattice = {"features": names, "columns": cols}
    if bundles:
        lattice["bundles"] = bundles
    expansion_key = digest({"params": training, **lattice})
    build_id = _find_or_insert(db, params, params_key, expansion_key, model, learner)
    _delete_failed(db, params_key)  # after the insert: its expansions may serve this build
    if cost_models is not None:
        cost_models[build_id] = model
    return build_id


def _find_or_insert(
    db: Database, params: dict, params_key: str, expansion_key: str, model: CostModel,
    learner: str | None,
) -> int:
    """The unfinished build of ``params_key`` (a failed one restarts), or a new one."""
    b = S.builds
    if model.steps or model.start is not None:
        db.add_tables(STEP_TABLES)  # a store made before steps existed: before the write
    with db.write() as conn:
        found = conn.execute(
            sa.select(b.c.id)
            .where(b.c.params_key == params_key, b.c.status.in_(("building", "failed")))
            .order_by(b.c.id.desc())
            .limit(1)
        ).scalar()
        if found is not None:  # resume it; a failed one is started again
            conn.execute(
                b.update().where(b.c.id == found, b.c.status == "failed")
                .values(status="building", info=None)
            )
            return int(found)
        build_id = conn.execute(
            b.insert().values(
                params_key=params_key,
                expansion_key=expansion_key,
                params=canonical_json(params),
                alpha=_number(params.get("alpha")),
                delta=_number(params.get("delta")),
                learner=learner,
                status="building",
                is_current=False,
                created_at=now(),
            )
        ).inserted_primary_key[0]
        for name, rows in cost_model_rows(int(build_id), model).items():
            if rows:
                conn.execute(S.metadata.tables[name].insert(), rows)
    return int(build_id)


def publish(db: Database, known_models: KnownModels, build_id: int, index: Index,
            cost_model: CostModel | None = None, replaces: int | None = None) -> None:
    """Write ``index`` as the result of the build and make it current, atomically.

    ``cost_model`` is the build's cost model as :func:`begin_build` stored it (read back
    from the store when None).  With ``replaces``, only if build ``replaces`` is still the
    current build when the publishing transaction runs (compare and publish, under the
    store's write lock), else :class:`polydom.errors.CurrentBuildChangedError` and nothing
    is written.  See :meth:`storage.IndexStore.publish`.

    Runtime complexity: O(K * d + E) rows for K candidates and E skyline entries.
    """
    if not isinstance(index, Index):
        raise InvalidArgumentError(f"index must be a polydom.Index, got {type(index).__name__}")
    db.check_writable()
    build, model, stored = _publishable(db, build_id, cost_model)
    build_id = int(build.id)
    _check_cost_model(index, model, build_id)
    rows = _index_rows(db, known_models, build, index, model, stored)
    table = index.table
    info = _json_or_str(index.info)  # sealed: the unit, protocol, ... change answers
    db.add_tables(("build_seals", "build_arrays", "publications", "expansion_seals"))
    with db.write() as conn:
        if replaces is not None:
            current = conn.execute(
                sa.select(S.builds.c.id).where(S.builds.c.is_current)).scalar()
            if current != replaces:
                raise CurrentBuildChangedError(
                    f"build {build_id} of {db.display_url!r} was to replace build {replaces}, "
                    f"but build {current} is current now (published meanwhile); not "
                    "published")
        sequence = publications.next_sequence(conn)
        header = seal_header(
            *table.domain, type(table).__name__, build.expansion_key, sequence,
            cost_model_digest(cost_model_rows(build_id, model), S.SCHEMA_VERSION),
            verified_expansions(db, conn, rows.linked, build.expansion_key), head=True,
            info=info)
        seal = index_seal(db.digest, header, rows.sealed, *rows.seal_groups())
        arrays = index_arrays.encode(
            build_id, seal, type(table).__name__, tuple(map(float, table.domain)),
            [cand.key for cand in table.candidates], rows.fields, rows.sealed,
            [cand.cost.coefficients for cand in table.candidates], rows.seal_groups()[1],
            [r["n_lo"] for r in rows.ranges], table.skyline_positions, header,
        )
        _mark_complete(db, conn, build_id, index, info)
        rows.insert(conn)
        _make_current(db, conn, build_id, sequence, seal, arrays)
    # fresh statistics, so that SQL over the views is planned for the new rows
    db.analyze("candidates, candidate_costs, candidate_needs, ranges, skyline_entries")


def _publishable(db: Database, build_id: int, cost_model: CostModel | None
                 ) -> tuple[sa.Row, CostModel, dict[str | None, tuple[int, str | None]]]:
    """The build's row, its cost model (``cost_model``, else read) and its training key's
    stored expansions (``feature_mask -> (id, model format)``), after checking that the
    build is being built."""
    with db.read() as conn:
        build = build_row(db, conn, build_id)
        build_id = int(build.id)
        if build.status == "complete":
            raise BuildPublishedError(
                f"build {build_id} of {db.display_url!r} is already published (by another "
                "writer of a build with identical arguments, or earlier); open it with "
                f"open_index(url, build={build_id})")
        if build.status != "building":
            raise InvalidArgumentError(f"build {build_id} is already {build.status}")
        if cost_model is None:
            cost_model = read_cost_model(db, conn, build_id).model
        x = S.expansions
        stored = {
            r.feature_mask: (int(r.id), r.model_format)
            for r in conn.execute(
                sa.select(x.c.id, x.c.feature_mask, x.c.model_format).where(
                    x.c.expansion_key == build.expansion_key
                )
            )
        }
    return build, cost_model, stored


def _check_cost_model(index: Index, model: CostModel, build_id: int) -> None:
    """Refuse an index over other features, cost curves or bundles than the build's."""
    atoms = list(model.atoms)
    if list(index.costs) != atoms:
        raise InvalidArgumentError(
            f"index features {list(index.costs)} are not the features of build "
            f"{build_id} {atoms}"
        )
    if list(index.costs.values()) != list(model.atoms.values()):
        raise InvalidArgumentError(
            f"index cost curves {[str(index.costs[n]) for n in atoms]} differ from those "
            f"given to begin_build for build {build_id}"
        )
    if index.cost_model.bundles != model.bundles:
        raise InvalidArgumentError(
            f"index bundles { {k: sorted(v) for k, v in index.cost_model.bundles.items()} } "
            f"differ from those given to begin_build for build {build_id}"
        )


@dataclass
class _IndexRows:
    """The rows of a published index: candidates (and their sealed values), cost
    coefficients, needs, ranges, skyline entries, and the expansions its candidates use."""

    fields: tuple
    candidates: list[dict[str, Any]]
    sealed: list[tuple]
    costs: list[dict[str, Any]]
    needs: list[dict[str, Any]]
    ranges: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    linked: list[int]

    def seal_groups(self) -> tuple[list[tuple], ...]:
        """Coefficient, need, range and entry rows as :func:`storage.seal.index_seal`
        takes them."""
        return (
            [(r["candidate_id"], r["degree"], r["coefficient"]) for r in self.costs],
            [(r["candidate_id"], r["feature_id"], r["probability"]) for r in self.needs],
            [(r["range_id"], float(r["n_lo"]), float(r["n_hi"])) for r in self.ranges],
            [(r["range_id"], r["rank"], r["candidate_id"]) for r in self.entries],
        )

    def insert(self, conn: sa.Connection) -> None:
        """Insert every row."""
        conn.execute(S.candidates.insert(), self.candidates)
        conn.execute(S.candidate_costs.insert(), self.costs)
        if self.needs:
            conn.execute(S.candidate_needs.insert(), self.needs)
        conn.execute(S.ranges.insert(), self.ranges)
        conn.execute(S.skyline_entries.insert(), self.entries)


def _index_rows(db: Database, known_models: KnownModels, build: sa.Row, index: Index,
                model: CostModel, stored: dict) -> _IndexRows:
    """Every row of ``index`` as the build's, its models linked to their expansions or
    serialised (before the write transaction opens)."""
    build_id = int(build.id)
    table = index.table
    kind = type(table).__name__
    if kind not in TABLE_KINDS:
        raise InvalidArgumentError(f"index.table must be one of {sorted(TABLE_KINDS)}, got {kind}")
    atom_id = {name: i for i, name in enumerate(model.atoms)}
    order = lattice_order(model)
    need_rows, cand_rows, cost_rows = [], [], []
    for pos, cand in enumerate(table.candidates):
        unknown = sorted(set(cand.needs) - atom_id.keys())
        if unknown:
            raise InvalidArgumentError(
                f"candidate {cand.key!r} needs atomic feature {unknown[0]!r}, which has no "
                f"cost curve in build {build_id}"
            )
        need_rows.extend(
            {"build_id": build_id, "candidate_id": pos, "feature_id": atom_id[a],
             "probability": float(p)}
            for a, p in cand.needs.items()
        )
    for pos, cand in enumerate(table.candidates):
        _check_text(db, cand.learner, f"learner of candidate {pos}")
        _check_text(db, candidate_name(cand.key), f"key of candidate {pos}")
        mask = feature_mask(cand.features, order)
        expansion_id, blob = _model_link(db, known_models, build.expansion_key, cand,
                                         stored.get(mask))
        cand_rows.append(candidate_row(build_id, StoredCandidate(
            pos, cand, ordered_names(cand.features, order), mask, expansion_id, blob)))
        cost_rows.extend(
            {"build_id": build_id, "candidate_id": pos, "degree": k, "coefficient": float(c)}
            for k, c in enumerate(cand.cost.coefficients)
        )
    fields = sealed_fields(S.SCHEMA_VERSION)
    return _IndexRows(
        fields, cand_rows, [sealed_values(r, fields) for r in cand_rows], cost_rows, need_rows,
        [{"build_id": build_id, "range_id": r, "n_lo": lo, "n_hi": hi}
         for r, (lo, hi) in enumerate(table.ranges)],
        [{"build_id": build_id, "range_id": r, "rank": k, "candidate_id": pos}
         for r, sky in enumerate(table.skyline_positions) for k, pos in enumerate(sky)],
        sorted({r[_LINK] for r in cand_rows} - {None}),
    )


def _model_link(db: Database, known_models: KnownModels, expansion_key: str, cand: Any,
                stored: tuple[int, str | None] | None
                ) -> tuple[int | None, tuple[bytes, str, str] | None]:
    """``(expansion id, own model)`` of a candidate: the expansion its model came from
    (handed out by this build's expansion cache), or a model-less stored expansion on its
    feature set, else its own model blob ``(blob, format, digest)`` (None: no model)."""
    known = known_models.get(id(cand.payload))
    if (cand.payload is not None and known is not None and known[0] is cand.payload
            and known[1] == expansion_key):
        return known[2], None
    if cand.payload is None and stored is not None and stored[1] is None:
        return stored[0], None
    dumped = dump_model(cand.payload)
    if dumped is None:
        return None, None
    return None, (dumped[0], dumped[1], db.digest.of(dumped[0]))


def _mark_complete(db: Database, conn: sa.Connection, build_id: int, index: Index,
                   info: str) -> None:
    """Mark the build complete with its domain, kind, ``info`` text and statistics, or raise
    :class:`BuildPublishedError` when another writer published it meanwhile."""
    b = S.builds
    n_min, n_max = index.table.domain
    done = conn.execute(
        b.update()
        .where(b.c.id == build_id, b.c.status == "building")
        .values(status="complete", completed_at=now(), n_min=n_min, n_max=n_max,
                index_kind=type(index.table).__name__, info=info,
                stats=_json_or_str(index.table.stats_))
    )
    if done.rowcount == 1:
        return
    status = conn.execute(sa.select(b.c.status).where(b.c.id == build_id)).scalar()
    if status != "complete":
        raise InvalidArgumentError(
            f"build {build_id} of {db.display_url!r} is {status} "
            "(changed by another writer); not published")
    raise BuildPublishedError(
        f"build {build_id} of {db.display_url!r} was published meanwhile by another "
        "writer (a build with identical arguments); open it with "
        f"open_index(url, build={build_id})"
    )


def _make_current(db: Database, conn: sa.Connection, build_id: int, sequence: int,
                  seal: str, arrays: bytes) -> None:
    """Move the current flag to the build and write its publication, seal, head record
    and index arrays."""
    b = S.builds
    conn.execute(b.update().where(b.c.is_current).values(is_current=False))
    conn.execute(b.update().where(b.c.id == build_id).values(is_current=True))
    conn.execute(S.publications.insert().values(
        sequence=sequence, build_id=build_id, published_at=now()))
    conn.execute(S.build_seals.insert().values(build_id=build_id, index_digest=seal))
    publications.write_head(conn, db.digest, sequence, build_id, seal)
    conn.execute(S.build_arrays.insert().values(
        build_id=build_id, format=index_arrays.FORMAT, digest=db.digest.of(arrays),
        blob=arrays))


def _check_text(db: Database, value: str | None, what: str) -> None:
    """Refuse a NUL character on PostgreSQL, whose text columns cannot hold it."""
    if db.dialect == "postgresql" and value is not None and "\x00" in value:
        raise InvalidArgumentError(
            f"{what} must not contain a NUL character on PostgreSQL "
            f"({db.display_url!r}), got {value!r}")


# ---------------------------------------------------------------------------- lifecycle
def fail_build(db: Database, build_id: int, error: BaseException | str) -> None:
    """Mark an unfinished build ``failed`` with the error (its first line) in ``info``.

    Its expansions stay: the next start with the same arguments resumes the build from
    them; the next start of another build deletes it (:func:`begin_build`).

    Runtime complexity: one row updated.
    """
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    first = (text.strip().splitlines() or [""])[0][:500]
    b = S.builds
    with db.write() as conn:
        conn.execute(
            b.update()
            .where(b.c.id == int(build_id), b.c.status == "building")
            .values(status="failed", info=_json_or_str({"error": first}),
                    completed_at=now())
        )


def _delete_failed(db: Database, params_key: str) -> None:
    """Delete the failed builds of other arguments (a build that starts cleans up after
    them; a failed build with the same arguments is resumed instead)."""
    b = S.builds
    with db.read() as conn:
        failed = [int(i) for i in conn.execute(
            sa.select(b.c.id).where(b.c.status == "failed", b.c.params_key != params_key)
        ).scalars()]
    if failed:
        delete_builds(db, failed, vacuum=False, only_failed=True)


_BUILD_TABLES = ("skyline_entries", "ranges", "candidate_needs", "candidate_costs",
                 "candidates", "bundle_atoms", "bundles", "feature_costs", "features",
                 "build_seals", "build_arrays", "publications")


def delete_builds(
    db: Database,
    build_ids: Sequence[int] | None = None,
    vacuum: bool = True,
    only_failed: bool = False,
) -> dict[str, Any]:
    """Delete builds and every row of theirs; keep what the remaining builds use.

    ``build_ids`` None: every complete or failed build except the current one (builds still
    ``building`` may be running elsewhere and are kept).  The current build is never
    deleted.  An expansion of a deleted build is kept (and moved to a remaining build) when
    a remaining build's candidates use its model or a remaining build could reuse it (same
    training parameters); otherwise it is deleted with its model blob.  With ``vacuum`` a
    SQLite file is compacted (``VACUUM``) so that it shrinks, and PostgreSQL tables are
    vacuumed.  ``only_failed`` skips, inside the transaction, the given builds that are no
    longer failed (another process may have resumed one).

    Returns ``{"deleted": [ids], "expansions_deleted": n, "bytes_before": b0,
    "bytes_after": b1}`` (sizes of a SQLite file; None elsewhere).

    Runtime complexity: O(rows of the deleted builds) plus the VACUUM (a copy of the file).

    Raises
    ------
    ValueError
        If an id is unknown, or names the current build.
    """
    db.check_writable()
    b, x, c = S.builds, S.expansions, S.candidates
    before = _file_size(db)
    with db.write() as conn:
        rows = conn.execute(sa.select(b.c.id, b.c.status, b.c.is_current,
                                      b.c.expansion_key)).all()
        known = {int(r.id): r for r in rows}
        if build_ids is None:
            ids = sorted(i for i, r in known.items()
                         if not r.is_current and r.status in ("complete", "failed"))
        else:
            ids = sorted({int(i) for i in build_ids})
            unknown = [i for i in ids if i not in known]
            if only_failed:  # gone or resumed meanwhile: not ours to delete
                ids = [i for i in ids if i in known and known[i].status == "failed"]
                unknown = []
            if unknown:
                raise InvalidArgumentError(f"builds {unknown} do not exist in {db.display_url!r}")
            current = [i for i in ids if known[i].is_current]
            if current:
                raise InvalidArgumentError(
                    f"build {current[0]} is the current build; publish another build "
                    "before deleting it"
                )
        if not ids:
            return {"deleted": [], "expansions_deleted": 0, "bytes_before": before,
                    "bytes_after": before}
        remaining = [i for i in known if i not in ids]
        for name in _BUILD_TABLES:
            if name in db.tables:
                table = S.metadata.tables[name]
                conn.execute(table.delete().where(table.c.build_id.in_(ids)))
        used = dict(conn.execute(
            sa.select(c.c[_LINK], sa.func.min(c.c.build_id))
            .where(c.c[_LINK].is_not(None), c.c.build_id.in_(remaining or [-1]))
            .group_by(c.c[_LINK])
        ).all())
        owner_by_key = {}
        for i in remaining:
            owner_by_key.setdefault(known[i].expansion_key, i)
        gone = 0
        for eid, key in conn.execute(
            sa.select(x.c.id, x.c.expansion_key).where(x.c.build_id.in_(ids))
        ).all():
            owner = used.get(eid, owner_by_key.get(key))
            if owner is None:
                for name in ("expansion_predictions", "expansion_seals"):
                    if name in db.tables:
                        side = S.metadata.tables[name]
                        conn.execute(side.delete().where(side.c.expansion_id == eid))
                conn.execute(x.delete().where(x.c.id == eid))
                gone += 1
            else:
                conn.execute(x.update().where(x.c.id == eid).values(build_id=owner))
        conn.execute(b.delete().where(b.c.id.in_(ids)))
    if vacuum:
        _vacuum(db)
    return {"deleted": ids, "expansions_deleted": gone, "bytes_before": before,
            "bytes_after": _file_size(db)}


def _file_size(db: Database) -> int | None:
    """Bytes of a SQLite store on disk: the file and its write-ahead log (None elsewhere)."""
    if db.dialect != "sqlite":
        return None
    path = sa.engine.make_url(db.url).database
    if not path or not os.path.exists(path):
        return None
    wal = f"{path}-wal"
    return os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)


def _vacuum(db: Database) -> None:
    """Give the space of deleted rows back: VACUUM (and a WAL checkpoint) on SQLite."""
    if db.dialect == "sqlite":
        raw = db.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("VACUUM")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
    elif db.dialect == "postgresql":
        with db.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM")
