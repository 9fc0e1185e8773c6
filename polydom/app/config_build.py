"""``polydom build CONFIG``: build and store an index described by a TOML or JSON file.

A configuration (TOML shown; JSON takes the same keys)::

    data = "breast_cancer"          # "digits", a .csv/.tsv/.parquet/.npy/.npz file relative
                                    # to the config, or a "module:function" loader (see
                                    # polydom.app.config_data: target, featurizer, selectors)
    target = "label"                # the label column of your own table
    learner = "logistic"            # a registered lattice learner (learners.registry)
    store = "sqlite:///bc.db"       # SQLAlchemy URL or SQLite path (relative to the file)
    alpha = 1.1                     # default 1.0
    delta = 0.0                     # default 0.0
    domain = [1, 100]               # [n_min, n_max]; digits: default [min side, max side]
    cv = 3                          # folds (an integer, default 3), or instead
    # holdout = 0.3                 # one held-out share of the rows
    seed = 0                        # seeds the folds (and the learners)
    executor = "processes:2"        # where trainings run (default in-process); see below
    traversal = "anytime"           # "complete" (default), "paper" or "anytime" (20+ features)
    max_expansions = 400            # cap on trainings (default none); the any-time cap
    cost_unit = "ms"                # unit of the costs, printed everywhere (default "units";
                                    # "s" for profiled digits)
    foreign_database = false        # true: add the store's tables to a non-empty database
                                    # of another program (refused by default)

    [features]                      # name -> columns: names, indices, "start:stop", globs
    mean = [0, 1, 2, 3]             # (breast_cancer default: "mean", "error", "worst"; a
    worst = ["worst radius", "worst *"]  # table's default: one feature per column)

    [costs]                         # one polynomial in n per feature, or per column
    mean = "1 + n"
    worst = "5 + 0.01*n**2"

Every learner of the build, the lattice's and every budgeted one, is scored on one
evaluation protocol (:class:`learners.EvaluationProtocol`): ``cv`` seeded stratified folds
(default 3), or one stratified held-out share of the rows with ``holdout``; each candidate
carries its per-fold scores, their mean and its standard error, and the protocol is
stored with the build (``polydom inspect`` shows it).  Budgeted learners (registered ones
of kind "budgeted") join the same index, each with a trade-off grid, swept by
:func:`polydom.pipeline.learning.sweep_budgeted` (:func:`learners.sweep`) on that protocol::

    atoms = "columns"               # each column x{j} is an atomic feature costing its
                                    # feature's curve; the features are bundles (default
                                    # "features": each feature is one atom)
    [[budgeted]]
    learner = "cegb"                # or "greedymiser", ...
    tradeoffs = [0.0005, 0.005]
    sizes = [1.0]                   # reference sizes of the training costs (default [1])
    cost = "expected"               # or "worst"
    params = { n_estimators = 50 }  # passed to the learner's factory

For ``data = "digits"``: ``features`` is a list of image feature names (default all 12),
``sides`` (integers in [8, 512], default [8, 16, 32]), ``digits`` (how many, 10 to 1797,
default 300) and either ``costs`` or
``profile = true`` (time the features in situ and fit their ``quantile`` curves, default
0.95, of ``degree`` at most 2: :meth:`polydom.Featurizer.profile_in_situ`).  Every
digit is rendered once, at a side drawn from ``sides``, so folds never share a digit.

The in-situ guard (docs/in_situ.md, "A stated overrun rate") from the config: the build is
stored, then calibrated on held-out timings and published as the next build, the current
one (:func:`polydom.pipeline.guard.guard_index`; the costs must be in a unit of time)::

    target_overrun = 0.05           # the rate every guarded curve promises
    overrun_levels = [0.01, 0.2]    # more rates a request may ask for (default none)
    overrun_score = "auto"          # or "ratio", "excess", "best" (default "auto")
    calibration_timings = "held_out.csv"  # 'size' and one column of seconds per atom,
                                    # held-out items timed in situ (relative to the file)

``executor`` (or ``polydom build --executor``) is ``"inprocess"``, ``"processes"``,
``"processes:N"`` or ``"dask://host:port"`` (see :func:`lattice.make_executor`); it is checked,
and a scheduler connected, before anything is trained or stored.  The lattice's trainings and
the ``[[budgeted]]`` sweeps (one task per trade-off and reference size) both run on it.

Every error is a :class:`ConfigError` (a ``ValueError``) with a one-line message, raised
before anything is trained or stored; sizes are bounded (:data:`MAX_SEED`,
:data:`MAX_TRADEOFFS`, :data:`MAX_SIZES`, :data:`MAX_PARAMS`, and the data limits of
:mod:`polydom.app.config_data`).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from polydom.app.config_data import (
    ConfigError,
    Dataset,
    feature_columns,
    feature_costs,
    load_dataset,
)
from polydom.app.tables import DEFAULT_COST_UNIT
from polydom.app.timings_file import read_timings_file
from polydom.curves.calibration import min_calibration_items
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.curves.domain import CONSTRAINTS
from polydom.errors import EvaluationError, ExecutorError, InvalidArgumentError, did_you_mean
from polydom.pipeline.config_run import BuildPlan, Guard, run_build
from polydom.pipeline.learning import (
    evaluation_protocol,
    make_estimator,
    registered_learners,
)
from polydom.pipeline.stores import store_url as normalize_url

__all__ = ["Config", "ConfigError", "MAX_PARAMS", "MAX_SEED", "MAX_SIDE", "MAX_SIZES",
           "MAX_TRADEOFFS", "build_from_config", "check_keys", "lattice_learners", "load_config",
           "make_learner", "store_url"]


_KEYS = {"data", "learner", "store", "alpha", "delta", "domain", "cv", "seed", "features",
         "costs", "profile", "sides", "digits", "cost_unit", "atoms", "quantile", "degree",
         "budgeted", "holdout", "executor", "foreign_database", "target", "featurizer",
         "target_overrun", "overrun_levels", "overrun_score", "calibration_timings",
         "traversal", "max_expansions"}
#: The lattice traversals a config may name (:func:`lattice.explore`).
TRAVERSALS = ("complete", "paper", "anytime")
#: Keys of earlier versions, refused with a line saying what replaced them.
_RETIRED = ("statistic", "repeats")
_BUDGETED_KEYS = {"learner", "tradeoffs", "sizes", "cost", "params"}

_SQLITE_RELATIVE = re.compile(r"(?P<scheme>sqlite(?:\+\w+)?:///)(?P<path>[^?]*)(?P<query>\?.*)?")

#: Largest image side of a digits config: a side of n renders n*n pixels per digit and
#: features cost up to O(n**3), so [8, 20000] would exhaust memory.
MAX_SIDE = 512
#: Largest seed (numpy's and scikit-learn's random states take 32 bits).
MAX_SEED = 2**32 - 1
#: Largest training cap of a config (``max_expansions``): one training per count.
MAX_EXPANSIONS = 10**7
#: Most trade-offs and reference sizes of one ``[[budgeted]]`` entry (one training each).
MAX_TRADEOFFS = 256
MAX_SIZES = 64
#: Bounds of the budgeted learners' integer params that set how much is trained (trees,
#: leaves, depth, stages, iterations); any other integer param must fit 32 bits.
MAX_PARAMS = {
    "n_estimators": (1, 10_000), "n_trees": (1, 10_000), "num_leaves": (2, 131_072),
    "max_depth": (-1, 64), "tree_depth": (1, 16), "depth": (1, 10), "n_stages": (1, 32),
    "n_subsets": (1, 64), "cv": (2, 100), "max_sweeps": (1, 1_000), "irls_iters": (1, 10_000),
    "n_starts": (1, 1_000), "max_iter": (1, 100_000), "inner_iter": (1, 100_000),
}


def lattice_learners() -> list[str]:
    """Names of the registered lattice learners a config may name (``learner = ...``)."""
    return [n for n in registered_learners("lattice") if n != "synthetic"]


def make_learner(name: Any, seed: int = 0) -> Any:
    """The scikit-learn estimator of the lattice learner registered as ``name``."""
    known = lattice_learners()
    if name not in known:
        raise ConfigError(f"unknown learner {name!r}; known: {', '.join(known)}")
    return make_estimator(name, seed)


def _budgeted(config: Mapping) -> list[dict[str, Any]]:
    """The ``[[budgeted]]`` entries, checked: learner, tradeoffs, sizes, cost, params."""
    entries = config.get("budgeted", [])
    if isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, list):
        raise ConfigError("budgeted must be a list of tables ([[budgeted]] in TOML)")
    known = registered_learners("budgeted")
    out = []
    for k, entry in enumerate(entries):
        where = f"budgeted[{k}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where} must be a table, got {entry!r}")
        unknown = sorted(set(entry) - _BUDGETED_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}"
                              f"{did_you_mean(unknown[0], sorted(_BUDGETED_KEYS))}; known: "
                              f"{sorted(_BUDGETED_KEYS)}")
        name = entry.get("learner")
        if name not in known:
            raise ConfigError(f"{where}: unknown budgeted learner {name!r}"
                              f"{did_you_mean(name, known)}; known: {', '.join(known)}")
        grid = entry.get("tradeoffs")
        if isinstance(grid, list) and len(grid) > MAX_TRADEOFFS:
            raise ConfigError(f"{where}: {len(grid)} tradeoffs; the limit is {MAX_TRADEOFFS} "
                              "(one training each)")
        if (not isinstance(grid, list) or not grid or not all(
                isinstance(t, (int, float)) and not isinstance(t, bool)
                and math.isfinite(t) and t >= 0 for t in grid)):
            raise ConfigError(f"{where}: tradeoffs must be a non-empty list of numbers >= 0, "
                              f"got {grid!r}")
        sizes = entry.get("sizes", [1.0])
        if isinstance(sizes, list) and len(sizes) > MAX_SIZES:
            raise ConfigError(f"{where}: {len(sizes)} sizes; the limit is {MAX_SIZES}")
        if (not isinstance(sizes, list) or not sizes or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                and CONSTRAINTS["size"].holds(float(v)) for v in sizes)):
            raise ConfigError(f"{where}: sizes must be a non-empty list of numbers >= 0, "
                              f"got {sizes!r}")
        cost = entry.get("cost", "expected")
        if cost not in ("expected", "worst"):
            raise ConfigError(f"{where}: cost must be 'expected' or 'worst', got {cost!r}")
        params = entry.get("params", {})
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}: params must be a table, got {params!r}")
        for key, value in params.items():
            _check_param(f"{where}.params.{key}", key, value)
        out.append({"learner": name, "tradeoffs": [float(t) for t in grid],
                    "sizes": [float(v) for v in sizes], "cost": cost, "params": dict(params)})
    return out


def _check_param(where: str, key: str, value: Any, depth: int = 0) -> None:
    """A learner param bounded before any learner sees it: integers by :data:`MAX_PARAMS`
    (else 32 bits), finite floats, texts and lists of bounded size."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        low, high = MAX_PARAMS.get(key, (-(2**31), 2**31 - 1))
        if not low <= value <= high:
            shown = value if abs(value) < 10**12 else f"an integer of {value.bit_length()} bits"
            raise ConfigError(f"{where} must be an integer in [{low}, {high}], got {shown}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"{where} must be finite, got {value!r}")
    elif isinstance(value, str):
        if len(value) > 1_000:
            raise ConfigError(f"{where} is {len(value)} characters; the limit is 1000")
    elif isinstance(value, (list, Mapping)):
        if depth > 3 or len(value) > 4_096:
            raise ConfigError(f"{where} is too large or too deeply nested")
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for k, v in items:
            _check_param(f"{where}[{k!r}]", str(k), v, depth + 1)
    else:
        raise ConfigError(f"{where} must be a number, text, list or table, got {value!r}")


def _cost_model(
    config: Mapping, columns: Mapping[str, list[int]], costs: Mapping[str, CostCurve],
    column_costs: Mapping[int, CostCurve] | None = None,
) -> CostModel:
    """The build's cost model: ``atoms = "features"`` (default: each feature is an atomic
    feature with its columns) or ``"columns"`` (each column ``x{j}`` is an atom costing its
    own cost when ``[costs]`` gives one, else its feature's curve; the features are bundles
    of their columns)."""
    atoms = config.get("atoms", "features")
    if atoms == "features":
        return CostModel(costs, columns=columns)
    if atoms != "columns":
        raise ConfigError(f"atoms must be 'features' or 'columns', got {atoms!r}")
    column_costs = column_costs or {}
    atom_costs, atom_columns, bundles = {}, {}, {}
    for name, cols in columns.items():
        bundles[name] = []
        for j in cols:
            atom = f"x{j}"
            if atom in atom_costs:
                raise ConfigError(f"column {j} is in two features; with atoms = 'columns' "
                                  "each column belongs to one feature")
            atom_costs[atom], atom_columns[atom] = column_costs.get(j, costs[name]), [j]
            bundles[name].append(atom)
    try:
        return CostModel(atom_costs, bundles=bundles, columns=atom_columns)
    except ValueError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None


def _checked_model(
    config: Mapping, columns: Mapping[str, list[int]], costs: Mapping[str, CostCurve],
    column_costs: Mapping[int, CostCurve], n_min: float, n_max: float,
) -> CostModel:
    """The build's one :class:`CostModel`, made and checked here, at the door: every cost
    the config gave (parsed once, by :func:`feature_costs`) non-negative on the domain.  The
    model remembers the domain it was checked on, so ``build_index``, the lattice, the index
    and the store take the object as it is, without checking its curves again.

    Runtime complexity: O(atoms * degree**3).
    """
    model = _cost_model(config, columns, costs, column_costs)
    bad = model.negative_atom(n_min, n_max)
    if bad is not None:
        name = bad
        if config.get("atoms", "features") == "columns":  # atom x{j}: its column or feature
            j = model.columns[bad][0]
            feature = next(f for f, cols in columns.items() if j in cols)
            own = column_costs.get(j)
            name = feature if own is None or own is costs.get(feature) else f"column {j}"
        _refuse_negative(name, model.atoms[bad], n_min, n_max)
    if config.get("atoms", "features") == "features":
        atoms = {id(c) for c in model.atoms.values()}
        for j, curve in column_costs.items():  # columns summed into a feature's atom
            if id(curve) not in atoms and not curve.is_nonnegative(n_min, n_max):
                _refuse_negative(f"column {j}", curve, n_min, n_max)
    return model


def _refuse_negative(name: str, curve: CostCurve, n_min: float, n_max: float) -> None:
    raise ConfigError(f"cost of {name!r} ({curve}) is negative somewhere on the domain "
                      f"[{n_min:g}, {n_max:g}]")


class Config(dict):
    """A config read from a file: its keys, and ``folder``, the file's folder (relative
    paths in the config are relative to it)."""

    def __init__(self, keys: Mapping[str, Any], folder: str | Path) -> None:
        super().__init__(keys)
        self.folder = Path(folder)


def load_config(path: str | Path) -> Config:
    """Read a ``.toml`` or ``.json`` file into a :class:`Config` (one-line
    :class:`ConfigError`); nothing but the file's keys, and its folder beside them."""
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
    return Config(config, path.resolve().parent)


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
        shown = (f"an integer of {value.bit_length()} bits"
                 if isinstance(value, int) and abs(value) >= 10**12 else repr(value))
        raise ConfigError(f"{key} must be an integer {span}, got {shown}")
    return value


def store_url(config: Mapping, folder: str | Path = ".") -> str:
    """The config's store as a SQLAlchemy URL: a relative file path, and the relative path
    of a ``sqlite:///rel.db`` URL, are relative to ``folder`` (the config file's).

    Runtime complexity: O(len(store)).

    >>> store_url({"store": "sqlite:///rel.db"}, "/data")
    'sqlite:////data/rel.db'
    """
    store = config["store"]
    if not isinstance(store, str) or not store.strip():
        raise ConfigError(f"store must be a SQLAlchemy URL or a file path (text), got {store!r}")
    found = _SQLITE_RELATIVE.fullmatch(store)
    if found:
        path = found.group("path")
        if path and path != ":memory:" and not path.startswith(("/", "file:")):
            return (found.group("scheme") + str((Path(folder) / path).resolve())
                    + (found.group("query") or ""))
    return normalize_url(store, base=folder)


def _costs(config: Mapping, names: list[str]) -> dict[str, Any]:
    """The ``[costs]`` of features ``names`` (one column group each: digits' routines)."""
    per_feature, _ = feature_costs(config.get("costs"), {n: [] for n in names}, [])
    return per_feature


def _table(config: Mapping, folder: str | Path, seed: int, out: Callable[[str], Any]) -> tuple:
    """Rows, labels, feature columns, costs (per feature and per column) and the domain of a
    table config (a file, a loader, a featurizer's items, or breast_cancer)."""
    dataset = load_dataset(config, folder)
    default = None
    if config["data"] == "breast_cancer":
        default = {"mean": list(range(0, 10)), "error": list(range(10, 20)),
                   "worst": list(range(20, 30))}
    columns = feature_columns(config.get("features"), dataset, default)
    n_min, n_max = 0.0, math.inf
    if dataset.featurizer is not None:
        sizes = [float(dataset.featurizer.size(item)) for item in dataset.items]
        n_min, n_max = min(sizes), max(sizes)
    if config.get("profile"):
        if dataset.featurizer is None:
            raise ConfigError("profile = true needs a featurizer (or data = 'digits'): "
                              f"{config['data']!r} has no feature routines to time; give costs")
        return (dataset.X, dataset.y, columns, _profiled(config, dataset, list(columns), seed,
                                                         out), {}, (n_min, n_max))
    costs, column_costs = feature_costs(config.get("costs"), columns, dataset.names)
    return dataset.X, dataset.y, columns, costs, column_costs, (n_min, n_max)


def _profiled(config: Mapping, dataset: Dataset, names: list[str], seed: int,
              out: Callable[[str], Any]) -> dict[str, CostCurve]:
    """Cost curves of a featurizer's routines, profiled in situ on up to 60 of the items."""
    fz, items = dataset.featurizer, dataset.items
    rng = np.random.default_rng(seed)
    sample = [items[i] for i in sorted(rng.permutation(len(items))[:60])]
    return _in_situ_curves(config, fz, sample, names, seed, out)


def _in_situ_curves(config: Mapping, fz: Any, sample: list, names: list[str], seed: int,
                    out: Callable[[str], Any]) -> dict[str, CostCurve]:
    """The ``profile = true`` curves: ``fz``'s features timed in situ on ``sample`` (each
    once per item, the (item, feature) pairs shuffled, each after a prediction where a
    model is given, as serving computes them;
    :meth:`polydom.Featurizer.profile_in_situ`), each fitted at the config's ``quantile``
    (default 0.95) with a polynomial of ``degree`` (default 2, at most the number of
    distinct sizes less one).  (The warm-loop keys ``statistic`` and ``repeats`` are refused
    by :func:`check_keys`: a warm loop under-predicts what serving pays, docs/in_situ.md.)

    Runtime complexity: one computation of every feature per item of ``sample``, plus one
    linear program per feature.
    """
    if "costs" in config:
        raise ConfigError("give either costs or profile = true, not both")
    quantile = config.get("quantile", 0.95)
    if (isinstance(quantile, bool) or not isinstance(quantile, (int, float))
            or not 0 < quantile < 1):
        raise ConfigError(f"quantile must be a number in (0, 1), got {quantile!r}")
    degree = _integer(config, "degree", 2, 0, 3)
    distinct = len({float(fz.size(item)) for item in sample})
    if distinct < 2:
        raise ConfigError("profile = true needs items of at least 2 distinct sizes")
    try:
        prof = fz.profile_in_situ(sample, quantile=float(quantile),
                                  degree=min(degree, distinct - 1), features=names, seed=seed)
    except ValueError as exc:
        raise ConfigError(f"profiling the featurizer: {str(exc).splitlines()[0]}") from None
    out(prof.table())
    return dict(prof.curves)


def build_from_config(
    config: Mapping[str, Any], out: Callable[[str], Any] = print, executor: Any = None,
    folder: str | Path | None = None, traversal: str | None = None,
    max_expansions: int | None = None,
) -> Any:
    """Build and store the index a configuration describes; returns the :class:`Index`.

    ``executor`` (a specification or an executor) overrides the config's ``executor`` key.
    Relative paths of the config (``data``, ``store``, a loader's module) are relative to
    ``folder``: by default the folder of the file :func:`load_config` read, else the working
    directory.  ``traversal`` and ``max_expansions`` (``polydom build --traversal``,
    ``--max-expansions``) override the config's keys of those names.  A progress bar
    (tqdm, on a terminal) counts the finished trainings.

    Runtime complexity: the lattice's trainings (at most ``2**features`` sets, ``cv + 1``
    fits each) plus, for digits, rendering and featurising the digits once.
    """
    check_keys(config)
    if folder is None:
        folder = config.folder if isinstance(config, Config) else Path(".")
    for key in ("data", "learner", "store"):
        if key not in config:
            raise ConfigError(f"missing key {key!r}")
    seed = _integer(config, "seed", 0, 0, MAX_SEED)
    if config["learner"] not in lattice_learners():
        raise ConfigError(f"unknown learner {config['learner']!r}; known: "
                          f"{', '.join(lattice_learners())}")
    specs = _budgeted(config)
    alpha = _number(config, "alpha", 1.0, 1.0)
    delta = _number(config, "delta", 0.0, 0.0)
    traversal, cap = _exploration(config, traversal, max_expansions)
    protocol = _protocol(config, seed)
    store = store_url(config, folder)
    data = config["data"]
    column_costs: dict[int, CostCurve] = {}
    if data == "digits":
        X, y, columns, costs, (n_min, n_max) = _digits(config, seed, out)
        unit = config.get("cost_unit", "s" if config.get("profile") else DEFAULT_COST_UNIT)
    else:
        X, y, columns, costs, column_costs, (n_min, n_max) = _table(config, folder, seed, out)
        unit = config.get("cost_unit", "s" if config.get("profile") else DEFAULT_COST_UNIT)
    if "domain" in config:
        dom = config["domain"]
        if (not isinstance(dom, list) or len(dom) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           for v in dom)):
            raise ConfigError(f"domain must be [n_min, n_max], got {dom!r}")
        n_min, n_max = float(dom[0]), float(dom[1])
        if not (0 <= n_min <= n_max):
            raise ConfigError(f"domain must have 0 <= n_min <= n_max, got {dom!r}")
    model = _checked_model(config, columns, costs, column_costs, n_min, n_max)
    guard = _guard(config, folder, model.atoms)
    if not isinstance(unit, str) or not unit.strip():
        raise ConfigError(f"cost_unit must be a non-empty text such as 's', got {unit!r}")
    foreign = config.get("foreign_database", False)
    if not isinstance(foreign, bool):
        raise ConfigError(f"foreign_database must be true or false, got {foreign!r}")
    if protocol.holdout is None and protocol.folds > len(y):
        raise ConfigError(f"cv must be at most the number of rows ({len(y)}), got "
                          f"{protocol.folds}")
    try:
        protocol.splits(y)
    except EvaluationError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    guard = None if guard is None else Guard(
        guard["timings"][0], guard["timings"][1], guard["target_overrun"], guard["levels"],
        guard["score"], f"config calibration_timings {guard['file']}")
    plan = BuildPlan(X, y, model, config["learner"], specs, protocol, store, n_min, n_max,
                     alpha=alpha, delta=delta, cost_unit=unit, seed=seed,
                     executor=executor if executor is not None else config.get("executor"),
                     allow_foreign_database=foreign, guard=guard, traversal=traversal,
                     max_expansions=cap)
    try:
        outcome = run_build(plan)
    except ExecutorError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    index = outcome.index
    info = index.info
    out(f"built {data} with {config['learner']}: {info['expansions']} of "
        f"{info['lattice_size']} feature sets trained ({info['trained']} new, "
        f"{info['cache_hits']} reused) in {outcome.seconds:.1f} s; "
        f"{info['candidates']} candidates, {info['ranges']} ranges, {info['entries']} skyline "
        f"entries; alpha={alpha:g}, delta={delta:g}, domain [{n_min:g}, {n_max:g}], costs in "
        f"{unit}")
    out(_exploration_line(info))
    if specs:
        out(f"budgeted: {outcome.budgeted_candidates} candidates from "
            f"{', '.join(s['learner'] for s in specs)}; in the index by learner: "
            + ", ".join(f"{k} {v}" for k, v in sorted(outcome.learners.items())))
    out(f"evaluation: {protocol} for every learner; accuracies are fold means +- their "
        f"standard error")
    out(f"stored as build {info['build_id']} in {store}")
    if outcome.guarded is None:
        return index
    guarded = outcome.guarded
    overrun = guarded.info["overrun"]
    out(f"guarded for overrun {overrun['target_overrun']:g} on {overrun['items']} held-out "
        f"items of {config['calibration_timings']} (score {overrun['score']}; levels "
        f"{', '.join(f'{v:g}' for v in guarded.overrun_levels())}): published build "
        f"{guarded.info['build_id']}")
    return guarded


