"""A stated overrun rate: split-conformal factors on realised / predicted feature time.

The guard (``target_overrun=q``): for each candidate (a feature set, or an adaptive model's
expected needs) with cost curve ``c_S``, take held-out items timed in situ, the time each
would have paid for the candidate's atoms, ``T_S(i) = sum_a p_a * t_a(i)``, and a score
per item.  With ``m`` scores sorted, the bound is the ``k``-th smallest,
``k = ceil((m + 1) * (1 - q))`` (split conformal prediction).  Two scores:

* ``"ratio"``: ``R_i = T_S(i) / c_S(n_i)``; calibrated cost ``k_S * c_S(n)`` (a factor: right
  when the machine is uniformly faster or slower than the curves);
* ``"excess"``: ``E_i = T_S(i) - c_S(n_i)``; calibrated cost ``c_S(n) + d_S`` with
  ``d_S >= 0`` (an offset: right when the excess is a fixed delay, preemption by other
  processes, whatever the item's size);
* ``"best"``: both, each at ``q / 2``, and per candidate the one whose calibrated curve is
  smaller summed over the calibration sizes.  Valid at ``q`` by a union bound (the item
  overruns the chosen bound only if it overruns one of the two), hence conservative: its
  realised rate is typically near ``q / 2``, and with few items each bound is the largest
  score (one preempted item sets the offset);
* ``"auto"`` (default): the score is chosen per candidate on one part of the items (a seeded
  third, the *selection split*: the score whose calibrated curve is smaller over those
  items' sizes, each at the empirical ``1 - q`` quantile), and the bound of the chosen score
  is the conformal bound at ``q`` itself on the other part (the *bound split*).  The choice
  does not look at the bound split, so the bound split's scores stay exchangeable with a
  served item's: valid at ``q`` with no union bound, and tight (for continuous scores the
  rate is between ``q - 1/(m' + 1)`` and ``q`` for ``m'`` bound items).  The selection split
  then serves as a held-out cross-check: :attr:`OverrunCalibration.held_out` is each
  candidate's realised overrun rate there.  With fewer than ``3 * 2 *
  min_calibration_items(q)`` items (no room for a split whose bound is not one of the two
  largest scores) the score is ``"ratio"`` on every item, chosen by the count alone.

The index is swept on the calibrated curves.

Guarantee: if the scores of the calibration items and of a served item are exchangeable
(same machine state, sizes drawn alike, the score's distribution not depending on which
item), then ``P(T_S > calibrated c_S(n)) <= q`` for every candidate, so an item served with
a budget at or above the calibrated cost overruns with probability at most ``q``
(marginally over items and calibration draws).  What breaks
it: a machine that changes (load, throttling: recalibrate from telemetry), a ratio
distribution that depends on the size (the guarantee is marginal over the calibration's
sizes, not per size), too few held-out items (``m >= 1/q - 1`` are needed at all), adaptive
models (their realised time is a random subset of ``needs``; the expectation is calibrated,
not the draw), and candidates chosen for a budget near the edge of their calibrated cost
are exactly the ones whose tail matters (the guarantee holds for any fixed rule, and the
index's choice depends on the size and budget only, not on the item's timing).

Depends on numpy and the cost curves only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.quantile_fit import check_quantile, check_timings
from polydom.errors import InvalidArgumentError

__all__ = [
    "SCORES",
    "SELECT_SHARE",
    "OverrunCalibration",
    "auto_split",
    "calibrate_overrun",
    "conformal_factor",
    "min_calibration_items",
]

#: Conformal scores of :func:`calibrate_overrun` (module docstring).
SCORES = ("auto", "ratio", "excess", "best")


def min_calibration_items(target_overrun: float) -> int:
    """Fewest held-out ratios for which a finite conformal factor exists at this rate.

    ``ceil((m + 1) * (1 - q)) <= m`` holds from ``m = ceil(1/q) - 1`` on.

    >>> min_calibration_items(0.05)
    19
    """
    q = check_quantile(target_overrun, "target_overrun")
    m = max(1, math.ceil(1.0 / q) - 1)
    while math.ceil((m + 1) * (1.0 - q) - 1e-12) > m:
        m += 1
    return m


def conformal_factor(ratios: Sequence[float] | np.ndarray, target_overrun: float) -> float:
    """The split-conformal bound: the ``ceil((m + 1)(1 - q))``-th smallest of ``m`` ratios.

    A new ratio exchangeable with these is at most the returned value with probability at
    least ``1 - q``.

    Runtime complexity: O(m) (a partition).

    >>> conformal_factor(np.arange(1.0, 20.0), 0.05)
    19.0
    >>> conformal_factor(np.arange(1.0, 40.0), 0.05)
    38.0

    Raises
    ------
    ValueError
        If ``target_overrun`` is not in (0, 1), a ratio is NaN or negative, or there are
        fewer than :func:`min_calibration_items` ratios.
    """
    q = check_quantile(target_overrun, "target_overrun")
    r = np.asarray(ratios, dtype=np.float64).ravel()
    if np.any(np.isnan(r)):
        raise InvalidArgumentError("ratios must not be NaN")
    m = r.size
    k = math.ceil((m + 1) * (1.0 - q) - 1e-12)
    if k > m:
        raise InvalidArgumentError(
            f"target_overrun={q:g} needs at least {min_calibration_items(q)} held-out "
            f"timings, got {m}"
        )
    return float(np.partition(r, k - 1)[k - 1])


#: Share of the items that ``score="auto"`` uses to choose each candidate's score.
SELECT_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class OverrunCalibration:
    """Per-candidate factors and offsets of a conformal overrun calibration.

    Attributes
    ----------
    target_overrun : float
        ``q``: the overrun rate each calibrated curve is meant to hold.
    factors : ndarray of shape (candidates,)
        ``k_S`` for each candidate, in the order given (1.0 where nothing is needed or
        the offset was chosen).
    offsets : ndarray of shape (candidates,)
        ``d_S >= 0`` in seconds (0.0 where the factor was chosen).
    items : int
        Held-out items the scores came from.
    median_ratio : ndarray of shape (candidates,)
        Median realised / predicted ratio of each candidate (NaN where nothing is needed).
    score : str
        The score asked for (:data:`SCORES`).
    held_out : ndarray of shape (candidates,), optional
        ``score="auto"`` with a selection split: each calibrated curve's realised overrun
        rate on the selection split's items (not used for the bound: a cross-check, near
        ``q`` when the items are exchangeable); NaN otherwise.
    chosen : tuple of str, optional
        Per candidate, the score its bound uses (``"ratio"``, ``"excess"`` or ``""`` for a
        candidate needing nothing).
    """

    target_overrun: float
    factors: np.ndarray
    offsets: np.ndarray
    items: int
    median_ratio: np.ndarray
    score: str = "best"
    held_out: np.ndarray | None = None
    chosen: tuple[str, ...] = ()

    def curves(self, costs: Sequence[CostCurve]) -> list[CostCurve]:
        """``k_S * c_S + d_S`` for each candidate's curve (in the calibration's order)."""
        if len(costs) != self.factors.size:
            raise InvalidArgumentError(
                f"costs must have one curve per calibrated candidate ({self.factors.size}), "
                f"got {len(costs)}"
            )
        return [c * float(k) + float(d)
                for c, k, d in zip(costs, self.factors, self.offsets, strict=True)]


def auto_split(items: int, target_overrun: float, seed: int = 0
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """Positions of the selection and bound splits of ``score="auto"`` (None: no split).

    A split is made when the bound split keeps at least ``2 * min_calibration_items(q)``
    items (its bound then is not one of the two largest scores); the selection split is a
    seeded :data:`SELECT_SHARE` of the items.  Depends on the count and the seed only,
    never on the timings.  Runtime complexity: O(items).

    >>> auto_split(40, 0.05) is None, len(auto_split(600, 0.05)[1])
    (True, 400)
    """
    q = check_quantile(target_overrun, "target_overrun")
    select = int(items * SELECT_SHARE)
    if select < 1 or items - select < 2 * min_calibration_items(q):
        return None
    order = np.random.default_rng(seed).permutation(items)
    return np.sort(order[:select]), np.sort(order[select:])


def _bounds(realised: np.ndarray, predicted: np.ndarray, q: float, conformal: bool
            ) -> tuple[float | None, float]:
    """Ratio bound (None when a zero curve met positive time) and excess bound (>= 0)."""
    if conformal:
        def level(values: np.ndarray) -> float:
            return conformal_factor(values, q)
    else:
        def level(values: np.ndarray) -> float:
            return float(np.quantile(values, 1.0 - q, method="higher"))
    zero = predicted <= 0
    excess = max(0.0, level(realised - predicted))
    if np.any(zero & (realised > 0)):
        return None, excess
    ratios = np.where(zero, 0.0, realised / np.where(zero, 1.0, predicted))
    return level(ratios), excess


def calibrate_overrun(
    costs: Sequence[CostCurve],
    needs: Sequence[Mapping[str, float]],
    sizes: Sequence[float] | np.ndarray,
    timings: Mapping[str, Sequence[float] | np.ndarray],
    target_overrun: float = 0.05,
    score: str = "auto",
    seed: int = 0,
) -> OverrunCalibration:
    """Conformal factors or offsets that make each candidate's curve hold ``1 - q`` of the time.

    For candidate ``S`` with curve ``costs[S]`` and ``needs[S]`` (atom -> probability), the
    held-out item ``i`` (size ``sizes[i]``) would pay ``T_S(i) = sum_a p_a * timings[a][i]``;
    the factor is :func:`conformal_factor` of ``T_S(i) / c_S(n_i)``, the offset that of
    ``T_S(i) - c_S(n_i)`` (at least 0), over the items; ``score`` picks one, the better of
    both at ``q / 2`` each (``"best"``), or the better on a selection split with the bound
    at ``q`` on the rest (``"auto"``; module docstring: method, guarantee, what breaks
    it).  A candidate needing nothing keeps its curve.

    Runtime complexity: O(K * (A + I)) for K candidates, A atoms each, I items.

    >>> c = calibrate_overrun([CostCurve([0.0, 1.0])], [{"f": 1.0}], np.arange(1.0, 40.0),
    ...                       {"f": 2.0 * np.arange(1.0, 40.0)}, 0.05, score="ratio")
    >>> c.factors.tolist(), c.offsets.tolist()
    ([2.0], [0.0])

    Parameters
    ----------
    costs : sequence of CostCurve
        Each candidate's cost curve.
    needs : sequence of mapping
        Each candidate's atoms with the probability each is needed.
    sizes : sequence of float
        Size of each held-out item.
    timings : mapping of str to sequence of float
        Per atom, the in-situ seconds on each held-out item.
    target_overrun : float, default 0.05
        ``q`` in (0, 1).
    score : {"auto", "ratio", "excess", "best"}, default "auto"
    seed : int, default 0
        Seeds ``"auto"``'s selection split (:func:`auto_split`).

    Returns
    -------
    OverrunCalibration

    Raises
    ------
    ValueError
        On an unknown score, a ``target_overrun`` outside (0, 1), too few items (twice as
        many for ``"best"``), mismatched lengths, a NaN,
        negative or infinite timing or size (naming the atom), a candidate needing an atom
        without timings (naming both), or a candidate whose curve is 0 at a size where its
        atoms took time under ``score="ratio"`` (no factor can cover it).
    """
    q = check_quantile(target_overrun, "target_overrun")
    if score not in SCORES:
        raise InvalidArgumentError(f"score must be one of {SCORES}, got {score!r}")
    if len(costs) != len(needs):
        raise InvalidArgumentError(
            f"costs and needs differ in length ({len(costs)} and {len(needs)})"
        )
    n = np.asarray(sizes, dtype=np.float64).ravel()
    clean: dict[str, np.ndarray] = {}
    for atom, seconds in timings.items():
        clean[atom] = check_timings(n, seconds, f"timings of atom {atom!r}")[1]
    m = n.size
    each = q / 2 if score == "best" else q
    if m < min_calibration_items(each):
        raise InvalidArgumentError(
            f"target_overrun={q:g} with score {score!r} needs at least "
            f"{min_calibration_items(each)} held-out items, got {m}"
        )
    split = auto_split(m, q, seed) if score == "auto" else None
    factors = np.ones(len(costs))
    offsets = np.zeros(len(costs))
    medians = np.full(len(costs), np.nan)
    held_out = np.full(len(costs), np.nan)
    chosen = [""] * len(costs)
    for k, (curve, need) in enumerate(zip(costs, needs, strict=True)):
        active = {a: float(p) for a, p in need.items() if float(p) > 0}
        if not active:
            continue
        missing = sorted(set(active) - set(clean))
        if missing:
            raise InvalidArgumentError(
                f"candidate {k} needs atom {missing[0]!r}, which has no held-out timings "
                f"(timed: {sorted(clean)})"
            )
        realised = sum(p * clean[a] for a, p in active.items())
        predicted = np.asarray(curve(n), dtype=np.float64)
        positive = predicted > 0
        if positive.any():
            medians[k] = float(np.median(realised[positive] / predicted[positive]))
        if split is not None:
            factors[k], offsets[k], chosen[k], held_out[k] = _auto(realised, predicted, q,
                                                                    split)
            continue
        factor, excess = _bounds(realised, predicted, each, conformal=True)
        if score == "ratio" or (score == "auto" and factor is not None):
            if factor is None:
                i = int(np.flatnonzero((predicted <= 0) & (realised > 0))[0])
                raise InvalidArgumentError(
                    f"candidate {k}'s cost curve ({curve}) is 0 at size {n[i]:g}, where its "
                    f"atoms took {realised[i]:g} s: no factor covers it (use score='excess')"
                )
            factors[k], chosen[k] = factor, "ratio"
        elif score == "best" and factor is not None \
                and factor * predicted.sum() <= (predicted + excess).sum():
            factors[k], chosen[k] = factor, "ratio"
        else:
            offsets[k], chosen[k] = excess, "excess"
    return OverrunCalibration(q, factors, offsets, m, medians, score, held_out, tuple(chosen))


def _auto(realised: np.ndarray, predicted: np.ndarray, q: float,
          split: tuple[np.ndarray, np.ndarray]) -> tuple[float, float, str, float]:
    """``score="auto"`` for one candidate: (factor, offset, score, held-out overrun)."""
    sel, bound = split
    factor, excess = _bounds(realised[sel], predicted[sel], q, conformal=False)
    p = predicted[sel]
    use_ratio = factor is not None and factor * p.sum() <= (p + excess).sum()
    factor, excess = _bounds(realised[bound], predicted[bound], q, conformal=True)
    if use_ratio and factor is not None:
        k, d, name = factor, 0.0, "ratio"
    else:
        k, d, name = 1.0, excess, "excess"
    return k, d, name, float(np.mean(realised[sel] > k * p + d))
