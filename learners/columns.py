"""Column groups: validation of a learner's feature -> columns mapping (its one home)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["normalize_features"]


def normalize_features(
    features: Mapping[str, Sequence[int]] | Sequence[str] | None, n_columns: int
) -> dict[str, list[int]]:
    """Return the feature -> columns mapping of a learner, validated.

    ``None`` names each column ``"x<i>"``; a sequence of names gives one column each (in
    order); a mapping gives each feature its column indices.  Every column may belong to at
    most one feature, every index must be in ``[0, n_columns)`` and every feature needs one
    column at least.

    Runtime complexity: O(total columns).
    """
    if features is None:
        return {f"x{i}": [i] for i in range(n_columns)}
    if isinstance(features, str):
        raise ValueError(f"features must be a mapping or a sequence of names, got {features!r}")
    if isinstance(features, Mapping):
        mapping = {}
        for name, cols in features.items():
            if isinstance(cols, (int, str)):
                raise ValueError(
                    f"features[{name!r}] must be a sequence of column indices, got {cols!r}"
                )
            mapping[name] = [int(c) for c in cols]
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
        if not isinstance(name, str):
            raise ValueError(f"feature names must be strings, got {name!r}")
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
