"""Cost curves fitted to measured timings: non-negative least squares (or a covering LP).

:func:`fit_cost_curve` turns timings of a feature at several item sizes into a non-negative
polynomial ``c(n)``; :class:`CostProfile` keeps the raw timings of every feature with the
curves fitted to them, so a fit can be redone with another statistic or degree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polydom.curves.cost_curve import CostCurve, flush_subnormal
from polydom.curves.domain import check_field_array
from polydom.errors import FitError, InvalidArgumentError

__all__ = [
    "STATISTICS",
    "CostProfile",
    "check_degree",
    "check_statistic",
    "fit_cost_curve",
    "summarise_timings",
]

#: Statistics a cost curve may be fitted to, per size: the worst case, the 90th percentile
#: or the mean of the timings measured at that size.
STATISTICS = ("max", "p90", "mean")
MAX_DEGREE = 3


def check_statistic(statistic: str) -> str:
    if statistic not in STATISTICS:
        raise InvalidArgumentError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    return statistic


def check_degree(degree: int) -> int:
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)):
        raise InvalidArgumentError(
            f"degree must be an integer in [0, {MAX_DEGREE}], got {degree!r}")
    if not 0 <= int(degree) <= MAX_DEGREE:
        raise InvalidArgumentError(
            f"degree must be an integer in [0, {MAX_DEGREE}], got {degree!r}")
    return int(degree)


def summarise_timings(
    sizes: np.ndarray, seconds: np.ndarray, statistic: str = "max"
) -> tuple[np.ndarray, np.ndarray]:
    """One value per distinct size: the ``statistic`` of every timing taken at that size.

    Runtime complexity: O(T log T) for T timings.

    >>> summarise_timings(np.array([1, 1, 2]), np.array([[1.0, 3.0], [2.0, 2.0], [5.0, 7.0]]))
    (array([1., 2.]), array([3., 7.]))

    Parameters
    ----------
    sizes : array of shape (items,)
        Size of each timed item.
    seconds : array of shape (items,) or (items, repeats)
        Timings of each item (every repeat).
    statistic : {"max", "p90", "mean"}, default "max"

    Returns
    -------
    (distinct sizes ascending, statistic at each)
    """
    check_statistic(statistic)
    n = np.asarray(sizes, dtype=np.float64).ravel()
    t = np.asarray(seconds, dtype=np.float64).reshape(n.size, -1)
    distinct = np.unique(n)
    values = np.empty(distinct.size)
    for k, size in enumerate(distinct):
        at = t[n == size].ravel()
        if statistic == "max":
            values[k] = at.max()
        elif statistic == "p90":
            values[k] = np.percentile(at, 90)
        else:
            values[k] = at.mean()
    return distinct, values


def _covering_coefficients(x: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    """Coefficients >= 0 of the polynomial in ``x`` above every ``(x, y)`` with least
    ``sum c(x_i) / y_i`` (x scaled to [0, 1] by the caller)."""
    from scipy.optimize import linprog  # imported here: keeps ``import polydom`` light
    design = x[:, None] ** np.arange(degree + 1)[None, :]
    weight = 1.0 / np.maximum(y, max(float(y.max()) * 1e-9, 1e-15))
    result = linprog(design.T @ weight, A_ub=-design, b_ub=-y, bounds=(0, None),
                     method="highs")
    if result.status != 0:  # cannot happen: a large constant is always feasible
        raise FitError(f"covering fit failed: {result.message}")
    coef = np.maximum(result.x, 0.0)
    short = y - design @ coef
    if short.max() > 0:  # solver tolerance: lift the constant term by the shortfall
        coef[0] += float(short.max())
    return coef


def fit_cost_curve(
    sizes: Sequence[float] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    degree: int = 2,
    weighting: str = "relative",
    cover: bool = False,
) -> CostCurve:
    """Fit ``c(n) = sum_k a_k n**k`` with every ``a_k >= 0`` to measured (size, seconds) points.

    Non-negative least squares (:func:`scipy.optimize.nnls`) on the design matrix of powers of
    ``n / s`` (``s`` the largest size; this keeps the columns of comparable magnitude), then
    the coefficients are scaled back.  Non-negative coefficients make the curve non-negative
    and non-decreasing for every ``n >= 0``.  With ``weighting="relative"`` each point's
    residual is divided by its value, so that small sizes (tiny times) weigh as much as large
    ones; ``"absolute"`` is plain least squares in seconds.

    A least-squares curve passes through the middle of its points, so about half of them lie
    above it.  With ``cover=True`` the curve is instead the non-negative polynomial at or
    above every point with the least total relative excess ``sum_i c(n_i) / t_i`` (a linear
    program, :func:`scipy.optimize.linprog`); ``weighting`` is then unused.  Fitted to
    per-size maxima, this is a worst-case curve over the measured sizes.

    Runtime complexity: O(P * d**2) for P points and degree d.

    >>> fit_cost_curve([1, 2, 3], [1.5, 3.0, 5.5], degree=2).coefficients.round(6).tolist()
    [1.0, 0.0, 0.5]

    Parameters
    ----------
    sizes : sequence of float
        Item sizes, ``>= 0``.
    seconds : sequence of float
        Measured cost at each size, ``>= 0``.
    degree : int, default 2
        Degree of the polynomial, 0 to 3.
    weighting : {"relative", "absolute"}, default "relative"
    cover : bool, default False
        Fit the tightest curve at or above every point instead of least squares.

    Returns
    -------
    CostCurve

    Raises
    ------
    ValueError
        On mismatched lengths, negative or non-finite values, a degree outside [0, 3], fewer
        distinct sizes than coefficients, or an unknown weighting.
    """
    degree = check_degree(degree)
    if weighting not in ("relative", "absolute"):
        raise InvalidArgumentError(f"weighting must be 'relative' or 'absolute', got {weighting!r}")
    n = np.asarray(sizes, dtype=np.float64).ravel()
    y = np.asarray(seconds, dtype=np.float64).ravel()
    if n.size != y.size:
        raise InvalidArgumentError(
            f"sizes and seconds must have one value each, got {n.size} and {y.size}")
    if n.size == 0:
        raise InvalidArgumentError("sizes must not be empty")
    check_field_array(n, "sizes")
    check_field_array(y, "seconds")
    if np.unique(n).size < degree + 1:
        raise InvalidArgumentError(
            f"a degree-{degree} fit needs at least {degree + 1} distinct sizes, "
            f"got {np.unique(n).size}"
        )
    scale = float(n.max()) if n.max() > 0 else 1.0
    if cover:
        coef = _covering_coefficients(n / scale, y, degree)
    else:
        design = (n / scale)[:, None] ** np.arange(degree + 1)[None, :]
        target = y.copy()
        if weighting == "relative":
            w = 1.0 / np.maximum(y, max(float(y.max()) * 1e-9, 1e-15))
            design = design * w[:, None]
            target = target * w
        from scipy.optimize import nnls  # imported here: keeps ``import polydom`` light

        coef, _ = nnls(design, target)
    coef = coef / scale ** np.arange(degree + 1)
    return CostCurve(flush_subnormal(coef))


@dataclass(frozen=True)
class CostProfile:
    """Measured timings of every feature and the cost curves fitted to them.

    Attributes
    ----------
    sizes : ndarray of shape (items,)
        Size of each profiled item.
    timings : dict of str to ndarray of shape (items, repeats)
        Seconds of every run of every feature's routine.
    statistic : str
        What the curves were fitted to, per size ("max", "p90" or "mean").
    degree : int
        Degree of the fitted polynomials.
    weighting : str
        "relative" or "absolute" (see :func:`fit_cost_curve`).
    cover : bool
        Whether each curve is the tightest one above its points (see :func:`fit_cost_curve`).
    curves : dict of str to CostCurve
        Fitted cost of each feature, in seconds, as a polynomial in the size.
    residuals : dict of str to float
        Root mean square relative error of each curve at the fitted points,
        ``sqrt(mean(((c(n) - t) / t)**2))``.
    """

    sizes: np.ndarray
    timings: dict[str, np.ndarray]
    statistic: str
    degree: int
    weighting: str
    cover: bool
    curves: dict[str, CostCurve]
    residuals: dict[str, float]

    @classmethod
    def fit(
        cls,
        sizes: np.ndarray,
        timings: Mapping[str, np.ndarray],
        statistic: str = "max",
        degree: int = 2,
        weighting: str = "relative",
        cover: bool = False,
    ) -> CostProfile:
        """Fit one curve per feature to the ``statistic`` of its timings at each size.

        Runtime complexity: O(F * T log T) for F features and T timings each.
        """
        check_statistic(statistic)
        degree = check_degree(degree)
        n = np.asarray(sizes, dtype=np.float64)
        curves: dict[str, CostCurve] = {}
        residuals: dict[str, float] = {}
        for name, seconds in timings.items():
            at, values = summarise_timings(n, seconds, statistic)
            curve = fit_cost_curve(at, values, degree, weighting, cover)
            curves[name] = curve
            safe = np.maximum(values, 1e-15)
            residuals[name] = float(np.sqrt(np.mean(((curve(at) - values) / safe) ** 2)))
        return cls(n, {k: np.asarray(v) for k, v in timings.items()}, statistic, degree,
                   weighting, bool(cover), curves, residuals)

    def refit(
        self, statistic: str | None = None, degree: int | None = None,
        weighting: str | None = None, cover: bool | None = None,
    ) -> CostProfile:
        """The same timings fitted again with another statistic, degree, weighting or cover.

        Runtime complexity: as :meth:`fit`; nothing is re-timed.
        """
        return CostProfile.fit(
            self.sizes,
            self.timings,
            self.statistic if statistic is None else statistic,
            self.degree if degree is None else degree,
            self.weighting if weighting is None else weighting,
            self.cover if cover is None else cover,
        )

    def points(self, name: str, statistic: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Distinct sizes and the ``statistic`` (default: the fitted one) of ``name`` at each."""
        if name not in self.timings:
            raise InvalidArgumentError(
                f"unknown feature {name!r}; profiled: {sorted(self.timings)}")
        return summarise_timings(self.sizes, self.timings[name], statistic or self.statistic)

    def table(self) -> str:
        """A plain-text table: feature, fitted curve (6 significant digits, no float noise:
        :meth:`CostCurve.text`), relative RMS residual.

        >>> CostProfile(np.zeros(2), {}, "max", 1, "relative", False,
        ...             {"a": CostCurve([0.5, 3.050731825929237e-10])},
        ...             {"a": 0.01}).table().splitlines()[1]
        'a     0.010  3.05073e-10*n + 0.5'
        """
        width = max((len(k) for k in self.curves), default=7)
        lines = [f"{'feature':<{width}}  {'rms rel':>8}  cost (seconds, n = size)"]
        for name, curve in self.curves.items():
            lines.append(f"{name:<{width}}  {self.residuals[name]:>8.3f}  {curve.text()}")
        return "\n".join(lines)
