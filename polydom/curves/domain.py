"""Argument checks of the public entry points, with errors that name the argument and value.

The one home of input validation, called by every door: the public Python functions
(:meth:`polydom.Index.lookup`, ``lookup_many``, ``predict``, ``explain``,
:func:`polydom.serving.predict_item`), the command line's argument types and the HTTP handlers.
What a door passed through these checks is trusted inside (the inner calls take
``check_input=False``, as scikit-learn's estimators do), so each check runs once.

Checked here: sizes, budgets, the size domain, numbers given where a real is expected (cast
to float64, so a numpy float32 answers as the same Python float; an integer too large for a
float reads as infinite and is refused as such), numbers written as text (a query string, a
command-line word), arrays of queries, rows of features, feature names and column indices.
A wrong *type* raises :class:`~polydom.errors.ArgumentTypeError` (a ``TypeError``), a wrong
*value* :class:`~polydom.errors.InvalidArgumentError` (a ``ValueError``); both name the
argument and show the value.  Importing this module loads no numpy (the command line's
argument types import it before parsing): numpy loads with the first array checked.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import TYPE_CHECKING, Any

from polydom.errors import ArgumentTypeError, InvalidArgumentError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "check_budget",
    "check_budgets",
    "check_column",
    "check_domain",
    "check_feature_name",
    "check_queries",
    "check_query",
    "check_real",
    "check_rows",
    "check_size",
    "check_sizes",
    "real_from_text",
    "shown",
]


def _is_bool(value: Any) -> bool:
    """Whether ``value`` is a bool (Python's or numpy's): not a number here."""
    np = sys.modules.get("numpy")
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_real(value: Any, name: str) -> float:
    """``value`` as a Python float when it is one real number, else ``TypeError``.

    Accepted: ``int``, ``float``, numpy integers and floats, ``fractions.Fraction``, 0-d
    numeric arrays.  Refused: ``bool`` (``True`` is not a size), strings, complex numbers,
    arrays with more than one element, ``None``.  NaN and infinity pass (range checks are
    the caller's).

    Runtime complexity: O(1).

    >>> check_real(2, "size")
    2.0
    """
    np = sys.modules.get("numpy")  # not loaded: no value can be a numpy one
    if np is not None and isinstance(value, np.ndarray) and value.ndim == 0 and (
            value.dtype.kind in "iuf"):
        value = value.item()
    if _is_bool(value) or not isinstance(value, numbers.Real):
        if np is not None and isinstance(value, np.ndarray):
            raise ArgumentTypeError(
                f"{name} must be a single real number, got an array of shape {value.shape}"
            )
        raise ArgumentTypeError(
            f"{name} must be a real number, got {shown(value)} ({type(value).__name__})"
        )
    try:
        return float(value)
    except OverflowError:  # an integer (or Fraction) beyond the float range
        return math.inf if value > 0 else -math.inf


def real_from_text(value: Any, name: str) -> float:
    """``value`` as a float when it is a real number or text spelling one (``"5"``,
    ``"1e-3"``), as a query string or a command-line word gives it; else ``TypeError`` /
    ``ValueError`` naming ``name``.

    Text that overflows (``"1e400"``, 400 digits) reads as infinite, as does an integer
    too large for a float; NaN and infinity pass (range checks are the caller's:
    :func:`check_size`, :func:`check_budget`).

    Runtime complexity: O(len(value)).

    >>> real_from_text("2.5e-3", "budget"), real_from_text(3, "size")
    (0.0025, 3.0)
    >>> real_from_text("9" * 400, "size")
    inf
    """
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            raise InvalidArgumentError(f"{name} must be a number, got {shown(value)}") from None
    return check_real(value, name)


def check_domain(n_min: float, n_max: float) -> tuple[float, float]:
    """Return ``(n_min, n_max)`` as floats; ``0 <= n_min <= n_max``, ``n_min`` finite."""
    lo, hi = check_real(n_min, "n_min"), check_real(n_max, "n_max")
    if not (math.isfinite(lo) and lo >= 0.0):
        raise InvalidArgumentError(f"n_min must be finite and >= 0, got {n_min!r}")
    if math.isnan(hi) or hi < lo:
        raise InvalidArgumentError(f"n_max must be >= n_min={lo!r}, got {n_max!r}")
    return lo, hi


def check_size(size: float, lo: float, hi: float) -> float:
    """Return ``size`` as a float, or raise naming it when NaN, infinite or outside ``[lo, hi]``."""
    n = check_real(size, "size")
    if not math.isfinite(n) or n < 0.0:
        raise InvalidArgumentError(f"size must be finite and >= 0, got {shown(size)}")
    if not lo <= n <= hi:
        raise InvalidArgumentError(
            f"size {shown(size)} is outside the index domain [{lo!r}, {hi!r}]")
    return n


def check_budget(budget: float) -> float:
    """Return ``budget`` as a float, or raise naming it when NaN, infinite or negative."""
    b = check_real(budget, "budget")
    if not (math.isfinite(b) and b >= 0.0):
        raise InvalidArgumentError(f"budget must be finite and >= 0, got {shown(budget)}")
    return b


#: The largest finite float: a budget up to it needs no further check.
_MAX_FLOAT = sys.float_info.max


def check_query(size: Any, budget: Any, lo: float, hi: float) -> tuple[float, float]:
    """One lookup's ``(size, budget)`` checked (:func:`check_size`, :func:`check_budget`) as
    Python floats.

    Python floats inside the domain and finite budgets >= 0 pass after four comparisons
    (the lookup hot path); everything else (ints, numpy scalars, float32 whose arithmetic
    would round differently, junk) is checked and cast to a Python float.

    Runtime complexity: O(1).

    >>> check_query(2, 0.5, 0.0, 10.0)
    (2.0, 0.5)
    """
    if (type(size) is float and type(budget) is float and lo <= size <= hi
            and size <= _MAX_FLOAT and 0.0 <= budget <= _MAX_FLOAT):
        return size, budget
    return check_size(size, lo, hi), check_budget(budget)


def _real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array of real numbers (``TypeError`` / ``ValueError`` else)."""
    import numpy as np  # numpy loads with the first array checked
    if isinstance(values, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be an array of real numbers, got {shown(values)}")
    try:
        arr = np.asarray(values)
    except ValueError:
        raise InvalidArgumentError(
            f"{name} must be a rectangular array of real numbers (not ragged), "
            f"got {shown(values)}"
        ) from None
    if arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(
            f"{name} must be an array of real numbers, got dtype {arr.dtype} "
            f"({shown(values)})"
        )
    return arr.astype(np.float64, copy=False)


def check_sizes(sizes: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Vector form of :func:`check_size` (float64); the error names the first bad element."""
    import numpy as np  # numpy loads with the first array checked
    n = _real_array(sizes, "sizes")
    bad = ~(np.isfinite(n) & (n >= lo) & (n <= hi))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise InvalidArgumentError(
            f"sizes[{k}] must be finite and inside the index domain [{lo!r}, {hi!r}], "
            f"got {n.ravel()[k]!r}"
        )
    return n


def check_budgets(budgets: np.ndarray) -> np.ndarray:
    """Vector form of :func:`check_budget` (float64); the error names the first bad element."""
    import numpy as np  # numpy loads with the first array checked
    b = _real_array(budgets, "budgets")
    bad = ~(np.isfinite(b) & (b >= 0.0))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise InvalidArgumentError(f"budgets[{k}] must be finite and >= 0, got {b.ravel()[k]!r}")
    return b


def check_rows(rows: Any, width: int, name: str = "rows", allow_nan: bool = False
               ) -> np.ndarray:
    """``rows`` as a 2-D float64 array of finite numbers, ``width`` columns each.

    The rows of a feature matrix handed to a model: every cell a real number (not a bool,
    not text, not None), finite (an integer too large for a float overflows and is refused
    like ``inf``), every row ``width`` long.  NaN is refused unless ``allow_nan``: in Python
    it marks a feature not computed (:meth:`polydom.Featurizer.transform`'s full-width
    rows), which a model that does not use that column never sees.  The error names the
    first bad cell as ``rows[i][j]``.

    Runtime complexity: O(rows * width).

    >>> check_rows([[1, 2.5]], 2)
    array([[1. , 2.5]])

    Raises
    ------
    TypeError
        When a cell is not a real number.
    ValueError
        When the rows are ragged or empty, not ``width`` wide, or a cell is not finite.
    """
    import numpy as np  # numpy loads with the first array checked
    if isinstance(rows, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be a 2-D array of numbers, got {shown(rows)}")
    try:
        try:
            arr = np.asarray(rows)
        except OverflowError:  # an integer beyond int64 next to floats: cell by cell below
            arr = np.array(rows, dtype=object)
    except (ValueError, TypeError):
        raise InvalidArgumentError(
            f"{name} must be rows of {width} numbers each (not ragged), got {shown(rows)}"
        ) from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != width:
        raise InvalidArgumentError(
            f"{name} must be a non-empty list of rows of {width} numbers each, got shape "
            f"{list(arr.shape)}")
    if not isinstance(rows, np.ndarray) or arr.dtype.kind not in "iuf":
        # cell by cell: numpy reads True as 1.0 and, next to text, every number as text
        for i, row in enumerate(arr.tolist() if isinstance(rows, np.ndarray) else rows):
            for j, v in enumerate(row):
                if _is_bool(v) or not isinstance(v, numbers.Real):
                    raise ArgumentTypeError(
                        f"{name}[{i}][{j}] must be a real number, got {shown(v)}")
    if arr.dtype.kind == "O":  # Python ints beyond int64: each a float, or inf beyond
        arr = np.array([[check_real(v, name) for v in row] for row in arr.tolist()],
                       dtype=np.float64)
    arr = arr.astype(np.float64, copy=False)
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        value = float(arr[i, j])
        too_large = " (too large for a float)" if math.isinf(value) else ""
        raise InvalidArgumentError(
            f"{name}[{i}][{j}] must be a finite number, got {value!r}{too_large}")
    return arr


def check_queries(sizes: Any, budgets: Any, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``sizes`` and ``budgets`` broadcast to one shape (float64 arrays).

    Runtime complexity: O(Q) for Q queries.

    Raises
    ------
    TypeError
        When either is not an array of real numbers (strings, complex, objects).
    ValueError
        When either is ragged, a value is out of range, or the shapes do not broadcast.
    """
    import numpy as np  # numpy loads with the first array checked
    n = check_sizes(sizes, lo, hi)
    b = check_budgets(budgets)
    try:
        return np.broadcast_arrays(n, b)
    except ValueError:
        raise InvalidArgumentError(
            f"sizes of shape {n.shape} and budgets of shape {b.shape} do not broadcast "
            "to one shape"
        ) from None


def check_feature_name(name: Any, what: str = "feature name") -> str:
    """``name`` when it is a non-blank string, else ``TypeError`` / ``ValueError``.

    Runtime complexity: O(len(name)).
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"{what} must be a string, got {shown(name)} ({type(name).__name__})")
    if not name.strip():
        raise InvalidArgumentError(f"{what} must be a non-empty string, got {name!r}")
    return name


def check_column(value: Any, what: str) -> int:
    """``value`` as an int when it is an integer column index (not bool, not 2.0 or "3")."""
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{what} must be an integer column index, got {shown(value)} "
            f"({type(value).__name__})"
        )
    return int(value)