def _exploration(config: Mapping, traversal: Any, cap: Any) -> tuple[str, int | None]:
    """The traversal and training cap (the command line's values over the config's), checked:
    one line naming the key."""
    traversal = config.get("traversal", "complete") if traversal is None else traversal
    if traversal not in TRAVERSALS:
        raise ConfigError(f"traversal must be one of {', '.join(TRAVERSALS)}, got "
                          f"{traversal!r}")
    if cap is None and "max_expansions" not in config:
        return traversal, None
    if cap is not None:
        config = {"max_expansions": cap}
    return traversal, _integer(config, "max_expansions", 0, 1, MAX_EXPANSIONS)


def _exploration_line(info: Mapping[str, Any]) -> str:
    """What the exploration spent against its cap, and what holds (the guarantee, or under a
    cap the bound of :func:`lattice.cap_bound`)."""
    cap = info.get("cap")
    used = (f"{info['trained']} new trainings of a cap of {cap}" if cap is not None
            else f"{info['trained']} new trainings, no cap")
    if info["complete"]:
        held = f"lattice covered: every lookup is within alpha={info['alpha']:g} of the best set"
    else:
        held = ("lattice not covered: no alpha guarantee; lattice.cap_bound(exploration, size, "
                "budget) bounds the accuracy any untrained set could reach from the expansions "
                "made")
    return f"exploration: traversal {info['traversal']}, {used}; {held}"


