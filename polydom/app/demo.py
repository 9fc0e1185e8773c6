"""The end-to-end demo behind ``polydom demo``: digits images, measured costs, a stored index.

Steps (each prints as it goes):

1. render scikit-learn's digits at several sides (the item size n is the side);
2. featurise the training digits, fit a stand-in model on every feature, and profile the
   image features in situ (:meth:`polydom.Featurizer.profile_in_situ`, as the PLAID demo
   does): training digits at every side, each feature timed once per digit, the (digit,
   feature) pairs in a shuffled order, each after a stand-in prediction; each curve (stored in
   seconds, a non-negative polynomial in n) is the 0.95 quantile of those in-situ times;
3. explore the feature-set lattice with a scikit-learn pipeline and store the index
   (:func:`polydom.build_index` with ``store=``);
4. reopen the stored index (:func:`polydom.open_index`) and print its ranges and skylines;
5. serve held-out digits at several sides and budgets, plain and any-time;
6. write PNG plots.

Every cost, budget and time it prints is in one unit, named next to it (``unit``, ms by
default: the ``--unit`` of the command line, :func:`polydom.curves.units.cost_unit_for`), and
the commands it suggests at the end pass the same ``--unit``: a number copied from its tables
means the same to ``polydom lookup``.

Training rows: every training digit appears once, rendered at one side drawn from
``train_sides`` (the features are size-normalised), so cross-validation folds never hold two
renderings of one digit.  Evaluation digits are never trained on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from polydom.curves.units import CostUnit, cost_unit_for
from polydom.errors import InvalidArgumentError

__all__ = ["DEMO_UNIT", "STORE_UNIT", "DemoConfig", "DemoResult", "QUICK", "FULL", "TINY",
           "run_demo", "ProgressLearner", "require_modules", "try_commands"]

#: The unit the demos' stores keep their measured costs in (what the timers measure).
STORE_UNIT = "s"
#: The unit the demos print costs, budgets and times in unless told otherwise.
DEMO_UNIT = "ms"


@dataclass(frozen=True)
class DemoConfig:
    """Sizes of one demo run (see :data:`QUICK`, :data:`FULL`)."""

    features: tuple[str, ...] | None  # None: all 12
    sides: tuple[int, ...]  # domain: [min, max]; evaluation sides
    train_sides: tuple[int, ...]  # one of these per training digit
    train_digits: int
    test_digits: int
    profile_items: int  # training digits (at any side) timed in situ
    quantile: float = 0.95  # what each cost curve promises of in-situ time
    degree: int = 2  # of the cost curves (the features' work grows with the n**2 pixels)
    alpha: float = 1.02
    cv: int = 3
    budgets: int = 5
    max_iter: int = 300
    cost_pruning: bool = False


QUICK = DemoConfig(
    features=("thumbnail", "zones", "projections", "hog", "spectrum", "harris"),
    sides=(8, 16, 32, 64), train_sides=(8, 16, 32, 64), train_digits=300, test_digits=100,
    profile_items=120, budgets=6, cost_pruning=True, alpha=1.02,
)
FULL = DemoConfig(
    features=None, sides=(8, 16, 32, 64, 128), train_sides=(8, 16, 32, 64, 128), train_digits=600,
    test_digits=200, profile_items=200, budgets=6, cost_pruning=True, alpha=1.02,
)
#: For tests: three cheap features, a few dozen digits.
TINY = DemoConfig(
    features=("thumbnail", "zones", "projections"), sides=(8, 16, 24), train_sides=(16,),
    train_digits=60, test_digits=12, profile_items=24, budgets=3, max_iter=100, alpha=1.1,
)


@dataclass
class DemoResult:
    """What :func:`run_demo` produced."""

    store: str
    index: Any
    profile: Any
    rows: list
    plots: list[Path]
    seconds: float
    budgets: list[float]


class ProgressLearner:
    """Wraps a learner and ticks a progress bar per :meth:`expand` (same description)."""

    def __init__(self, learner: Any, bar: Any) -> None:
        self.learner = learner
        self.bar = bar

    def expand(self, features: frozenset) -> Any:
        out = self.learner.expand(features)
        self.bar.update(1)
        self.bar.set_postfix_str(f"{'+'.join(sorted(features)) or '{}'} {out.accuracy:.3f}",
                                 refresh=False)
        return out

    def describe(self) -> str:
        return self.learner.describe()

    @property
    def learner_name(self) -> str:
        """The wrapped learner's name (:func:`lattice.learner_name`)."""
        from polydom.pipeline.learning import learner_name

        return learner_name(self.learner)

    def feature_columns(self) -> dict[str, list[int]]:
        return self.learner.feature_columns()


