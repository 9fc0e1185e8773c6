"""Index and Hit: the end-to-end face of a built index (models attached to candidates)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.calibration import calibrate_overrun
from polydom.curves.candidate import Candidate
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.curve_text import natural_key, number_text
from polydom.curves.domain import check_queries, check_query, check_rows
from polydom.curves.names import candidate_name
from polydom.curves.units import (
    CostUnit,
    cost_unit_for,
    parse_budget,
    unit_name,
    without_noise,
)
from polydom.errors import InvalidArgumentError
from polydom.index.explanation import Explanation, explain_lookup
from polydom.index.item_prediction import ItemPrediction
from polydom.index.lazy_payload import resolve_payload
from polydom.index.served_cost import ServedCost, stored_overrun
from polydom.index.table import RuleUnavailableError, SkylineTable, check_rule

__all__ = ["Hit", "Index"]

_MAX_FLOAT = sys.float_info.max


def _checked_query(table: SkylineTable, info: Mapping[str, Any], size: Any, budget: Any,
                   rule: Any) -> tuple[float, float, str]:
    """:meth:`Index.check_query` against a build's table and ``info``: a budget written as
    text (``"5ms"``, ``"2.5e-3s"``, ``"1e-5"``: a bare number in the store's unit) is
    read by :func:`polydom.curves.units.parse_budget`, as on the command line and HTTP."""
    if rule != "best":
        _check_rule(info, rule)
    if isinstance(budget, str):
        budget = parse_budget(budget, cost_unit_for(unit_name(info), None))
    size, budget = check_query(size, budget, table._lo, table._hi)
    return size, budget, rule


def _check_rule(info: Mapping[str, Any], rule: object) -> str:
    """:meth:`Index.check_rule` against a build's ``info``."""
    check_rule(rule)
    missing = info.get("no_standard_errors")
    if rule == "one_se" and missing:
        raise RuleUnavailableError(
            f"rule 'one_se' needs each candidate's standard error, but {missing}; "
            "answer with rule='best', or build into a new store to keep standard errors")
    return rule


@dataclass(frozen=True, slots=True)
class Hit:
    """The answer of :meth:`Index.lookup`: the chosen model and what it costs at that size.

    Attributes
    ----------
    key : hashable
        The candidate's key.
    features : frozenset of str
        Features the model needs.
    accuracy : float
        Its estimated accuracy.
    cost : float
        Its cost at the queried size.
    model : object or None
        The fitted model (None for learners that only score); a stored model is built on
        this first access (:mod:`polydom.index.lazy_payload`), so a lookup decodes nothing.
    payload : object or None
        What the candidate carries: the model, or a :class:`LazyPayload` that builds it.
    candidate : Candidate
        The candidate itself.
    info : mapping
        The ``info`` of the build the answer came from (what the three below read).
    accuracy_se : float or None
        The standard error of ``accuracy`` (None when the index keeps none: a store of
        schema version 2 or older).
    build : int or None
        The build the answer came from (``info["build_id"]``).
    unit : str
        The unit of ``cost``: the build's cost unit (:func:`polydom.curves.units.unit_name`).
    learner : str or None
        Name of the learner that produced the model (the candidate's ``learner``).
    name : str
        The candidate's name as every door prints it
        (:func:`polydom.curves.names.candidate_name`).
    size : float or None
        The item size the lookup was asked at (None for a Hit made by hand).
    served_cost : ServedCost or None
        The build's pricing of served models (what :meth:`row_costs` uses; None for a Hit
        made by hand).

    :meth:`to_dict` gives the fields that ``GET /lookup`` (its ``model``) and ``polydom
    lookup --json`` answer with, with the same values.

    The repr shows numbers to 12 significant digits (no float noise such as
    ``cost=54.00000000000001``) and the features in natural order:

    >>> Hit("a", frozenset({"x13", "x2"}), 0.9, 54.00000000000001, None,
    ...     Candidate("a", 0.9, [54.00000000000001], learner="tree"))
    Hit(key='a', learner='tree', features=['x2', 'x13'], accuracy=0.9, cost=54)
    """

    key: Any
    features: frozenset
    accuracy: float
    cost: float
    payload: Any = field(repr=False)
    candidate: Candidate = field(repr=False)
    info: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    size: float | None = field(default=None, repr=False)
    served_cost: ServedCost | None = field(default=None, repr=False, compare=False)

    @property
    def model(self) -> Any:
        """The fitted model, built on first access when it is stored.  O(1) after."""
        return resolve_payload(self.payload)

    @property
    def learner(self) -> str | None:
        """Name of the learner that produced the model.  O(1)."""
        return self.candidate.learner

    @property
    def accuracy_se(self) -> float | None:
        """The standard error of :attr:`accuracy` (None when the build keeps none).  O(1)."""
        return None if self.info.get("no_standard_errors") else self.candidate.accuracy_se

    @property
    def build(self) -> Any:
        """The build the answer came from.  O(1)."""
        return self.info.get("build_id")

    @property
    def unit(self) -> str:
        """The unit of :attr:`cost`, the build's cost unit.  O(1)."""
        return unit_name(self.info)

    @property
    def name(self) -> str:
        """The candidate's name, as every door prints it.  O(k log k) for a key of k parts."""
        return candidate_name(self.key)

    def to_dict(self, unit: CostUnit | None = None) -> dict[str, Any]:
        """The answer as every door gives it: ``name``, ``features`` (in natural order),
        ``accuracy``, ``accuracy_se``, ``learner``, ``build``, ``cost``, its ``unit`` and
        the ``cost_curve`` (text, 6 significant digits), costs in ``unit`` (default the
        build's own) to 15 significant digits (no float noise).  ``GET /lookup``'s and
        ``polydom lookup --json``'s ``model`` is this record (:mod:`polydom.serving.query`).

        Runtime complexity: O(F log F) for F features.

        >>> Hit(("b", "a"), frozenset({"x13", "x2"}), 0.9, 54.0, None,
        ...     Candidate("a", 0.9, [54.0], learner="tree", accuracy_se=0.01),
        ...     {"build_id": 3, "cost_unit": "ms"}).to_dict()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'name': 'b+a', 'features': ['x2', 'x13'], 'accuracy': 0.9, 'accuracy_se': 0.01,
         'learner': 'tree', 'build': 3, 'cost': 54.0, 'unit': 'ms', 'cost_curve': '54'}
        """
        unit = unit or cost_unit_for(self.unit, None)
        return {"name": self.name,
                "features": sorted(map(str, self.features), key=natural_key),
                "accuracy": self.accuracy, "accuracy_se": self.accuracy_se,
                "learner": self.learner, "build": self.build,
                "cost": without_noise(unit.shown(self.cost)),
                "unit": unit.name, "cost_curve": (self.candidate.cost * unit.scale).text()}

    def row_costs(self, X_rows: np.ndarray) -> np.ndarray:
        """What the served model costs on each row of ``X_rows`` at the lookup's size.

        ``X_rows`` are full rows (every atom's columns, as :meth:`Index.predict` takes
        them).  An adaptive model (every budgeted learner's) pays for each row the atoms it
        computes for that row; any other model its stored cost :attr:`cost` on every row
        (see :class:`polydom.index.served_cost.ServedCost`).  The mean over rows drawn as
        the item's rows are is what the pick realises per row; :attr:`cost` is the stored
        estimate of it (see docs/evaluation.md, "What each stored number describes").

        Runtime complexity: that of the model's ``feature_usage`` plus O(rows * atoms).

        >>> import polydom
        >>> table = polydom.PolyDomIndex.build([polydom.Candidate("a", 0.9, "2 + n",
        ...                                                       features={"x"})])
        >>> hit = polydom.Index(table, {"x": "2 + n"}).lookup(3.0, 10.0)
        >>> hit.row_costs(np.zeros((2, 1))).tolist()
        [5.0, 5.0]

        Raises
        ------
        ValueError
            If the Hit was not returned by :meth:`Index.lookup` (it knows no build), or
            ``X_rows`` is not as wide as the build's rows.
        """
        if self.served_cost is None or self.size is None:
            raise InvalidArgumentError(
                f"Hit {self.key!r} knows no build to price rows with; take it from "
                "Index.lookup")
        return self.served_cost.row_costs(self.candidate, self.model, X_rows, self.size)

    def __repr__(self) -> str:
        features = sorted(map(str, self.features), key=natural_key)
        return (f"Hit(key={self.key!r}, learner={self.learner!r}, features={features!r}, "
                f"accuracy={number_text(self.accuracy, 12)}, "
                f"cost={number_text(self.cost, 12)})")


class Index:
    """A built index with its models: ``lookup`` returns a :class:`Hit`, ``predict`` applies it.

    Parameters
    ----------
    table : SkylineTable
        The poly-dominance index over the candidates (their payload is the fitted model).
    costs : CostModel or mapping of str to CostCurve
        The cost model: atoms with their cost curves (and bundles); a plain mapping is a
        model of atoms only.
    columns : mapping of str to list of int, optional
        Columns of the training matrix that each atom occupies (replacing the cost model's
        columns); :meth:`predict` cuts a model's columns out of a full row with
        :meth:`CostModel.columns_of` of its candidate's needs.  One column per atom, in
        atom order, when neither gives columns.
    info : mapping, optional
        Build parameters and counts (alpha, delta, expansions, ...).

    Raises
    ------
    ValueError
        If ``columns`` names something that is not an atom, or two atoms claim a column.
    """

    def __init__(
        self,
        table: SkylineTable,
        costs: CostModel | Mapping[str, CostCurve],
        columns: Mapping[str, list[int]] | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        self.table = table
        model = CostModel.coerce(costs)
        if columns is not None:
            model = model.with_columns(columns)
        elif not model.columns:
            model = model.with_columns({name: [i] for i, name in enumerate(model.atoms)})
        self.cost_model = model
        #: Cost curve of every atom (the cost model's atoms).
        self.costs = model.atoms
        #: Columns of every atom that has some.
        self.columns = model.columns
        self.info = dict(info or {})
        #: Prices the served models row by row (:meth:`Hit.row_costs`).
        self.served_cost = ServedCost(model, table.candidates, self.info)
        self._source: Callable[[Any], Index | None] | None = None
        self._recalibrator: Callable[..., Any] | None = None
        #: Serialises :meth:`refresh` (never swapped with the state it guards).
        self._refresh_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_refresh_lock", None)  # a lock does not pickle or copy
        state.pop("_at_overrun", None)  # derived: swept again on demand
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = {**state, "_refresh_lock": threading.Lock()}

    def _view(self) -> Index:
        """This index's state as it is now, unaffected by a later :meth:`refresh`.

        :meth:`refresh` replaces ``__dict__`` whole; the view holds the dict read here
        (one read), so everything taken from it belongs to one build.  O(1), no copy.
        """
        view = object.__new__(type(self))
        view.__dict__ = self.__dict__
        return view

    def snapshot(self) -> Index:
        """This index as it is now: an index of one build that a later :meth:`refresh`
        leaves alone (a service takes one per request, so no answer mixes two builds).

        Runtime complexity: O(1), no copy.
        """
        return self._view()

    def __repr__(self) -> str:
        return f"Index({self.table!r}, features={list(self.costs)})"

    def follow(self, source: Callable[[Any], Index | None]) -> Index:
        """Let :meth:`refresh` replace this index by newer builds; returns ``self``.

        ``source(build_id)`` returns the index of the newest build, or None while
        ``build_id`` (this index's ``info["build_id"]``) is still the newest.
        :func:`polydom.open_index` sets it to read the store's current build.

        Runtime complexity: O(1).
        """
        self._source = source
        return self

    @property
    def follows_store(self) -> bool:
        """Whether :meth:`refresh` can switch this index to newer builds (see :meth:`follow`)."""
        return self._source is not None

    def refresh(self) -> bool:
        """Switch to the newest build of the store this index was opened from, if any.

        The new build is read in one transaction, and this index's whole state (table,
        cost model, columns, info) is replaced in one step, so a caller sees the old index
        or the new one, never a mix.  Thread-safe: a lock lets one refresh run at a time
        (two overlapping refreshes could otherwise load different builds and leave the
        older one in place), and :meth:`lookup`, :meth:`predict` and :meth:`predict_item`
        each answer from one build's state, read once, while other threads refresh.  (A
        caller reading several attributes, ``info`` then ``lookup`` say, may see two
        builds; :meth:`lookup`'s :class:`Hit` carries its own candidate.)

        Runtime complexity: one query when nothing changed; otherwise what
        :func:`polydom.open_index` costs.

        Returns
        -------
        bool
            True when the index switched to a newer build.

        Raises
        ------
        ValueError
            If the index did not come from :func:`polydom.open_index` without ``build``.
        """
        if self._source is None:
            raise InvalidArgumentError(
                "this index does not follow a store (open it with polydom.open_index(url) "
                "without build=...)"
            )
        with self._refresh_lock:
            newer = self._source(self.info.get("build_id"))
            if newer is None:
                return False
            state = dict(newer.__dict__)
            state["_source"] = self._source
            state["_recalibrator"] = self._recalibrator
            state["_refresh_lock"] = self._refresh_lock
            self.__dict__ = state  # one assignment: the old state or the new one
            return True

    # ------------------------------------------------------------------ costs in situ
    def with_candidate_costs(
        self, costs: Sequence[CostCurve], info: Mapping[str, Any] | None = None
    ) -> Index:
        """A new index over the same candidates and models with new cost curves, re-swept.

        ``costs[i]`` replaces the curve of ``candidates[i]``; the table (same kind, same
        domain) is built again by a fresh sweep; models, accuracies, needs and the cost model
        are kept (nothing is trained).  ``info`` (default this index's) is the new index's.

        Runtime complexity: the sweep's, O(K * S + (S + X) log S).

        Raises
        ------
        ValueError
            If ``costs`` does not hold one curve per candidate, or a curve is negative on
            the domain.
        """
        cands = self.candidates
        if len(costs) != len(cands):
            raise InvalidArgumentError(
                f"costs must hold one curve per candidate ({len(cands)}), got {len(costs)}"
            )
        new = [dataclasses.replace(c, cost=CostCurve.coerce(k))
               for c, k in zip(cands, costs, strict=True)]
        n_min, n_max = self.table.domain
        table = type(self.table).build(new, n_min, n_max)
        return Index(table, self.cost_model, info=self.info if info is None else info)

    def calibrated(
        self,
        sizes: Sequence[float] | np.ndarray,
        timings: Mapping[str, Sequence[float] | np.ndarray],
        target_overrun: float = 0.05,
        score: str = "auto",
        levels: Sequence[float] = (),
        seed: int = 0,
    ) -> Index:
        """This index swept on curves calibrated to overrun at most ``target_overrun``.

        Each candidate's curve gets its split-conformal factor or offset on the held-out
        in-situ ``timings`` (atom -> seconds per item, items of ``sizes``; see
        :func:`polydom.curves.calibration.calibrate_overrun` for the method, the ``score``,
        the guarantee and its assumptions).  Every candidate is calibrated, dominated ones
        too: an index built with ``keep_trained=True`` (:func:`polydom.build_index`) keeps
        every trained set, so the sweep on the calibrated curves chooses among all of them.
        The atoms' curves are kept; ``info["overrun"]`` records the target, the score, the
        number of items, every candidate's factor, offset, chosen score and held-out
        overrun (what :meth:`with_atom_costs` keeps when it recalibrates), and under
        ``"levels"`` the factors and offsets of every other rate in ``levels``, for
        :meth:`at_overrun`.  Calibrating a calibrated index composes the two (and drops
        the first one's other levels).

        Runtime complexity: O(L * K * (A + I)) for L levels, plus a sweep.

        Raises
        ------
        ValueError
            As :func:`~polydom.curves.calibration.calibrate_overrun`, for any level.
        """
        cands = self.candidates
        base = [c.cost for c in cands]
        need = [c.needs for c in cands]
        k0, d0 = self.overrun_factors(), self.overrun_offsets()
        cal = calibrate_overrun(base, need, sizes, timings, target_overrun, score, seed)
        others = {}
        for level in levels:
            if float(level) == cal.target_overrun:
                continue
            other = calibrate_overrun(base, need, sizes, timings, level, score, seed)
            others[repr(other.target_overrun)] = {
                "factors": [float(v) for v in other.factors * k0],
                "offsets": [float(v) for v in other.factors * d0 + other.offsets],
            }
        info = {**self.info, "overrun": {
            "target_overrun": cal.target_overrun,
            "score": cal.score,
            "items": cal.items,
            "factors": [float(v) for v in cal.factors * k0],
            "offsets": [float(v) for v in cal.factors * d0 + cal.offsets],
            "chosen": list(cal.chosen),
            "held_out": [None if np.isnan(v) else float(v) for v in cal.held_out],
            "levels": others,
        }}
        return self.with_candidate_costs(cal.curves(base), info)

    def overrun_levels(self) -> list[float]:
        """Overrun rates this index can answer at (:meth:`at_overrun`), smallest first.

        Runtime complexity: O(L).
        """
        overrun = self.info.get("overrun")
        if not isinstance(overrun, Mapping):
            return []
        levels = {float(overrun["target_overrun"])}
        stored = overrun.get("levels")
        if isinstance(stored, Mapping):
            levels |= {float(v) for v in stored}
        return sorted(levels)

    def at_overrun(self, level: float) -> Index:
        """This index swept on the curves calibrated to overrun rate ``level``.

        ``level`` is the calibration's target (this index itself) or one of the other
        ``levels`` :meth:`calibrated` was given; each candidate's uncalibrated curve
        ``(c - d) / k`` is calibrated with that level's factor and offset.  The result is
        kept per level (a sweep once per build and level).

        Runtime complexity: O(1) when kept, else a sweep.

        Raises
        ------
        ValueError
            If the index holds no calibration for ``level`` (naming the ones it holds).
        """
        view = self._view()
        overrun = view.info.get("overrun")
        target = overrun.get("target_overrun") if isinstance(overrun, Mapping) else None
        if target is not None and float(level) == float(target):
            return view
        levels = overrun.get("levels") if isinstance(overrun, Mapping) else None
        stored = levels.get(repr(float(level))) if isinstance(levels, Mapping) else None
        if not isinstance(stored, Mapping):
            raise InvalidArgumentError(
                f"overrun must be one of the rates this index is calibrated for "
                f"{view.overrun_levels()}, got {level!r}")
        kept = view.__dict__.setdefault("_at_overrun", {})
        if level not in kept:
            k, d = view.overrun_factors(), view.overrun_offsets()
            curves = []
            for cand, k0, d0, k1, d1 in zip(view.candidates, k, d, stored["factors"],
                                            stored["offsets"], strict=True):
                coef = cand.cost.coefficients.astype(np.float64)
                coef[0] -= d0
                scale = float(k1) / k0 if k0 > 0 else float(k1)  # k0 = 0: the base was all 0
                curves.append(CostCurve(np.maximum(coef, 0.0) * scale) + float(d1))
            info = {**view.info, "overrun": {**overrun, "target_overrun": float(level),
                                             "factors": list(stored["factors"]),
                                             "offsets": list(stored["offsets"])}}
            kept[level] = view.with_candidate_costs(curves, info)
        return kept[level]

    def _overrun(self, field: str, default: float) -> np.ndarray:
        return stored_overrun(self.info, field, default, len(self.candidates))

    def overrun_factors(self) -> np.ndarray:
        """Each candidate's calibration factor (``info["overrun"]``; all 1.0 uncalibrated).

        Runtime complexity: O(K).
        """
        return self._overrun("factors", 1.0)

    def overrun_offsets(self) -> np.ndarray:
        """Each candidate's calibration offset in seconds (all 0.0 uncalibrated).

        Runtime complexity: O(K).
        """
        return self._overrun("offsets", 0.0)

    def with_atom_costs(
        self, atoms: Mapping[str, CostCurve], info: Mapping[str, Any] | None = None,
        steps: Mapping[str, CostCurve] | None = None, start: Any = None,
    ) -> Index:
        """This index with new atom curves (and shared steps' and start curves), every
        candidate's curve derived again, re-swept.

        A candidate's curve is ``k * (expected_cost(needs) + overhead) + d`` under the cost
        model: ``k`` and ``d`` its calibration factor and offset (:meth:`overrun_factors`,
        :meth:`overrun_offsets`), ``overhead`` what its learner adds beyond its atoms
        (CEGB's split cost; 0 for lattice sets), all kept from this index; only the units'
        curves change (:meth:`polydom.CostModel.with_curves`: ``steps`` and ``start`` as
        there).  Models are reused, nothing is trained.  Atoms and steps missing from
        ``atoms`` and ``steps`` keep their curve.

        Runtime complexity: O(K * A * d) plus a sweep.

        Raises
        ------
        ValueError
            On an unknown atom or a curve negative on the domain.
        """
        old = self.cost_model
        unknown = sorted(set(atoms) - set(old.atoms))
        if unknown:
            raise InvalidArgumentError(
                f"unknown atom {unknown[0]!r}; the index's atoms: {list(old.atoms)}")
        model = old.with_curves(atoms={a: CostCurve.coerce(c) for a, c in atoms.items()},
                                steps=steps, start=start)
        costs = []
        for cand, k, d in zip(self.candidates, self.overrun_factors(), self.overrun_offsets(),
                              strict=True):
            was = old.expected_cost(cand.needs).coefficients * k
            now = model.expected_cost(cand.needs).coefficients * k
            have = cand.cost.coefficients
            width = max(was.size, now.size, have.size)
            was, now, have = (np.pad(a, (0, width - a.size)) for a in (was, now, have))
            extra = have - was
            extra[0] -= d
            if np.all(np.abs(extra) <= 1e-9 * max(float(np.abs(have).max()), 1e-300)):
                extra[:] = 0.0  # no overhead: exactly k times the atoms' sum plus d
            now[0] += d
            costs.append(CostCurve(now + np.maximum(extra, 0.0)))
        table_info = self.info if info is None else info
        rebuilt = Index(self.table, model, info=table_info)
        return rebuilt.with_candidate_costs(costs)

    def bind_recalibration(self, recalibrate: Callable[..., Any]) -> Index:
        """Let :meth:`recalibrate` publish through ``recalibrate(index, **options)``.

        :func:`polydom.open_index` binds the store's recalibration (the pipeline's, which
        needs storage); returns ``self``.  Runtime complexity: O(1).
        """
        self._recalibrator = recalibrate
        return self

    def recalibrate(self, **options: Any) -> Any:
        """Refit the atoms' curves from recorded timings and publish a re-swept build.

        See :func:`polydom.recalibrate` for the options; no model is retrained.  An index
        that follows its store switches to the new build (:meth:`refresh`).

        Returns
        -------
        The result of :func:`polydom.recalibrate` (its report).

        Raises
        ------
        ValueError
            If this index was not opened from a store (:func:`polydom.open_index`).
        """
        if getattr(self, "_recalibrator", None) is None:
            raise InvalidArgumentError(
                "this index has no store to recalibrate into (open it with "
                "polydom.open_index(url))"
            )
        report = self._recalibrator(self, **options)
        if self._source is not None:
            self.refresh()
        return report

    @property
    def candidates(self) -> list[Candidate]:
        """Every candidate of the index."""
        return self.table.candidates

    @property
    def n_columns(self) -> int:
        """Width of a full row: one more than the largest column of any atom."""
        return 1 + max((c for cols in self.columns.values() for c in cols), default=-1)

    def model_columns(self, names: Iterable[str]) -> list[int]:
        """Columns of a full row that a model on ``names`` (atoms or bundles, e.g. a
        candidate's needs) takes: :meth:`CostModel.columns_of`, the sorted union.

        Runtime complexity: O(c log c) for c columns.
        """
        return self.cost_model.columns_of(names)

    @staticmethod
    def _hit(table: SkylineTable, info: Mapping[str, Any], position: int, size: float,
             served_cost: ServedCost | None = None) -> Hit | None:
        """The :class:`Hit` of ``position`` (-1: None) at ``size``, of the build of
        ``info`` (priced row by row by ``served_cost``).  O(d) for a curve of degree d."""
        if position < 0:
            return None
        cand = table._candidates[position]
        return Hit(cand.key, cand.features, cand.accuracy, cand.cost(size), cand.payload, cand,
                   info, size, served_cost)

    def lookup(self, size: float, budget: float, rule: str = "best",
               check_input: bool = True) -> Hit | None:
        """Best model whose cost at ``size`` is ``<= budget`` (None when none fits).

        ``rule="one_se"``: the cheapest model that fits whose estimated accuracy is within
        one standard error of the best's (see :mod:`polydom.index.table`).
        ``budget`` may be text with its unit (``"5ms"``, ``"2.5e-3s"``; a bare number is in
        the store's unit), as on the command line and over HTTP.  ``check_input=False``
        skips the argument checks (:meth:`check_query`): for a caller that checked them
        already, as scikit-learn's ``check_input``.  The :class:`Hit` names its build and
        the unit of its cost, and carries the standard error of its accuracy.

        Runtime complexity: O(log R + d log S), as :meth:`PolyDomIndex.lookup`.

        Raises
        ------
        TypeError
            If ``size`` or ``budget`` is not one real number.
        ValueError
            If ``size`` is outside the domain, ``budget`` is NaN, infinite or negative, or
            ``rule`` is unknown or unavailable (:meth:`check_rule`).
        """
        state = self.__dict__  # one build's table and info: refresh replaces the dict whole
        table, info = state["table"], state["info"]
        if check_input and not (  # the hot path: Python floats in the domain, "best"
            type(size) is float and type(budget) is float and rule == "best"
            and table._lo <= size <= table._top and 0.0 <= budget <= _MAX_FLOAT
        ):
            size, budget, rule = _checked_query(table, info, size, budget, rule)
        return self._hit(table, info,
                         table.lookup_position(size, budget, rule, check_input=False), size,
                         state["served_cost"])

    def check_query(self, size: Any, budget: Any, rule: Any = "best"
                    ) -> tuple[float, float, str]:
        """``(size, budget, rule)`` checked for this index (:func:`polydom.curves.domain.
        check_query` against its domain, :meth:`check_rule`): what :meth:`lookup`,
        :meth:`explain` and :meth:`predict` check, and what a door checks once before
        calling them with ``check_input=False``.  A budget may be text with its unit
        (:func:`polydom.curves.units.parse_budget`; a bare number is in the store's unit).

        Runtime complexity: O(1).

        >>> import polydom
        >>> table = polydom.PolyDomIndex.build([polydom.Candidate("a", 0.5, "1")], 0, 10)
        >>> Index(table, {"x": "1"}, info={"cost_unit": "s"}).check_query(2, "5ms")
        (2.0, 0.005, 'best')
        """
        state = self.__dict__  # one build's table and info
        return _checked_query(state["table"], state["info"], size, budget, rule)

    def check_rule(self, rule: object) -> str:
        """``rule`` when this index can answer it, else an error naming why not.

        An index opened from a store that keeps no standard errors (schema version 2 or
        older: its ``info["no_standard_errors"]`` says which store) answers ``"best"``
        only: there every candidate's standard error reads as 0, and ``"one_se"`` would
        silently answer as ``"best"``.

        Runtime complexity: O(1).

        >>> import polydom
        >>> table = polydom.PolyDomIndex.build([polydom.Candidate("a", 0.5, "1")])
        >>> Index(table, {"x": "1"}).check_rule("one_se")
        'one_se'

        Raises
        ------
        ValueError
            If ``rule`` is not one of :data:`polydom.index.table.RULES`.
        RuleUnavailableError
            If ``rule`` is ``"one_se"`` and this index has no standard errors.
        """
        return _check_rule(self.info, rule)

    def explain(self, size: float, budget: float, rule: str = "best",
                check_input: bool = True) -> Explanation:
        """Why :meth:`lookup` answers ``(size, budget)`` under ``rule`` as it does.

        The skyline at ``size`` (each entry's cost there and whether it fits), the chosen
        entry, the next dearer one with what it would cost, and a sentence saying why
        nothing more accurate fits (for ``"one_se"``: why the chosen entry and not a more
        accurate one that fits); all from one build (``Explanation.build``).  See
        :func:`polydom.index.explanation.explain_lookup`; ``check_input`` as
        :meth:`lookup`.

        Runtime complexity: O(log R + d * S) for a skyline of S entries.

        Raises
        ------
        ValueError, RuleUnavailableError
            As :meth:`lookup`.
        """
        view = self._view()
        if check_input:
            size, budget, rule = view.check_query(size, budget, rule)
        return explain_lookup(view.table, size, budget, view.info.get("build_id"), rule,
                              check_input=False)

    def lookup_many(
        self, sizes: np.ndarray, budgets: np.ndarray, rule: str = "best",
        check_input: bool = True,
    ) -> np.ndarray:
        """Positions into :attr:`candidates` for many queries (-1 where none fits), under
        ``rule`` as :meth:`lookup` (``check_input=False``: ``sizes`` and ``budgets`` are
        float64 arrays of one shape checked by :func:`polydom.curves.domain.check_queries`,
        ``rule`` by :meth:`check_rule`).

        Runtime complexity: O(Q * d * log S) numpy work for Q queries.
        """
        view = self._view()
        if check_input:
            rule = view.check_rule(rule)
            sizes, budgets = check_queries(sizes, budgets, *view.table.domain)
        return view.table.lookup_many(sizes, budgets, rule, check_input=False)

    def predict(
        self, X_rows: np.ndarray, size: float, budget: float, rule: str = "best",
        check_input: bool = True,
    ) -> np.ndarray:
        """Predict rows of full feature matrices with the model chosen for (size, budget)
        under the lookup ``rule``.

        ``X_rows`` holds every atom's columns (as in training); only the columns of the
        atoms the chosen model needs are passed to it, in :meth:`CostModel.columns_of`
        order.  A NaN marks a feature not computed (:meth:`polydom.Featurizer.transform`'s
        layout) and is passed on; an infinite value, text or a bool is refused.
        ``check_input=False``: the arguments were checked (:meth:`check_query`,
        :func:`polydom.curves.domain.check_rows`) already.

        Runtime complexity: O(log R + d log S) plus the model's prediction.

        Raises
        ------
        ValueError
            If nothing fits the budget, the chosen candidate has no model, ``X_rows`` has
            the wrong number of columns or holds an infinite value (or an integer beyond
            the float range), or as :meth:`lookup`.
        """
        view = self._view()  # one build's table and columns, whatever refresh does
        if check_input:
            size, budget, rule = view.check_query(size, budget, rule)
            X_rows = check_rows(X_rows, view.n_columns, "X_rows", allow_nan=True)
        hit = view.lookup(size, budget, rule, check_input=False)
        if hit is None:
            raise InvalidArgumentError(f"no model fits budget {budget!r} at size {size!r}")
        return view.predict_hit(hit, X_rows, check_input=False)

    def predict_hit(self, hit: Hit, X_rows: np.ndarray, check_input: bool = True
                    ) -> np.ndarray:
        """Predict rows of full feature matrices with the model of ``hit`` (a :class:`Hit`
        of this index's :meth:`lookup`): what :meth:`predict` does after its lookup, for a
        caller that needs the hit too (the service answers with both).

        Runtime complexity: O(rows * columns) plus the model's prediction.

        Raises
        ------
        ValueError
            If the hit has no model, or ``X_rows`` is not rows of :attr:`n_columns` numbers
            that are not infinite (not with ``check_input=False``).
        """
        if check_input:
            X_rows = check_rows(X_rows, self.n_columns, "X_rows", allow_nan=True)
        model = hit.model
        if model is None:
            raise InvalidArgumentError(f"candidate {hit.key!r} has no fitted model to predict with")
        return model.predict(np.asarray(X_rows)[:, self.model_columns(hit.candidate.needs)])

    def realised_cost(
        self, X_rows: np.ndarray, size: float, budget: float, rule: str = "best"
    ) -> np.ndarray:
        """What the model chosen for ``(size, budget)`` under ``rule`` costs on each row of
        ``X_rows`` (full rows, as :meth:`predict` takes them): :meth:`Hit.row_costs` of
        :meth:`lookup`'s answer.  Its mean is the pick's realised cost per row, to hold
        against ``budget``.

        Runtime complexity: a lookup plus that of :meth:`Hit.row_costs`.

        >>> import polydom
        >>> table = polydom.PolyDomIndex.build([polydom.Candidate("a", 0.9, "2 + n",
        ...                                                       features={"x"})])
        >>> polydom.Index(table, {"x": "2 + n"}).realised_cost(np.zeros((1, 1)), 3.0, 10.0)
        array([5.])

        Raises
        ------
        ValueError
            If nothing fits the budget, or as :meth:`lookup` and :meth:`Hit.row_costs`.
        """
        hit = self.lookup(size, budget, rule)
        if hit is None:
            raise InvalidArgumentError(f"no model fits budget {budget!r} at size {size!r}")
        return hit.row_costs(X_rows)

    def predict_item(
        self, item: Any, budget: float, featurizer: Any, anytime: bool = False,
        telemetry: Any = None, overrun: float | None = None,
    ) -> ItemPrediction:
        """Serve one raw item within ``budget``: the featurizer computes, the index chooses.

        Takes the size from ``featurizer.size(item)``, computes only the chosen model's
        features (timed) and returns an :class:`ItemPrediction`; see
        :func:`polydom.serving.predict_item` for the plain and any-time modes.  The work is the
        featurizer's (``featurizer.serve(index, item, budget, anytime)``), so the index
        depends on no serving code.  ``telemetry`` (a
        :class:`polydom.serving.TimingBuffer`) records every computed feature's
        ``(feature, size, seconds)``.  ``overrun`` chooses from the index swept at that
        overrun rate (:meth:`at_overrun`; default this index's).

        Runtime complexity: O(log R + d log S) plus the chosen feature routines.

        Raises
        ------
        ValueError
            If ``featurizer`` cannot serve items (no ``serve`` method), ``overrun`` is not a
            rate this index holds, or as :func:`polydom.serving.predict_item`.
        """
        serve = getattr(featurizer, "serve", None)
        if not callable(serve):
            raise InvalidArgumentError(
                f"featurizer must be a polydom.Featurizer (with serve(index, item, budget, "
                f"anytime)), got {featurizer!r}"
            )
        view = self._view() if overrun is None else self.at_overrun(overrun)
        if telemetry is None:
            return serve(view, item, budget, anytime=anytime)
        return serve(view, item, budget, anytime=anytime, telemetry=telemetry)
