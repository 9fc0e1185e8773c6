"""CandidateArrays: many candidates as columns (keys, accuracies, a coefficient matrix, ...).

A pool of 10**6 :class:`~polydom.curves.candidate.Candidate` objects costs about a gigabyte
and seconds of checks one by one; the index only reads their coefficients, accuracies and
keys until it knows which candidates a lookup can return.  A :class:`CandidateArrays` holds
the pool as arrays, checked as whole columns with the checks and messages of
``Candidate(...)`` (the first bad candidate is named), and makes a ``Candidate`` only for the
positions asked for (:meth:`CandidateArrays.candidate`): the index builds the skyline's
candidates, the store keeps the rest as these arrays.

The columns (``K`` candidates):

* ``keys``: K hashable keys (unique within an index);
* ``accuracies``: float (K,) in [0, 1]; ``accuracy_ses``: float (K,) >= 0 (default 0);
* ``coefficients``: float (K, L), lowest degree first, zero-padded (the cost curves);
* ``features``: bool (K, F) over ``feature_names`` (default: no features);
* ``needs``: float (K, A) over ``atoms``, the probability that each atom is needed, 0 for
  an atom not needed (default: each feature with probability 1, ``atoms`` the feature
  names);
* ``learners``: None, one name for all, or K names (None allowed);
* ``fold_scores``: float (K, S) in [0, 1], or K sequences of such numbers (of any
  lengths); held as ``fold_values`` (all scores, candidate after candidate) and
  ``fold_offsets`` (K + 1) (default: none);
* ``payloads``: K objects (default None).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_feature_name
from polydom.curves.poly import MAX_DEGREE
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["CandidateArrays"]

_SMALLEST_NORMAL = np.finfo(np.float64).tiny


def _float_matrix(value: Any, what: str, ndim: int) -> np.ndarray:
    """``value`` as a float64 array of ``ndim`` dimensions (real numbers only)."""
    arr = np.asarray(value)
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"{what} must be real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != ndim:
        raise InvalidArgumentError(f"{what} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


class CandidateArrays(Sequence):
    """Candidates as columns, checked at once; a ``Candidate`` is made per position asked.

    A sequence of :class:`Candidate` (``len``, ``pool[i]``, iteration make them; each is
    what ``Candidate(keys[i], accuracies[i], coefficients[i], ...)`` gives), accepted by
    :meth:`polydom.PolyDomIndex.build` and :func:`polydom.build_index` in place of a list:
    the index then makes only its skyline's candidates.

    Parameters are the columns of the module docstring.

    Runtime complexity: O(K * (L + F + A + S)) vectorised checks, plus O(K) to check that
    the keys are hashable and unique.

    >>> pool = CandidateArrays(["a", "b"], [0.5, 0.75], [[1.0, 0.0], [0.0, 2.0]],
    ...                        features=[[True, False], [True, True]],
    ...                        feature_names=["x", "y"])
    >>> pool[1].key, pool[1].cost.coefficients.tolist(), sorted(pool[1].features)
    ('b', [0.0, 2.0], ['x', 'y'])
    >>> pool[1].needs
    {'x': 1.0, 'y': 1.0}

    Raises
    ------
    TypeError, ValueError
        As ``Candidate(...)`` does for the first bad candidate (its key named), or when the
        columns do not have one entry per candidate.
    """

    def __init__(
        self,
        keys: Sequence[Hashable],
        accuracies: Any,
        coefficients: Any,
        features: Any = None,
        feature_names: Sequence[str] = (),
        needs: Any = None,
        atoms: Sequence[str] | None = None,
        learners: str | Sequence[str | None] | None = None,
        accuracy_ses: Any = None,
        fold_scores: Any = None,
        payloads: Sequence[Any] | None = None,
    ) -> None:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
            raise ArgumentTypeError(f"keys must be a sequence, got {type(keys).__name__}")
        self.keys = list(keys)
        k = len(self.keys)
        seen: set = set()
        for key in self.keys:
            try:
                if key in seen:
                    raise InvalidArgumentError(f"duplicate candidate key {key!r}")
            except TypeError:
                raise InvalidArgumentError(
                    f"candidate key must be hashable, got {key!r}") from None
            seen.add(key)
        self.accuracies = self._unit_column(accuracies, k, "accuracy", lambda a: (
            np.isfinite(a) & (a >= 0.0) & (a <= 1.0)), "must be in [0, 1]")
        self.accuracy_ses = (np.zeros(k) if accuracy_ses is None else self._unit_column(
            accuracy_ses, k, "accuracy_se", lambda a: np.isfinite(a) & (a >= 0.0),
            "must be a finite number >= 0"))
        self.coefficients = self._coefficients(coefficients, k)
        self.feature_names = tuple(check_feature_name(n, "a feature name")
                                   for n in feature_names)
        if features is None:
            self.features = np.zeros((k, len(self.feature_names)), dtype=bool)
        else:
            self.features = np.asarray(features)
            if self.features.dtype != bool or self.features.shape != (
                    k, len(self.feature_names)):
                raise InvalidArgumentError(
                    f"features must be a boolean ({k}, {len(self.feature_names)}) matrix "
                    f"over feature_names, got dtype {self.features.dtype} and shape "
                    f"{self.features.shape}")
        if needs is None:
            self.atoms = self.feature_names if atoms is None else tuple(atoms)
            if self.atoms != self.feature_names:
                raise InvalidArgumentError(
                    "atoms without needs must be the feature names (each feature needed "
                    "with probability 1)")
            self.needs = None  # each feature with probability 1 (:meth:`needs_matrix`)
        else:
            self.atoms = tuple(check_feature_name(n, "an atom") for n in (atoms or ()))
            self.needs = _float_matrix(needs, "needs", 2)
            if self.needs.shape != (k, len(self.atoms)):
                raise InvalidArgumentError(
                    f"needs must be a ({k}, {len(self.atoms)}) matrix over atoms, got "
                    f"shape {self.needs.shape}")
            bad = ~(np.isfinite(self.needs) & (self.needs >= 0.0) & (self.needs <= 1.0))
            if bad.any():
                i, j = (int(v[0]) for v in np.nonzero(bad))
                raise InvalidArgumentError(
                    f"needs of candidate {self.keys[i]!r}: probability of "
                    f"{self.atoms[j]!r} must be in [0, 1], got {self.needs[i, j].item()!r}")
        if learners is None or isinstance(learners, str):
            self.learners: list[str | None] = [learners] * k
        else:
            self.learners = list(learners)
            if len(self.learners) != k:
                raise InvalidArgumentError(
                    f"learners must hold one name per candidate ({k}), got "
                    f"{len(self.learners)}")
            for key, name in zip(self.keys, self.learners, strict=True):
                if name is not None and not isinstance(name, str):
                    raise InvalidArgumentError(
                        f"learner of candidate {key!r} must be a string, got {name!r}")
        self.fold_values, self.fold_offsets = self._folds(fold_scores, k)
        self.payloads = [None] * k if payloads is None else list(payloads)
        if len(self.payloads) != k:
            raise InvalidArgumentError(
                f"payloads must hold one object per candidate ({k}), got {len(self.payloads)}")
        for arr in (self.accuracies, self.accuracy_ses, self.coefficients, self.features,
                    self.fold_values, self.fold_offsets,
                    *(() if self.needs is None else (self.needs,))):
            arr.setflags(write=False)
        self._made: dict[int, Candidate] = {}

    def _unit_column(self, value: Any, k: int, name: str, ok: Any, rule: str) -> np.ndarray:
        arr = np.asarray(value)
        if arr.dtype == bool or arr.dtype.kind not in "iuf":
            raise ArgumentTypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if arr.shape != (k,):
            raise InvalidArgumentError(
                f"{name} must hold one number per candidate ({k}), got shape {arr.shape}")
        bad = ~ok(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidArgumentError(
                f"{name} of candidate {self.keys[i]!r} {rule}, got {arr[i].item()!r}")
        return arr

    def _folds(self, value: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``fold_scores`` as (all values, offsets), checked: in [0, 1]."""
        if value is None:
            return np.zeros(0), np.zeros(k + 1, dtype=np.int64)
        if isinstance(value, np.ndarray) and value.ndim == 2:
            matrix = _float_matrix(value, "fold_scores", 2)
            rows = list(matrix)
        else:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise ArgumentTypeError(
                    f"fold_scores must be a matrix or one sequence per candidate, got "
                    f"{type(value).__name__}")
            rows = [_float_matrix(list(r), "fold_scores", 1) for r in value]
        if len(rows) != k:
            raise InvalidArgumentError(
                f"fold_scores must have one row per candidate ({k}), got {len(rows)}")
        offsets = np.cumsum([0, *map(len, rows)], dtype=np.int64)
        values = np.concatenate(rows) if offsets[-1] else np.zeros(0)
        bad = ~(np.isfinite(values) & (values >= 0.0) & (values <= 1.0))
        if bad.any():
            i = int(np.searchsorted(offsets, np.flatnonzero(bad)[0], side="right") - 1)
            raise InvalidArgumentError(
                f"fold_scores of candidate {self.keys[i]!r} must be in [0, 1], got "
                f"{rows[i].tolist()!r}")
        return values, offsets

    def fold_scores(self, i: int) -> tuple[float, ...]:
        """Candidate ``i``'s fold scores.  O(S)."""
        return tuple(self.fold_values[self.fold_offsets[i] : self.fold_offsets[i + 1]]
                     .tolist())

    def _coefficients(self, value: Any, k: int) -> np.ndarray:
        arr = _float_matrix(value, "coefficients", 2)
        if arr.shape[0] != k or arr.shape[1] == 0:
            raise InvalidArgumentError(
                f"coefficients must be a ({k}, L) matrix with L >= 1, got {arr.shape}")
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise InvalidArgumentError(
                f"cost curve of candidate {self.keys[i]!r}: coefficients must be finite, "
                f"got {arr[i].tolist()}")
        tiny = ((arr != 0.0) & (np.abs(arr) < _SMALLEST_NORMAL)).any(axis=1)
        if tiny.any():
            i = int(np.flatnonzero(tiny)[0])
            raise InvalidArgumentError(
                f"cost curve of candidate {self.keys[i]!r}: coefficients must not be "
                f"subnormal floats, got {arr[i].tolist()}")
        nonzero = arr != 0.0
        used = int(arr.shape[1] - np.argmax(nonzero[:, ::-1].any(axis=0))) if nonzero.any() else 1
        if used - 1 > MAX_DEGREE:
            i = int(np.flatnonzero(nonzero[:, used - 1])[0])
            raise InvalidArgumentError(
                f"cost curve of candidate {self.keys[i]!r}: a cost curve has degree at "
                f"most {MAX_DEGREE}, got degree {used - 1}")
        return arr[:, :used] + 0.0  # normalise -0.0

    @classmethod
    def from_candidates(cls, candidates: Sequence[Candidate]) -> CandidateArrays:
        """The columns of ``candidates`` (their payloads kept).  O(K * (L + F + A)).

        Raises
        ------
        TypeError
            If an item is not a :class:`Candidate`.
        """
        cands = list(candidates)
        for i, c in enumerate(cands):
            if not isinstance(c, Candidate):
                raise ArgumentTypeError(
                    f"candidates[{i}] must be a polydom.Candidate, got {type(c).__name__}")
        names = sorted({f for c in cands for f in c.features})
        atoms = sorted({a for c in cands for a in c.needs})
        width = max((c.cost.coefficients.size for c in cands), default=1)
        coef = np.zeros((len(cands), width))
        feats = np.zeros((len(cands), len(names)), dtype=bool)
        needs = np.zeros((len(cands), len(atoms)))
        f_at = {n: j for j, n in enumerate(names)}
        a_at = {n: j for j, n in enumerate(atoms)}
        for i, c in enumerate(cands):
            coef[i, : c.cost.coefficients.size] = c.cost.coefficients
            for f in c.features:
                feats[i, f_at[f]] = True
            for a, p in c.needs.items():
                needs[i, a_at[a]] = p
        return cls(
            [c.key for c in cands], [c.accuracy for c in cands], coef, feats, names, needs,
            atoms, [c.learner for c in cands], [c.accuracy_se for c in cands],
            [c.fold_scores for c in cands], [c.payload for c in cands])

    def needs_matrix(self) -> np.ndarray:
        """The ``(K, A)`` probabilities over :attr:`atoms` (the features with probability 1
        when no needs were given).  O(K * A)."""
        return self.features.astype(np.float64) if self.needs is None else self.needs

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> Candidate:  # type: ignore[override]
        if isinstance(i, slice):
            raise ArgumentTypeError("a CandidateArrays is indexed by position; use take()")
        return self.candidate(i)

    def __iter__(self) -> Iterator[Candidate]:
        return (self.candidate(i) for i in range(len(self.keys)))

    def candidate(self, i: int) -> Candidate:
        """The candidate at position ``i``, made on first use and kept.  O(L + F + A + S).

        Raises
        ------
        IndexError
            Outside ``[-K, K)``.
        """
        k = len(self.keys)
        if not -k <= i < k:
            raise IndexError(f"candidate position {i} outside a pool of {k}")
        i = int(i) % k
        made = self._made.get(i)
        if made is None:
            made = self._made[i] = self.make([i])[0]
        return made

    def made(self, positions: Sequence[int]) -> list[Candidate]:
        """The candidates at ``positions``, as :meth:`candidate` gives them (made at once
        for those not made yet, and kept).  O(P * (L + F + A + S))."""
        todo = [i for i in positions if i not in self._made]
        for i, c in zip(todo, self.make(todo), strict=True):
            self._made[i] = c
        return [self._made[i] for i in positions]

    def make(self, positions: Sequence[int]) -> list[Candidate]:
        """The candidates at ``positions`` (new objects; not kept).

        Their columns were checked when the pool was made, so each is set up without the
        per-object checks of ``Candidate(...)``.

        Runtime complexity: O(P * (L + F + A + S)).
        """
        idx = np.asarray(positions, dtype=np.int64)
        curves = CostCurve.from_rows(self.coefficients[idx]) if idx.size else []
        feats = self.features[idx]
        needs = feats if self.needs is None else self.needs[idx]
        f_ends = np.cumsum(feats.sum(axis=1)).tolist()
        names = self.feature_names
        f_names = [names[c] for c in np.nonzero(feats)[1].tolist()]
        n_rows, n_cols = np.nonzero(needs)
        n_ends = np.cumsum(np.bincount(n_rows, minlength=idx.size)).tolist()
        atoms = self.atoms
        n_names = [atoms[c] for c in n_cols.tolist()]
        n_values = needs[n_rows, n_cols].astype(np.float64).tolist()
        fold_from = self.fold_offsets[idx].tolist()
        fold_to = self.fold_offsets[idx + 1].tolist()
        fold_values = self.fold_values
        accs = self.accuracies[idx].tolist()
        ses = self.accuracy_ses[idx].tolist()
        keys, payloads, learners = self.keys, self.payloads, self.learners
        out = []
        new, put = object.__new__, object.__setattr__
        f_at = n_at = 0
        for j, i in enumerate(idx.tolist()):
            c = new(Candidate)
            put(c, "key", keys[i])
            put(c, "accuracy", accs[j])
            put(c, "cost", curves[j])
            put(c, "features", frozenset(f_names[f_at : f_ends[j]]))
            put(c, "payload", payloads[i])
            put(c, "needs", dict(zip(n_names[n_at : n_ends[j]], n_values[n_at : n_ends[j]],
                                      strict=True)))
            put(c, "learner", learners[i])
            put(c, "accuracy_se", ses[j])
            put(c, "fold_scores", tuple(fold_values[fold_from[j] : fold_to[j]].tolist()))
            f_at, n_at = f_ends[j], n_ends[j]
            out.append(c)
        return out

    def take(self, positions: Sequence[int]) -> CandidateArrays:
        """The pool of the candidates at ``positions``, in that order.  O(P * width)."""
        idx = np.asarray(positions, dtype=np.int64)
        pool = object.__new__(CandidateArrays)
        pool.keys = [self.keys[i] for i in idx.tolist()]
        pool.learners = [self.learners[i] for i in idx.tolist()]
        pool.payloads = [self.payloads[i] for i in idx.tolist()]
        for name in ("accuracies", "accuracy_ses", "coefficients", "features", "needs"):
            arr = getattr(self, name)
            if arr is not None:
                arr = arr[idx]
                arr.setflags(write=False)
            setattr(pool, name, arr)
        starts, ends = self.fold_offsets[idx], self.fold_offsets[idx + 1]
        pool.fold_offsets = np.cumsum(np.concatenate(([0], ends - starts)), dtype=np.int64)
        pool.fold_values = (np.concatenate([self.fold_values[a:b] for a, b in
                                            zip(starts.tolist(), ends.tolist(), strict=True)])
                            if pool.fold_offsets[-1] else np.zeros(0))
        pool.feature_names, pool.atoms = self.feature_names, self.atoms
        pool._made = {}
        return pool

    def __repr__(self) -> str:
        return (f"CandidateArrays({len(self.keys)} candidates, degree <= "
                f"{self.coefficients.shape[1] - 1}, {len(self.feature_names)} features, "
                f"{len(self.atoms)} atoms)")

