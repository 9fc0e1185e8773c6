"""build_index: the end-to-end API, lattice exploration plus any extra candidates, indexed."""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

import lattice
from polydom.curves.candidate import Candidate
from polydom.curves.cost_model import CostModel
from polydom.curves.domain import check_domain, shown
from polydom.curves.units import check_unit_text
from polydom.errors import (
    ArgumentTypeError,
    BuildPublishedError,
    InvalidArgumentError,
    UnknownArgumentError,
    did_you_mean,
)
from polydom.index.built import Index
from polydom.index.polydom_index import PolyDomIndex
from polydom.index.sweep import (
    MAX_CROSSINGS,
    check_max_crossings,
    check_sweep_work,
    coefficient_matrix,
)
from storage import IndexStore

__all__ = ["build_index"]


def build_index(
    costs: Mapping[str, Any],
    learner: Any,
    alpha: float = 1.0,
    delta: float = 0.0,
    n_min: float = 0.0,
    n_max: float = math.inf,
    extra_candidates: Iterable[Candidate] = (),
    cache: MutableMapping | None = None,
    store: str | None = None,
    executor: Any = None,
    progress: Callable[[lattice.Expansion], Any] | None = None,
    cost_unit: str = "units",
    store_key: bytes | str | None = None,
    allow_foreign_database: bool = False,
    keep_trained: bool = False,
    max_crossings: int = MAX_CROSSINGS,
    **explore_options: Any,
) -> Index:
    """Explore the feature-set lattice with ``learner``, then index the candidates.

    The lattice explorer (:func:`lattice.explore`) trains the feature sets it cannot prune,
    candidate pruning keeps the undominated ones (exact dominance by default, so the
    end-to-end factor is ``alpha``), ``extra_candidates`` (for instance from budgeted
    learners) join the pool, and :class:`polydom.PolyDomIndex` sweeps them into ranges of
    sizes with one skyline each.  Every candidate's payload is its fitted model.

    Parameters
    ----------
    costs : polydom.CostModel or mapping of str to CostCurve or str or coefficients
        The cost model: atomic features with cost curves (non-negative on
        ``[n_min, n_max]``), and optionally bundles of atoms (the lattice's features) and
        the atoms' columns.  A plain mapping is a model of atoms only.
    learner : object with ``expand(frozenset) -> Expansion``
        For example :class:`learners.SklearnLearner`; its ``feature_columns()`` become the
        index's ``columns`` (what :meth:`Index.predict` cuts out of a row).
    alpha : float, default 1.0
        Approximation factor: every lookup is within ``alpha`` of the best of all 2**m sets
        that fit (given monotone accuracy up to ``delta``).
    delta : float, default 0.0
        Tolerated violation of monotone accuracy.
    n_min, n_max : float
        The size domain of the index.
    extra_candidates : iterable of Candidate
        More candidates for the pool (keys must differ from the lattice's tuple keys), for
        instance a budgeted learner's sweep over single-column atoms next to a lattice over
        bundles: every candidate's ``needs`` must name atoms of the cost model.
    cache : mutable mapping of frozenset to Expansion, optional
        Earlier expansions (a database-backed mapping makes builds resumable): consulted
        before training, and every new expansion is written as soon as it is trained.
    store : str, optional
        A SQLAlchemy URL or a file path (SQLite).  The build is persisted as it goes: each
        expansion is committed as soon as it is trained, so a build that dies and is started
        again with the same arguments retrains nothing that was stored; the finished index
        (candidates, ranges, skylines, models) becomes current in one transaction.  Open it
        with :func:`polydom.open_index`.  Not together with ``cache``.
    executor : None, str, lattice.executor.Executor or distributed.Client
        Where the trainings run: in-process (default), ``"processes:N"``,
        ``"dask://host:port"`` or a Dask client (see :func:`lattice.make_executor`).  It is
        resolved (a scheduler connected) before anything is stored or trained; results are
        committed to the store by this process as they arrive, so workers need no access to
        the database.  The index is the same with every executor, and the executor is not
        part of the build's parameters (a build may resume on another one).
    progress : callable, optional
        Called with each newly trained expansion as it arrives (a progress bar).
    cost_unit : str, default "units"
        The unit of every cost and budget (``"s"`` for measured seconds, ``"ms"``, ...):
        kept in ``info["cost_unit"]``, stored with the build, printed by the command line
        and the plots.
    store_key : bytes or str, optional
        Key that signs the store's blobs and seals (HMAC); default ``POLYDOM_STORE_KEY``.
    allow_foreign_database : bool, default False
        Let ``store`` add polydom's tables to a non-empty database of another program
        (refused by default, naming the tables found).
    keep_trained : bool, default False
        Keep every trained set as a candidate, dominated ones too (no candidate pruning;
        the sweep still serves only skyline entries).  Costs more stored candidates and
        buys a re-sweep on other curves that can choose any set that was trained: what
        :meth:`Index.calibrated` and :func:`polydom.recalibrate` need when per-set factors
        reorder the sets' costs (docs/in_situ.md, "Calibrate, then prune").
    max_crossings : int, default 500,000
        Bound of the index sweep's work (:meth:`polydom.PolyDomIndex.build`): candidates
        whose cost curves cross more often are refused naming the limit (before any
        training when ``extra_candidates`` alone do).
    **explore_options
        Passed to :func:`lattice.explore` (``traversal``, ``scope``, ``cost_pruning``,
        ``candidate_alpha``, ``max_expansions``, ...).

    Raises
    ------
    TypeError
        If ``costs`` is not a mapping, ``learner`` has no ``expand``, or ``store`` is not a
        URL or path.
    ValueError
        If ``costs`` is empty, or any argument is out of range (see :func:`lattice.explore`).

    Returns
    -------
    Index
        ``info`` holds alpha, delta, the domain, counts of expansions / trainings / cache
        hits / candidates, and the index shape.

    Raises
    ------
    polydom.errors.ExecutorError
        On a bad ``executor``, before anything is stored or trained.

    Runtime complexity: the exploration (E trainings, O(2**m * E) checks) plus the index
    build, O(K * S) dominance tests and O((S + X) log S) for the sweep.

    >>> import learners
    >>> acc = {frozenset(): 0.5, frozenset({"a"}): 0.7, frozenset({"b"}): 0.8,
    ...        frozenset({"a", "b"}): 0.9}
    >>> index = build_index({"a": "1", "b": "n"}, learners.SyntheticLearner(acc.__getitem__))
    >>> index.lookup(size=10.0, budget=5.0).features == frozenset({"a"})
    True
    """
    model, extra = _checked_inputs(costs, learner, n_min, n_max, extra_candidates, store,
                                   cache, cost_unit, keep_trained, max_crossings,
                                   explore_options)
    ex = lattice.make_executor(executor)
    fail = None
    try:
        publish = None
        if store is not None:
            cache, publish, fail = _open_store(store, model, learner, alpha, delta, n_min,
                                               n_max, explore_options, store_key,
                                               allow_foreign_database)
        exploration = lattice.explore(
            costs if not isinstance(costs, CostModel) else model, learner, alpha=alpha,
            delta=delta, cache=cache, n_min=n_min, n_max=n_max, executor=ex,
            progress=progress, **explore_options,
        )
        index = _index(exploration, extra, model, n_min, n_max, cost_unit,
                       _evaluation(learner, extra), keep_trained, max_crossings)
        if publish is not None:
            publish(index)
        return index
    except Exception as exc:  # a stored build is marked failed, with its error; then raised
        if fail is not None:
            with contextlib.suppress(Exception):  # never mask the build's own error
                fail(exc)
        raise
    finally:
        if ex is not executor:
            ex.close()


