"""The publication log and its head: which build is current, and since when.

``publish`` numbers each published build (``publications.sequence``, one more than the
highest) and the build's seal covers its number, so the current build must be the latest
publication: moving ``is_current`` back is refused (:func:`check_current`).  That alone
cannot catch a rollback that also deletes the newer publications (their log rows, builds
and seals): what remains is exactly a store that never had them.  So ``publish`` also
writes the *head record*, one ``schema_info`` row (:data:`HEAD_KEY`) holding the latest
publication's number, build and a digest over them and the build's seal (an HMAC under the
store key in a signed store), and the seal of every build published with it says so
(``"head": 1`` in its header).  Reading the current build (:func:`check_head`), the head
record must name exactly that build and publication, and a build sealed with a head must
have one.

What a fresh reader can tell from the store alone (also in ``docs/storage.md``):

- signed store: a rollback that deletes the newer publications is refused unless the
  writer also puts back the head record of the older build, which only a key holder can
  compute; a copy of it kept from when that build was current (a restored backup or
  snapshot) is accepted, as is a rollback to a build published before head records
  existed.  ``min_publication`` (a number the reader remembers, e.g. a previous
  ``index.info["publication"]``) refuses those too: no one without the key can seal a
  build under a higher number.
- unsigned store: everything is sha256, so a writer who recomputes the head record (or
  renumbers and reseals an older build) is not detected, with or without
  ``min_publication``; a rollback that does not rewrite the head record is refused.

Runtime complexity: every function here reads or writes O(1) indexed rows.
"""

from __future__ import annotations

import hmac

import numpy as np
import sqlalchemy as sa

from polydom.errors import MinPublicationError
from storage import schema as S
from storage.blobs import BlobDigest
from storage.codec import canonical_json
from storage.database import Database
from storage.seal import IndexIntegrityError

__all__ = [
    "HEAD_KEY",
    "MinPublicationError",
    "check_current",
    "check_head",
    "check_min_publication",
    "check_min_publication_argument",
    "head_digest",
    "next_sequence",
    "read_head",
    "write_head",
]

#: The ``schema_info`` key of the head record: ``"<sequence> <build id> <digest>"``.
HEAD_KEY = "publication_head"


def next_sequence(conn: sa.Connection) -> int:
    """The number the next publication gets: one more than the highest logged (1 for the
    first); call it inside the publishing (write-locked) transaction."""
    top = conn.execute(sa.select(sa.func.max(S.publications.c.sequence))).scalar()
    return int(top or 0) + 1


def head_digest(digest: BlobDigest, sequence: int, build_id: int, seal: str) -> str:
    """The digest a head record holds: over its publication number, its build and that
    build's seal (domain-separated from every other digest of the store)."""
    text = canonical_json({"publication_head": [int(sequence), int(build_id), str(seal)]},
                          "publication head")
    return digest.of(text.encode())


def write_head(
    conn: sa.Connection, digest: BlobDigest, sequence: int, build_id: int, seal: str
) -> None:
    """Replace the head record by publication ``sequence`` of build ``build_id`` (in the
    publishing transaction, so the head and the log move together)."""
    info = S.schema_info
    conn.execute(info.delete().where(info.c.key == HEAD_KEY))
    conn.execute(info.insert().values(
        key=HEAD_KEY,
        value=f"{int(sequence)} {int(build_id)} {head_digest(digest, sequence, build_id, seal)}"))


def check_current(db: Database, conn: sa.Connection, row: sa.Row) -> int | None:
    """The publication number of the latest publication, checked to be the build ``row``
    (the store's current build); None for a store without a publication log.

    Raises
    ------
    IndexIntegrityError
        If another build was published after the current one (``is_current`` was moved
        back outside polydom: a rollback).
    """
    if "publications" not in db.tables:
        return None
    p = S.publications
    top = conn.execute(sa.select(p.c.sequence, p.c.build_id)
                       .order_by(p.c.sequence.desc()).limit(1)).first()
    if top is None:
        return None
    if int(top.build_id) != int(row.id):
        raise IndexIntegrityError(
            f"url {db.display_url!r}: build {int(row.id)} is marked current, but build "
            f"{int(top.build_id)} was published after it (publication {int(top.sequence)}): "
            "the current build was changed outside polydom (a rollback?); refusing it.  "
            f"open_index(url, build={int(row.id)}) opens that build explicitly")
    return int(top.sequence)


