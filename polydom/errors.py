"""PolydomError: the one base class of the package's own errors.

Errors about a value also subclass :class:`ValueError` (so ``except ValueError`` keeps
working); errors about state (a store of another schema, say) subclass :class:`RuntimeError`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ArgumentTypeError",
    "DamagedStoreError",
    "InvalidArgumentError",
    "PolydomError",
    "TelemetryError",
    "UnknownArgumentError",
    "did_you_mean",
]


class PolydomError(Exception):
    """Base of every exception that polydom, lattice, learners and storage raise on purpose."""


class InvalidArgumentError(PolydomError, ValueError):
    """A value polydom refuses: the message names the argument and the value (a negative
    size, a NaN budget, a cost curve that goes negative on the domain, ...)."""


class ArgumentTypeError(PolydomError, TypeError):
    """An argument of the wrong type (a string where a number belongs, ...), named."""


class DamagedStoreError(PolydomError):
    """What a store holds is damaged, tampered with or not trusted (a model blob failing its
    digest, a blob out of bounds, a model class off the allow-list, a seal that does not
    match).  The fault is the store's, never the caller's: a service answers it with a 5xx
    and a generic body, and logs the details.  Its subclasses also subclass ``ValueError``."""


class TelemetryError(PolydomError, ValueError):
    """A served timing that cannot be recorded (NaN, negative, unknown feature, a size
    outside the domain); raised before anything is buffered or stored."""


class UnknownArgumentError(PolydomError, TypeError):
    """A keyword argument the public function does not take (named, with the closest one)."""


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