def _checked_inputs(
    costs: Mapping[str, Any] | CostModel, learner: Any, n_min: float, n_max: float,
    extra_candidates: Iterable[Candidate], store: Any, cache: Any, cost_unit: str,
    keep_trained: bool, max_crossings: int, explore_options: Mapping[str, Any],
) -> tuple[CostModel, list[Candidate]]:
    """Every argument of :func:`build_index` checked before anything is trained or stored:
    the build's cost model and the extra candidates, as lists.

    Runtime complexity: O(K log K) for K extra candidates (the sweep's bound), plus the
    cost model's checks.
    """
    _check_arguments(costs, learner, store, cost_unit)
    _check_explore_options(explore_options)
    if not isinstance(keep_trained, bool):
        raise ArgumentTypeError(f"keep_trained must be True or False, got {keep_trained!r}")
    check_max_crossings(max_crossings)
    extra = list(extra_candidates)
    for c in extra:
        if not isinstance(c, Candidate):
            raise InvalidArgumentError(
                f"extra_candidates must be polydom.Candidate, got {type(c).__name__}"
            )
    model = _cost_model(costs, learner)
    check_needs(extra, model)
    lo, hi = check_domain(n_min, n_max)
    model.check_nonnegative(lo, hi)  # bad input: nothing stored
    if extra:  # the extra candidates alone may cross too often: refused before training
        check_sweep_work(coefficient_matrix([c.cost for c in extra]), lo, hi, max_crossings,
                         [c.accuracy for c in extra])
    if store is not None and cache is not None:
        raise InvalidArgumentError("give either cache or store, not both")
    return model, extra


