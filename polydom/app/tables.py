"""Plain-text tables for the command line and the demo: numbers to 4 significant digits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["format_table"]


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned text table (numbers right-aligned, to 6 significant digits)."""
    cells = [[_number(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) and bool(rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


# ---------------------------------------------------------------------------- inspect
