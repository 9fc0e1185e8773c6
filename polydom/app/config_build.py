"""``polydom build CONFIG``: build and store an index described by a TOML or JSON file.

A configuration (TOML shown; JSON takes the same keys)::

    data = "breast_cancer"          # or "digits"
    learner = "logistic"            # see LEARNERS
    store = "sqlite:///bc.db"       # SQLAlchemy URL or SQLite path (relative to the file)
    alpha = 1.1                     # default 1.0
    delta = 0.0                     # default 0.0
    domain = [1, 100]               # [n_min, n_max]; digits: default [min side, max side]
    cv = 3                          # folds (an integer, default 3)
    seed = 0
    cost_unit = "ms"                # unit of the costs, printed everywhere (default "units";
                                    # "s" for profiled digits)

    [features]                      # breast_cancer: name -> column indices or names
    mean = [0, 1, 2, 3]             # (default: groups "mean", "error", "worst")
    worst = ["worst radius", "worst texture"]

    [costs]                         # one polynomial in n per feature
    mean = "1 + n"
    worst = "5 + 0.01*n**2"

For ``data = "digits"``: ``features`` is a list of image feature names (default all 12),
``sides`` (integers in [8, 512], default [8, 16, 32]), ``digits`` (how many, 10 to 1797,
default 300) and either ``costs`` or
``profile = true`` (time the features and fit ``statistic`` curves, default "p90").  Every
digit is rendered once, at a side drawn from ``sides``, so folds never share a digit.

Every error is a :class:`ConfigError` (a ``ValueError``) with a one-line message.
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from polydom.app.tables import DEFAULT_COST_UNIT
from polydom.errors import PolydomError
from storage.database import normalize_url

__all__ = ["ConfigError", "LEARNERS", "MAX_SIDE", "load_config", "build_from_config",
           "make_learner"]


class ConfigError(PolydomError, ValueError):
    """A bad configuration; the message is one line."""


def _logistic(seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def _sgd_hinge_l1(seed: int) -> Any:
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), SGDClassifier(loss="hinge", penalty="l1",
                                                         random_state=seed))


def _lightgbm(seed: int) -> Any:
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=50, random_state=seed, verbose=-1, n_jobs=1)


def _tree(seed: int) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=5, random_state=seed)


#: Learner name -> factory(seed) of a scikit-learn estimator.
LEARNERS: dict[str, Callable[[int], Any]] = {
    "logistic": _logistic,
    "sgd-hinge-l1": _sgd_hinge_l1,
    "lightgbm": _lightgbm,
    "tree": _tree,
}

_KEYS = {"data", "learner", "store", "alpha", "delta", "domain", "cv", "seed", "features",
         "costs", "profile", "statistic", "sides", "digits", "repeats", "cost_unit"}

#: Largest image side of a digits config: a side of n renders n*n pixels per digit and
#: features cost up to O(n**3), so [8, 20000] would exhaust memory.
MAX_SIDE = 512


def make_learner(name: Any, seed: int = 0) -> Any:
    """The estimator registered as ``name`` (see :data:`LEARNERS`)."""
    if name not in LEARNERS:
        raise ConfigError(f"unknown learner {name!r}; known: {', '.join(LEARNERS)}")
    return LEARNERS[name](seed)


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a ``.toml`` or ``.json`` file into a dict (one-line :class:`ConfigError`)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config {str(path)!r}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".json":
            config = json.loads(text)
        else:
            config = tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"config {str(path)!r} is not valid "
                          f"{'JSON' if path.suffix.lower() == '.json' else 'TOML'}: "
                          f"{first}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"config {str(path)!r} must be a table/object at the top level")
    config.setdefault("_dir", str(path.resolve().parent))
    return config


def _number(config: Mapping, key: str, default: float, low: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= low):
        raise ConfigError(f"{key} must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def _integer(config: Mapping, key: str, default: int, low: int, high: int | None = None) -> int:
    """``config[key]`` as an int in ``[low, high]``: ``2.5`` or ``"3"`` are refused."""
    value = config.get(key, default)
    span = f">= {low}" if high is None else f"in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        raise ConfigError(f"{key} must be an integer {span}, got {value!r}")
    return value


def _store_url(config: Mapping) -> str:
    """The store as a SQLAlchemy URL (a relative path is relative to the config file)."""
    store = config["store"]
    if not isinstance(store, str) or not store.strip():
        raise ConfigError(f"store must be a SQLAlchemy URL or a file path (text), got {store!r}")
    return normalize_url(store, base=config.get("_dir", "."))


def _costs(config: Mapping, names: list[str]) -> dict[str, Any]:
    from polydom.curves.cost_curve import CostCurve

    costs = config.get("costs")
    if not isinstance(costs, Mapping):
        raise ConfigError("missing key 'costs' (a table of feature -> polynomial in n), "
                          "or set profile = true for digits")
    unknown = [k for k in costs if k not in names]
    if unknown:
        raise ConfigError(f"costs name unknown feature(s) {unknown}; features: {names}")
    missing = [n for n in names if n not in costs]
    if missing:
        raise ConfigError(f"costs missing for feature(s) {missing}")
    out = {}
    for name in names:
        try:
            out[name] = CostCurve.parse(str(costs[name]))
        except ValueError as exc:
            raise ConfigError(f"cost of {name!r} ({costs[name]!r}): "
                              f"{str(exc).splitlines()[0]}") from None
    return out


def _breast_cancer(config: Mapping) -> tuple[np.ndarray, np.ndarray, dict[str, list[int]]]:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    names = [str(n) for n in data.feature_names]
    spec = config.get("features")
    if spec is None:
        spec = {"mean": list(range(0, 10)), "error": list(range(10, 20)),
                "worst": list(range(20, 30))}
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError("features for breast_cancer must be a table: name -> list of column "
                          "indices or column names")
    columns: dict[str, list[int]] = {}
    for feature, cols in spec.items():
        if not isinstance(cols, list) or not cols:
            raise ConfigError(f"feature {feature!r} must list columns, got {cols!r}")
        idx = []
        for c in cols:
            if isinstance(c, int) and not isinstance(c, bool) and 0 <= c < len(names):
                idx.append(c)
            elif isinstance(c, str) and c in names:
                idx.append(names.index(c))
            else:
                raise ConfigError(f"feature {feature!r}: unknown column {c!r} (indices 0-"
                                  f"{len(names) - 1} or names like {names[0]!r})")
        columns[str(feature)] = idx
    return data.data, data.target, columns


def build_from_config(
    config: Mapping[str, Any], out: Callable[[str], Any] = print
) -> Any:
    """Build and store the index a configuration describes; returns the :class:`Index`.

    Runtime complexity: the lattice's trainings (at most ``2**features`` sets, ``cv + 1``
    fits each) plus, for digits, rendering and featurising the digits once.
    """
    import warnings

    import learners
    import polydom

    unknown = sorted(k for k in config if k not in _KEYS and not k.startswith("_"))
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown}; known: {sorted(_KEYS)}")
    for key in ("data", "learner", "store"):
        if key not in config:
            raise ConfigError(f"missing key {key!r}")
    seed = _integer(config, "seed", 0, 0)
    estimator = make_learner(config["learner"], seed)
    alpha = _number(config, "alpha", 1.0, 1.0)
    delta = _number(config, "delta", 0.0, 0.0)
    cv = _integer(config, "cv", 3, 2)
    store = _store_url(config)
    data = config["data"]
    if data == "breast_cancer":
        if config.get("profile"):
            raise ConfigError("profile = true needs data = 'digits' (breast_cancer has no "
                              "feature routines to time); give costs")
        X, y, columns = _breast_cancer(config)
        costs = _costs(config, list(columns))
        n_min, n_max = 0.0, math.inf
        unit = config.get("cost_unit", DEFAULT_COST_UNIT)
    elif data == "digits":
        X, y, columns, costs, (n_min, n_max) = _digits(config, seed, out)
        unit = config.get("cost_unit", "s" if config.get("profile") else DEFAULT_COST_UNIT)
    else:
        raise ConfigError(f"unknown data {data!r}; known: 'breast_cancer', 'digits'")
    if "domain" in config:
        dom = config["domain"]
        if (not isinstance(dom, list) or len(dom) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           for v in dom)):
            raise ConfigError(f"domain must be [n_min, n_max], got {dom!r}")
        n_min, n_max = float(dom[0]), float(dom[1])
        if not (0 <= n_min <= n_max):
            raise ConfigError(f"domain must have 0 <= n_min <= n_max, got {dom!r}")
    for name, curve in costs.items():
        if not curve.is_nonnegative(n_min, n_max):
            raise ConfigError(f"cost of {name!r} ({curve}) is negative somewhere on the domain "
                              f"[{n_min:g}, {n_max:g}]")
    if not isinstance(unit, str) or not unit.strip():
        raise ConfigError(f"cost_unit must be a non-empty text such as 's', got {unit!r}")
    if cv > len(y):
        raise ConfigError(f"cv must be at most the number of rows ({len(y)}), got {cv}")
    learner = learners.SklearnLearner(estimator, X, y, features=columns, cv=cv)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        index = polydom.build_index(costs, learner, alpha=alpha, delta=delta, n_min=n_min,
                                    n_max=n_max, store=store, cost_unit=unit)
    info = index.info
    out(f"built {data} with {config['learner']}: {info['expansions']} of "
        f"{info['lattice_size']} feature sets trained ({info['trained']} new, "
        f"{info['cache_hits']} reused) in {time.perf_counter() - start:.1f} s; "
        f"{info['candidates']} candidates, {info['ranges']} ranges, {info['entries']} skyline "
        f"entries; alpha={alpha:g}, delta={delta:g}, domain [{n_min:g}, {n_max:g}], costs in "
        f"{unit}")
    out(f"stored as build {info['build_id']} in {store}")
    return index


def _digits(config: Mapping, seed: int, out: Callable[[str], Any]) -> tuple:
    from polydom.app.workloads.images import FEATURES, load_digits_workload, profiling_images

    names = config.get("features", list(FEATURES))
    if not isinstance(names, list) or not names:
        raise ConfigError("features for digits must be a list of image feature names")
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ConfigError(f"unknown image feature(s) {unknown}; known: {list(FEATURES)}")
    sides = config.get("sides", [8, 16, 32])
    if (not isinstance(sides, list) or not sides
            or not all(isinstance(s, int) and not isinstance(s, bool) and 8 <= s <= MAX_SIDE
                       for s in sides)):
        raise ConfigError(f"sides must be a list of integers in [8, {MAX_SIDE}], got {sides!r}")
    count = _integer(config, "digits", 300, 10, 1797)
    wl = load_digits_workload(sides=sides, digits=count, features=names, seed=seed)
    rng = np.random.default_rng(seed)
    pick = rng.integers(len(sides), size=count)  # one rendering per digit
    pos = [k * count + i for i, k in enumerate(pick)]
    fz = wl.featurizer
    X = np.vstack([fz.transform([wl.items[i]])[0] for i in pos])
    y = wl.labels[pos]
    if config.get("profile"):
        if "costs" in config:
            raise ConfigError("give either costs or profile = true, not both")
        statistic = config.get("statistic", "p90")
        if statistic not in ("max", "p90", "mean"):
            raise ConfigError(f"statistic must be 'max', 'p90' or 'mean', got {statistic!r}")
        repeats = _integer(config, "repeats", 3, 1, 100)
        psides = sorted(set(sides) | {8, 16, 32, 64})
        prof = fz.profile(profiling_images(sides=psides, digits_per_side=2, seed=seed),
                          repeats=repeats, statistic=statistic, degree=3)
        out(prof.table())
        costs = dict(prof.curves)
    else:
        costs = _costs(config, fz.names)
    return X, y, fz.columns, costs, (float(min(sides)), float(max(sides)))
