"""Cost curves that promise a quantile of in-situ time: non-negative quantile regression.

:func:`fit_quantile_curve` fits ``c(n) = sum_k a_k n**k`` with every ``a_k >= 0`` so that
about a fraction ``quantile`` of the measured (size, seconds) points lie at or below it
(the pinball loss of quantile regression, a linear program); :class:`InSituProfile` keeps
the per-item timings of an in-situ profiling pass (:meth:`polydom.Featurizer.profile_in_situ`)
with the curves fitted to them and the fraction of points each curve covers.

Why a quantile and not a mean or a per-size maximum: in situ, every item's feature time is a
draw from a distribution at its size (cache state, preemption, the other features and model
predictions run around it).  A curve at the ``1 - q`` quantile of that distribution says what
it promises: at each size, at most a fraction ``q`` of the items take longer.  A per-size
maximum of a few warm repeats says nothing about the tail; a mean is exceeded by about half
of the items.  Non-negative coefficients keep the curve non-negative and non-decreasing for
``n >= 0``; the pinball loss makes the fit robust (a single huge timing moves it no more than
any other point above it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polydom.curves.cost_curve import CostCurve, flush_subnormal
from polydom.curves.fitting import check_degree, fit_cost_curve
from polydom.errors import FitError, InvalidArgumentError

__all__ = ["InSituProfile", "check_quantile", "check_timings", "fit_quantile_curve"]


def check_quantile(quantile: float, name: str = "quantile") -> float:
    """``quantile`` as a float in (0, 1); ``ValueError`` naming ``name`` otherwise."""
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float, np.floating)):
        raise InvalidArgumentError(f"{name} must be a number in (0, 1), got {quantile!r}")
    q = float(quantile)
    if not 0.0 < q < 1.0:
        raise InvalidArgumentError(f"{name} must be in (0, 1), got {quantile!r}")
    return q


def check_timings(
    sizes: Sequence[float] | np.ndarray, seconds: Sequence[float] | np.ndarray, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and seconds as float arrays of one length, finite and ``>= 0``.

    Runtime complexity: O(T).

    Raises
    ------
    ValueError
        Naming ``what``, the first bad value and its position.
    """
    n = np.asarray(sizes, dtype=np.float64).ravel()
    t = np.asarray(seconds, dtype=np.float64).ravel()
    if n.size != t.size:
        raise InvalidArgumentError(
            f"{what}: sizes and seconds differ in length ({n.size} and {t.size})")
    for values, label in ((n, "size"), (t, "seconds")):
        bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
        if bad.size:
            raise InvalidArgumentError(
                f"{what}: {label} must be finite and >= 0, got {values[bad[0]]!r} at "
                f"position {int(bad[0])}"
            )
    return n, t


def fit_quantile_curve(
    sizes: Sequence[float] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    quantile: float = 0.95,
    degree: int = 2,
) -> CostCurve:
    """The non-negative polynomial below which about ``quantile`` of the points lie.

    Minimises the relative pinball loss ``sum_i w_i * rho(t_i - c(n_i))`` with
    ``rho(r) = quantile * r`` for ``r >= 0`` and ``(quantile - 1) * r`` below, over
    coefficients ``a_k >= 0`` (a linear program, :func:`scipy.optimize.linprog`).  The weights
    ``w_i = 1 / m(n_i)`` come from a first least-squares fit ``m`` (:func:`fit_cost_curve`,
    relative weighting) and depend on the size only, so small and large sizes weigh alike
    and the quantile is not biased by the timings themselves.  At the optimum the weighted
    share of points strictly above the curve is at most ``1 - quantile`` (the LP's
    optimality condition).  The degree is lowered to one less than the number of distinct
    sizes when there are fewer.

    Runtime complexity: one LP with P + d + 1 variables for P points (HiGHS; about
    linear in P in practice), plus an O(P * d**2) first fit.

    >>> n = np.repeat([1.0, 2.0, 3.0, 4.0], 20)
    >>> t = n * np.tile(np.linspace(1.0, 2.0, 20), 4)
    >>> c = fit_quantile_curve(n, t, quantile=0.9, degree=1)
    >>> bool(0.85 <= np.mean(t <= c(n) * (1 + 1e-9)) <= 0.95)
    True

    Parameters
    ----------
    sizes, seconds : sequence of float
        One point per timed run: the item's size and the seconds it took (finite, >= 0).
    quantile : float, default 0.95
        In (0, 1): the share of points the curve should cover.
    degree : int, default 2
        Largest degree, 0 to 3.

    Returns
    -------
    CostCurve

    Raises
    ------
    ValueError
        On mismatched lengths, no points, a negative or non-finite value, a quantile outside
        (0, 1) or a degree outside [0, 3].
    """
    from scipy.optimize import linprog  # imported here: keeps ``import polydom`` light
    from scipy.sparse import csr_matrix, eye, hstack

    tau = check_quantile(quantile)
    degree = check_degree(degree)
    n, t = check_timings(sizes, seconds, "fit_quantile_curve")
    if n.size == 0:
        raise InvalidArgumentError("fit_quantile_curve: sizes must not be empty")
    degree = min(degree, np.unique(n).size - 1)
    scale = float(n.max()) if n.max() > 0 else 1.0
    design = (n / scale)[:, None] ** np.arange(degree + 1)[None, :]
    if t.max() <= 0:
        return CostCurve([0.0])
    unit = float(np.median(t[t > 0]))  # solve in units of the median time: values near 1,
    y = t / unit  # so the solver's absolute tolerances are relative ones
    first = fit_cost_curve(n, y, degree, weighting="relative")
    w = 1.0 / np.maximum(first(n), 1e-6)
    w /= w.mean()
    p, d = n.size, degree + 1
    # variables: a (d), over u (p), under v (p); X a + u - v = y; all >= 0
    c = np.concatenate([np.zeros(d), tau * w, (1.0 - tau) * w])
    a_eq = hstack([csr_matrix(design), eye(p), -eye(p)], format="csr")
    result = linprog(c, A_eq=a_eq, b_eq=y, bounds=(0, None), method="highs")
    if result.status != 0:  # cannot happen: a = 0, u = y, v = 0 is feasible, loss >= 0
        raise FitError(f"quantile fit failed: {result.message}")
    coef = unit * np.maximum(result.x[:d], 0.0) / scale ** np.arange(d)
    return CostCurve(flush_subnormal(coef))


