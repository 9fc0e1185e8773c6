"""Argument checks of the public entry points, with errors that name the argument and value.

The one home of input validation, called by every door: the public Python functions
(:meth:`polydom.Index.lookup`, ``lookup_many``, ``predict``, ``explain``,
:func:`polydom.serving.predict_item`), the command line's argument types and the HTTP handlers.
What a door passed through these checks is trusted inside (the inner calls take
``check_input=False``, as scikit-learn's estimators do), so each check runs once.

Constraints are declared once, as data (the way scikit-learn declares
``_parameter_constraints``): :data:`CONSTRAINTS` maps a field (``size``, ``budget``,
``overrun``, ...) to an :class:`Interval`, and :func:`check_field` (one value) and
:func:`check_field_array` (an array) are the one checker every door and every inner module
calls, worded the same everywhere: ``budget must be finite and >= 0, got -1.0``.  Nothing
else in the project compares a size or a budget with 0 (``tests/test_layout.py`` scans for
it).

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polydom.errors import ArgumentTypeError, InvalidArgumentError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CONSTRAINTS",
    "Interval",
    "check_field",
    "check_field_array",
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


@dataclass(frozen=True, slots=True)
class Interval:
    """A constraint on a real number: inside ``[low, high]`` (ends open as ``closed`` says:
    ``"both"``, ``"left"``, ``"right"``, ``"neither"``), and finite.

    >>> Interval(0.0).holds(2.5), Interval(0.0).holds(float("inf")), Interval(0.0).text
    (True, False, 'finite and >= 0')
    >>> Interval(0.0, 1.0, "neither").text
    'a number in (0, 1)'
    """

    low: float = -math.inf
    high: float = math.inf
    closed: str = "both"

    def holds(self, v: float) -> bool:
        """Whether the float ``v`` satisfies the constraint (NaN never does).  O(1)."""
        if not math.isfinite(v):
            return False
        lo_ok = v >= self.low if self.closed in ("both", "left") else v > self.low
        hi_ok = v <= self.high if self.closed in ("both", "right") else v < self.high
        return lo_ok and hi_ok

    @property
    def text(self) -> str:
        """The constraint in words, as every refusal says it."""
        if self.high == math.inf:
            sign = ">=" if self.closed in ("both", "left") else ">"
            return f"finite and {sign} {self.low:g}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"


#: The constraint of every checked number, by field, declared once: what a door takes and
#: what the inner modules check arrays of (sizes of timings, a featurizer's sizes, budgets of
#: a plan).  A field's domain (the index's ``[n_min, n_max]`` for a size) is the caller's
#: second check, :func:`check_size`.
CONSTRAINTS: Mapping[str, Interval] = {
    "size": Interval(0.0),
    "sizes": Interval(0.0),
    "budget": Interval(0.0),
    "budgets": Interval(0.0),
    "overrun": Interval(0.0, 1.0, "neither"),
    "seconds": Interval(0.0),
}


def check_field(value: Any, name: str, field: str | None = None, given: Any = None) -> float:
    """``value`` as a float when it meets the constraint of ``field`` (default ``name``) in
    :data:`CONSTRAINTS`; else an error naming ``name`` and the value.

    The one checker of a number: a wrong type is :class:`~polydom.errors.ArgumentTypeError`
    (:func:`check_real`), a value outside the constraint
    :class:`~polydom.errors.InvalidArgumentError` worded ``{name} must be {constraint},
    got {value}`` (``given``: the value as the user wrote it, the text a number was read
    from, shown instead).  Runtime complexity: O(1).

    >>> check_field(2, "budget")
    2.0
    >>> check_field(-1, "budget")
    Traceback (most recent call last):
    ...
    polydom.errors.InvalidArgumentError: budget must be finite and >= 0, got -1
    """
    constraint = CONSTRAINTS[field or name]
    v = check_real(value, name)
    if not constraint.holds(v):
        raise InvalidArgumentError(
            f"{name} must be {constraint.text}, got {shown(value if given is None else given)}")
    return v


def check_field_array(values: Any, name: str, field: str | None = None,
                      lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """``values`` as a float64 array when every element meets the constraint of ``field``
    (default ``name``) and, when given, lies in the domain ``[lo, hi]``; the refusal names
    the first bad element as ``name[k]``.  Runtime complexity: O(len(values)).

    >>> check_field_array([1, 2.5], "sizes").tolist()
    [1.0, 2.5]
    """
    import numpy as np  # numpy loads with the first array checked
    constraint = CONSTRAINTS[field or name]
    a = _real_array(values, name)
    flat = a.ravel()
    low = constraint.low if lo is None else max(lo, constraint.low)
    high = constraint.high if hi is None else min(hi, constraint.high)
    inside = Interval(low, high, constraint.closed if lo is None and hi is None else "both")
    ok = np.isfinite(flat)
    ok &= (flat >= inside.low) if inside.closed in ("both", "left") else (flat > inside.low)
    ok &= (flat <= inside.high) if inside.closed in ("both", "right") else (flat < inside.high)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        where = (f"finite and inside the index domain [{lo!r}, {hi!r}]"
                 if lo is not None or hi is not None else constraint.text)
        raise InvalidArgumentError(f"{name}[{k}] must be {where}, got {float(flat[k])!r}")
    return a


def check_domain(n_min: float, n_max: float) -> tuple[float, float]:
    """Return ``(n_min, n_max)`` as floats; ``0 <= n_min <= n_max``, ``n_min`` finite."""
    lo, hi = check_field(n_min, "n_min", "size"), check_real(n_max, "n_max")
    if math.isnan(hi) or hi < lo:
        raise InvalidArgumentError(f"n_max must be >= n_min={lo!r}, got {n_max!r}")
    return lo, hi


def check_size(size: float, lo: float, hi: float) -> float:
    """Return ``size`` as a float, or raise naming it when NaN, infinite or outside ``[lo, hi]``."""
    n = check_field(size, "size")
    if not lo <= n <= hi:
        raise InvalidArgumentError(
            f"size {shown(size)} is outside the index domain [{lo!r}, {hi!r}]")
    return n


def check_budget(budget: float) -> float:
    """Return ``budget`` as a float, or raise naming it when NaN, infinite or negative."""
    return check_field(budget, "budget")


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
    return check_field_array(sizes, "sizes", lo=lo, hi=hi)


def check_budgets(budgets: np.ndarray) -> np.ndarray:
    """Vector form of :func:`check_budget` (float64); the error names the first bad element."""
    return check_field_array(budgets, "budgets")


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
