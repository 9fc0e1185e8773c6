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
- a **result budget** in the bytes Datasette sends: each value of the rows one statement
  hands to Python is charged what its encoding costs (:func:`encoded_bytes`: the larger of
  its JSON text, where an emoji takes 12 bytes and a control character 6, and its escaped
  HTML in UTF-8), and each row its column names (JSON objects repeat them); past
  :data:`MAX_RESULT_BYTES` the statement fails with :class:`sqlite3.OperationalError`
  (Datasette answers 400);
- a **response budget** (:class:`ResponseBudget`, an ASGI wrapper): the bytes of one
  response's body are at most :data:`MAX_RESPONSE_BYTES`, whatever statements made it (a
  page runs several); a larger answer is refused with a 400 before it is sent, and a
  streamed one is cut at the budget.

:func:`read_schema` reads, once at start, the tables a connection may read and what a store
holds that browse refuses to serve (virtual tables).
Standard library only.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Awaitable, Callable, Iterable
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

__all__ = [
    "ALLOWED_FUNCTIONS",
    "ALLOWED_PRAGMAS",
    "HEAP_LIMIT_BYTES",
    "MAX_COLUMNS",
    "MAX_RESULT_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_VALUE_BYTES",
    "ResponseBudget",
    "encoded_bytes",
    "guard_connection",
    "read_schema",
    "register_guard",
]

#: The longest string or blob a value may be (``SQLITE_LIMIT_LENGTH``), bytes.
MAX_VALUE_BYTES = 16 * 2**20

#: The most columns a result row may have (``SQLITE_LIMIT_COLUMN``).
MAX_COLUMNS = 200

#: Encoded bytes (:func:`encoded_bytes`) of the rows one statement may hand to Python.
MAX_RESULT_BYTES = 32 * 2**20

#: Bytes of one response's body (:class:`ResponseBudget`).
MAX_RESPONSE_BYTES = 64 * 2**20

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


#: Characters encoded at a time by :func:`encoded_bytes` (bounds its scratch memory).
_CHUNK = 1 << 16


def encoded_bytes(value: Any) -> int:
    """The most bytes ``value`` takes in a Datasette answer: the larger of its JSON
    encoding (``ensure_ascii``: an astral character such as an emoji is a surrogate pair,
    12 bytes; a control or other non-ASCII character 6; a quote or backslash 2) and its
    escaped HTML in UTF-8 (``&`` 5 bytes, ``"`` and ``'`` 5 or 6); a blob its base64 form.
    Numbers cost 24, ``None`` 4.  Runtime complexity: O(len(value)), in chunks of 64 Ki
    characters (scratch memory at most 12 x 64 KiB).

    >>> encoded_bytes("abc"), encoded_bytes("\U0001F600"), encoded_bytes("\x01")
    (5, 14, 8)
    >>> encoded_bytes('a&b')  # HTML: a&amp;b
    7
    """
    if value is None:
        return 4
    if isinstance(value, (int, float)):
        return 24
    if isinstance(value, (bytes, bytearray, memoryview)):
        return 4 * ((len(value) + 2) // 3) + 32
    text = value if isinstance(value, str) else str(value)
    as_json, as_html = 2, 0
    for start in range(0, len(text), _CHUNK):
        chunk = text[start:start + _CHUNK]
        as_json += len(encode_basestring_ascii(chunk)) - 2
        as_html += (len(chunk.encode("utf-8", "surrogatepass")) + 4 * chunk.count("&")
                    + 3 * (chunk.count("<") + chunk.count(">"))
                    + 5 * (chunk.count('"') + chunk.count("'")))
    return max(as_json, as_html)


class _ResultBudget:
    """A row factory making :class:`sqlite3.Row` rows that charges each cursor's rows their
    encoded bytes (:func:`encoded_bytes`, plus the column names per row) and fails the
    statement past :data:`MAX_RESULT_BYTES`."""

    def __init__(self) -> None:
        self.spent: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, cursor: sqlite3.Cursor, row: tuple) -> sqlite3.Row:
        spent, names = self.spent.get(cursor, (0, None))
        if names is None:
            names = sum(encoded_bytes(d[0]) + 2 for d in cursor.description or ())
        spent += names + sum(encoded_bytes(v) + 2 for v in row)
        self.spent[cursor] = (spent, names)
        if spent > MAX_RESULT_BYTES:
            raise sqlite3.OperationalError(
                f"result too large: more than {MAX_RESULT_BYTES // 2**20} MiB once encoded "
                "(polydom browse's bound per statement); select fewer rows or columns")
        return sqlite3.Row(cursor, row)


class ResponseBudget:
    """An ASGI wrapper that sends at most ``limit`` bytes of body per response.

    The response's start is held until its first body part: an answer whose first part is
    already over the budget (Datasette sends a page in one part) is replaced by a 400 with
    a one-line text; a streamed answer is cut at the budget (its last part ends the
    response).  Runtime complexity: O(1) per message.
    """

    def __init__(self, app: Callable[..., Awaitable[None]],
                 limit: int = MAX_RESPONSE_BYTES) -> None:
        self.app = app
        self.limit = int(limit)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        held: list[dict] = []
        sent = 0
        done = False

        async def bounded(message: dict) -> None:
            nonlocal sent, done
            if done:
                return
            if message["type"] == "http.response.start":
                held.append(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            body = message.get("body", b"")
            if held and sent + len(body) > self.limit:
                done = True
                text = (f"answer too large: more than {self.limit // 2**20} MiB (polydom "
                        "browse's bound per response); select fewer rows or columns\n"
                        ).encode()
                await send({"type": "http.response.start", "status": 400, "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(text)).encode())]})
                await send({"type": "http.response.body", "body": text})
                return
            if held:
                await send(held.pop())
            if sent + len(body) > self.limit:
                done = True
                message = {**message, "body": body[: self.limit - sent], "more_body": False}
            sent += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, bounded)


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
