"""The data of a ``polydom build`` config: rows, target, feature groups and their costs.

``data`` names where the rows come from:

* a file, relative to the config file: ``.csv`` / ``.tsv`` (a header row of column names,
  read with Python's :mod:`csv`), ``.parquet`` (read with pyarrow, the ``data`` extra),
  ``.npy`` (one 2-D numeric array) or ``.npz`` (a 2-D numeric array ``X`` and a 1-D target
  array, ``y`` unless ``target`` names another);
* a loader ``"module:function"`` (the module importable, or a ``.py`` file next to the
  config), called with no arguments, returning ``(X, y)``, a frame (anything with
  ``columns``: a pandas DataFrame) or a scikit-learn Bunch (``data``, ``target``,
  ``feature_names``): ``"sklearn.datasets:load_wine"`` works as it is.  With
  ``featurizer = "module:attr"`` (a :class:`polydom.Featurizer`, or a function returning
  one) the loader returns ``(items, y)`` of raw items, and the featurizer's routines are
  the features;
* ``"breast_cancer"`` (scikit-learn's, groups ``mean``, ``error``, ``worst`` by default).

``target`` is the label column of a table (a name, or an index; negative counts from the
end); every other column is a feature column.  ``[features]`` maps a feature (a group the
lattice explores) to selectors of its columns: a column name, an index, an index range
``"start:stop"`` (stop excluded, as in Python) or a glob (``"mean *"``); without it, every
column is its own feature.  ``[costs]`` gives a polynomial in ``n`` per feature, or per
column (a feature then costs the sum of its columns).

A config names code to run (loaders, featurizers): it is trusted as a Python script is,
except that a loader calling ``sys.exit()`` is an error.  A data file is not: it is bounded
(:data:`MAX_COLUMNS`, :data:`MAX_CELLS`, shapes, dtypes and a Parquet file's column types
and label bytes read from headers and metadata before anything large is read; text labels
at most :data:`MAX_LABEL_CHARS` characters, at most :data:`MAX_CLASSES` distinct labels),
``.npy``/``.npz`` load without pickle, and every value must be a finite real number
(complex values are refused, never cut to their real part).  Every error is a one-line
:class:`ConfigError` naming the key, or the file or loader and its column or label.
"""

from __future__ import annotations

import csv
import fnmatch
import importlib
import math
import re
import sys
import zipfile
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.units import SECONDS
from polydom.errors import ConfigError, did_you_mean

__all__ = ["ConfigError", "Dataset", "MAX_CELLS", "MAX_CLASSES", "MAX_COLUMNS", "MAX_FEATURES",
           "MAX_LABEL_BYTES", "MAX_LABEL_CHARS", "MAX_SELECTORS", "TABLE_SUFFIXES",
           "feature_columns", "feature_costs", "load_dataset", "resolve_name"]


#: Most feature columns a config's data may have (atoms of the budgeted learners).
MAX_COLUMNS = 4096
#: Most cells (rows x columns) a config's data may hold (float64: 400 MB).
MAX_CELLS = 50_000_000
#: Most features (groups) a lattice explores: it may train up to 2**features sets.
MAX_FEATURES = 32
#: Most column selectors one feature of ``[features]`` may list.
MAX_SELECTORS = MAX_COLUMNS
#: Longest label (characters) of text labels.
MAX_LABEL_CHARS = 64
#: Most distinct labels (classes) of a config's data.
MAX_CLASSES = 1_000
#: Most bytes the labels of a config's data may take as read or as text (the budget of
#: :data:`MAX_CELLS` float64 cells, 400 MB): a 1 KB Parquet file can hold 1 MB labels.
MAX_LABEL_BYTES = 8 * MAX_CELLS
#: File suffixes ``data`` may name.
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".npy", ".npz")
_LOADER = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_RANGE = re.compile(r"(-?\d+):(-?\d+)")
_WORD = re.compile(r"[^\W\d_]+")  # letters: a unit written after a cost ("1ms", "2 us")
_BUILTIN = ("breast_cancer", "digits")


@dataclass
class Dataset:
    """Rows of a config's data: ``X`` (float64, rows x columns), ``y``, column names.

    ``origin`` is how errors name the data (the path or loader as the config wrote it);
    ``featurizer``/``items`` are set when a featurizer made ``X`` from raw items.
    """

    X: np.ndarray
    y: np.ndarray
    names: list[str]
    origin: str
    featurizer: Any = None
    items: list = field(default_factory=list)


