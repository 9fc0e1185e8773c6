"""The one definition of a stored candidate: every column of ``candidates``, once, for
writing and reading.

Each :class:`CandidateField` says what a column holds (:attr:`~CandidateField.value`, from
what :func:`storage.builds.publish` knows of the candidate), its SQL type, how the build's
index arrays hold it (:attr:`~CandidateField.array`), what it gives back to a reader
(:attr:`~CandidateField.feeds`, through :attr:`~CandidateField.read`), how the SQL views
show it (:attr:`~CandidateField.view`) and in which schema versions it exists
(``since_version``, ``until_version``).  Made from :data:`CANDIDATE_FIELDS`: the table
(:data:`storage.schema.candidates`), the rows :func:`publish <storage.builds.publish>`
writes, the seal (:mod:`storage.seal`), the arrays blob (:mod:`storage.index_arrays`), the
check of the rows against the blob, both read paths (:func:`read_candidates`, used by
:mod:`storage.open_arrays` and :mod:`storage.open_rows`) and the candidate columns of the
views (:func:`view_columns`), so a new stored field is one entry here.

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

What a field feeds (:data:`FEEDS`): an argument of :meth:`polydom.Candidate.from_columns`
(``keys``, ``accuracies``, ``accuracy_ses``, ``fold_scores``, ``features``, ``learners``)
or a part of the candidate's model (``expansion``: the stored expansion whose model it
uses; ``model_format``, ``model_digest``, ``model_blob``: its own model).

A new field of an existing store's table is a new schema version (:data:`SCHEMA_VERSION
<storage.schema.SCHEMA_VERSION>`): give it ``since_version`` of that version, so that stores
of older versions are read, sealed and checked without it (a column dropped from the table
gets ``until_version``, the last version that has it).  Version 2 added ``learner``;
version 3 added ``accuracy_se`` (the standard error of the accuracy, a float) and
``fold_scores`` (the score on each split of the build's evaluation protocol, as the text
of a JSON list, :func:`fold_scores_text`: one column that SQL readers see whole and that
the arrays hold as one text per distinct list), both sealed, because the lookup rule
``"one_se"`` answers from them.  A reader of a store without a field gets its
:attr:`~CandidateField.missing` value (None: :meth:`polydom.Candidate.from_columns`'s
default).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from polydom.curves.candidate import Candidate
from polydom.curves.names import candidate_name, feature_set_text
from polydom.errors import IndexIntegrityError, InvalidArgumentError
from storage.codec import canonical_json, cost_expression, decode_key, encode_key

__all__ = [
    "ARRAY_KINDS",
    "CANDIDATE_FIELDS",
    "FEEDS",
    "CandidateField",
    "StoredCandidate",
    "ViewColumn",
    "by_feed",
    "candidate_columns",
    "candidate_row",
    "candidates_from",
    "fields_of",
    "fold_scores_from_text",
    "fold_scores_text",
    "legacy_sealed_fields",
    "read_candidates",
    "sealed_fields",
    "sealed_values",
    "view_columns",
]

#: How the index arrays hold a field (see the module docstring).
ARRAY_KINDS = ("key", "float", "id", "text")

#: What a field gives a reader: the arguments of ``Candidate.from_columns`` it fills, then
#: the parts of the candidate's model (see the module docstring).
FEEDS = ("keys", "accuracies", "accuracy_ses", "fold_scores", "features", "learners",
         "expansion", "model_format", "model_digest", "model_blob")

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
class ViewColumn:
    """How the views ``skyline`` and ``skyline_all`` show a field: the column ``name``, its
    ``position`` among the candidate columns of the views, and the SQL ``expression`` over
    ``c`` (the candidate's row) and ``x`` (its expansion's row, when it has one); None:
    ``c.<field>``."""

    name: str
    position: int
    expression: str | None = None


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
    feeds : str or None
        What a reader makes of it (one of :data:`FEEDS`); None: readers of the index do
        not read it (a display column).
    read : callable, optional
        ``stored value -> value`` a reader hands on (None: the value as stored); called
        once per distinct value of a ``"text"`` field.
    missing : object, optional
        What a reader of a store without the field gets for the whole column (None: the
        ``Candidate.from_columns`` default).
    view : ViewColumn, optional
        How the skyline views show it (None: they do not).
    nullable : bool, default True
    foreign_key : str, optional
        ``"table.column"`` it references.
    since_version : int, default 1
        The schema version that added the column (older stores are read without it).
    until_version : int, optional
        The last schema version that has the column (None: every version since).
    legacy_seal : int, optional
        Its place in a version-1 seal (:data:`storage.seal.SEAL_VERSION`; builds published
        before this module sealed a fixed list of fields); None: not in such a seal.
    """

    name: str
    type: Any
    value: Callable[[StoredCandidate], Any]
    array: str | None = None
    feeds: str | None = None
    read: Callable[[Any], Any] | None = None
    missing: Any = None
    view: ViewColumn | None = None
    nullable: bool = True
    foreign_key: str | None = None
    since_version: int = 1
    until_version: int | None = None
    legacy_seal: int | None = None

    def __post_init__(self) -> None:
        if self.array is not None and self.array not in ARRAY_KINDS:
            raise InvalidArgumentError(
                f"array must be one of {ARRAY_KINDS} or None, got {self.array!r}")
        if self.feeds is not None and self.feeds not in FEEDS:
            raise InvalidArgumentError(f"feeds must be one of {FEEDS} or None, got "
                                       f"{self.feeds!r}")
        if self.until_version is not None and self.until_version < self.since_version:
            raise InvalidArgumentError(
                f"until_version {self.until_version} of field {self.name!r} is before its "
                f"since_version {self.since_version}")

    @property
    def sealed(self) -> bool:
        """Whether the field decides answers (sealed, in the arrays, checked on open)."""
        return self.array is not None

    def stored_in(self, schema_version: int) -> bool:
        """Whether a store of ``schema_version`` has the column."""
        return self.since_version <= schema_version and (
            self.until_version is None or schema_version <= self.until_version)

    def column(self) -> sa.Column:
        """The table column."""
        args = [sa.ForeignKey(self.foreign_key)] if self.foreign_key else []
        return sa.Column(self.name, self.type, *args, nullable=self.nullable,
                         info={"since_version": self.since_version,
                               "until_version": self.until_version})


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


