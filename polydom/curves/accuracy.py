"""Accuracies that are ties as estimated compare equal: a fold mean computed exactly.

A cross-validated accuracy is the mean of the folds' accuracies, each ``correct / rows`` of
its fold.  Summed in floating point, two models that got the same counts in different folds
(152 of 210 either way, split 31+30+... or 30+31+...) get means that differ in the last
digits, and the index, the lattice and every door then prefer the dearer model on float
noise, where the lookup promises a tie goes to the cheaper one.  :func:`fold_mean` reads
each fold's score as the fraction of its rows it stands for (``k / m`` for the nearest
count ``k``, when the score is that fraction to within float rounding; a score that is not,
a balanced accuracy say, is taken as the exact rational of its float) and returns the float
nearest their exact mean.  Equal rational means give one float, and float comparison is
monotone in the rationals, so the comparison every part of the project makes on accuracies
(plain ``<`` and ``==``: the index's sweep and skylines, the lattice's pruning, every door,
which all read the stored float) is the exact comparison of the estimates: the same counts
over the same folds compare equal, and the tie goes to the cheaper model.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["fold_mean"]


def _fraction(score: float, rows: int) -> Fraction:
    """``score`` as the fraction of ``rows`` it stands for, else its exact rational."""
    k = round(score * rows)
    if math.isclose(score, k / rows, rel_tol=0.0, abs_tol=4 * math.ulp(1.0)):
        return Fraction(int(k), int(rows))
    return Fraction(score)


def fold_mean(scores: Sequence[float], test_rows: Sequence[int]) -> float:
    """The mean of the fold ``scores`` (each on ``test_rows[i]`` rows) as the float nearest
    its exact value.  Runtime complexity: O(k) fraction additions for k folds.

    >>> a = fold_mean([31 / 42, 30 / 42, 30 / 42, 31 / 42, 30 / 42], [42] * 5)
    >>> b = fold_mean([30 / 42, 30 / 42, 31 / 42, 30 / 42, 31 / 42], [42] * 5)
    >>> a == b == 152 / 210
    True
    """
    total = sum((_fraction(float(s), int(m)) for s, m in zip(scores, test_rows, strict=True)),
                Fraction(0))
    return float(total / len(scores))