# ---------------------------------------------------------------------------- loading
def load_dataset(config: Mapping[str, Any], folder: str | Path = ".") -> Dataset:
    """The rows ``config["data"]`` names (not ``"digits"``, which config_build renders).

    A relative file path, and a loader's ``.py`` file, are looked up in ``folder`` (the
    config file's folder).

    Runtime complexity: O(rows * columns) to read and check the values.
    """
    data = config["data"]
    if not isinstance(data, str) or not data.strip():
        raise ConfigError(f"data must be a file path, a 'module:function' loader or one of "
                          f"{list(_BUILTIN)}, got {data!r}")
    base = Path(folder)
    target = config.get("target")
    if target is not None and (isinstance(target, bool) or not isinstance(target, (str, int))):
        raise ConfigError(f"target must be a column name or index, got {target!r}")
    if "featurizer" in config and not _LOADER.fullmatch(data):
        raise ConfigError("featurizer needs data = 'module:function' returning (items, y)")
    if data == "breast_cancer":
        return _breast_cancer(target)
    suffix = Path(data).suffix.lower()
    if suffix in TABLE_SUFFIXES:
        return _read_file(base / data, data, target)
    if _LOADER.fullmatch(data):
        return _from_loader(data, base, target, config.get("featurizer"))
    raise ConfigError(f"unknown data {data!r}{did_you_mean(data, _BUILTIN)}; give a file "
                      f"({', '.join(TABLE_SUFFIXES)}) relative to the config, a "
                      f"'module:function' loader, or one of {', '.join(map(repr, _BUILTIN))}")


def _breast_cancer(target: Any) -> Dataset:
    from sklearn.datasets import load_breast_cancer

    if target is not None:
        raise ConfigError("target is for your own data; breast_cancer has its own labels")
    bunch = load_breast_cancer()
    return Dataset(np.asarray(bunch.data, dtype=np.float64), bunch.target,
                   [str(n) for n in bunch.feature_names], "breast_cancer")


def _read_file(path: Path, origin: str, target: Any) -> Dataset:
    if not path.is_file():
        raise ConfigError(f"data file {origin!r} not found (looked for {str(path)!r}; a "
                          "relative path is relative to the config file)")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            return _read_csv(path, origin, "\t" if suffix == ".tsv" else ",", target)
        if suffix == ".parquet":
            return _read_parquet(path, origin, target)
        if suffix == ".npy":
            return _split_array(_read_npy(path, origin), origin, target)
        return _read_npz(path, origin, target)
    except OSError as exc:
        raise ConfigError(f"cannot read data file {origin!r}: {exc.strerror or exc}") from None


def _check_shape(rows: int, cols: int, origin: str) -> None:
    if cols > MAX_COLUMNS + 1:
        raise ConfigError(f"data {origin!r} has {cols} columns; the limit is {MAX_COLUMNS} "
                          "feature columns")
    if rows * cols > MAX_CELLS:
        raise ConfigError(f"data {origin!r} has {rows} x {cols} cells; the limit is "
                          f"{MAX_CELLS:,}")


def _read_csv(path: Path, origin: str, delimiter: str, target: Any) -> Dataset:
    """A CSV/TSV table: a header of names, then rows; feature cells become floats as they
    are read (8 bytes each), only the target column is kept as text."""
    with path.open(newline="", encoding="utf-8", errors="strict") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = next(reader, None)
            if not header:
                raise ConfigError(f"data file {origin!r} is empty (a header row of column "
                                  "names comes first)")
            names = [h.strip() for h in header]
            _check_shape(1, len(names), origin)
            at = _target_index(names, target, origin)
            features = [j for j in range(len(names)) if j != at]
            values: list[array] = [array("d") for _ in features]
            labels: list[str] = []
            classes: dict[str, str] = {}  # each label text once; rows share its object
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) != len(names):
                    raise ConfigError(f"data file {origin!r} line {reader.line_num}: "
                                      f"{len(row)} cells, the header has {len(names)}")
                for column, j in zip(values, features, strict=True):
                    try:
                        column.append(float(row[j]))
                    except ValueError:
                        raise ConfigError(f"data {origin!r} column {names[j]!r} line "
                                          f"{reader.line_num}: {row[j]!r} is not a number"
                                          ) from None
                label = classes.get(row[at])
                if label is None:
                    label = row[at]
                    _check_label(label, f"target {names[at]!r} of {origin!r} line "
                                        f"{reader.line_num}")
                    classes[label] = label
                    _check_classes(len(classes), f"target {names[at]!r} of {origin!r}")
                labels.append(label)
                _check_shape(len(labels), len(names), origin)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"data file {origin!r} is not a readable CSV: "
                              f"{str(exc).splitlines()[0]}") from None
    return _split_columns([names[j] for j in features] + [names[at]],
                          [np.frombuffer(v, dtype=np.float64) for v in values] + [labels],
                          origin, len(features))


