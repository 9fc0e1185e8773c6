"""The one definition of a stored candidate: every column of ``candidates``, once.

Each :class:`CandidateField` says what a column holds (:attr:`~CandidateField.value`, from
what :func:`storage.builds.publish` knows of the candidate), its SQL type, and how the
build's index arrays hold it (:attr:`~CandidateField.array`).  The table
(:data:`storage.schema.candidates`), the rows :func:`publish <storage.builds.publish>`
writes, the seal (:mod:`storage.seal`), the arrays blob (:mod:`storage.index_arrays`), the
check of the rows against the blob and both read paths (:mod:`storage.reader`) are made
from :data:`CANDIDATE_FIELDS`, so a new stored field is one entry here.

A field with an ``array`` encoding *decides answers*: it is sealed, packed into the arrays
and compared with the rows on every open.  A field without one is a display column for SQL
readers (derived from sealed fields; ``open_index`` never reads it) or the model blob
itself (its digest is a sealed field).

Array encodings:

``"key"``    the candidate's key (its JSON text): the blob holds the keys themselves
``"float"``  a float64 column (a None of a nullable field is NaN)
``"id"``     an int64 column (-1: None)
``"text"``   an int64 column of positions into the field's distinct texts (-1: None), the
             texts in the blob's header

A new field of an existing store's table is a new schema version (:data:`SCHEMA_VERSION
<storage.schema.SCHEMA_VERSION>`): give it ``since_version`` of that version, so that stores
of older versions are read, sealed and checked without it.  Version 2 added ``learner``;
version 3 added ``accuracy_se`` (the standard error of the accuracy, a float) and
``fold_scores`` (the score on each split of the build's evaluation protocol, as the text
of a JSON list, :func:`fold_scores_text`: one column that SQL readers see whole and that
the arrays hold as one text per distinct list), both sealed, because the lookup rule
``"one_se"`` answers from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.curves.candidate import Candidate
from polydom.curves.names import candidate_name
from polydom.errors import InvalidArgumentError
from storage.codec import canonical_json, cost_expression, encode_key

__all__ = [
    "ARRAY_KINDS",
    "CANDIDATE_FIELDS",
    "CandidateField",
    "StoredCandidate",
    "candidate_columns",
    "candidate_row",
    "fold_scores_from_text",
    "fold_scores_text",
    "sealed_fields",
    "sealed_values",
]

#: How the index arrays hold a field (see the module docstring).
ARRAY_KINDS = ("key", "float", "id", "text")


@dataclass(frozen=True)
class StoredCandidate:
    """What :func:`storage.builds.publish` knows of one candidate when it writes its row.

    ``names`` are its features in the build's lattice order, ``mask`` their hex bitmask
    (None: a feature outside the lattice), ``expansion_id`` the stored expansion whose model
    it uses, ``model`` its own model blob as ``(blob, format, digest)``.
    """

    position: int
    candidate: Candidate
    names: list[str]
    mask: str | None
    expansion_id: int | None
    model: tuple[bytes, str, str] | None


@dataclass(frozen=True)
class CandidateField:
    """One column of the ``candidates`` table.

    Parameters
    ----------
    name : str
        The column name.
    type : SQLAlchemy type
        Its SQL type.
    value : callable
        ``StoredCandidate -> value`` written by ``publish``.
    array : str or None
        How the index arrays hold it (one of :data:`ARRAY_KINDS`); None: not sealed (a
        display column, or the model blob whose digest is sealed).
    nullable : bool, default True
    foreign_key : str, optional
        ``"table.column"`` it references.
    since_version : int, default 1
        The schema version that added the column (older stores are read without it).
    """

    name: str
    type: Any
    value: Callable[[StoredCandidate], Any]
    array: str | None = None
    nullable: bool = True
    foreign_key: str | None = None
    since_version: int = 1

    def __post_init__(self) -> None:
        if self.array is not None and self.array not in ARRAY_KINDS:
            raise InvalidArgumentError(
                f"array must be one of {ARRAY_KINDS} or None, got {self.array!r}")

    @property
    def sealed(self) -> bool:
        """Whether the field decides answers (sealed, in the arrays, checked on open)."""
        return self.array is not None

    def column(self) -> sa.Column:
        """The table column."""
        args = [sa.ForeignKey(self.foreign_key)] if self.foreign_key else []
        return sa.Column(self.name, self.type, *args, nullable=self.nullable)


def fold_scores_text(scores: Sequence[float]) -> str:
    """The stored text of a candidate's (or an expansion's) fold scores: a JSON list of
    numbers in split order, each written by ``repr`` (so it reads back exactly);
    ``"[]"`` when there are none.

    >>> fold_scores_text((0.75, 1.0))
    '[0.75,1.0]'
    """
    return canonical_json([float(v) for v in scores], "fold scores")


def fold_scores_from_text(text: Any, what: str) -> tuple[float, ...]:
    """The fold scores a :func:`fold_scores_text` text holds.

    Runtime complexity: O(len(text)).

    Raises
    ------
    ValueError
        Naming ``what``, if ``text`` is not a JSON list of numbers.
    """
    try:
        values = json.loads(text)
    except (TypeError, ValueError):
        values = None
    if not (isinstance(values, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)):
        raise InvalidArgumentError(
            f"{what}: fold scores {str(text)[:80]!r} are not a JSON list of "
            "numbers")
    return tuple(float(v) for v in values)


def _own(index: int) -> Callable[[StoredCandidate], Any]:
    return lambda s: None if s.model is None else s.model[index]


#: Every column of ``candidates`` after its key ``(build_id, candidate_id)``, in table order.
CANDIDATE_FIELDS: tuple[CandidateField, ...] = (
    CandidateField("key", sa.Text, lambda s: candidate_name(s.candidate.key), nullable=False),
    CandidateField("key_json", sa.Text, lambda s: encode_key(s.candidate.key), "key",
                   nullable=False),
    CandidateField("accuracy", sa.Double, lambda s: float(s.candidate.accuracy), "float",
                   nullable=False),
    CandidateField("accuracy_se", sa.Double, lambda s: float(s.candidate.accuracy_se),
                   "float", nullable=False, since_version=3),
    CandidateField("fold_scores", sa.Text, lambda s: fold_scores_text(s.candidate.fold_scores),
                   "text", nullable=False, since_version=3),
    CandidateField("cost", sa.Text, lambda s: cost_expression(s.candidate.cost),
                   nullable=False),
    CandidateField("degree", sa.Integer, lambda s: s.candidate.cost.degree, nullable=False),
    CandidateField("features", sa.Text, lambda s: ", ".join(s.names), nullable=False),
    CandidateField("features_json", sa.Text, lambda s: canonical_json(s.names), "text",
                   nullable=False),
    CandidateField("feature_mask", sa.String(256), lambda s: s.mask),
    CandidateField("expansion_id", sa.Integer, lambda s: s.expansion_id, "id",
                   foreign_key="expansions.id"),
    CandidateField("learner", sa.Text, lambda s: s.candidate.learner, "text",
                   since_version=2),
    CandidateField("model_format", sa.String(16), _own(1), "text"),
    CandidateField("model_sha256", sa.String(64), _own(2), "text"),
    CandidateField("model_blob", sa.LargeBinary, _own(0)),
)


def sealed_fields(schema_version: int) -> tuple[CandidateField, ...]:
    """The fields that decide answers in a store of ``schema_version``, in table order."""
    return tuple(f for f in CANDIDATE_FIELDS if f.sealed and f.since_version <= schema_version)


def candidate_columns() -> list[sa.Column]:
    """The columns of the ``candidates`` table after its key, in order."""
    return [f.column() for f in CANDIDATE_FIELDS]


def candidate_row(build_id: int, stored: StoredCandidate) -> dict[str, Any]:
    """The ``candidates`` row of one candidate: every field's value.

    Runtime complexity: O(fields + features + degree).
    """
    row = {"build_id": build_id, "candidate_id": stored.position}
    for f in CANDIDATE_FIELDS:
        row[f.name] = f.value(stored)
    return row


def sealed_values(row: dict[str, Any], fields: Sequence[CandidateField]) -> tuple:
    """``(candidate_id, *values of fields)`` of a row written by :func:`candidate_row`."""
    return (row["candidate_id"], *(row[f.name] for f in fields))