@dataclass(frozen=True)
class InSituProfile:
    """Per-item in-situ timings of every feature and the quantile curves fitted to them.

    Attributes
    ----------
    sizes : ndarray of shape (items,)
        Size of each profiled item.
    timings : dict of str to ndarray of shape (items,)
        Seconds each feature took on each item, timed where serving times it.
    quantile : float
        What each curve promises: at each size, this share of in-situ times at or below it.
    degree : int
        Largest degree of the curves.
    curves : dict of str to CostCurve
        Fitted cost of each feature, in seconds.
    coverage : dict of str to float
        Share of the profiled items whose time is at or below the feature's curve.
    """

    sizes: np.ndarray
    timings: dict[str, np.ndarray]
    quantile: float
    degree: int
    curves: dict[str, CostCurve]
    coverage: dict[str, float]

    @classmethod
    def fit(
        cls,
        sizes: Sequence[float] | np.ndarray,
        timings: Mapping[str, Sequence[float] | np.ndarray],
        quantile: float = 0.95,
        degree: int = 2,
    ) -> InSituProfile:
        """Fit :func:`fit_quantile_curve` to each feature's per-item timings.

        Runtime complexity: one LP per feature (see :func:`fit_quantile_curve`).

        Raises
        ------
        ValueError
            As :func:`fit_quantile_curve`, naming the feature.
        """
        tau = check_quantile(quantile)
        degree = check_degree(degree)
        n = np.asarray(sizes, dtype=np.float64).ravel()
        curves: dict[str, CostCurve] = {}
        coverage: dict[str, float] = {}
        kept: dict[str, np.ndarray] = {}
        for name, seconds in timings.items():
            at, t = check_timings(n, seconds, f"timings of feature {name!r}")
            curve = fit_quantile_curve(at, t, tau, degree)
            curves[name] = curve
            coverage[name] = float(np.mean(t <= curve(at) * (1 + 1e-9)))
            kept[name] = t
        return cls(n, kept, tau, degree, curves, coverage)

    def refit(self, quantile: float | None = None, degree: int | None = None) -> InSituProfile:
        """The same timings fitted at another quantile or degree (nothing is re-timed)."""
        return InSituProfile.fit(
            self.sizes, self.timings,
            self.quantile if quantile is None else quantile,
            self.degree if degree is None else degree,
        )

    def table(self) -> str:
        """A plain-text table: feature, share of items covered, fitted curve (6 significant
        digits, no float noise: :meth:`CostCurve.text`)."""
        width = max((len(k) for k in self.curves), default=7)
        lines = [f"{'feature':<{width}}  {'covered':>7}  cost (seconds, n = size), "
                 f"q{self.quantile:g} in situ"]
        for name, curve in self.curves.items():
            lines.append(f"{name:<{width}}  {self.coverage[name]:>7.3f}  {curve.text()}")
        return "\n".join(lines)