def _read_parquet(path: Path, origin: str, target: Any) -> Dataset:
    """A Parquet table, bounded from its metadata before its pages are read: feature columns
    must be numbers, a text label column is read dictionary-encoded (its distinct values
    once) after its uncompressed size is checked, then its labels' lengths and count."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"reading {origin!r} needs pyarrow (pip install \".[data]\")") from None
    import pyarrow
    import pyarrow.types as pt

    try:
        meta = pq.ParquetFile(path).metadata
        _check_shape(meta.num_rows, meta.num_columns, origin)
        schema = meta.schema.to_arrow_schema()
        names = [str(n) for n in schema.names]
        at = _target_index(names, target, origin)
        for j, column in enumerate(schema):
            if j != at and not (pt.is_integer(column.type) or pt.is_floating(column.type)
                                or pt.is_boolean(column.type)):
                raise ConfigError(f"data {origin!r} column {names[j]!r} holds {column.type}; "
                                  "feature columns must hold real numbers")
        label_type = schema.field(at).type
        text = not (pt.is_integer(label_type) or pt.is_floating(label_type)
                    or pt.is_boolean(label_type))
        if text and not (pt.is_string(label_type) or pt.is_large_string(label_type)
                         or pt.is_binary(label_type) or pt.is_large_binary(label_type)
                         or pt.is_dictionary(label_type)):
            raise ConfigError(f"target {names[at]!r} of {origin!r} holds {label_type}; labels "
                              "must be numbers or text")
        if text:
            size = sum(meta.row_group(g).column(at).total_uncompressed_size
                       for g in range(meta.num_row_groups))
            if size > MAX_LABEL_BYTES:
                raise ConfigError(f"target {names[at]!r} of {origin!r} holds {size:,} bytes of "
                                  f"labels; the limit is {MAX_LABEL_BYTES:,}")
        table = pq.ParquetFile(path, read_dictionary=[names[at]] if text else None).read()
    except pyarrow.ArrowException as exc:
        raise ConfigError(f"data file {origin!r} is not a readable Parquet file: "
                          f"{str(exc).splitlines()[0]}") from None
    columns: list[Any] = []
    for j in range(table.num_columns):
        column = table.column(j)
        if j == at and text:
            columns.append(_dictionary_labels(column, f"target {names[at]!r} of {origin!r}"))
        else:
            columns.append(column.to_numpy(zero_copy_only=False))
    return _split_columns(names, columns, origin, target)


def _dictionary_labels(column: Any, what: str) -> np.ndarray:
    """Text labels of a dictionary-encoded Arrow column: its distinct values checked (length,
    count) before one label per row is made."""
    import pyarrow as pa

    combined = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(combined.type):  # a label type Arrow cannot encode so
        raise ConfigError(f"{what} holds {combined.type}; labels must be numbers or text")
    classes = combined.dictionary.to_pylist()
    _check_classes(len(classes), what)
    for value in classes:
        if value is not None:
            _check_label(value, what)
    if combined.null_count:
        row = next(i for i, v in enumerate(combined.is_null().to_pylist()) if v)
        raise ConfigError(f"{what} row {row + 1}: a missing label")
    shown = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in classes]
    _check_text_bytes(len(combined), max(map(len, shown), default=0), what)
    return np.array(shown or [""])[combined.indices.to_numpy(zero_copy_only=False)]


def _read_npy(path: Path, origin: str) -> np.ndarray:
    try:
        header = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise ConfigError(f"data file {origin!r} is not a plain .npy array: "
                          f"{str(exc).splitlines()[0]}") from None
    if header.ndim != 2:
        raise ConfigError(f"data file {origin!r} must hold a 2-D array, got shape "
                          f"{header.shape}")
    _check_shape(*header.shape, origin)
    _check_dtype(header.dtype, f"data file {origin!r}")
    return np.array(header)


def _read_npz(path: Path, origin: str, target: Any) -> Dataset:
    label = "y" if target is None else target
    if not isinstance(label, str):
        raise ConfigError(f"target of an .npz file names its label array, got {label!r}")
    try:
        with zipfile.ZipFile(path) as archive:
            sizes = {i.filename.removesuffix(".npy"): i.file_size for i in archive.infolist()}
    except zipfile.BadZipFile:
        raise ConfigError(f"data file {origin!r} is not an .npz archive") from None
    for name in ("X", label):
        if name not in sizes:
            raise ConfigError(f"data file {origin!r} has no array {name!r}"
                              f"{did_you_mean(name, list(sizes))}; arrays: {sorted(sizes)}")
    if sizes["X"] + sizes[label] > 8 * MAX_CELLS + 2**20:
        raise ConfigError(f"data file {origin!r} holds arrays larger than the "
                          f"{MAX_CELLS:,}-cell limit")
    try:
        with zipfile.ZipFile(path) as archive:
            for name, what in (("X", f"array 'X' of {origin!r}"),
                               (label, f"array {label!r} of {origin!r}")):
                with archive.open(f"{name}.npy") as member:
                    _check_dtype(_npy_dtype(member), what)
        with np.load(path, allow_pickle=False) as arrays:
            X, y = arrays["X"], arrays[label]
    except (ValueError, zipfile.BadZipFile, KeyError) as exc:
        raise ConfigError(f"data file {origin!r}: {str(exc).splitlines()[0]}") from None
    if X.ndim != 2:
        raise ConfigError(f"array 'X' of {origin!r} must be 2-D, got shape {X.shape}")
    _check_shape(*X.shape, origin)
    return Dataset(_numeric(X, origin, [f"x{j}" for j in range(X.shape[1])]),
                   _labels(y, len(X), f"array {label!r} of {origin!r}"),
                   [f"x{j}" for j in range(X.shape[1])], origin)


def _npy_dtype(handle: Any) -> np.dtype:
    """The dtype an ``.npy`` stream's header declares (nothing else read)."""
    version = np.lib.format.read_magic(handle)
    read = {(1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read is None:
        raise ConfigError(f".npy format version {version} is not read here (1.0 or 2.0)")
    return read(handle)[2]


def _check_dtype(dtype: np.dtype, what: str) -> None:
    """Refuse, from a header, a dtype that is not real numbers or short text."""
    if dtype.kind == "c":
        raise ConfigError(f"{what} holds complex numbers ({dtype}); give real numbers (the "
                          "imaginary part would be lost)")
    width = dtype.itemsize // (4 if dtype.kind == "U" else 1)
    if dtype.kind in "US" and width > MAX_LABEL_CHARS:
        raise ConfigError(f"{what} holds text of up to {width:,} characters ({dtype}); a "
                          f"label has at most {MAX_LABEL_CHARS}")
    if dtype.kind not in "biufUS":
        raise ConfigError(f"{what} holds {dtype}; give real numbers (labels may be text)")


def _check_label(label: Any, what: str) -> None:
    """A text label at most :data:`MAX_LABEL_CHARS` long (checked before any copy)."""
    if len(label) > MAX_LABEL_CHARS:
        raise ConfigError(f"{what}: a label of {len(label):,} characters ({str(label[:20])!r}"
                          f"...); a label has at most {MAX_LABEL_CHARS}")


def _check_text_bytes(rows: int, width: int, what: str) -> None:
    """Text labels become one fixed-width array (4 bytes a character, the longest label's
    width for every row): at most :data:`MAX_LABEL_BYTES`, checked before it is made."""
    size = 4 * rows * width
    if size > MAX_LABEL_BYTES:
        raise ConfigError(f"{what}: {rows:,} text labels of up to {width} characters take "
                          f"{size:,} bytes; the limit is {MAX_LABEL_BYTES:,}")


def _check_classes(count: int, what: str) -> None:
    if count > MAX_CLASSES:
        raise ConfigError(f"{what} has more than {MAX_CLASSES:,} distinct labels; a "
                          "classifier's labels are classes (at most that many)")


def _split_array(array: np.ndarray, origin: str, target: Any) -> Dataset:
    if isinstance(target, str) and re.fullmatch(r"-?\d+", target.strip()):
        target = int(target)
    if not isinstance(target, int):
        raise ConfigError(f"target must be the label column's index for {origin!r} (e.g. -1), "
                          f"got {target!r}")
    names = [f"x{j}" for j in range(array.shape[1])]
    return _split_columns(names, [array[:, j] for j in range(array.shape[1])], origin, target)


def _target_index(names: list[str], target: Any, origin: str) -> int:
    """The position of the label column ``target`` (a name, or an index from either end)."""
    if target is None:
        raise ConfigError(f"missing key 'target': which column of {origin!r} holds the labels "
                          f"(columns: {_listed(names)})")
    if isinstance(target, int):
        if not -len(names) <= target < len(names):
            raise ConfigError(f"target {target} is out of range: {origin!r} has "
                              f"{len(names)} columns")
        return target % len(names)
    if target in names:
        return names.index(target)
    raise ConfigError(f"target {target!r} is not a column of {origin!r}"
                      f"{did_you_mean(target, names)}; columns: {_listed(names)}")


def _split_columns(names: list[str], columns: list[Any], origin: str, target: Any) -> Dataset:
    """The target column out of ``columns``, the rest as a float matrix."""
    at = _target_index(names, target, origin)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"data {origin!r} has repeated column names {twice}")
    keep = [j for j in range(len(names)) if j != at]
    if not keep:
        raise ConfigError(f"data {origin!r} has no feature columns besides the target")
    kept = [names[j] for j in keep]
    rows = len(columns[at])
    if rows == 0:
        raise ConfigError(f"data {origin!r} has no rows")
    X = np.empty((rows, len(keep)))
    for k, j in enumerate(keep):
        X[:, k] = _column(columns[j], origin, names[j])
    return Dataset(X, _labels(columns[at], rows, f"target {names[at]!r} of {origin!r}"), kept,
                   origin)


def _column(values: Any, origin: str, name: str) -> np.ndarray:
    """One feature column as finite float64 (text cells parsed), naming the first bad cell."""
    if isinstance(values, list):
        out = np.empty(len(values))
        for i, cell in enumerate(values):
            try:
                out[i] = float(cell)
            except ValueError:
                raise ConfigError(f"data {origin!r} column {name!r} row {i + 1}: {cell!r} is "
                                  "not a number") from None
    else:
        if np.iscomplexobj(values) or any(isinstance(v, complex) for v in _objects(values)):
            raise ConfigError(f"data {origin!r} column {name!r} holds complex numbers; give "
                              "real numbers (the imaginary part would be lost)")
        try:
            out = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"data {origin!r} column {name!r} is not numeric") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise ConfigError(f"data {origin!r} column {name!r} row {bad[0] + 1}: {out[bad[0]]} "
                          "(missing or infinite values are not accepted: fill them first)")
    return out


