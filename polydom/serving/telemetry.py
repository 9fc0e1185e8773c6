"""Telemetry of serving: a bounded buffer of (feature, size, seconds), of served sets, and a
drift monitor.

Served sets (issue 37): besides each atom's timing, :meth:`TimingBuffer.record_prediction`
keeps one :class:`ServedSet` per served item: the candidate that served it, its size, the
atoms in the order they ran, each one's seconds and the total.  A set's first atom pays the
set's start and the shared steps it uses; the next ones only what is left; calibration on
what was served (:mod:`polydom.curves.served_fit`) fits the start, the atoms' and the
steps' curves from these records, which per-atom timings cannot say.

:class:`TimingBuffer` is what serving writes to (``predict_item(..., telemetry=buffer)``, or
:meth:`TimingBuffer.record` / :meth:`TimingBuffer.record_prediction` from a service): an
O(1) append under a lock into a ring of fixed capacity, nothing else on the hot path.  A
writer elsewhere (another thread, a periodic job) drains it into the store with
:func:`polydom.store_timings`, from which :func:`polydom.recalibrate` refits the curves.

:class:`DriftMonitor` says when the machine no longer behaves as it did, with two tests per
feature, each at ``alpha / (2 * features)`` so that false alarms stay below ``alpha`` per
served item (in expectation, a union bound over features and tests) while the timings are
exchangeable.  A timing that is not a finite number ``>= 0`` is ignored and counted, so one
NaN never poisons a reference.  After a reset, the first ``reference`` finite timings of a
feature make its reference: their ratios ``t / c(n)`` (sorted) and how many exceeded the
curve.

No test runs on a feature before its reference is complete (the monitor detects change
from the reference; whether the curves held to begin with is the guard's and
:func:`polydom.recalibrate`'s matter).

* The tail test: the exceedances of the curve among the feature's last ``window`` timings,
  compared with the larger of Binomial(window, 1 - quantile) (what the curve promises) and
  the beta-binomial predictive law of the reference's own exceedance rate (a machine whose
  tail already sat above the curve when the reference was taken is not flagged for it
  again).  With ``reference=0`` only the promise counts, from the first timing on.
* The shift test: a one-sided Mann-Whitney rank-sum of the window's ratios, each divided by
  ``slowdown``, against the reference's ratios (normal bound of the rank sum's null law,
  conservative under ties).  Distribution-free: it needs no model of the timings, only
  that the window and the reference are exchangeable while nothing changes; a slowdown by
  more than ``slowdown`` moves the whole window up, so it is flagged even where the tail is
  made of long delays (preemption on a loaded machine) that already sit above the curve.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import CONSTRAINTS
from polydom.curves.quantile_fit import check_quantile
from polydom.curves.units import check_seconds, check_size_value
from polydom.errors import InvalidArgumentError, TelemetryError
from polydom.index.item_prediction import ItemPrediction
from polydom.index.served_set import MAX_SET_ATOMS, ServedSet, check_served_set

__all__ = ["MAX_SET_ATOMS", "DriftMonitor", "ServedSet", "TimingBatch", "TimingBuffer",
           "TimingRecord", "check_served_set", "check_timing", "served_set_of"]


class TimingRecord(NamedTuple):
    """One served feature computation: the atom, the item's size, the seconds it took."""

    feature: str
    size: float
    seconds: float


def check_timing(feature: Any, size: Any, seconds: Any) -> TimingRecord:
    """A :class:`TimingRecord` after checking it: a non-empty name, a finite size >= 0 and
    seconds finite, > 0 and bounded (:func:`polydom.curves.units.check_seconds`).

    Runtime complexity: O(1).

    Raises
    ------
    polydom.errors.TelemetryError
        A ``ValueError`` naming the bad field and value.
    """
    if not isinstance(feature, str) or not feature:
        raise TelemetryError(f"timing feature must be a non-empty string, got {feature!r}")
    name = repr(feature) if len(feature) <= 80 else repr(feature[:77] + "...")
    return TimingRecord(feature, check_size_value(size, f"timing size of {name}"),
                        check_seconds(seconds, f"timing seconds of {name}"))


class TimingBatch(list):
    """Timing records drained from a buffer (a ``list`` of :class:`TimingRecord`), carrying
    the served-set records of the same items in :attr:`sets`: what a sink such as
    :func:`polydom.store_timings` stores in one call.

    >>> b = TimingBatch([TimingRecord("f", 1.0, 0.1)], sets=[])
    >>> len(b), b.sets
    (1, [])
    """

    def __init__(self, records: Iterable[TimingRecord] = (),
                 sets: Iterable[ServedSet] = ()) -> None:
        super().__init__(records)
        self.sets: list[ServedSet] = list(sets)


