"""Budget adherence, measured: serve held-out items at several budgets and count the overruns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from polydom.errors import InvalidArgumentError
from polydom.index.built import Index
from polydom.index.item_prediction import ItemPrediction
from polydom.serving.featurizer import Featurizer
from polydom.serving.item_serving import predict_item

__all__ = ["AdherenceRow", "adherence_table", "measure_adherence"]


@dataclass(frozen=True)
class AdherenceRow:
    """Outcome of serving every item of one size at one budget with one method.

    Attributes
    ----------
    method : str
        Name of the method (e.g. "poly-dom max", "any-time mean").
    size : float
        Item size.
    budget : float
        Budget in seconds of feature time.
    count : int
        Items served.
    accuracy : float
        Fraction labelled correctly (an item no model could answer counts as wrong).
    answered : float
        Fraction that some model answered.
    over_budget : float
        Fraction whose measured feature time exceeded the budget.
    mean_slack : float
        Mean of ``budget - measured feature seconds`` (negative: over on average).
    mean_seconds : float
        Mean measured feature seconds.
    mean_predicted : float
        Mean predicted cost of the index's choice.
    fallback : float
        Fraction answered by a model other than the index's choice (any-time mode).
    """

    method: str
    size: float
    budget: float
    count: int
    accuracy: float
    answered: float
    over_budget: float
    mean_slack: float
    mean_seconds: float
    mean_predicted: float
    fallback: float

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict."""
        return asdict(self)


def measure_adherence(
    index: Index | None,
    items: Sequence[Any],
    labels: Sequence[Any] | np.ndarray,
    budgets: Sequence[float],
    featurizer: Featurizer,
    anytime: bool = False,
    method: str | None = None,
    predict: Callable[[Any, float], ItemPrediction] | None = None,
) -> list[AdherenceRow]:
    """Serve every item at every budget and measure accuracy and budget adherence.

    Items are grouped by size (``featurizer.size``); one row per (size, budget), sizes
    ascending, budgets in the given order.  Each item is served by
    :func:`predict_item` (``anytime`` selects the mode), or by ``predict(item, budget)``
    when given (a baseline such as Greedy-Cost that returns an :class:`ItemPrediction`).
    Fitting costs by max, p90 or mean is compared by building one index per fit and
    calling this once for each.

    Runtime complexity: O(items * budgets) servings.

    Parameters
    ----------
    index : polydom.Index or None
        The index to serve from (may be None when ``predict`` is given).
    items : sequence
        Held-out items.
    labels : sequence
        Their true labels.
    budgets : sequence of float
        Budgets in seconds.
    featurizer : Featurizer
    anytime : bool, default False
    method : str, optional
        Name put in the rows (default "poly-dom" or "any-time poly-dom").
    predict : callable, optional
        ``predict(item, budget) -> ItemPrediction`` used instead of :func:`predict_item`.

    Returns
    -------
    list of AdherenceRow

    Raises
    ------
    ValueError
        On mismatched items and labels, no items or budgets, or neither index nor predict.
    """
    items = list(items)
    labels = np.asarray(labels)
    if len(items) != labels.shape[0]:
        raise InvalidArgumentError(
            f"items and labels differ in length: {len(items)} and {labels.shape[0]}")
    if not items:
        raise InvalidArgumentError("items must not be empty")
    budgets = [float(b) for b in budgets]
    if not budgets:
        raise InvalidArgumentError("budgets must not be empty")
    if predict is None:
        if index is None:
            raise InvalidArgumentError("give an index or a predict function")

        def predict(item: Any, budget: float) -> ItemPrediction:
            return predict_item(index, item, budget, featurizer, anytime=anytime)

    name = method or ("any-time poly-dom" if anytime else "poly-dom")
    sizes = np.array([featurizer.size(item) for item in items])
    rows = []
    for size in np.unique(sizes):
        pos = np.flatnonzero(sizes == size)
        for budget in budgets:
            preds = [predict(items[i], budget) for i in pos]
            correct = [
                p.label is not None and p.label == labels[i]
                for p, i in zip(preds, pos, strict=True)
            ]
            secs = np.array([p.seconds for p in preds])
            rows.append(AdherenceRow(
                method=name,
                size=float(size),
                budget=budget,
                count=len(preds),
                accuracy=float(np.mean(correct)),
                answered=float(np.mean([p.key is not None for p in preds])),
                over_budget=float(np.mean(secs > budget)),
                mean_slack=float(np.mean(budget - secs)),
                mean_seconds=float(secs.mean()),
                mean_predicted=float(np.mean([p.predicted_cost for p in preds])),
                fallback=float(np.mean([p.fallback for p in preds])),
            ))
    return rows


def adherence_table(rows: Sequence[AdherenceRow], unit: float = 1e-3) -> str:
    """Rows as a fixed-width text table; times in ``unit`` seconds (default milliseconds).

    Runtime complexity: O(rows).
    """
    label = {1.0: "s", 1e-3: "ms", 1e-6: "us"}.get(unit, f"x{unit:g}s")
    width = max([len("method"), *(len(r.method) for r in rows)])
    head = (f"{'method':<{width}} {'size':>6} {'budget':>9} {'n':>5} {'acc':>6} "
            f"{'answered':>8} {'over':>6} {'slack':>9} {'measured':>9} {'predicted':>9} "
            f"{'fallback':>8}   (times in {label})")
    lines = [head]
    for r in rows:
        lines.append(
            f"{r.method:<{width}} {r.size:>6g} {r.budget / unit:>9.3f} {r.count:>5d} "
            f"{r.accuracy:>6.3f} {r.answered:>8.3f} {r.over_budget:>6.3f} "
            f"{r.mean_slack / unit:>9.3f} {r.mean_seconds / unit:>9.3f} "
            f"{r.mean_predicted / unit:>9.3f} {r.fallback:>8.3f}"
        )
    return "\n".join(lines)
