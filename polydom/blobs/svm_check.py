"""Check a stored scikit-learn libsvm model's fitted state before scikit-learn may run it.

``SVC``, ``NuSVC``, ``SVR``, ``NuSVR`` and ``OneClassSVM`` predict by handing their fitted
arrays to libsvm (compiled code), which trusts their sizes: the number of classes is the
length of ``_n_support``, the support vectors of class ``i`` are the next ``_n_support[i]``
rows, ``_dual_coef_`` must have ``k - 1`` rows of ``l`` coefficients, ``_intercept_`` one
value per pair of classes, and with a precomputed kernel ``support_`` indexes the columns
of the kernel rows given to ``predict``.  scikit-learn checks one of these (``_n_support``
summing to the number of support vectors, and only when there are support vectors); a
stored model that breaks another reads out of bounds: it returns garbage or crashes the
process (tests/test_storage/test_hardening_svm.py shows both under bare skops).
:func:`svm_state_problem` checks the state an estimator is built from, before it is built:

* an estimator without any of the fitted arrays below is not fitted (libsvm reads
  nothing of it: a meta-estimator's parameter); otherwise all of them are checked;
* ``_sparse`` is false (sparse support vectors are not stored: the allow-list refuses
  sparse matrices), ``kernel`` is one of libsvm's names, the state does not set ``_impl``
  (the formulation is the class's);
* ``support_`` and ``_n_support`` are int32 vectors, the other arrays float64 and
  C-contiguous; with ``l = len(support_)`` and ``k = len(_n_support)``:
  classifiers have ``2 <= k <= MAX_CLASSES`` classes (``len(classes_) == k``), counts
  ``>= 0`` summing to ``l``, ``_dual_coef_`` of shape ``(k - 1, l)``, ``_intercept_`` and
  (when present) ``_probA``/``_probB`` of ``k (k - 1) / 2`` values; regressors and the
  one-class model have ``_n_support == [l, l]``, ``_dual_coef_`` of shape ``(1, l)`` and one
  intercept;
* ``shape_fit_`` is two positive sizes, ``support_`` indexes ``[0, shape_fit_[0])``, the
  support vectors are ``(l, n_features_in_)`` (no rows for a precomputed kernel, whose
  ``shape_fit_`` is square), ``_gamma``, ``coef0`` finite and ``degree`` in
  ``[0, MAX_DEGREE]``.

Runtime complexity: O(l + k) numpy work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["KERNELS", "MAX_CLASSES", "MAX_DEGREE", "MAX_SAMPLES", "libsvm_impl",
           "svm_state_problem"]

#: libsvm's kernels, by the names scikit-learn stores (a callable kernel is a function:
#: the allow-list refuses it before this check).
KERNELS = ("linear", "poly", "rbf", "sigmoid", "precomputed")
#: Bounds on what a stored libsvm model may declare (libsvm counts in C ints).
MAX_CLASSES = 10**4
MAX_SAMPLES = 2**31 - 1
MAX_DEGREE = 1000
_CLASSIFIERS = ("c_svc", "nu_svc")
_REGRESSORS = ("one_class", "epsilon_svr", "nu_svr")
_BASE = "sklearn.svm._base.BaseLibSVM"
#: The fitted arrays libsvm reads: name, dtype, dimensions.
_ARRAYS = (("support_", np.int32, 1), ("_n_support", np.int32, 1),
           ("support_vectors_", np.float64, 2), ("_dual_coef_", np.float64, 2),
           ("_intercept_", np.float64, 1), ("_probA", np.float64, 1), ("_probB", np.float64, 1))


def libsvm_impl(cls: type) -> str | None:
    """The libsvm formulation (``"c_svc"``, ``"epsilon_svr"``, ...) of a scikit-learn
    libsvm estimator class or subclass; None for any other class.  Reads the class's MRO
    (imports nothing)."""
    if not any(f"{c.__module__}.{c.__qualname__}" == _BASE for c in cls.__mro__):
        return None
    impl = getattr(cls, "_impl", None)
    return impl if impl in _CLASSIFIERS + _REGRESSORS else None


def _array(state: Mapping[str, Any], name: str, dtype: type, ndim: int) -> np.ndarray | str:
    value = state.get(name)
    if not isinstance(value, np.ndarray):
        return f"{name} is not a stored array"
    if value.dtype != np.dtype(dtype) or value.ndim != ndim or not value.flags.c_contiguous:
        return (f"{name} of dtype {value.dtype} and shape {value.shape} is not a "
                f"C-ordered {np.dtype(dtype)} array of {ndim} dimensions")
    return value


def _integer(value: object, low: int, high: int) -> bool:
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and low <= int(value) <= high)


def _finite(value: object) -> bool:
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind == "f":
        value = float(value)
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def svm_state_problem(impl: str, state: Mapping[str, Any]) -> str | None:
    """What is wrong with a stored libsvm estimator's state (None: libsvm may read it).

    ``impl`` is the class's formulation (:func:`libsvm_impl`); ``state`` maps each stored
    attribute to its value: JSON values as Python values, arrays as numpy arrays, tuples as
    lists, anything else as a text naming its kind.

    Runtime complexity: O(l + k) for l support vectors and k classes.
    """
    if "_impl" in state:
        return "its state sets _impl (the libsvm formulation is its class's)"
    if not any(name in state for name, _, _ in _ARRAYS):
        return None  # not fitted (a parameter of a meta-estimator): libsvm reads nothing
    if state.get("_sparse") is not False:
        return f"_sparse is {state.get('_sparse')!r}, not false (sparse models are not stored)"
    kernel = state.get("kernel")
    if kernel not in KERNELS:
        return f"kernel {kernel!r} is not one of {KERNELS}"
    arrays = {}
    for name, dtype, ndim in _ARRAYS:
        found = _array(state, name, dtype, ndim)
        if isinstance(found, str):
            return found
        arrays[name] = found
    support, n_support = arrays["support_"], arrays["_n_support"]
    count, k = len(support), len(n_support)
    if impl in _CLASSIFIERS:
        if not 2 <= k <= MAX_CLASSES:
            return f"_n_support names {k} classes, not 2 to {MAX_CLASSES}"
        classes = state.get("classes_")
        if not isinstance(classes, np.ndarray) or classes.shape != (k,):
            return f"classes_ is not {k} classes, as _n_support has"
        if n_support.min() < 0 or int(n_support.sum(dtype=np.int64)) != count:
            return (f"_n_support {n_support[:8].tolist()} does not split the {count} "
                    "support vectors")
        rows, pairs = k - 1, k * (k - 1) // 2
    else:
        if k != 2 or np.any(n_support != count):
            return f"_n_support {n_support[:8].tolist()} is not [{count}, {count}]"
        rows, pairs = 1, 1
    if arrays["_dual_coef_"].shape != (rows, count):
        return (f"_dual_coef_ of shape {arrays['_dual_coef_'].shape} is not ({rows}, "
                f"{count})")
    if arrays["_intercept_"].shape != (pairs,):
        return f"_intercept_ of shape {arrays['_intercept_'].shape} is not ({pairs},)"
    probs = (arrays["_probA"].shape, arrays["_probB"].shape)
    if probs not in (((0,), (0,)), ((pairs,), (pairs,))):
        return f"_probA and _probB of shapes {probs} are not both (0,) or ({pairs},)"
    shape_fit = state.get("shape_fit_")
    if not (isinstance(shape_fit, list) and len(shape_fit) == 2
            and all(_integer(v, 1, MAX_SAMPLES) for v in shape_fit)):
        return f"shape_fit_ {str(shape_fit)[:60]} is not two sizes in [1, {MAX_SAMPLES}]"
    if count and (support.min() < 0 or support.max() >= shape_fit[0]):
        return f"support_ indexes rows outside [0, {shape_fit[0]})"
    vectors = arrays["support_vectors_"].shape
    if kernel == "precomputed":
        if shape_fit[1] != shape_fit[0] or vectors[0] != 0:
            return (f"a precomputed kernel with shape_fit_ {shape_fit} and support vectors "
                    f"of shape {vectors}")
    else:
        width = state.get("n_features_in_")
        if not _integer(width, 1, MAX_SAMPLES) or vectors != (count, width) or (
                shape_fit[1] != width):
            return (f"support vectors of shape {vectors} and shape_fit_ {shape_fit} do not "
                    f"match {count} vectors of n_features_in_ {width!r}")
    if not (_finite(state.get("_gamma")) and _finite(state.get("coef0"))):
        return "_gamma or coef0 is not a finite number"
    if not _integer(state.get("degree"), 0, MAX_DEGREE):
        return f"degree {state.get('degree')!r} is not in [0, {MAX_DEGREE}]"
    return None
