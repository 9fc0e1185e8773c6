"""Featurizer: named feature routines with an item size, timed and fitted to cost polynomials.

A :class:`Featurizer` holds named feature routines (item -> 1-D vector of a fixed length) and
a size function (item -> n).  It lays the features out side by side in one matrix
(:attr:`Featurizer.columns`, registration order, the layout :class:`polydom.Index` expects),
computes only the features asked for, and times them: :meth:`Featurizer.profile` runs every
routine on items of several sizes and fits a non-negative polynomial ``c_f(n)`` in seconds to
each feature's timings (:func:`fit_cost_curve`, non-negative least squares), keeping the raw
timings in a :class:`CostProfile` so the fit can be redone with another statistic or degree.
That warm loop (one routine, many repeats) is not what serving pays;
:meth:`Featurizer.profile_in_situ` is the default protocol: it times every feature where and
as :func:`polydom.serving.predict_item` does (docs/cost_model.md, "Profiling in situ").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from polydom.curves.domain import check_field, check_field_array, real_from_text
from polydom.curves.fitting import CostProfile, check_degree, check_statistic
from polydom.curves.quantile_fit import InSituProfile, check_quantile
from polydom.errors import InvalidArgumentError
from polydom.index.item_prediction import ItemPrediction
from polydom.serving.item_serving import predict_item

#: The clocks a feature is timed with, by name (``polydom demo --timer``, the benchmarks'
#: ``--timer``): ``"wall"`` is :func:`time.perf_counter`, the latency a caller sees (other
#: processes and threads taking the core count); ``"cpu"`` is :func:`time.thread_time`, the
#: CPU time of the thread computing the feature, blind to other processes *and to the
#: process's other threads*.  Not :func:`time.process_time`: it sums every thread of the
#: process, so BLAS workers still spinning after a multi-threaded call (OpenBLAS keeps them
#: busy for a while after each call) or another request served in a thread pool land in a
#: feature's timing, in whole scheduler ticks (about 4 ms on Linux).  Measured on digits
#: after an in-situ build (2 BLAS threads): p99 / median of an item's feature time 11.2 with
#: ``process_time``, 1.8 with ``thread_time`` (docs/features.md, "Note on timing").  A
#: feature that computes in worker threads of its own is timed only on its calling thread
#: by ``"cpu"``: time it with ``"wall"``.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}

__all__ = ["CLOCKS", "Computed", "Featurizer", "InSituRun"]

class Computed(NamedTuple):
    """One feature of one item: its vector and the seconds its routine took."""

    vector: np.ndarray
    seconds: float


class InSituRun(NamedTuple):
    """What one in-situ pass over items produced (:meth:`Featurizer.featurize_in_situ`)."""

    rows: np.ndarray
    """Full-width feature rows, one per item, in the items' order."""
    sizes: np.ndarray
    """Size of each item."""
    timings: dict[str, np.ndarray]
    """Per feature, the seconds its routine took on each item (items' order)."""


