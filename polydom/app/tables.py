"""Plain-text tables for the command line and the demo: numbers to 6 significant digits,
names naturally sorted, every text escaped so that a stored name cannot drive the terminal.

Standard library, :mod:`polydom.curves.curve_text` and :mod:`polydom.curves.units` only (the
CLI imports it before parsing arguments).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from polydom.curves.curve_text import natural_key
from polydom.curves.names import feature_set_text
from polydom.curves.units import DEFAULT_UNIT, unit_name

__all__ = [
    "DEFAULT_COST_UNIT",
    "clip",
    "learner_text",
    "cost_unit",
    "evaluation_text",
    "features_text",
    "format_table",
    "printable",
    "sorted_names",
]

#: Unit of costs when a build does not say (``polydom.build_index``'s default).
DEFAULT_COST_UNIT = DEFAULT_UNIT

#: The cost unit a build's ``info`` carries (:func:`polydom.curves.units.unit_name`).
cost_unit = unit_name


def evaluation_text(info: Any) -> str:
    """How a build's candidates were scored, from its ``info["evaluation"]`` (what
    :meth:`learners.EvaluationProtocol.describe` or the learner stored), in one line.

    >>> evaluation_text({"evaluation": {"kind": "kfold", "folds": 3, "seed": 0,
    ...                                 "stratify": True, "groups": None}})
    '3-fold cross-validation (stratified, seed 0)'
    >>> evaluation_text({})
    'not recorded (a build of an earlier version)'
    """
    ev = info.get("evaluation") if isinstance(info, dict) else None
    if not isinstance(ev, dict):
        return "not recorded (a build of an earlier version)"
    kind = ev.get("kind")
    if kind == "test-split":
        return f"a given test split of {ev.get('rows')} rows"
    if kind == "splitter":
        return f"the splitter {printable(ev.get('splitter'))}"
    how = []
    groups = ev.get("groups")
    if isinstance(groups, dict):
        how.append(f"grouped by {groups.get('count')} groups")
    if ev.get("stratify"):
        how.append("stratified")
    how.append("unshuffled" if ev.get("seed") is None else f"seed {ev.get('seed')}")
    if ev.get("refit") is False:
        how.append("served model not refitted")
    if kind == "holdout":
        return f"held-out {float(ev.get('holdout', 0.0)):.0%} of rows ({', '.join(how)})"
    return f"{ev.get('folds')}-fold cross-validation ({', '.join(how)})"


def sorted_names(names: Iterable[Any]) -> list[str]:
    """Names as text in natural order (:func:`natural_key`); the one order of feature names
    on output.  O(k log k)."""
    return sorted(map(str, names), key=natural_key)


def features_text(features: Any) -> str:
    """A feature set for people: ``hog+zones`` in natural order; ``{} (no features)`` for
    the empty model.

    >>> features_text({"x13", "x2"}), features_text(())
    ('x2+x13', '{} (no features)')
    """
    return feature_set_text(features) or "{} (no features)"


def _escaped(char: str) -> str:
    code = ord(char)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
        else f"\\U{code:08x}")


def printable(text: Any) -> str:
    """``text`` with every non-printable character escaped (controls, terminal escapes,
    newlines, bidirectional overrides): ``\\x1b``, ``\\n``, ``\\u202e``.  Every text the
    command line prints from a store passes through here, so a stored name cannot move the
    cursor, recolour the terminal or fake a row.  O(len(text)).

    >>> printable("ok"), printable("a\\nb"), printable("\\x1b[2J")
    ('ok', 'a\\\\nb', '\\\\x1b[2J')
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def clip(text: str, width: int = 60) -> str:
    """``text`` escaped (:func:`printable`) and cut to ``width`` characters with an
    ellipsis."""
    flat = printable(text)
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def learner_text(name: Any) -> str:
    """A learner's name for people (``-`` when not recorded), escaped and cut at 48
    characters: the one width of every learner column.  O(len(name))."""
    return clip(str(name), 48) if name else "-"


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return printable(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned text table (numbers right-aligned, to 6 significant digits; text
    escaped by :func:`printable`, so every row is one line).  O(total cell length)."""
    headers = [printable(h) for h in headers]
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
