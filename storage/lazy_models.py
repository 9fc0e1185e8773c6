"""The models of a build's candidates as lazy payloads: read with the build, checked and
decoded on first use.

Both read paths (:mod:`storage.open_arrays`, :mod:`storage.open_rows`) hand the
candidates' model feeds (:func:`storage.candidate_fields.read_candidates`) and the rows of
the expansions they link to here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import sqlalchemy as sa

from polydom.curves.names import candidate_name
from polydom.errors import IndexIntegrityError
from polydom.index.lazy_payload import LazyPayload
from storage.blobs import load_model
from storage.database import Database

__all__ = ["lazy_model", "model_payloads"]


def lazy_model(db: Database, blob: Any, fmt: str | None, digest: str | None, trusted: bool,
               what: str) -> LazyPayload | None:
    """A stored model to be checked and decoded on first use (None: no model).

    The blob's bytes are read now, in the open's transaction; its digest (sha256, or HMAC
    under the store key), then our structural checks, then the decoder run when the model
    is first used (:func:`storage.blobs.load_model`), so opening decodes nothing and a
    model that fails its checks raises its one-line error there.

    Runtime complexity: O(1) (the blob is copied once, O(len(blob))).
    """
    if fmt is None:
        return None
    return LazyPayload(partial(load_model, None if blob is None else bytes(blob), fmt, digest,
                               trusted=trusted, what=what, digest=db.digest), what)


def model_payloads(
    db: Database,
    build_id: int,
    feeds: Mapping[str, list | None],
    expansions: Mapping[int, sa.Row],
    trusted: bool,
) -> list[Any]:
    """One payload per candidate: the model of the expansion it links to (one payload per
    expansion, shared), else its own model (None: it has none).

    ``feeds`` are the candidates' read feeds (``keys``, ``expansion``, ``model_format``,
    ``model_digest``, ``model_blob``); ``expansions`` the rows (``id``, ``features``,
    ``model_format``, ``model_sha256``, ``model_blob``) of the expansions they link to.

    Runtime complexity: O(K) for K candidates.

    Raises
    ------
    IndexIntegrityError
        If a candidate links to an expansion that does not exist.
    """
    keys, links = feeds["keys"], feeds["expansion"]
    formats, digests = feeds["model_format"], feeds["model_digest"]
    blobs = feeds["model_blob"] or [None] * len(keys)
    shared: dict[int, Any] = {}
    payloads: list[Any] = []
    for pos, eid in enumerate(links):
        if eid is None:
            payloads.append(lazy_model(
                db, blobs[pos], formats[pos], digests[pos], trusted,
                f"model of candidate {candidate_name(keys[pos])!r} of build {build_id}"))
            continue
        if eid not in shared:
            e = expansions.get(eid)
            if e is None:
                raise IndexIntegrityError(
                    f"build {build_id}: expansion {eid} that candidate "
                    f"{candidate_name(keys[pos])!r} uses does not exist; refusing to open it")
            shared[eid] = lazy_model(
                db, e.model_blob, e.model_format, e.model_sha256, trusted,
                f"model of expansion {e.id} ({e.features}) of build {build_id}")
        payloads.append(shared[eid])
    return payloads
