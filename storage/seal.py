"""The seal of a published build: one digest over every row that decides its lookups.

:func:`publish <storage.builds.publish>` computes it from the rows it writes and stores it in
``build_seals``; :func:`load_index <storage.reader.load_index>` recomputes it from the rows
it reads and refuses the build when they differ (an accuracy or a cost coefficient edited in
SQL, a skyline entry moved).  The digest is a sha256, or an HMAC under the store key (then
only a key holder can reseal edited rows).  Floats enter as ``repr`` (exact for the stored
doubles), rows in key order, so both sides compute the same text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from polydom.errors import PolydomError
from storage.blobs import BlobDigest
from storage.codec import canonical_json

__all__ = ["IndexIntegrityError", "index_seal"]


class IndexIntegrityError(PolydomError, ValueError):
    """A published build whose rows no longer match its seal (edited after publishing), or
    whose index arrays fail their digest, belong to another build or do not decode."""


def index_seal(
    digest: BlobDigest,
    header: Sequence[Any],
    candidates: Iterable[Sequence[Any]],
    coefficients: Iterable[Sequence[Any]],
    needs: Iterable[Sequence[Any]],
    ranges: Iterable[Sequence[Any]],
    entries: Iterable[Sequence[Any]],
) -> str:
    """Hex digest over a build's index rows.

    ``header`` is ``(n_min, n_max, index_kind)``; ``candidates`` rows ``(candidate_id,
    key_json, accuracy, features_json, learner, expansion_id, model_sha256)``;
    ``coefficients`` rows ``(candidate_id, degree, coefficient)``; ``needs`` rows
    ``(candidate_id, feature_id, probability)``; ``ranges`` rows ``(range_id, n_lo, n_hi)``;
    ``entries`` rows ``(range_id, rank, candidate_id)``.  Each group is sorted here.

    Runtime complexity: O(R log R) for R rows in all.
    """

    def rows(group: Iterable[Sequence[Any]]) -> list[list[Any]]:
        return sorted([_value(v) for v in row] for row in group)

    text = canonical_json(
        {
            "header": [_value(v) for v in header],
            "candidates": rows(candidates),
            "coefficients": rows(coefficients),
            "needs": rows(needs),
            "ranges": rows(ranges),
            "entries": rows(entries),
        },
        "index rows",
    )
    return digest.of(text.encode())


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
