"""One in-situ pipeline for a workload: curves timed as serving pays, a guard, served adherence.

Used by ``polydom demo --workload plaid`` and ``benchmarks/adherence_bench.py``.  Steps:

1. split the items into training, calibration and test items (seeded);
2. featurise the training items in situ (:meth:`polydom.Featurizer.featurize_in_situ`:
   the learner's rows, and a timing of every feature on every training item at no extra
   cost), each (item, feature) pair after a prediction of a first stand-in model (fitted
   on :data:`BOOTSTRAP_ITEMS` training items featurised plainly), as serving runs a
   prediction before an item's features; then fit the stand-in on every training row
   (one fit): the model whose predictions the calibration pass interleaves;
3. profile: fit each atom's curve (:class:`polydom.curves.InSituProfile`) to the in-situ
   timings of a subset of the training items (no second pass): each curve promises the
   ``1 - target_overrun`` quantile of in-situ time;
4. build the index on those curves (:func:`polydom.build_index`, ``keep_trained=True``:
   every trained set stays a candidate, so the calibration chooses among all of them);
5. time the calibration items in situ the same way and calibrate the index to the target
   overrun rate (:meth:`polydom.Index.calibrated`) on the evidence: the calibration
   items' timings and those of step 2's training items that were not profiled.  The
   exchangeability this assumes: training and calibration items are drawn alike from the
   workload, the curves were fitted on other items (the profiled subset), and the machine
   was in the same state in both passes (the training pass runs before the lattice's
   trainings, the calibration pass after them: minutes apart on a large build).
6. serve test items with :func:`polydom.serving.predict_item` and count overruns.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.quantile_fit import InSituProfile
from polydom.index.built import Index
from polydom.serving.featurizer import Featurizer
from polydom.serving.item_serving import predict_item

__all__ = ["BOOTSTRAP_ITEMS", "InSituBuild", "ServedRow", "build_in_situ", "choose_budgets",
           "quiet_fits", "serve_side_by_side", "size_agnostic", "split_items"]


#: Training items featurised plainly to fit the first stand-in model (step 2).
BOOTSTRAP_ITEMS = 50


def split_items(count: int, train: float, calibrate: float, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of training, calibration and test items (a seeded permutation).

    Runtime complexity: O(count).
    """
    order = np.random.default_rng(seed).permutation(count)
    a = int(round(train * count))
    b = a + int(round(calibrate * count))
    return np.sort(order[:a]), np.sort(order[a:b]), np.sort(order[b:])