class TimingBuffer:
    """A thread-safe ring of the last ``capacity`` served timings (and one of the last
    ``capacity`` served sets).

    >>> buf = TimingBuffer(capacity=2)
    >>> buf.record("fft", 100, 0.002); buf.record("fft", 200, 0.004); buf.record("acf", 100, 1e-4)
    >>> len(buf), buf.dropped
    (2, 1)
    >>> [r.feature for r in buf.drain()], len(buf)
    (['fft', 'acf'], 0)

    Parameters
    ----------
    capacity : int, default 100000
        Records kept; the oldest are dropped (and counted in :attr:`dropped`) when full.
    """

    def __init__(self, capacity: int = 100_000) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) \
                or capacity < 1:
            raise InvalidArgumentError(f"capacity must be a positive integer, got {capacity!r}")
        self.capacity = int(capacity)
        self._ring: deque[TimingRecord] = deque(maxlen=self.capacity)
        self._sets: deque[ServedSet] = deque(maxlen=self.capacity)
        #: Served-set records dropped because their ring was full, since the last drain.
        self.dropped_sets = 0
        self._lock = threading.Lock()
        #: Records dropped because the ring was full, since the last :meth:`drain`.
        self.dropped = 0
        #: Records taken since the buffer was made.
        self.total = 0

    def __len__(self) -> int:
        return len(self._ring)

    def __repr__(self) -> str:
        return f"TimingBuffer({len(self)}/{self.capacity}, dropped={self.dropped})"

    def record(self, feature: str, size: float, seconds: float) -> None:
        """Append one checked timing.  Runtime complexity: O(1).

        Raises
        ------
        polydom.errors.TelemetryError
            As :func:`check_timing`; nothing is buffered.
        """
        rec = check_timing(feature, size, seconds)
        with self._lock:
            if len(self._ring) == self.capacity:
                self.dropped += 1
            self._ring.append(rec)
            self.total += 1

    def record_prediction(self, prediction: ItemPrediction) -> None:
        """Append every feature an :class:`ItemPrediction` computed, with its size, and the
        served set (:func:`served_set_of`) when a candidate served it.

        All are checked before any is appended.  Runtime complexity: O(features).
        """
        recs = [check_timing(f, prediction.size, s)
                for f, s in prediction.feature_seconds.items()]
        served = served_set_of(prediction)
        with self._lock:
            for rec in recs:
                if len(self._ring) == self.capacity:
                    self.dropped += 1
                self._ring.append(rec)
            self.total += len(recs)
            if served is not None:
                self._append_set(served)

    def _append_set(self, served: ServedSet) -> None:
        if len(self._sets) == self.capacity:
            self.dropped_sets += 1
        self._sets.append(served)

    @property
    def pending_sets(self) -> int:
        """Served sets buffered.  O(1)."""
        return len(self._sets)

    def append_set(self, served: ServedSet) -> None:
        """Append a served set already checked (:func:`check_served_set`).  O(1)."""
        with self._lock:
            self._append_set(served)

    def record_set(self, candidate: Any, size: float, atoms: Iterable[str],
                   seconds: Iterable[float]) -> None:
        """Append one checked served set (:func:`check_served_set`).  O(atoms)."""
        served = check_served_set(candidate, size, list(atoms), list(seconds))
        with self._lock:
            self._append_set(served)

    def drain_sets(self) -> list[ServedSet]:
        """Take every buffered served set (oldest first).  O(records)."""
        with self._lock:
            out = list(self._sets)
            self._sets.clear()
            self.dropped_sets = 0
        return out

    def drain_batch(self) -> TimingBatch:
        """Take every buffered timing and served set at once, as one :class:`TimingBatch`
        (what :func:`polydom.store_timings` stores together).  O(records)."""
        with self._lock:
            out = TimingBatch(self._ring, self._sets)
            self._ring.clear()
            self._sets.clear()
            self.dropped = self.dropped_sets = 0
        return out

    def drain(self) -> list[TimingRecord]:
        """Take every buffered record (oldest first), leaving the buffer empty.

        Runtime complexity: O(records).
        """
        with self._lock:
            out = list(self._ring)
            self._ring.clear()
            self.dropped = 0
        return out

    def snapshot(self) -> list[TimingRecord]:
        """The buffered records (oldest first), left in place.  O(records)."""
        with self._lock:
            return list(self._ring)

    def snapshot_sets(self) -> list[ServedSet]:
        """The buffered served sets (oldest first), left in place.  O(records)."""
        with self._lock:
            return list(self._sets)