def _feature_set(text: Any) -> frozenset:
    """The feature set a ``features_json`` text holds (a JSON list of names)."""
    try:
        names = json.loads(text)
    except (TypeError, ValueError):
        names = None
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise InvalidArgumentError(f"feature set {str(text)[:80]!r} is not a JSON list of "
                                   "names")
    return frozenset(names)


def _folds(text: Any) -> tuple[float, ...]:
    return fold_scores_from_text(text, "a candidate")


def _own(index: int) -> Callable[[StoredCandidate], Any]:
    return lambda s: None if s.model is None else s.model[index]


#: Every column of ``candidates`` after its key ``(build_id, candidate_id)``, in table order.
CANDIDATE_FIELDS: tuple[CandidateField, ...] = (
    CandidateField("key", sa.Text, lambda s: candidate_name(s.candidate.key), nullable=False,
                   view=ViewColumn("candidate", 0)),
    CandidateField("key_json", sa.Text, lambda s: encode_key(s.candidate.key), "key",
                   "keys", decode_key, nullable=False, legacy_seal=0),
    CandidateField("accuracy", sa.Double, lambda s: float(s.candidate.accuracy), "float",
                   "accuracies", nullable=False, view=ViewColumn("accuracy", 3),
                   legacy_seal=1),
    CandidateField("accuracy_se", sa.Double, lambda s: float(s.candidate.accuracy_se),
                   "float", "accuracy_ses", nullable=False, view=ViewColumn("accuracy_se", 4),
                   since_version=3),
    CandidateField("fold_scores", sa.Text, lambda s: fold_scores_text(s.candidate.fold_scores),
                   "text", "fold_scores", _folds, nullable=False,
                   view=ViewColumn("fold_scores", 5), since_version=3),
    CandidateField("cost", sa.Text, lambda s: cost_expression(s.candidate.cost),
                   nullable=False, view=ViewColumn("cost", 6)),
    CandidateField("degree", sa.Integer, lambda s: s.candidate.cost.degree, nullable=False),
    CandidateField("features", sa.Text, lambda s: feature_set_text(s.names), nullable=False,
                   view=ViewColumn("features", 2)),
    CandidateField("features_json", sa.Text, lambda s: canonical_json(s.names), "text",
                   "features", _feature_set, nullable=False, legacy_seal=2),
    CandidateField("feature_mask", sa.String(256), lambda s: s.mask),
    CandidateField("expansion_id", sa.Integer, lambda s: s.expansion_id, "id", "expansion",
                   foreign_key="expansions.id", legacy_seal=4),
    CandidateField("learner", sa.Text, lambda s: s.candidate.learner, "text", "learners",
                   view=ViewColumn("learner", 1), since_version=2, legacy_seal=3),
    CandidateField("model_format", sa.String(16), _own(1), "text", "model_format",
                   view=ViewColumn("model_format", 8, "COALESCE(c.model_format, "
                                   "x.model_format)")),
    CandidateField("model_sha256", sa.String(64), _own(2), "text", "model_digest",
                   legacy_seal=5),
    CandidateField("model_blob", sa.LargeBinary, _own(0), feeds="model_blob"),
)


