"""EvaluationProtocol: the one way every learner of a build estimates accuracy (folds or a
held-out split), and the statistics of per-fold scores (mean, standard error, paired
differences).

A build scores the lattice's feature sets and every budgeted learner's settings on the
same rows: the protocol is seeded, so two learners that split the same labels get the same
folds, and an index that chooses between a lattice model and a budgeted one compares two
estimates of the same kind.  The protocol is a scikit-learn cross-validation splitter
(``split`` / ``get_n_splits``), so it also goes wherever scikit-learn takes ``cv=``.

Statistics (the conventions of cross-validation practice, e.g. the one-standard-error rule
of Breiman et al., *Classification and Regression Trees*, 1984, section 3.4.3):

* the estimate is the mean of the k fold scores (scikit-learn's ``cross_val_score`` mean),
  or of the k * r scores of k folds repeated r times on r different partitions (repeated
  cross-validation: the mean no longer depends on one partition of the rows);
* its standard error is ``std(scores, ddof=1) / sqrt(k)`` for k >= 2 folds (folds share
  training rows, so this is known to understate the spread somewhat; it is the usual
  yardstick, not an exact interval), also with r repeats (the repeats re-use the same rows,
  so dividing by ``sqrt(k * r)`` would claim r times the data there is), and for one held-out
  split of m rows the binomial ``sqrt(a * (1 - a) / m)`` (accuracy is a mean of m
  right/wrong outcomes);
* two candidates scored on the same folds are compared by the mean and standard error of
  their per-fold differences (:func:`paired_difference`), which removes the part of the
  spread that comes from which rows landed in which fold.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polydom.curves.accuracy import fold_mean
from polydom.errors import ArgumentTypeError, EvaluationError, InvalidArgumentError

__all__ = [
    "EvaluationError",
    "EvaluationProtocol",
    "FoldEstimate",
    "paired_difference",
]


class EvaluationProtocol:
    """Seeded k folds or one held-out split, optionally grouped: how a build scores models.

    ``__init__`` stores its parameters untouched (scikit-learn's convention); they are
    checked by :meth:`check` and on first use.  Splitting the same labels (and groups) always
    gives the same folds, whichever learner asks.

    Parameters
    ----------
    folds : int, default 5
        Number of folds (an integer >= 2) when ``holdout`` is None.
    holdout : float, optional
        Share of the rows held out in ``(0, 1)``: one split instead of folds.
    seed : int, default 0
        Seed of the shuffling (folds are shuffled, then stratified or grouped).
    groups : array of shape (rows,), optional
        Group label of each row: rows of one group are never split between training and
        evaluation (``GroupKFold``-like folds, ``GroupShuffleSplit`` for a held-out split).
    stratify : bool, default True
        Keep the class shares of classification labels in every fold (``StratifiedKFold``,
        ``StratifiedGroupKFold``, ``StratifiedShuffleSplit``).  Ignored for continuous
        labels and for a grouped held-out split.
    refit : bool, default True
        Refit the served model on all rows after scoring (the estimate is then that of the
        training procedure, as scikit-learn's cross-validation).  ``False`` is allowed with
        ``holdout`` only: the served model is the one fitted on the training rows, the very
        model that was scored.
    repeats : int, default 1
        Repeat the k folds on this many partitions of the rows (repeated cross-validation;
        folds only): repeat 0 is the partition of ``seed``, repeat ``r`` that of a seed
        derived from ``(seed, r)``.  Every learner is scored on all ``folds * repeats``
        splits; the variance that the choice of partition adds to an estimate shrinks as
        ``1 / repeats`` (docs/evaluation.md says when that decides a choice).

    >>> p = EvaluationProtocol(folds=3, seed=1)
    >>> y = np.array([0, 1] * 6)
    >>> [test.tolist() for _, test in p.split(np.zeros((12, 1)), y)] == \\
    ...     [test.tolist() for _, test in EvaluationProtocol(3, seed=1).split(None, y)]
    True
    >>> str(p)
    '3-fold cross-validation (stratified, seed 1)'
    >>> str(EvaluationProtocol(holdout=0.25))
    'held-out 25% of rows (stratified, seed 0)'
    >>> str(EvaluationProtocol(folds=5, repeats=3))
    '5-fold cross-validation repeated 3 times (stratified, seed 0)'
    """

    def __init__(
        self,
        folds: int = 5,
        holdout: float | None = None,
        seed: int = 0,
        groups: Any = None,
        stratify: bool = True,
        refit: bool = True,
        repeats: int = 1,
    ) -> None:
        self.folds = folds
        self.holdout = holdout
        self.seed = seed
        self.groups = groups
        self.stratify = stratify
        self.refit = refit
        self.repeats = repeats

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters (scikit-learn's convention)."""
        return {"folds": self.folds, "holdout": self.holdout, "seed": self.seed,
                "groups": self.groups, "stratify": self.stratify, "refit": self.refit,
                "repeats": self.repeats}

    def __repr__(self) -> str:
        groups = None if self.groups is None else f"<{len(self.groups)} labels>"
        return (f"EvaluationProtocol(folds={self.folds!r}, holdout={self.holdout!r}, "
                f"seed={self.seed!r}, groups={groups}, stratify={self.stratify!r}, "
                f"refit={self.refit!r}, repeats={self.repeats!r})")

    def check(self) -> EvaluationProtocol:
        """Validate the parameters; returns ``self``.

        Runtime complexity: O(rows) for the groups.

        Raises
        ------
        TypeError
            A number of folds or a seed that is not an integer, a holdout that is not a
            real number, flags that are not booleans.
        EvaluationError
            Values out of range, or ``refit=False`` with folds.
        """
        if self.holdout is None:
            if not _is_int(self.folds):
                raise ArgumentTypeError(f"folds must be an integer, got {self.folds!r}")
            if self.folds < 2:
                raise EvaluationError(f"folds must be at least 2, got {self.folds!r}")
        else:
            if isinstance(self.holdout, bool) or not isinstance(self.holdout, numbers.Real):
                raise ArgumentTypeError(
                    f"holdout must be a share of the rows in (0, 1), got "
                    f"{self.holdout!r}")
            if not 0.0 < float(self.holdout) < 1.0:
                raise EvaluationError(f"holdout must be in (0, 1), got {self.holdout!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ArgumentTypeError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not _is_int(self.repeats):
            raise ArgumentTypeError(f"repeats must be an integer, got {self.repeats!r}")
        if self.repeats < 1:
            raise EvaluationError(f"repeats must be at least 1, got {self.repeats!r}")
        if self.repeats > 1 and self.holdout is not None:
            raise EvaluationError(f"repeats={self.repeats!r} needs folds (a held-out split "
                                  "is one split)")
        for name in ("stratify", "refit"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentTypeError(
                    f"{name} must be True or False, got {getattr(self, name)!r}")
        if not self.refit and self.holdout is None:
            raise EvaluationError("refit=False needs holdout (with folds, k models are "
                                  "scored and none of them is the one served)")
        if self.groups is not None and np.asarray(self.groups).ndim != 1:
            raise EvaluationError(f"groups must be one label per row, got shape "
                                  f"{np.asarray(self.groups).shape}")
        return self

    @property
    def n_splits(self) -> int:
        """Number of scored splits: ``folds * repeats``, or 1 with ``holdout``."""
        return 1 if self.holdout is not None else int(self.folds) * int(self.repeats)

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """:attr:`n_splits` (scikit-learn's splitter interface)."""
        return self.check().n_splits

    # ------------------------------------------------------------------ splitting
    def _splitter(self, y: np.ndarray, grouped: bool, repeat: int = 0) -> Any:
        from sklearn.model_selection import (
            GroupShuffleSplit,
            KFold,
            ShuffleSplit,
            StratifiedGroupKFold,
            StratifiedKFold,
            StratifiedShuffleSplit,
        )
        from sklearn.utils.multiclass import type_of_target

        strat = self.stratify and type_of_target(y) in ("binary", "multiclass")
        seed = _repeat_seed(int(self.seed), repeat)
        if self.holdout is not None:
            share = float(self.holdout)
            if grouped:
                return GroupShuffleSplit(n_splits=1, test_size=share, random_state=seed)
            cls = StratifiedShuffleSplit if strat else ShuffleSplit
            return cls(n_splits=1, test_size=share, random_state=seed)
        k = int(self.folds)
        if grouped:
            if strat:
                return StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
            return _ShuffledGroupKFold(k, seed)
        cls = StratifiedKFold if strat else KFold
        return cls(n_splits=k, shuffle=True, random_state=seed)

    def split(
        self, X: Any = None, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train_rows, test_rows)`` index arrays, one pair per split (repeat by
        repeat: the k folds of repeat 0 first).

        ``groups`` overrides the protocol's own.  Only the number of rows of ``X`` is used
        (``y`` decides it when ``X`` is None).

        Runtime complexity: O(rows log rows) per split.

        Raises
        ------
        EvaluationError
            If ``y`` is missing, the groups do not match the rows, or the rows cannot be
            split so (more folds than rows of a class or than groups, a held-out share that
            leaves no row on a side).
        """
        self.check()
        if y is None:
            raise EvaluationError("the evaluation protocol needs the labels y to split")
        y = np.asarray(y)
        rows = y.shape[0] if X is None else _n_rows(X)
        if rows != y.shape[0]:
            raise EvaluationError(f"X has {rows} rows but y has {y.shape[0]}")
        groups = self.groups if groups is None else groups
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (rows,):
                raise EvaluationError(f"groups must have one label per row ({rows}), got "
                                      f"shape {groups.shape}")
        try:
            pairs = [(np.sort(tr), np.sort(te))
                     for r in range(int(self.repeats))
                     for tr, te in self._splitter(y, groups is not None, r).split(
                         np.zeros((rows, 1)), y, groups)]
        except ValueError as exc:
            raise EvaluationError(f"cannot split {rows} rows by {self}: "
                                  f"{str(exc).splitlines()[0]}") from None
        for train, test in pairs:
            if not len(train) or not len(test):
                raise EvaluationError(f"{self} leaves no rows on one side of a split")
        yield from pairs

    def splits(self, y: Any, groups: Any = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every ``(train_rows, test_rows)`` pair of :meth:`split`, as a list."""
        return list(self.split(None, y, groups))

    # ------------------------------------------------------------------ records
    def describe(self) -> dict[str, Any]:
        """The protocol as JSON-ready data (stored with a build, shown by ``inspect``).

        Groups are summarised by their count and a sha256 of their labels; ``"folds"`` is
        the number of folds of one partition, ``"repeats"`` (present only when more than 1,
        so that the descriptions of unrepeated protocols, which key stored expansions, stay
        as they were) the number of partitions.

        >>> EvaluationProtocol(folds=4, seed=2).describe()["folds"]
        4
        """
        self.check()
        out: dict[str, Any] = {
            "kind": "holdout" if self.holdout is not None else "kfold",
            "folds": 1 if self.holdout is not None else int(self.folds),
            "holdout": None if self.holdout is None else float(self.holdout),
            "seed": int(self.seed),
            "stratify": self.stratify,
            "refit": self.refit,
            "groups": None,
        }
        if self.groups is not None:
            labels = np.asarray(self.groups)
            digest = hashlib.sha256(repr(labels.tolist()).encode()).hexdigest()[:16]
            out["groups"] = {"count": int(len(np.unique(labels))), "sha256": digest}
        if self.repeats > 1:
            out["repeats"] = int(self.repeats)
        return out

    def __str__(self) -> str:
        return describe_text(self.describe())

    def estimate(self, scores: Sequence[float], test_rows: Sequence[int]) -> FoldEstimate:
        """Per-split scores of one model as a :class:`FoldEstimate` (checked)."""
        if len(scores) != self.n_splits:
            raise EvaluationError(f"{self} gives {self.n_splits} scores, got {len(scores)}")
        return FoldEstimate.of(scores, test_rows, int(self.repeats))


def describe_text(description: Mapping[str, Any]) -> str:
    """One line for a protocol's :meth:`EvaluationProtocol.describe` (stored builds too).

    >>> describe_text({"kind": "kfold", "folds": 5, "seed": 0, "stratify": False,
    ...                "groups": {"count": 40, "sha256": "ab"}, "refit": True})
    '5-fold cross-validation (grouped by 40 groups, seed 0)'
    """
    how = []
    if description.get("groups"):
        how.append(f"grouped by {description['groups']['count']} groups")
    if description.get("stratify"):
        how.append("stratified")
    how.append(f"seed {description.get('seed')}")
    if not description.get("refit", True):
        how.append("served model not refitted")
    if description.get("kind") == "holdout":
        share = float(description["holdout"])
        return f"held-out {share:.0%} of rows ({', '.join(how)})"
    repeats = int(description.get("repeats", 1))
    again = f" repeated {repeats} times" if repeats > 1 else ""
    return f"{description.get('folds')}-fold cross-validation{again} ({', '.join(how)})"


@dataclass(frozen=True)
class FoldEstimate:
    """Scores of one model on each split of a protocol, with their mean and standard error.

    Attributes
    ----------
    scores : tuple of float
        Score on each split, in split order.
    test_rows : tuple of int
        Number of evaluation rows of each split.
    repeats : int
        Number of partitions the splits come from (repeated cross-validation), 1 otherwise.
    """

    scores: tuple[float, ...]
    test_rows: tuple[int, ...]
    repeats: int = 1

    @classmethod
    def of(cls, scores: Sequence[float], test_rows: Sequence[int],
           repeats: int = 1) -> FoldEstimate:
        """Checked construction: finite scores in ``[0, 1]``, one positive count per score,
        as many scores in each of ``repeats`` partitions.

        >>> FoldEstimate.of([0.5, 0.75, 1.0], [10, 10, 10]).mean
        0.75
        """
        s = tuple(float(v) for v in scores)
        m = tuple(int(v) for v in test_rows)
        if not s or len(s) != len(m):
            raise EvaluationError(f"need one test-row count per score, got {len(s)} scores "
                                  f"and {len(m)} counts")
        _check_repeats(len(s), repeats)
        if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in s):
            raise EvaluationError(f"fold scores must be in [0, 1], got {list(s)!r}")
        if not all(v > 0 for v in m):
            raise EvaluationError(f"every split needs evaluation rows, got {list(m)!r}")
        return cls(s, m, int(repeats))

    @property
    def mean(self) -> float:
        """The estimate: the mean of the split scores, exact
        (:func:`polydom.curves.accuracy.fold_mean`: the same counts over the same splits give
        the same float, a tie).  Runtime complexity: O(k)."""
        return fold_mean(self.scores, self.test_rows)

    @property
    def se(self) -> float:
        """Standard error of :attr:`mean`: ``std(ddof=1)/sqrt(k)`` over the splits of k >= 2
        folds (with r repeats: the std of all k * r scores, still over ``sqrt(k)``), the
        binomial ``sqrt(a(1-a)/m)`` for one split of m rows.  Runtime complexity: O(k r).

        >>> round(FoldEstimate.of([0.8, 0.9, 1.0], [10] * 3).se, 4)
        0.0577
        >>> FoldEstimate.of([0.75], [48]).se
        0.0625
        """
        k = len(self.scores) // self.repeats
        if len(self.scores) == 1:
            a = self.scores[0]
            return math.sqrt(a * (1.0 - a) / self.test_rows[0])
        return float(np.std(self.scores, ddof=1) / math.sqrt(k))


def paired_difference(
    a: Sequence[float], b: Sequence[float], repeats: int = 1
) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` paired over the folds both were scored on.

    With one fold the standard error of a difference is unknown from fold scores alone:
    it is returned as NaN.  With ``repeats`` partitions (repeated cross-validation) the
    standard error is the std of the differences over ``sqrt(folds of one partition)``, as
    :attr:`FoldEstimate.se`.

    Runtime complexity: O(k).

    >>> d, se = paired_difference([0.9, 0.8, 0.85], [0.8, 0.75, 0.8])
    >>> round(d, 4), round(se, 4)
    (0.0667, 0.0167)

    Raises
    ------
    EvaluationError
        If the two have different numbers of folds (they were not scored on the same
        protocol) or none.
    """
    x, z = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != z.shape or not x.size:
        raise EvaluationError(f"paired scores need the same folds, got {x.shape} and "
                              f"{z.shape}")
    _check_repeats(x.size, repeats)
    d = x - z
    se = (float(np.std(d, ddof=1) / math.sqrt(d.size // repeats)) if d.size > 1
          else math.nan)
    return float(d.mean()), se


def _check_repeats(splits: int, repeats: Any) -> None:
    """``repeats`` is a positive integer dividing the number of splits."""
    if not _is_int(repeats) or repeats < 1 or splits % repeats:
        raise EvaluationError(f"repeats must be a positive integer dividing the number of "
                              f"splits ({splits}), got {repeats!r}")


def _repeat_seed(seed: int, repeat: int) -> int:
    """Seed of partition ``repeat``: ``seed`` itself for repeat 0 (so one repeat is the
    unrepeated protocol), else a 32-bit seed drawn from ``SeedSequence((seed, repeat))``
    (independent streams, reproducible)."""
    if repeat == 0:
        return seed
    return int(np.random.SeedSequence((seed, repeat)).generate_state(1)[0])


class _ShuffledGroupKFold:
    """K folds of whole groups, the groups shuffled by ``seed`` then dealt by size (largest
    first, to the fold with the fewest rows): scikit-learn's ``GroupKFold`` has no seed."""

    def __init__(self, k: int, seed: int) -> None:
        self.k, self.seed = k, seed

    def split(self, X: Any, y: Any, groups: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
        labels, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
        if len(labels) < self.k:
            raise InvalidArgumentError(
                f"{self.k} folds need at least {self.k} groups, got "
                f"{len(labels)}")
        order = np.random.default_rng(self.seed).permutation(len(labels))
        order = order[np.argsort(-counts[order], kind="stable")]
        fold_of = np.empty(len(labels), dtype=np.int64)
        load = np.zeros(self.k, dtype=np.int64)
        for g in order:
            f = int(np.argmin(load))
            fold_of[g] = f
            load[f] += counts[g]
        row_fold = fold_of[inverse]
        rows = np.arange(len(groups))
        for f in range(self.k):
            yield rows[row_fold != f], rows[row_fold == f]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)