def _guard(config: Mapping, folder: Path, atoms: Any) -> dict[str, Any] | None:
    """The in-situ guard a config asks for (``target_overrun``, ``overrun_levels``,
    ``overrun_score``, ``calibration_timings``), its timings read and checked before any
    training; None when it asks for none."""
    keys = ("overrun_levels", "overrun_score", "calibration_timings")
    if "target_overrun" not in config:
        given = [k for k in keys if k in config]
        if given:
            raise ConfigError(f"{given[0]} needs target_overrun (the rate the guard promises)")
        return None
    q = config["target_overrun"]
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q < 1:
        raise ConfigError(f"target_overrun must be a number in (0, 1), got {q!r}")
    levels = config.get("overrun_levels", [])
    if not isinstance(levels, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1
            for v in levels):
        raise ConfigError(f"overrun_levels must be a list of numbers in (0, 1), got {levels!r}")
    score = config.get("overrun_score", "auto")
    if score not in ("auto", "ratio", "excess", "best"):
        raise ConfigError(f"overrun_score must be auto, ratio, excess or best, got {score!r}")
    file = config.get("calibration_timings")
    if not isinstance(file, str) or not file:
        raise ConfigError("target_overrun needs calibration_timings: a CSV file of held-out "
                          "items ('size' and one column of seconds per atom, timed in situ)")
    path = Path(file) if Path(file).is_absolute() else Path(folder) / file
    try:
        timings = read_timings_file(str(path), atoms, "calibration_timings")
    except InvalidArgumentError as exc:
        raise ConfigError(str(exc)) from None
    for level in (q, *levels):
        least = min_calibration_items(level / 2 if score == "best" else level)
        if timings[0].size < least:
            raise ConfigError(f"calibration_timings {file!r}: overrun {level:g} with score "
                              f"{score!r} needs at least {least} held-out items, got "
                              f"{timings[0].size}")
    return {"target_overrun": float(q), "levels": [float(v) for v in levels], "score": score,
            "file": file, "timings": timings}


