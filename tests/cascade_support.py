"""A small index of fitted classifiers over four atoms, for cascade and plan tests."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from polydom import Candidate, Index, PolyDomIndex

COSTS = {"a": "1", "b": "2 + 0.1*n", "c": "0.05*n**2", "d": "3"}
COLUMNS = {"a": [0, 1], "b": [2, 3], "c": [4, 5], "d": [6, 7]}
SETS = [("a",), ("a", "b"), ("b", "c"), ("a", "b", "c", "d")]


def synthetic_rows() -> tuple[np.ndarray, np.ndarray]:
    """900 rows of 8 columns, 3 classes: rows 0-399 train, 400-599 score, 600- calibrate."""
    return make_classification(n_samples=900, n_features=8, n_informative=6, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, class_sep=0.8,
                               random_state=3)


def small_index(X: np.ndarray, y: np.ndarray) -> Index:
    """Logistic regressions on four atom sets (keys ``a``, ``a+b``, ``b+c``, ``a+b+c+d``),
    domain [0, 20]; accuracy measured on rows 400-599."""
    base = Index(PolyDomIndex.build([Candidate("x", 0.5, "1")], 0.0, 20.0), COSTS, COLUMNS)
    cands = []
    for feats in SETS:
        cols = base.model_columns(frozenset(feats))
        model = LogisticRegression(max_iter=500).fit(X[:400, cols], y[:400])
        acc = float((model.predict(X[400:600, cols]) == y[400:600]).mean())
        cost = sum((base.costs[f] for f in feats), start=0)
        cands.append(Candidate("+".join(feats), acc, cost, feats, model))
    return Index(PolyDomIndex.build(cands, 0.0, 20.0), COSTS, COLUMNS)
