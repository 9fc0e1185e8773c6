"""IndexStore: builds, expansions and published indexes in any SQLAlchemy database.

A build goes through three steps::

    store = IndexStore("sqlite:///index.db")
    build_id = store.begin_build(params, costs, columns)     # or the id of the unfinished one
    cache = store.expansion_cache(build_id)                  # each assignment commits at once
    ...  explorer: `if fs in cache: ...` / `cache[fs] = Expansion(...)`  ...
    store.publish(build_id, index)                           # one transaction; becomes current

and a reader calls :meth:`IndexStore.load_index` (or ``polydom.open_index``).  Publishing
writes every row of the index and flips the ``is_current`` flag in one transaction, and the
rows of a published build are never changed afterwards, so a reader sees the old index or
the new one, never a mix.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from lattice.expansion import Expansion
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.index.built import Index
from polydom.index.polydom_index import IndexAll, PolyDomIndex
from polydom.index.table import SkylineTable
from storage import schema as S
from storage.blobs import dump_model, load_model, sha256_hex
from storage.codec import (
    canonical_json,
    cost_expression,
    decode_key,
    digest,
    display_key,
    encode_key,
    feature_mask,
    mask_features,
)

__all__ = [
    "BuildRecord",
    "ExpansionCache",
    "IndexStore",
    "SchemaVersionError",
    "StoreNotFoundError",
    "TRAINING_NEUTRAL_PARAMS",
    "normalize_url",
]

#: Build parameters that do not change what training a feature set produces; builds that
#: differ only in these share their expansions.
TRAINING_NEUTRAL_PARAMS = frozenset({"alpha", "delta", "domain", "n_min", "n_max", "explore"})

_TABLE_KINDS: dict[str, type[SkylineTable]] = {
    "PolyDomIndex": PolyDomIndex,
    "IndexAll": IndexAll,
}


class SchemaVersionError(RuntimeError):
    """The database holds a polydom store of another schema version (or a foreign layout)."""


class StoreNotFoundError(ValueError):
    """No polydom store at the URL (opened for reading only)."""


def normalize_url(url: str | os.PathLike) -> str:
    """A SQLAlchemy URL for ``url``: a plain file path becomes ``sqlite:///<absolute path>``."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise ValueError(f"url must be a SQLAlchemy URL or a file path, got {url!r}")
    if "://" not in url:
        return "sqlite:///" + str(Path(url).resolve())
    return url


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json_or_str(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True, default=str)


@dataclass(frozen=True)
class BuildRecord:
    """One row of :meth:`IndexStore.list_builds`."""

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


