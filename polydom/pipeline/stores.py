"""What the application asks of a store besides its index: where it is, which format each
skyline candidate's model has, and deleting old builds.

With :func:`polydom.pipeline.open.open_index` and ``list_builds`` these are the doors of the
command line (``lookup``, ``inspect``, ``builds``, ``plot``, ``plan``, ``browse``) into
:mod:`storage`, so that ``polydom/app`` imports no storage code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from polydom.index.built import Index
from storage import IndexStore
from storage.database import normalize_url

__all__ = ["delete_builds", "model_formats", "open_with_model_formats", "shown_url",
           "store_url"]


def store_url(url: str | os.PathLike, base: str | os.PathLike | None = None) -> str:
    """The SQLAlchemy URL of a store: a plain file path (relative to ``base``, default the
    working directory) becomes ``sqlite:///<absolute path>``; a URL is returned unchanged.

    Runtime complexity: O(len(url)).

    >>> store_url("index.db", base="/data")
    'sqlite:////data/index.db'

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If ``url`` is neither a non-empty string nor a path.
    """
    return normalize_url(url, base=base)


def shown_url(url: str | os.PathLike, key: bytes | str | None = None) -> str:
    """The store's URL as printed (a password hidden), after opening it read-only.

    Runtime complexity: opening the store (one catalogue query).
    """
    with IndexStore(url, read_only=True, key=key) as store:
        return store.display_url


def model_formats(
    url: str | os.PathLike, build: int, key: bytes | str | None = None
) -> dict[int, str | None]:
    """The model format (``"skops"``, ``"arrays"``, ``"lightgbm"``, ``None`` for a candidate
    without a model, ...) of each skyline candidate of build ``build``, by candidate
    position; reads no model blob.

    Runtime complexity: one query over the build's skyline rows.
    """
    with IndexStore(url, read_only=True, key=key) as store:
        return {r["candidate_id"]: r["model_format"] for r in store.skyline_rows(build)}


def open_with_model_formats(
    url: str | os.PathLike, build: int | None = None, key: bytes | str | None = None,
    min_publication: int | None = None,
) -> tuple[Index, dict[int, str | None]]:
    """One build without its models (``open_index(..., models=False)``, not following the
    store) and :func:`model_formats` of it, read through one opening of the store (what
    ``polydom lookup`` prints).

    Runtime complexity: what ``open_index`` costs plus one query over the skyline rows.
    """
    with IndexStore(url, read_only=True, key=key) as store:
        index = store.load_index(build=build, min_publication=min_publication, models=False)
        rows = store.skyline_rows(index.info["build_id"])
    return index, {r["candidate_id"]: r["model_format"] for r in rows}


def delete_builds(
    url: str | os.PathLike, build_ids: Sequence[int] | None = None,
    key: bytes | str | None = None,
) -> dict[str, Any]:
    """Delete builds (default: every complete or failed build but the current one), keeping
    the expansions the remaining builds use; returns what was deleted and the file sizes
    (:meth:`storage.IndexStore.delete_builds`).

    Runtime complexity: O(rows of the deleted builds) plus the VACUUM.
    """
    with IndexStore(url, create=False, key=key) as store:
        return store.delete_builds(build_ids)
