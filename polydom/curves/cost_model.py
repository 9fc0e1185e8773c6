"""CostModel: atomic features with cost curves, named bundles of them, and their columns.

The unit of cost is an *atomic feature* (an *atom*): what is computed and paid once per
item (a column, or columns computed together), with a cost curve ``c_a(n)``.  A *bundle* is
a named set of atoms (a lattice feature such as ``"mean"`` = the ten "mean" columns);
bundles may share atoms (two image features that both need the same edge map), and a set of
names pays each of its atoms once.  Every candidate states the atoms it *needs*, with the
probability that each is needed (1 for a static model), and its expected cost is
``sum_a p_a c_a(n)``, so candidates from any learner compare on one scale.

``columns`` gives each atom its columns of the training matrix; :meth:`CostModel.columns_of`
is *the* column order in which every model receives its columns (the sorted union of its
atoms' columns), whatever learner trained it.

*A set's cost as serving pays it.*  Beyond its atoms, a served set pays a *start*
(``start``: what the first feature of a set pays on a fresh item, the cold caches and
branch history, the item's data brought in; once per set however many atoms it has) and
the *shared steps* its atoms use (``steps``: named computations with their own curves, such
as the image gradients that HOG and a Harris tensor both need; ``uses`` says which atoms
use which steps), each once per set however many of its atoms use it.  Atoms, steps and
the start are the model's *units* (:meth:`CostModel.units_of`): a set of names costs the
sum of the curves of the units it uses, each once (:meth:`CostModel.cost`).  This is the one
mechanism by which bundles sharing atoms pay them once, carried one level down.

*Invariants.*  (1) Every set's cost is a polynomial in ``n`` (a sum of polynomials), so the
index and its exactness proofs are unchanged.  (2) Cost is monotone in the set: ``A <= B``
(as sets of names) implies ``units_of(A) <= units_of(B)``, hence ``cost(A)(n) <=
cost(B)(n)`` wherever every unit's curve is non-negative (:meth:`CostModel.check_nonnegative`
checks atoms, steps and the start), which the lattice's pruning rules rely on.  (3) With
no steps and no start, costs are those of the atoms alone, as before.

A plain mapping ``{name: curve}`` is a cost model of atoms only
(:meth:`CostModel.coerce`), so code written before bundles keeps working.

*Checked once, then trusted.*  A model is checked when it is made (names, curves, bundles,
columns) and, on a size domain, the first time :meth:`CostModel.check_nonnegative` (or
:meth:`CostModel.negative_atom`) finds every atom non-negative there; the model remembers
that domain, so a later check on a domain inside it is O(1), and :meth:`with_columns` keeps
both.  A build makes its model once at the door (a config, ``build_index``) and passes the
object on: the lattice's ``FeatureSpace``, the index and the store take it as it is (the
``check_input=False`` pattern of scikit-learn, carried by the object).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from polydom.curves.cost_curve import CostCurve
from polydom.curves.domain import check_column, check_feature_name
from polydom.errors import InvalidArgumentError

__all__ = ["START", "CostModel"]

#: The unit name of a model's start (:meth:`CostModel.units_of`); no atom or step may take it.
START = "<start>"


def _name(value: Any, what: str) -> str:
    return check_feature_name(value, what)


class CostModel:
    """Atomic features with cost curves, bundles of atoms, and the columns of each atom.

    Parameters
    ----------
    atoms : mapping of str to CostCurve or str or coefficients
        Cost curve of every atomic feature (computed and paid once per item).  Order kept.
    bundles : mapping of str to iterable of str, optional
        Named sets of atoms (may share atoms); a bundle name may not be an atom name.
    columns : mapping of str to iterable of int, optional
        Columns of each atom in the training matrix; two atoms may not claim one column.
        Atoms without an entry have no columns (an index over them cannot cut rows).
    steps : mapping of str to CostCurve or str or coefficients, optional
        Shared steps: named computations that atoms use (``uses``), each paid once by a set
        however many of its atoms use it.  A step name may not be an atom or bundle name.
    uses : mapping of str to iterable of str, optional
        The steps each atom uses (atoms not listed use none); every step is used by some atom.
    start : CostCurve or str or coefficients, optional
        What a set pays once on a fresh item before its atoms (None: nothing).  The empty
        set pays no start.

    >>> cm = CostModel({"edges": "2*n", "hog": "n", "lbp": "3"},
    ...                bundles={"shape": ["edges", "hog"], "texture": ["edges", "lbp"]})
    >>> cm.features
    ('shape', 'texture')
    >>> cm.cost(["shape", "texture"])(1.0)     # edges paid once: 2 + 1 + 3
    6.0
    >>> sorted(cm.atoms_of(["texture"]))
    ['edges', 'lbp']
    >>> img = CostModel({"hog": "n", "harris": "2*n", "mean": "1"}, steps={"gradient": "3*n"},
    ...                 uses={"hog": ["gradient"], "harris": ["gradient"]}, start="0.5")
    >>> img.cost(["hog", "harris"])(1.0)     # start + hog + harris + the gradient once
    6.5
    >>> sorted(img.units_of(["hog", "mean"]))
    ['<start>', 'gradient', 'hog', 'mean']

    Raises
    ------
    ValueError
        Naming the thing: atoms not a mapping, a name that is not a string, a curve that cannot be
        parsed, an empty bundle, a bundle naming an unknown atom or named like an atom,
        columns of an unknown atom, a negative column, two atoms claiming one column, a step
        named like an atom or bundle, a use of an unknown atom or step, a step no atom uses.
    """

    __slots__ = ("_atoms", "_bundles", "_columns", "_order", "_coef", "_nonnegative_on",
                 "_steps", "_uses", "_start", "_units", "_unit_order", "_unit_coef")

    def __init__(
        self,
        atoms: Mapping[str, Any],
        bundles: Mapping[str, Iterable[str]] | None = None,
        columns: Mapping[str, Iterable[int]] | None = None,
        steps: Mapping[str, Any] | None = None,
        uses: Mapping[str, Iterable[str]] | None = None,
        start: Any = None,
    ) -> None:
        if isinstance(atoms, CostModel) or not isinstance(atoms, Mapping):
            raise InvalidArgumentError(f"atoms must be a mapping name -> cost curve, got {atoms!r}")
        curves: dict[str, CostCurve] = {}
        for name, curve in atoms.items():
            _name(name, "atom names")
            try:
                curves[name] = CostCurve.coerce(curve)
            except ValueError as exc:
                raise InvalidArgumentError(f"cost curve of atom {name!r}: {exc}") from None
        self._atoms = curves
        self._order = {name: i for i, name in enumerate(curves)}
        self._bundles: dict[str, frozenset] = {}
        if bundles is not None:
            if not isinstance(bundles, Mapping):
                raise InvalidArgumentError(
                    f"bundles must be a mapping name -> atom names, got {bundles!r}")
            for name, members in bundles.items():
                _name(name, "bundle names")
                if name in curves:
                    raise InvalidArgumentError(f"bundle {name!r} has the name of an atom")
                if isinstance(members, str) or not isinstance(members, Iterable):
                    raise InvalidArgumentError(
                        f"bundle {name!r} must list atom names, got {members!r}"
                    )
                members = frozenset(members)
                if not members:
                    raise InvalidArgumentError(f"bundle {name!r} is empty")
                unknown = sorted(map(str, members - curves.keys()))
                if unknown:
                    raise InvalidArgumentError(
                        f"bundle {name!r} names unknown atom(s) {unknown}; atoms: {list(curves)}"
                    )
                self._bundles[name] = members
        self._columns = _checked_columns(columns, curves)
        width = max((c.coefficients.size for c in curves.values()), default=1)
        self._coef = np.zeros((len(curves), width))
        for i, c in enumerate(curves.values()):
            self._coef[i, : c.coefficients.size] = c.coefficients
        self._steps, self._uses, self._start = _checked_steps(
            steps, uses, start, curves, self._bundles)
        self._set_units()
        #: The widest domain on which every unit was found non-negative (None: not yet).
        self._nonnegative_on: tuple[float, float] | None = None

    def _set_units(self) -> None:
        """The units (atoms, steps, start) in order, and their coefficient matrix."""
        units = dict(self._atoms)
        units.update(self._steps)
        if self._start is not None:
            units[START] = self._start
        self._units = units
        self._unit_order = {name: i for i, name in enumerate(units)}
        width = max((c.coefficients.size for c in units.values()), default=1)
        self._unit_coef = np.zeros((len(units), width))
        for i, c in enumerate(units.values()):
            self._unit_coef[i, : c.coefficients.size] = c.coefficients

    # ------------------------------------------------------------------ construction
    @classmethod
    def coerce(cls, value: CostModel | Mapping[str, Any]) -> CostModel:
        """``value`` itself when a CostModel; a plain mapping ``{name: curve}`` = atoms only.

        Runtime complexity: O(1) for a CostModel, O(atoms * degree) for a mapping.

        >>> CostModel.coerce({"a": "1", "b": "n"}).features
        ('a', 'b')
        """
        if isinstance(value, CostModel):
            return value
        return cls(value)

    def with_columns(self, columns: Mapping[str, Iterable[int]]) -> CostModel:
        """The same atoms and bundles with ``columns`` (replacing any columns).

        The atoms, bundles and any domain they were checked on are taken as they are (they
        do not change); only ``columns`` are checked.

        Runtime complexity: O(atoms + columns).
        """
        out = object.__new__(CostModel)
        out._atoms, out._bundles, out._order = self._atoms, self._bundles, self._order
        out._coef, out._nonnegative_on = self._coef, self._nonnegative_on
        out._steps, out._uses, out._start = self._steps, self._uses, self._start
        out._units, out._unit_order, out._unit_coef = (
            self._units, self._unit_order, self._unit_coef)
        out._columns = _checked_columns(columns, self._atoms)
        return out

    def with_curves(
        self, atoms: Mapping[str, Any] | None = None, steps: Mapping[str, Any] | None = None,
        start: Any = None,
    ) -> CostModel:
        """The same structure (bundles, columns, steps' users) with some curves replaced.

        ``atoms`` and ``steps`` map names of this model's atoms and steps to new curves
        (the others keep theirs); ``start`` replaces the start (a model without one gains
        it).  The result is checked as a new model is.

        Runtime complexity: O(units * degree + columns).

        >>> cm = CostModel({"a": "1", "b": "n"}, steps={"g": "2"}, uses={"a": ["g"]})
        >>> cm.with_curves(atoms={"a": "3"}, start="1").cost(["a"])(1.0)
        6.0

        Raises
        ------
        ValueError
            Naming an atom or step this model does not have, or a curve that does not parse.
        """
        atoms, steps = dict(atoms or {}), dict(steps or {})
        for given, known, what in ((atoms, self._atoms, "atom"), (steps, self._steps, "step")):
            unknown = sorted(map(str, set(given) - set(known)))
            if unknown:
                raise InvalidArgumentError(
                    f"unknown {what}(s) {unknown}; the model's {what}s: {list(known)}")
        return CostModel(
            {**self._atoms, **atoms}, {k: sorted(v) for k, v in self._bundles.items()} or None,
            self.columns or None, steps={**self._steps, **steps} or None,
            uses={a: sorted(v) for a, v in self._uses.items()} or None,
            start=self._start if start is None else start)

    # ------------------------------------------------------------------ views
    @property
    def atoms(self) -> dict[str, CostCurve]:
        """Cost curve of every atom, in the model's atom order (a copy)."""
        return dict(self._atoms)

    @property
    def bundles(self) -> dict[str, frozenset]:
        """Atoms of every bundle (a copy; empty when the model has no bundles)."""
        return dict(self._bundles)

    @property
    def steps(self) -> dict[str, CostCurve]:
        """Cost curve of every shared step (a copy; empty when the model has none)."""
        return dict(self._steps)

    @property
    def uses(self) -> dict[str, frozenset]:
        """The steps each atom uses (a copy; atoms that use none are left out)."""
        return dict(self._uses)

    @property
    def start(self) -> CostCurve | None:
        """What a non-empty set pays once before its atoms (None: nothing)."""
        return self._start

    @property
    def units(self) -> dict[str, CostCurve]:
        """Cost curve of every unit: the atoms, then the steps, then :data:`START` when the
        model has a start (a copy)."""
        return dict(self._units)

    @property
    def shares(self) -> bool:
        """Whether a set's cost may be below the sum of its features' costs alone: bundles
        (which may share atoms), steps or a start.  O(1)."""
        return bool(self._bundles or self._steps or self._start is not None)

    @property
    def columns(self) -> dict[str, list[int]]:
        """Columns of every atom that has some (a copy)."""
        return {name: list(cols) for name, cols in self._columns.items()}

    @property
    def features(self) -> tuple[str, ...]:
        """The lattice's features: the bundles when there are any, else the atoms."""
        return tuple(self._bundles or self._atoms)

    @property
    def has_columns(self) -> bool:
        """Whether every atom has columns."""
        return len(self._columns) == len(self._atoms)

    def __repr__(self) -> str:
        parts = [f"atoms={list(self._atoms)}"]
        if self._bundles:
            parts.append(f"bundles={ {k: sorted(v) for k, v in self._bundles.items()} }")
        if self._steps:
            parts.append(f"steps={ {k: sorted(v) for k, v in self._step_users().items()} }")
        if self._start is not None:
            parts.append(f"start={self._start}")
        return f"CostModel({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CostModel):
            return NotImplemented
        return (
            list(self._atoms.items()) == list(other._atoms.items())
            and self._bundles == other._bundles
            and self._columns == other._columns
            and list(self._steps.items()) == list(other._steps.items())
            and self._uses == other._uses
            and self._start == other._start
        )

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------------ costs
    def atoms_of(self, names: Iterable[str]) -> frozenset:
        """The atoms of ``names`` (bundle or atom names): the union of the bundles' atoms.

        Runtime complexity: O(total atoms of the names).

        >>> cm = CostModel({"a": "1", "b": "2"}, bundles={"ab": ["a", "b"]})
        >>> sorted(cm.atoms_of(["ab", "a"]))
        ['a', 'b']

        Raises
        ------
        ValueError
            Naming the first unknown name.
        """
        if isinstance(names, str):
            names = (names,)
        out: set[str] = set()
        for name in names:
            members = self._bundles.get(name)
            if members is not None:
                out |= members
            elif name in self._atoms:
                out.add(name)
            else:
                raise InvalidArgumentError(
                    f"unknown feature {name!r}: neither an atom {list(self._atoms)} nor a "
                    f"bundle {list(self._bundles)}"
                )
        return frozenset(out)

    def _ordered(self, atoms: Iterable[str]) -> list[str]:
        return sorted(atoms, key=self._order.__getitem__)

    def _step_users(self) -> dict[str, set[str]]:
        users: dict[str, set[str]] = {s: set() for s in self._steps}
        for atom, steps in self._uses.items():
            for step in steps:
                users[step].add(atom)
        return users

    def steps_of(self, names: Iterable[str]) -> frozenset:
        """The shared steps the atoms of ``names`` use (each once).

        Runtime complexity: O(atoms of the names * their steps).

        >>> CostModel({"a": "1", "b": "1"}, steps={"g": "1"},
        ...           uses={"a": ["g"], "b": ["g"]}).steps_of(["a", "b"])
        frozenset({'g'})
        """
        out: set[str] = set()
        for atom in self.atoms_of(names):
            out |= self._uses.get(atom, frozenset())
        return frozenset(out)

    def units_of(self, names: Iterable[str]) -> frozenset:
        """What a set of names pays, each once: its atoms, the steps they use, and the
        start (:data:`START`) when the set is not empty and the model has one.

        Monotone: a superset of names has a superset of units.  Runtime complexity:
        O(atoms of the names * their steps).

        Raises
        ------
        ValueError
            Naming the first unknown name.
        """
        atoms = self.atoms_of(names)
        out = set(atoms)
        for atom in atoms:
            out |= self._uses.get(atom, frozenset())
        if atoms and self._start is not None:
            out.add(START)
        return frozenset(out)

    def cost(self, names: Iterable[str]) -> CostCurve:
        """Cost curve of a set of names: each of its units (atoms, the shared steps they
        use, the start) paid once.  Monotone in the set where the units' curves are
        non-negative (module docstring); the empty set costs 0.

        Runtime complexity: O(units * degree).

        >>> CostModel({"a": "1", "b": "n"}).cost(["a", "b"])(4.0)
        5.0
        >>> CostModel({"a": "1", "b": "n"}, start="2").cost(["a", "b"])(4.0)
        7.0
        """
        units = sorted(self.units_of(names), key=self._unit_order.__getitem__)
        return CostCurve.total([self._units[u] for u in units] or [CostCurve([0.0])])

    def _needs(self, needs: Mapping[str, float]) -> dict[str, float]:
        if not isinstance(needs, Mapping):
            raise InvalidArgumentError(
                f"needs must be a mapping atom -> probability, got {needs!r}")
        out = {}
        for atom, p in needs.items():
            if atom not in self._atoms:
                raise InvalidArgumentError(
                    f"needs names {atom!r}, which is not an atom with a cost curve; "
                    f"atoms: {list(self._atoms)}"
                )
            p = float(p)
            if not (0.0 <= p <= 1.0):
                raise InvalidArgumentError(
                    f"probability of needing {atom!r} must be in [0, 1], got {p!r}")
            out[atom] = p
        return out

    def unit_probabilities(self, needs: Mapping[str, float]) -> dict[str, float]:
        """The probability with which needs ``{atom: probability}`` pay each unit.

        An atom: its own probability.  A step or the start: ``min(1, sum of the
        probabilities of the atoms that pay it)``, the union bound, an upper bound of the
        probability that at least one of them is needed, exact when one of them is needed
        with probability 1 (every static model) or only one atom pays it.  Units with
        probability 0 are left out.

        Runtime complexity: O(atoms * steps).
        """
        needs = self._needs(needs)
        out = {a: p for a, p in needs.items() if p > 0.0}
        for step, users in self._step_users().items():
            ps = [needs[a] for a in users if a in needs]
            p = 1.0 if any(q >= 1.0 for q in ps) else min(1.0, sum(ps))
            if p > 0.0:
                out[step] = p
        if self._start is not None and out:
            total = sum(needs.values())
            out[START] = 1.0 if any(q >= 1.0 for q in needs.values()) else min(1.0, total)
        return out

    def expected_cost(self, needs: Mapping[str, float]) -> CostCurve:
        """Expected cost ``sum_u p_u c_u(n)`` of needs ``{atom: probability}`` over the
        units they pay (:meth:`unit_probabilities`: exact for a static model, whose needs
        are all 1; for an adaptive one a step's and the start's probability is bounded
        above by the union bound, so the expected cost is never under-stated).

        Runtime complexity: O(units * degree).

        >>> CostModel({"a": "2", "b": "n"}).expected_cost({"a": 0.5, "b": 1.0})(3.0)
        4.0
        >>> CostModel({"a": "2", "b": "n"}, start="1").expected_cost({"a": 0.5, "b": 1.0})(3.0)
        5.0

        Raises
        ------
        ValueError
            If a need names something that is not an atom, or a probability is outside
            ``[0, 1]``.
        """
        probs = self.unit_probabilities(needs)
        terms = [probs[u] * self._units[u]
                 for u in sorted(probs, key=self._unit_order.__getitem__)]
        return CostCurve.total(terms or [CostCurve([0.0])])

    def needs_from_usage(self, usage: np.ndarray, names: Sequence[str]) -> dict[str, float]:
        """Needs from per-row usage: the fraction of rows that needed each atom.

        ``usage`` is a boolean matrix rows x ``names`` (atom or bundle names, as a learner
        reports which of its features each row needed); a row needs the union of the atoms
        of the names it used (an atom shared by two names is paid once).  Atoms no row needs
        are left out.

        Runtime complexity: O(rows * atoms).

        >>> cm = CostModel({"e": "1", "h": "1", "l": "1"},
        ...                bundles={"s": ["e", "h"], "t": ["e", "l"]})
        >>> cm.needs_from_usage(np.array([[True, False], [False, True]]), ["s", "t"])
        {'e': 1.0, 'h': 0.5, 'l': 0.5}

        Raises
        ------
        ValueError
            If ``usage`` is not rows x len(names) with rows > 0, or a name is unknown.
        """
        names = list(names)
        usage = np.asarray(usage, dtype=bool)
        if usage.ndim != 2 or usage.shape[1] != len(names) or usage.shape[0] == 0:
            raise InvalidArgumentError(
                f"usage must have shape (rows>0, {len(names)}), got {usage.shape}")
        atoms = list(self._atoms)
        rows = (usage.astype(np.int64) @ self.incidence(names).astype(np.int64)) > 0
        p = rows.mean(axis=0)
        return {a: float(p[i]) for i, a in enumerate(atoms) if p[i] > 0.0}

    def columns_of(self, names: Iterable[str]) -> list[int]:
        """The columns a model on ``names`` (atom or bundle names) receives: the sorted union
        of their atoms' columns.  The one column order for every learner.

        Runtime complexity: O(c log c) for c columns.

        >>> CostModel({"a": "1", "b": "1"}, columns={"a": [3, 1], "b": [0]}).columns_of(["a", "b"])
        [0, 1, 3]

        Raises
        ------
        ValueError
            If a name is unknown or one of its atoms has no columns.
        """
        out: set[int] = set()
        for a in self.atoms_of(names):
            cols = self._columns.get(a)
            if cols is None:
                raise InvalidArgumentError(f"atom {a!r} has no columns in this cost model")
            out.update(cols)
        return sorted(out)

    def negative_atom(self, n_min: float, n_max: float) -> str | None:
        """The first unit (atom, step or :data:`START`) whose curve is negative somewhere on
        ``[n_min, n_max]``, or None.

        None is remembered: a later call (or :meth:`check_nonnegative`) on a domain inside
        one already found non-negative returns at once.

        Runtime complexity: O(1) on a domain inside a checked one, else O(atoms * degree**3).

        >>> cm = CostModel({"a": "1", "b": "5 - n"})
        >>> cm.negative_atom(0.0, 4.0), cm.negative_atom(0.0, 9.0)
        (None, 'b')
        """
        checked = self._nonnegative_on
        if checked is not None and checked[0] <= n_min and n_max <= checked[1]:
            return None
        seen: set[int] = set()  # atoms sharing one curve (a feature's columns): once
        for name, curve in self._units.items():
            if id(curve) not in seen and not curve.is_nonnegative(n_min, n_max):
                return name
            seen.add(id(curve))
        if checked is None or n_max - n_min >= checked[1] - checked[0]:
            self._nonnegative_on = (n_min, n_max)  # the curves never change: a fact, kept
        return None

    def check_nonnegative(self, n_min: float, n_max: float) -> None:
        """Raise ``ValueError`` naming the first atom whose curve is negative on the domain
        (:meth:`negative_atom`: O(1) on a domain inside one already checked).

        Runtime complexity: O(1) or O(atoms * degree**3).
        """
        name = self.negative_atom(n_min, n_max)
        if name is not None:
            what = ("the start" if name == START else
                    f"step {name!r}" if name in self._steps else f"atom {name!r}")
            raise InvalidArgumentError(
                f"cost curve of {what} = {self._units[name]} is negative somewhere on "
                f"[{n_min!r}, {n_max!r}]"
            )

    def atom_coefficients(self) -> np.ndarray:
        """Coefficients of every atom's curve, one row per atom (atom order), lowest degree
        first, padded with zeros (a copy)."""
        return self._coef.copy()

    def unit_coefficients(self) -> np.ndarray:
        """Coefficients of every unit's curve (:attr:`units` order), one row per unit,
        padded with zeros (a copy)."""
        return self._unit_coef.copy()

    def unit_incidence(self, names: Sequence[str]) -> np.ndarray:
        """Boolean matrix ``len(names) x units``: the units each name pays.  A set's units
        are the union of its names' rows (a row with any atom also has :data:`START`), so
        ``(bits @ incidence > 0) @ unit_coefficients()`` is the cost of many sets at once.

        Runtime complexity: O(len(names) * units).
        """
        out = np.zeros((len(names), len(self._units)), dtype=bool)
        for i, name in enumerate(names):
            for u in self.units_of([name]):
                out[i, self._unit_order[u]] = True
        return out

    def incidence(self, names: Sequence[str]) -> np.ndarray:
        """Boolean matrix ``len(names) x atoms``: which atoms each name stands for.

        Runtime complexity: O(len(names) * atoms).
        """
        out = np.zeros((len(names), len(self._atoms)), dtype=bool)
        for i, name in enumerate(names):
            for a in self.atoms_of([name]):
                out[i, self._order[a]] = True
        return out



def _checked_steps(
    steps: Mapping[str, Any] | None, uses: Mapping[str, Iterable[str]] | None, start: Any,
    atoms: Mapping[str, CostCurve], bundles: Mapping[str, frozenset],
) -> tuple[dict[str, CostCurve], dict[str, frozenset], CostCurve | None]:
    """``steps``, ``uses`` and ``start`` checked against the atoms and bundles.
    O(steps + uses)."""
    curves: dict[str, CostCurve] = {}
    if steps is not None:
        if not isinstance(steps, Mapping):
            raise InvalidArgumentError(f"steps must be a mapping name -> cost curve, got {steps!r}")
        for name, curve in steps.items():
            _name(name, "step names")
            if name in atoms or name in bundles or name == START:
                what = ("an atom" if name in atoms else "a bundle" if name in bundles
                        else "the start")
                raise InvalidArgumentError(f"step {name!r} has the name of {what}")
            try:
                curves[name] = CostCurve.coerce(curve)
            except ValueError as exc:
                raise InvalidArgumentError(f"cost curve of step {name!r}: {exc}") from None
    used: dict[str, frozenset] = {}
    if uses is not None:
        if not isinstance(uses, Mapping):
            raise InvalidArgumentError(f"uses must be a mapping atom -> step names, got {uses!r}")
        for atom, members in uses.items():
            if atom not in atoms:
                raise InvalidArgumentError(
                    f"uses names {atom!r}, which is not an atom; atoms: {list(atoms)}")
            if isinstance(members, str) or not isinstance(members, Iterable):
                raise InvalidArgumentError(
                    f"the steps atom {atom!r} uses must be a list of names, got {members!r}")
            members = frozenset(members)
            unknown = sorted(map(str, members - curves.keys()))
            if unknown:
                raise InvalidArgumentError(
                    f"atom {atom!r} uses unknown step(s) {unknown}; steps: {list(curves)}")
            if members:
                used[atom] = members
    idle = sorted(set(curves) - set().union(*used.values()))
    if idle:
        raise InvalidArgumentError(f"step(s) {idle} are used by no atom (give them in uses)")
    if start is None:
        return curves, used, None
    if START in atoms:
        raise InvalidArgumentError(f"an atom may not be named {START!r} in a model with a start")
    try:
        first = CostCurve.coerce(start)
    except ValueError as exc:
        raise InvalidArgumentError(f"cost curve of the start: {exc}") from None
    return curves, used, first


def _checked_columns(
    columns: Mapping[str, Iterable[int]] | None, curves: Mapping[str, CostCurve]
) -> dict[str, tuple[int, ...]]:
    """``columns`` checked against the atoms ``curves``: each an atom's, integers >= 0, no
    column claimed by two atoms.  O(atoms + columns)."""
    out: dict[str, tuple[int, ...]] = {}
    if columns is None:
        return out
    if not isinstance(columns, Mapping):
        raise InvalidArgumentError(f"columns must be a mapping atom -> columns, got {columns!r}")
    owner: dict[int, str] = {}
    for name, cols in columns.items():
        if name not in curves:
            raise InvalidArgumentError(
                f"columns given for {name!r}, which is not an atom; atoms: {list(curves)}")
        if isinstance(cols, (str, int, np.integer)) or not isinstance(cols, Iterable):
            raise InvalidArgumentError(f"columns of atom {name!r} must be a list, got {cols!r}")
        kept = []
        for c in cols:
            c = check_column(c, f"a column of atom {name!r}")
            if c < 0:
                raise InvalidArgumentError(
                    f"columns of atom {name!r} must be integers >= 0, got {c!r}")
            if c in owner:
                raise InvalidArgumentError(
                    f"column {c} is claimed by two atoms, {owner[c]!r} and {name!r}")
            owner[c] = name
            kept.append(c)
        out[name] = tuple(kept)
    return out