def fields_of(schema_version: int) -> tuple[CandidateField, ...]:
    """The fields a store of ``schema_version`` has, in table order."""
    return tuple(f for f in CANDIDATE_FIELDS if f.stored_in(schema_version))


def sealed_fields(schema_version: int) -> tuple[CandidateField, ...]:
    """The fields that decide answers in a store of ``schema_version``, in table order."""
    return tuple(f for f in fields_of(schema_version) if f.sealed)


def legacy_sealed_fields() -> tuple[CandidateField, ...]:
    """The fields a version-1 seal covers, in its order (``learner`` is None in a store of
    schema version 1)."""
    return tuple(sorted((f for f in CANDIDATE_FIELDS if f.legacy_seal is not None),
                        key=lambda f: f.legacy_seal))


def by_feed(fields: Sequence[CandidateField]) -> dict[str, CandidateField]:
    """``feed -> field`` of the fields that feed a reader."""
    return {f.feeds: f for f in fields if f.feeds is not None}


def view_columns(schema_version: int) -> list[tuple[int, str, str]]:
    """``(position, SQL expression, column name)`` of every field the skyline views show in
    a store of ``schema_version``, by position.

    >>> [name for _, _, name in view_columns(2)]
    ['candidate', 'learner', 'features', 'accuracy', 'cost', 'model_format']
    """
    return sorted((f.view.position, f.view.expression or f"c.{f.name}", f.view.name)
                  for f in fields_of(schema_version) if f.view is not None)


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


def read_candidates(
    schema_version: int,
    columns: Mapping[str, Sequence[Any]],
    what: str,
    done: frozenset[str] = frozenset(),
) -> dict[str, list]:
    """What a reader makes of a build's stored candidate columns: ``feed -> column`` for
    every feed of :data:`FEEDS`, each field's column passed through its ``read`` (fields in
    ``done`` hold read values already); a feed whose field the store lacks gets the
    field's ``missing`` value.  Both read paths (rows and index arrays) call it.

    ``columns`` maps field names to columns (every field of the store that feeds a
    reader and is fetched: a path that does not read model blobs leaves ``model_blob``
    out, and its feed is None).

    Runtime complexity: O(K) plus one ``read`` per distinct text (per value otherwise).

    Raises
    ------
    IndexIntegrityError
        Naming ``what``, if a stored value does not read (a feature set that is not a JSON
        list of names, fold scores that are not a JSON list of numbers).
    """
    out: dict[str, Any] = {}
    for f in CANDIDATE_FIELDS:
        if f.feeds is None:
            continue
        column = columns.get(f.name) if f.stored_in(schema_version) else None
        if column is None:
            out[f.feeds] = f.missing
        elif f.read is None or f.name in done:
            out[f.feeds] = list(column)
        else:
            try:
                out[f.feeds] = _read_column(f, column)
            except (ValueError, KeyError, TypeError) as exc:  # a stored text that does not read
                raise IndexIntegrityError(
                    f"{what}: field {f.name!r}: {exc}; refusing to open it") from None
    return out


def _read_column(f: CandidateField, column: Sequence[Any]) -> list:
    """``f.read`` over a column (once per distinct value of a ``"text"`` field; None
    stays None)."""
    read = f.read
    if f.array != "text":
        return [None if v is None else read(v) for v in column]
    memo: dict[Any, Any] = {None: None}
    out = []
    for v in column:
        found = memo.get(v, memo)
        if found is memo:
            found = memo[v] = read(v)
        out.append(found)
    return out


def candidates_from(feeds: Mapping[str, list], costs: list, payloads: list | None,
                    needs: list | None) -> list[Candidate]:
    """The candidates of read feeds (:func:`read_candidates`) with their cost curves,
    model payloads and needs (None: the defaults).

    Runtime complexity: as :meth:`polydom.Candidate.from_columns`.
    """
    return Candidate.from_columns(
        feeds["keys"], feeds["accuracies"], costs, feeds["features"], payloads, needs,
        feeds["learners"], feeds["accuracy_ses"], feeds["fold_scores"])