@contextmanager
def quiet_fits() -> Iterator[None]:
    """Silence the learners' convergence and numeric warnings (small fits on purpose)."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        for category in (ConvergenceWarning, UserWarning, RuntimeWarning):
            warnings.simplefilter("ignore", category=category)
        yield


@dataclass
class InSituBuild:
    """What :func:`build_in_situ` made (its module docstring's steps 1-5)."""

    index: Index
    guarded: Index | None
    curves: dict[str, CostCurve]
    coverage: dict[str, float]
    standin: Any
    rows: np.ndarray
    calibration: tuple[np.ndarray, dict[str, np.ndarray]] | None
    seconds: dict[str, float]
    evidence: tuple[np.ndarray, dict[str, np.ndarray]] | None = None


def build_in_situ(
    items: Sequence[Any],
    labels: np.ndarray,
    featurizer: Featurizer,
    skeleton: CostModel,
    train: np.ndarray,
    calibrate: np.ndarray,
    n_min: float,
    n_max: float,
    target_overrun: float = 0.05,
    profile_items: int = 200,
    alpha: float = 1.05,
    cv: int = 3,
    max_iter: int = 300,
    degree: int = 2,
    store: str | None = None,
    cache: dict | None = None,
    seed: int = 0,
    progress: Callable[[str], Any] = lambda text: None,
    train_evidence: bool = True,
    levels: Sequence[float] = (),
) -> InSituBuild:
    """Steps 1-5 of the module docstring; ``calibrate`` empty skips the guard.

    ``train_evidence=False`` calibrates on the calibration items only; ``levels`` are
    further overrun rates the guarded index holds (:meth:`polydom.Index.at_overrun`).

    ``skeleton`` is the cost model's bundles and columns (its curves are replaced).
    ``cache`` (a dict) shares expansions with other builds over the same rows.

    Runtime complexity: featurising the training items once in situ (and
    :data:`BOOTSTRAP_ITEMS` of them once more, untimed, for the first stand-in), the
    calibration items once, the lattice's trainings.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from polydom.pipeline.build import build_index
    from polydom.pipeline.learning import sklearn_learner

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    train = np.asarray(train)
    y = np.asarray(labels)[train]
    boot = rng.choice(len(train), size=min(BOOTSTRAP_ITEMS, len(train)), replace=False)
    with quiet_fits():
        warm = None
        if np.unique(y[boot]).size > 1:
            warm = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
            warm.fit(featurizer.transform([items[train[i]] for i in boot]), y[boot])
        train_run = featurizer.featurize_in_situ(
            [items[i] for i in train], seed=seed + 2,
            predict=None if warm is None else lambda row: warm.predict(row[None, :]))
        rows = train_run.rows
        standin = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
        standin.fit(rows, y)
        seconds["featurise"] = time.perf_counter() - t0
        progress(f"featurised {len(train)} training items in situ, stand-in model fitted")
        t0 = time.perf_counter()
        profiled = np.zeros(len(train), dtype=bool)
        profiled[rng.choice(len(train), size=min(profile_items, len(train)),
                            replace=False)] = True
        prof = InSituProfile.fit(train_run.sizes[profiled],
                                 {a: t[profiled] for a, t in train_run.timings.items()},
                                 1.0 - target_overrun, degree)
        seconds["profile"] = time.perf_counter() - t0
        progress(f"profiled {int(profiled.sum())} of them (q{1 - target_overrun:g} curves)")
        model = skeleton.with_curves(atoms=prof.curves)
        est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
        learner = sklearn_learner(est, rows, y, features=model, cv=cv)
        t0 = time.perf_counter()
        index = build_index(model, learner, alpha=alpha, n_min=n_min, n_max=n_max,
                            cache=cache, store=store, cost_pruning=True, cost_unit="s",
                            keep_trained=True)
        index.info["insitu"] = {"quantile": 1.0 - target_overrun,
                                "profile_items": int(profiled.sum()), "degree": degree}
        seconds["build"] = time.perf_counter() - t0
        progress(f"built: {index.info['expansions']} feature sets trained, "
                 f"{len(index.candidates)} candidates")
        guarded, cal, evidence = None, None, None
        if len(calibrate):
            t0 = time.perf_counter()
            run = featurizer.featurize_in_situ(
                [items[i] for i in calibrate],
                predict=lambda row: standin.predict(row[None, :]), seed=seed + 1)
            cal = (run.sizes, run.timings)
            evidence = cal
            if train_evidence:
                unprofiled = ~profiled
                evidence = (np.concatenate([train_run.sizes[unprofiled], run.sizes]),
                            {a: np.concatenate([train_run.timings[a][unprofiled], t])
                             for a, t in run.timings.items()})
            guarded = index.calibrated(*evidence, target_overrun, levels=levels, seed=seed)
            seconds["calibrate"] = time.perf_counter() - t0
            progress(f"calibrated on {evidence[0].size} items timed in situ "
                     f"({len(calibrate)} held out, {evidence[0].size - len(calibrate)} "
                     "unprofiled training items)")
    return InSituBuild(index, guarded, prof.curves, prof.coverage, standin, rows, cal, seconds,
                       evidence)


def size_agnostic(index: Index, n_max: float) -> Index:
    """The choice without an index over sizes: each model costs what it costs at ``n_max``.

    Runtime complexity: a sweep over constant curves.
    """
    return index.with_candidate_costs([CostCurve([float(c.cost(n_max))])
                                       for c in index.candidates])


def choose_budgets(index: Index, sizes: np.ndarray, k: int) -> list[float]:
    """``k`` budgets, geometric from the cheapest useful model (the cheapest non-empty
    candidate at the median size) to the dearest set at the largest size.

    Runtime complexity: O(K).
    """
    mid, top = float(np.median(sizes)), float(np.max(sizes))
    costs = [float(c.cost(mid)) for c in index.candidates if c.needs]
    lo = min(c for c in costs if c > 0)
    hi = max(float(c.cost(top)) for c in index.candidates)
    return [float(f"{b:.2g}") for b in np.geomspace(lo, hi, k)]


@dataclass(frozen=True)
class ServedRow:
    """Outcome of one method at one budget over the served items."""

    method: str
    budget: float
    items: int
    over: float
    accuracy: float
    mean_seconds: float
    p95_seconds: float


def serve_side_by_side(
    methods: Mapping[str, Index],
    items: Sequence[Any],
    labels: np.ndarray,
    budgets: Sequence[float],
    featurizer: Featurizer,
    seed: int = 0,
) -> list[ServedRow]:
    """Serve every item at every budget with every method, the servings shuffled.

    Every (item, budget, method) serving runs once, in a seeded shuffled order: each
    method's servings are spread over the whole run, so the machine's state (load, caches)
    falls on all of them alike, and each serving follows another item's, as in a stream of
    items where each is served once (an item served again right after itself finds its
    data and the features' code warm, which a served item does not).

    Runtime complexity: O(items * budgets * methods) servings.
    """
    names = list(methods)
    over = {(m, b): [] for m in names for b in budgets}
    right = {(m, b): [] for m in names for b in budgets}
    secs = {(m, b): [] for m in names for b in budgets}
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    width = len(budgets) * len(names)
    for visit in rng.permutation(len(items) * width).tolist():
        i, rest = divmod(visit, width)
        b, name = budgets[rest // len(names)], names[rest % len(names)]
        pred = predict_item(methods[name], items[i], b, featurizer)
        over[name, b].append(pred.seconds > b)
        right[name, b].append(pred.label is not None and pred.label == labels[i])
        secs[name, b].append(pred.seconds)
    return [ServedRow(m, b, len(items), float(np.mean(over[m, b])),
                      float(np.mean(right[m, b])), float(np.mean(secs[m, b])),
                      float(np.percentile(secs[m, b], 95)))
            for m in names for b in budgets]