def check_keys(config: Mapping[str, Any]) -> None:
    """Refuse a key a config does not take: a retired one with what replaced it, any other
    (a private ``_dir`` too) with the closest accepted key, listing only accepted keys.

    Runtime complexity: O(keys * accepted keys).
    """
    retired = [k for k in _RETIRED if k in config]
    if retired:
        raise ConfigError(f"{' and '.join(retired)} belonged to the warm-loop profiling; "
                          "profile = true now times the features in situ: give quantile "
                          "(default 0.95) and degree (default 2) instead")
    unknown = sorted(str(k) for k in config if k not in _KEYS)
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown}{did_you_mean(unknown[0], sorted(_KEYS))}; "
                          f"accepted: {', '.join(sorted(_KEYS))}")


def _protocol(config: Mapping, seed: int) -> Any:
    """The build's one evaluation protocol: ``cv`` folds (default 3) or a ``holdout`` share,
    seeded by ``seed``."""
    if "holdout" in config:
        if "cv" in config:
            raise ConfigError("give cv (folds) or holdout (a held-out share), not both")
        holdout = _number(config, "holdout", 0.3, 0.0)
        if not 0.0 < holdout < 1.0:
            raise ConfigError(f"holdout must be in (0, 1), got {holdout!r}")
        return evaluation_protocol(holdout=holdout, seed=seed)
    return evaluation_protocol(folds=_integer(config, "cv", 3, 2), seed=seed)


def _digits(config: Mapping, seed: int, out: Callable[[str], Any]) -> tuple:
    from polydom.app.workloads.images import FEATURES, load_digits_workload

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
        # 60 digits, each rendered at one side drawn from the config's sides
        spots = rng.choice(len(wl.items), size=min(60, len(wl.items)), replace=False)
        costs = _in_situ_curves(config, fz, [wl.items[i] for i in spots], list(fz.names),
                                seed, out)
    else:
        costs = _costs(config, fz.names)
    return X, y, fz.columns, costs, (float(min(sides)), float(max(sides)))