def require_modules(*modules: str) -> None:
    """Raise ``ImportError`` naming every one of ``modules`` that is not installed.

    Checked before a command starts, so that a missing optional dependency (matplotlib for
    the plots, say) fails in a second instead of after the whole pipeline.

    Runtime complexity: O(len(modules)) module lookups (nothing is imported).
    """
    from importlib.util import find_spec

    missing = [m for m in modules if find_spec(m) is None]
    if missing:
        raise ImportError(f"{', '.join(missing)} not installed", name=", ".join(missing))


def _bar(total: int | None, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=True, dynamic_ncols=True)


def _round_budget(b: float) -> float:
    return float(f"{b:.2g}")


def choose_budgets(index: Any, sides: Sequence[float], k: int) -> list[float]:
    """``k`` budgets spaced geometrically from the cheapest non-zero candidate cost at the
    smallest side to the dearest at the largest side (so every budget means something on
    this machine's measured costs)."""
    lo = min((float(c.cost(min(sides))) for c in index.candidates
              if float(c.cost(min(sides))) > 0), default=1e-5)
    hi = max(float(c.cost(max(sides))) for c in index.candidates)
    hi = max(hi, 2 * lo)
    return sorted({_round_budget(b) for b in np.geomspace(lo * 0.9, hi * 1.1, k)})


