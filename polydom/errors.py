"""The polydom error family: every exception that polydom, lattice, learners and storage
raise on purpose is a :class:`PolydomError`, and this module defines them all.

``except PolydomError`` catches every refusal the project documents.  Each error also
subclasses the built-in that says what kind of fault it is, so ``except ValueError`` keeps
working (scikit-learn's ``NotFittedError(ValueError, AttributeError)`` pattern):

========================  ==================  ============================================
error                     built-in base       raised for
========================  ==================  ============================================
InvalidArgumentError      ValueError          a value refused at a door (size, budget, ...)
QueryError                ValueError          a query field refused (names the field)
ArgumentTypeError         TypeError           an argument of the wrong type
UnknownArgumentError      TypeError           a keyword the function does not take
TelemetryError            ValueError          a served timing that cannot be recorded
ConfigError               ValueError          a bad build configuration file or its data
EvaluationError           ValueError          a bad evaluation protocol or scores
ExecutorError             ValueError          a bad executor, an unreachable cluster
RuleUnavailableError      ValueError          a lookup rule the index cannot answer
FitError                  RuntimeError        a cost-curve fit whose solver failed
StoreNotFoundError        ValueError          no store at the URL (reading)
StoreLocationError        ValueError          a place a store cannot be written
ReadOnlyStoreError        PermissionError     a write on a store opened read-only
ForeignDatabaseError      ValueError          another program's database
StoreKeyError             ValueError          a store signed with another key (or none)
SchemaVersionError        RuntimeError        a store of another schema version
MinPublicationError       ValueError          a bad ``min_publication``
BuildPublishedError       ValueError          a build another writer published first
CurrentBuildChangedError  ValueError          a publish over a build no longer current
DamagedStoreError         (none)              base of the four below: the store's fault
IndexIntegrityError       ValueError          stored rows or arrays that fail their seal
ModelIntegrityError       ValueError          a model blob that fails its digest
MalformedBlobError        ValueError          a blob our structure checks refuse
BlobBoundsError           ValueError          a blob whose declared sizes exceed the bounds
UntrustedModelError       ValueError          a model blob naming what the allow-list refuses
========================  ==================  ============================================

Two more live beside the code they belong to, as subclasses of these:
``lattice.executor.WorkerLostError`` (also ``BrokenProcessPool``: importing that here would
load multiprocessing on ``import polydom``) and
``learners.codecs.lightgbm_text.LightGBMTextError`` (a :class:`MalformedBlobError`).
Standard library only; ``import polydom`` loads this module and nothing else of ours.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ArgumentTypeError",
    "BlobBoundsError",
    "BuildPublishedError",
    "ConfigError",
    "CurrentBuildChangedError",
    "DamagedStoreError",
    "EvaluationError",
    "ExecutorError",
    "FitError",
    "ForeignDatabaseError",
    "IndexIntegrityError",
    "InvalidArgumentError",
    "MalformedBlobError",
    "MinPublicationError",
    "ModelIntegrityError",
    "PolydomError",
    "QueryError",
    "ReadOnlyStoreError",
    "RuleUnavailableError",
    "SchemaVersionError",
    "StoreKeyError",
    "StoreLocationError",
    "StoreNotFoundError",
    "TelemetryError",
    "UnknownArgumentError",
    "UntrustedModelError",
    "did_you_mean",
]


class PolydomError(Exception):
    """Base of every exception that polydom, lattice, learners and storage raise on purpose."""


class InvalidArgumentError(PolydomError, ValueError):
    """A value polydom refuses: the message names the argument and the value (a negative
    size, a NaN budget, a cost curve that goes negative on the domain, ...)."""


class QueryError(InvalidArgumentError):
    """A field of a query the serving core refuses: ``field`` names it, the message says
    why (the same words on every door); ``status`` is the HTTP status a web door answers
    with (400, or 409 for a model that cannot predict)."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.status = status


