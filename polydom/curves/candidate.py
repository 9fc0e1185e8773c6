"""Candidate: one trained model as the index sees it (key, accuracy, cost curve, needs)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_feature_name, check_real
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["Candidate"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A model the index may return: its accuracy and the cost curve of what it needs.

    Parameters
    ----------
    key : hashable
        Unique name of the candidate within an index (ties in the index are broken by key).
    accuracy : float
        Estimated accuracy in ``[0, 1]``; independent of the item size.  A real number
        (``"0.5"`` or ``True`` raise ``TypeError``).
    cost : CostCurve or str or sequence of float
        Cost of the features the model needs, as a function of the item size ``n``.
        Text is parsed with :meth:`CostCurve.parse`, numbers are coefficients.
    features : iterable of str, default empty
        Names of the features the model uses (informational for the index); non-empty
        strings.
    payload : object, default None
        Anything attached (a fitted model, an expansion); ignored by comparisons.
    needs : mapping of str to float, optional
        The atomic features the model needs, with the probability that each is needed
        (1 for a static model; the fraction of rows for an adaptive one).  Default: every
        name of ``features`` with probability 1.  With a :class:`polydom.CostModel` the
        cost curve is ``cost_model.expected_cost(needs)`` (plus a learner's own overhead).
        Ignored by comparisons.
    learner : str, optional
        Name of the learner that produced the candidate (``"lattice"``, ``"cegb"``, ...).
        Ignored by comparisons.
    accuracy_se : float, default 0.0
        Standard error of ``accuracy`` (a real number >= 0): the lookup rule ``"one_se"``
        answers with the cheapest candidate within one standard error of the best.
        Ignored by comparisons.
    fold_scores : sequence of float, default ()
        The candidate's score on each split of its build's evaluation protocol (each in
        ``[0, 1]``; ``accuracy`` is their mean), for differences paired over folds.
        Ignored by comparisons.

    >>> Candidate("a", 0.8, "3 + n").cost(2.0)
    5.0
    >>> Candidate("b", 0.9, "n", features={"x"}).needs
    {'x': 1.0}
    """

    key: Hashable
    accuracy: float
    cost: CostCurve
    features: frozenset = frozenset()
    payload: Any = field(default=None, compare=False, hash=False, repr=False)
    needs: Mapping[str, float] | None = field(default=None, compare=False, hash=False, repr=False)
    learner: str | None = field(default=None, compare=False, hash=False, repr=False)
    accuracy_se: float = field(default=0.0, compare=False, hash=False, repr=False)
    fold_scores: tuple = field(default=(), compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        try:
            hash(self.key)
        except TypeError:
            raise InvalidArgumentError(
                f"candidate key must be hashable, got {self.key!r}") from None
        accuracy = check_real(self.accuracy, f"accuracy of candidate {self.key!r}")
        if not (math.isfinite(accuracy) and 0.0 <= accuracy <= 1.0):
            raise InvalidArgumentError(
                f"accuracy of candidate {self.key!r} must be in [0, 1], got {self.accuracy!r}"
            )
        object.__setattr__(self, "accuracy", accuracy)
        object.__setattr__(self, "cost", CostCurve.coerce(self.cost))
        if isinstance(self.features, str) or not isinstance(self.features, Iterable):
            raise ArgumentTypeError(
                f"features of candidate {self.key!r} must be an iterable of names, "
                f"got {self.features!r}"
            )
        features = frozenset(self.features)
        for name in features:
            check_feature_name(name, f"a feature of candidate {self.key!r}")
        object.__setattr__(self, "features", features)
        if self.needs is None:
            needs = {name: 1.0 for name in sorted(self.features)}
        elif isinstance(self.needs, Mapping):
            needs = {}
            for atom, p in self.needs.items():
                check_feature_name(atom, f"an atom in the needs of candidate {self.key!r}")
                p = check_real(p, f"needs of candidate {self.key!r}: probability of {atom!r}")
                if not 0.0 <= p <= 1.0:
                    raise InvalidArgumentError(
                        f"needs of candidate {self.key!r}: probability of {atom!r} must be in "
                        f"[0, 1], got {self.needs[atom]!r}"
                    )
                needs[atom] = p
        else:
            raise InvalidArgumentError(
                f"needs of candidate {self.key!r} must be a mapping atom -> probability, "
                f"got {self.needs!r}"
            )
        object.__setattr__(self, "needs", needs)
        if self.learner is not None and not isinstance(self.learner, str):
            raise InvalidArgumentError(
                f"learner of candidate {self.key!r} must be a string, got {self.learner!r}"
            )
        se = check_real(self.accuracy_se, f"accuracy_se of candidate {self.key!r}")
        if not (math.isfinite(se) and se >= 0.0):
            raise InvalidArgumentError(
                f"accuracy_se of candidate {self.key!r} must be a finite number >= 0, "
                f"got {self.accuracy_se!r}"
            )
        object.__setattr__(self, "accuracy_se", se)
        object.__setattr__(self, "fold_scores", _fold_scores(self.fold_scores, self.key))

    @classmethod
    def from_columns(
        cls,
        keys: list[Hashable],
        accuracies: Iterable[float],
        costs: list[CostCurve],
        features: list[frozenset],
        payloads: list[Any] | None = None,
        needs: list[Mapping[str, float] | None] | None = None,
        learners: list[str | None] | None = None,
        accuracy_ses: Iterable[float] | None = None,
        fold_scores: list[Any] | None = None,
    ) -> list[Candidate]:
        """Many candidates from parallel columns: what ``Candidate(keys[i], accuracies[i],
        costs[i], features[i], ...)`` gives for every ``i``, checked column by column.

        The accuracies are checked as one array; a row whose cost is a :class:`CostCurve`
        and whose features are a frozenset is then made without the per-object checks of
        the constructor (the other rows go through it).  Readers of stored indexes rebuild
        10**5 candidates this way.

        Runtime complexity: O(k + total needs) for k candidates.

        >>> [c.key for c in Candidate.from_columns(["a", "b"], [0.5, 0.75],
        ...                                        [CostCurve([1]), "n"], [frozenset()] * 2)]
        ['a', 'b']

        Raises
        ------
        ValueError
            As the constructor does, naming the first bad candidate.
        """
        k = len(keys)
        payloads = [None] * k if payloads is None else payloads
        needs = [None] * k if needs is None else needs
        learners = [None] * k if learners is None else learners
        folds = [()] * k if fold_scores is None else fold_scores
        acc = np.asarray(accuracies, dtype=np.float64)
        ses = np.zeros(k) if accuracy_ses is None else np.asarray(accuracy_ses,
                                                                   dtype=np.float64)
        if not (len(costs) == len(features) == len(payloads) == len(needs) == len(learners)
                == len(folds) == k and acc.shape == ses.shape == (k,)):
            raise InvalidArgumentError(
                "keys, accuracies, costs, features, payloads, needs, learners, "
                "accuracy_ses and fold_scores must have one entry per candidate")
        bad = ~(np.isfinite(acc) & (acc >= 0.0) & (acc <= 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidArgumentError(
                f"accuracy of candidate {keys[i]!r} must be in [0, 1], got "
                f"{acc[i]!r}")
        bad = ~(np.isfinite(ses) & (ses >= 0.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidArgumentError(
                f"accuracy_se of candidate {keys[i]!r} must be a finite number "
                f">= 0, got {ses[i]!r}")
        out = []
        new, put = object.__new__, object.__setattr__
        for key, a, cost, feats, payload, need, learner, se, fold in zip(
            keys, acc.tolist(), costs, features, payloads, needs, learners, ses.tolist(),
            folds, strict=True
        ):
            if need is None:
                need = {name: 1.0 for name in sorted(feats)}
            if not (type(cost) is CostCurve and type(feats) is frozenset
                    and (learner is None or type(learner) is str) and _hashable(key)
                    and isinstance(need, Mapping)
                    and all(type(atom) is str and type(p) is float and 0.0 <= p <= 1.0
                            for atom, p in need.items())):
                out.append(cls(key, a, cost, feats, payload, need, learner, se, fold))
                continue
            c = new(cls)
            put(c, "key", key)
            put(c, "accuracy", a)
            put(c, "cost", cost)
            put(c, "features", feats)
            put(c, "payload", payload)
            put(c, "needs", dict(need))
            put(c, "learner", learner)
            put(c, "accuracy_se", se)
            put(c, "fold_scores", _fold_scores(fold, key))
            out.append(c)
        return out


def _fold_scores(scores: Any, key: Hashable) -> tuple[float, ...]:
    """``scores`` as a tuple of real numbers in ``[0, 1]`` (ValueError naming the candidate)."""
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
        raise ArgumentTypeError(
            f"fold_scores of candidate {key!r} must be a sequence of numbers, "
            f"got {scores!r}")
    out = tuple(check_real(v, f"a fold score of candidate {key!r}") for v in scores)
    if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in out):
        raise InvalidArgumentError(
            f"fold_scores of candidate {key!r} must be in [0, 1], got "
            f"{list(out)!r}")
    return out


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True
