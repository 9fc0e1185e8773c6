"""A store's schema compared whole with the one its schema version writes, before any read.

A store is a file or a database that anyone with write access may have altered, and SQL
objects run code when read: a view is a query (a recursive CTE in ``build_summary`` hangs
``builds list``; a redefined view invents rows), a generated column computes on every read,
an expression index computes on every insert.  So every object of the store is compared
with the objects our own DDL creates for the store's schema version, generated from
:mod:`storage.schema` (tables, their indexes and views: what another engineer adds to the
metadata is covered without edits here), and anything else is refused in one line.

SQLite: every row of ``sqlite_master`` (kind, name, table and its SQL text, whitespace
normalised) against the rows our DDL leaves in an in-memory database.
PostgreSQL: the catalogue of the store's schema (relations and their kinds, columns with
types, defaults, collations, generated and identity flags, constraints, indexes, views'
definitions, options, triggers, rules, row-security policies, inheritance) and every
function and operator those reach, against the same read of our DDL made in the session's
temporary schema inside a transaction that is rolled back (nothing of the store is written).

The order is what makes it safe: ``schema_info`` is checked first (a plain table, ours), then
its version is read, then the rest is compared; no statement reads a view before.

Runtime complexity: O(objects) catalogue rows; the expected set is made once per process
(per schema version, and per PostgreSQL server version).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from polydom.errors import ForeignDatabaseError, SchemaVersionError
from storage import schema as S

__all__ = ["FOREIGN_KEY", "check_postgresql_schema", "check_sqlite_schema",
           "expected_sqlite_objects", "normalised_sql"]

#: The ``schema_info`` key a store created inside another program's database carries
#: (``allow_foreign``): objects of that program (not on our tables, no trigger) are allowed.
FOREIGN_KEY = "foreign_database"

#: A SQLite object: (kind, table it belongs to, normalised SQL or None).
SqliteObject = tuple[str, str, "str | None"]


def normalised_sql(sql: str | None) -> str | None:
    """``sql`` with every run of whitespace made one space, trimmed.

    >>> normalised_sql("CREATE  TABLE t (\\n\\ta INTEGER\\n)")
    'CREATE TABLE t ( a INTEGER )'
    """
    return None if sql is None else " ".join(sql.split())


#: What a refusal names first (the rest is counted): objects of the wrong kind, triggers and
#: virtual tables, altered objects, objects on our tables, others, missing ones.
_FIRST = (" where polydom keeps a ", "trigger ", "virtual table ", " other than polydom",
          " on polydom's table ", " which polydom never writes", "no ")


def _rank(entry: str) -> int:
    return next((k for k, part in enumerate(_FIRST) if part in entry or entry.startswith(part)),
                len(_FIRST))


def _refuse(shown: str, odd: list[str]) -> None:
    odd = sorted(odd, key=_rank)
    listed = ", ".join(odd[:4]) + (f" and {len(odd) - 4} more" if len(odd) > 4 else "")
    raise ForeignDatabaseError(
        f"url {shown!r} was altered outside polydom: it holds {listed}; refusing to read it")


# ----------------------------------------------------------------------------- SQLite
_sqlite_cache: dict[int, tuple[dict[str, SqliteObject], dict[str, set]]] = {}
_lock = threading.Lock()


def expected_sqlite_objects(
    schema_version: int,
) -> tuple[dict[str, SqliteObject], dict[str, set]]:
    """What our DDL leaves in ``sqlite_master`` for a store of ``schema_version``, and the
    other SQL texts a table may have (the forms of stores made before a constraint was
    added: :func:`storage.schema.has_legacy_form`).

    Runtime complexity: one in-memory database per version, made once per process.
    """
    with _lock:
        if schema_version not in _sqlite_cache:
            engine = sa.create_engine("sqlite://")
            try:
                with engine.begin() as conn:
                    conn.exec_driver_sql("PRAGMA trusted_schema=OFF")
                    conn.connection.driver_connection.create_function(
                        "power", 2, pow, deterministic=True)
                    S.create_objects(conn, schema_version)
                    rows = conn.exec_driver_sql(
                        "SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
                    expected = {r[1]: (r[0], r[2], normalised_sql(r[3])) for r in rows}
                    legacy = {
                        t.name: {normalised_sql(str(S.table_ddl(
                            t, schema_version, legacy=True).compile(dialect=engine.dialect)))}
                        for t in S.tables_of(schema_version) if S.has_legacy_form(t)}
            finally:
                engine.dispose()
            _sqlite_cache[schema_version] = (expected, legacy)
        return _sqlite_cache[schema_version]


def _optional(name: str, obj: SqliteObject, present: Mapping[str, Any]) -> bool:
    """Whether a store may lack object ``name``: the tables added to version 2 after its
    first stores (and what belongs to them; the one-current-build index comes with
    ``publications``)."""
    if obj[1] in S.ADDED_TABLES:
        return True
    return name == "uq_builds_one_current" and "publications" not in present


def _sqlite_mismatches(rows: list[tuple], schema_version: int, foreign: bool,
                       only: set[str] | None = None) -> list[str]:
    expected, legacy = expected_sqlite_objects(schema_version)
    ours = {name for name, obj in expected.items() if obj[0] in ("table", "view")}
    present = {r[1]: r for r in rows}
    odd = []
    for kind, name, table, sql in rows:
        if only is not None and name not in only and table not in only:
            continue
        text = normalised_sql(sql)
        want = expected.get(name)
        if want is not None:
            if kind != want[0]:
                odd.append(f"{kind} {name!r} where polydom keeps a {want[0]}")
            elif table != want[1] or (text != want[2] and text not in legacy.get(name, ())):
                odd.append(f"{kind} {name!r} other than polydom writes it")
        elif kind == "trigger" or (text or "").upper().startswith("CREATE VIRTUAL TABLE"):
            odd.append(f"{'virtual table' if kind == 'table' else kind} {name!r}")
        elif table in ours:
            odd.append(f"{kind} {name!r} on polydom's table {table!r}")
        elif not foreign:
            odd.append(f"{kind} {name!r}, which polydom never writes")
    if only is None:
        for name, obj in expected.items():
            if name not in present and not _optional(name, obj, present):
                odd.append(f"no {obj[0]} {name!r}")
    return odd


def check_sqlite_schema(conn: sa.Connection, shown: str) -> int:
    """Check a SQLite store's schema whole and return its schema version.

    ``schema_info`` (and whatever sits on it) is checked first and read only then; every
    other object is then compared with what our DDL writes for that version.

    Runtime complexity: one read of ``sqlite_master`` and of ``schema_info``.

    Raises
    ------
    polydom.errors.ForeignDatabaseError
        One line naming up to four objects that differ (or are missing).
    polydom.errors.SchemaVersionError
        A version this code does not read.
    """
    rows = [tuple(r) for r in conn.exec_driver_sql(
        "SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()]
    odd = _sqlite_mismatches(rows, S.SCHEMA_VERSION, foreign=True, only={"schema_info"})
    if odd:
        _refuse(shown, odd)
    version, foreign = _version(conn, shown)
    odd = _sqlite_mismatches(rows, version, foreign)
    if odd:
        _refuse(shown, odd)
    return version


def _version(conn: sa.Connection, shown: str) -> tuple[int, bool]:
    info = dict(conn.execute(sa.select(S.schema_info.c.key, S.schema_info.c.value).where(
        S.schema_info.c.key.in_(["schema_version", FOREIGN_KEY]))).all())
    value = info.get("schema_version")
    if value not in {str(v) for v in S.READABLE_VERSIONS}:
        raise SchemaVersionError(
            f"url {shown!r} holds a polydom store of schema version {value}; "
            f"this version of polydom reads schema version {S.SCHEMA_VERSION} "
            "(rebuild the index into a new database)")
    return int(value), info.get(FOREIGN_KEY) == "true"


# ------------------------------------------------------------------------- PostgreSQL
_RELATIONS = """
SELECT c.oid, c.relname, c.relkind, c.relrowsecurity, COALESCE(c.reloptions, '{}'),
       (SELECT t.relname FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
         WHERE i.indexrelid = c.oid)
  FROM pg_class c WHERE c.relnamespace = :ns
