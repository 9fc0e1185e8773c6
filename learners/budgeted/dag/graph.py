"""The sensor DAG: states are sets of acquired sensors, edges acquire more (full, chain, unions).

Wang, Trapeznikov & Saligrama (NIPS 2015), section 2 and 3.2: a state is the set of sensors
acquired so far; an edge ``s -> s'`` (``s`` a strict subset of ``s'``) acquires the sensors of
``s' \\ s``; every state also has the stop-and-classify action (SC), and a state without
children has SC only.  Three shapes:

* :func:`full_graph`: all ``2^M`` subsets of ``M`` sensors, ``s -> s | {m}`` (paper Fig. 1);
* :func:`union_graph`: all distinct unions of given sensor *blocks* (Algorithm 2's subsets,
  paper Fig. 2), ``U -> U | block``; unions with the same sensors are one state and an edge
  that adds nothing is dropped (spec 2.6);
* :func:`chain_graph`: the prefixes of an order of blocks, each with one child: the
  fixed-order cascade of the cascade papers the DAG is compared with (spec 5, R1).

States are listed in a topological order (by size, then by sorted names), the empty set first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from polydom.errors import InvalidArgumentError

__all__ = ["SensorGraph", "chain_graph", "full_graph", "union_graph"]


@dataclass(frozen=True)
class SensorGraph:
    """A DAG over sensor sets.

    Parameters
    ----------
    states : tuple of frozenset of str
        The sensor set of every state, in topological order; ``states[0]`` is the empty set.
    children : tuple of tuple of int
        ``children[k]``: indices of the states reachable from state ``k`` by one acquisition.
        Action ``0`` of state ``k`` is SC, action ``j >= 1`` moves to ``children[k][j - 1]``.
    """

    states: tuple
    children: tuple

    def __len__(self) -> int:
        return len(self.states)

    def index(self, state: Iterable[str]) -> int:
        """Position of a sensor set among the states.

        Runtime complexity: O(K) for K states.

        Raises
        ------
        ValueError
            If the set is not a state of the graph.
        """
        key = frozenset(state)
        try:
            return self.states.index(key)
        except ValueError:
            raise InvalidArgumentError(f"{sorted(key)} is not a state of this graph") from None

    @property
    def n_actions(self) -> list[int]:
        """Number of actions of every state: its children plus SC."""
        return [len(c) + 1 for c in self.children]

    @property
    def sensors(self) -> frozenset:
        """Every sensor some state holds."""
        return frozenset().union(*self.states)

    def _check(self) -> None:
        """Assert the structural invariants (spec section 6, items 1-2)."""
        assert self.states and self.states[0] == frozenset()
        assert len(set(self.states)) == len(self.states)
        assert len(self.children) == len(self.states)
        for k, (state, kids) in enumerate(zip(self.states, self.children, strict=True)):
            assert len(set(kids)) == len(kids)
            for c in kids:
                assert c > k, "children come later in the topological order"
                assert state < self.states[c], "an edge acquires at least one new sensor"
        reached = {0}
        for k in range(len(self.states)):
            if k in reached:
                reached.update(self.children[k])
        assert reached == set(range(len(self.states))), "every state is reachable from the root"


def _ordered(states: Iterable[frozenset]) -> list[frozenset]:
    return sorted(set(states), key=lambda s: (len(s), sorted(s)))


def _graph(states: list[frozenset], edges: dict[frozenset, list[frozenset]]) -> SensorGraph:
    pos = {s: k for k, s in enumerate(states)}
    children = tuple(tuple(sorted({pos[c] for c in edges[s]})) for s in states)
    return SensorGraph(tuple(states), children)


def full_graph(sensors: Sequence[str]) -> SensorGraph:
    """The full DAG over ``M`` sensors: ``2^M`` states, ``s -> s | {m}`` for every ``m`` not in s.

    Runtime complexity: O(M 2^M).

    >>> g = full_graph(["a", "b"])
    >>> [sorted(s) for s in g.states], g.children
    ([[], ['a'], ['b'], ['a', 'b']], ((1, 2), (3,), (3,), ()))
    """
    sensors = _names(sensors, "sensors")
    states = _ordered(
        frozenset(c) for r in range(len(sensors) + 1) for c in combinations(sensors, r)
    )
    edges = {s: [s | {m} for m in sensors if m not in s] for s in states}
    return _graph(states, edges)


def union_graph(blocks: Sequence[Iterable[str]]) -> SensorGraph:
    """The DAG over all distinct unions of ``blocks`` (each block a set of sensors).

    State ``U`` has an edge to ``U | b`` for every block ``b`` not inside ``U``.  Unions of
    different blocks with the same sensors are one state.  With one sensor per block this is
    :func:`full_graph`.

    Runtime complexity: O(t K) set unions for t blocks and K <= 2^t states.

    Raises
    ------
    ValueError
        If there is no block, or a block is empty.
    """
    blocks = _blocks(blocks)
    states, frontier = {frozenset()}, [frozenset()]
    edges: dict[frozenset, list[frozenset]] = {}
    while frontier:
        nxt = []
        for s in frontier:
            kids = [s | b for b in blocks if not b <= s]
            edges[s] = kids
            for c in kids:
                if c not in states:
                    states.add(c)
                    nxt.append(c)
        frontier = nxt
    return _graph(_ordered(states), edges)


def chain_graph(blocks: Sequence[Iterable[str]]) -> SensorGraph:
    """The fixed-order cascade: the prefixes of ``blocks``, each state with one child.

    Blocks that add nothing to their prefix are skipped.

    Runtime complexity: O(t) set unions.

    >>> [sorted(s) for s in chain_graph([["b"], ["a"]]).states]
    [[], ['b'], ['a', 'b']]
    """
    blocks = _blocks(blocks)
    states, s = [frozenset()], frozenset()
    for b in blocks:
        if not b <= s:
            s = s | b
            states.append(s)
    children = tuple((k + 1,) for k in range(len(states) - 1)) + ((),)
    return SensorGraph(tuple(states), children)


def _names(sensors: Sequence[str], what: str) -> list[str]:
    names = [str(m) for m in sensors]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"{what} must be distinct, got {names}")
    return names


def _blocks(blocks: Sequence[Iterable[str]]) -> list[frozenset]:
    if isinstance(blocks, str):
        raise InvalidArgumentError(f"blocks must be a sequence of sensor sets, got {blocks!r}")
    out = []
    for i, b in enumerate(blocks):
        if isinstance(b, str):
            raise InvalidArgumentError(f"blocks[{i}] must be a set of sensor names, got {b!r}")
        b = frozenset(str(m) for m in b)
        if not b:
            raise InvalidArgumentError(f"blocks[{i}] is empty")
        out.append(b)
    if not out:
        raise InvalidArgumentError("blocks is empty: a DAG needs at least one sensor block")
    return out
