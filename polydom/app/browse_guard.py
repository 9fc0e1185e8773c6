"""What a ``polydom browse`` connection may do: SQLite's authorizer, limits and a result
budget on every connection Datasette opens to the store, so that neither a browser user nor a
crafted store can reach native pointers or take the server's memory.

:func:`guard_connection` applies the policy to one :class:`sqlite3.Connection`:

- an **authorizer** allows ``SELECT`` statements, reading the tables and views the store had
  when browse started (:func:`read_schema`), the functions of :data:`ALLOWED_FUNCTIONS`
  (plain scalar, aggregate, window, date, math and JSON functions) and the read-only
  :data:`ALLOWED_PRAGMAS`.  Everything else is denied when the statement is prepared: the
  functions that hand out or take pointers (``fts3_tokenizer``, ``fts5``), full-text and
  R-tree functions (``match``, ``snippet``, ...), ``load_extension``, ``zeroblob`` and
  ``randomblob``, recursive common table expressions, virtual tables (``json_each``,
  ``pragma_*`` functions, ``dbstat``, ``sqlite_dbpage``, FTS tables), and every write, attach
  or schema change.  A view of a crafted store calling a denied function is refused the same
  way (the authorizer sees a view's body), and ``trusted_schema`` is off;
- **limits**: one value holds at most :data:`MAX_VALUE_BYTES` (``SQLITE_LIMIT_LENGTH``: a
  longer string or blob is an error, ``printf``/``replace``/``group_concat`` included), a row
  at most :data:`MAX_COLUMNS` columns, SQLite's heap in the process at most
  :data:`HEAP_LIMIT_BYTES` (``hard_heap_limit``);
- a **result budget**: the rows one statement hands to Python hold at most
  :data:`MAX_RESULT_BYTES` of text and blobs; past it the statement fails with
  :class:`sqlite3.OperationalError` (Datasette answers 400).

:func:`read_schema` reads, once at start, the tables a connection may read and what a store
holds that browse refuses to serve (virtual tables).
Standard library only.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "ALLOWED_FUNCTIONS",
    "ALLOWED_PRAGMAS",
    "HEAP_LIMIT_BYTES",
    "MAX_COLUMNS",
    "MAX_RESULT_BYTES",
    "MAX_VALUE_BYTES",
    "guard_connection",
    "read_schema",
    "register_guard",
]

#: The longest string or blob a value may be (``SQLITE_LIMIT_LENGTH``), bytes.
MAX_VALUE_BYTES = 16 * 2**20

#: The most columns a result row may have (``SQLITE_LIMIT_COLUMN``).
MAX_COLUMNS = 200

#: Text and blob bytes one statement may hand to Python.
MAX_RESULT_BYTES = 64 * 2**20

#: SQLite's heap in the browse process (``PRAGMA hard_heap_limit``), bytes.
HEAP_LIMIT_BYTES = 512 * 2**20

#: SQL functions a browser may call (lower case; ``->``/``->>`` are JSON operators).
ALLOWED_FUNCTIONS = frozenset({
    # scalar
    "abs", "char", "coalesce", "format", "glob", "hex", "ifnull", "iif", "instr", "length",
    "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "printf",
    "quote", "random", "replace", "round", "rtrim", "sign", "soundex", "sqlite_version",
    "substr", "substring", "trim", "typeof", "unicode", "unlikely", "upper",
    # aggregate
    "avg", "count", "group_concat", "sum", "total",
    # window
    "cume_dist", "dense_rank", "first_value", "lag", "last_value", "lead", "nth_value",
    "ntile", "percent_rank", "rank", "row_number",
    # date and time
    "current_date", "current_time", "current_timestamp", "date", "datetime", "julianday",
    "strftime", "time", "unixepoch",
    # math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos",
    "cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow",
    "power", "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
    # JSON
    "->", "->>", "json", "json_array", "json_array_length", "json_extract",
    "json_group_array", "json_group_object", "json_insert", "json_object", "json_patch",
    "json_quote", "json_remove", "json_replace", "json_set", "json_type", "json_valid",
    # Datasette's own (search terms escaped for FTS; harmless without FTS tables)
    "escape_fts",
})

#: Pragmas a statement may run (read-only ones Datasette uses to describe a database).
ALLOWED_PRAGMAS = frozenset({
    "database_list", "foreign_key_list", "index_info", "index_list", "index_xinfo",
    "schema_version", "table_info", "table_xinfo",
})

#: The schema tables every reader may read.
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master",
                            "sqlite_temp_schema"})

_DENY = sqlite3.SQLITE_DENY
_OK = sqlite3.SQLITE_OK


def read_schema(path: str | Path) -> tuple[frozenset[str], list[str]]:
    """The tables and views of the SQLite file at ``path`` that browse may read (lower
    case), and what it holds that browse will not serve: its virtual tables (FTS, R-tree,
    ...; ``rootpage`` 0 or ``CREATE VIRTUAL TABLE``) as ``name (USING module)`` texts, at most
    five.  The file is opened immutable (nothing written).  O(schema).

    >>> import tempfile, os
    >>> db = os.path.join(tempfile.mkdtemp(), "s.db")
    >>> with sqlite3.connect(db) as conn:
    ...     _ = conn.execute("CREATE TABLE builds (id INTEGER)")
    ...     _ = conn.execute("CREATE VIRTUAL TABLE notes USING fts3(text)")
    >>> tables, virtual = read_schema(db)
    >>> "builds" in tables, "notes" in tables, virtual
    (True, False, ['notes (USING fts3)'])
    """
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?immutable=1", uri=True)
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        rows = conn.execute("SELECT type, name, rootpage, sql FROM main.sqlite_master "
                            "WHERE type IN ('table', 'view') LIMIT 100000").fetchall()
    finally:
        conn.close()
    virtual = [(name, sql) for kind, name, root, sql in rows if _virtual(kind, root, sql)]
    tables = frozenset(str(name).lower() for kind, name, root, sql in rows
                       if not _virtual(kind, root, sql))
    return tables, [f"{name} (USING {_module(sql)})" for name, sql in virtual[:5]]


def _virtual(kind: Any, root: Any, sql: Any) -> bool:
    text = " ".join(sql[:100].split()[:2]).upper() if isinstance(sql, str) else ""
    return kind == "table" and (root == 0 or text == "CREATE VIRTUAL")


def _module(sql: Any) -> str:
    words = sql.split() if isinstance(sql, str) else []
    upper = [w.upper() for w in words]
    if "USING" in upper and upper.index("USING") + 1 < len(words):
        return words[upper.index("USING") + 1].split("(", 1)[0][:40]
    return "?"


def _authorizer(tables: frozenset[str]):
    def authorize(action: int, arg1: str | None, arg2: str | None, database: str | None,
                  source: str | None) -> int:
        if action == sqlite3.SQLITE_SELECT:
            return _OK
        if action == sqlite3.SQLITE_READ:
            name = (arg1 or "").lower()
            return _OK if name in tables or name in _SCHEMA_TABLES else _DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return _OK if (arg2 or "").lower() in ALLOWED_FUNCTIONS else _DENY
        if action == sqlite3.SQLITE_PRAGMA:
            return _OK if (arg1 or "").lower() in ALLOWED_PRAGMAS else _DENY
        return _DENY  # writes, schema changes, ATTACH, recursive CTEs, virtual tables, ...

    return authorize


class _ResultBudget:
    """A row factory making :class:`sqlite3.Row` rows that counts the text and blob bytes of
    each cursor's rows and fails the statement past :data:`MAX_RESULT_BYTES`."""

    def __init__(self) -> None:
        self.spent: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, cursor: sqlite3.Cursor, row: tuple) -> sqlite3.Row:
        size = sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
        spent = self.spent.get(cursor, 0) + size
        self.spent[cursor] = spent
        if spent > MAX_RESULT_BYTES:
            raise sqlite3.OperationalError(
                f"result too large: more than {MAX_RESULT_BYTES // 2**20} MiB of values "
                "(polydom browse's bound); select fewer rows or columns")
        return sqlite3.Row(cursor, row)


