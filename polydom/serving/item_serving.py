"""Budgeted prediction of one raw item: look up the model, compute only its features, predict.

:func:`predict_item` takes the size from the item (the featurizer's size function), asks the
index for the best model whose cost fits the budget at that size, runs only that model's
feature routines (timed) and predicts.  Its any-time mode computes features one at a time in
an order that keeps a stored model on what is already computed, re-plans against the
*measured* time left after each feature, and answers with the best model on what was
computed when time runs out (or with a better one when time is left over).
"""

from __future__ import annotations

import math
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from polydom.curves.candidate import Candidate
from polydom.curves.domain import check_budget, check_size
from polydom.curves.units import time_unit_seconds, unit_name
from polydom.errors import InvalidArgumentError
from polydom.index.built import Index
from polydom.index.item_prediction import ItemPrediction
from polydom.index.lazy_payload import resolve_payload
from polydom.serving.cascade import Cascade
from polydom.serving.telemetry import TimingBuffer

if TYPE_CHECKING:
    from polydom.serving.featurizer import Featurizer

__all__ = ["ItemServer", "predict_item"]


class ItemServer:
    """Serves raw items from an :class:`polydom.Index` with a :class:`Featurizer`.

    Holds, once per index, a candidates x features membership matrix so that any-time
    re-planning is a few vectorised operations.  :func:`predict_item` keeps one per index.

    Parameters
    ----------
    index : polydom.Index
        The built index; candidates' payloads are fitted models (``predict`` on rows laid
        out by ``index.model_columns``).
    featurizer : Featurizer
        Computes the features; every feature of every candidate must be registered in it
        with the same columns as in ``index.columns``.

    Budgets and predicted costs are in the index's cost unit (``info["cost_unit"]``); the
    measured seconds of the features are converted into it (:mod:`polydom.curves.units`)
    before they are compared with a budget.  An index whose unit is not one of time
    (``"units"``, the default of a build that does not say) is served as if its costs were
    seconds.

    Raises
    ------
    ValueError
        If a candidate needs a feature the featurizer lacks, or the columns differ.
    """

    def __init__(self, index: Index, featurizer: Featurizer) -> None:
        self.index = index
        self.featurizer = featurizer
        names = featurizer.names
        fz_columns = featurizer.columns
        cands: list[Candidate] = index.candidates
        used = set().union(*(c.needs for c in cands)) if cands else set()
        missing = sorted(used - set(names))
        if missing:
            raise InvalidArgumentError(
                f"the index's candidates use feature(s) {missing} the featurizer does not "
                f"have; featurizer: {names}"
            )
        for name in sorted(used):
            if index.columns.get(name) != fz_columns[name]:
                raise InvalidArgumentError(
                    f"columns of feature {name!r} differ: index {index.columns.get(name)}, "
                    f"featurizer {fz_columns[name]}"
                )
            if name not in index.costs:
                raise InvalidArgumentError(f"the index has no cost curve for feature {name!r}")
        self._names = names
        self._pos = {name: i for i, name in enumerate(names)}
        self._cands = cands
        self._position = {c.key: i for i, c in enumerate(cands)}
        self._mask = np.zeros((len(cands), len(names)), dtype=bool)
        for i, c in enumerate(cands):
            for f in c.needs:
                self._mask[i, self._pos[f]] = True
        self._acc = np.array([c.accuracy for c in cands])
        self._has_model = np.array([c.payload is not None for c in cands], dtype=bool)
        self._cost_cache: dict[float, np.ndarray] = {}
        self.cost_unit = unit_name(index.info)
        seconds_per_unit = time_unit_seconds(self.cost_unit)
        #: Cost of one measured second in the index's unit (1000 for ms).
        self.per_second = 1.0 if seconds_per_unit is None else 1.0 / seconds_per_unit

    # ------------------------------------------------------------------ helpers
    def feature_costs(self, size: float) -> np.ndarray:
        """Predicted cost of every featurizer feature at ``size`` (0 for uncosted ones)."""
        cached = self._cost_cache.get(size)
        if cached is None:
            costs = self.index.costs
            cached = np.array(
                [float(costs[f](size)) if f in costs else 0.0 for f in self._names]
            )
            if len(self._cost_cache) < 4096:
                self._cost_cache[size] = cached
        return cached

    def _best_on(self, done: np.ndarray) -> int:
        """Position of the most accurate candidate with a model whose features are all done."""
        ok = self._has_model & ~(self._mask & ~done).any(axis=1)
        if not ok.any():
            return -1
        acc = np.where(ok, self._acc, -np.inf)
        return int(np.argmax(acc))

    def _predict(self, cand: Candidate, row: np.ndarray) -> Any:
        cols = self.index.model_columns(cand.needs)
        return resolve_payload(cand.payload).predict(row[cols][None, :])[0]

    # ------------------------------------------------------------------ serving
    def predict(self, item: Any, budget: float, anytime: bool = False,
                check_input: bool = True) -> ItemPrediction:
        """Serve one item within ``budget`` of feature time, in the index's cost unit
        (``check_input=False``: ``budget`` was checked,
        :func:`polydom.curves.domain.check_budget`, already).

        Plain mode: the index's choice for (size, budget) answers, after computing exactly
        the atomic features it needs (in registration order; a featurizer feature is an
        atom), however long they take.  A model with its own ``predict_item(item,
        featurizer)`` (an adaptive model such as CEGB behind its column subset) computes
        the atoms its path needs, on demand; a :class:`polydom.serving.Cascade` escalates stage by
        stage while its measured time and the next stage's predicted cost fit ``budget``.

        Any-time mode (``anytime=True``): features are computed one at a time.  Before each,
        with ``S`` the features computed, ``a`` the accuracy of the best stored model on
        ``S`` and ``r`` the measured time left, the goal is the most accurate candidate whose
        missing features are predicted to fit in ``r`` (the first goal is the index's
        choice).  If it is no better than ``a``, serving stops.  Otherwise the next feature
        is the cheapest missing one of the cheapest candidate (by missing cost) inside
        ``S`` plus the goal's features that beats ``a``, so each completed step leaves a
        better stored model on ``S``; once one model is complete there is always one to
        answer.  The best model on ``S`` answers.  A candidate's remaining cost is the sum of
        the costs of the atoms it needs that are not computed yet (each atom once: an atom
        shared by two candidates is computed once and counts for both).

        Runtime complexity: O(log R + d log S) for the lookup, plus the routines; any-time
        adds O(K * F) vectorised work per computed feature for K candidates, F features.

        Raises
        ------
        ValueError
            On a bad budget, a size outside the index domain, or (plain mode) a chosen
            candidate without a model.
        DamagedStoreError
            When the chosen model's stored blob is damaged or untrusted (the store's
            fault, not the item's).
        """
        wall = time.perf_counter()
        if check_input:
            budget = check_budget(budget)
        fz = self.featurizer
        fz.forget()  # a served item pays its set's shared steps once, and none of another's
        size = check_size(fz.size(item), *self.index.table.domain)
        hit = self.index.lookup(size, budget, check_input=False)
        planned_key = None if hit is None else hit.key
        predicted = 0.0 if hit is None else float(hit.cost)
        row = np.full(fz.n_columns, np.nan)
        columns = fz.columns
        computed: list[str] = []
        seconds: dict[str, float] = {}

        def run(name: str) -> None:
            vec, sec = fz.compute(item, name)
            row[columns[name]] = vec
            computed.append(name)
            seconds[name] = sec

        if not anytime:
            if hit is None:
                return self._result(None, None, computed, seconds, planned_key, predicted,
                                    size, budget, anytime, wall)
            if hit.model is None:
                raise InvalidArgumentError(
                    f"candidate {hit.key!r} has no fitted model to predict with")
            on_demand = getattr(hit.model, "predict_item", None)
            if callable(on_demand):
                # an adaptive model computes an atom only when its path needs it; a cascade
                # escalates only while the budget allows
                if isinstance(hit.model, Cascade):
                    out = hit.model.predict_item(item, fz, budget=budget,
                                                 per_second=self.per_second)
                else:
                    out = on_demand(item, fz)
                computed.extend(out.computed)
                seconds.update(out.feature_seconds)
                return self._result(hit.candidate, out.label, computed, seconds, planned_key,
                                    predicted, size, budget, anytime, wall, out.stage)
            for name in fz.check_features(hit.candidate.needs):
                run(name)
            return self._result(hit.candidate, self._predict(hit.candidate, row), computed,
                                seconds, planned_key, predicted, size, budget, anytime, wall)

        costs = self.feature_costs(size)
        done = np.zeros(len(self._names), dtype=bool)
        mask, acc, has_model = self._mask, self._acc, self._has_model
        first = True
        while True:
            current = self._best_on(done)
            a = acc[current] if current >= 0 else -np.inf
            missing = (mask & ~done) @ costs
            left = budget - sum(seconds.values()) * self.per_second
            if first and hit is not None and hit.model is not None:
                goal = self._position[hit.key]
            else:
                fits = has_model & (missing <= left + 1e-9 * budget)
                if fits.any():
                    goal = int(np.lexsort((missing, -np.where(fits, acc, -np.inf)))[0])
                elif current < 0 and done.any() and has_model.any():
                    # time spent and nothing stored to answer yet: finish the cheapest model
                    goal = int(np.argmin(np.where(has_model, missing, np.inf)))
                else:
                    break
            first = False
            if acc[goal] <= a or not (mask[goal] & ~done).any():
                break
            scope = done | mask[goal]
            steps = (
                has_model
                & (acc > a)
                & ~(mask & ~scope).any(axis=1)
                & (mask & ~done).any(axis=1)
            )
            step = int(np.lexsort((-acc, np.where(steps, missing, np.inf)))[0])
            todo = np.flatnonzero(mask[step] & ~done)
            nxt = int(todo[np.argmin(costs[todo])])
            run(self._names[nxt])
            done[nxt] = True
        current = self._best_on(done)
        if current < 0:
            return self._result(None, None, computed, seconds, planned_key, predicted,
                                size, budget, anytime, wall)
        cand = self._cands[current]
        return self._result(cand, self._predict(cand, row), computed, seconds, planned_key,
                            predicted, size, budget, anytime, wall)

    def _result(
        self, cand: Candidate | None, label: Any, computed: list[str], seconds: dict[str, float],
        planned_key: Any, predicted: float, size: float, budget: float, anytime: bool,
        wall: float, stage: int = -1,
    ) -> ItemPrediction:
        return ItemPrediction(
            label=label,
            key=None if cand is None else cand.key,
            model_features=frozenset() if cand is None else cand.features,
            accuracy=math.nan if cand is None else cand.accuracy,
            computed=tuple(computed),
            feature_seconds=dict(seconds),
            planned_key=planned_key,
            predicted_cost=predicted,
            size=size,
            budget=budget,
            anytime=anytime,
            wall_seconds=time.perf_counter() - wall,
            stage=stage,
            cost_unit=self.cost_unit,
            per_second=self.per_second,
        )


_SERVERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def predict_item(
    index: Index, item: Any, budget: float, featurizer: Featurizer, anytime: bool = False,
    telemetry: TimingBuffer | None = None,
) -> ItemPrediction:
    """Predict ``item`` with the best model whose features fit ``budget`` at its size.

    The size comes from ``featurizer.size(item)``; only the chosen model's features are
    computed (timed); see :meth:`ItemServer.predict` for both modes.  The server built for
    an (index, featurizer) pair is kept (weakly) and reused.  With ``telemetry`` (a
    :class:`polydom.serving.TimingBuffer`), every computed feature's
    ``(feature, size, seconds)`` is appended to it after the prediction (O(1) each).

    Runtime complexity: O(log R + d log S) plus the chosen routines.

    >>> import numpy as np, polydom
    >>> from sklearn.dummy import DummyClassifier
    >>> fz = polydom.Featurizer(size=len).add("sum", lambda x: [sum(x)], 1)
    >>> model = DummyClassifier(strategy="constant", constant=1).fit([[0.0]], [1])
    >>> cand = polydom.Candidate("s", 0.9, "1e-3*n", features={"sum"}, payload=model)
    >>> index = polydom.Index(polydom.PolyDomIndex.build([cand]), {"sum": "1e-3*n"},
    ...                       columns=fz.columns)
    >>> p = predict_item(index, [1.0, 2.0], budget=1.0, featurizer=fz)
    >>> p.label, p.computed, p.predicted_cost
    (np.int64(1), ('sum',), 0.002)

    Returns
    -------
    ItemPrediction

    Raises
    ------
    ValueError
        As :meth:`ItemServer.predict`, or when the featurizer does not fit the index.
    """
    servers = _SERVERS.get(index)
    if servers is None:
        servers = {}
        _SERVERS[index] = servers
    server = servers.get(id(featurizer))
    if server is None or server.featurizer is not featurizer:
        server = ItemServer(index, featurizer)
        servers[id(featurizer)] = server
    prediction = server.predict(item, budget, anytime=anytime)
    if telemetry is not None:
        telemetry.record_prediction(prediction)
    return prediction