class ArgumentTypeError(PolydomError, TypeError):
    """An argument of the wrong type (a string where a number belongs, ...), named."""


class UnknownArgumentError(PolydomError, TypeError):
    """A keyword argument the public function does not take (named, with the closest one)."""


class TelemetryError(PolydomError, ValueError):
    """A served timing that cannot be recorded (NaN, negative, unknown feature, a size
    outside the domain); raised before anything is buffered or stored."""


class FitError(PolydomError, RuntimeError):
    """A cost-curve fit whose linear program the solver could not solve (its message)."""


class ReadOnlyStoreError(PolydomError, PermissionError):
    """A write asked of a store that was opened for reading only."""


class SchemaVersionError(PolydomError, RuntimeError):
    """The database holds a polydom store of another schema version (or a foreign layout)."""


class StoreNotFoundError(PolydomError, ValueError):
    """No polydom store at the URL (opened for reading only)."""


class StoreLocationError(PolydomError, ValueError):
    """A place where a store cannot be written: an in-memory database, a missing folder."""


class ForeignDatabaseError(PolydomError, ValueError):
    """A non-empty database of another program, where a store was to be created."""


class StoreKeyError(PolydomError, ValueError):
    """The store's blobs are signed with a key this process does not hold (or the reverse)."""


class DamagedStoreError(PolydomError):
    """What a store holds is damaged, tampered with or not trusted (rows or arrays failing
    their seal, a model blob failing its digest, a blob our checks refuse, a model class off
    the allow-list).  The fault is the store's, never the caller's: a service answers it
    with a 5xx and a generic body and logs the details.  Its subclasses are also
    ``ValueError``."""


class IndexIntegrityError(DamagedStoreError, ValueError):
    """A published build whose rows no longer match its seal (edited after publishing), or
    whose index arrays fail their digest, belong to another build or do not decode; an
    expansion that no longer matches its seal; a current build that is not the latest
    publication."""


class ModelIntegrityError(DamagedStoreError, ValueError):
    """A model blob whose sha256 does not match the stored digest (the row was altered)."""


class MalformedBlobError(DamagedStoreError, ValueError):
    """A stored blob whose structure our own checks refuse before any library builds from
    it (storage reports it as :class:`ModelIntegrityError`)."""


class BlobBoundsError(MalformedBlobError):
    """A stored archive whose declared sizes or dtypes exceed the bounds (refused before
    anything is inflated or allocated)."""


class UntrustedModelError(DamagedStoreError, ValueError):
    """A model blob naming what the allow-list refuses (it could run code when loaded),
    refused without ``trusted=True``."""


class MinPublicationError(PolydomError, ValueError):
    """``min_publication`` is not a positive integer, or is given with a pinned build."""


class CurrentBuildChangedError(PolydomError, ValueError):
    """A publish meant to replace one current build (a recalibration of it) found another
    build current: one was published meanwhile, which it must not replace."""


class BuildPublishedError(PolydomError, ValueError):
    """The build was published by another writer while this one worked on it (two builds
    with identical arguments at once share one build id; the first to publish wins)."""


class RuleUnavailableError(PolydomError, ValueError):
    """A lookup rule the index cannot answer (``"one_se"`` on an index opened from a store
    that keeps no standard errors)."""


class ExecutorError(PolydomError, ValueError):
    """A bad executor specification, or a cluster that cannot be reached."""


class EvaluationError(PolydomError, ValueError):
    """A bad evaluation protocol or scores; the message names the argument and value."""


class ConfigError(PolydomError, ValueError):
    """A bad configuration; the message is one line."""


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or ``""``.

    Runtime complexity: O(len(choices)) string comparisons (difflib's ratio).

    >>> did_you_mean("alpah", ["alpha", "delta"])
    " (did you mean 'alpha'?)"
    >>> did_you_mean("zzz", ["alpha"])
    ''
    """
    import difflib  # only when an error is worded: every module imports this one

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
