"""Column groups: validation of a learner's feature -> columns mapping (its one home)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from polydom.curves.domain import check_column, check_feature_name, shown
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["column_groups", "normalize_features"]


def normalize_features(
    features: Mapping[str, Sequence[int]] | Sequence[str] | None,
    n_columns: int,
    cover: bool = False,
    what: str = "features",
) -> dict[str, list[int]]:
    """Return the feature -> columns mapping of a learner, validated.

    ``None`` names each column ``"x<i>"``; a sequence of names gives one column each (in
    order); a mapping gives each feature its column indices.  Every column may belong to at
    most one feature, every index must be in ``[0, n_columns)`` and every feature needs one
    column at least; with ``cover`` every column must belong to a feature.  Names are
    non-blank strings and columns integers (``2.0``, ``"3"``, ``True`` are refused).  Errors
    name the argument as ``what``.

    Runtime complexity: O(total columns).

    >>> normalize_features({"a": range(2), "b": [2]}, 4)
    {'a': [0, 1], 'b': [2]}
    >>> normalize_features(["u", "v"], 2)
    {'u': [0], 'v': [1]}

    Raises
    ------
    TypeError
        Naming the feature: a name that is not a string, a column that is not an integer,
        columns that are not a sequence.
    ValueError
        Naming the feature and the column: a column outside ``[0, n_columns)`` or in two
        features, a feature without columns, a blank name, an uncovered column (with
        ``cover``).
    """
    if features is None:
        return {f"x{i}": [i] for i in range(n_columns)}
    if isinstance(features, str) or not isinstance(features, (Mapping, Iterable)):
        raise ArgumentTypeError(
            f"{what} must be a mapping or a sequence of names, got {shown(features)}")
    if isinstance(features, Mapping):
        mapping = {}
        for name, cols in features.items():
            check_feature_name(name, f"a feature name of {what}")
            if isinstance(cols, (str, bytes)) or not isinstance(cols, Iterable):
                raise ArgumentTypeError(
                    f"{what}[{name!r}] must be a sequence of column indices, got {cols!r}"
                )
            mapping[name] = [check_column(c, f"a column of {what}[{name!r}]")
                             for c in np.asarray(list(cols)).ravel()]
    else:
        names = list(features)
        if len(names) != n_columns:
            raise InvalidArgumentError(
                f"{what} as a list of names needs one name per column ({n_columns}), "
                f"got {len(names)}"
            )
        mapping = {name: [i] for i, name in enumerate(names)}
    seen: dict[int, str] = {}
    for name, cols in mapping.items():
        check_feature_name(name, f"a feature name of {what}")
        if not cols:
            raise InvalidArgumentError(f"{what}[{name!r}] has no columns (empty)")
        for c in cols:
            if not 0 <= c < n_columns:
                raise InvalidArgumentError(
                    f"{what}[{name!r}] names column {c}, outside [0, {n_columns})"
                )
            if c in seen:
                raise InvalidArgumentError(
                    f"{what}: column {c} belongs to both {seen[c]!r} and {name!r}")
            seen[c] = name
    if cover and len(seen) < n_columns:
        missing = sorted(set(range(n_columns)) - set(seen))
        raise InvalidArgumentError(
            f"{what} must cover every column; columns {missing} are in no feature"
        )
    return mapping


def column_groups(
    feature_groups: Mapping[str, Sequence[int]] | None, n_columns: int
) -> dict[str, list[int]]:
    """A budgeted learner's ``feature_groups``, validated: every column in exactly one group.

    ``None`` gives one group per column, named ``"x0"``, ``"x1"``, ...

    Runtime complexity: O(n_columns).

    >>> column_groups(None, 2)
    {'x0': [0], 'x1': [1]}

    Raises
    ------
    ValueError
        As :func:`normalize_features` with ``cover=True``, or if ``feature_groups`` is not a
        mapping.
    """
    if feature_groups is not None and not isinstance(feature_groups, Mapping):
        raise InvalidArgumentError(
            f"feature_groups must be a mapping name -> columns, got {feature_groups!r}"
        )
    return {
        str(k): v
        for k, v in normalize_features(feature_groups, n_columns, True, "feature_groups").items()
    }
