"""The database of an index store: URL, engine, transactions, schema creation and version.

:class:`Database` opens any SQLAlchemy URL (a plain file path is a SQLite file), makes
SQLite run real transactions (``BEGIN`` for reads, ``BEGIN IMMEDIATE`` for writes, WAL for
files, set before the schema is written when the store is created), creates the tables and views of
:mod:`storage.schema` in an empty database, and refuses a store of a schema version it cannot
read.  Opening an existing store writes nothing.  The errors of the store live here too.
"""

from __future__ import annotations

import math
import os
import sqlite3
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa

from polydom.errors import (
    ForeignDatabaseError,
    InvalidArgumentError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreKeyError,
    StoreLocationError,
    StoreNotFoundError,
)
from storage import schema as S
from storage.blobs import BlobDigest
from storage.schema_check import FOREIGN_KEY, check_postgresql_schema, check_sqlite_schema

__all__ = [
    "Database",
    "ForeignDatabaseError",
    "SchemaVersionError",
    "StoreKeyError",
    "StoreLocationError",
    "StoreNotFoundError",
    "normalize_url",
    "now",
]


#: The PostgreSQL advisory lock key every write transaction of a store takes (an arbitrary
#: constant: "polydom" in ASCII, as a 64-bit integer); it serialises writers per database.
WRITE_LOCK = int.from_bytes(b"polydom", "big")


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
        raise InvalidArgumentError(f"url must be a SQLAlchemy URL or a file path, got {url!r}")
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
    read_only : bool, default False
        Open for reading only (implies ``create=False``): a SQLite file is opened through
        its URI with ``mode=ro``, so nothing (no journal-mode switch, no schema) is ever
        written to it, whatever it holds.
    key : bytes or str, optional
        The store key of HMAC-signed blobs (default: ``POLYDOM_STORE_KEY``; see
        :class:`storage.blobs.BlobDigest`).  A new store records the key's id and signs its
        blobs; a store is read and written only with the key it was created with.
    allow_foreign : bool, default False
        Create the store's tables in a non-empty database of another program.  Refused by
        default, naming the tables found.

    Raises
    ------
    SchemaVersionError
        If the database holds a store of another schema version.
    ForeignDatabaseError
        If the database has tables of another program and ``allow_foreign`` is false.
    """

    def __init__(
        self,
        url: str | os.PathLike,
        create: bool = True,
        read_only: bool = False,
        key: bytes | str | None = None,
        allow_foreign: bool = False,
    ) -> None:
        self.url = normalize_url(url)
        try:
            parsed = sa.engine.make_url(self.url)
            self.display_url = parsed.render_as_string(hide_password=True)
            self.dialect = parsed.get_backend_name()
            parsed.get_dialect()  # an unknown database kind fails here, not in a query
        except sa.exc.ArgumentError as exc:
            raise InvalidArgumentError(
                f"url {self.url!r} is not a usable SQLAlchemy URL: {exc}") from None
        self.read_only = bool(read_only)
        create = bool(create) and not self.read_only
        self.allow_foreign = bool(allow_foreign)
        #: How blobs are digested (sha256, or HMAC under the store key).
        self.digest = BlobDigest.resolve(key)
        #: The id of the key the store's blobs are signed with (None: plain sha256).
        self.store_key_id: str | None = None
        if self.dialect == "sqlite":
            database, self.read_only = _sqlite_location(parsed, self.display_url,
                                                        self.read_only, create)
            create = create and not self.read_only
            on_disk = database is not None
            if on_disk and self.read_only:
                # a fresh connection per transaction (no pool): each picks immutable or ro
                self.engine = sa.create_engine(
                    "sqlite://", poolclass=sa.pool.NullPool,
                    creator=lambda: _read_only_connection(database))
            elif on_disk:
                self.engine = sa.create_engine(parsed.set(query={}),
                                               connect_args={"timeout": 60})
            else:
                self.engine = sa.create_engine(parsed, connect_args={"timeout": 60})
            _sqlite_transactions(self.engine)
            self._sqlite_file = database if on_disk else None
        else:
            self.engine = sa.create_engine(parsed)
            self._sqlite_file = None
        #: Schema version of the store (one of :data:`storage.schema.READABLE_VERSIONS`).
        self.schema_version = S.SCHEMA_VERSION
        #: Tables of the database when it was opened.
        self.tables: set[str] = set()
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
        """A write transaction; writers of one store run one at a time.

        SQLite: ``BEGIN IMMEDIATE`` (writers queue, never deadlock).  PostgreSQL: the
        transaction first takes a transaction-level advisory lock (:data:`WRITE_LOCK`), so
        two publishers never interleave (each statement, in ``READ COMMITTED``, then sees
        what the writer before it committed: one current build, always; an identical build
        started at the same moment finds the other's row instead of inserting its own).
        """
        with self._unwritable(), self.engine.connect() as conn:
            conn.execution_options(polydom_write=True)
            with conn.begin():
                if self.dialect == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                                 {"k": WRITE_LOCK})
                yield conn

    @contextmanager
    def _unwritable(self) -> Iterator[None]:
        """Turn SQLite's "readonly database" / "unable to open database file" of a store
        opened to write into one line naming the file."""
        try:
            yield
        except sa.exc.OperationalError as exc:
            text = str(exc.orig)
            if (self.dialect == "sqlite" and not self.read_only
                    and ("readonly" in text or "unable to open" in text)):
                path = sa.engine.make_url(self.url).database
                raise StoreLocationError(
                    f"url {self.display_url!r}: {path!r} cannot be written ({text}: a "
                    "read-only file, folder or medium); open it read-only to read it") from None
            raise

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """A read transaction: one consistent snapshot on SQLite (WAL) and PostgreSQL."""
        with self._unwritable(), self.engine.connect() as conn:
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
        """Check an existing store (schema version, key) or create one in an empty database.

        The check reads only: a foreign or empty database opened without ``create`` is
        left exactly as it was.
        """
        for attempt in range(2):
            with self.read() as conn:
                names = {n for n in sa.inspect(conn).get_table_names()
                         if not n.startswith("sqlite_")}
                if "schema_info" in names:
                    self.tables = names
                    self._check_schema(conn)
                    return
            if not create:
                raise StoreNotFoundError(f"url {self.display_url!r} holds no polydom index store")
            clash = names & set(S.TABLES)
            if clash:
                raise SchemaVersionError(
                    f"url {self.display_url!r} has tables {sorted(clash)} but no schema_info: "
                    "not a polydom store of a known schema version"
                )
            if names and not self.allow_foreign:
                shown = ", ".join(sorted(names)[:12]) + (" ..." if len(names) > 12 else "")
                raise ForeignDatabaseError(
                    f"url {self.display_url!r} is a database of another program (tables: "
                    f"{shown}); polydom does not add its tables to it: build into a new "
                    "database, or allow it explicitly (allow_foreign=True; "
                    "foreign_database = true in a build config)"
                )
            try:
                with _creation_lock(self._sqlite_file):
                    if self._sqlite_file is not None:
                        self._wal_if_empty()
                    with self.write() as conn:
                        if "schema_info" in set(sa.inspect(conn).get_table_names()):
                            continue
                        S.create_objects(conn)
                        info = [
                            {"key": "schema_version", "value": str(S.SCHEMA_VERSION)},
                            {"key": "created_at", "value": now()},
                        ]
                        if self.digest.keyed:
                            info.append({"key": "blob_key_id", "value": self.digest.key_id})
                        if names:  # another program's objects are allowed beside ours
                            info.append({"key": FOREIGN_KEY, "value": "true"})
                        conn.execute(S.schema_info.insert(), info)
                self.store_key_id = self.digest.key_id
                self.tables = set(S.TABLES)
                return
            except sa.exc.DBAPIError:  # another process created it at the same moment
                if attempt:
                    raise

    def _wal_if_empty(self) -> None:
        """Put an empty SQLite file in WAL mode (readers never block the writer; the mode is
        kept in the file) before anything is written to it.

        Switching a file that holds data needs an exclusive lock that SQLite does not wait
        for while another connection holds the write lock (it fails at once with "database
        is locked"), so the switch happens while the file is empty, under
        :func:`_creation_lock`: no store is visible yet, so no writer of one can hold the
        lock.  A foreign database (``allow_foreign``) keeps its owner's journal mode.
        """
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            if cursor.execute("PRAGMA page_count").fetchone()[0] == 0:
                cursor.execute("PRAGMA journal_mode=WAL")
        finally:
            raw.close()

    def _check_schema(self, conn: sa.Connection) -> None:
        """Compare the store's schema whole with what its version writes
        (:mod:`storage.schema_check`), then read its version and key id.

        Runtime complexity: O(objects in the schema) catalogue rows.
        """
        if self.dialect == "sqlite":
            self.schema_version = check_sqlite_schema(conn, self.display_url)
        elif self.dialect == "postgresql":
            self.schema_version = check_postgresql_schema(conn, self.engine, self.display_url)
        else:
            raise ForeignDatabaseError(
                f"url {self.display_url!r}: polydom compares a store's schema on SQLite and "
                f"PostgreSQL only, not on {self.dialect!r}; refusing to read it")
        self.store_key_id = conn.execute(
            sa.select(S.schema_info.c.value).where(S.schema_info.c.key == "blob_key_id")
        ).scalar()

    def check_key(self) -> None:
        """Raise :class:`StoreKeyError` unless this process holds the store's blob key.

        Called before model blobs are written or loaded.  A store created with a key is
        signed: loading needs the same key, and a key holder refuses a store without one
        (a writer of the database could have removed the signatures and recomputed plain
        sha256 digests).

        Runtime complexity: O(1).
        """
        mine = self.digest.key_id
        if mine == self.store_key_id:
            return
        if self.store_key_id is None:
            raise StoreKeyError(
                f"url {self.display_url!r}: the store's blobs are not signed, but a store key "
                "is set (POLYDOM_STORE_KEY or key=): refusing blobs that cannot prove who "
                "wrote them; unset the key to use this store unsigned"
            )
        raise StoreKeyError(
            f"url {self.display_url!r}: the store's blobs are signed with key id "
            f"{self.store_key_id}, " + (f"not with this key (id {mine})" if mine else
                                        "and no key is set (POLYDOM_STORE_KEY or key=)")
        )

    def add_tables(self, names: tuple[str, ...] = S.ADDED_TABLES) -> None:
        """Create those of :data:`storage.schema.ADDED_TABLES` in ``names`` that this store
        lacks (a version-2 store made before they existed), in one write transaction.

        Called by writers before a write that uses them; reads never call it, so opening a
        store still writes nothing.  Creating a table changes no existing row.

        Runtime complexity: one catalogue query per missing table; nothing when none is.

        Raises
        ------
        PermissionError, storage.SchemaVersionError, storage.StoreKeyError
            As :meth:`check_writable`.
        """
        missing = [n for n in names if n not in self.tables]
        if not missing:
            return
        self.check_writable()
        unknown = sorted(set(missing) - set(S.ADDED_TABLES))
        if unknown:
            raise InvalidArgumentError(f"names must be among {S.ADDED_TABLES}, got {unknown}")
        with self.write() as conn:
            for name in missing:
                S.metadata.tables[name].create(conn, checkfirst=True)
                if name == "publications":  # the log comes with "one current build"
                    S.one_current_build().create(conn, checkfirst=True)
        self.tables.update(missing)  # after the commit: a rolled-back create is not recorded

    def check_writable(self) -> None:
        """Raise :class:`SchemaVersionError` unless the store has the current schema version.

        A store of an older readable version is read, never written: new builds go into a
        new database.

        Runtime complexity: O(1).
        """
        if self.read_only:
            raise ReadOnlyStoreError(f"url {self.display_url!r} was opened read-only")
        self.check_key()
        if self.schema_version != S.SCHEMA_VERSION:
            raise SchemaVersionError(
                f"url {self.display_url!r} holds a polydom store of schema version "
                f"{self.schema_version}, which this version of polydom reads but does not "
                f"write (it writes schema version {S.SCHEMA_VERSION}); build into a new "
                "database: polydom build CONFIG with another store, or "
                "polydom.build_index(..., store=NEW_URL)"
            )


@contextmanager
def _creation_lock(path: str | None) -> Iterator[None]:
    """Serialise the creation of SQLite stores in the folder of ``path`` across processes.

    An advisory ``flock`` on the folder, not on the file: closing any other descriptor of a
    SQLite file drops SQLite's own POSIX locks on it.  Held only while a store is created
    (two processes creating stores in one folder wait for each other, for milliseconds).
    Where ``flock`` is missing (Windows) or refused (a file system without it), creation
    runs unserialised, as SQLite alone allows.  ``path`` None (not a SQLite file): no lock.
    """
    if path is None or sys.platform == "win32":
        yield
        return
    import fcntl

    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def _sqlite_location(
    url: sa.engine.URL, shown: str, read_only: bool, create: bool
) -> tuple[str | None, bool]:
    """The file of a SQLite URL (None: in memory) and whether it is opened read-only.

    ``?mode=ro`` or ``?immutable=1`` in the URL make the open read-only.  Refused with a
    one-line error naming the path: a file that is not a regular file (a FIFO would block
    the open forever, a folder or device is no store), a missing file opened to read, a
    missing folder or an in-memory database opened to write (a build stored there vanishes
    with the process).  Checked before anything is opened.

    Runtime complexity: two ``stat`` calls.
    """
    query = dict(url.query)
    read_only = read_only or query.get("mode") == "ro" or query.get("immutable") == "1"
    database = url.database or ""
    if database in ("", ":memory:") or query.get("mode") == "memory":
        if not read_only:
            raise StoreLocationError(
                f"url {shown!r} is an in-memory SQLite database: a build stored there "
                "vanishes when the process ends; give a file path")
        return None, read_only
    path = Path(database).resolve()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if read_only or not create:
            raise StoreNotFoundError(f"url {shown!r}: no such SQLite file") from None
        if not path.parent.is_dir():
            raise StoreLocationError(
                f"url {shown!r}: folder {str(path.parent)!r} does not exist; create it "
                "first") from None
        return str(path), read_only
    except OSError as exc:
        raise StoreNotFoundError(f"url {shown!r}: cannot read {str(path)!r} "
                                 f"({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device")
        raise StoreNotFoundError(f"url {shown!r}: {str(path)!r} is {kind}, not a regular "
                                 "file; a store is a SQLite file")
    return str(path), read_only


def _read_only_connection(path: str) -> sqlite3.Connection:
    """A connection that reads ``path`` and writes nothing, not even side files.

    A store in WAL mode with no ``-wal`` file next to it has no writer and nothing to
    replay: it is opened ``immutable=1`` (no ``-wal``/``-shm`` created, readable on
    read-only media).  Otherwise it is opened ``mode=ro``, sharing the live writer's log,
    and where that fails (read-only media without the ``-shm`` file) ``immutable=1``.
    A database in rollback-journal mode is opened ``mode=ro`` (no side files).
    """
    uri = f"file:{quote(path)}?mode=ro"
    if _wal_mode(path) and not os.path.exists(f"{path}-wal"):
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        if "immutable" in uri:
            raise
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False)
    return conn


def _wal_mode(path: str) -> bool:
    """Whether the SQLite file at ``path`` is in WAL mode (its header's read and write
    versions are 2)."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"


def _sqlite_transactions(engine: sa.Engine) -> None:
    """Make pysqlite emit real transactions: BEGIN for reads, BEGIN IMMEDIATE for writes."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        # the schema is the store's, and the store may be hostile: its views and triggers
        # may call no function with side effects or that hands out pointers
        # (fts3_tokenizer), and it may not use virtual tables (SQLite >= 3.31)
        cursor.execute("PRAGMA trusted_schema=OFF")
        try:  # the views use power(); SQLite builds without math functions lack it
            cursor.execute("SELECT power(2.0, 3)")
        except sqlite3.OperationalError:
            dbapi_connection.create_function("power", 2, math.pow, deterministic=True)
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("polydom_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
