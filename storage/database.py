"""The database of an index store: URL, engine, transactions, schema creation and version.

:class:`Database` opens any SQLAlchemy URL (a plain file path is a SQLite file), makes
SQLite run real transactions (``BEGIN`` for reads, ``BEGIN IMMEDIATE`` for writes, WAL for
files, set when the store is created), creates the tables and views of
:mod:`storage.schema` in an empty database, and refuses a store of a schema version it cannot
read.  Opening an existing store writes nothing.  The errors of the store live here too.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from polydom.errors import PolydomError
from storage import schema as S

__all__ = [
    "Database",
    "SchemaVersionError",
    "StoreNotFoundError",
    "normalize_url",
    "now",
]


class SchemaVersionError(PolydomError, RuntimeError):
    """The database holds a polydom store of another schema version (or a foreign layout)."""


class StoreNotFoundError(PolydomError, ValueError):
    """No polydom store at the URL (opened for reading only)."""


def normalize_url(url: str | os.PathLike, base: str | os.PathLike | None = None) -> str:
    """A SQLAlchemy URL for ``url``: a plain file path becomes ``sqlite:///<absolute path>``.

    A relative path is taken relative to ``base`` (a directory; default: the working
    directory).  A URL (anything with ``://``) is returned unchanged.

    Runtime complexity: O(len(url)).

    >>> normalize_url("postgresql+psycopg://u@h/db")
    'postgresql+psycopg://u@h/db'
    >>> normalize_url("index.db", base="/data")
    'sqlite:////data/index.db'

    Raises
    ------
    ValueError
        If ``url`` is neither a non-empty string nor a path.
    """
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        raise ValueError(f"url must be a SQLAlchemy URL or a file path, got {url!r}")
    if "://" in url:
        return url
    path = Path(url)
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    return "sqlite:///" + str(path.resolve())


def now() -> str:
    """The current UTC time as stored in the tables (ISO 8601, microseconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Database:
    """An engine on one store's database, with read and write transactions.

    Parameters
    ----------
    url : str or path
        Any SQLAlchemy URL or a plain file path (a SQLite file).
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
            _sqlite_transactions(self.engine)
            self._wal = database not in ("", ":memory:")
        else:
            self.engine = sa.create_engine(parsed)
            self._wal = False
        #: Schema version of the store (one of :data:`storage.schema.READABLE_VERSIONS`).
        self.schema_version = S.SCHEMA_VERSION
        try:
            self._ensure_schema(create)
        except BaseException:
            self.engine.dispose()
            raise

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite: writers queue, never deadlock)."""
        with self.engine.connect() as conn:
            conn.execution_options(polydom_write=True)
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """A read transaction: one consistent snapshot on SQLite (WAL) and PostgreSQL."""
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def analyze(self, tables: str) -> None:
        """Refresh the planner statistics of ``tables`` (PostgreSQL; a no-op elsewhere)."""
        if self.dialect != "postgresql":
            return
        with self.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                f"ANALYZE {tables}"
            )

    def _ensure_schema(self, create: bool) -> None:
        for attempt in range(2):
            with self.read() as conn:
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
                with self.write() as conn:
                    if "schema_info" in set(sa.inspect(conn).get_table_names()):
                        continue
                    S.metadata.create_all(conn)
                    verb = (
                        "CREATE VIEW IF NOT EXISTS"
                        if self.dialect == "sqlite"
                        else "CREATE OR REPLACE VIEW"
                    )
                    for name, select in S.VIEWS.items():
                        conn.exec_driver_sql(f"{verb} {name} AS {select}")
                    conn.execute(
                        S.schema_info.insert(),
                        [
                            {"key": "schema_version", "value": str(S.SCHEMA_VERSION)},
                            {"key": "created_at", "value": now()},
                        ],
                    )
                if self._wal:  # readers never block the writer; persistent in the file
                    raw = self.engine.raw_connection()
                    try:
                        raw.cursor().execute("PRAGMA journal_mode=WAL")
                    finally:
                        raw.close()
                return
            except sa.exc.DBAPIError:  # another process created it at the same moment
                if attempt:
                    raise

    def _check_version(self, conn: sa.Connection) -> None:
        value = conn.execute(
            sa.select(S.schema_info.c.value).where(S.schema_info.c.key == "schema_version")
        ).scalar()
        if value not in {str(v) for v in S.READABLE_VERSIONS}:
            raise SchemaVersionError(
                f"url {self.display_url!r} holds a polydom store of schema version {value}; "
                f"this version of polydom reads schema version {S.SCHEMA_VERSION} "
                "(rebuild the index into a new database)"
            )
        self.schema_version = int(value)

    def check_writable(self) -> None:
        """Raise :class:`SchemaVersionError` unless the store has the current schema version.

        A store of an older readable version is read, never written: new builds go into a
        new database.

        Runtime complexity: O(1).
        """
        if self.schema_version != S.SCHEMA_VERSION:
            raise SchemaVersionError(
                f"url {self.display_url!r} holds a polydom store of schema version "
                f"{self.schema_version}, which this version of polydom reads but does not "
                f"write (it writes schema version {S.SCHEMA_VERSION}); build into a new "
                "database: polydom build CONFIG with another store, or "
                "polydom.build_index(..., store=NEW_URL)"
            )


def _sqlite_transactions(engine: sa.Engine) -> None:
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
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("polydom_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