class IndexStore:
    """Persistence of builds, expansions and indexes in a SQL database.

    Parameters
    ----------
    url : str or path
        Any SQLAlchemy URL (``"sqlite:///index.db"``, ``"postgresql+psycopg://..."``) or a
        plain file path (a SQLite file).
    create : bool, default True
        Create the schema in an empty database.  With False, a database without a polydom
        store raises :class:`StoreNotFoundError` (and a missing SQLite file is not created).

    Raises
    ------
    SchemaVersionError
        If the database holds a store of another schema version.
    """

    def __init__(self, url: str | os.PathLike, create: bool = True) -> None:
        self.url = normalize_url(url)
        parsed = sa.engine.make_url(self.url)
        self.display_url = parsed.render_as_string(hide_password=True)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            database = parsed.database or ""
            if not create and database not in ("", ":memory:") and not Path(database).exists():
                raise StoreNotFoundError(f"url {self.display_url!r}: no such SQLite file")
            self.engine = sa.create_engine(parsed, connect_args={"timeout": 60})
            _sqlite_transactions(self.engine, wal=database not in ("", ":memory:"))
        else:
            self.engine = sa.create_engine(parsed)
        # id(model) -> (model, expansion_key, expansion id): models handed out or stored by
        # an expansion cache, so that publish can link candidates to their expansion.
        self._known_models: dict[int, tuple[Any, str, int]] = {}
        try:
            self._ensure_schema(create)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"IndexStore({self.display_url!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite: writers queue, never deadlock)."""
        with self.engine.connect() as conn:
            conn.execution_options(polydom_write=True)
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        """A read transaction: one consistent snapshot on SQLite (WAL) and PostgreSQL."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    # ------------------------------------------------------------------ schema
    def _ensure_schema(self, create: bool) -> None:
        for attempt in range(2):
            with self._read() as conn:
                names = set(sa.inspect(conn).get_table_names())
                if "schema_info" in names:
                    self._check_version(conn)
                    return
            if not create:
                raise StoreNotFoundError(f"url {self.display_url!r} holds no polydom index store")
            clash = names & set(S.TABLES)
            if clash:
                raise SchemaVersionError(
                    f"url {self.display_url!r} has tables {sorted(clash)} but no schema_info: "
                    "not a polydom store of a known schema version"
                )
            try:
                with self._write() as conn:
                    if "schema_info" in set(sa.inspect(conn).get_table_names()):
                        continue
                    S.metadata.create_all(conn)
                    for name, select in S.VIEWS.items():
                        verb = (
                            "CREATE VIEW IF NOT EXISTS"
                            if self.dialect == "sqlite"
                            else "CREATE OR REPLACE VIEW"
                        )
                        conn.exec_driver_sql(f"{verb} {name} AS {select}")
                    conn.execute(
                        S.schema_info.insert(),
                        [
                            {"key": "schema_version", "value": str(S.SCHEMA_VERSION)},
                            {"key": "created_at", "value": _now()},
                        ],
                    )
                return
            except sa.exc.DBAPIError:  # another process created it at the same moment
                if attempt:
                    raise

    def _check_version(self, conn: sa.Connection) -> None:
        value = conn.execute(
            sa.select(S.schema_info.c.value).where(S.schema_info.c.key == "schema_version")
        ).scalar()
        if value is None or value != str(S.SCHEMA_VERSION):
            raise SchemaVersionError(
                f"url {self.display_url!r} holds a polydom store of schema version {value}; "
                f"this version of polydom reads schema version {S.SCHEMA_VERSION} "
                "(rebuild the index into a new database)"
            )

    # ------------------------------------------------------------------ builds
    def begin_build(
        self,
        params: Mapping[str, Any],
        costs: Mapping[str, CostCurve | str],
        columns: Mapping[str, Sequence[int]] | None = None,
    ) -> int:
        """Register a build (or find the unfinished one with identical arguments).

        ``params`` (alpha, delta, a learner description, the domain, ...) must be
        JSON-serialisable; ``alpha``, ``delta`` and ``learner`` also get their own columns.
        If a build with the same ``params``, ``costs`` and ``columns`` exists and is not
        complete, its id is returned so that the build resumes from its expansions.

        Expansions are shared by every build whose params agree apart from
        :data:`TRAINING_NEUTRAL_PARAMS` and whose feature names and columns agree.

        Runtime complexity: O(F * d) rows written for F features of degree d.

        Returns
        -------
        int
            The build id.
        """
        if not isinstance(params, Mapping):
            raise ValueError(f"params must be a mapping, got {params!r}")
        params = dict(params)
        canonical_json(params, "params")
        if not isinstance(costs, Mapping) or not costs:
            raise ValueError(f"costs must be a non-empty mapping name -> CostCurve, got {costs!r}")
        curves = {str(name): CostCurve.coerce(c) for name, c in costs.items()}
        names = list(curves)
        if columns is None:
            columns = {name: [i] for i, name in enumerate(names)}
        if set(columns) != set(names):
            raise ValueError(
                f"columns must name exactly the features of costs {names}, got {list(columns)}"
            )
        cols = {name: [int(c) for c in columns[name]] for name in names}
        coefs = {name: curves[name].coefficients.tolist() for name in names}
        params_key = digest({"params": params, "costs": coefs, "columns": cols}, "params")
        training = {k: v for k, v in params.items() if k not in TRAINING_NEUTRAL_PARAMS}
        expansion_key = digest({"params": training, "features": names, "columns": cols})
        b = S.builds
        with self._write() as conn:
            found = conn.execute(
                sa.select(b.c.id)
                .where(b.c.params_key == params_key, b.c.status == "building")
                .order_by(b.c.id.desc())
                .limit(1)
            ).scalar()
            if found is not None:
                return int(found)
            build_id = conn.execute(
                b.insert().values(
                    params_key=params_key,
                    expansion_key=expansion_key,
                    params=canonical_json(params),
                    alpha=_number(params.get("alpha")),
                    delta=_number(params.get("delta")),
                    learner=None if params.get("learner") is None else str(params["learner"]),
                    status="building",
                    is_current=False,
                    created_at=_now(),
                )
            ).inserted_primary_key[0]
            conn.execute(
                S.features.insert(),
                [
                    {
                        "build_id": build_id,
                        "feature_id": i,
                        "name": name,
                        "columns": canonical_json(cols[name]),
                        "cost": cost_expression(curves[name]),
                        "degree": curves[name].degree,
                    }
                    for i, name in enumerate(names)
                ],
            )
            conn.execute(
                S.feature_costs.insert(),
                [
                    {"build_id": build_id, "feature_id": i, "degree": k, "coefficient": c}
                    for i, name in enumerate(names)
                    for k, c in enumerate(coefs[name])
                ],
            )
        return int(build_id)

    def _build_row(self, conn: sa.Connection, build_id: int | None) -> sa.Row:
        b = S.builds
        if build_id is None:
            row = conn.execute(sa.select(b).where(b.c.is_current)).first()
            if row is None:
                raise ValueError(f"url {self.display_url!r} has no complete build yet")
            return row
        if isinstance(build_id, bool) or not isinstance(build_id, (int, np.integer)):
            raise ValueError(f"build must be an integer build id, got {build_id!r}")
        row = conn.execute(sa.select(b).where(b.c.id == int(build_id))).first()
        if row is None:
            raise ValueError(f"build {build_id!r} does not exist in {self.display_url!r}")
        return row

    def _feature_order(self, conn: sa.Connection, build_id: int) -> list[str]:
        f = S.features
        rows = conn.execute(
            sa.select(f.c.name).where(f.c.build_id == build_id).order_by(f.c.feature_id)
        )
        return [r.name for r in rows]

    def _feature_costs(self, conn: sa.Connection, build_id: int) -> list[CostCurve]:
        fc = S.feature_costs
        coefs: dict[int, dict[int, float]] = {}
        for r in conn.execute(sa.select(fc).where(fc.c.build_id == build_id)):
            coefs.setdefault(r.feature_id, {})[r.degree] = r.coefficient
        return [_curve(coefs[i]) for i in sorted(coefs)]

    def expansion_cache(self, build_id: int, trusted: bool = False) -> ExpansionCache:
        """The expansions of a build as a mapping ``frozenset(names) -> Expansion``.

        Assigning commits the expansion (with its model) in its own transaction; reading
        returns stored ones, models included (loaded as :meth:`load_index` does, with
        ``trusted``).
        """
        return ExpansionCache(self, build_id, trusted)

    def publish(self, build_id: int, index: Index) -> None:
        """Write ``index`` as the result of the build and make it current, atomically.

        Candidates whose model came from this build's expansion cache (or that have no
        model and a stored expansion on the same feature set) are linked to that expansion;
        others (budgeted learners, ...) get their own model blob.  Models are serialised
        before the transaction opens; the transaction writes candidates, their cost
        coefficients, ranges and skyline entries, marks the build complete and moves the
        current flag to it.  On PostgreSQL the tables are then analysed, so that queries over
        the views are planned with statistics of the new rows.

        Runtime complexity: O(K * d + E) rows for K candidates and E skyline entries.

        Raises
        ------
        ValueError
            If the build does not exist or is already complete, or ``index`` is not a
            :class:`polydom.Index` over the build's features.
        """
        if not isinstance(index, Index):
            raise ValueError(f"index must be a polydom.Index, got {type(index).__name__}")
        with self._read() as conn:
            build = self._build_row(conn, build_id)
            build_id = int(build.id)
            if build.status != "building":
                raise ValueError(f"build {build_id} is already {build.status}")
            order = self._feature_order(conn, build_id)
            build_costs = self._feature_costs(conn, build_id)
            x = S.expansions
            stored = {
                r.feature_mask: (int(r.id), r.model_format)
                for r in conn.execute(
                    sa.select(x.c.id, x.c.feature_mask, x.c.model_format).where(
                        x.c.expansion_key == build.expansion_key
                    )
                )
            }
        if list(index.costs) != order:
            raise ValueError(
                f"index features {list(index.costs)} are not the features of build "
                f"{build_id} {order}"
            )
        if [index.costs[name] for name in order] != build_costs:
            raise ValueError(
                f"index cost curves {[str(index.costs[n]) for n in order]} differ from those "
                f"given to begin_build for build {build_id}"
            )
        table = index.table
        kind = type(table).__name__
        if kind not in _TABLE_KINDS:
            raise ValueError(f"index.table must be one of {sorted(_TABLE_KINDS)}, got {kind}")
        cand_rows, cost_rows = [], []
        for pos, cand in enumerate(table.candidates):
            mask = feature_mask(cand.features, order)
            row = {
                "build_id": build_id,
                "candidate_id": pos,
                "key": display_key(cand.key),
                "key_json": encode_key(cand.key),
                "accuracy": cand.accuracy,
                "cost": cost_expression(cand.cost),
                "degree": cand.cost.degree,
                "features": ", ".join(_names_in_order(cand.features, order)),
                "features_json": canonical_json(_names_in_order(cand.features, order)),
                "feature_mask": mask,
                "expansion_id": None,
                "model_format": None,
                "model_sha256": None,
                "model_blob": None,
            }
            known = self._known_models.get(id(cand.payload))
            if (
                cand.payload is not None
                and known is not None
                and known[0] is cand.payload
                and known[1] == build.expansion_key
            ):
                row["expansion_id"] = known[2]
            elif cand.payload is None and mask in stored and stored[mask][1] is None:
                row["expansion_id"] = stored[mask][0]
            else:
                dumped = dump_model(cand.payload)
                if dumped is not None:
                    row["model_blob"], row["model_format"] = dumped
                    row["model_sha256"] = sha256_hex(dumped[0])
            cand_rows.append(row)
            cost_rows.extend(
                {"build_id": build_id, "candidate_id": pos, "degree": k, "coefficient": float(c)}
                for k, c in enumerate(cand.cost.coefficients)
            )
        range_rows = [
            {"build_id": build_id, "range_id": r, "n_lo": lo, "n_hi": hi}
            for r, (lo, hi) in enumerate(table.ranges)
        ]
        entry_rows = [
            {"build_id": build_id, "range_id": r, "rank": k, "candidate_id": pos}
            for r, sky in enumerate(table.skyline_positions)
            for k, pos in enumerate(sky)
        ]
        n_min, n_max = table.domain
        b = S.builds
        with self._write() as conn:
            conn.execute(S.candidates.insert(), cand_rows)
            conn.execute(S.candidate_costs.insert(), cost_rows)
            conn.execute(S.ranges.insert(), range_rows)
            conn.execute(S.skyline_entries.insert(), entry_rows)
            conn.execute(b.update().where(b.c.is_current).values(is_current=False))
            done = conn.execute(
                b.update()
                .where(b.c.id == build_id, b.c.status == "building")
                .values(
                    status="complete",
                    is_current=True,
                    completed_at=_now(),
                    n_min=n_min,
                    n_max=n_max,
                    index_kind=kind,
                    info=_json_or_str(index.info),
                    stats=_json_or_str(table.stats_),
                )
            )
            if done.rowcount != 1:
                raise ValueError(f"build {build_id} was completed by another writer")
        if self.dialect == "postgresql":
            # fresh statistics, so that SQL over the views is planned for the new rows
            with self.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                    "ANALYZE candidates, candidate_costs, ranges, skyline_entries"
                )

    # ------------------------------------------------------------------ reading
    def load_index(
        self, build: int | None = None, trusted: bool = False, models: bool = True
    ) -> Index:
        """Rebuild a published index from its rows (no sweep): the current build by default.

        The candidates' payloads are the stored models (checked against their sha256 and
        decoded safely, see :mod:`storage.blobs`); ``models=False`` leaves them None.
        ``info`` is the stored build info plus ``build_id``.

        Runtime complexity: O(K * d + E) rows plus decoding the K models.

        Raises
        ------
        ValueError
            If there is no complete build, or ``build`` is unknown or not complete.
        storage.ModelIntegrityError, storage.UntrustedModelError
            For a tampered blob, or one that needs ``trusted=True``.
        """
        with self._read() as conn:
            row = self._build_row(conn, build)
            build_id = int(row.id)
            if row.status != "complete":
                raise ValueError(f"build {build_id} is not complete (status {row.status!r})")
            f, fc = S.features, S.feature_costs
            feats = conn.execute(
                sa.select(f.c.feature_id, f.c.name, f.c.columns)
                .where(f.c.build_id == build_id)
                .order_by(f.c.feature_id)
            ).all()
            fcoef: dict[int, dict[int, float]] = {}
            for r in conn.execute(sa.select(fc).where(fc.c.build_id == build_id)):
                fcoef.setdefault(r.feature_id, {})[r.degree] = r.coefficient
            c, cc, x = S.candidates, S.candidate_costs, S.expansions
            cols = [
                c.c.candidate_id,
                c.c.key,
                c.c.key_json,
                c.c.accuracy,
                c.c.features_json,
                c.c.expansion_id,
                c.c.model_format,
            ]
            if models:
                cols += [c.c.model_sha256, c.c.model_blob]
            cands = conn.execute(
                sa.select(*cols).where(c.c.build_id == build_id).order_by(c.c.candidate_id)
            ).all()
            ccoef: dict[int, list[float]] = {}
            for cid, degree, coefficient in conn.execute(
                sa.select(cc.c.candidate_id, cc.c.degree, cc.c.coefficient)
                .where(cc.c.build_id == build_id)
                .order_by(cc.c.candidate_id, cc.c.degree)
            ):
                ccoef.setdefault(cid, []).append(coefficient)
                assert degree == len(ccoef[cid]) - 1, "stored coefficients skip a degree"
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
            breaks = [
                r.n_lo
                for r in conn.execute(
                    sa.select(rng.c.n_lo).where(rng.c.build_id == build_id).order_by(rng.c.range_id)
                )
            ]
            sky: list[list[int]] = [[] for _ in breaks]
            for r in conn.execute(
                sa.select(se.c.range_id, se.c.candidate_id)
                .where(se.c.build_id == build_id)
                .order_by(se.c.range_id, se.c.rank)
            ):
                sky[r.range_id].append(r.candidate_id)
        exp_models: dict[int, Any] = {}
        feature_sets: dict[str, frozenset] = {}
        candidates = []
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
                    )
                payload = exp_models[r.expansion_id]
            elif models:
                payload = load_model(
                    r.model_blob,
                    r.model_format,
                    r.model_sha256,
                    trusted=trusted,
                    what=f"model of candidate {r.key!r} of build {build_id}",
                )
            candidates.append(
                Candidate(
                    decode_key(r.key_json),
                    r.accuracy,
                    CostCurve(ccoef[r.candidate_id]),
                    feature_sets.get(r.features_json)
                    or feature_sets.setdefault(
                        r.features_json, frozenset(json.loads(r.features_json))
                    ),
                    payload,
                )
            )
        table = _TABLE_KINDS.get(row.index_kind, PolyDomIndex)(
            candidates, row.n_min, row.n_max, breaks, sky, json.loads(row.stats or "{}")
        )
        costs = {r.name: _curve(fcoef[r.feature_id]) for r in feats}
        columns = {r.name: json.loads(r.columns) for r in feats}
        info = json.loads(row.info or "{}")
        info["build_id"] = build_id
        return Index(table, costs, columns, info)

    def list_builds(self) -> list[BuildRecord]:
        """Every build, oldest first, with its status and row counts.

        Runtime complexity: one query over the ``build_summary`` view.
        """
        with self._read() as conn:
            rows = conn.execute(sa.text("SELECT * FROM build_summary ORDER BY build_id")).all()
            params = dict(conn.execute(sa.select(S.builds.c.id, S.builds.c.params)).all())
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
                params=json.loads(params[r.build_id]),
            )
            for r in rows
        ]

    def skyline_rows(self, build: int | None = None) -> list[dict[str, Any]]:
        """Rows of the ``skyline_all`` view for one complete build (current by default).

        Reads no model blobs.  Each row: ``range_id, n_lo, n_hi, rank, candidate_id,
        candidate, features, accuracy, cost, cost_at_n_lo, model_format``.
        """
        with self._read() as conn:
            build_id = int(self._build_row(conn, build).id)
            rows = conn.execute(
                sa.text(
                    "SELECT * FROM skyline_all WHERE build_id = :b ORDER BY range_id, rank"
                ),
                {"b": build_id},
            ).mappings().all()
        return [dict(r) for r in rows]

    def sql_lookup(self, size: float, budget: float, build: int | None = None) -> int:
        """:meth:`polydom.PolyDomIndex.lookup_position` answered by SQL over the views.

        Runs :data:`storage.schema.LOOKUP_SQL`; returns the candidate position (-1: none
        fits).  Costs are summed as ``coefficient * power(n, degree)``, so answers may differ
        from the index only at floating ties.

        Runtime complexity: one query (index range scan over the build's skyline rows).
        """
        with self._read() as conn:
            build_id = int(self._build_row(conn, build).id)
            found = conn.execute(
                sa.text(S.LOOKUP_SQL), {"b": build_id, "n": float(size), "budget": float(budget)}
            ).first()
        return -1 if found is None else int(found.candidate_id)


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    return None


def _curve(coefs: Mapping[int, float]) -> CostCurve:
    arr = np.zeros(max(coefs) + 1)
    for k, v in coefs.items():
        arr[k] = v
    return CostCurve(arr)


def _names_in_order(features: frozenset, order: Sequence[str]) -> list[str]:
    known = [name for name in order if name in features]
    return known + sorted(str(f) for f in features if f not in set(order))


def _sqlite_transactions(engine: sa.Engine, wal: bool) -> None:
    """Make pysqlite emit real transactions: BEGIN for reads, BEGIN IMMEDIATE for writes."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        try:  # the views use power(); SQLite builds without math functions lack it
            cursor.execute("SELECT power(2.0, 3)")
        except sqlite3.OperationalError:
            dbapi_connection.create_function("power", 2, math.pow, deterministic=True)
        if wal:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("polydom_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class ExpansionCache(MutableMapping):
    """A build's stored expansions: ``frozenset(feature names) -> polydom.Expansion``.

    ``cache[fs] = expansion`` serialises the model and commits the row in its own
    transaction, so an expansion survives any later crash.  ``fs in cache`` and
    ``cache[fs]`` read stored rows (also those of earlier builds with the same training
    parameters).  Made by :meth:`IndexStore.expansion_cache`.
    """

    def __init__(self, store: IndexStore, build_id: int, trusted: bool = False) -> None:
        self._store = store
        self.trusted = trusted
        with store._read() as conn:
            row = store._build_row(conn, build_id)
            self.build_id = int(row.id)
            self._key = row.expansion_key
            self.features = self._store._feature_order(conn, self.build_id)

    def __repr__(self) -> str:
        return f"ExpansionCache(build={self.build_id}, store={self._store.display_url!r})"

    def _mask(self, features: Any) -> str | None:
        if isinstance(features, str) or not isinstance(features, (set, frozenset)):
            return None
        return feature_mask(features, self.features)

    def _select(self, *cols: Any) -> sa.Select:
        return sa.select(*cols).where(S.expansions.c.expansion_key == self._key)

    def __contains__(self, features: object) -> bool:
        mask = self._mask(features)
        if mask is None:
            return False
        x = S.expansions
        with self._store._read() as conn:
            found = conn.execute(self._select(x.c.id).where(x.c.feature_mask == mask)).first()
        return found is not None

    def __getitem__(self, features: frozenset) -> Expansion:
        mask = self._mask(features)
        if mask is None:
            raise KeyError(features)
        x = S.expansions
        with self._store._read() as conn:
            row = conn.execute(self._select(x).where(x.c.feature_mask == mask)).first()
        if row is None:
            raise KeyError(features)
        model = load_model(
            row.model_blob,
            row.model_format,
            row.model_sha256,
            trusted=self.trusted,
            what=f"model of expansion {row.id} ({row.features})",
        )
        if model is not None:
            self._store._known_models[id(model)] = (model, self._key, int(row.id))
        return Expansion(frozenset(features), row.accuracy, model, row.fit_seconds)

    def __setitem__(self, features: frozenset, expansion: Expansion) -> None:
        if not isinstance(expansion, Expansion):
            raise ValueError(f"expansion must be a polydom.Expansion, got {expansion!r}")
        mask = self._mask(features)
        if mask is None:
            raise ValueError(
                f"features must be a set of names among {self.features}, got {features!r}"
            )
        if frozenset(expansion.features) != frozenset(features):
            raise ValueError(
                f"expansion.features {sorted(expansion.features)} differ from the key "
                f"{sorted(features)}"
            )
        dumped = dump_model(expansion.model)
        blob, fmt = dumped if dumped is not None else (None, None)
        values = {
            "accuracy": float(expansion.accuracy),
            "fit_seconds": float(expansion.fit_seconds),
            "model_format": fmt,
            "model_sha256": None if blob is None else sha256_hex(blob),
            "model_blob": blob,
        }
        x = S.expansions
        with self._store._write() as conn:
            found = conn.execute(self._select(x.c.id).where(x.c.feature_mask == mask)).scalar()
            if found is None:
                found = conn.execute(
                    x.insert().values(
                        expansion_key=self._key,
                        build_id=self.build_id,
                        feature_mask=mask,
                        features=", ".join(_names_in_order(features, self.features)),
                        n_features=len(features),
                        created_at=_now(),
                        **values,
                    )
                ).inserted_primary_key[0]
            else:
                conn.execute(x.update().where(x.c.id == found).values(**values))
        if expansion.model is not None:
            self._store._known_models[id(expansion.model)] = (
                expansion.model,
                self._key,
                int(found),
            )

    def __delitem__(self, features: frozenset) -> None:
        mask = self._mask(features)
        if mask is None:
            raise KeyError(features)
        x = S.expansions
        try:
            with self._store._write() as conn:
                gone = conn.execute(
                    x.delete().where(x.c.expansion_key == self._key, x.c.feature_mask == mask)
                ).rowcount
        except sa.exc.IntegrityError:
            raise ValueError(
                f"expansion {sorted(features)} is used by a published build; cannot delete it"
            ) from None
        if not gone:
            raise KeyError(features)

    def __iter__(self) -> Iterator[frozenset]:
        x = S.expansions
        with self._store._read() as conn:
            masks = conn.execute(self._select(x.c.feature_mask).order_by(x.c.id)).scalars().all()
        return iter([mask_features(m, self.features) for m in masks])

    def __len__(self) -> int:
        with self._store._read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(S.expansions).where(
                        S.expansions.c.expansion_key == self._key
                    )
                ).scalar()
            )
