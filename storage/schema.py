"""The tables and SQL views of an index store (SQLAlchemy Core; SQLite and PostgreSQL).

Every row of a build (atomic features, bundles, candidates and their needs, ranges, skyline
entries) carries its ``build_id``;
rows of a published build are never modified again, so a reader that picked a build sees a
fixed index.  Expansions are shared by builds whose training parameters agree
(``expansion_key``), so a resumed or repeated build reuses them.

The table ``features`` holds a build's *atomic* features (each with its columns and cost
curve, ``feature_costs``); ``bundles`` / ``bundle_atoms`` the named bundles of atoms that
the lattice explored (none when the lattice ran over the atoms); ``candidate_needs`` the
atoms each candidate needs with the probability that it needs them; ``candidates.learner``
the learner that produced it.

Schema version 2 added bundles, needs and ``candidates.learner``; a store of version 1 is
read (its features are atoms, a candidate needs its features with probability 1), never
written.  Schema version 3 added each candidate's and each expansion's ``accuracy_se`` and
``fold_scores`` (sealed: the lookup rule ``"one_se"`` answers from them) and the column
``accuracy_se`` of the skyline views, and ``builds.learner`` holds the learner's short name
(its registry name) instead of its description; a store of version 2 is read (its
candidates carry no standard error, so an index opened from it refuses ``"one_se"``),
never written.

Tables added to version 2 later (:data:`ADDED_TABLES`): ``build_seals`` (a digest over each
published build's index rows), ``build_arrays`` (each published build's index as one array
blob, read by ``open_index`` instead of the rows), ``expansion_predictions`` (an
expansion's out-of-fold predictions), ``publications`` (the numbered log of published
builds, with the unique index that allows one current build), ``expansion_seals`` and
``served_timings`` (telemetry: the seconds each atomic feature took on a served item of
some size, what recalibration refits curves from), ``cost_steps`` / ``cost_step_users``
(a build's shared steps and start, issue 37; only builds whose cost model has some write
rows there) and ``served_sets`` (telemetry of served sets: the candidate, the order its
atoms ran, each atom's seconds and the total).  They change no existing table, so a
store without them is still version 2 (read without them); a store of version 3 is created
with every table.

Views (plain SQL, the same text on SQLite and PostgreSQL):

``skyline``
    The skylines of the current build: one row per (range, rank) with the candidate's key,
    learner, feature names, accuracy and its standard error, fold scores, cost expression
    and cost at ``n_lo``.
``skyline_all``
    The same for every complete build (filter on ``build_id``).
``build_summary``
    One row per build: status, whether current, alpha, delta, learner, domain and counts.
"""

from __future__ import annotations

import functools

import sqlalchemy as sa

from polydom.curves.units import MAX_TIMING_SECONDS, MIN_TIMING_SECONDS
from storage.candidate_fields import candidate_columns, view_columns

#: The largest finite double (a size at most this is finite: no inf, no NaN, on both dialects).
MAX_DOUBLE = 1.7976931348623157e308

__all__ = [
    "ADDED_TABLES",
    "LOOKUP_SQL",
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "VIEWS",
    "build_summary_sql",
    "create_objects",
    "has_legacy_form",
    "metadata",
    "skyline_all_sql",
    "table_ddl",
    "tables_of",
    "views_of",
]

#: Version of the layout below; a store of another version is refused when opened, except
#: version 1 and 2 stores, which are read (:data:`READABLE_VERSIONS`).
SCHEMA_VERSION = 3

#: Schema versions this code reads; only :data:`SCHEMA_VERSION` is written.
READABLE_VERSIONS = (1, 2, 3)

metadata = sa.MetaData()

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

