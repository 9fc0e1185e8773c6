"""Column groups: validation of a learner's feature -> columns mapping (its one home)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from polydom.curves.domain import check_column, check_feature_name, shown

__all__ = ["normalize_features"]


def normalize_features(
    features: Mapping[str, Sequence[int]] | Sequence[str] | None, n_columns: int
) -> dict[str, list[int]]:
    """Return the feature -> columns mapping of a learner, validated.

    ``None`` names each column ``"x<i>"``; a sequence of names gives one column each (in
    order); a mapping gives each feature its column indices.  Every column may belong to at
    most one feature, every index must be in ``[0, n_columns)`` and every feature needs one
    column at least.  Names are non-blank strings and columns integers (``2.0``, ``"3"`` and
    ``True`` are refused with a ``TypeError`` naming the feature).

    Runtime complexity: O(total columns).
    """
    if features is None:
        return {f"x{i}": [i] for i in range(n_columns)}
    if isinstance(features, str) or not isinstance(features, (Mapping, Iterable)):
        raise TypeError(
            f"features must be a mapping or a sequence of names, got {shown(features)}"
        )
    if isinstance(features, Mapping):
        mapping = {}
        for name, cols in features.items():
            check_feature_name(name)
            if isinstance(cols, (str, bytes)) or not isinstance(cols, Iterable):
                raise TypeError(
                    f"features[{name!r}] must be a sequence of column indices, got {cols!r}"
                )
            mapping[name] = [check_column(c, f"a column of features[{name!r}]") for c in cols]
    else:
        names = list(features)
        if len(names) != n_columns:
            raise ValueError(
                f"features as a list of names needs one name per column ({n_columns}), "
                f"got {len(names)}"
            )
        mapping = {name: [i] for i, name in enumerate(names)}
    seen: dict[int, str] = {}
    for name, cols in mapping.items():
        check_feature_name(name)
        if not cols:
            raise ValueError(f"feature {name!r} has no columns")
        for c in cols:
            if not 0 <= c < n_columns:
                raise ValueError(
                    f"feature {name!r} names column {c}, outside [0, {n_columns})"
                )
            if c in seen:
                raise ValueError(f"column {c} belongs to both {seen[c]!r} and {name!r}")
            seen[c] = name
    return mapping
