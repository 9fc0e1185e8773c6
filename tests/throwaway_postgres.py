"""A throwaway PostgreSQL server for the suite when none is configured.

The PostgreSQL half of the storage tests runs when ``POLYDOM_TEST_PG_URL`` names a server.
CI starts Debian's server (``.ci/postgres.sh``) and sets it.  On a fresh machine, where
the README's test command is all a newcomer runs, nothing sets it: then, if the
``pgserver`` package is installed (it is in the ``test`` extra: a PostgreSQL build inside
a wheel), :func:`start` creates a cluster in a fresh temporary folder, listening on a Unix
socket only, and exports its URL, so the PostgreSQL tests run instead of skipping.
``POLYDOM_TEST_PG_URL=""`` (set but empty) keeps them skipped.

Runtime: one ``initdb`` and server start, about 2-4 s, once per test session.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile

PG_ENV = "POLYDOM_TEST_PG_URL"


def start() -> object | None:
    """Start a server and export its URL, or do nothing; return a handle for :func:`stop`.

    Nothing happens when ``POLYDOM_TEST_PG_URL`` is set (even to ""), or when ``pgserver``
    is not installed.  A server that fails to start is reported and leaves the variable
    unset (the PostgreSQL tests then skip, saying so).
    """
    if PG_ENV in os.environ or importlib.util.find_spec("pgserver") is None:
        return None
    import pgserver

    folder = tempfile.mkdtemp(prefix="polydom-pgserver-")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # the tests then skip with the usual message
        print(f"throwaway PostgreSQL (pgserver) did not start: {exc}")
        shutil.rmtree(folder, ignore_errors=True)
        return None
    os.environ[PG_ENV] = f"postgresql+psycopg://postgres@/postgres?host={folder}"
    return server, folder


def stop(handle: object | None) -> None:
    """Stop a server :func:`start` started and delete its folder; ``None`` does nothing."""
    if handle is None:
        return
    server, folder = handle
    os.environ.pop(PG_ENV, None)
    try:
        server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