def _index(
    exploration: Any,
    extra: list[Candidate],
    model: CostModel,
    n_min: float,
    n_max: float,
    cost_unit: str,
    evaluation: dict[str, Any] | None = None,
    keep_trained: bool = False,
    max_crossings: int = MAX_CROSSINGS,
) -> Index:
    """The index over the exploration's candidates (every expanded set with
    ``keep_trained``) and ``extra``, with its ``info``."""
    stats = exploration.stats
    if not exploration.complete:
        spent = (f" ({stats['trained']} trainings of a cap of {stats['cap']}: "
                 f"{stats['seed_trained']} on seed paths, {stats['best_first_trained']} best "
                 "first; lattice.cap_bound bounds what an untrained set could reach)"
                 if stats.get("traversal") == "anytime" else "")
        warnings.warn(
            "the exploration stopped at max_expansions before the lattice was covered; "
            f"the index carries no approximation guarantee{spent}",
            RuntimeWarning,
            stacklevel=3,
        )
    candidates = exploration.all_candidates() if keep_trained else exploration.candidates
    table = PolyDomIndex.build([*candidates, *extra], n_min, n_max, max_crossings)
    info = {
        "alpha": exploration.alpha,
        "delta": exploration.delta,
        "candidate_alpha": exploration.candidate_alpha,
        "n_min": float(n_min),
        "n_max": float(n_max),
        "features": len(exploration.features),
        "lattice_size": 1 << len(exploration.features),
        "expansions": exploration.n_expanded,
        "trained": exploration.stats["trained"],
        "cache_hits": exploration.stats["cache_hits"],
        "fit_seconds": exploration.stats["fit_seconds"],
        "sandwiched": exploration.stats["sandwiched"],
        "cost_pruned": exploration.stats["cost_pruned"],
        "traversal": exploration.stats["traversal"],
        "scope": exploration.stats["scope"],
        "cost_pruning": exploration.stats["cost_pruning"],
        "complete": exploration.complete,
        "cap": stats.get("cap"),
        "candidates": len(candidates),
        "extra_candidates": len(extra),
        "learners": sorted({c.learner or "?" for c in [*candidates, *extra]}),
        "ranges": len(table),
        "entries": table.entries,
        "cost_unit": cost_unit,
        "evaluation": evaluation,
    }
    if keep_trained:
        info["keep_trained"] = True
    return Index(table, model, info=info)


def _evaluation(learner: Any, extra: list[Candidate]) -> dict[str, Any] | None:
    """How the lattice's learner scores (its ``evaluation_description()``, stored with the
    build); warns when an extra candidate was scored on another number of splits, whose
    accuracy then does not compare with the lattice's."""
    describe = getattr(learner, "evaluation_description", None)
    if not callable(describe):
        return None
    evaluation = describe()
    folds = evaluation.get("folds")
    if folds:  # every split of every repeat (repeated cross-validation)
        folds = int(folds) * int(evaluation.get("repeats", 1))
    other = sorted({str(c.learner) for c in extra
                    if c.fold_scores and len(c.fold_scores) != folds})
    if folds and other:
        warnings.warn(
            f"candidates of {', '.join(other)} were scored on other splits than the "
            f"lattice's {folds}: their accuracies do not compare (score every learner on one "
            "learners.EvaluationProtocol)",
            RuntimeWarning,
            stacklevel=3,
        )
    return evaluation


def _check_arguments(costs: Any, learner: Any, store: Any, cost_unit: Any) -> None:
    """Refuse what would build nothing useful, before any store is touched."""
    if not isinstance(costs, (CostModel, Mapping)):
        raise ArgumentTypeError(
            f"costs must be a CostModel or a mapping of feature name to cost curve, got "
            f"{shown(costs)} ({type(costs).__name__})"
        )
    if not (costs.features if isinstance(costs, CostModel) else costs):
        raise InvalidArgumentError(
            "costs must name at least one feature (an empty lattice indexes only the empty "
            "model)"
        )
    if not callable(getattr(learner, "expand", None)):
        raise ArgumentTypeError(
            f"learner must have an expand(features) method (a lattice.Learner), got "
            f"{shown(learner)} ({type(learner).__name__})"
        )
    lattice.learner_name(learner)  # a learner's bad name is refused before the store
    if store is not None and not isinstance(store, (str, os.PathLike)):
        raise ArgumentTypeError(
            f"store must be a SQLAlchemy URL or a file path, got {shown(store)} "
            f"({type(store).__name__})"
        )
    if not isinstance(cost_unit, str) or not cost_unit.strip():
        raise ArgumentTypeError(
            f"cost_unit must be a non-empty string such as 's', got {cost_unit!r}")
    check_unit_text(cost_unit)