def run_demo(
    config: DemoConfig = QUICK,
    store: str | Path = "polydom_demo.db",
    plots: str | Path | None = "polydom_demo_plots",
    seed: int = 0,
    timer: str = "wall",
    out: Callable[[str], Any] = print,
    progress: bool = True,
    unit: str = DEMO_UNIT,
) -> DemoResult:
    """Run the demo pipeline (module docstring) and return its parts.

    ``store`` is a SQLite path or SQLAlchemy URL (a new build is added if it exists);
    ``plots`` a folder for PNGs (None: no plots); ``timer`` "wall" (perf_counter, the
    latency a caller sees) or "cpu" (thread_time: the computing thread's CPU time, blind
    to other processes and threads; :data:`polydom.serving.featurizer.CLOCKS`); ``unit``
    the unit of every printed cost, budget and time (s, ms, us, ns; the store keeps
    seconds).
    ``DemoResult.budgets`` are in seconds, the store's unit.

    Runtime complexity: dominated by featurising ``len(sides) * digits`` images and by the
    lattice's trainings (at most ``2**features`` sets, ``cv + 1`` fits each).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import polydom
    import polydom.serving.adherence
    from polydom.app.insitu_run import quiet_fits
    from polydom.app.tables import format_table
    from polydom.app.workloads.images import load_digits_workload
    from polydom.pipeline.learning import sklearn_learner
    from polydom.pipeline.stores import store_url as normalize_url
    from polydom.serving.featurizer import CLOCKS

    if timer not in CLOCKS:
        raise InvalidArgumentError(f"timer must be one of {sorted(CLOCKS)}, got {timer!r}")
    shown = cost_unit_for(STORE_UNIT, unit)
    require_modules("skimage", "tqdm", *(("matplotlib",) if plots is not None else ()))
    t0 = time.perf_counter()
    url = str(store)
    if "://" not in url:
        Path(url).parent.mkdir(parents=True, exist_ok=True)
    url = normalize_url(url)
    rng = np.random.default_rng(seed)
    sides = tuple(sorted(config.sides))

    # 1. data --------------------------------------------------------------------------
    n_all = config.train_digits + config.test_digits
    wl = load_digits_workload(sides=sides, digits=n_all, features=config.features, seed=seed)
    fz = wl.featurizer
    fz.timer = CLOCKS[timer]
    digits = np.unique(wl.digit)
    shuffled = rng.permutation(digits)
    train_ids = set(shuffled[: config.train_digits].tolist())
    test_ids = set(shuffled[config.train_digits:].tolist())
    train_side = {d: int(rng.choice(config.train_sides)) for d in sorted(train_ids)}
    train_pos = [i for i, (d, s) in enumerate(zip(wl.digit, wl.sizes, strict=True))
                 if d in train_ids and s == train_side[d]]
    test_pos = [i for i, d in enumerate(wl.digit) if d in test_ids]
    out(f"[1/6] digits: {len(digits)} images rendered at sides {list(sides)}; "
        f"{len(train_ids)} for training (each once, at a side in {list(config.train_sides)}), "
        f"{len(test_ids)} held out (at every side); features: {', '.join(fz.names)}")

    # 2. training rows, a stand-in model, costs in situ --------------------------------
    bar = _bar(len(train_pos), "[2/6] featurising training digits", progress)
    rows = []
    for i in train_pos:
        rows.append(fz.transform([wl.items[i]])[0])
        bar.update(1)
    bar.close()
    X = np.vstack(rows)
    y = wl.labels[train_pos]
    with quiet_fits():
        standin = make_pipeline(StandardScaler(), LogisticRegression(max_iter=config.max_iter))
        standin.fit(X, y)
    # training digits rendered at any side of the domain, not only the side they train at
    pool = [i for i, d in enumerate(wl.digit) if d in train_ids]
    prof_pos = rng.choice(pool, size=min(config.profile_items, len(pool)), replace=False)
    out(f"[2/6] profiling {len(prof_pos)} training digits in situ ...")
    prof = fz.profile_in_situ([wl.items[i] for i in prof_pos], quantile=config.quantile,
                              degree=config.degree,
                              predict=lambda row: standin.predict(row[None, :]), seed=seed)
    out(f"[2/6] cost curves (q{config.quantile:g} of one {timer}-clock timing per digit, "
        f"{len(prof_pos)} training digits at sides {sorted({int(n) for n in prof.sizes})}, "
        "(digit, feature) pairs shuffled, each after a model prediction; covered: the share of "
        f"timings at or below the curve; in {shown.name}, stored in {STORE_UNIT}):")
    out(cost_table(prof, sides, shown))
    for line in sharing_lines(fz, [wl.items[i] for i in prof_pos], prof, sides, shown):
        out(line)

    # 3. lattice + stored index ----------------------------------------------------------
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=config.max_iter))
    learner = sklearn_learner(est, X, y, features=fz.columns, cv=config.cv)
    lattice_size = 2 ** len(fz.names)
    bar = _bar(lattice_size, "[3/6] feature sets (trained + pruned)", progress)
    with quiet_fits():
        built = polydom.build_index(
            prof.curves, ProgressLearner(learner, bar), alpha=config.alpha,
            n_min=float(min(sides)), n_max=float(max(sides)), store=url,
            cost_pruning=config.cost_pruning, cost_unit=STORE_UNIT,
        )
    info = built.info
    # Sets the explorer pruned are never trained: the bar ends at the whole lattice.
    bar.set_postfix_str(f"{info['expansions']} trained + "
                        f"{lattice_size - info['expansions']} pruned", refresh=False)
    bar.update(lattice_size - bar.n)
    bar.close()
    out(f"[3/6] lattice: {info['expansions']} of {info['lattice_size']} feature sets trained "
        f"({info['trained']} new, {info['cache_hits']} from the store; the other "
        f"{info['lattice_size'] - info['expansions']} pruned), alpha={config.alpha}, "
        f"{info['candidates']} candidates, {info['ranges']} ranges; stored as build "
        f"{info['build_id']} in {url}")

    # 4. reopen --------------------------------------------------------------------------
    index = polydom.open_index(url)
    out(f"\n[4/6] reopened with polydom.open_index (build {index.info.get('build_id')}): "
        f"{len(index.table.ranges)} ranges of sizes, one skyline each (cheapest first; "
        f"costs in {shown.name} at both ends of the range):")
    out(skyline_table(index, shown))

    # 5. serve ---------------------------------------------------------------------------
    budgets = choose_budgets(index, sides, config.budgets)
    methods = (("poly-dom", False), ("any-time", True))
    jobs = [(m, a, s, b) for m, a in methods for s in sides for b in budgets]
    per_side = {s: [i for i in test_pos if wl.sizes[i] == s] for s in sides}
    bar = _bar(len(jobs) * len(test_ids), "[5/6] budgeted predictions", progress)
    results = []
    for method, anytime, side, budget in jobs:
        pos = per_side[side]
        found = polydom.serving.measure_adherence(index, [wl.items[i] for i in pos], wl.labels[pos],
                                          [budget], fz, anytime=anytime, method=method)
        results.extend(found)
        bar.update(len(pos))
    bar.close()
    out(f"\n[5/6] budgeted predictions on {len(test_ids)} held-out digits per side "
        f"(accuracy counts an unanswered digit as wrong; budgets and times in {shown.name}):")
    table_rows = []
    for side in sides:
        for budget in budgets:
            p = next(r for r in results if r.method == "poly-dom" and r.size == side
                     and r.budget == budget)
            a = next(r for r in results if r.method == "any-time" and r.size == side
                     and r.budget == budget)
            table_rows.append([side, shown.shown(budget), p.accuracy, p.over_budget,
                               shown.shown(p.mean_seconds), a.accuracy, a.over_budget,
                               shown.shown(a.mean_seconds)])
    u = shown.name
    out(format_table(["side", f"budget ({u})", "acc", "over", f"mean ({u})", "any-time acc",
                      "any-time over", f"any-time mean ({u})"],
                     [[_fmt(v) for v in r] for r in table_rows]))

    # 6. plots ---------------------------------------------------------------------------
    written: list[Path] = []
    if plots is not None:
        from polydom.app.plots import plot_accuracy_vs_budget, plot_cost_curves, plot_skylines

        folder = Path(plots)
        folder.mkdir(parents=True, exist_ok=True)
        points = {name: (prof.sizes, prof.timings[name]) for name in prof.curves}
        written = [
            plot_cost_curves(prof.curves, float(min(sides)), float(max(sides)),
                             folder / "cost_curves.png", points, scale=shown.scale,
                             unit=f"feature time ({u})",
                             curve_label=f"q{config.quantile:g} in situ"),
            plot_accuracy_vs_budget(results, folder / "accuracy_vs_budget.png",
                                    scale=shown.scale, unit=u),
            plot_skylines(index, folder / "skylines.png", scale=shown.scale,
                          unit=f"cost at n ({u})"),
        ]
        out(f"\n[6/6] plots: {', '.join(str(p) for p in written)}")
    seconds = time.perf_counter() - t0
    middle = budgets[len(budgets) // 2]
    out(f"done in {seconds:.1f} s.  {try_commands(url, sides[-1], middle, shown)}")
    return DemoResult(url, index, prof, results, written, seconds, budgets)


def curve_text(curve: Any, digits: int = 3) -> str:
    """A cost polynomial with ``digits`` significant digits: ``1.2e-05 + 3.4e-09*n**2``."""
    terms = []
    for k, a in enumerate(np.asarray(curve.coefficients, dtype=float)):
        if a == 0:
            continue
        c = f"{a:.{digits}g}"
        terms.append(c if k == 0 else f"{c}*n" if k == 1 else f"{c}*n**{k}")
    return " + ".join(terms) or "0"


def try_commands(url: str, size: float, budget: float, unit: CostUnit) -> str:
    """The commands a demo suggests at its end: ``inspect`` and a ``lookup`` at ``size`` and
    ``budget`` (in the store's unit), both with ``--unit`` when the demo prints another unit
    than the store keeps, so that they print, and read, the numbers of the demo's tables.

    >>> text = try_commands("sqlite:///d.db", 64, 0.00038, cost_unit_for("s", "ms"))
    >>> text.split("   |   ")[1].split("   ")[0]
    'polydom lookup sqlite:///d.db --size 64 --budget 0.38 --unit ms'
    """
    flag = "" if unit.scale == 1.0 else f" --unit {unit.name}"
    text = (f"Try: polydom inspect {url}{flag}   |   polydom lookup {url} --size {size:g} "
            f"--budget {unit.shown(budget):.6g}{flag}")
    if flag:
        text += (f"   (the store keeps {unit.store}; --unit {unit.name} prints and reads "
                 f"{unit.name}, as above)")
    return text


def sharing_lines(fz: Any, items: Sequence[Any], prof: Any, sides: Sequence[float],
                  unit: CostUnit) -> list[str]:
    """What the featurizer's shared steps save (issue 37): per step, its time measured alone
    on ``items`` (median per side, ``fz``'s clock), and what a served set of all its users
    pays less than the sum of their in-situ curves (each of which includes the step, since
    the protocol times every feature as a set's first).  Empty without shared steps.

    Runtime complexity: O(steps * items) step calls.
    """
    out = []
    uses = fz.uses
    for step in fz.steps:
        users = [f for f, steps in uses.items() if step in steps]
        routine, timer = fz.step_routine(step), fz.timer
        seconds: dict[float, list[float]] = {}
        for item in items:
            start = timer()
            routine(item)
            seconds.setdefault(float(fz.size(item)), []).append(timer() - start)
        side = max(s for s in sides if s in seconds) if any(s in seconds for s in sides) \
            else max(seconds)
        alone = float(np.median(seconds[side]))
        total = sum(float(prof.curves[f](side)) for f in users)
        saved = (len(users) - 1) * alone
        out.append(
            f"[2/6] shared step {step!r} (used by {', '.join(users)}): "
            f"{unit.shown(alone):.3g} {unit.name} at side {side:g} measured alone; a served "
            f"set with all {len(users)} computes it once, {unit.shown(saved):.3g} {unit.name} "
            f"({100 * saved / total:.1f} %) less than the sum of their curves above, which "
            "each include it (the served-set calibration, polydom.curves.served_fit, prices "
            "it once)")
    return out


def cost_table(prof: Any, sides: Sequence[float], unit: CostUnit) -> str:
    """Per feature of an :class:`polydom.curves.InSituProfile`: the share of its timings the
    curve covers, the curve's cost at each side, and the curve, in ``unit`` (the profile is
    in seconds)."""
    from polydom.app.tables import format_table

    return format_table(
        ["feature", "covered", *[f"cost @ {s:g} ({unit.name})" for s in sides],
         f"fitted cost ({unit.name})"],
        [[name, round(prof.coverage[name], 3),
          *[float(f"{unit.shown(float(curve(s))):.3g}") for s in sides],
          curve_text(curve * unit.scale)]
         for name, curve in prof.curves.items()],
    )


def skyline_table(index: Any, unit: CostUnit, max_ranges: int = 8) -> str:
    """Every range's skyline (first ``max_ranges`` ranges) as a text table, costs in
    ``unit``."""
    from polydom.app.tables import format_table

    rows = []
    for r, ((lo, hi), sky) in enumerate(zip(index.table.ranges, index.table.skylines,
                                            strict=True)):
        if r >= max_ranges:
            break
        for rank, c in enumerate(sky):
            rows.append([r, lo, hi, rank, "+".join(sorted(map(str, c.features))) or "{}",
                         round(c.accuracy, 4), float(f"{unit.shown(float(c.cost(lo))):.3g}"),
                         float(f"{unit.shown(float(c.cost(hi))):.3g}")])
    text = format_table(["range", "n_lo", "n_hi", "rank", "features", "accuracy",
                         f"cost(n_lo) ({unit.name})", f"cost(n_hi) ({unit.name})"], rows)
    if len(index.table.ranges) > max_ranges:
        text += f"\n... {len(index.table.ranges) - max_ranges} more ranges"
    return text


def _fmt(v: Any) -> Any:
    if isinstance(v, float) and math.isfinite(v):
        return float(f"{v:.4g}")
    return v


def config_for(quick: bool, **overrides: Any) -> DemoConfig:
    """:data:`QUICK` or :data:`FULL` with some fields replaced."""
    return replace(QUICK if quick else FULL, **overrides)
