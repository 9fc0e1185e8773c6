"""The read path of a build's side record (``build_pools``): the candidates no lookup can
return, read when something first asks for every candidate of an opened build.

``open_index`` reads the record's digest and count (the build's seal covers both), never
its blob: :func:`stored_pool` gives the table a :class:`storage.pool_record.StoredPool`
that holds the published candidates and, on the first access to another one, reads the
blob in a read transaction of its own, checks it against that digest, decodes it, checks
the expansions its candidates' models come from against the seals it holds, and attaches
the models (lazily, as the published candidates' are).  Published builds never change, so
the record read later is the one sealed with the build (a deleted build is an error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from polydom.curves.candidate import Candidate
from polydom.errors import IndexIntegrityError
from storage import pool_record
from storage import schema as S
from storage.database import Database
from storage.expansion_seals import expansion_digest, expansion_rows
from storage.lazy_models import model_payloads
from storage.seal import seal_digest

__all__ = ["pool_row", "stored_pool"]


def pool_row(db: Database, conn: sa.Connection, build_id: int) -> sa.Row | None:
    """The build's side record's ``(format, digest, candidates)`` (None: it has none).
    One indexed query; the blob is not read."""
    if "build_pools" not in db.tables:
        return None
    bp = S.build_pools
    return conn.execute(sa.select(bp.c.format, bp.c.digest, bp.c.candidates)
                        .where(bp.c.build_id == build_id)).first()


def stored_pool(db: Database, build_id: int, ids: Sequence[int],
                candidates: Sequence[Candidate], row: sa.Row | None, trusted: bool,
                models: bool) -> Sequence[Candidate]:
    """The build's whole pool: ``candidates`` (published, at positions ``ids``) and, when
    the build has a side record (``row``, from :func:`pool_row`), the others read from it on
    first use.

    Runtime complexity: O(P) for P published candidates; the side record costs nothing
    until it is read.

    Raises
    ------
    IndexIntegrityError
        If the published candidates do not make up the pool and there is no side record.
    """
    ids = list(ids)
    if row is None:
        if ids != list(range(len(ids))):
            raise IndexIntegrityError(
                f"build {build_id}: its candidates are not its whole pool and it has no "
                "side record (build_pools); refusing to open it")
        return list(candidates)
    size = len(ids) + int(row.candidates)
    return pool_record.StoredPool(size, dict(zip(ids, candidates, strict=True)),
                                  _loader(db, build_id, row.digest, trusted, models))


def _loader(db: Database, build_id: int, digest: str, trusted: bool,
            models: bool) -> Callable[[], dict[int, Candidate]]:
    """What reads the side record of ``build_id`` (sealed with ``digest``) when called."""

    def load() -> dict[int, Candidate]:
        where = f"build {build_id} of {db.display_url!r}"
        try:
            return read(where)
        except IndexIntegrityError:
            raise
        except Exception as exc:  # noqa: BLE001 - the store moved, is gone or is locked
            reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
            raise IndexIntegrityError(
                f"{where}: its side record (the candidates on no skyline) could not be read "
                f"({type(exc).__name__}: {reason}); lookups need none of them") from None

    def read(where: str) -> dict[int, Candidate]:
        bp = S.build_pools
        with db.read() as conn:
            stored = conn.execute(sa.select(bp.c.format, bp.c.digest, bp.c.blob)
                                  .where(bp.c.build_id == build_id)).first()
            blob = None if stored is None else bytes(stored.blob)
            check = seal_digest(db)
            if (stored is None or stored.format != pool_record.FORMAT
                    or stored.digest != digest or not check.matches(blob, digest)):
                raise IndexIntegrityError(
                    f"{where}: its side record (build_pools) is missing or fails its "
                    "sealed digest (edited, corrupted or deleted after publishing); "
                    "refusing to read it")
            record = pool_record.decode(blob, build_id)
            linked = sorted(set(record.expansion.tolist()) - {-1})
            expansions = expansion_rows(db, conn, linked, models)
            for eid in linked:
                found = expansions.get(eid)
                if (found is None or expansion_digest(db, found)
                        != record.expansion_seals.get(str(eid))):
                    raise IndexIntegrityError(
                        f"{where}: expansion {eid}, whose model a candidate of its side "
                        "record uses, is missing or changed after publishing; refusing to "
                        "read it")
        cands = record.pool.make(range(len(record.pool)))
        if models:
            feeds: dict[str, Any] = {
                "keys": record.pool.keys,
                "expansion": [None if e < 0 else e for e in record.expansion.tolist()],
                "model_format": record.model_format, "model_digest": record.model_digest,
                "model_blob": record.model_blob}
            for cand, payload in zip(cands, model_payloads(db, build_id, feeds, expansions,
                                                           trusted), strict=True):
                object.__setattr__(cand, "payload", payload)
        return dict(zip(record.positions.tolist(), cands, strict=True))

    return load
