"""``polydom demo --workload plaid``: time series of unequal length, costs measured in situ.

Steps (each prints as it goes):

1. load PLAID from sktime's wheel (item size = series length), split into training,
   calibration and test series;
2. featurise the training series and profile every atomic feature in situ
   (:meth:`polydom.Featurizer.profile_in_situ`): curves at the 0.95 quantile of in-situ time;
3. explore the lattice over the catch22 families and the own features, store the index;
4. time held-out calibration series in situ, calibrate to ``target_overrun=0.05``
   (:meth:`polydom.Index.calibrated`) and publish the guarded index as the current build;
5. reopen the store and serve held-out series at several budgets, in situ (uncalibrated)
   next to guarded: over-budget rate and accuracy;
6. plot the in-situ curves over the timings they were fitted to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from polydom.errors import InvalidArgumentError

__all__ = ["run_plaid_demo"]

#: Lattice features of the quick run (all ten in the full run).
QUICK_FEATURES = ("c22_distribution", "c22_correlation", "c22_spectral", "shape", "spectrum",
                  "autocorr", "shapelets")


def run_plaid_demo(
    quick: bool = True,
    store: str | Path = "polydom_plaid.db",
    plots: str | Path | None = "polydom_plaid_plots",
    seed: int = 0,
    timer: str = "wall",
    alpha: float | None = None,
    tiny: bool = False,
    out: Callable[[str], Any] = print,
    unit: str = "ms",
) -> dict[str, Any]:
    """Run the PLAID demo (module docstring); returns the guarded index and the rows served.

    ``unit`` is the unit of every printed cost, budget and time (s, ms, us, ns; the store
    keeps seconds), as in :func:`polydom.app.demo.run_demo`; the returned budgets are in
    seconds.

    Runtime complexity: featurising the training series twice and the calibration series
    once, the lattice's trainings, and serving ``test series * budgets * 2`` items.
    """
    import polydom
    import polydom.pipeline.recalibrate
    from polydom.app.demo import STORE_UNIT, require_modules, try_commands
    from polydom.app.insitu_run import (
        build_in_situ,
        choose_budgets,
        serve_side_by_side,
        split_items,
    )
    from polydom.app.tables import format_table
    from polydom.app.workloads.timeseries import load_plaid_workload
    from polydom.curves.units import cost_unit_for
    from polydom.pipeline.stores import store_url as normalize_url
    from polydom.serving.featurizer import CLOCKS

    if timer not in CLOCKS:
        raise InvalidArgumentError(f"timer must be one of {sorted(CLOCKS)}, got {timer!r}")
    shown = cost_unit_for(STORE_UNIT, unit)
    u = shown.name
    require_modules("sktime", "pycatch22", *(("matplotlib",) if plots is not None else ()))
    t0 = time.perf_counter()
    url = str(store)
    if "://" not in url:
        Path(url).parent.mkdir(parents=True, exist_ok=True)
    url = normalize_url(url)
    features = (("c22_spectral", "shape", "autocorr") if tiny else
                QUICK_FEATURES if quick else None)
    series = 100 if tiny else 500 if quick else None
    wl = load_plaid_workload(series=series, features=features, seed=seed)
    fz = wl.featurizer
    fz.timer = CLOCKS[timer]
    # the guard needs 39 calibration series at q = 0.05 (both scores at q/2)
    train, cal, test = split_items(len(wl.items), *((0.35, 0.45) if tiny else (0.5, 0.25)),
                                   seed=seed)
    n_min, n_max = float(wl.sizes.min()), float(wl.sizes.max())
    out(f"[1/6] PLAID: {len(wl.items)} series of lengths {n_min:g}-{n_max:g} (the item size), "
        f"{len(np.unique(wl.labels))} appliance classes; {len(train)} train, {len(cal)} "
        f"calibrate, {len(test)} test; {len(fz.names)} atomic features in "
        f"{len(features or []) or 10} lattice features")
    built = build_in_situ(
        wl.items, wl.labels, fz, wl.cost_model, train, cal, n_min, n_max,
        target_overrun=0.05, profile_items=30 if tiny else 150,
        alpha=alpha or (1.1 if not tiny else 1.0), cv=2 if tiny else 3,
        max_iter=100 if tiny else 200, store=url, seed=seed,
        progress=lambda text: out(f"      {text}"))
    sizes = [s for s in (100, 300, 700, 1344) if n_min <= s <= n_max] or [n_min, n_max]
    rows = [[name, round(built.coverage[name], 3),
             *[float(f"{shown.shown(float(curve(s))):.3g}") for s in sizes]]
            for name, curve in built.curves.items()]
    out(f"[2/6] in-situ cost curves (q0.95 of one {timer}-clock timing per series, (series, "
        f"feature) pairs shuffled, each after a model prediction; in {u}, stored in "
        f"{STORE_UNIT}):")
    out(format_table(["atom", "covered", *[f"cost @ {s:g} ({u})" for s in sizes]], rows))
    info = built.index.info
    out(f"[3/6] lattice: {info['expansions']} feature sets trained, {info['candidates']} "
        f"candidates, {info['ranges']} ranges; stored as build {info['build_id']} in {url}")
    guarded = built.guarded
    polydom.pipeline.recalibrate.publish_index(url, guarded, {"calibrated_from": info["build_id"],
                                         "target_overrun": 0.05})
    factors = guarded.overrun_factors()
    out(f"[4/6] guard (target_overrun=0.05, split conformal on "
        f"{guarded.info['overrun']['items']} series timed in situ: {len(cal)} held out, the "
        "rest unprofiled training series): "
        f"factors median {np.median(factors):.2f}, range [{factors.min():.2f}, "
        f"{factors.max():.2f}]; published as build {guarded.info['build_id']}")
    reopened = polydom.open_index(url)
    budgets = choose_budgets(reopened, wl.sizes[test], 3 if tiny else 5)
    served = serve_side_by_side({"in situ": built.index, "guard": reopened},
                                [wl.items[i] for i in test], wl.labels[test], budgets, fz,
                                seed=seed)
    table = []
    for b in budgets:
        a = next(r for r in served if r.method == "in situ" and r.budget == b)
        g = next(r for r in served if r.method == "guard" and r.budget == b)
        table.append([float(f"{shown.shown(b):.3g}"), a.over, round(a.accuracy, 3), g.over,
                      round(g.accuracy, 3), float(f"{shown.shown(g.mean_seconds):.3g}")])
    out(f"[5/6] served {len(test)} held-out series per budget from the reopened store "
        "(over: share over budget):")
    out(format_table([f"budget ({u})", "in situ over", "in situ acc", "guard over",
                      "guard acc", f"guard mean ({u})"], table))
    written: list[Path] = []
    if plots is not None:
        from polydom.app.plots import plot_cost_curves

        folder = Path(plots)
        folder.mkdir(parents=True, exist_ok=True)
        prof_sizes = built.calibration[0]
        points = {name: (prof_sizes, built.calibration[1][name]) for name in built.curves}
        written = [plot_cost_curves(built.curves, n_min, n_max, folder / "cost_curves.png",
                                    points, scale=shown.scale, unit=f"feature time ({u})",
                                    curve_label="q0.95 in situ")]
        out(f"[6/6] plots: {', '.join(str(p) for p in written)}")
    middle = budgets[len(budgets) // 2]
    out(f"done in {time.perf_counter() - t0:.1f} s.  "
        f"{try_commands(url, float(np.median(wl.sizes[test])), middle, shown)}")
    return {"store": url, "index": reopened, "rows": served, "budgets": budgets,
            "plots": written}