def read_head(conn: sa.Connection) -> str | None:
    """The stored head record's text, None when there is none."""
    info = S.schema_info
    return conn.execute(sa.select(info.c.value).where(info.c.key == HEAD_KEY)).scalar()


def check_head(
    db: Database,
    digest: BlobDigest,
    build_id: int,
    publication: int | None,
    seal: str | None,
    head: str | None,
    sealed_with_head: bool,
) -> None:
    """Check the head record ``head`` (:func:`read_head`) against the current build.

    ``publication`` is the build's number in the log (:func:`check_current`), ``seal`` its
    stored seal (already checked against its rows), ``sealed_with_head`` whether that seal
    says the build was published with a head record.  No head record is accepted only for
    a build sealed without one (published before head records existed); an unsealed build
    (``seal`` None: an unsigned store's, opened unverified) is not checked.

    Raises
    ------
    IndexIntegrityError
        If the head record names another publication or build (a later one: the newer
        publications were deleted), fails its digest, does not parse, or is missing for a
        build sealed with one.
    """
    where = f"url {db.display_url!r}: the current build {build_id}"
    if seal is None:  # an unsealed build (a signed store refuses it) is not verified at all
        return
    if head is None:
        if sealed_with_head:
            raise IndexIntegrityError(
                f"{where} was published with a head record (schema_info "
                f"{HEAD_KEY!r}), which is gone: the newer publications were deleted (a "
                "rollback?); refusing it")
        return
    parts = head.split(" ")
    numbers = all(p.isascii() and p.isdigit() for p in parts[:2])
    if len(parts) != 3 or not numbers or publication is None:
        raise IndexIntegrityError(
            f"{where}: the head record (schema_info {HEAD_KEY!r}) {head[:100]!r} does not "
            "name a sealed publication; refusing it")
    sequence, head_build = int(parts[0]), int(parts[1])
    if (sequence, head_build) != (publication, build_id):
        raise IndexIntegrityError(
            f"{where} is publication {publication}, but the store's head record names "
            f"publication {sequence} (build {head_build}): the newer publications were "
            "deleted (a rollback?); refusing it.  "
            f"open_index(url, build={build_id}) opens that build explicitly")
    if not hmac.compare_digest(head_digest(digest, sequence, head_build, seal), parts[2]):
        kind = "HMAC (store key)" if digest.keyed else "sha256"
        raise IndexIntegrityError(
            f"{where}: the head record (schema_info {HEAD_KEY!r}) fails its {kind} check "
            "(written outside polydom); refusing it")


def check_min_publication_argument(least: object, build: object) -> None:
    """Refuse a ``min_publication`` that is not None or an integer >= 1, or one given with
    ``build`` (it bounds the current build; a pinned build is the caller's choice)."""
    if least is None:
        return
    if isinstance(least, bool) or not isinstance(least, (int, np.integer)) or least < 1:
        raise MinPublicationError(
            f"min_publication must be a publication number (an integer >= 1), got {least!r}")
    if build is not None:
        raise MinPublicationError(
            f"min_publication={least!r} bounds the current build; it cannot be combined "
            f"with build={build!r}")


def check_min_publication(
    db: Database, build_id: int, publication: int | None, least: int
) -> None:
    """Refuse a current build older than publication ``least`` (what the reader already
    knew had been published).

    Raises
    ------
    IndexIntegrityError
        If the build's publication number is below ``least`` or unknown.
    """
    if publication is None or publication < least:
        raise IndexIntegrityError(
            f"url {db.display_url!r}: the current build {build_id} is publication "
            f"{publication}, older than min_publication={least}: the store was rolled back "
            "(or is not the store you expect); refusing it")
