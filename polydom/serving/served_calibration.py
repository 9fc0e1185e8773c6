"""An index calibrated on what was served (issue 37 item 3): its cost model fitted on
served-set timings (:func:`polydom.curves.served_fit.fit_served_costs`), every candidate's
curve derived from it, and the guard's conformal bound per set or per family
(:func:`polydom.curves.served_fit.served_bounds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.cost_model import CostModel
from polydom.curves.served_fit import fit_served_costs, insitu_totals, served_bounds
from polydom.curves.units import SECONDS, unit_name
from polydom.index.built import Index

__all__ = ["calibrate_on_served"]


def calibrate_on_served(
    index: Index,
    served: Iterable[Any],
    target_overrun: float = 0.05,
    insitu: tuple[Sequence[float], Mapping[str, Sequence[float]]] | None = None,
    degree: int = 2,
    fit: bool = True,
    seed: int = 0,
    model: CostModel | None = None,
) -> Index:
    """``index`` with its costs fitted and guarded on served sets.

    ``served`` are :class:`polydom.index.served_set.ServedSet` records (a buffer's
    ``drain_sets()``, a store's ``served_sets()``), ``insitu`` optional in-situ timings
    ``(sizes, {atom: seconds})`` for what nothing served yet.  With ``fit`` the cost model's
    start, atoms' and steps' curves are fitted on them (medians of what serving pays);
    a seeded half of the records and of the in-situ items fits it and the other half
    scores (a timing that fits a curve is never a score; with ``model`` given, every record
    and in-situ item scores, so none of them may have fitted it); every candidate's
    predicted curve is then ``expected_cost(needs)`` under that model,
    and the guard binds it at ``target_overrun`` per set (its own served totals, when it
    has enough) or per family (every served set's ratios, pooled).  The factors and offsets
    go to ``info["overrun"]`` (what :meth:`polydom.Index.with_atom_costs` keeps when it
    recalibrates), with ``info["overrun"]["served"]``: per candidate ``"set"``,
    ``"in situ"`` (too few served totals: bound on what ``insitu``'s timings say it would
    have paid, :func:`polydom.curves.served_fit.insitu_totals`), ``"family"`` or
    ``"none"``.  Seconds are converted to the index's cost unit.  ``model``:
    a cost model already fitted on these records (in the index's unit; nothing is fitted),
    so that several targets share one fit.

    Runtime complexity: the fit (one linear program) plus O(records + K * d) and a sweep.
    """
    unit = unit_name(index.info)
    per_second = 1.0 / SECONDS.get(unit.strip().lower(), 1.0)
    records = list(served)
    scaled = [r._replace(seconds=tuple(t * per_second for t in r.seconds),
                         total=r.total * per_second) for r in records]
    ins = None if insitu is None else (
        np.asarray(insitu[0], dtype=float),
        {a: np.asarray(t, dtype=float) * per_second for a, t in insitu[1].items()})
    if model is not None:
        fit = False
    else:
        model = index.cost_model
    if fit:  # a timing that fits a curve is never a score: a seeded half of each for the fit
        rng = np.random.default_rng(seed)
        part = rng.random(len(scaled)) < 0.5
        fit_ins = score_ins = None
        if ins is not None:
            cut = rng.random(ins[0].size) < 0.5
            fit_ins = (ins[0][cut], {a: t[cut] for a, t in ins[1].items()})
            score_ins = (ins[0][~cut], {a: t[~cut] for a, t in ins[1].items()})
        model = fit_served_costs(model, [r for r, p in zip(scaled, part, strict=True) if p],
                                 fit_ins, degree=degree, seed=seed)
        scaled = [r for r, p in zip(scaled, part, strict=True) if not p]
        ins = score_ins
    cands = index.candidates
    predicted = [model.expected_cost(c.needs) for c in cands]
    position = {c.key: k for k, c in enumerate(cands)}
    groups: dict[int, tuple[list[float], list[float]]] = {}
    for r in scaled:
        key = r.candidate if not isinstance(r.candidate, list) else tuple(r.candidate)
        k = position.get(key)
        if k is None:
            continue
        sizes, totals = groups.setdefault(k, ([], []))
        sizes.append(r.size)
        totals.append(r.total)
    fallback = {}
    if ins is not None:  # sets served too little: what the in-situ timings say they pay
        for k, c in enumerate(cands):
            if c.needs and all(p >= 1.0 for p in c.needs.values()) \
                    and all(a in ins[1] for a in c.needs):
                fallback[k] = (np.asarray(ins[0], dtype=float),
                               insitu_totals(model, c.needs, ins[0], ins[1]))
    factors, offsets, how = served_bounds(
        predicted, {k: (np.array(s), np.array(t)) for k, (s, t) in groups.items()},
        target_overrun, seed=seed, insitu=fallback)
    info = {key: value for key, value in index.info.items() if key != "overrun"}
    info["overrun"] = {"target": float(target_overrun), "factors": factors.tolist(),
                       "offsets": offsets.tolist(), "items": len(scaled), "served": how}
    curves = []
    for p, k, d in zip(predicted, factors, offsets, strict=True):
        c = p * float(k)
        coef = c.coefficients.copy()
        coef[0] += d
        curves.append(type(c)(coef))
    return Index(index.table, model, info=info).with_candidate_costs(curves)