def _numeric(X: Any, origin: str, names: list[str]) -> np.ndarray:
    return np.column_stack([_column(X[:, j], origin, names[j]) for j in range(X.shape[1])])


def _objects(values: Any) -> Any:
    """The cells of an object array (to look at their types), else nothing."""
    return values if isinstance(values, np.ndarray) and values.dtype.kind == "O" else ()


def _labels(values: Any, rows: int, what: str) -> np.ndarray:
    """Labels as a 1-D array: integers or numbers when every value is one, else text.

    Bounded before anything is copied: text labels at most :data:`MAX_LABEL_CHARS`
    characters, at most :data:`MAX_CLASSES` distinct labels; numbers finite.  Every error
    names ``what`` (the column and file, or the loader), the row and the value.
    """
    try:
        y = np.asarray(values)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be 1-D with one label per row ({rows}): "
                          "its entries are not all single values") from None
    if y.ndim != 1 or len(y) != rows:
        raise ConfigError(f"{what} must be 1-D with one label per row ({rows}), got shape "
                          f"{y.shape}")
    if y.dtype.kind != "O":
        _check_dtype(y.dtype, what)
    if y.dtype.kind in "biuf":
        _check_finite(y, what)
        _check_classes(len(np.unique(y)), what)
        return y
    text = []
    for i, value in enumerate(y.tolist()):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, complex):
            raise ConfigError(f"{what} row {i + 1}: {value!r} is complex; labels are real "
                              "numbers or text")
        if not isinstance(value, str):
            value = str(value)
        _check_label(value, f"{what} row {i + 1}")
        value = value.strip()
        if not value:
            raise ConfigError(f"{what} row {i + 1}: an empty label")
        text.append(value)
    _check_classes(len(set(text)), what)
    for kind in (int, float):
        try:
            numbers = np.array([kind(v) for v in text])
        except (ValueError, OverflowError):
            continue
        if numbers.dtype.kind not in "iuf":  # an integer beyond 64 bits: read as a float
            continue
        _check_finite(numbers, what, text)
        return numbers
    _check_text_bytes(len(text), max(map(len, text)), what)
    return np.array(text)


