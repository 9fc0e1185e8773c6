"""Costs fitted on what was served: the start, the atoms' and the shared steps' curves from
served-set timings (and from the in-situ protocol where nothing was served yet), and the
guard's conformal bound per set or per family (issue 37 item 3).

*What each timing says.*  A served set's atoms ran in a recorded order
(:class:`polydom.index.served_set.ServedSet`): the first one paid the set's start, its own
curve and the shared steps it uses; each later one its own curve and the steps no earlier
atom had paid.  An in-situ timing (:meth:`polydom.serving.Featurizer.featurize_in_situ`)
is an atom computed alone after a prediction, as a set's first atom: start + atom + its
steps; it enters the fit only for an atom no served set ran (where nothing was served yet:
the protocol's conditions are not serving's, and where both exist the served ones say what
serving pays).  Every timing is thus a sum of unit curves (:meth:`CostModel.units_of`) at its size,
and :func:`fit_served_costs` fits all units' curves at once.

*The fit.*  Median regression (the pinball loss at ``quantile``, 0.5 by default) of each
timing on the polynomial basis of the units it paid, with non-negative coefficients (every
curve non-negative and non-decreasing on ``n >= 0``, so set costs stay monotone and the
index's proofs hold), each timing weighted by ``1 / predicted`` (relative error: a 10 us
feature and a 10 ms one weigh alike; three passes, each weighted by the previous pass's
predictions, since a weight ``1 / t`` would pull the fit below the median), a linear program
solved by HiGHS.  The median is robust to the
preempted timings of a loaded machine (a few 10 ms outliers do not move it).  Units no
timing paid keep their curve.

*The guard.*  :func:`served_bounds`: per set, the split-conformal bound of
``total / predicted`` over its own served totals when it has at least
:func:`polydom.curves.calibration.min_calibration_items` of them (score chosen as
:func:`polydom.curves.calibration.calibrate_overrun` does); per family (the pooled ratios
of every served set) otherwise.

Assumed (docs/in_situ.md, "Calibration on what was served"): served totals exchangeable
with the next ones of the same set (per set) or of any set (per family: the ratio of what a
set pays to its prediction does not depend on the set); which set served an item depends on
its size and budget only, never on its timing; the in-situ timings measured the same
machine as the served ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.calibration import (
    calibrate_overrun,
    conformal_factor,
    min_calibration_items,
)
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import START, CostModel
from polydom.curves.quantile_fit import check_quantile
from polydom.errors import FitError, InvalidArgumentError

__all__ = ["fit_served_costs", "insitu_totals", "paid_units", "served_bounds"]


def insitu_totals(model: CostModel, atoms: Iterable[str], sizes: Sequence[float],
                  timings: Mapping[str, Sequence[float]]) -> np.ndarray:
    """What a set of ``atoms`` would have paid on each in-situ item, from the protocol's
    per-atom timings (each atom alone, as a set's first one: start + atom + its steps): their
    sum less what the sum pays twice under ``model`` (the start ``k - 1`` times, a step used
    by ``j`` of them ``j - 1`` times), at least the dearest atom's own timing.

    Runtime complexity: O(items * atoms * degree).

    >>> m = CostModel({"a": "1", "b": "1"}, start="2")
    >>> insitu_totals(m, ["a", "b"], [1.0], {"a": [3.0], "b": [3.5]}).tolist()
    [4.5]
    """
    atoms = sorted(atoms)
    n = np.asarray(sizes, dtype=float)
    t = np.array([np.asarray(timings[a], dtype=float) for a in atoms])
    alone = sum(model.cost([a])(n) for a in atoms)
    twice = np.asarray(alone - model.cost(atoms)(n), dtype=float)
    return np.maximum(t.sum(axis=0) - twice, t.max(axis=0))


def paid_units(model: CostModel, atoms: Sequence[str], first: bool = True) -> list[frozenset]:
    """The units each atom of a served set paid, in the order they ran: its own curve, the
    steps it uses that no earlier atom paid, and (the first atom, when ``first``) the start.

    Runtime complexity: O(atoms * steps).

    >>> m = CostModel({"hog": "n", "harris": "n"}, steps={"g": "1"},
    ...               uses={"hog": ["g"], "harris": ["g"]}, start="1")
    >>> [sorted(u) for u in paid_units(m, ["harris", "hog"])]
    [['<start>', 'g', 'harris'], ['hog']]
    """
    uses = model.uses
    paid: set[str] = set()
    out = []
    for j, atom in enumerate(atoms):
        units = {atom} | (set(uses.get(atom, ())) - paid)
        paid |= units
        if j == 0 and first and model.start is not None:
            units.add(START)
        out.append(frozenset(units))
    return out


def _rows(model: CostModel, served: Iterable[Any],
          insitu: tuple[Sequence[float], Mapping[str, Sequence[float]]] | None
          ) -> tuple[list[frozenset], list[float], list[float]]:
    units, sizes, times = [], [], []
    atoms = model.atoms
    for rec in served:
        if any(a not in atoms for a in rec.atoms):
            raise InvalidArgumentError(
                f"a served set names atoms {sorted(set(rec.atoms) - set(atoms))[:5]} the cost "
                f"model does not have")
        for paid, t in zip(paid_units(model, rec.atoms), rec.seconds, strict=True):
            units.append(paid)
            sizes.append(float(rec.size))
            times.append(float(t))
    if insitu is not None:  # only where nothing was served yet: an atom no served set ran
        served_atoms = {a for paid in units for a in paid if a in atoms}
        isizes, timings = insitu
        isizes = np.asarray(isizes, dtype=float)
        for atom, ts in timings.items():
            if atom not in atoms or atom in served_atoms:
                continue
            (paid,) = paid_units(model, [atom])
            for n, t in zip(isizes, np.asarray(ts, dtype=float), strict=True):
                if np.isfinite(t) and t > 0:
                    units.append(paid)
                    sizes.append(float(n))
                    times.append(float(t))
    return units, sizes, times


def fit_served_costs(
    model: CostModel,
    served: Iterable[Any],
    insitu: tuple[Sequence[float], Mapping[str, Sequence[float]]] | None = None,
    degree: int = 2,
    quantile: float = 0.5,
    max_rows: int = 20_000,
    seed: int = 0,
) -> CostModel:
    """The model with its start, atoms' and steps' curves fitted on served-set timings (and
    on in-situ ones, ``(sizes, {atom: seconds per item})``, for the atoms no served set
    ran): module docstring.  A model
    without a start gains one (what a set's first atom pays beyond its own curve).

    ``max_rows`` timings at most enter the fit (a seeded sample beyond).  The curves are
    ``quantile``-curves of what serving pays, in seconds.

    Runtime complexity: one linear program of ``R`` rows and ``U * (degree + 1) + 2R``
    variables (HiGHS), R = min(timings, max_rows), U units.

    Raises
    ------
    ValueError
        On a bad ``degree`` or ``quantile``, no timings, or a served atom the model lacks.
    polydom.errors.FitError
        When the solver fails.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    if isinstance(degree, bool) or not isinstance(degree, int) or not 0 <= degree <= 4:
        raise InvalidArgumentError(f"degree must be an integer in [0, 4], got {degree!r}")
    q = check_quantile(quantile)
    if model.start is None:
        model = model.with_curves(start=CostCurve([0.0]))
    units, sizes, times = _rows(model, served, insitu)
    if not times:
        raise InvalidArgumentError("no served or in-situ timings to fit the costs on")
    rows = np.arange(len(times))
    if rows.size > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(rows.size, max_rows, replace=False))
    seen = sorted({u for k in rows for u in units[k]}, key=list(model.units).index)
    col = {u: j for j, u in enumerate(seen)}
    n = np.array([sizes[k] for k in rows])
    t = np.array([times[k] for k in rows])
    scale = max(float(n.max()), 1.0)
    basis = (n[:, None] / scale) ** np.arange(degree + 1)[None, :]
    r, p = rows.size, len(seen) * (degree + 1)
    ii, jj, vv = [], [], []
    for i, k in enumerate(rows):
        for u in units[k]:
            base = col[u] * (degree + 1)
            ii.extend([i] * (degree + 1))
            jj.extend(range(base, base + degree + 1))
            vv.extend(basis[i].tolist())
    X = sparse.csr_matrix((vv, (ii, jj)), shape=(r, p))
    eye = sparse.identity(r, format="csr")
    c = np.concatenate([np.zeros(p), np.full(r, q), np.full(r, 1.0 - q)])
    # relative errors: each row weighted by 1 / its predicted time, from the previous pass
    # (the first by 1 / its median time); a weight that depended on the timing itself
    # (1 / t) would pull the fit below the median
    w = np.full(r, 1.0 / float(np.median(t)))
    theta = np.zeros(p)
    for _ in range(3):
        Wx = sparse.diags(w) @ X
        A = sparse.hstack([Wx, eye, -eye], format="csr")  # w (X theta) + up - um = w t
        res = linprog(c, A_eq=A, b_eq=t * w, bounds=(0, None), method="highs")
        if res.status != 0:
            raise FitError(f"the served-cost fit failed: {res.message}")
        theta = res.x[:p]
        pred = X @ theta
        w = 1.0 / np.maximum(pred, 1e-3 * float(np.median(t)))
    theta = theta.reshape(len(seen), degree + 1) / scale ** np.arange(degree + 1)
    curves = {u: CostCurve(theta[col[u]]) for u in seen}
    return model.with_curves(
        atoms={u: c for u, c in curves.items() if u in model.atoms},
        steps={u: c for u, c in curves.items() if u in model.steps},
        start=curves.get(START))


def served_bounds(
    predicted: Sequence[CostCurve],
    served: Mapping[int, tuple[np.ndarray, np.ndarray]],
    target_overrun: float = 0.05,
    seed: int = 0,
    insitu: Mapping[int, tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The guard on served totals: each set's curve ``predicted[k]`` made to hold ``1 - q``
    of its served totals.

    ``served[k] = (sizes, totals)`` of set ``k``.  A set with at least
    :func:`min_calibration_items` totals gets its own conformal bound (score "auto", as
    :func:`calibrate_overrun`); a set with fewer, but with at least that many in-situ
    totals ``insitu[k] = (sizes, totals)`` (what the in-situ protocol's timings say the set
    would have paid, :func:`insitu_totals`), its conformal bound on those; every other set
    the family's: the conformal bound of the pooled ratios ``total / predicted`` of every
    served set, as a factor.  With no served set at all there is no family bound and such
    a set is left as it is.

    Runtime complexity: O(total records + K * degree).

    Returns
    -------
    (ndarray, ndarray, list of str)
        Per set its factor ``k`` and offset ``d`` (the guarded curve is ``k * predicted +
        d``) and how it was bound: ``"set"``, ``"in situ"``, ``"family"`` or ``"none"``
        (1 and 0).
    """
    q = check_quantile(target_overrun, "target_overrun")
    least = min_calibration_items(q)
    factors, offsets = np.ones(len(predicted)), np.zeros(len(predicted))
    how = ["none"] * len(predicted)
    pooled = []
    for k, (sizes, totals) in served.items():
        curve = predicted[k]
        base = np.array([float(curve(float(s))) for s in sizes])
        ok = base > 0
        pooled.extend((np.asarray(totals)[ok] / base[ok]).tolist())
        if len(totals) >= least:
            cal = calibrate_overrun([curve], [{"set": 1.0}], np.asarray(sizes),
                                    {"set": np.asarray(totals)}, q, seed=seed)
            factors[k], offsets[k] = float(cal.factors[0]), float(cal.offsets[0])
            how[k] = "set"
    for k, (sizes, totals) in (insitu or {}).items():
        if how[k] == "none" and len(totals) >= least:
            cal = calibrate_overrun([predicted[k]], [{"set": 1.0}], np.asarray(sizes),
                                    {"set": np.asarray(totals)}, q, seed=seed)
            factors[k], offsets[k] = float(cal.factors[0]), float(cal.offsets[0])
            how[k] = "in situ"
    if len(pooled) >= least:
        factor = conformal_factor(np.asarray(pooled), q)
        for k in range(len(predicted)):
            if how[k] == "none":
                factors[k] = factor
                how[k] = "family"
    return factors, offsets, how
