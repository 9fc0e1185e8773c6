"""Write ``schema_v2.db``: a store of schema version 2, for the tests that read old stores.

It must be run with the schema-2 code (polydom main at 7e142d0, before schema version 3):

    git worktree add /tmp/v2 7e142d0
    cd /tmp/v2 && PYTHONPATH=$PWD python PATH/TO/make_schema_v2.py PATH/TO/schema_v2.db

What it holds: one published build of a lattice over bundles ``ab`` (atoms ``a``, ``b``)
and ``bc`` (atoms ``b``, ``c``; atom costs "1", "n", "2 + 0.5*n"), trained by a logistic
regression scored on 3 seeded stratified folds (each expansion with its out-of-fold
predictions), plus one extra candidate with its own model (a depth-2 tree on atom ``c``,
learner "tree"), domain [0, 100].  The code of version 2 stored neither standard errors
nor fold scores, and kept the learner's ``describe()`` text in ``builds.learner``.  The
data are a seeded random problem (numpy only), so the store is the same on every run but
for timestamps.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom


def main(path: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] - 0.25 * X[:, 2] > 0).astype(int)
    model = polydom.CostModel({"a": "1", "b": "n", "c": "2 + 0.5*n"},
                              bundles={"ab": ["a", "b"], "bc": ["b", "c"]},
                              columns={"a": [0], "b": [1], "c": [2]})
    learner = learners.SklearnLearner(LogisticRegression(), X, y, features=model,
                                      cv=learners.EvaluationProtocol(folds=3, seed=0))
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X[:, [2]], y)
    extra = polydom.Candidate("tree-c", 0.7, "3 + 0.5*n", features={"c"}, payload=tree,
                              needs={"c": 1.0}, learner="tree", accuracy_se=0.05,
                              fold_scores=(0.65, 0.7, 0.75))
    polydom.build_index(model, learner, alpha=1.0, n_min=0.0, n_max=100.0,
                        store=f"sqlite:///{path}", extra_candidates=[extra])


if __name__ == "__main__":
    main(sys.argv[1])