def _check_explore_options(options: Mapping[str, Any]) -> None:
    """Refuse a keyword that neither ``build_index`` nor :func:`lattice.explore` takes,
    naming ``build_index`` (not the explorer it passes options to) and the closest name."""
    passed = set(inspect.signature(build_index).parameters) - {"explore_options"}
    own = {name for name, p in inspect.signature(lattice.explore).parameters.items()
           if p.kind is p.KEYWORD_ONLY or p.default is not p.empty} - passed
    known = sorted(passed | {n for n in own if not n.startswith("_")})
    for name in sorted(options):
        if name not in own or name.startswith("_"):
            raise UnknownArgumentError(
                f"build_index() got an unexpected keyword argument {name!r}"
                f"{did_you_mean(name, known)}")


def check_needs(candidates: Iterable[Candidate], model: CostModel) -> None:
    """Every candidate's needs must name atoms of ``model`` (with columns, when it has some).

    Runtime complexity: O(total needs).

    Raises
    ------
    ValueError
        Naming the candidate and the atom.
    """
    atoms = model.atoms
    for c in candidates:
        for atom in c.needs:
            if atom not in atoms:
                raise InvalidArgumentError(
                    f"candidate {c.key!r} needs atomic feature {atom!r}, which has no cost "
                    f"curve in the cost model (atoms: {list(atoms)})"
                )
            if model.columns and atom not in model.columns:
                raise InvalidArgumentError(
                    f"candidate {c.key!r} needs atomic feature {atom!r}, which has no columns "
                    "in the cost model"
                )


def _cost_model(costs: CostModel | Mapping[str, Any], learner: Any) -> CostModel:
    """The index's cost model: ``costs`` with the learner's columns when it declares them.

    For a model of atoms only, the learner's ``feature_columns()`` become the atoms'
    columns.  A model with bundles must carry its atoms' columns itself, and they must give
    every bundle the columns the learner trains it on.
    """
    if not isinstance(costs, (CostModel, Mapping)):
        raise InvalidArgumentError(
            f"costs must be a CostModel or a mapping name -> curve, got {costs!r}")
    model = CostModel.coerce(costs)
    get_columns = getattr(learner, "feature_columns", None)
    if get_columns is None:
        return model
    learned = get_columns()
    if set(learned) != set(model.features):
        raise InvalidArgumentError(
            f"costs name features {sorted(model.features)!r} but the learner has "
            f"{sorted(learned)!r}"
        )
    if not model.bundles:
        if not model.columns:
            return model.with_columns(learned)
        for name in model.features:
            if model.columns_of([name]) != sorted(learned[name]):
                raise InvalidArgumentError(
                    f"columns of atom {name!r} differ: cost model {model.columns_of([name])}, "
                    f"learner {sorted(learned[name])}"
                )
        return model
    if not model.has_columns:
        raise InvalidArgumentError(
            "a CostModel with bundles needs columns for every atom when the learner has "
            f"columns; atoms without: {sorted(set(model.atoms) - set(model.columns))}"
        )
    for name in model.features:
        if model.columns_of([name]) != sorted(learned[name]):
            raise InvalidArgumentError(
                f"columns of bundle {name!r} differ: cost model {model.columns_of([name])}, "
                f"learner {sorted(learned[name])}"
            )
    return model


def _open_store(
    url: str,
    model: CostModel,
    learner: Any,
    alpha: float,
    delta: float,
    n_min: float,
    n_max: float,
    explore_options: Mapping[str, Any],
    key: bytes | str | None = None,
    allow_foreign: bool = False,
) -> tuple[MutableMapping, Any, Any]:
    """Register (or resume) a build in the store: its expansion cache, a publisher, and a
    function that marks the build failed."""
    describe = getattr(learner, "describe", None)
    params = {
        "alpha": float(alpha),
        "delta": float(delta),
        "learner": describe() if describe is not None else type(learner).__qualname__,
        "domain": [float(n_min), float(n_max) if math.isfinite(n_max) else "inf"],
        "explore": {k: repr(v) for k, v in sorted(explore_options.items())},
    }
    st = IndexStore(url, key=key, allow_foreign=allow_foreign)
    build_id = st.begin_build(params, model, learner=lattice.learner_name(learner))

    def publish(index: Index) -> None:
        try:
            st.publish(build_id, index)
        except BuildPublishedError:
            pass  # another process built the same arguments into this build id first
        finally:  # the connections close now (a WAL store checkpoints), not at collection
            st.close()
        index.info["store"] = str(url)
        index.info["build_id"] = build_id

    def fail(error: BaseException) -> None:
        try:
            st.fail_build(build_id, error)
        finally:
            st.close()

    return st.expansion_cache(build_id), publish, fail
