"""The command line's shared argument types and options, one definition each.

Every verb module registers its parser with these, so a size, a count, a build id, a store
key, a unit or an output format is checked and worded the same way by every command; a number
is read by :func:`polydom.curves.domain.real_from_text`, the checker the Python functions and
the HTTP service share.  This module imports the standard library and polydom's numpy-free
checkers (:mod:`polydom.curves.domain`, :mod:`polydom.curves.units`) only: building the
parser must stay instant.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn

from polydom.curves.domain import check_field, real_from_text
from polydom.curves.units import split_quantity
from polydom.errors import InvalidArgumentError

__all__ = [
    "OUTPUT_FORMATS",
    "OneLineParser",
    "UsageError",
    "add_min_publication_option",
    "add_output_option",
    "add_store_options",
    "add_unit_option",
    "alpha",
    "budget",
    "build_id",
    "count",
    "fraction",
    "non_negative",
    "port",
    "positive",
    "positive_count",
    "publication",
    "quantity",
    "size",
    "store_key",
]


class UsageError(InvalidArgumentError):
    """Arguments that parse one by one but not together (``--size`` without ``--budget``):
    reported as argparse reports a bad argument (``(see --help)``), exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``polydom CMD: error: reason``.

    ``description`` may be a callable returning the text: it is called only when the help
    is printed (a verb whose help lists registered learners imports nothing until then).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def format_help(self) -> str:
        if callable(self.description):
            self.description = self.description()
        return super().format_help()


def _checked(text: str, convert: type, expected: str, ok: Callable[[Any], bool],
             bounds: str) -> Any:
    """``convert(text)`` when it converts and ``ok`` holds, else an argparse error worded
    ``expected {expected}, got 'text'`` (``expected {bounds}`` when out of bounds)."""
    shown = repr(text if len(text) <= 80 else text[:77] + "...")  # a 400-digit number cut
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {shown}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {bounds}, got {shown}")
    return value


def _real(text: str) -> float:
    """``text`` as a float (:func:`polydom.curves.domain.real_from_text`, the checker every
    door shares); ``ValueError`` when it spells no number."""
    return real_from_text(text, "argument")


def non_negative(text: str) -> float:
    """A finite number >= 0 (a size, a budget, a rate)."""
    return _checked(text, _real, "a number", lambda v: math.isfinite(v) and v >= 0.0,
                    "a finite number >= 0")


def positive(text: str) -> float:
    """A finite number > 0 (a period in seconds)."""
    return _checked(text, _real, "a number", lambda v: math.isfinite(v) and v > 0.0,
                    "a finite number > 0")


def fraction(text: str) -> float:
    """A number strictly between 0 and 1 (a quantile)."""
    return _checked(text, _real, "a number in (0, 1)", lambda v: 0.0 < v < 1.0,
                    "a number in (0, 1)")