builds = sa.Table(
    "builds",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("params_key", sa.String(64), nullable=False, index=True),
    sa.Column("expansion_key", sa.String(64), nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("alpha", sa.Double),
    sa.Column("delta", sa.Double),
    sa.Column("learner", sa.Text),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("is_current", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("completed_at", sa.String(32)),
    sa.Column("n_min", sa.Double),
    sa.Column("n_max", sa.Double),
    sa.Column("index_kind", sa.String(32)),
    sa.Column("info", sa.Text),
    sa.Column("stats", sa.Text),
)


#: The name of the index keeping one current build (:func:`one_current_build`), and its
#: SQLite DDL as SQLAlchemy writes it (what a reader compares a store with, without the
#: PostgreSQL dialect the index object loads).
ONE_CURRENT_BUILD = "uq_builds_one_current"
ONE_CURRENT_BUILD_SQLITE = ("CREATE UNIQUE INDEX uq_builds_one_current ON builds (is_current) "
                            "WHERE is_current")


@functools.cache
def one_current_build() -> sa.Index:
    """The index keeping at most one current build, whatever writers race (created with
    ``publications``).  Made on first call, by a writer: its PostgreSQL option loads
    SQLAlchemy's PostgreSQL dialect, which a reader of a SQLite store never needs.

    Runtime complexity: O(1).
    """
    return sa.Index(
        ONE_CURRENT_BUILD, builds.c.is_current, unique=True,
        sqlite_where=builds.c.is_current, postgresql_where=builds.c.is_current,
    )


features = sa.Table(
    "features",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("feature_id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("columns", sa.Text, nullable=False),
    sa.Column("cost", sa.Text, nullable=False),
    sa.Column("degree", sa.Integer, nullable=False),
    sa.UniqueConstraint("build_id", "name"),
)

feature_costs = sa.Table(
    "feature_costs",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("feature_id", sa.Integer, primary_key=True),
    sa.Column("degree", sa.Integer, primary_key=True),
    sa.Column("coefficient", sa.Double, nullable=False),
    sa.ForeignKeyConstraint(
        ["build_id", "feature_id"], ["features.build_id", "features.feature_id"]
    ),
)

bundles = sa.Table(
    "bundles",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("bundle_id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.UniqueConstraint("build_id", "name"),
    info={"since_version": 2},
)

bundle_atoms = sa.Table(
    "bundle_atoms",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("bundle_id", sa.Integer, primary_key=True),
    sa.Column("feature_id", sa.Integer, primary_key=True),
    sa.ForeignKeyConstraint(["build_id", "bundle_id"], ["bundles.build_id", "bundles.bundle_id"]),
    sa.ForeignKeyConstraint(
        ["build_id", "feature_id"], ["features.build_id", "features.feature_id"]
    ),
    info={"since_version": 2},
)

#: A build's shared steps and its start (issue 37): one row per step (``name``; the start
#: is the row named ``"<start>"``, :data:`polydom.curves.cost_model.START`) with its curve
#: (``cost`` as text, ``coefficients`` a JSON list, lowest degree first).
cost_steps = sa.Table(
    "cost_steps",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("step_id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("cost", sa.Text, nullable=False),
    sa.Column("degree", sa.Integer, nullable=False),
    sa.Column("coefficients", sa.Text, nullable=False),
    sa.UniqueConstraint("build_id", "name"),
    info={"since_version": 2},
)

#: Which atoms use which shared step (the start has no rows: every atom pays it).
cost_step_users = sa.Table(
    "cost_step_users",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("step_id", sa.Integer, primary_key=True),
    sa.Column("feature_id", sa.Integer, primary_key=True),
    sa.ForeignKeyConstraint(["build_id", "step_id"], ["cost_steps.build_id", "cost_steps.step_id"]),
    sa.ForeignKeyConstraint(
        ["build_id", "feature_id"], ["features.build_id", "features.feature_id"]
    ),
    info={"since_version": 2},
)

expansions = sa.Table(
    "expansions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("expansion_key", sa.String(64), nullable=False),
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), nullable=False),
    sa.Column("feature_mask", sa.String(256), nullable=False),
    sa.Column("features", sa.Text, nullable=False),
    sa.Column("n_features", sa.Integer, nullable=False),
    sa.Column("accuracy", sa.Double, nullable=False),
    sa.Column("fit_seconds", sa.Double, nullable=False),
    # since version 3 (sealed): the standard error of the accuracy and the score on each
    # split, as storage.candidate_fields.fold_scores_text writes them
    sa.Column("accuracy_se", sa.Double, info={"since_version": 3}),
    sa.Column("fold_scores", sa.Text, info={"since_version": 3}),
    sa.Column("model_format", sa.String(16)),
    sa.Column("model_sha256", sa.String(64)),
    sa.Column("model_blob", sa.LargeBinary),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.UniqueConstraint("expansion_key", "feature_mask"),
)

#: One row per candidate of a build; its columns are :data:`storage.candidate_fields.
#: CANDIDATE_FIELDS` (the one definition of a stored candidate).
candidates = sa.Table(
    "candidates",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("candidate_id", sa.Integer, primary_key=True),
    *candidate_columns(),
)

candidate_needs = sa.Table(
    "candidate_needs",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("candidate_id", sa.Integer, primary_key=True),
    sa.Column("feature_id", sa.Integer, primary_key=True),
    sa.Column("probability", sa.Double, nullable=False),
    sa.ForeignKeyConstraint(
        ["build_id", "candidate_id"], ["candidates.build_id", "candidates.candidate_id"]
    ),
    sa.ForeignKeyConstraint(
        ["build_id", "feature_id"], ["features.build_id", "features.feature_id"]
    ),
    info={"since_version": 2},
)

candidate_costs = sa.Table(
    "candidate_costs",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("candidate_id", sa.Integer, primary_key=True),
    sa.Column("degree", sa.Integer, primary_key=True),
    sa.Column("coefficient", sa.Double, nullable=False),
    sa.ForeignKeyConstraint(
        ["build_id", "candidate_id"], ["candidates.build_id", "candidates.candidate_id"]
    ),
)

ranges = sa.Table(
    "ranges",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("range_id", sa.Integer, primary_key=True),
    sa.Column("n_lo", sa.Double, nullable=False),
    sa.Column("n_hi", sa.Double, nullable=False),
    sa.Index("ix_ranges_build_n_lo", "build_id", "n_lo"),
)

skyline_entries = sa.Table(
    "skyline_entries",
    metadata,
    sa.Column("build_id", sa.Integer, primary_key=True),
    sa.Column("range_id", sa.Integer, primary_key=True),
    sa.Column("rank", sa.Integer, primary_key=True),
    sa.Column("candidate_id", sa.Integer, nullable=False),
    sa.ForeignKeyConstraint(["build_id", "range_id"], ["ranges.build_id", "ranges.range_id"]),
    sa.ForeignKeyConstraint(
        ["build_id", "candidate_id"], ["candidates.build_id", "candidates.candidate_id"]
    ),
)

#: The seal of a published build: a digest (sha256, or HMAC under the store key) over its
#: candidates, cost coefficients, needs, ranges and skyline entries, checked when the build
#: is opened.  Stores created before this table existed have no seals (opened unverified).
build_seals = sa.Table(
    "build_seals",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("index_digest", sa.String(64), nullable=False),
    info={"since_version": 2},
)

#: A published build's index as one array blob (:mod:`storage.index_arrays`): what
#: ``open_index`` reads instead of the rows.  ``digest`` (sha256, or HMAC under the store key)
#: is checked before the blob is decoded, and the blob names its build and the build's seal.
#: Builds published before this table existed (or into a store without it) open from the rows.
build_arrays = sa.Table(
    "build_arrays",
    metadata,
    sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id"), primary_key=True),
    sa.Column("format", sa.String(16), nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("blob", sa.LargeBinary, nullable=False),
    info={"since_version": 2},
)

#: The out-of-fold predictions of an expansion on the learner's training rows (what a DAG's
#: classifier bank reuses as its losses): one ``.npy`` array (no pickle) with its digest.
expansion_predictions = sa.Table(
    "expansion_predictions",
    metadata,
    sa.Column("expansion_id", sa.Integer, sa.ForeignKey("expansions.id"), primary_key=True),
    sa.Column("format", sa.String(16), nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("blob", sa.LargeBinary, nullable=False),
    info={"since_version": 2},
)

#: The log of publications: ``sequence`` counts up by one per published build (assigned in
#: the publishing transaction, which every writer serialises); the build's seal covers its
#: number, so the current build must be the build of the highest number.  An entry is
#: deleted with its build (``builds delete``; never the current build's, the highest), so
#: that a build id SQLite hands out again can be published.
publications = sa.Table(
    "publications",
    metadata,
    sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("build_id", sa.Integer, nullable=False, unique=True),
    sa.Column("published_at", sa.String(32), nullable=False),
    info={"since_version": 2},
)

#: The seal of a stored expansion (:func:`storage.seal.expansion_seal`): a digest over its
#: training key, feature set, accuracy, model format and digest, and its predictions'
#: digest (since version 3 also its standard error and fold scores), checked before the
#: expansion is reused and when a build using it is opened.
expansion_seals = sa.Table(
    "expansion_seals",
    metadata,
    sa.Column("expansion_id", sa.Integer, sa.ForeignKey("expansions.id"), primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False),
    info={"since_version": 2},
)

#: Telemetry: one row per atomic feature computed for a served item (its size and seconds),
#: appended by :mod:`storage.telemetry`, in arrival order (``id``).  ``build_id`` is the
#: build that served the item (no foreign key: timings describe the machine, not the build,
#: and outlive a deleted build); recalibration reads the newest rows whatever their build.
served_timings = sa.Table(
    "served_timings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("build_id", sa.Integer, nullable=False),
    sa.Column("feature", sa.Text, nullable=False),
    sa.Column("size", sa.Double, nullable=False),
    sa.Column("seconds", sa.Double, nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    # the bounds storage.telemetry checks again when it reads (the CHECKs came after the
    # table: a store made before them has the table without, and reading refuses the same)
    sa.CheckConstraint(f"size >= 0 AND size <= {MAX_DOUBLE!r}", name="ck_served_timings_size",
                       info={"added_later": True}),
    sa.CheckConstraint(f"seconds >= {MIN_TIMING_SECONDS!r} AND seconds <= "
                       f"{MAX_TIMING_SECONDS!r}", name="ck_served_timings_seconds",
                       info={"added_later": True}),
    info={"since_version": 2},
)

#: Telemetry of served sets (issue 37): one row per served item, the candidate that served
#: it (``candidate``: its key as canonical JSON), its size, the atoms in the order they ran
#: (``atoms``, a JSON list), each atom's seconds in that order (``seconds``, a JSON list)
#: and the total.  Appended by :mod:`storage.telemetry`, in arrival order (``id``); like
#: ``served_timings``, no foreign key.
served_sets = sa.Table(
    "served_sets",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("build_id", sa.Integer, nullable=False),
    sa.Column("candidate", sa.Text, nullable=False),
    sa.Column("size", sa.Double, nullable=False),
    sa.Column("atoms", sa.Text, nullable=False),
    sa.Column("seconds", sa.Text, nullable=False),
    sa.Column("total", sa.Double, nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.CheckConstraint(f"size >= 0 AND size <= {MAX_DOUBLE!r}", name="ck_served_sets_size"),
    sa.CheckConstraint(f"total >= {MIN_TIMING_SECONDS!r} AND total <= {MAX_DOUBLE!r}",
                       name="ck_served_sets_total"),
    info={"since_version": 2},
)

TABLES = [t.name for t in metadata.sorted_tables]

#: Tables added to schema version 2 after its first stores were made: a store of version 2
#: may lack them.  Readers then do without (no seal check, rows instead of arrays, no stored
#: predictions); a writer creates them before its first write that needs them
#: (:meth:`storage.database.Database.add_tables`).
ADDED_TABLES = ("build_seals", "build_arrays", "expansion_predictions", "publications",
                "expansion_seals", "served_timings", "cost_steps", "cost_step_users",
                "served_sets")

#: Where the views put ``cost_at_n_lo`` (computed from ``candidate_costs``) among the
#: candidate columns the fields declare (:func:`storage.candidate_fields.view_columns`).
_COST_AT_N_LO = (7, """(SELECT SUM(cc.coefficient * power(r.n_lo, cc.degree))
          FROM candidate_costs cc
         WHERE cc.build_id = c.build_id AND cc.candidate_id = c.candidate_id)""",
                 "cost_at_n_lo")


def skyline_all_sql(schema_version: int) -> str:
    """The SELECT of the ``skyline_all`` view of a store of ``schema_version``: a skyline
    entry's build, range and rank, then the candidate columns its fields declare
    (:class:`storage.candidate_fields.ViewColumn`) and its cost at ``n_lo``.

    Runtime complexity: O(fields).
    """
    shown = sorted([*view_columns(schema_version), _COST_AT_N_LO])
    columns = ",\n".join(f"       {expression} AS {name}" for _, expression, name in shown)
    return f"""
SELECT e.build_id AS build_id,
       e.range_id AS range_id,
       r.n_lo AS n_lo,
       r.n_hi AS n_hi,
       e.rank AS rank,
       c.candidate_id AS candidate_id,
{columns}
  FROM skyline_entries e
  JOIN ranges r ON r.build_id = e.build_id AND r.range_id = e.range_id
  JOIN candidates c ON c.build_id = e.build_id AND c.candidate_id = e.candidate_id
  JOIN builds b ON b.id = e.build_id
  LEFT JOIN expansions x ON x.id = c.expansion_id
 WHERE b.status = 'complete'
"""


_SKYLINE = """
SELECT s.* FROM skyline_all s JOIN builds b ON b.id = s.build_id WHERE b.is_current
"""

def build_summary_sql(schema_version: int) -> str:
    """The SELECT of the ``build_summary`` view of a store of ``schema_version`` (version 1
    kept no bundles, so its view has no ``n_bundles``).

    Runtime complexity: O(1).
    """
    bundles = ("""       (SELECT COUNT(*) FROM bundles u WHERE u.build_id = b.id) AS n_bundles,
""" if schema_version >= 2 else "")
    return f"""
SELECT b.id AS build_id,
       b.status AS status,
       b.is_current AS is_current,
       b.alpha AS alpha,
       b.delta AS delta,
       b.learner AS learner,
       b.n_min AS n_min,
       b.n_max AS n_max,
       b.created_at AS created_at,
       b.completed_at AS completed_at,
       (SELECT COUNT(*) FROM features f WHERE f.build_id = b.id) AS n_features,
{bundles}       (SELECT COUNT(*) FROM expansions x WHERE x.expansion_key = b.expansion_key)
           AS n_expansions,
       (SELECT COUNT(*) FROM candidates c WHERE c.build_id = b.id) AS n_candidates,
       (SELECT COUNT(*) FROM ranges r WHERE r.build_id = b.id) AS n_ranges,
       (SELECT COUNT(*) FROM skyline_entries e WHERE e.build_id = b.id) AS n_entries
  FROM builds b
"""


def views_of(schema_version: int) -> dict[str, str]:
    """View name -> SELECT text of a store of ``schema_version``, in creation order.

    Runtime complexity: O(fields).
    """
    return {"skyline_all": skyline_all_sql(schema_version), "skyline": _SKYLINE,
            "build_summary": build_summary_sql(schema_version)}


#: View name -> SELECT text, created in this order.
VIEWS = views_of(SCHEMA_VERSION)


def _in_version(item: sa.Table | sa.Column, schema_version: int) -> bool:
    since = item.info.get("since_version") or 1
    until = item.info.get("until_version")
    return since <= schema_version and (until is None or schema_version <= until)


def tables_of(schema_version: int) -> list[sa.Table]:
    """The tables a store of ``schema_version`` may hold (their ``info["since_version"]``
    at most it), in creation order.  Runtime complexity: O(tables)."""
    return [t for t in metadata.sorted_tables if _in_version(t, schema_version)]


def table_ddl(table: sa.Table, schema_version: int = SCHEMA_VERSION,
              legacy: bool = False) -> sa.schema.CreateTable:
    """The ``CREATE TABLE`` of ``table`` as a store of ``schema_version`` has it: only the
    columns that version has; ``legacy`` leaves out the constraints added to the table
    after its first stores were made (``info["added_later"]``).

    Runtime complexity: O(columns).
    """
    if legacy:
        copies = sa.MetaData()
        for other in metadata.sorted_tables:
            other.to_metadata(copies)
        table = copies.tables[table.name]
        table.constraints -= {c for c in table.constraints if c.info.get("added_later")}
    ddl = sa.schema.CreateTable(table)
    ddl.columns = [c for c in ddl.columns if _in_version(c.element, schema_version)]
    return ddl


def has_legacy_form(table: sa.Table) -> bool:
    """Whether stores made before some of ``table``'s constraints keep it without them."""
    return any(c.info.get("added_later") for c in table.constraints)


def create_objects(conn: sa.Connection, schema_version: int = SCHEMA_VERSION,
                   view_schema: str | None = None) -> None:
    """Create every table, index and view of a store of ``schema_version`` on ``conn``
    (no rows): what a new store gets, and what a store's schema is compared with
    (:mod:`storage.schema_check`; the views then go into ``view_schema``).

    Runtime complexity: O(objects) statements.
    """
    for table in tables_of(schema_version):
        conn.execute(table_ddl(table, schema_version))
        for index in sorted(table.indexes, key=lambda i: i.name):
            if index.name != ONE_CURRENT_BUILD:
                conn.execute(sa.schema.CreateIndex(index))
    if conn.dialect.name == "sqlite":  # the same text, without loading PostgreSQL's dialect
        conn.exec_driver_sql(ONE_CURRENT_BUILD_SQLITE)
    else:
        conn.execute(sa.schema.CreateIndex(one_current_build()))
    prefix = f"{view_schema}." if view_schema else ""
    for name, select in views_of(schema_version).items():
        conn.exec_driver_sql(f"CREATE VIEW {prefix}{name} AS {select}")


#: Lookup in plain SQL over the ``skyline_all`` view, parameters ``:b`` (build id), ``:n``
#: (size, inside the build's domain) and ``:budget``: in the range holding ``n`` (the last
#: one starting at or before it), the highest-ranked skyline entry whose cost at ``n`` fits
#: (skylines are sorted by cost with increasing accuracy).
LOOKUP_SQL = """
SELECT s.candidate_id, s.candidate, s.accuracy
  FROM skyline_all s
 WHERE s.build_id = :b
   AND s.range_id = (SELECT r.range_id FROM ranges r
                      WHERE r.build_id = :b AND r.n_lo <= :n
                      ORDER BY r.n_lo DESC LIMIT 1)
   AND (SELECT SUM(cc.coefficient * power(:n, cc.degree))
          FROM candidate_costs cc
         WHERE cc.build_id = s.build_id AND cc.candidate_id = s.candidate_id) <= :budget
 ORDER BY s.rank DESC
 LIMIT 1
"""