class Featurizer:
    """Named feature routines laid out side by side, with a size function and timing.

    Register routines with :meth:`add` (each returns a 1-D vector of the length declared for
    it), give the size of an item with ``size`` (default ``len``), then :meth:`transform`
    items into rows, :meth:`compute` one feature of one item (timed), or :meth:`profile` the
    routines to get their cost curves.

    >>> fz = Featurizer(size=len)
    >>> fz = fz.add("mean", lambda x: [sum(x) / len(x)], 1).add("ends", lambda x: [x[0], x[-1]], 2)
    >>> fz.columns
    {'mean': [0], 'ends': [1, 2]}
    >>> fz.transform([[1.0, 2.0, 3.0]], features=["ends"]).tolist()
    [[nan, 1.0, 3.0]]

    Parameters
    ----------
    size : callable, default len
        Item -> its size ``n`` (a finite number >= 0).
    timer : callable, default time.perf_counter
        Clock in seconds used to time routines (:data:`CLOCKS` names the two the project
        uses: wall time, and the computing thread's CPU time).
    """

    def __init__(
        self,
        size: Callable[[Any], float] = len,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.size_function = size
        self.timer = timer
        self._routines: dict[str, Callable[[Any], Any]] = {}
        self._steps: dict[str, Callable[[Any], Any]] = {}
        self._uses: dict[str, tuple[str, ...]] = {}
        self._local = threading.local()
        self._lengths: dict[str, int] = {}
        self._columns: dict[str, list[int]] = {}
        self._width = 0

    # ------------------------------------------------------------------ registration
    def add_step(self, name: str, routine: Callable[[Any], Any]) -> Featurizer:
        """Register a shared step: ``routine`` (item -> any value, such as an image's
        gradients) that features declaring it (:meth:`add`, ``steps=``) receive, computed
        once per served item however many of them run (issue 37).  Returns ``self``.

        Runtime complexity: O(1).

        Raises
        ------
        ValueError
            If ``name`` is not a non-empty string, is taken (by a step or a feature), or
            ``routine`` is not callable.
        """
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"step name must be a non-empty string, got {name!r}")
        if name in self._steps or name in self._routines:
            raise InvalidArgumentError(f"{name!r} is already registered")
        if not callable(routine):
            raise InvalidArgumentError(f"routine of step {name!r} must be callable, got "
                                       f"{routine!r}")
        self._steps[name] = routine
        return self

    def step_routine(self, name: str) -> Callable[[Any], Any]:
        """The routine registered as shared step ``name``.

        Raises
        ------
        ValueError
            If ``name`` is not a registered step.
        """
        if name not in self._steps:
            raise InvalidArgumentError(f"unknown step {name!r}; steps: {self.steps}")
        return self._steps[name]

    @property
    def steps(self) -> list[str]:
        """Names of the shared steps, in registration order."""
        return list(self._steps)

    @property
    def uses(self) -> dict[str, list[str]]:
        """The steps each feature uses (features using none left out): what a
        :class:`polydom.CostModel`'s ``uses`` says."""
        return {name: list(steps) for name, steps in self._uses.items()}

    def forget(self) -> None:
        """Forget the shared steps computed so far (on this thread): the next feature
        computes the steps it uses again.  Serving calls it before each item
        (:meth:`polydom.serving.ItemServer.predict`), the in-situ protocol before each
        (item, feature) pair (each timed as a set's first feature).  O(1)."""
        self._local.cache = None

    def add(self, name: str, routine: Callable[..., Any], length: int,
            steps: Sequence[str] = ()) -> Featurizer:
        """Register ``routine`` (item -> vector of ``length`` numbers) as feature ``name``.

        With ``steps`` (names of shared steps, :meth:`add_step`), ``routine(item, *values)``
        receives their values on the item, in that order; a step is computed once per item
        and the features after the first that uses it reuse its value (within the same
        served item, on the same thread: :meth:`forget`), inside their timing.

        Its columns follow those of the features registered before it.  Returns ``self``.

        Runtime complexity: O(length).

        Raises
        ------
        ValueError
            If ``name`` is not a non-empty string or is taken, ``routine`` is not callable,
            or ``length`` is not a positive integer.
        """
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"feature name must be a non-empty string, got {name!r}")
        if name in self._routines or name in self._steps:
            raise InvalidArgumentError(f"feature {name!r} is already registered")
        if isinstance(steps, str):
            raise InvalidArgumentError(f"steps of feature {name!r} must be a list of names")
        unknown = [s for s in steps if s not in self._steps]
        if unknown:
            raise InvalidArgumentError(
                f"feature {name!r} uses unknown step(s) {unknown}; steps: {self.steps}")
        if not callable(routine):
            raise InvalidArgumentError(
                f"routine of feature {name!r} must be callable, got {routine!r}")
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise InvalidArgumentError(
                f"length of feature {name!r} must be a positive integer, got {length!r}"
            )
        self._routines[name] = routine
        if steps:
            self._uses[name] = tuple(steps)
        self._lengths[name] = int(length)
        self._columns[name] = list(range(self._width, self._width + int(length)))
        self._width += int(length)
        return self

    def routine(self, name: str) -> Callable[[Any], Any]:
        """The routine registered as feature ``name`` (to wrap it in another featurizer).

        Raises
        ------
        ValueError
            If ``name`` is unknown.
        """
        if name not in self._routines:
            raise InvalidArgumentError(f"unknown feature {name!r}; registered: {self.names}")
        return self._routines[name]

    @property
    def names(self) -> list[str]:
        """Feature names in registration order."""
        return list(self._routines)

    @property
    def columns(self) -> dict[str, list[int]]:
        """Feature name -> its column indices in a full row (for :class:`polydom.Index`)."""
        return {name: list(cols) for name, cols in self._columns.items()}

    @property
    def n_columns(self) -> int:
        """Width of a full row: the sum of every feature's length."""
        return self._width

    def __len__(self) -> int:
        return len(self._routines)

    def __repr__(self) -> str:
        return f"Featurizer({self.names}, columns={self._width})"

    # ------------------------------------------------------------------ evaluation
    def size(self, item: Any) -> float:
        """Size ``n`` of ``item`` from the size function, checked finite and >= 0
        (:func:`polydom.curves.domain.real_from_text`: a number, or text spelling one; an
        integer too large for a float is refused as infinite).

        Runtime complexity: that of the size function.

        Raises
        ------
        InvalidArgumentError
            If the size function's result is not a number, or not finite and >= 0.
        """
        try:
            raw = self.size_function(item)
            n = real_from_text(raw, "size of an item")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"size function must return a number, failed with: {exc}") from None
        return check_field(n, "size of an item", "size", given=raw)

    def check_features(self, features: Iterable[str] | None) -> list[str]:
        """The requested names in registration order (every name when None).

        Raises
        ------
        ValueError
            Naming any unknown feature.
        """
        if features is None:
            return self.names
        if isinstance(features, str):
            raise InvalidArgumentError(
                f"features must be an iterable of names, got the string {features!r}")
        wanted = set(features)
        unknown = wanted - set(self._routines)
        if unknown:
            raise InvalidArgumentError(
                f"unknown feature(s) {sorted(unknown)}; registered: {self.names}"
            )
        return [name for name in self._routines if name in wanted]

    def compute(self, item: Any, name: str) -> Computed:
        """Run feature ``name`` on ``item``: its vector and the seconds the routine took.

        Only the routine call is timed; checking the result is not.

        Runtime complexity: that of the routine.

        Raises
        ------
        ValueError
            If ``name`` is unknown or the routine's result is not a finite-or-NaN numeric
            vector of the registered length.
        """
        routine = self._routines.get(name)
        if routine is None:
            raise InvalidArgumentError(f"unknown feature {name!r}; registered: {self.names}")
        timer = self.timer
        uses = self._uses.get(name)
        start = timer()
        raw = routine(item) if uses is None else routine(item, *self._step_values(item, uses))
        seconds = timer() - start
        try:
            vec = np.asarray(raw, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"feature {name!r} must return numbers, got {type(raw).__name__}"
            ) from None
        if vec.size != self._lengths[name]:
            raise InvalidArgumentError(
                f"feature {name!r} returned {vec.size} values, registered length is "
                f"{self._lengths[name]}"
            )
        return Computed(vec, float(seconds))

    def _step_values(self, item: Any, steps: tuple[str, ...]) -> list[Any]:
        """The steps' values on ``item``: computed for this item on this thread, else now
        (the cache holds one item: a new item starts it afresh)."""
        cache = getattr(self._local, "cache", None)
        if cache is None or cache[0] is not item:
            cache = (item, {})
            self._local.cache = cache
        values = cache[1]
        out = []
        for step in steps:
            if step not in values:
                values[step] = self._steps[step](item)
            out.append(values[step])
        return out

    def serve(
        self, index: Any, item: Any, budget: float, anytime: bool = False,
        telemetry: Any = None,
    ) -> ItemPrediction:
        """Serve ``item`` from ``index`` within ``budget``: :func:`polydom.serving.predict_item`.

        What :meth:`polydom.Index.predict_item` calls; ``telemetry`` (a
        :class:`polydom.serving.TimingBuffer`) records the computed features.

        Runtime complexity: O(log R + d log S) plus the chosen routines.
        """
        return predict_item(index, item, budget, self, anytime=anytime, telemetry=telemetry)

    def transform(
        self, items: Iterable[Any], features: Iterable[str] | None = None, narrow: bool = False
    ) -> np.ndarray:
        """Rows of features for ``items``, computing only the requested ``features``.

        By default the rows are full width (:attr:`n_columns`, the layout of
        :attr:`columns` and of :class:`polydom.Index`) with the columns of features not
        requested left NaN.  With ``narrow=True`` only the requested features' columns are
        returned, in registration order (the column order a model trained on that set
        takes, as :meth:`polydom.Index.model_columns` cuts them).

        Runtime complexity: O(items * sum of the requested routines' costs).

        Raises
        ------
        ValueError
            On unknown features or a routine returning the wrong length.
        """
        names = self.check_features(features)
        items = list(items)
        cols = [c for name in names for c in self._columns[name]]
        out = np.full((len(items), self._width), np.nan)
        for i, item in enumerate(items):
            for name in names:
                out[i, self._columns[name]] = self.compute(item, name).vector
        return out[:, cols] if narrow else out

    # ------------------------------------------------------------------ cost
    def profile(
        self,
        items: Iterable[Any],
        repeats: int = 3,
        statistic: str = "max",
        degree: int = 2,
        features: Iterable[str] | None = None,
        weighting: str = "relative",
        cover: bool = False,
        warmup: bool = True,
        sizes: Sequence[float] | np.ndarray | None = None,
    ) -> CostProfile:
        """Time every routine on ``items`` and fit a non-negative cost polynomial to each.

        Each item's size comes from the size function (or ``sizes``); give items of at least
        ``degree + 1`` distinct sizes.  Each routine is run ``repeats`` times on each item
        (one untimed run first when ``warmup``), the ``statistic`` of the timings at each size
        is taken and :func:`fit_cost_curve` fits the curve.  The raw timings stay in the result, so
        :meth:`CostProfile.refit` gives the fits for other statistics without re-timing.

        Runtime complexity: O(repeats * items * routine cost) plus the fits.

        Parameters
        ----------
        items : iterable
            Items to time, of several sizes.
        repeats : int, default 3
            Timed runs per item and feature.
        statistic : {"max", "p90", "mean"}, default "max"
        degree : int, default 2
            Degree of the fitted polynomials, 0 to 3.
        features : iterable of str, optional
            Features to profile (default all).
        weighting : {"relative", "absolute"}, default "relative"
        cover : bool, default False
            Fit the tightest curve above every point (with "max": a worst-case fit).
        warmup : bool, default True
            Run each routine once on the first item untimed (imports, caches).
        sizes : sequence of float, optional
            Size of each item, instead of the size function.

        Returns
        -------
        CostProfile

        Raises
        ------
        ValueError
            On an unknown feature or statistic, a degree outside [0, 3], ``repeats < 1``,
            no items, ``sizes`` of the wrong length or with negative or non-finite values,
            or fewer distinct sizes than ``degree + 1``.
        """
        check_statistic(statistic)
        degree = check_degree(degree)
        if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
            raise InvalidArgumentError(f"repeats must be a positive integer, got {repeats!r}")
        names = self.check_features(features)
        items = list(items)
        if not items:
            raise InvalidArgumentError("items must not be empty")
        if sizes is None:
            sizes = np.array([self.size(item) for item in items])
        else:
            sizes = np.asarray(sizes, dtype=np.float64).ravel()
            if sizes.size != len(items):
                raise InvalidArgumentError(
                    f"sizes must have one value per item ({len(items)}), got {sizes.size}"
                )
            check_field_array(sizes, "sizes")
        if np.unique(sizes).size < degree + 1:
            raise InvalidArgumentError(
                f"profiling at degree {degree} needs items of at least {degree + 1} distinct "
                f"sizes, got sizes {sorted(set(sizes.tolist()))}"
            )
        timings: dict[str, np.ndarray] = {}
        for name in names:
            if warmup:
                self.compute(items[0], name)
            t = np.empty((len(items), int(repeats)))
            for i, item in enumerate(items):
                for r in range(int(repeats)):
                    self.forget()  # each timing pays the feature's shared steps
                    t[i, r] = self.compute(item, name).seconds
            timings[name] = t
        return CostProfile.fit(sizes, timings, statistic, degree, weighting, cover)

    def featurize_in_situ(
        self,
        items: Iterable[Any],
        features: Iterable[str] | None = None,
        predict: Callable[[np.ndarray], Any] | None = None,
        seed: int = 0,
        sizes: Sequence[float] | np.ndarray | None = None,
    ) -> InSituRun:
        """Compute every feature of every item once, timed as serving times it.

        The in-situ protocol: every feature of every item is computed once, through
        :meth:`compute` (the call :func:`polydom.serving.predict_item` makes, timed the same
        way), the (item, feature) pairs visited in a shuffled order, each right after
        ``predict(row)`` on the newest full row (a model prediction, as serving runs one
        before an item's features).  The first item visited is computed whole first, with
        no predictions: there is no full row before it.  No warm-up, no repeats: each timing
        is one cold call among other work, which is what a served item pays.  Its cost is
        one featurisation of the items, which a build pays anyway when these are its
        training items, plus the predictions.

        Why each pair alone, after a prediction: serving computes only the chosen set, so
        its first feature always runs on an item nothing has touched yet, right after a
        prediction (and the lookup), which evicted the caches and branch history the
        feature's code had.  An item's features computed back to back find both warm.
        Measured on digits (``benchmarks/feature_context_bench.py``): with one prediction
        per item and an item's features back to back, a cheap feature (13-55 us) computed
        alone after a prediction took longer than that protocol's 95th percentile in 15-33 %
        (CPU clock) and 35-49 % (wall) of the cases, 3-7 % with the pairs shuffled and each
        after a prediction (a one-feature set's guard overran at a budget on its edge).  So
        a feature's timing is what it costs as the first feature of a served set; a set of
        ``k`` features is charged that cold start ``k`` times where serving pays it once:
        conservative by ``k - 1`` cold starts (microseconds: a few percent of the cheapest
        sets, nothing on the dear ones).

        Runtime complexity: O(items * sum of the routines' costs) plus
        ``items * features`` predictions.

        Parameters
        ----------
        items : iterable
            The items (for example the training items, featurised here for the learner).
        features : iterable of str, optional
            Features to compute (default all).
        predict : callable, optional
            Called (untimed) before each (item, feature) pair with the newest full row.
        seed : int, default 0
            Seeds the order of the (item, feature) pairs.
        sizes : sequence of float, optional
            Size of each item, instead of the size function.

        Returns
        -------
        InSituRun
            Rows and per-item timings in the items' order.

        Raises
        ------
        ValueError
            On an unknown feature, no items, ``sizes`` of the wrong length or with negative
            or non-finite values, or a routine returning the wrong length.
        """
        names = self.check_features(features)
        items = list(items)
        if not items:
            raise InvalidArgumentError("items must not be empty")
        if sizes is None:
            n = np.array([self.size(item) for item in items])
        else:
            n = np.asarray(sizes, dtype=np.float64).ravel()
            if n.size != len(items):
                raise InvalidArgumentError(
                    f"sizes must have one value per item ({len(items)}), got {n.size}"
                )
            check_field_array(n, "sizes")
        rng = np.random.default_rng(seed)
        rows = np.full((len(items), self._width), np.nan)
        timings = {name: np.empty(len(items)) for name in names}
        columns = self._columns
        width = len(names)
        order = rng.permutation(len(items))
        # the first item whole (no full row to predict on yet), then every other (item,
        # feature) pair in a shuffled order, each after a prediction on the newest full row
        first = order[0] * width + rng.permutation(width)
        pairs = rng.permutation((len(items) - 1) * width)
        visits = np.concatenate([first, order[1:][pairs // width] * width + pairs % width])
        left = np.full(len(items), width)
        full = None
        for visit in visits.tolist():
            i, k = divmod(visit, width)
            name = names[k]
            if predict is not None and full is not None:
                predict(full)
            self.forget()  # each pair alone: it pays its shared steps as a first feature
            vec, seconds = self.compute(items[i], name)
            rows[i, columns[name]] = vec
            timings[name][i] = seconds
            left[i] -= 1
            if not left[i]:
                full = rows[i]
        return InSituRun(rows, n, timings)

    def profile_in_situ(
        self,
        items: Iterable[Any],
        quantile: float = 0.95,
        degree: int = 2,
        features: Iterable[str] | None = None,
        predict: Callable[[np.ndarray], Any] | None = None,
        seed: int = 0,
        sizes: Sequence[float] | np.ndarray | None = None,
    ) -> InSituProfile:
        """The default profiling protocol: time in situ, fit the ``quantile`` of each feature.

        :meth:`featurize_in_situ` times every feature once per item, each after a
        prediction, among the other features; :func:`polydom.curves.quantile_fit.fit_quantile_curve`
        fits, per feature, the non-negative polynomial below which a share ``quantile`` of
        those in-situ times lie: what each curve promises is that quantile of in-situ time
        at each size (``InSituProfile.coverage`` reports the share actually covered).  Use
        ``featurize_in_situ`` and :meth:`polydom.curves.InSituProfile.fit` to keep the rows.

        Runtime complexity: as :meth:`featurize_in_situ`, plus one LP per feature.

        Raises
        ------
        ValueError
            As :meth:`featurize_in_situ`, or a quantile outside (0, 1) or a degree outside
            [0, 3].
        """
        quantile = check_quantile(quantile)
        degree = check_degree(degree)
        run = self.featurize_in_situ(items, features, predict, seed, sizes)
        return InSituProfile.fit(run.sizes, run.timings, quantile, degree)