def quantity(text: str) -> tuple[float, str | None]:
    """A finite number >= 0 with an optional unit after it: ``0.77``, ``770ms``, ``2 us``,
    ``2.5e-3s`` (:func:`polydom.curves.units.split_quantity`).

    Returns the number and the unit text (None when none is written); which units a store
    accepts is checked against the store (:meth:`polydom.curves.units.CostUnit.to_store`).

    >>> quantity("770ms"), quantity("0.5"), quantity("1e-05ms")
    ((770.0, 'ms'), (0.5, None), (1e-05, 'ms'))
    """
    try:
        return split_quantity(text, "budget")
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def size(text: str) -> float:
    """A size as the serving core reads it (:func:`polydom.curves.domain.check_field`):
    refused at parse time, in the words every door uses (``size must be finite and >= 0,
    got '-3'``); the domain is the store's check."""
    try:
        return check_field(real_from_text(text, "size"), "size", given=text)
    except (InvalidArgumentError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def budget(text: str) -> str:
    """A budget as the serving core reads it (a number with an optional unit of the unit
    grammar, :func:`polydom.curves.units.split_quantity`): refused at parse time in the
    words every door uses; the text itself is returned, for the core to convert."""
    quantity(text)
    return text


def count(text: str) -> int:
    """An integer >= 0 (a count, a seed); the same check for every command."""
    return _checked(text, int, "an integer", lambda v: v >= 0, "an integer >= 0")


def positive_count(text: str) -> int:
    """An integer >= 1 (a number of records, a byte limit)."""
    return _checked(text, int, "an integer", lambda v: v >= 1, "an integer >= 1")


def port(text: str) -> int:
    """A TCP port in [0, 65535] (0: the system picks a free one)."""
    return _checked(text, int, "a port number", lambda v: 0 <= v <= 65535,
                    "a port in [0, 65535]")


def build_id(text: str) -> int:
    """A build id: an integer >= 1 (below 2**63, what a database integer holds)."""
    value = count(text)
    if not 1 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected a build id >= 1, got {text!r}")
    return value


def publication(text: str) -> int:
    """A publication number (``index.info["publication"]``): an integer >= 1 below 2**63."""
    value = count(text)
    if not 1 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected a publication number >= 1, got {text!r}")
    return value


def alpha(text: str) -> float:
    """The lattice's approximation factor: a finite number >= 1."""
    value = non_negative(text)
    if value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text!r}")
    return value


def add_store_options(p: argparse.ArgumentParser, build: bool = True) -> None:
    """The store a read command opens: ``URL``, ``--build ID`` and ``--key-file FILE``."""
    p.add_argument("url", metavar="URL", help="SQLAlchemy URL or SQLite file path")
    if build:
        p.add_argument("--build", type=build_id,
                       help="build id (default: the current build)")
    p.add_argument("--key-file", metavar="FILE",
                   help="file holding the store key of a signed store (default: the "
                   "POLYDOM_STORE_KEY environment variable); with a key, an unsigned store "
                   "is refused, exactly as open_index does")


def add_min_publication_option(p: argparse.ArgumentParser) -> None:
    """``--min-publication N``: refuse a current build older than publication N (a store
    rolled back; see ``open_index(min_publication=)``)."""
    p.add_argument("--min-publication", type=publication, metavar="N",
                   help="refuse the store's current build if it is older than publication "
                   "N (a number you know was published): a "
                   "store rolled back is refused even when it deleted the newer builds; "
                   "not with --build")


def store_key(args: argparse.Namespace) -> bytes | None:
    """The store key a command uses: the bytes of ``--key-file`` (a trailing newline
    dropped), else None (storage then reads ``POLYDOM_STORE_KEY``, as ``open_index`` does).

    Raises
    ------
    ValueError
        Naming the file when it cannot be read or is empty.
    """
    path = getattr(args, "key_file", None)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            key = handle.read(1 << 16).rstrip(b"\r\n")
    except OSError as exc:
        raise InvalidArgumentError(f"--key-file {path!r}: {exc.strerror or exc}") from None
    if not key:
        raise InvalidArgumentError(f"--key-file {path!r} is empty")
    return key


def add_unit_option(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--unit``: print costs (and read budgets) in s, ms, us, or the store's own unit
    (``default``, None: the store's unit; :func:`polydom.curves.units.cost_unit_for`)."""
    shown = "the store's unit, see inspect" if default is None else default
    p.add_argument("--unit", metavar="UNIT", default=default,
                   help="unit of printed costs and of budgets: s, ms, us, ns, or the store's "
                   f"own unit (default: {shown})")


#: Output formats of the tabular commands.
OUTPUT_FORMATS = ("text", "json", "csv")


def add_output_option(p: argparse.ArgumentParser, csv: bool = True) -> None:
    """``--json`` (and ``--csv`` where the output is one table): machine-readable output."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", dest="output", action="store_const", const="json",
                       default="text", help="print JSON (one document) instead of tables")
    if csv:
        group.add_argument("--csv", dest="output", action="store_const", const="csv",
                           help="print CSV (one table, a header line first)")
