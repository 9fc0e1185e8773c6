"""``polydom predict``: the batch door, a file of rows or raw items predicted under a budget.

Reads ``--data`` chunk by chunk (CSV, Parquet, ``.npy``: :mod:`polydom.app.batch_files`),
answers each chunk with :mod:`polydom.serving.batch` and writes the records to ``--out``
(CSV, Parquet or JSON lines) as they come, so memory stays flat in the file's length.  A bad
row is reported on standard error with its line and the others go on; the summary line
says how many rows were predicted, found no model within the budget, or were bad.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from polydom.app.arguments import (
    UsageError,
    add_min_publication_option,
    add_store_options,
    add_unit_option,
    fraction,
    non_negative,
    positive_count,
    quantity,
    store_key,
)
from polydom.index.rules import RULES

__all__ = ["add_predict", "run_predict"]

#: Bad rows named one by one on standard error before only their count is kept.
SHOWN_BAD_ROWS = 20


def add_predict(subparsers: argparse._SubParsersAction) -> None:
    """Register ``predict``."""
    p = subparsers.add_parser(
        "predict",
        help="predict a file of feature rows or raw items under a budget (batch)",
        description="Predict every row of --data with the most accurate model whose cost "
        "at the row's size fits --budget, and write one record per row to --out: its line, "
        "size, budget, unit, the chosen model, its learner and features, its accuracy, the "
        "predicted cost (and, for raw items, the measured cost) in the store's unit, the "
        "label (of the type the model was trained with) and the build.  Rows are full "
        "feature rows (every column of the training data, in order; --size N or "
        "--size-from COLUMN gives each row's size), or, with --featurizer, raw items whose "
        "size and features the featurizer computes (an .npy row, or a CSV/Parquet row as a "
        "dict of column -> value, or one column's value with --item-column).  Files stream "
        "in chunks: a file larger than memory is fine.  A bad row (a value that is not a "
        "number, a size outside the domain, an item the featurizer refuses) is named on "
        "standard error with its line and the rest go on.  Exit status: 0 when every row "
        "was predicted, 1 when some row was bad or no model fitted it (the summary line "
        "says how many of each), 2 on a bad argument, file or store.",
    )
    add_store_options(p)
    add_min_publication_option(p)
    p.add_argument("--data", required=True, metavar="FILE",
                   help="rows or items: .csv (a header line first), .parquet or .npy")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="predictions: .csv, .parquet or .jsonl (written to a temporary "
                   "file, renamed over FILE at the end)")
    p.add_argument("--budget", required=True, type=quantity, metavar="C",
                   help="cost budget per row: a number in the store's unit (or --unit's), "
                   "or with its unit (5ms)")
    sizes = p.add_mutually_exclusive_group()
    sizes.add_argument("--size", type=non_negative, metavar="N", help="every row's size")
    sizes.add_argument("--size-from", metavar="COLUMN",
                       help="the column holding each row's size (a name; an index for .npy)")
    sizes.add_argument("--featurizer", metavar="MODULE:ATTR",
                       help="rows are raw items: this polydom.Featurizer gives each one's "
                       "size and computes (and times) the chosen model's features")
    p.add_argument("--item-column", metavar="COLUMN",
                   help="with --featurizer and a CSV or Parquet file: the item is this "
                   "column's value (default: the row as a dict)")
    p.add_argument("--drop", metavar="COLUMN", action="append", default=[],
                   help="a column that is not a feature (the label, say); repeatable")
    p.add_argument("--rule", choices=RULES, default="best",
                   help="lookup rule (default best)")
    p.add_argument("--overrun", type=fraction, metavar="LEVEL",
                   help="choose from the index swept at this overrun level (one the build "
                   "holds; see inspect)")
    p.add_argument("--chunk-rows", type=positive_count, default=10_000, metavar="N",
                   help="rows read and predicted at a time (default 10000)")
    progress = p.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="show progress on standard error (default: on a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    add_unit_option(p)
    p.set_defaults(run=run_predict)


def _column(names: list[str], name: str, what: str, npy: bool) -> int:
    """The index of column ``name`` (a position for an ``.npy`` file)."""
    if name in names:
        return names.index(name)
    from polydom.errors import InvalidArgumentError, did_you_mean

    raise InvalidArgumentError(
        f"{what} {name!r} is not a column of --data"
        + (f" (columns 0 to {len(names) - 1})" if npy else did_you_mean(name, names)))


class _Progress:
    """A progress line on standard error (tqdm on a terminal, or when asked)."""

    def __init__(self, wanted: bool | None, total: int | None) -> None:
        self.bar: Any = None
        if wanted is False or (wanted is None and not sys.stderr.isatty()):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=total, unit="row", file=sys.stderr, unit_scale=True,
                        disable=False, mininterval=0.5)

    def update(self, rows: int, bad: int) -> None:
        if self.bar is not None:
            self.bar.set_postfix(bad=bad, refresh=False)
            self.bar.update(rows)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_predict(args: argparse.Namespace) -> int:
    """Predict ``--data`` into ``--out``; 0 when every row was predicted, else 1."""
    import numpy as np

    from polydom.app.batch_files import PredictionWriter, read_chunks, row_count
    from polydom.app.commands.serve import load_featurizer
    from polydom.app.tables import cost_unit, printable
    from polydom.curves.units import cost_unit_for
    from polydom.pipeline.open import open_index
    from polydom.serving.batch import PREDICTION_FIELDS, BadRow, predict_items, predict_rows
    from polydom.serving.item_serving import ItemServer

    if args.featurizer is None and args.size is None and args.size_from is None:
        raise UsageError("give --size N, --size-from COLUMN or --featurizer MODULE:ATTR")
    if args.item_column is not None and args.featurizer is None:
        raise UsageError("--item-column needs --featurizer (it names the raw item's column)")
    index = open_index(args.url, build=args.build, key=store_key(args),
                       min_publication=args.min_publication)
    if args.overrun is not None:
        index = index.at_overrun(args.overrun)
    unit = cost_unit_for(cost_unit(index.info), args.unit)
    value, written = args.budget
    budget = unit.to_store(value, written, "--budget")
    rule = index.check_rule(args.rule)
    server = None
    if args.featurizer is not None:
        server = ItemServer(index, load_featurizer(args.featurizer))
    total = row_count(args.data)
    writer = PredictionWriter(args.out, PREDICTION_FIELDS)
    progress = _Progress(args.progress, total)
    counts = {"predicted": 0, "no model": 0, "bad": 0}
    npy = args.data.lower().endswith(".npy")
    started = time.perf_counter()
    try:
        layout = None
        for chunk in read_chunks(args.data, args.chunk_rows):
            if layout is None:
                layout = _layout(args, chunk.names, npy, index.n_columns, server is not None)
            if server is not None:
                answers = predict_items(server, _items(chunk, layout), chunk.lines, budget)
            else:
                rows, sizes, bad = _rows(chunk, layout, args.size, np)
                keep = np.array([line not in bad for line in chunk.lines], dtype=bool)
                answers = predict_rows(index, rows[keep], sizes[keep],
                                       [line for line in chunk.lines if line not in bad],
                                       budget, rule)
                if bad:
                    answers = sorted([*answers, *(BadRow(line, reason)
                                                  for line, reason in bad.items())],
                                     key=lambda a: a.line)
            records = []
            for answer in answers:
                if isinstance(answer, BadRow):
                    counts["bad"] += 1
                    if counts["bad"] <= SHOWN_BAD_ROWS:
                        print(f"polydom predict: --data line {answer.line}: "
                              f"{printable(answer.reason)}", file=sys.stderr)
                    continue
                counts["predicted" if answer.model is not None else "no model"] += 1
                records.append(answer.as_dict())
            writer.write(records)
            progress.update(len(chunk.lines), counts["bad"])
    except BaseException:
        progress.close()
        writer.abort()
        raise
    progress.close()
    writer.close()
    seconds = time.perf_counter() - started
    rows = sum(counts.values())
    more = (f" (the first {SHOWN_BAD_ROWS} named above)" if counts["bad"] > SHOWN_BAD_ROWS
            else "")
    print(f"polydom predict: {rows} rows in {seconds:.2f} s: {counts['predicted']} "
          f"predicted, {counts['no model']} with no model within the budget, "
          f"{counts['bad']} bad{more}; wrote {writer.count} records to {args.out}",
          file=sys.stderr)
    return 0 if counts["predicted"] == rows else 1


def _layout(args: argparse.Namespace, names: list[str], npy: bool, width: int,
            items: bool) -> dict[str, Any]:
    """Which columns hold the size, the item or the features (checked once)."""
    from polydom.errors import InvalidArgumentError

    dropped = {_column(names, name, "--drop", npy) for name in args.drop}
    if items:
        item = (None if args.item_column is None
                else _column(names, args.item_column, "--item-column", npy))
        return {"item": item}
    size = (None if args.size_from is None
            else _column(names, args.size_from, "--size-from", npy))
    features = [i for i in range(len(names)) if i not in dropped and i != size]
    if len(features) != width:
        raise InvalidArgumentError(
            f"--data has {len(features)} feature columns (after --size-from and --drop), "
            f"the index's rows have {width}")
    return {"size": size, "features": features}


def _items(chunk: Any, layout: dict[str, Any]) -> list[Any]:
    if layout["item"] is None:
        return [chunk.row(i) for i in range(len(chunk.lines))]
    column = chunk.column(layout["item"])
    return [value.item() if hasattr(value, "item") else value for value in column]


def _rows(chunk: Any, layout: dict[str, Any], size: float | None, np: Any
          ) -> tuple[Any, Any, dict[int, str]]:
    """The chunk's feature rows and sizes as floats, and the reason of each bad line.

    A cell that is not a number makes its row bad (an empty cell, or a Parquet null, is
    NaN: a feature not computed); rows are parsed as one array when they can be."""
    bad: dict[int, str] = dict(chunk.ragged or {})
    values = chunk.matrix(layout["features"])
    rows = _floats(values, chunk.lines, [chunk.names[i] for i in layout["features"]],
                   bad, np)
    if layout["size"] is None:
        sizes = np.full(len(chunk.lines), size, dtype=float)
    else:
        sizes = _floats(chunk.column(layout["size"])[:, None], chunk.lines,
                        [chunk.names[layout["size"]]], bad, np)[:, 0]
        missing = np.isnan(sizes)
        for i in np.flatnonzero(missing):
            bad.setdefault(chunk.lines[i], f"no size in column {chunk.names[layout['size']]!r}")
    return rows, sizes, bad


def _floats(values: Any, lines: list[int], names: list[str], bad: dict[int, str],
            np: Any) -> Any:
    """``values`` as floats (empty text and None as NaN); a row with a cell that is not a
    number is all NaN and named in ``bad``."""
    try:
        if values.dtype.kind == "U":
            return np.where(values == "", "nan", values).astype(float)
        return values.astype(float)
    except (TypeError, ValueError):
        pass
    out = np.full(values.shape, np.nan)
    for i, row in enumerate(values):
        for j, cell in enumerate(row):
            if cell is None or (isinstance(cell, str) and cell.strip() == ""):
                continue
            try:
                out[i, j] = float(cell)
            except (TypeError, ValueError):
                bad.setdefault(lines[i], f"column {names[j]!r}: {str(cell)[:40]!r} is not "
                                         "a number")
                out[i] = np.nan
                break
    return out
