"""open_index and list_builds: the public way to read an index store."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import storage
from polydom.blobs.model_registry import register_learner_models
from polydom.index.built import Index
from storage import IndexStore
from storage.build_records import BuildRecord

__all__ = ["open_index", "list_builds", "register_learner_models"]


def open_index(
    url: str | os.PathLike,
    build: int | None = None,
    trusted: bool = False,
    key: bytes | str | None = None,
    rebuild: bool = False,
    min_publication: int | None = None,
    models: bool = True,
) -> Index:
    """Load a stored index: the latest complete build, or build ``build``.

    Without ``build`` the index follows the store: :meth:`Index.refresh` switches it to a
    build published later (atomically, without reopening anything by hand), never to an
    older publication.  With ``build`` it is pinned to that build.

    The current build must be the latest publication (``index.info["publication"]``) and
    the one the store's head record names.  A rollback that deletes the newer publications
    and puts back an older head record cannot be told from the store alone: pass the
    highest publication number you know of as ``min_publication`` (e.g. a remembered
    ``info["publication"]``) to refuse a current build older than it.  In a signed store
    that refuses every rollback; in an unsigned one (sha256 only) a writer who reseals an
    older build under a new number still passes (docs/storage.md, "Security model").

    ``url`` is any SQLAlchemy URL or a SQLite file path; the database is opened read-only
    (nothing is written to it, whatever it holds).  The index is rebuilt (no sweep) from
    the build's index arrays, one blob checked against its digest with the rows compared to
    it column by column (from the rows checked against the build's seal for a build
    published before the arrays existed), and answers ``lookup`` exactly as the index that
    was stored; ``rebuild=True`` reads the rows and sweeps the skylines again from the
    stored candidates instead of refusing edited rows.  ``index.info["read_from"]`` says
    which.  Models are
    checked against their digest (sha256, or HMAC under ``key`` / ``POLYDOM_STORE_KEY`` for
    a signed store) and decoded without running code from the database; pickled models, and
    skops blobs holding classes outside the allow-list or functions, need ``trusted=True``.
    Each model is decoded when it is first used (its codec and library imported then);
    ``models=False`` attaches none (no model blob is read: what the command line's lookup,
    inspect and plots need).

    Runtime complexity: O(K * d + N + E) for K candidates of degree d, N needs and E
    skyline entries (numpy work and one Python object per candidate), plus decoding the
    models.

    Raises
    ------
    storage.StoreNotFoundError
        If there is no store at ``url``.
    ValueError
        If there is no complete build, or ``build`` is unknown or incomplete.
    storage.SchemaVersionError, storage.ModelIntegrityError, storage.UntrustedModelError
        For a store of another schema version, a tampered blob, an untrusted model.
    storage.IndexIntegrityError, storage.StoreKeyError
        For rows edited after publishing, a current build that is not the latest
        publication or is older than ``min_publication``, a signed store without its key.
    polydom.errors.MinPublicationError
        If ``min_publication`` is not an integer >= 1 or is given with ``build``.
    """
    with IndexStore(url, read_only=True, key=key) as store:
        index = store.load_index(build=build, trusted=trusted, rebuild=rebuild,
                                 min_publication=min_publication, models=models)
        resolved = store.url
    index.bind_recalibration(_recalibration(resolved, trusted, key))
    if build is not None:
        return index
    return index.follow(_newest_build(resolved, trusted, key, rebuild, models,
                                      index.info.get("publication")))


def _recalibration(url: Any, trusted: bool, key: bytes | str | None) -> Callable[..., Any]:
    """What :meth:`Index.recalibrate` calls: :func:`polydom.recalibrate` on this store,
    starting from the index's own build and publishing only over it (an index recalibrates
    itself: a build published meanwhile is never replaced)."""

    def run(index: Index, **options: Any) -> Any:
        from polydom.pipeline.recalibrate import recalibrate  # the write path: on first use

        options.setdefault("build", index.info.get("build_id"))
        options.setdefault("replaces", index.info.get("build_id"))
        return recalibrate(url, key=key, trusted=trusted, **options)

    return run


def _newest_build(
    url: Any, trusted: bool, key: bytes | str | None, rebuild: bool, models: bool,
    seen: int | None,
) -> Callable[[Any], Index | None]:
    """What :meth:`Index.refresh` asks: the store's current build when it is not ``build_id``.

    ``seen`` is the publication number of the build the index holds, raised with every
    switch: a current build of a lower number (the newer publications deleted and the
    current flag moved back, which a fresh reader cannot tell from a store that never had
    them) is refused.
    """

    def newest(build_id: Any) -> Index | None:
        nonlocal seen
        with IndexStore(url, read_only=True, key=key) as store:
            if store.current_build_id() == build_id:
                return None
            index = store.load_index(trusted=trusted, rebuild=rebuild, models=models)
            shown = store.display_url
        if index.info["build_id"] == build_id:
            return None
        number = index.info.get("publication")
        if seen is not None and (number is None or number < seen):
            raise storage.IndexIntegrityError(
                f"url {shown!r}: the current build {index.info['build_id']} is publication "
                f"{number}, older than publication {seen} this index already read: the "
                "store was rolled back; refusing to switch to it")
        seen = number if number is not None else seen
        return index

    return newest


def list_builds(url: str | os.PathLike, key: bytes | str | None = None) -> list[BuildRecord]:
    """Every build in the store at ``url``, oldest first (status, parameters, counts).

    ``key`` as for :func:`open_index` (a signed store refuses a reader without its key).

    Runtime complexity: one query.
    """
    with IndexStore(url, read_only=True, key=key) as store:
        return store.list_builds()
