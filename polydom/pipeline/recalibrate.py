"""Recalibration from served timings: refit the atoms' curves, re-sweep, publish a build.

:func:`store_timings` writes served ``(feature, size, seconds)`` records (drained from a
:class:`polydom.serving.telemetry.TimingBuffer`) to the store; :func:`recalibrate` reads
them back, refits every atom's curve, derives every candidate's curve again (its learner's
overhead and its overrun factor kept, :meth:`polydom.Index.with_atom_costs`), sweeps, and
publishes the result as a new build that readers pick up with :meth:`polydom.Index.refresh`.
No model is retrained: the stored models are loaded and stored again with the new build.

The refit (robust, non-negative, non-decreasing): for an atom with at least ``min_records``
timings, the ratios ``t_i / c(n_i)`` of each timing to the current curve are taken, and the
curve is multiplied by their ``quantile``-quantile (the quantile the curve promises, from
the build's ``info["insitu"]``, default 0.95) once the timings beyond a robust fence are set
aside (:func:`robust_scale`: a preempted timing, 50x the others, is no evidence of the
machine's speed; 2 of 37 used to set a 0.95-quantile alone).  A curve that held keeps a
scale near 1; on a machine 2x slower the scale is near 2.  Multiplying by a positive number
keeps the curve's non-negative coefficients (non-negative and non-decreasing for n >= 0)
and its shape fitted over the whole domain.

Evidence before a step: every atom's scale states how many timings back it and how many
were set aside (:attr:`RecalibrationReport.evidence`); an atom below ``min_records``
(default :data:`MIN_RECORDS`) is not scaled on its own, and the recalibration warns in one
line naming it.  A scale outside ``[1 / max_step, max_step]`` (default :data:`MAX_STEP`) is
refused in one line and nothing is published, unless the caller asks for a larger step;
a scale that would make a curve zero is refused whatever ``max_step`` says.  With ``refit=True``
and timings at ``degree + 1`` distinct sizes or more, the curve is fitted again instead
(:func:`polydom.curves.quantile_fit.fit_quantile_curve`).  An atom with too few timings is
scaled by the median scale of the atoms that have enough (a machine slows down as a whole),
or kept when none has.

Relative (``relative=True``, what ``polydom serve --recalibrate-on-drift`` runs): each atom
is scaled by the *change* of its served timings, the median of its ratios after
``since_id`` over that of the build's own served timings up to ``since_id`` (the newest
:data:`BASELINE_LAST` per atom; at least ``min_records`` on both sides, else the median
scale as above).  The median, not the ``quantile``: the timings just before an alarm are
already the changed machine's (the monitor needs a window of them to fire), and a few of
those in the baseline move its upper quantile to the new level but not its median.
The plain scale compares served timings with the curves, so it
also moves every curve by whatever made serving differ from the protocol the curves were
fitted on: the in-situ protocol times every atom as a served set's first feature (cold),
and serving pays that once per set, so a multi-atom set's other atoms run warm and their
served ratios sit below the curve's promise.  After a drift that is not the machine's
change; the guard's calibration was made for the curves as they are, and the relative
scale carries only the change to them.  Measured in ``benchmarks/adherence_bench.py``
(the drift rows of ``benchmarks/RESULTS.md``).

Timings are seconds; the curves are in the store's unit (``info["cost_unit"]``): every
timing is converted into it first (:func:`polydom.curves.units.seconds_to_store`: x1000 for
a store in ms), and a store whose unit is not one of time (``"units"``) refuses them.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.quantile_fit import check_quantile, fit_quantile_curve
from polydom.curves.units import seconds_to_store, unit_name
from polydom.errors import (
    CurrentBuildChangedError,
    IndexIntegrityError,
    InvalidArgumentError,
    TelemetryError,
)
from polydom.index.built import Index
from polydom.serving.provenance import unproven
from storage import IndexStore

__all__ = ["BASELINE_LAST", "MAX_STEP", "MIN_RECORDS", "RecalibrationReport", "publish_index",
           "recalibrate", "robust_scale", "store_timings"]

#: Newest baseline timings per atom a relative recalibration reads (module docstring).
BASELINE_LAST = 2000

#: The largest factor one recalibration may scale a curve by, up or down, unless asked
#: (``max_step``).  A machine that really changed (throttling, a noisy neighbour, a slower
#: instance) moves timings by 1.2-4x; beyond 8x is a wrong unit (x1000), a broken clock or
#: forged timings far more often than a machine, and a step that large turns every budget's
#: answer over at once.  A real change beyond it is taken in steps, or with a larger bound.
MAX_STEP = 8.0

#: Timings an atom needs to be scaled on its own.  With 20, the median and the spread
#: behind the fence (:func:`robust_scale`) tolerate 9 preempted timings (their breakdown
#: point is one half), the fence sets aside at most 5, and the median log ratio's standard
#: error is 1.25 sigma / sqrt(20) = 0.28 sigma: +-7% for the spread of repeated feature
#: timings (sigma ~ 0.25).  Fewer timings borrow the median scale of the others, with a
#: warning.
MIN_RECORDS = 20

#: A timing whose ratio to the curve lies more than this many robust standard deviations
#: (1.4826 x the median absolute deviation of the log ratios) above the median, and more
#: than :data:`FENCE_FACTOR` times the median ratio, is set aside (preempted).
FENCE_SIGMAS = 3.0
FENCE_FACTOR = 2.0


@dataclass(frozen=True)
class RecalibrationReport:
    """What :func:`recalibrate` did.

    Attributes
    ----------
    from_build : int
        The build whose curves and models were taken.
    build_id : int
        The new, now current, build (``from_build`` when nothing was published).
    records : int
        Timings read.
    last_record : int
        Id of the newest timing read (pass as ``since_id`` next time).
    scales : dict of str to float
        Per atom, the factor its curve was multiplied by (for a refit atom: the ratio of
        the new curve to the old at the largest size timed).
    refit : list of str
        Atoms whose curves were fitted again.
    borrowed : list of str
        Atoms with too few timings, scaled by the median of the others.
    curves : dict of str to CostCurve
        Every atom's new curve.
    published : bool
        False when ``min_change`` found no atom changed enough to publish a build.
    evidence : dict of str to int
        Per atom, the timings its own scale rests on (0: borrowed or kept).
    set_aside : dict of str to int
        Per atom, the timings beyond the fence, not used (:func:`robust_scale`).
    """

    from_build: int
    build_id: int
    records: int
    last_record: int
    scales: dict[str, float]
    refit: list[str] = field(default_factory=list)
    borrowed: list[str] = field(default_factory=list)
    curves: dict[str, CostCurve] = field(default_factory=dict, repr=False)
    published: bool = True
    evidence: dict[str, int] = field(default_factory=dict)
    set_aside: dict[str, int] = field(default_factory=dict)

    def evidence_lines(self) -> list[str]:
        """One line per atom: its scale, how it was made and the timings behind it.

        >>> r = RecalibrationReport(1, 2, 37, 37, {"g0": 1.5}, evidence={"g0": 35},
        ...                         set_aside={"g0": 2})
        >>> r.evidence_lines()
        ['g0: x1.5 (scaled) from 35 timings, 2 set aside beyond the fence']
        """
        lines = []
        for name, scale in self.scales.items():
            how = ("refit" if name in self.refit else
                   "median of the others" if name in self.borrowed else "scaled")
            own = self.evidence.get(name, 0)
            tail = (f" from {own} timings" if own else " from no timings of its own")
            aside = self.set_aside.get(name, 0)
            if aside:
                tail += f", {aside} set aside beyond the fence"
            lines.append(f"{name}: x{scale:.3g} ({how}){tail}")
        return lines


def store_timings(
    url: str | os.PathLike,
    records: Iterable[Sequence[Any]],
    build: int | None = None,
    key: bytes | str | None = None,
    seal: str | None = None,
) -> tuple[int, int]:
    """Store served ``(feature, size, seconds)`` records (all or none) for build ``build``.

    The public way to persist telemetry: drain a
    :class:`~polydom.serving.telemetry.TimingBuffer` off the hot path (another thread, a
    periodic job) and pass its records.  See :meth:`storage.IndexStore.record_timings`.
    A :class:`~polydom.serving.telemetry.TimingBatch` (``buffer.drain_batch()``, what a
    :class:`~polydom.serving.timing_recorder.TimingRecorder` flushes) also stores its served
    sets (the set, the order its atoms ran, their seconds and total; ``served_sets``).

    ``seal`` (default: ``build.seal`` when ``build`` is a
    :class:`~polydom.serving.timing_recorder.ServedBuild`, as a
    :class:`~polydom.serving.timing_recorder.TimingRecorder` passes it) is the seal of the
    build that served the items (``index.info["seal"]``): the store's build ``build`` must
    have that seal, so timings never land in another store that happens to have a build of
    that id over the same features.

    Runtime complexity: O(R) checks and one transaction.

    Returns
    -------
    (int, int)
        Ids of the first and last row written.

    Raises
    ------
    polydom.errors.TelemetryError
        A ``ValueError`` naming the first bad record (NaN, negative, an unknown feature, a
        size outside the build's domain), or the build when its seal is not ``seal``;
        nothing is stored.
    """
    if seal is None:
        seal = getattr(build, "seal", None)
    with IndexStore(url, create=False, key=key) as store:
        batch = records if hasattr(records, "sets") else list(records)  # a TimingBatch's sets
        return store.record_timings(batch, build, seal=seal)


def publish_index(
    url: str | os.PathLike,
    index: Index,
    note: Mapping[str, Any],
    key: bytes | str | None = None,
    replaces: int | None = None,
) -> int:
    """Store an index derived without training (calibrated, recalibrated) as the current build.

    ``note`` (JSON-serialisable: where it came from) becomes the build's parameters, with a
    stamp so that every call registers a new build; the models are stored with it.  With
    ``replaces``, only while build ``replaces`` is still current (checked in the publishing
    transaction); else the new build is marked failed and
    :class:`polydom.errors.CurrentBuildChangedError` raised.

    Runtime complexity: one publish, O(K * d + E) rows plus the models.
    """
    with IndexStore(url, key=key) as store:
        build_id = store.begin_build({**note, "stamp": time.time_ns()}, index.cost_model)
        try:
            store.publish(build_id, index, replaces=replaces)
        except CurrentBuildChangedError as exc:
            store.fail_build(build_id, exc)
            raise
    index.info["build_id"] = build_id
    return build_id


def robust_scale(ratios: Sequence[float] | np.ndarray, tau: float) -> tuple[float, int]:
    """The ``tau``-quantile of ``ratios`` once those beyond a robust fence are set aside,
    and how many were.

    The fence: a ratio more than :data:`FENCE_SIGMAS` robust standard deviations of the
    log ratios (1.4826 x their median absolute deviation) above their median, and more than
    :data:`FENCE_FACTOR` times the median ratio.  At most a quarter of the ratios (the
    largest) are set aside: a tail that thick is the machine, not a preemption.  Median and
    deviation have a breakdown point of one half, so a few preempted timings move the
    fence by a rank or two and cannot lift the quantile with them.

    Runtime complexity: O(R log R).

    >>> ratios = [1.0] * 18 + [1.1] * 17 + [50.0, 30.0]  # 2 preempted of 37
    >>> robust_scale(ratios, 0.95)
    (1.1, 2)

    Raises
    ------
    polydom.errors.InvalidArgumentError
        If ``ratios`` is empty or holds a value that is not finite and > 0.
    """
    r = np.asarray(ratios, dtype=np.float64)
    if r.size == 0 or not np.all(np.isfinite(r) & (r > 0)):
        raise InvalidArgumentError("ratios must be a non-empty array of finite numbers > 0")
    logs = np.log(r)
    middle = float(np.median(logs))
    spread = 1.4826 * float(np.median(np.abs(logs - middle)))
    fence = middle + max(FENCE_SIGMAS * spread, math.log(FENCE_FACTOR))
    beyond = np.sort(logs[logs > fence])[::-1][: r.size // 4]
    kept = np.sort(r)[: r.size - beyond.size]
    return float(np.quantile(kept, tau, method="higher")), int(beyond.size)


def _ratios(curve: CostCurve, n: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    predicted = np.asarray(curve(n), dtype=np.float64)
    ok = predicted > 0
    if not ok.any():
        return None
    return t[ok] / predicted[ok]


def _check_step(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
            or math.isnan(value) or value < 1:
        raise InvalidArgumentError(
            f"max_step must be a number >= 1 (math.inf: no bound), got {value!r}")
    return float(value)


def _refuse_steps(report: dict[str, Any], max_step: float, shown: str) -> None:
    """One line naming the atoms whose scale lies outside ``[1/max_step, max_step]``."""
    wild = {a: s for a, s in report["scales"].items()
            if not (1.0 / max_step <= s <= max_step)}
    if not wild:
        return
    atom, scale = max(wild.items(), key=lambda kv: abs(math.log(kv[1])) if kv[1] > 0
                      else math.inf)
    own = report["evidence"].get(atom, 0)
    more = f"; {len(wild) - 1} more atoms beyond the bound" if len(wild) > 1 else ""
    raise TelemetryError(
        f"{shown}: recalibration would scale atom {atom!r} by x{scale:.3g} (from {own} "
        f"timings{more}"
        f"), outside one step's bound [1/{max_step:g}, {max_step:g}]: nothing published; "
        f"pass max_step={math.ceil(max(scale, 1 / scale) if scale > 0 else 1)} "
        "(--max-step) to take it")


def _refuse_zero(index: Index, new: Mapping[str, CostCurve], shown: str) -> None:
    """Refuse a scale that makes a curve zero (or loses a term): a scale is a ratio to the
    curve, so no later recalibration could bring it back."""
    for atom, curve in new.items():
        old = np.asarray(index.costs[atom].coefficients) > 0
        got = np.asarray(curve.coefficients)
        if (got.size < old.size or not np.all(np.isfinite(got))
                or not np.array_equal(got[: old.size] > 0, old)):
            raise TelemetryError(
                f"{shown}: recalibration would make atom {atom!r}'s curve {curve} from "
                f"{index.costs[atom]} (a zero or lost term, or an overflow): nothing "
                "published")


def _check_count(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise InvalidArgumentError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def recalibrate(
    url: str | os.PathLike,
    since_id: int = 0,
    last: int | None = None,
    min_records: int = MIN_RECORDS,
    quantile: float | None = None,
    refit: bool = False,
    degree: int = 2,
    build: int | None = None,
    key: bytes | str | None = None,
    trusted: bool = False,
    replaces: int | None = None,
    relative: bool = False,
    min_change: float | None = None,
    max_step: float = MAX_STEP,
    trust_info: bool = False,
) -> RecalibrationReport:
    """Refit the curves of a stored build from its served timings and publish a new build.

    Reads the timings with id ``> since_id`` (the newest ``last`` per atom when given),
    refits each atom's curve (module docstring), derives every candidate's curve again with
    :meth:`polydom.Index.with_atom_costs` (models reused, overrun factors and learners'
    overheads kept), sweeps, and publishes the new index as the current build.  Readers
    switch with :meth:`polydom.Index.refresh`.

    Runtime complexity: one read of the timings, O(R log R) for the quantiles, one sweep,
    and one publish (the models are stored again with the new build).

    Parameters
    ----------
    url : str or path
        The store.
    since_id : int, default 0
        Only timings recorded after this id (for example, after a detected drift).
    last : int, optional
        Only the newest ``last`` timings of each atom.
    min_records : int, default MIN_RECORDS
        Timings an atom needs to be scaled on its own (fewer: it borrows the median scale
        of the others, and a one-line ``RuntimeWarning`` names it).
    quantile : float, optional
        The quantile the curves promise (default the build's ``info["insitu"]["quantile"]``,
        else 0.95).
    refit : bool, default False
        Fit the curves' shapes again (needs ``degree + 1`` distinct sizes).
    degree : int, default 2
        Degree of a refit.
    build : int, optional
        The build to start from (default the current one).
    key, trusted
        As :func:`polydom.open_index`.
    replaces : int, optional
        The build the result may replace as the current one (default: the build current
        when the recalibration starts).  The publish compares it with the current build
        in its own transaction: a build published while the recalibration ran is never
        replaced.
    relative : bool, default False
        Scale each atom by the change of its served timings against the build's own
        served timings up to ``since_id`` (module docstring; needs ``since_id >= 1`` and
        no ``refit``).
    min_change : float, optional
        With ``relative=True``: publish only when some atom's scale lies outside
        ``[1 / min_change, min_change]`` (a change beyond what the drift monitor
        tolerates); otherwise nothing is published and the report says so
        (``published=False``).  A transient slowdown that raised an alarm and passed
        before the evidence was collected then costs no build.
    max_step : float, default MAX_STEP
        The largest factor a curve may be scaled by, up or down, in this recalibration;
        a larger one refuses the whole recalibration (``math.inf``: no bound).
    trust_info : bool, default False
        Recalibrate a build whose info is not covered by its seal
        (:func:`polydom.serving.provenance.unproven`: published before info was sealed, or
        unsealed).  The new build seals (signs, with a key) the info it takes over, the
        cost unit and the in-situ quantile the scales are computed with among it: by
        default that is refused, since anyone who could write the database may have
        edited it; pass True only after checking it.

    Returns
    -------
    RecalibrationReport

    Raises
    ------
    ValueError
        If the store has no timings to use, or an argument is out of range.
    polydom.errors.TelemetryError
        If the build's cost unit is not a unit of time (timings are seconds), a stored
        timing is out of bounds, a scale is beyond ``max_step`` or would make a curve zero
        (one line; nothing is published).
    polydom.errors.CurrentBuildChangedError
        If build ``replaces`` is no longer current when the result is published (nothing
        is published; the begun build is marked failed).
    polydom.errors.IndexIntegrityError
        If the build's info is unproven and ``trust_info`` is not True (one line).
    """
    since_id = _check_count(since_id, "since_id", 0)
    if replaces is not None:
        replaces = _check_count(replaces, "replaces", 1)
    min_records = _check_count(min_records, "min_records", 1)
    max_step = _check_step(max_step)
    if not isinstance(relative, bool):
        raise InvalidArgumentError(f"relative must be True or False, got {relative!r}")
    if min_change is not None and (isinstance(min_change, bool) or not isinstance(
            min_change, (int, float)) or not math.isfinite(min_change) or min_change < 1
            or not relative):
        raise InvalidArgumentError(
            f"min_change must be a number >= 1 with relative=True, got {min_change!r}"
        )
    if relative and (refit or since_id < 1):
        raise InvalidArgumentError(
            "relative=True scales the curves by the change since since_id: it needs "
            f"since_id >= 1 and no refit (got since_id={since_id}, refit={refit})"
        )
    with IndexStore(url, create=False, key=key) as store:
        current = store.current_build_id()
        index = store.load_index(build=build, trusted=trusted)
        from_build = int(index.info["build_id"])
        doubt = unproven(index.info)
        if doubt is not None and trust_info is not True:
            raise IndexIntegrityError(
                f"{store.display_url!r}: {doubt}; recalibrating would seal it"
                f"{' and sign it with the store key' if store.database.digest.keyed else ''} as a "
                "new build's: refused (check builds.info, then pass trust_info=True, "
                "--trust-unsealed-info)")
        if replaces is None:
            replaces = from_build if build is None else current
        unit = unit_name(index.info)
        try:
            per_second = seconds_to_store(unit, f"build {from_build} of {store.display_url!r}")
        except InvalidArgumentError as exc:
            raise TelemetryError(str(exc)) from None
        insitu = index.info.get("insitu")
        default_tau = insitu.get("quantile", 0.95) if isinstance(insitu, dict) else 0.95
        tau = check_quantile(default_tau if quantile is None else quantile)
        rows = store.timings(since_id, features=list(index.costs), last=last)
        if not rows:
            raise InvalidArgumentError(
                f"no served timings after id {since_id} in {store.display_url!r} to "
                "recalibrate from (record them with polydom.store_timings)"
            )
        baseline = (store.timings(0, features=list(index.costs), last=BASELINE_LAST,
                                  until_id=since_id, build_id=from_build)
                    if relative else None)
        new_atoms, report = _refit_atoms(index, rows, per_second, tau, min_records, refit,
                                         degree, baseline)
        _refuse_steps(report, max_step, store.display_url)
        _refuse_zero(index, new_atoms, store.display_url)
        _warn_thin(report, min_records, store.display_url)
        info = {k: v for k, v in index.info.items()
                if k not in ("build_id", "sealed", "info_sealed", "seal", "read_from", "store")}
        info["recalibrated"] = {
            "from_build": from_build,
            "records": len(rows),
            "since_id": since_id,
            "last_record": rows[-1][0],
            "quantile": tau,
            "scales": report["scales"],
            "evidence": report["evidence"],
            "set_aside": report["set_aside"],
            "max_step": max_step if math.isfinite(max_step) else None,
            "unit": unit,
            "per_second": per_second,
            "relative": bool(relative),
        }
        info["insitu"] = {**(insitu if isinstance(insitu, dict) else {}), "quantile": tau}
        recalibrated = index.with_atom_costs(new_atoms, info=info)
    scales = [v for v in report["scales"].values() if math.isfinite(v)]
    if min_change is not None and scales and all(
            1.0 / min_change <= v <= min_change for v in scales):
        return RecalibrationReport(from_build, from_build, len(rows), rows[-1][0],
                                   report["scales"], report["refit"], report["borrowed"],
                                   dict(index.costs), published=False,
                                   evidence=report["evidence"],
                                   set_aside=report["set_aside"])
    build_id = publish_index(url, recalibrated, {
        "recalibrated_from": from_build,
        "timings": [since_id, rows[-1][0]],
        "learner": f"recalibrated from build {from_build}",
    }, key=key, replaces=replaces)
    return RecalibrationReport(from_build, build_id, len(rows), rows[-1][0], report["scales"],
                               report["refit"], report["borrowed"], dict(recalibrated.costs),
                               evidence=report["evidence"], set_aside=report["set_aside"])


def _warn_thin(report: dict[str, Any], min_records: int, shown: str) -> None:
    """One ``RuntimeWarning`` line naming the atoms with fewer than ``min_records``
    timings of their own (borrowed or kept)."""
    thin = sorted(a for a in report["all_atoms"] if report["evidence"].get(a, 0) == 0)
    if thin:
        listed = ", ".join(thin[:6]) + (f" and {len(thin) - 6} more" if len(thin) > 6 else "")
        what = ("scaled by the median of the others" if report["borrowed"]
                else "kept as they were")
        warnings.warn(f"{shown}: atoms {listed} have fewer than {min_records} timings of "
                      f"their own: {what}", RuntimeWarning, stacklevel=3)


def _by_atom(rows: list[tuple]) -> dict[str, list[tuple[float, float]]]:
    by_atom: dict[str, list[tuple[float, float]]] = {}
    for _, _, feature, size, seconds in rows:
        by_atom.setdefault(feature, []).append((size, seconds))
    return by_atom


def _refit_atoms(
    index: Index, rows: list[tuple], per_second: float, tau: float, min_records: int,
    refit: bool, degree: int, baseline: list[tuple] | None = None,
) -> tuple[dict[str, CostCurve], dict[str, Any]]:
    """New atom curves from the timings (module docstring), with what was done to each; the
    timings' seconds are converted into the store's unit (``per_second``) first.  With
    ``baseline`` (timings before the change), each scale is relative to the baseline's."""
    by_atom = _by_atom(rows)
    before = None if baseline is None else _by_atom(baseline)
    new: dict[str, CostCurve] = {}
    scales: dict[str, float] = {}
    evidence: dict[str, int] = {}
    set_aside: dict[str, int] = {}
    refitted: list[str] = []
    for atom, curve in index.costs.items():
        points = by_atom.get(atom, [])
        if len(points) < min_records:
            continue
        n = np.array([p[0] for p in points])
        t = np.array([p[1] for p in points]) * per_second
        if refit and np.unique(n).size >= degree + 1:
            fitted = fit_quantile_curve(n, t, tau, degree)
            top = float(n.max())
            old_top = float(curve(top))
            new[atom] = fitted
            scales[atom] = float(fitted(top)) / old_top if old_top > 0 else math.inf
            evidence[atom] = len(points)
            refitted.append(atom)
            continue
        ratios = _ratios(curve, n, t)
        if ratios is None:
            continue
        if before is None:
            s, aside = robust_scale(ratios, tau)
        else:  # the change: median ratio now over the baseline's median ratio
            base = before.get(atom, [])
            ref = (_ratios(curve, np.array([p[0] for p in base]),
                           np.array([p[1] for p in base]) * per_second)
                   if len(base) >= min_records else None)
            if ref is None:
                continue
            s = float(np.median(ratios)) / float(np.median(ref))
            aside = 0
        new[atom] = curve * s
        scales[atom] = s
        evidence[atom] = int(ratios.size) - aside
        set_aside[atom] = aside
    borrowed: list[str] = []
    finite = [s for s in scales.values() if math.isfinite(s)]
    if finite:
        median = float(np.median(finite))
        for atom, curve in index.costs.items():
            if atom not in new:
                new[atom] = curve * median
                scales[atom] = median
                borrowed.append(atom)
    return new, {"scales": scales, "refit": refitted, "borrowed": borrowed,
                 "evidence": evidence, "set_aside": set_aside, "all_atoms": list(index.costs)}
