"""Estimating delta: how far the learner's accuracy is from monotone (paper Appendix B)."""

from __future__ import annotations

import numpy as np

from lattice.explore import Exploration

__all__ = ["estimate_delta", "monotonicity_violations"]


def monotonicity_violations(exploration: Exploration) -> np.ndarray:
    """``a(G) - a(F)`` for every expanded pair ``G ⊊ F`` where it is positive.

    Runtime complexity: O(E**2) for E expanded sets (vectorised per set).
    """
    masks = np.array(exploration._masks, dtype=np.int64)
    accs = np.array([e.accuracy for e in exploration.expanded.values()])
    out = []
    for g, ag in zip(masks, accs, strict=True):
        sup = ((masks & g) == g) & (masks != g)
        gaps = ag - accs[sup]
        out.append(gaps[gaps > 0])
    return np.concatenate(out) if out else np.zeros(0)


def estimate_delta(exploration: Exploration) -> float:
    """The largest monotonicity violation among expanded ancestor/descendant pairs.

    ``max(0, max over expanded G ⊊ F of a(G) - a(F))``: a lower bound on the delta the
    learner needs (Axiom 3.10), measured on what was trained.  Rerunning with at least this
    delta is the paper's Appendix B procedure.

    Runtime complexity: O(E**2) for E expanded sets.

    >>> import lattice, learners
    >>> acc = {frozenset(): 0.5, frozenset("a"): 0.8, frozenset("b"): 0.6,
    ...        frozenset("ab"): 0.75}
    >>> exp = lattice.expand_all({"a": [1], "b": [2]}, learners.SyntheticLearner(acc.get))
    >>> round(estimate_delta(exp), 6)
    0.05
    """
    v = monotonicity_violations(exploration)
    return float(v.max()) if v.size else 0.0