def _check_finite(y: np.ndarray, what: str, text: list[str] | None = None) -> None:
    """Numeric labels must be finite: the first other one named with its row and value."""
    if y.dtype.kind != "f":
        return
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        row = int(bad[0])
        shown = text[row] if text is not None else repr(float(y[row]))
        raise ConfigError(f"{what} row {row + 1}: label {shown!r} is not a finite number "
                          "(missing or infinite labels are not accepted)")


def _listed(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(map(repr, names[:limit]))
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


# ---------------------------------------------------------------------------- code
def resolve_name(spec: str, base: Path, key: str) -> Any:
    """The attribute ``module:attr`` names, importing the module (``base`` searched first).

    The config's folder is on ``sys.path`` only while the module is imported.
    """
    if not isinstance(spec, str) or not _LOADER.fullmatch(spec):
        raise ConfigError(f"{key} must be 'module:attr' (e.g. 'mydata:load'), got {spec!r}")
    module_name, attr = spec.split(":")
    sys.path.insert(0, str(base))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{key} {spec!r}: cannot import {module_name!r}: "
                          f"{str(exc).splitlines()[0]}") from None
    except SystemExit as exc:  # sys.exit() at import: an error, never the build's exit
        raise ConfigError(f"{key} {spec!r}: importing {module_name!r} called exit "
                          f"({_exit_text(exc)}) instead of defining it") from None
    except Exception as exc:  # the user's module failed while importing: say so in one line
        raise ConfigError(f"{key} {spec!r}: importing {module_name!r} failed: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                          ) from None
    finally:
        sys.path.remove(str(base))
    if not hasattr(module, attr):
        public = [n for n in dir(module) if not n.startswith("_")]
        raise ConfigError(f"{key} {spec!r}: module {module_name!r} has no {attr!r}"
                          f"{did_you_mean(attr, public)}")
    return getattr(module, attr)


def _call(function: Any, spec: str, key: str) -> Any:
    if not callable(function):
        raise ConfigError(f"{key} {spec!r} is not callable")
    try:
        return function()
    except SystemExit as exc:  # sys.exit(0) in a loader would end the build with status 0
        raise ConfigError(f"{key} {spec!r} called exit ({_exit_text(exc)}) instead of "
                          "returning; nothing was built") from None
    except Exception as exc:  # the user's code failed: one line naming it
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ConfigError(f"{key} {spec!r} failed: {type(exc).__name__}: {first}") from None


def _exit_text(exc: SystemExit) -> str:
    shown = repr(exc.code)
    return f"SystemExit({shown if len(shown) <= 40 else shown[:40] + '...'})"


def _table_array(X: Any, spec: str) -> np.ndarray:
    """``X`` from a loader as an array, naming the loader (and the first ragged row) when its
    rows differ in length."""
    try:
        return np.asarray(X)
    except (TypeError, ValueError):
        lengths = [len(r) if hasattr(r, "__len__") else 1 for r in X] if hasattr(
            X, "__iter__") else []
        bad = next((i for i, n in enumerate(lengths) if n != lengths[0]), None)
        where = (f": row {bad + 1} has {lengths[bad]} values, row 1 has {lengths[0]}"
                 if bad is not None else "")
        raise ConfigError(f"X from {spec!r} must be a 2-D table of numbers with rows of one "
                          f"length{where}") from None


def _from_loader(spec: str, base: Path, target: Any, featurizer: Any) -> Dataset:
    got = _call(resolve_name(spec, base, "data"), spec, "data")
    if featurizer is not None:
        return _featurized(got, spec, base, featurizer)
    if hasattr(got, "columns") and not isinstance(got, Mapping):  # a frame
        names = [str(c) for c in got.columns]
        _check_shape(len(got), len(names), spec)
        return _split_columns(names, [np.asarray(got[c]) for c in got.columns], spec, target)
    if isinstance(got, Mapping) and "data" in got and "target" in got:  # a Bunch
        X = _table_array(got["data"], spec)
        names = got.get("feature_names")
        return _xy(X, got["target"], spec, target, None if names is None else list(names))
    if isinstance(got, (tuple, list)) and len(got) == 2:
        X, y = got
        names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
        return _xy(_table_array(X, spec), y, spec, target, names)
    raise ConfigError(f"data {spec!r} must return (X, y), a frame or a Bunch, got "
                      f"{type(got).__name__}")


def _xy(X: np.ndarray, y: Any, spec: str, target: Any, names: list | None) -> Dataset:
    """A loader's ``X`` and ``y``; its columns are ``names`` (default ``x0``, ``x1``, ...)."""
    if target is not None:
        raise ConfigError(f"target is for tables; data {spec!r} returned (X, y) already")
    if X.ndim == 2 and names is None:
        names = [f"x{j}" for j in range(X.shape[1])]
    if X.ndim != 2 or len(names) != X.shape[1]:
        raise ConfigError(f"X from {spec!r} must be a 2-D table, got shape {X.shape}")
    names = [str(n) for n in names]
    _check_shape(*X.shape, spec)
    if X.shape[0] == 0:
        raise ConfigError(f"data {spec!r} has no rows")
    return Dataset(_numeric(X, spec, names), _labels(y, len(X), f"y from {spec!r}"), names, spec)


def _featurized(got: Any, spec: str, base: Path, name: Any) -> Dataset:
    from polydom.serving.featurizer import Featurizer

    fz = resolve_name(name, base, "featurizer")
    if not isinstance(fz, Featurizer):
        fz = _call(fz, name, "featurizer")
    if not isinstance(fz, Featurizer) or not fz.names:
        raise ConfigError(f"featurizer {name!r} must be a polydom.Featurizer with routines, "
                          f"got {type(fz).__name__}")
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise ConfigError(f"data {spec!r} must return (items, y) with a featurizer")
    items = list(got[0])
    if not items:
        raise ConfigError(f"data {spec!r} returned no items")
    _check_shape(len(items), fz.n_columns, spec)
    try:
        X = fz.transform(items)
    except Exception as exc:  # a routine failed on an item: one line naming the featurizer
        raise ConfigError(f"featurizer {name!r} failed on the items of {spec!r}: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                          ) from None
    names = [f"{f}[{k}]" for f in fz.names for k in range(len(fz.columns[f]))]
    return Dataset(_numeric(X, f"featurizer {name}", names),
                   _labels(got[1], len(items), f"y from {spec!r}"), names, spec, fz, items)


# ---------------------------------------------------------------------------- features
def feature_columns(spec: Any, dataset: Dataset,
                    default: Mapping[str, list[int]] | None = None) -> dict[str, list[int]]:
    """Feature name -> its column indices, from the ``[features]`` selectors.

    A selector is a column name, an index, ``"start:stop"`` or a glob.  Without ``spec``:
    ``default``, else the featurizer's routines, else one feature per column.

    Runtime complexity: O(features * selectors * columns).
    """
    names = dataset.names
    fz = dataset.featurizer
    if fz is not None:
        return _featurizer_features(spec, dataset)
    if spec is None:
        spec = default if default is not None else {n: [j] for j, n in enumerate(names)}
        if len(spec) > MAX_FEATURES:
            raise ConfigError(f"data {dataset.origin!r} has {len(spec)} columns and no "
                              f"[features] table: group them into at most {MAX_FEATURES} "
                              "features (a lattice explores up to 2**features sets)")
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError("features must be a table: feature name -> list of columns (names, "
                          "indices, 'start:stop' ranges or globs)")
    if len(spec) > MAX_FEATURES:
        raise ConfigError(f"features has {len(spec)} entries; the limit is {MAX_FEATURES} (a "
                          "lattice explores up to 2**features sets)")
    columns: dict[str, list[int]] = {}
    for feature, selectors in spec.items():
        if isinstance(selectors, (str, int)) and not isinstance(selectors, bool):
            selectors = [selectors]
        if not isinstance(selectors, list) or not selectors:
            raise ConfigError(f"feature {feature!r} must list columns, got {selectors!r}")
        if len(selectors) > MAX_SELECTORS:
            raise ConfigError(f"feature {feature!r} lists {len(selectors):,} columns; the limit "
                              f"is {MAX_SELECTORS:,}")
        picked: dict[int, None] = {}  # insertion order, O(1) membership
        seen: set = set()
        for selector in selectors:
            picked.update(dict.fromkeys(_select(selector, names, feature, dataset.origin)))
            if selector in seen:  # a name, an index, a range or a glob: hashable
                raise ConfigError(f"feature {feature!r} lists column {selector!r} twice")
            seen.add(selector)
        columns[str(feature)] = list(picked)
    return columns


def _select(selector: Any, names: list[str], feature: Any, origin: str) -> list[int]:
    width = len(names)
    if isinstance(selector, int) and not isinstance(selector, bool):
        if 0 <= selector < width:
            return [selector]
        raise ConfigError(f"feature {feature!r}: unknown column {selector!r} (indices 0-"
                          f"{width - 1} of {origin!r})")
    if not isinstance(selector, str):
        raise ConfigError(f"feature {feature!r}: a column is a name, an index, 'start:stop' or "
                          f"a glob, got {selector!r}")
    if selector in names:
        return [names.index(selector)]
    found = _RANGE.fullmatch(selector.strip())
    if found:
        start, stop = int(found.group(1)), int(found.group(2))
        if not 0 <= start < stop <= width:
            raise ConfigError(f"feature {feature!r}: range {selector!r} must have 0 <= start < "
                              f"stop <= {width} (columns of {origin!r})")
        return list(range(start, stop))
    if any(ch in selector for ch in "*?["):
        hits = [j for j, n in enumerate(names) if fnmatch.fnmatchcase(n, selector)]
        if hits:
            return hits
        raise ConfigError(f"feature {feature!r}: glob {selector!r} matches no column of "
                          f"{origin!r}")
    raise ConfigError(f"feature {feature!r}: unknown column {selector!r}"
                      f"{did_you_mean(selector, names)} (names, indices 0-{width - 1}, "
                      "'start:stop' or globs)")


def _featurizer_features(spec: Any, dataset: Dataset) -> dict[str, list[int]]:
    """The featurizer's routines (all, or the listed ones) as features; narrows ``dataset``."""
    fz = dataset.featurizer
    chosen = list(fz.names) if spec is None else spec
    if not isinstance(chosen, list) or not chosen or not all(isinstance(n, str) for n in chosen):
        raise ConfigError("features with a featurizer must be a list of its routine names, "
                          f"got {spec!r}")
    unknown = [n for n in chosen if n not in fz.names]
    if unknown:
        raise ConfigError(f"unknown featurizer routine(s) {unknown}"
                          f"{did_you_mean(unknown[0], fz.names)}; routines: {fz.names}")
    if len(chosen) > MAX_FEATURES:
        raise ConfigError(f"features has {len(chosen)} entries; the limit is {MAX_FEATURES}")
    keep, columns = [], {}
    for name in fz.names:  # registration order, the layout Featurizer.transform gives
        if name in chosen:
            columns[name] = list(range(len(keep), len(keep) + len(fz.columns[name])))
            keep.extend(fz.columns[name])
    dataset.X = dataset.X[:, keep]
    dataset.names = [dataset.names[j] for j in keep]
    return columns


def feature_costs(
    spec: Any, columns: Mapping[str, list[int]], names: Sequence[str]
) -> tuple[dict[str, CostCurve], dict[int, CostCurve]]:
    """The ``[costs]`` table as (feature -> curve, column index -> curve).

    Each feature gets a cost: its own, or (when every column of it has one) the sum of its
    columns'.  Per-column costs are kept for ``atoms = "columns"``.

    Runtime complexity: one bounded parse per entry (at most :data:`MAX_COLUMNS` +
    :data:`MAX_FEATURES` entries).
    """
    if not isinstance(spec, Mapping):
        raise ConfigError("missing key 'costs' (a table of feature or column -> polynomial in "
                          "n), or set profile = true with a featurizer or digits")
    if len(spec) > MAX_COLUMNS + MAX_FEATURES:
        raise ConfigError(f"costs has {len(spec)} entries; the limit is "
                          f"{MAX_COLUMNS + MAX_FEATURES}")
    used = {j for cols in columns.values() for j in cols}
    col_index = {n: j for j, n in enumerate(names) if j in used}
    unknown = [k for k in spec if k not in columns and k not in col_index]
    if unknown:
        choices = [*columns, *col_index]
        raise ConfigError(f"costs name unknown feature(s) {unknown}"
                          f"{did_you_mean(unknown[0], choices)}; features: {list(columns)}"
                          + (" (or a column of them)" if col_index else ""))
    per_feature: dict[str, CostCurve] = {}
    per_column: dict[int, CostCurve] = {}
    for key, text in spec.items():
        curve = _curve(key, text)
        if key in columns and (key not in col_index or columns[key] == [col_index[key]]):
            per_feature[key] = curve
            if key in col_index:
                per_column[col_index[key]] = curve
        elif key in columns:
            raise ConfigError(f"costs key {key!r} is both a feature and another feature's "
                              "column: rename one")
        else:
            per_column[col_index[key]] = curve
    missing = []
    for feature, cols in columns.items():
        priced = [j for j in cols if j in per_column]
        if feature in per_feature:
            if priced and cols != [col_index.get(feature)]:
                raise ConfigError(f"feature {feature!r} has a cost and so do its column(s) "
                                  f"{[names[j] for j in priced]}: give one or the other")
        elif cols and len(priced) == len(cols):
            per_feature[feature] = CostCurve.total(per_column[j] for j in cols)
        else:
            missing.append(feature)
    if missing:
        raise ConfigError(f"costs missing for feature(s) {missing} (give a cost per feature "
                          "or one per column)")
    return per_feature, per_column


def _curve(key: str, text: Any) -> CostCurve:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(f"cost of {key!r} must be a polynomial in n (text) or a number, "
                          f"got {text!r}")
    if isinstance(text, float) and not math.isfinite(text):
        raise ConfigError(f"cost of {key!r} must be finite, got {text!r}")
    try:
        return CostCurve.parse(str(text))
    except (ValueError, OverflowError) as exc:
        shown = text if len(str(text)) <= 60 else f"{str(text)[:60]}... ({len(str(text))} chars)"
        unit = next((w for w in _WORD.findall(str(text))
                     if w.lower() in SECONDS or w.lower() in ("unit", "units")), None)
        if unit is not None:
            raise ConfigError(f"cost of {key!r} ({shown!r}): costs are plain numbers in the "
                              f"store's cost_unit, not quantities: write it without {unit!r} "
                              f"and set cost_unit = {unit!r}") from None
        raise ConfigError(f"cost of {key!r} ({shown!r}): {str(exc).splitlines()[0]}") from None