def served_set_of(prediction: ItemPrediction) -> ServedSet | None:
    """The served set of one prediction: the candidate that answered, the atoms computed in
    the order they ran and their seconds; None when no candidate answered or nothing was
    computed (nothing was paid), or the key is not a string or a tuple of strings.

    Runtime complexity: O(features).

    Raises
    ------
    polydom.errors.TelemetryError
        On a bad size or time (as :func:`check_timing`).
    """
    key = prediction.key if prediction.key is not None else prediction.planned_key
    computed = [a for a in prediction.computed if a in prediction.feature_seconds]
    if key is None or not computed:
        return None
    if not (isinstance(key, str) or (isinstance(key, tuple)
                                     and all(isinstance(k, str) for k in key))):
        key = str(key)
    return check_served_set(key, prediction.size, computed,
                            [prediction.feature_seconds[a] for a in computed])


def exceedance_threshold(window: int, rate: float, alpha: float) -> int:
    """Smallest ``k`` with ``P(Binomial(window, rate) >= k) < alpha``.

    Runtime complexity: O(window).

    >>> exceedance_threshold(30, 0.05, 1e-3)
    7
    """
    tail = 1.0
    for k in range(window + 1):
        if tail < alpha:
            return k
        tail -= math.comb(window, k) * rate**k * (1 - rate) ** (window - k)
    return window + 1


