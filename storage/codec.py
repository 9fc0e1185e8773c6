"""Text forms of what a store keeps in columns: candidate keys, feature sets, parameters."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.errors import InvalidArgumentError

__all__ = [
    "canonical_json",
    "cost_expression",
    "digest",
    "encode_key",
    "decode_key",
    "feature_mask",
    "mask_features",
    "ordered_names",
    "stored_curve",
    "stored_curves",
]


def canonical_json(value: Any, what: str = "value") -> str:
    """JSON with sorted keys, no spaces; ``ValueError`` naming ``what`` if not JSON-able."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"{what} must be JSON-serialisable, got {value!r} ({exc})") from None


def digest(value: Any, what: str = "value") -> str:
    """sha256 hex of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value, what).encode()).hexdigest()


def _tag(key: Any) -> Any:
    if key is None or isinstance(key, (bool, str)):
        return key
    if isinstance(key, int):
        return int(key)
    if isinstance(key, float):
        return {"float": repr(key)} if not math.isfinite(key) else key
    if isinstance(key, tuple):
        return {"tuple": [_tag(k) for k in key]}
    if isinstance(key, frozenset):
        items = [_tag(k) for k in key]
        return {"frozenset": sorted(items, key=lambda t: canonical_json(t))}
    raise InvalidArgumentError(
        f"candidate key {key!r} of type {type(key).__name__} cannot be stored; "
        "use str, int, float, bool, None, or tuples/frozensets of those"
    )


def _untag(value: Any) -> Any:
    if isinstance(value, list):  # pragma: no cover - never written
        raise InvalidArgumentError(f"malformed stored key element {value!r}")
    if isinstance(value, dict):
        ((tag, inner),) = value.items()
        if tag == "tuple":
            return tuple(_untag(v) for v in inner)
        if tag == "frozenset":
            return frozenset(_untag(v) for v in inner)
        if tag == "float":
            return float(inner)
        raise InvalidArgumentError(f"malformed stored key tag {tag!r}")
    return value


def encode_key(key: Hashable) -> str:
    """A JSON text from which :func:`decode_key` rebuilds ``key`` exactly.

    >>> decode_key(encode_key(frozenset({"a", "b"}))) == frozenset({"a", "b"})
    True
    """
    return canonical_json(_tag(key), "candidate key")


def decode_key(text: str) -> Hashable:
    """Inverse of :func:`encode_key`."""
    if text[:1] == '"' and "\\" not in text:  # a plain string: skip the JSON parser
        return text[1:-1]
    return _untag(json.loads(text))


def feature_mask(names: Iterable[str], order: Sequence[str]) -> str | None:
    """Hex bitmask of ``names`` over ``order`` (bit i: ``order[i]``); None if a name is unknown.

    >>> feature_mask({"b", "c"}, ["a", "b", "c"])
    '6'
    """
    position = {name: i for i, name in enumerate(order)}
    mask = 0
    for name in names:
        if name not in position:
            return None
        mask |= 1 << position[name]
    return format(mask, "x")


def mask_features(mask: str, order: Sequence[str]) -> frozenset:
    """Names of the bits set in a hex ``mask`` over ``order``."""
    bits = int(mask, 16)
    return frozenset(name for i, name in enumerate(order) if bits >> i & 1)


def ordered_names(features: Iterable[str], order: Sequence[str]) -> list[str]:
    """Names of ``features`` in the order of ``order``; names outside it last, sorted.

    Runtime complexity: O(len(order) + k log k) for k names outside ``order``.

    >>> ordered_names({"c", "a", "z"}, ["a", "b", "c"])
    ['a', 'c', 'z']
    """
    features = set(features)
    known = set(order)
    return [name for name in order if name in features] + sorted(
        str(f) for f in features if f not in known
    )


def stored_curve(coefficients: dict[int, float], what: str) -> CostCurve:
    """A cost curve from stored ``{degree: coefficient}`` rows (missing degrees are 0).

    Runtime complexity: O(degree).

    >>> stored_curve({0: 1.0, 2: 3.0}, "x").coefficients.tolist()
    [1.0, 0.0, 3.0]

    Raises
    ------
    ValueError
        Naming ``what`` when there are no rows or a degree is negative.
    """
    if not coefficients or min(coefficients) < 0:
        raise InvalidArgumentError(
            f"stored cost coefficients of {what} are missing or malformed: "
            f"{coefficients!r}")
    coefs = [0.0] * (max(coefficients) + 1)
    for k, v in coefficients.items():
        coefs[k] = float(v)
    return CostCurve(coefs)


def stored_curves(
    ids: Sequence[int], rows: Sequence[tuple[int, int, float]], what: str
) -> list[CostCurve]:
    """Cost curves of many candidates from their stored ``(id, degree, coefficient)`` rows.

    The rows are scattered into one coefficient matrix (missing degrees are 0) and turned
    into curves with :meth:`CostCurve.from_rows`; the result follows ``ids``.

    Runtime complexity: O(R + K * d) vectorised for R rows and K ids of degree d, plus
    O(d) per curve.

    >>> [c.coefficients.tolist() for c in stored_curves([7, 3], [(3, 0, 1.0), (7, 1, 2.0)], "x")]
    [[0.0, 2.0], [1.0]]

    Raises
    ------
    ValueError
        Naming ``what`` and the id when an id has no rows or a degree is negative.
    """
    k = len(ids)
    if not rows or not k:
        if k:
            raise InvalidArgumentError(f"stored cost coefficients of {what} {ids[0]!r} are missing")
        return []
    owner, degree, coef = (np.asarray(col) for col in zip(*rows, strict=True))
    owner = owner.astype(np.int64)
    degree = degree.astype(np.int64)
    wanted = np.asarray(ids, dtype=np.int64)
    order = np.argsort(wanted, kind="stable")
    at = np.searchsorted(wanted, owner, sorter=order)
    at = np.minimum(at, k - 1)
    pos = order[at]
    known = wanted[pos] == owner
    if (degree < 0).any():
        bad = int(owner[np.flatnonzero(degree < 0)[0]])
        raise InvalidArgumentError(
            f"stored cost coefficients of {what} {bad!r} are malformed: "
            f"negative degree")
    matrix = np.zeros((k, int(degree.max()) + 1))
    matrix[pos[known], degree[known]] = coef[known].astype(np.float64)
    covered = np.zeros(k, dtype=bool)
    covered[pos[known]] = True
    if not covered.all():
        raise InvalidArgumentError(
            f"stored cost coefficients of {what} "
            f"{ids[int(np.flatnonzero(~covered)[0])]!r} are missing")
    return CostCurve.from_rows(matrix)


def cost_expression(curve: CostCurve) -> str:
    """The curve as text in sympy's order and notation, shortest round-tripping decimals.

    Highest degree first, ``c*n**k`` terms, integral coefficients without a decimal point;
    ``CostCurve.parse`` of the text gives back the same coefficients.  Written directly
    (sympy's printer costs about 10 ms a curve, too slow for 10**4 candidates): the text
    of :func:`polydom.curves.curve_text.curve_text`, which ``str(curve)`` gives.

    Runtime complexity: O(degree).

    >>> cost_expression(CostCurve([3.0, 0.5 + 0.4, 0.001]))
    '0.001*n**2 + 0.9*n + 3'
    >>> cost_expression(CostCurve([-1.0, 0.0, 1.0]))
    'n**2 - 1'
    """
    return str(curve)
