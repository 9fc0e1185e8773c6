"""Plain-text tables for the command line and the demo: numbers to 4 significant digits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_COST_UNIT", "clip", "cost_unit", "features_text", "format_table"]

#: Unit of costs when a build does not say (``polydom.build_index``'s default).
DEFAULT_COST_UNIT = "units"


def cost_unit(info: Any) -> str:
    """The cost unit a build's ``info`` carries (``DEFAULT_COST_UNIT`` for older builds)."""
    unit = info.get("cost_unit") if isinstance(info, dict) else None
    return unit if isinstance(unit, str) and unit.strip() else DEFAULT_COST_UNIT


def features_text(features: Any) -> str:
    """A feature set for people: ``hog+zones``; ``{} (no features)`` for the empty model."""
    names = sorted(map(str, features))
    return "+".join(names) if names else "{} (no features)"


def clip(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


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