def guard_connection(conn: sqlite3.Connection, tables: Iterable[str]) -> None:
    """Apply the browse policy (module docstring) to ``conn``; ``tables`` are the tables and
    views it may read (:func:`read_schema`).  Call it before ``conn`` runs any statement of
    a user.  O(1)."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}")
    conn.row_factory = _ResultBudget()
    conn.set_authorizer(_authorizer(frozenset(t.lower() for t in tables)))


def register_guard(database: str, tables: Iterable[str]) -> None:
    """Register a Datasette plugin (``prepare_connection`` hook) that applies
    :func:`guard_connection` to every connection Datasette opens to ``database`` (its name in
    Datasette); replaces an earlier registration.  O(1)."""
    from datasette import hookimpl
    from datasette.plugins import pm

    target, readable = database, frozenset(tables)

    class BrowseGuard:
        def __init__(self) -> None:
            self.__name__ = __name__  # Datasette lists a plugin by its module's name

        @hookimpl
        def prepare_connection(self, conn: sqlite3.Connection, database: str) -> None:
            if database == target:
                guard_connection(conn, readable)

    if pm.get_plugin(_PLUGIN) is not None:
        pm.unregister(name=_PLUGIN)
    pm.register(BrowseGuard(), name=_PLUGIN)


_PLUGIN = "polydom-browse-guard"
