"""Telemetry of serving: a bounded buffer of (feature, size, seconds) and a drift monitor.

:class:`TimingBuffer` is what serving writes to (``predict_item(..., telemetry=buffer)``, or
:meth:`TimingBuffer.record` / :meth:`TimingBuffer.record_prediction` from a service): an
O(1) append under a lock into a ring of fixed capacity, nothing else on the hot path.  A
writer elsewhere (another thread, a periodic job) drains it into the store with
:func:`polydom.store_timings`, from which :func:`polydom.recalibrate` refits the curves.

:class:`DriftMonitor` says when the machine no longer matches the curves, with two tests
per feature.  The tail test: each curve promises that a share ``quantile`` of in-situ times
lie at or below it, so the number of exceedances among a feature's last ``window`` timings
is Binomial(window, 1 - quantile) while the promise holds; the feature is flagged when that
count reaches the smallest ``k`` with ``P(Binomial >= k) < alpha``.  The median test: the
first ``reference`` timings of a feature (after a reset) fix the median of ``t / c(n)``; the
feature is flagged when the median ratio of its last ``window`` timings exceeds
``slowdown`` times that reference (a uniform slowdown by ``s > slowdown`` is flagged once
more than half the window is slowed: after ``window // 2 + 1`` timings).  The median test
sees a slowdown even where the tail of the timings is made of long delays (preemption on a
loaded machine) that already sit above the curve.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.quantile_fit import check_quantile
from polydom.errors import InvalidArgumentError, TelemetryError
from polydom.index.item_prediction import ItemPrediction

__all__ = ["DriftMonitor", "TimingBuffer", "TimingRecord", "check_timing"]


class TimingRecord(NamedTuple):
    """One served feature computation: the atom, the item's size, the seconds it took."""

    feature: str
    size: float
    seconds: float


def check_timing(feature: Any, size: Any, seconds: Any) -> TimingRecord:
    """A :class:`TimingRecord` after checking it: a non-empty name, finite values >= 0.

    Runtime complexity: O(1).

    Raises
    ------
    polydom.errors.TelemetryError
        A ``ValueError`` naming the bad field and value.
    """
    if not isinstance(feature, str) or not feature:
        raise TelemetryError(f"timing feature must be a non-empty string, got {feature!r}")
    out = []
    for what, value in (("size", size), ("seconds", seconds)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise TelemetryError(f"timing {what} of {feature!r} must be a number, got {value!r}")
        v = float(value)
        if not (math.isfinite(v) and v >= 0):
            raise TelemetryError(
                f"timing {what} of {feature!r} must be finite and >= 0, got {value!r}"
            )
        out.append(v)
    return TimingRecord(feature, out[0], out[1])


class TimingBuffer:
    """A thread-safe ring of the last ``capacity`` served timings.

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
        """Append every feature an :class:`ItemPrediction` computed, with its size.

        All are checked before any is appended.  Runtime complexity: O(features).
        """
        recs = [check_timing(f, prediction.size, s)
                for f, s in prediction.feature_seconds.items()]
        with self._lock:
            for rec in recs:
                if len(self._ring) == self.capacity:
                    self.dropped += 1
                self._ring.append(rec)
            self.total += len(recs)

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
    """Flags features whose served times exceed their curves more often than promised.

    >>> mon = DriftMonitor({"f": CostCurve([0.0, 1e-3])}, quantile=0.95, window=30)
    >>> [mon.update("f", 10.0, 0.02) for _ in range(7)][-2:]
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
    alpha : float, default 1e-3
        False-alarm probability of one test while nothing changes.
    reference : int, default 30
        Timings per feature that fix the median test's reference (0: no median test).
    slowdown : float, default 1.5
        Ratio of the window's median to the reference median that the median test flags.
    """

    def __init__(self, curves: Mapping[str, CostCurve], quantile: float = 0.95,
                 window: int = 30, alpha: float = 1e-3, reference: int = 30,
                 slowdown: float = 1.5) -> None:
        self.quantile = check_quantile(quantile)
        for name, value, least in (("window", window, 1), ("reference", reference, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < least:
                raise InvalidArgumentError(f"{name} must be an integer >= {least}, got {value!r}")
        self.window = int(window)
        self.reference = int(reference)
        self.alpha = check_quantile(alpha, "alpha")
        #: Exceedances of the curve in the window at which a feature is flagged.
        self.threshold = exceedance_threshold(self.window, 1.0 - self.quantile, self.alpha)
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float)) \
                or not slowdown > 1.0 or not math.isfinite(slowdown):
            raise InvalidArgumentError(f"slowdown must be a number > 1, got {slowdown!r}")
        self.slowdown = float(slowdown)
        self.reset(curves)

    def reset(self, curves: Mapping[str, CostCurve] | None = None) -> None:
        """Forget every window and flag (and take new ``curves``, after a recalibration)."""
        if curves is not None:
            self.curves = {k: CostCurve.coerce(v) for k, v in curves.items()}
        self._seen: dict[str, deque[bool]] = {}
        self._count: dict[str, int] = {}
        self._recent: dict[str, deque[float]] = {}
        self._ratios: dict[str, list[float]] = {}
        #: Per feature, the median ratio ``t / c(n)`` of its first ``reference`` timings.
        self.medians: dict[str, float] = {}
        #: Features flagged since the last reset.
        self.drifted: set[str] = set()

    def _window_count(self, seen: dict[str, deque[bool]], counts: dict[str, int],
                      feature: str, flag: bool) -> int:
        window = seen.setdefault(feature, deque(maxlen=self.window))
        count = counts.get(feature, 0)
        if len(window) == self.window and window[0]:
            count -= 1
        window.append(flag)
        count += flag
        counts[feature] = count
        return count

    def update(self, feature: str, size: float, seconds: float) -> bool:
        """Take one timing; True when it makes ``feature`` flagged (first time only).

        A feature without a curve is ignored.  Runtime complexity: O(degree).
        """
        curve = self.curves.get(feature)
        if curve is None:
            return False
        bound = float(curve(float(size)))
        t = float(seconds)
        count = self._window_count(self._seen, self._count, feature, t > bound)
        fired = count >= self.threshold
        if self.reference and bound > 0:
            ratio = t / bound
            median = self.medians.get(feature)
            if median is None:
                ratios = self._ratios.setdefault(feature, [])
                ratios.append(ratio)
                if len(ratios) == self.reference:
                    self.medians[feature] = float(np.median(ratios))
            else:
                recent = self._recent.setdefault(feature, deque(maxlen=self.window))
                recent.append(ratio)
                fired |= (len(recent) == self.window
                          and float(np.median(recent)) > self.slowdown * median)
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