class DriftMonitor:
    """Flags features whose served times moved away from what they were (module docstring).

    >>> mon = DriftMonitor({"f": CostCurve([0.0, 1e-3])}, window=30, reference=0)
    >>> [mon.update("f", 10.0, 0.02) for _ in range(9)][-2:]
    [False, True]
    >>> sorted(mon.drifted)
    ['f']

    Parameters
    ----------
    curves : mapping of str to CostCurve
        Each atom's curve (an index's ``costs``), promising ``quantile`` of in-situ time.
    quantile : float, default 0.95
        What the curves promise.
    window : int, default 30
        Timings per feature each test looks at.
    alpha : float, default 1e-4
        False alarms per served item while nothing changes, at most (in expectation): each
        of the two tests of each feature runs at ``alpha / (2 * features)``.  The default
        keeps them at most 0.1 per 1,000 stationary items (1e-3 allows 1 per 1,000, which
        a run of 1,000 items reached); a 2x slowdown is still flagged within a window.
    reference : int, default 60
        Finite timings per feature, after a reset, that make its reference (0: no
        reference, only the tail test against the promised rate).
    slowdown : float, default 1.2
        Slowdowns up to this factor are tolerated: the shift test compares the window's
        ratios divided by it with the reference.
    """

    def __init__(self, curves: Mapping[str, CostCurve], quantile: float = 0.95,
                 window: int = 30, alpha: float = 1e-4, reference: int = 60,
                 slowdown: float = 1.2) -> None:
        self.quantile = check_quantile(quantile)
        for name, value, least in (("window", window, 1), ("reference", reference, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < least:
                raise InvalidArgumentError(f"{name} must be an integer >= {least}, got {value!r}")
        self.window = int(window)
        self.reference = int(reference)
        self.alpha = check_quantile(alpha, "alpha")
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float)) \
                or not slowdown >= 1.0 or not math.isfinite(slowdown):
            raise InvalidArgumentError(f"slowdown must be a number >= 1, got {slowdown!r}")
        self.slowdown = float(slowdown)
        self.reset(curves)

    def reset(self, curves: Mapping[str, CostCurve] | None = None) -> None:
        """Forget every window, reference and flag (and take new ``curves``, after a
        recalibration).  Runtime complexity: O(features)."""
        if curves is not None:
            self.curves = {k: CostCurve.coerce(v) for k, v in curves.items()}
        #: Significance of each single test: ``alpha / (2 * features)``.
        self.test_alpha = self.alpha / (2 * max(1, len(self.curves)))
        #: Exceedances of the curve in a window at which a feature without a reference yet
        #: is flagged (Binomial(window, 1 - quantile) tail below :attr:`test_alpha`).
        self.threshold = exceedance_threshold(self.window, 1.0 - self.quantile,
                                              self.test_alpha)
        self._z = _normal_isf(self.test_alpha)
        self._seen: dict[str, deque[bool]] = {}
        self._count: dict[str, int] = {}
        self._ranks: dict[str, deque[float]] = {}
        self._rank_sum: dict[str, float] = {}
        self._building: dict[str, list[tuple[float, bool]]] = {}
        self._reference: dict[str, np.ndarray] = {}
        #: Per feature with a reference: the exceedances that flag it (the tail test).
        self.tail_thresholds: dict[str, int] = {}
        #: Per feature, the median ratio ``t / c(n)`` of its reference.
        self.medians: dict[str, float] = {}
        #: Timings ignored because a value was not finite and >= 0, since the last reset.
        self.ignored = 0
        #: Features flagged since the last reset.
        self.drifted: set[str] = set()

    def _window_count(self, feature: str, flag: bool) -> int:
        window = self._seen.setdefault(feature, deque(maxlen=self.window))
        count = self._count.get(feature, 0)
        if len(window) == self.window and window[0]:
            count -= 1
        window.append(flag)
        count += flag
        self._count[feature] = count
        return count

    def _fix_reference(self, feature: str, points: list[tuple[float, bool]]) -> None:
        ratios = np.sort(np.array([r for r, _ in points], dtype=np.float64))
        self._reference[feature] = ratios
        self.medians[feature] = float(np.median(ratios))
        exceeded = sum(e for _, e in points)
        self.tail_thresholds[feature] = max(self.threshold, _predictive_threshold(
            self.window, exceeded, len(points), self.test_alpha))

    def _shifted(self, feature: str, ratio: float) -> bool:
        """Add one ratio to the shift test's window; True when the window's rank sum is
        improbably high against the reference (one-sided Mann-Whitney, normal bound)."""
        ref = self._reference[feature]
        x = ratio / self.slowdown
        rank = float(np.searchsorted(ref, x, "left") + np.searchsorted(ref, x, "right")) / 2
        ranks = self._ranks.setdefault(feature, deque(maxlen=self.window))
        total = self._rank_sum.get(feature, 0.0)
        if len(ranks) == self.window:
            total -= ranks[0]
        ranks.append(rank)
        total += rank
        self._rank_sum[feature] = total
        if len(ranks) < self.window:
            return False
        w, r = self.window, ref.size
        mean = w * r / 2.0
        sd = math.sqrt(w * r * (w + r + 1) / 12.0)
        return (total - mean - 0.5) / sd > self._z

    def update(self, feature: str, size: float, seconds: float) -> bool:
        """Take one timing; True when it makes ``feature`` flagged (first time only).

        A feature without a curve is ignored, and so is a timing whose size or seconds is
        not a finite number ``>= 0`` (counted in :attr:`ignored`; it never enters a
        reference or a window).  Runtime complexity: O(degree + log reference).
        """
        curve = self.curves.get(feature)
        if curve is None:
            return False
        try:
            n, t = float(size), float(seconds)
        except (TypeError, ValueError):
            self.ignored += 1
            return False
        if not (CONSTRAINTS["size"].holds(n) and CONSTRAINTS["seconds"].holds(t)):
            self.ignored += 1
            return False
        bound = float(curve(n))
        exceeded = t > bound
        fired = False
        if not self.reference or feature in self._reference:
            count = self._window_count(feature, exceeded)
            fired = count >= self.tail_thresholds.get(feature, self.threshold)
        if self.reference and bound > 0:
            ratio = t / bound
            if feature in self._reference:
                fired |= self._shifted(feature, ratio)
            else:
                points = self._building.setdefault(feature, [])
                points.append((ratio, exceeded))
                if len(points) == self.reference:
                    self._fix_reference(feature, self._building.pop(feature))
        if fired and feature not in self.drifted:
            self.drifted.add(feature)
            return True
        return False

    def update_many(self, records: Iterable[TimingRecord]) -> bool:
        """:meth:`update` each record; True when any of them flagged a feature."""
        flagged = False
        for rec in records:
            flagged |= self.update(rec.feature, rec.size, rec.seconds)
        return flagged


def _normal_isf(p: float) -> float:
    """``z`` with ``P(N(0, 1) > z) = p`` (bisection on erfc).  Runtime complexity: O(1)."""
    lo, hi = -10.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(mid / math.sqrt(2.0)) > p:
            lo = mid
        else:
            hi = mid
    return hi


def _predictive_threshold(window: int, exceeded: int, seen: int, alpha: float) -> int:
    """Smallest ``k`` with ``P(X >= k) < alpha`` for ``X`` the exceedances of a window
    whose rate is unknown but was ``exceeded`` of ``seen`` in the reference: the
    beta-binomial predictive law (rate ~ Beta(exceeded + 1, seen - exceeded + 1)), so the
    reference's own uncertainty is counted.  Runtime complexity: O(window)."""
    a, b = exceeded + 1.0, seen - exceeded + 1.0
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    pmf = [math.exp(math.lgamma(window + 1) - math.lgamma(k + 1) - math.lgamma(window - k + 1)
                    + math.lgamma(k + a) + math.lgamma(window - k + b)
                    - math.lgamma(window + a + b) - log_beta)
           for k in range(window + 1)]
    tail = 1.0
    for k in range(window + 1):
        if tail < alpha:
            return k
        tail -= pmf[k]
    return window + 1
