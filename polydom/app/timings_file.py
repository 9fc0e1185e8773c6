"""The held-out timings file of ``polydom calibrate`` and a config's ``calibration_timings``.

A CSV file, a header line first: a ``size`` column (each held-out item's size) and one
column per atomic feature, the seconds its routine took on that item, timed in situ (each
feature computed once, cold, as serving computes it: docs/in_situ.md).  Columns other than
``size`` and the index's atoms are refused (a misspelt atom would otherwise go untimed).
Standard library and numpy.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["MAX_TIMING_ITEMS", "read_timings_file"]

#: Most held-out items one file may hold.
MAX_TIMING_ITEMS = 1_000_000


def read_timings_file(path: str, atoms: Iterable[str], what: str = "--timings"
                      ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The sizes and, per atom, the seconds of each held-out item in ``path``.

    Runtime complexity: O(size of the file).

    Raises
    ------
    ValueError
        Naming the file and the line: no ``size`` column, a column that is no atom of
        ``atoms``, a cell that is not a finite number >= 0, no item, or more than
        :data:`MAX_TIMING_ITEMS`.
    """
    atoms = set(atoms)
    name = f"{what} {path!r}"
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = [h.strip() for h in next(reader, [])]
            if "size" not in header:
                raise InvalidArgumentError(f"{name}: no 'size' column in its header line")
            unknown = sorted(set(header) - atoms - {"size"})
            if unknown:
                raise InvalidArgumentError(
                    f"{name}: column {unknown[0]!r} is not an atom of the index (atoms: "
                    f"{', '.join(sorted(atoms))})")
            rows = []
            for fields in reader:
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise InvalidArgumentError(
                        f"{name}: line {reader.line_num} has {len(fields)} fields where the "
                        f"header has {len(header)}")
                try:
                    values = [float(v) for v in fields]
                except ValueError:
                    raise InvalidArgumentError(
                        f"{name}: line {reader.line_num} holds a cell that is not a number"
                    ) from None
                if not all(math.isfinite(v) and v >= 0 for v in values):
                    raise InvalidArgumentError(
                        f"{name}: line {reader.line_num}: sizes and seconds must be finite "
                        "numbers >= 0")
                rows.append(values)
                if len(rows) > MAX_TIMING_ITEMS:
                    raise InvalidArgumentError(f"{name} holds more than {MAX_TIMING_ITEMS} items")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{name} is not UTF-8 text") from None
    except OSError as exc:
        raise InvalidArgumentError(f"{name}: {exc.strerror or exc}") from None
    if not rows:
        raise InvalidArgumentError(f"{name} holds no item (one line per held-out item)")
    table = np.array(rows, dtype=np.float64)
    columns = {h: table[:, i] for i, h in enumerate(header)}
    sizes = columns.pop("size")
    return sizes, columns