"""
_COLUMNS = """
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attgenerated, a.attidentity, co.collname
  FROM pg_attribute a
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  LEFT JOIN pg_collation co ON co.oid = a.attcollation
 WHERE a.attrelid = ANY(:oids) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attrelid, a.attnum
"""
_CONSTRAINTS = """
SELECT conrelid, conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = ANY(:oids) ORDER BY conrelid, conname
"""
_EXTRAS = """
SELECT tgrelid, 'trigger ' || tgname FROM pg_trigger WHERE tgrelid = ANY(:oids)
   AND NOT tgisinternal
UNION ALL SELECT ev_class, 'rule ' || rulename FROM pg_rewrite
 WHERE ev_class = ANY(:oids) AND rulename <> '_RETURN'
UNION ALL SELECT polrelid, 'policy ' || polname FROM pg_policy WHERE polrelid = ANY(:oids)
UNION ALL SELECT inhparent, 'child ' || inhrelid::regclass::text FROM pg_inherits
 WHERE inhparent = ANY(:oids)
UNION ALL SELECT inhrelid, 'parent ' || inhparent::regclass::text FROM pg_inherits
 WHERE inhrelid = ANY(:oids)
"""
#: Every function, operator, type and collation our views, defaults, constraints and
#: indexes reach, with its schema.
_REACHED = """
SELECT dep.rel, n.nspname || '.' || o.what FROM (
  SELECT r.ev_class AS rel, d.refclassid, d.refobjid FROM pg_depend d
    JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
   WHERE r.ev_class = ANY(:oids)
  UNION SELECT a.adrelid, d.refclassid, d.refobjid FROM pg_depend d
    JOIN pg_attrdef a ON d.classid = 'pg_attrdef'::regclass AND d.objid = a.oid
   WHERE a.adrelid = ANY(:oids)
  UNION SELECT c.conrelid, d.refclassid, d.refobjid FROM pg_depend d
    JOIN pg_constraint c ON d.classid = 'pg_constraint'::regclass AND d.objid = c.oid
   WHERE c.conrelid = ANY(:oids)
  UNION SELECT d.objid, d.refclassid, d.refobjid FROM pg_depend d
   WHERE d.classid = 'pg_class'::regclass AND d.objid = ANY(:oids)
) dep
CROSS JOIN LATERAL (
  SELECT p.pronamespace AS ns, 'function ' || p.proname AS what FROM pg_proc p
   WHERE dep.refclassid = 'pg_proc'::regclass AND p.oid = dep.refobjid
  UNION ALL SELECT p.oprnamespace, 'operator ' || p.oprname FROM pg_operator p
   WHERE dep.refclassid = 'pg_operator'::regclass AND p.oid = dep.refobjid
  UNION ALL SELECT t.typnamespace, 'type ' || t.typname FROM pg_type t
   WHERE dep.refclassid = 'pg_type'::regclass AND t.oid = dep.refobjid
  UNION ALL SELECT c.collnamespace, 'collation ' || c.collname FROM pg_collation c
   WHERE dep.refclassid = 'pg_collation'::regclass AND c.oid = dep.refobjid
) o
JOIN pg_namespace n ON n.oid = o.ns
"""

#: A PostgreSQL relation's description: name -> tuple of what its catalogue rows say.
PgCatalog = dict[str, tuple]

_pg_cache: dict[tuple[int, int], PgCatalog] = {}


def _pg_catalog(conn: sa.Connection, namespace: int, schema: str,
                names: set[str] | None = None) -> PgCatalog:
    """The description of every relation of schema ``namespace`` (``names`` only, when
    given), with the schema's name (and any temporary schema's) taken out of the texts."""
    strip = re.compile(r"\b(?:pg_temp_\d+|" + re.escape(schema) + r")\.")
    relations = {r[0]: r for r in conn.execute(sa.text(_RELATIONS), {"ns": namespace})
                 if names is None or r[1] in names}
    oids = list(relations)
    details: dict[int, list] = {oid: [] for oid in oids}
    if oids:
        for query in (_COLUMNS, _CONSTRAINTS, _EXTRAS, _REACHED):
            for row in conn.execute(sa.text(query), {"oids": oids}):
                details[row[0]].append(tuple(strip.sub("", v) if isinstance(v, str) else v
                                             for v in row[1:]))
    texts = {}  # a view's definition, an index's
    for oid, row in relations.items():
        if row[2] in ("v", "m", "i"):
            function = "pg_get_indexdef" if row[2] == "i" else "pg_get_viewdef"
            text = conn.execute(sa.text(f"SELECT {function}(:o)"), {"o": oid}).scalar()
            texts[oid] = normalised_sql(strip.sub("", text or ""))
    catalog = {}
    for oid, (_, name, kind, security, options, table) in relations.items():
        catalog[name] = (kind, bool(security), tuple(options), texts.get(oid),
                         tuple(sorted(map(repr, details[oid]))), table)
    return catalog


def _expected_pg(engine: sa.Engine, schema_version: int) -> PgCatalog:
    """The catalogue our DDL makes, read from the session's temporary schema inside a
    transaction that is rolled back; once per process per (server, schema version)."""
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            server = int(conn.exec_driver_sql("SHOW server_version_num").scalar())
            key = (server, schema_version)
            with _lock:
                if key in _pg_cache:
                    return _pg_cache[key]
            S.create_objects(conn.execution_options(schema_translate_map={None: "pg_temp"}),
                             schema_version, view_schema="pg_temp")
            namespace = conn.exec_driver_sql("SELECT pg_my_temp_schema()::oid").scalar()
            catalog = _pg_catalog(conn, int(namespace), "pg_temp")
        finally:
            trans.rollback()
    with _lock:
        _pg_cache[key] = catalog
    return catalog


def _pg_optional(name: str, actual: PgCatalog) -> bool:
    """Whether a PostgreSQL store may lack relation ``name``: a table added to version 2
    after its first stores, its sequence and indexes, and the one-current-build index
    (it comes with ``publications``)."""
    if name == "uq_builds_one_current":
        return "publications" not in actual
    return any(name == t or name.startswith(t + "_") for t in S.ADDED_TABLES)


_KINDS = {"r": "table", "v": "view", "m": "materialized view", "i": "index",
          "S": "sequence", "p": "partitioned table", "f": "foreign table", "c": "type",
          "I": "partitioned index"}


def _pg_mismatches(actual: PgCatalog, expected: PgCatalog, foreign: bool) -> list[str]:
    tables = {name for name, desc in expected.items() if desc[0] in ("r", "v")}
    odd = []
    for name, desc in actual.items():
        kind = _KINDS.get(desc[0], desc[0])
        want = expected.get(name)
        if want is not None:
            if desc[0] != want[0]:
                odd.append(f"{kind} {name!r} where polydom keeps a {_KINDS.get(want[0])}")
            elif desc != want:
                odd.append(f"{kind} {name!r} other than polydom writes it")
        elif desc[5] in tables:
            odd.append(f"{kind} {name!r} on polydom's table {desc[5]!r}")
        elif not foreign:  # another program's relations: our tables must still be ours
            odd.append(f"{kind} {name!r}, which polydom never writes")
    for name, desc in expected.items():
        if name not in actual and not _pg_optional(name, actual):
            odd.append(f"no {_KINDS.get(desc[0])} {name!r}")
    return odd


def check_postgresql_schema(conn: sa.Connection, engine: sa.Engine, shown: str) -> int:
    """Check a PostgreSQL store's schema whole (the schema it is in, ``current_schema()``)
    and return its schema version; see the module's text for what is compared.

    Runtime complexity: O(relations) catalogue rows (plus, once per process, the expected
    catalogue made in a rolled-back transaction).

    Raises
    ------
    polydom.errors.ForeignDatabaseError
        One line naming up to four relations that differ or are missing, or saying that
        the expected catalogue cannot be made (no temporary objects allowed here).
    polydom.errors.SchemaVersionError
        A version this code does not read.
    """
    schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
    namespace = conn.execute(sa.text("SELECT oid FROM pg_namespace WHERE nspname = :s"),
                             {"s": schema}).scalar()
    try:
        first = _expected_pg(engine, S.SCHEMA_VERSION)
    except sa.exc.DBAPIError as exc:
        raise ForeignDatabaseError(
            f"url {shown!r}: its schema cannot be compared with polydom's (temporary "
            f"objects are refused here: {str(exc.orig).splitlines()[0]}); refusing to read "
            "it") from None
    info = _pg_catalog(conn, namespace, schema, {"schema_info"})
    odd = _pg_mismatches(info, {"schema_info": first["schema_info"]}, foreign=True)
    if "schema_info" not in info:
        odd.append("no table 'schema_info'")
    if odd:
        _refuse(shown, odd)
    version, foreign = _version(conn, shown)
    expected = first if version == S.SCHEMA_VERSION else _expected_pg(engine, version)
    odd = _pg_mismatches(_pg_catalog(conn, namespace, schema), expected, foreign)
    if odd:
        _refuse(shown, odd)
    return version
