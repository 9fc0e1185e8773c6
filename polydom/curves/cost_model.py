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

__all__ = ["CostModel"]


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

    >>> cm = CostModel({"edges": "2*n", "hog": "n", "lbp": "3"},
    ...                bundles={"shape": ["edges", "hog"], "texture": ["edges", "lbp"]})
    >>> cm.features
    ('shape', 'texture')
    >>> cm.cost(["shape", "texture"])(1.0)     # edges paid once: 2 + 1 + 3
    6.0
    >>> sorted(cm.atoms_of(["texture"]))
    ['edges', 'lbp']

    Raises
    ------
    ValueError
        Naming the thing: atoms not a mapping, a name that is not a string, a curve that cannot be
        parsed, an empty bundle, a bundle naming an unknown atom or named like an atom,
        columns of an unknown atom, a negative column, two atoms claiming one column.
    """

    __slots__ = ("_atoms", "_bundles", "_columns", "_order", "_coef", "_nonnegative_on")

    def __init__(
        self,
        atoms: Mapping[str, Any],
        bundles: Mapping[str, Iterable[str]] | None = None,
        columns: Mapping[str, Iterable[int]] | None = None,
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
        #: The widest domain on which every atom was found non-negative (None: not yet).
        self._nonnegative_on: tuple[float, float] | None = None

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
        out._columns = _checked_columns(columns, self._atoms)
        return out

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
        return f"CostModel({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CostModel):
            return NotImplemented
        return (
            list(self._atoms.items()) == list(other._atoms.items())
            and self._bundles == other._bundles
            and self._columns == other._columns
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

    def cost(self, names: Iterable[str]) -> CostCurve:
        """Cost curve of a set of names: each of their atoms paid once.

        Runtime complexity: O(atoms * degree).

        >>> CostModel({"a": "1", "b": "n"}).cost(["a", "b"])(4.0)
        5.0
        """
        atoms = self._ordered(self.atoms_of(names))
        return CostCurve.total([self._atoms[a] for a in atoms] or [CostCurve([0.0])])

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

    def expected_cost(self, needs: Mapping[str, float]) -> CostCurve:
        """Expected cost ``sum_a p_a c_a(n)`` of needs ``{atom: probability}``.

        Runtime complexity: O(atoms * degree).

        >>> CostModel({"a": "2", "b": "n"}).expected_cost({"a": 0.5, "b": 1.0})(3.0)
        4.0

        Raises
        ------
        ValueError
            If a need names something that is not an atom, or a probability is outside
            ``[0, 1]``.
        """
        needs = self._needs(needs)
        terms = [needs[a] * self._atoms[a] for a in self._ordered(needs) if needs[a] > 0.0]
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
        """The first atom whose curve is negative somewhere on ``[n_min, n_max]``, or None.

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
        for name, curve in self._atoms.items():
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
            raise InvalidArgumentError(
                f"cost curve of atom {name!r} = {self._atoms[name]} is negative somewhere on "
                f"[{n_min!r}, {n_max!r}]"
            )

    def atom_coefficients(self) -> np.ndarray:
        """Coefficients of every atom's curve, one row per atom (atom order), lowest degree
        first, padded with zeros (a copy)."""
        return self._coef.copy()

    def incidence(self, names: Sequence[str]) -> np.ndarray:
        """Boolean matrix ``len(names) x atoms``: which atoms each name stands for.

        Runtime complexity: O(len(names) * atoms).
        """
        out = np.zeros((len(names), len(self._atoms)), dtype=bool)
        for i, name in enumerate(names):
            for a in self.atoms_of([name]):
                out[i, self._order[a]] = True
        return out



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
