"""A stored expansion's seal: what it covers, computed from its row, and checked.

The seal binds an expansion's model blob (through its digest) to what it is for: the
training key, the feature set, the accuracy (since schema version 3 with its standard error
and fold scores) and the digest of its predictions.  A build that reuses an expansion
(:mod:`storage.expansion_cache`, :func:`storage.builds.publish`) checks it; a build's seal
header holds the seals of the expansions its candidates use, recomputed on every open.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from polydom.errors import IndexIntegrityError
from storage import schema as S
from storage.database import Database
from storage.seal import expansion_seal, seal_digest

__all__ = [
    "check_expansion",
    "expansion_digest",
    "expansion_rows",
    "expansion_select",
    "verified_expansions",
]

def expansion_select(db: Database, *extra: Any) -> sa.Select:
    """Expansion rows with what their seal covers (``sealed``: the columns in seal order,
    the predictions' digest last) and their stored seal (``stored_seal``)."""
    x = S.expansions
    cols = [x.c.id, x.c.expansion_key, x.c.feature_mask, x.c.features, x.c.accuracy,
            x.c.fit_seconds, x.c.model_format, x.c.model_sha256]
    if db.schema_version >= 3:
        cols += [x.c.accuracy_se, x.c.fold_scores]
    else:  # a store of an older version keeps neither
        cols += [sa.null().label("accuracy_se"), sa.null().label("fold_scores")]
    source = x
    if "expansion_predictions" in db.tables:
        xp = S.expansion_predictions
        source = source.outerjoin(xp, xp.c.expansion_id == x.c.id)
        cols.append(xp.c.digest.label("predictions_digest"))
    else:
        cols.append(sa.null().label("predictions_digest"))
    if "expansion_seals" in db.tables:
        xs = S.expansion_seals
        source = source.outerjoin(xs, xs.c.expansion_id == x.c.id)
        cols.append(xs.c.digest.label("stored_seal"))
    else:
        cols.append(sa.null().label("stored_seal"))
    return sa.select(*cols, *extra).select_from(source)

def expansion_rows(db: Database, conn: sa.Connection, ids: list[int],
                   blobs: bool = False) -> dict[int, sa.Row]:
    """The :func:`expansion_select` rows of the expansions ``ids`` (with their model blobs
    when ``blobs``), by id; a missing one is left out.

    Runtime complexity: one query per 10**4 ids, O(len(ids)) rows.
    """
    x = S.expansions
    extra = [x.c.model_blob] if blobs else []
    out: dict[int, sa.Row] = {}
    for start in range(0, len(ids), 10_000):  # bound the number of bound parameters
        for r in conn.execute(expansion_select(db, *extra).where(
                x.c.id.in_(ids[start:start + 10_000]))):
            out[int(r.id)] = r
    return out


def expansion_digest(db: Database, row: sa.Row) -> str:
    """The seal of an expansion row of :func:`expansion_select`, as it now is (in a store
    of schema version 3 or later it covers the standard error and the fold scores too)."""
    sealed = [row.id, row.expansion_key, row.feature_mask, row.features, row.accuracy,
              row.fit_seconds, row.model_format, row.model_sha256, row.predictions_digest]
    if db.schema_version >= 3:
        sealed += [row.accuracy_se, row.fold_scores]
    return expansion_seal(seal_digest(db), sealed)

def check_expansion(db: Database, row: sa.Row) -> str:
    """The seal of an expansion row, checked against the stored one: what a build that
    reuses the expansion (the expansion cache, :func:`storage.builds.publish`) relies on.

    An expansion stored before seals existed has none: accepted in an unsigned store (a
    writer could recompute a sha256 anyway), refused in a signed one.

    Runtime complexity: O(1).

    Raises
    ------
    IndexIntegrityError
        If the row does not match its seal, or a signed store's expansion has none.
    """
    found = expansion_digest(db, row)
    if row.stored_seal == found:
        return found
    what = f"expansion {row.id} ({row.features}) of {db.display_url!r}"
    if row.stored_seal is None and db.store_key_id is None:
        return found
    if row.stored_seal is None:
        raise IndexIntegrityError(
            f"{what} has no seal (stored by an older polydom), so its accuracy and model "
            "cannot be verified under the store key; refusing to reuse it (build into a new "
            "store)")
    raise IndexIntegrityError(
        f"{what} was edited after it was stored (its accuracy, feature set, training key "
        "or model digest do not match its seal); refusing to reuse it")

def verified_expansions(
    db: Database, conn: sa.Connection, ids: list[int], expansion_key: str
) -> dict[str, str]:
    """``{str(id): seal}`` of the expansions ``ids`` a build links to, each checked
    (:func:`check_expansion`) and trained with ``expansion_key``.

    Runtime complexity: one query, O(len(ids)) rows.

    Raises
    ------
    IndexIntegrityError
        As :func:`check_expansion`, or if an expansion is missing or of another training key.
    """
    out: dict[str, str] = {}
    for r in expansion_rows(db, conn, ids).values():
        if r.expansion_key != expansion_key:
            raise IndexIntegrityError(
                f"expansion {r.id} of {db.display_url!r} was trained for other "
                "parameters than this build's; refusing to link to it")
        out[str(r.id)] = check_expansion(db, r)
    missing = sorted(set(ids) - {int(i) for i in out})
    if missing:
        raise IndexIntegrityError(f"expansion {missing[0]} of {db.display_url!r} does not "
                                  "exist; refusing to link to it")
    return out
