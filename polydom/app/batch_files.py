"""The files of ``polydom predict``: data read in chunks, predictions written as they come.

A data file is read a chunk of rows at a time, so a file larger than memory streams: CSV with
the standard library's reader (a header line naming the columns), Parquet with pyarrow's
``iter_batches``, ``.npy`` memory-mapped (``np.load(mmap_mode="r")``, numbers only).  Each
chunk is a :class:`Chunk`: the line number of each row (a CSV file's line, counting the
header as line 1; the 1-based row of a Parquet or ``.npy`` file), the column names and the
columns' values.  Predictions are written with :class:`PredictionWriter` (CSV, Parquet or
JSON lines, chosen by the file's suffix) to a temporary file renamed over the target when
the run ends (a symlink there is replaced as a link), never half-written.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from polydom.app.output import json_ready
from polydom.app.tables import printable
from polydom.errors import InvalidArgumentError

__all__ = ["DATA_SUFFIXES", "OUT_SUFFIXES", "Chunk", "PredictionWriter", "read_chunks",
           "row_count"]

#: Data files ``polydom predict`` reads, by suffix.
DATA_SUFFIXES = (".csv", ".parquet", ".npy")
#: Prediction files it writes, by suffix.
OUT_SUFFIXES = (".csv", ".parquet", ".jsonl")


@dataclass
class Chunk:
    """Rows of a data file: ``lines`` (one number per row) and ``names`` (the columns),
    with the values as ``array`` (rows x columns: text for CSV, numbers for ``.npy``,
    whose columns are named ``"0"``, ``"1"``, ...) or ``columns`` (Parquet: one array per
    name).  ``ragged`` maps the line of each CSV row with another number of fields than
    the header to the reason (its cells are empty)."""

    lines: list[int]
    names: list[str]
    array: np.ndarray | None = None
    columns: list[np.ndarray] | None = None
    ragged: dict[int, str] | None = None

    def column(self, i: int) -> np.ndarray:
        """The values of column ``i``.  O(rows)."""
        return self.array[:, i] if self.array is not None else self.columns[i]

    def matrix(self, indices: Sequence[int]) -> np.ndarray:
        """Columns ``indices`` side by side (rows x len(indices)).  O(rows * len)."""
        if self.array is not None:
            return self.array[:, list(indices)]
        if not indices:
            return np.empty((len(self.lines), 0))
        return np.column_stack([self.columns[i] for i in indices])

    def row(self, i: int) -> Any:
        """Row ``i`` as one item: a 1-D array (``.npy``), or a dict of column -> value."""
        if self.array is not None and self.array.dtype.kind != "U":
            return self.array[i] if self.array.shape[1] > 1 else self.array[i, 0]
        return {name: _plain(self.column(j)[i]) for j, name in enumerate(self.names)}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _suffix(path: str, allowed: Sequence[str], what: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        raise InvalidArgumentError(
            f"{what} {path!r}: expected a file ending in {', '.join(allowed)}")
    return suffix


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InvalidArgumentError(
            f"{what}: Parquet needs pyarrow (pip install 'polydom[data]')") from None
    return pyarrow


def row_count(path: str) -> int | None:
    """The number of rows of a Parquet or ``.npy`` file (from its header), None for CSV.

    Runtime complexity: O(1) reads of the file's metadata.
    """
    suffix = _suffix(path, DATA_SUFFIXES, "--data")
    if suffix == ".npy":
        return int(np.load(path, mmap_mode="r").shape[0])
    if suffix == ".parquet":
        return int(_pyarrow("--data").parquet.ParquetFile(path).metadata.num_rows)
    return None


def read_chunks(path: str, chunk_rows: int) -> Iterator[Chunk]:
    """The rows of ``path`` in chunks of at most ``chunk_rows``.

    Memory: O(chunk_rows * columns) whatever the file's length.

    Raises
    ------
    ValueError
        Naming the file when it cannot be read as its suffix says (no header, not UTF-8,
        an ``.npy`` file of objects or of more than two dimensions).
    """
    suffix = _suffix(path, DATA_SUFFIXES, "--data")
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"--data {path!r}: no such file")
    if suffix == ".csv":
        yield from _csv_chunks(path, chunk_rows)
    elif suffix == ".parquet":
        yield from _parquet_chunks(path, chunk_rows)
    else:
        yield from _npy_chunks(path, chunk_rows)


def _csv_chunks(path: str, chunk_rows: int) -> Iterator[Chunk]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if not header:
                raise InvalidArgumentError(f"--data {path!r}: no header line naming the columns")
            width = len(header)
            lines: list[int] = []
            rows: list[list[str]] = []
            ragged: dict[int, str] = {}
            for fields in reader:
                line = reader.line_num
                if not fields:
                    continue
                if len(fields) != width:
                    ragged[line] = f"{len(fields)} fields where the header has {width}"
                    fields = [""] * width
                lines.append(line)
                rows.append(fields)
                if len(rows) == chunk_rows:
                    yield Chunk(lines, header, np.array(rows, dtype=str), ragged=ragged)
                    lines, rows, ragged = [], [], {}
            if rows:
                yield Chunk(lines, header, np.array(rows, dtype=str), ragged=ragged)
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"--data {path!r} is not UTF-8 text") from None
    except csv.Error as exc:
        raise InvalidArgumentError(f"--data {path!r}: {exc}") from None


def _parquet_chunks(path: str, chunk_rows: int) -> Iterator[Chunk]:
    pyarrow = _pyarrow("--data")
    try:
        parquet = pyarrow.parquet.ParquetFile(path)
    except pyarrow.ArrowException as exc:
        raise InvalidArgumentError(f"--data {path!r} is not a Parquet file: {exc}") from None
    start = 1
    for batch in parquet.iter_batches(batch_size=chunk_rows):
        n = batch.num_rows
        yield Chunk(list(range(start, start + n)), list(batch.schema.names),
                    columns=[column.to_numpy(zero_copy_only=False) for column in batch.columns])
        start += n


def _npy_chunks(path: str, chunk_rows: int) -> Iterator[Chunk]:
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise InvalidArgumentError(f"--data {path!r}: {exc}") from None
    if array.dtype.hasobject or array.ndim not in (1, 2):
        raise InvalidArgumentError(
            f"--data {path!r}: expected a 1-D or 2-D array of numbers, got {array.ndim}-D "
            f"{array.dtype}")
    width = 1 if array.ndim == 1 else array.shape[1]
    names = [str(i) for i in range(width)]
    for start in range(0, array.shape[0], chunk_rows):
        part = np.asarray(array[start:start + chunk_rows])
        yield Chunk(list(range(start + 1, start + 1 + len(part))), names,
                    array=part.reshape(len(part), width))


class PredictionWriter:
    """Writes prediction records (dicts of ``fields``) to CSV, Parquet or JSON lines.

    Records go to a temporary file beside ``path``; :meth:`close` renames it over ``path``
    (a run that fails leaves no file behind, and none half-written).  CSV cells are
    escaped text (:func:`polydom.app.tables.printable`), a list is joined by ``+``, None is
    an empty cell and floats are in full precision; JSON lines are strict JSON (a label
    keeps its type: ``"1"`` stays a string); Parquet columns are typed, the label's type
    taken from the first chunk that has one.

    Runtime complexity: O(fields) per record.
    """

    def __init__(self, path: str, fields: Sequence[str]) -> None:
        self.path = path
        self.suffix = _suffix(path, OUT_SUFFIXES, "--out")
        self.fields = list(fields)
        self.count = 0
        folder = Path(path).resolve().parent
        if not folder.is_dir():
            raise InvalidArgumentError(f"--out {path!r}: no such folder {str(folder)!r}")
        if Path(path).is_dir():
            raise InvalidArgumentError(f"--out {path!r} is a folder")
        self._handle: Any = None
        self._parquet: Any = None
        if self.suffix == ".parquet":
            self._pa = _pyarrow("--out")
        descriptor, name = tempfile.mkstemp(dir=folder, prefix=f".{Path(path).name}.",
                                            suffix=".partial")
        self._temporary = Path(name)
        if self.suffix == ".parquet":
            os.close(descriptor)
        else:
            self._handle = open(descriptor, "w", encoding="utf-8", newline="")  # noqa: SIM115
            if self.suffix == ".csv":
                self._csv = csv.writer(self._handle, lineterminator="\n")
                self._csv.writerow(self.fields)

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        """Append ``records``.  O(len(records) * fields)."""
        if not records:
            return
        self.count += len(records)
        if self.suffix == ".csv":
            self._csv.writerows([[_cell(r[f]) for f in self.fields] for r in records])
        elif self.suffix == ".jsonl":
            self._handle.write("".join(
                json.dumps(json_ready(r), allow_nan=False) + "\n" for r in records))
        else:
            self._write_parquet(records)

    def _write_parquet(self, records: Sequence[dict[str, Any]]) -> None:
        pa = self._pa
        columns = {f: [r[f] for r in records] for f in self.fields}
        if "features" in columns:
            columns["features"] = [list(v) for v in columns["features"]]
        if self._parquet is None:
            label = pa.array(columns["label"]).type if "label" in columns else pa.null()
            schema = pa.schema([
                (f, label if f == "label" and not pa.types.is_null(label)
                 else _ARROW_TYPES.get(f, _TEXT)(pa)) for f in self.fields])
            table = pa.Table.from_pydict(columns, schema=schema)
            self._parquet = pa.parquet.ParquetWriter(str(self._temporary), schema)
        else:
            try:
                table = pa.Table.from_pydict(columns, schema=self._parquet.schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InvalidArgumentError(
                    f"--out {self.path!r}: labels of another type than the first chunk's "
                    f"({exc}); write CSV or JSON lines instead") from None
        self._parquet.write_table(table)

    def close(self) -> None:
        """Finish the file and rename it over the target."""
        if self._parquet is None and self.suffix == ".parquet":
            pa = self._pa
            self._parquet = pa.parquet.ParquetWriter(str(self._temporary), pa.schema(
                [(f, _ARROW_TYPES.get(f, _TEXT)(pa)) for f in self.fields]))
        if self._parquet is not None:
            self._parquet.close()
        if self._handle is not None:
            self._handle.close()
        os.replace(self._temporary, self.path)

    def abort(self) -> None:
        """Drop the temporary file (the target is left as it was)."""
        if self._parquet is not None:
            self._parquet.close()
        if self._handle is not None:
            self._handle.close()
        if self._temporary.exists():
            self._temporary.unlink()


#: Arrow types of the record fields (``pyarrow`` -> type); any other field is text, and the
#: label's type is the first chunk's.
_ARROW_TYPES = {
    "line": lambda pa: pa.int64(), "size": lambda pa: pa.float64(),
    "budget": lambda pa: pa.float64(), "accuracy": lambda pa: pa.float64(),
    "predicted_cost": lambda pa: pa.float64(), "measured_cost": lambda pa: pa.float64(),
    "features": lambda pa: pa.list_(pa.string()), "build": lambda pa: pa.int64(),
}


def _TEXT(pa: Any) -> Any:  # noqa: N802 - a type, as the table's entries
    return pa.string()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return printable("+".join(map(str, value)))
    return printable(value)

