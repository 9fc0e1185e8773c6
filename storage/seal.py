"""The seal of a published build: one digest over every row that decides its lookups.

:func:`publish <storage.builds.publish>` computes it from the rows it writes and stores it in
``build_seals`` and in the build's index arrays; :func:`load_index
<storage.reader.load_index>` checks the arrays against it (and the rows against the arrays),
or recomputes it from the rows of a build without arrays, and refuses the build when they
differ (an accuracy or a cost coefficient edited in
SQL, a skyline entry moved).  The digest is a sha256, or an HMAC under the store key (then
only a key holder can reseal edited rows).  Floats enter as ``repr`` (exact for the stored
doubles), rows in key order, so both sides compute the same text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from polydom.errors import IndexIntegrityError
from storage.blobs import BlobDigest
from storage.codec import canonical_json

__all__ = [
    "SEAL_VERSION",
    "IndexIntegrityError",
    "expansion_seal",
    "index_seal",
    "info_digest",
    "pool_part",
    "rows_digest",
    "seal_digest",
    "seal_header",
]

#: The layout of the seal :func:`index_seal` writes.  Version 1 (builds published before
#: :mod:`storage.candidate_fields`) covered the candidates, coefficients, needs, ranges and
#: entries and ``(n_min, n_max, index_kind)``; version 2 also covers the header below.
SEAL_VERSION = 2


def index_seal(
    digest: BlobDigest,
    header: Sequence[Any] | Mapping[str, Any],
    candidates: Iterable[Sequence[Any]],
    coefficients: Iterable[Sequence[Any]],
    needs: Iterable[Sequence[Any]],
    ranges: Iterable[Sequence[Any]],
    entries: Iterable[Sequence[Any]],
) -> str:
    """Hex digest over a build's index rows.

    ``header`` is, for a version-2 seal, a mapping (JSON-able; what else the build's answers
    depend on: domain, index kind, the training key of its expansions, its publication
    number, the digest of its cost model rows, the seals of the expansions its candidates
    use); for a version-1 seal the sequence ``(n_min, n_max, index_kind)``.  ``candidates``
    rows are ``(candidate_id, *sealed fields)`` (:func:`storage.candidate_fields.
    sealed_fields`; version 1: :func:`storage.candidate_fields.legacy_sealed_fields`);
    ``coefficients`` rows ``(candidate_id, degree, coefficient)``; ``needs`` rows
    ``(candidate_id, feature_id, probability)``; ``ranges`` rows ``(range_id, n_lo, n_hi)``;
    ``entries`` rows ``(range_id, rank, candidate_id)``.  Each group is sorted here.

    Runtime complexity: O(R log R) for R rows in all.
    """
    body = {
        "candidates": _rows(candidates),
        "coefficients": _rows(coefficients),
        "needs": _rows(needs),
        "ranges": _rows(ranges),
        "entries": _rows(entries),
    }
    if isinstance(header, Mapping):
        body.update(version=SEAL_VERSION, header=dict(header))
    else:
        body["header"] = [_value(v) for v in header]
    return digest.of(canonical_json(body, "index rows").encode())


def seal_header(
    n_min: float,
    n_max: float,
    kind: str,
    expansion_key: str,
    publication: int | None,
    cost_model: str,
    expansions: Mapping[str, str],
    head: bool = False,
    info: str | None = None,
    pool: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header of a version-2 seal (JSON-able: floats by repr, ``inf`` included): the
    domain, index kind, the training key of the build's expansions, its publication number,
    the digest of its cost model rows (:func:`rows_digest`) and the seals of the expansions
    its candidates use (``{str(id): seal}``); with ``head``, ``"head": 1``: the build was
    published with a head record (:mod:`storage.publications`; builds published before
    head records existed have no such part); with ``info`` (the build's ``builds.info``
    text), ``"info"``: its :func:`info_digest` (the cost unit, domain, evaluation protocol
    and everything else the build says of itself; builds published before the info was
    sealed have no such part); with ``pool`` (:func:`pool_part`), ``"pool"``: the digest
    and count of the build's side record (:mod:`storage.pool_record`; builds that hold every
    candidate in their rows have no such part).

    Runtime complexity: O(len(expansions) + len(info)).
    """
    header = {"n_min": repr(float(n_min)), "n_max": repr(float(n_max)), "kind": kind,
              "expansion_key": expansion_key, "publication": publication,
              "cost_model": cost_model, "expansions": dict(expansions)}
    if head:
        header["head"] = 1
    if info is not None:
        header["info"] = info_digest(info)
    if pool is not None:
        header["pool"] = dict(pool)
    return header


def pool_part(digest: str, candidates: int) -> dict[str, Any]:
    """The ``pool`` part of a seal header: the side record's blob digest (sha256, or HMAC
    under the store key) and how many candidates it holds.  O(1)."""
    return {"digest": digest, "candidates": int(candidates)}


def info_digest(info: str | None) -> str:
    """sha256 of a build's stored ``info`` text (``""`` for none), as a seal header holds it.

    Runtime complexity: O(len(info)).
    """
    return BlobDigest().of((info or "").encode())


def rows_digest(groups: Mapping[str, Iterable[Sequence[Any]]]) -> str:
    """sha256 of named groups of rows (each sorted), as :func:`index_seal` writes them: what
    a seal header holds of a build's cost model rows.

    Runtime complexity: O(R log R) for R rows.
    """
    return BlobDigest().of(canonical_json({k: _rows(v) for k, v in groups.items()},
                                          "rows").encode())


def expansion_seal(digest: BlobDigest, row: Sequence[Any]) -> str:
    """Hex digest over one stored expansion: ``(id, expansion_key, feature_mask, features,
    accuracy, fit_seconds, model_format, model_sha256, predictions digest)``, followed in a
    store of schema version 3 or later by ``(accuracy_se, fold_scores)``.

    Binds the model blob (through its digest) to what it is for: the training key (learner,
    parameters, data, columns) and the feature set, with its accuracy (and its standard
    error and fold scores).

    Runtime complexity: O(len(row)).
    """
    return digest.of(canonical_json([_value(v) for v in row], "expansion").encode())


def seal_digest(db: Any) -> BlobDigest:
    """How the seals and index arrays of ``db`` (a :class:`storage.database.Database`) are
    digested: under the store key for a signed store (checked: a signed build is opened with
    its key or not at all), else plain sha256."""
    if db.store_key_id is not None:
        db.check_key()
        return db.digest
    return BlobDigest()


def _rows(group: Iterable[Sequence[Any]]) -> list[list[Any]]:
    return sorted([_value(v) for v in row] for row in group)


def _value(value: Any) -> Any:
    """Exact, comparable text of a stored value (floats by repr; None as "")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return value
    return str(value)
