"""Machine-readable output of the command line: one JSON document, or one CSV table.

JSON is strict (RFC 8259): a non-finite number (an unbounded ``n_hi``) is written as
``null``; text is escaped by the JSON encoder (every non-ASCII and control character as
``\\uXXXX``).  CSV cells holding text pass through :func:`polydom.app.tables.printable`,
so a stored name with a terminal escape or a newline stays one escaped cell.
Standard library only.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from polydom.app.tables import printable

__all__ = ["json_ready", "write_csv", "write_json"]


def json_ready(value: Any) -> Any:
    """``value`` with non-finite floats as None, tuples as lists and numpy scalars as plain
    numbers; anything else not JSON as its text.  O(size).

    >>> json_ready({"a": float("inf"), "b": (1, 2.5)})
    {'a': None, 'b': [1, 2.5]}
    """
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else None
    return str(value)


def write_json(document: Any, out: TextIO | None = None) -> None:
    """Print ``document`` as one indented JSON document (strict: no NaN or Infinity)."""
    out = out or sys.stdout
    out.write(json.dumps(json_ready(document), indent=2, allow_nan=False) + "\n")


def write_csv(headers: Sequence[str], rows: Sequence[Sequence[Any]],
              out: TextIO | None = None) -> None:
    """Print one CSV table, a header line first; None is an empty cell, floats in full
    precision (``repr``), text escaped by :func:`polydom.app.tables.printable`."""
    writer = csv.writer(out or sys.stdout, lineterminator="\n")
    writer.writerow([printable(h) for h in headers])
    for row in rows:
        writer.writerow(["" if v is None else repr(float(v)) if isinstance(v, float)
                         else v if isinstance(v, (int, bool)) else printable(v) for v in row])
