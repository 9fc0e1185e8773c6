"""Feature sets as bitmasks over an ordered feature list, and the shared expansion memo."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from lattice.executor import InProcessSession, Session
from lattice.expansion import Expansion
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.domain import check_feature_name, shown
from polydom.errors import ArgumentTypeError, InvalidArgumentError

__all__ = [
    "BudgetExhausted",
    "FeatureSpace",
    "Expander",
    "expand_task",
    "popcount",
    "set_key",
]


def popcount(mask: int) -> int:
    """Number of features in the set ``mask``."""
    return mask.bit_count()


def set_key(mask: int) -> tuple[int, int]:
    """Canonical order of feature sets: by size, then by bitmask (spec 4)."""
    return (mask.bit_count(), mask)


class BudgetExhausted(Exception):
    """Raised inside an exploration when the training budget is spent."""


#: Most features of a lattice.  The complete and paper traversals keep sets as int64 masks
#: (:data:`WORD_FEATURES`); the any-time explorer (:mod:`lattice.anytime`) uses Python
#: integers and takes up to this many.
MAX_FEATURES = 1024
#: Most features whose sets fit one int64 mask (numpy-vectorised traversals).
WORD_FEATURES = 62


class FeatureSpace:
    """The ordered features of a lattice with their cost model, and mask <-> names helpers.

    The features are the cost model's bundles when it has any, else its atoms (a plain
    mapping ``{name: curve}`` is a model of atoms only).  Bit ``i`` of a mask is the ``i``-th
    feature (the user's order).  A set costs the sum of the curves of the *atoms* of its
    features, each atom once, plus the shared steps they use and the model's start, each
    once (the model's *units*): monotone in the set (curves are non-negative), additive when
    no atom is shared and there are no steps and no start.
    """

    def __init__(self, costs: Mapping[str, Any] | CostModel, n_min: float, n_max: float) -> None:
        if not isinstance(costs, (Mapping, CostModel)):
            raise ArgumentTypeError(
                "costs must be a CostModel or a mapping of feature name to curve, got "
                f"{shown(costs)}"
            )
        if isinstance(costs, Mapping):
            for name in costs:
                check_feature_name(name, "a feature name in costs")
            checked = {}
            for name, curve in costs.items():
                try:
                    checked[name] = CostCurve.coerce(curve)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"costs[{name!r}]: {exc}") from None
            costs = CostModel(checked)
        self.model: CostModel = costs
        self.names: tuple[str, ...] = costs.features
        self.m = len(self.names)
        if self.m > MAX_FEATURES:
            raise InvalidArgumentError(
                f"at most {MAX_FEATURES} features fit the lattice, got {self.m}")
        self.full = (1 << self.m) - 1
        self.n_min, self.n_max = float(n_min), float(n_max)
        costs.check_nonnegative(self.n_min, self.n_max)
        #: The cost curve of each feature alone (a bundle: its atoms' sum).
        self.curves: dict[str, CostCurve] = {name: costs.cost([name]) for name in self.names}
        self.shared = costs.shares
        if self.shared:
            # features x units incidence (atoms, shared steps, the start); a set's units are
            # the union of its rows, each paid once
            self._incidence = costs.unit_incidence(self.names).astype(np.int64)
            self.coef = costs.unit_coefficients()
        else:
            width = max((c.coefficients.size for c in self.curves.values()), default=1)
            self.coef = np.zeros((self.m, width))
            for i, name in enumerate(self.names):
                c = self.curves[name].coefficients
                self.coef[i, : c.size] = c
        self.position = {name: i for i, name in enumerate(self.names)}

    def mask(self, features: frozenset) -> int:
        """Bitmask of a set of names (unknown names raise ``ValueError``)."""
        out = 0
        for name in features:
            if name not in self.position:
                raise InvalidArgumentError(f"unknown feature {name!r}; known: {list(self.names)}")
            out |= 1 << self.position[name]
        return out

    def names_of(self, mask: int) -> frozenset:
        """The set of names of ``mask``."""
        return frozenset(self.names[i] for i in range(self.m) if mask >> i & 1)

    def key(self, mask: int) -> tuple[str, ...]:
        """Candidate key of a set: its feature names in the lattice's feature order."""
        return tuple(self.names[i] for i in range(self.m) if mask >> i & 1)

    def atoms(self, mask: int) -> frozenset:
        """The atomic features a set needs."""
        return self.model.atoms_of(self.names_of(mask))

    def cost(self, mask: int) -> CostCurve:
        """Cost curve of a set: the sum of its atoms' curves, each atom once (paper Eq. 1
        when no atom is shared)."""
        if self.shared:
            return self.model.cost(self.names_of(mask))
        return CostCurve.total(self.curves[self.names[i]] for i in range(self.m) if mask >> i & 1)

    def bits(self, masks: Sequence[int] | np.ndarray) -> np.ndarray:
        """Sets x features 0/1 matrix of many masks (any width: Python integers past 62)."""
        if self.m <= WORD_FEATURES:
            masks = np.asarray(masks, dtype=np.int64)
            return (masks[:, None] >> np.arange(self.m)[None, :]) & 1
        out = np.zeros((len(masks), self.m), dtype=np.int64)
        for row, mask in enumerate(masks):
            mask = int(mask)
            out[row] = [(mask >> i) & 1 for i in range(self.m)]
        return out

    def cost_coefs(self, masks: Sequence[int] | np.ndarray) -> np.ndarray:
        """Coefficient rows (lowest degree first) of many sets at once."""
        bits = self.bits(masks)
        if self.shared:
            return ((bits @ self._incidence) > 0).astype(np.float64) @ self.coef
        return bits.astype(np.float64) @ self.coef


def expand_task(learner: Any, features: frozenset) -> Expansion:
    """One training, as an executor task: ``learner.expand(features)``."""
    return learner.expand(features)


class Expander:
    """Memoised access to the learner: the cache first, then one training per new set.

    Trainings run through ``session`` (an executor session over ``learner``, see
    :mod:`lattice.executor`; in-process when None), a batch at a time.  Every trained
    expansion is written into ``cache`` (when given) as soon as its result arrives, so a
    database-backed mapping persists the work as it happens, and ``progress(expansion)`` is
    called for it.
    """

    def __init__(
        self,
        learner: Any,
        space: FeatureSpace,
        cache: MutableMapping | None,
        max_trainings: int | None = None,
        deadline: float | None = None,
        session: Session | None = None,
        progress: Callable[[Expansion], Any] | None = None,
    ) -> None:
        if not callable(getattr(learner, "expand", None)):
            raise InvalidArgumentError(
                f"learner must have an expand(features) method, got {learner!r}")
        self.learner = learner
        self.space = space
        self.cache = cache
        self.max_trainings = max_trainings
        self.deadline = deadline
        self.session = InProcessSession(learner) if session is None else session
        self.progress = progress
        self.trained = 0
        self.cache_hits = 0
        self.fit_seconds = 0.0

    def __call__(self, mask: int) -> Expansion:
        """The expansion of one set (raises :class:`BudgetExhausted` past the budget)."""
        done, exhausted = self.expand_batch([mask])
        if exhausted:
            raise BudgetExhausted
        return done[mask]

    def expand_batch(self, masks: Sequence[int]) -> tuple[dict[int, Expansion], bool]:
        """Expansions of ``masks``: cached ones at once, the others trained as one batch.

        Walking ``masks`` in order, cached sets are served and the others queued for
        training until ``max_trainings`` would be exceeded; the queue runs through the
        session and each result is validated, counted, written to the cache and reported to
        ``progress`` as it arrives.  The deadline is checked before each result is awaited
        (in-process: before each training); once it has passed, the unfinished trainings
        are cancelled.

        Returns
        -------
        done : dict of int to Expansion
            The finished expansions, in the order of ``masks``.
        exhausted : bool
            True when the budget stopped the batch before every set was expanded.

        Runtime complexity: one cache lookup per set plus the trainings of the misses.
        """
        served: dict[int, Expansion] = {}
        todo: list[int] = []
        exhausted = False
        for mask in masks:
            features = self.space.names_of(mask)
            found = self.cache.get(features) if self.cache is not None else None
            if found is not None:
                self.cache_hits += 1
                served[mask] = self._checked(found, features)
                continue
            if self.max_trainings is not None and self.trained + len(todo) >= self.max_trainings:
                exhausted = True
                break
            todo.append(mask)
        if todo:
            exhausted = self._train(todo, served) or exhausted
        return {m: served[m] for m in masks if m in served}, exhausted

    def _train(self, todo: list[int], served: dict[int, Expansion]) -> bool:
        """Train ``todo`` through the session; True when the deadline cut it short."""
        sets = [self.space.names_of(m) for m in todo]
        results = self.session.map_unordered(expand_task, [(fs,) for fs in sets])
        try:
            while True:
                if self.deadline is not None and time.perf_counter() >= self.deadline:
                    return True
                try:
                    position, exp = next(results)
                except StopIteration:
                    return False
                features = sets[position]
                exp = self._checked(exp, features)
                self.trained += 1
                self.fit_seconds += exp.fit_seconds
                if self.cache is not None:
                    self.cache[features] = exp
                served[todo[position]] = exp
                if self.progress is not None:
                    self.progress(exp)
        finally:
            results.close()

    @staticmethod
    def _checked(exp: Any, features: frozenset) -> Expansion:
        if not isinstance(exp, Expansion):
            raise InvalidArgumentError(f"learner.expand must return lattice.Expansion, got {exp!r}")
        if frozenset(exp.features) != features:
            raise InvalidArgumentError(
                f"expansion for {sorted(features)!r} names features {sorted(exp.features)!r}"
            )
        if not (math.isfinite(exp.accuracy) and 0.0 <= exp.accuracy <= 1.0):
            raise InvalidArgumentError(
                f"accuracy of {sorted(features)!r} must be in [0, 1], got {exp.accuracy!r}"
            )
        return exp
