"""CEGB models next to feature-set models in one Poly-Dom index (breast cancer, assigned costs).

Run:  PYTHONPATH=$PWD python examples/cegb_index.py
"""

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import polydom
from learners import CEGBClassifier, sweep

X, y = load_breast_cancer(return_X_y=True)
X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)

# features are groups of columns; a group costs c_f(n) at item size n, paid once per row
groups = {"size": [0, 2, 3, 10, 12, 13, 20, 22, 23], "texture": [1, 11, 21],
          "shape": [5, 6, 7, 15, 16, 17, 25, 26, 27], "other": [4, 8, 9, 14, 18, 19, 24, 28, 29]}
costs = {"size": "1 + 0.002*n", "texture": "2 + 0.01*n", "shape": "5 + 0.02*n",
         "other": "4 + 0.03*n"}

# one CEGB model: which feature groups does each row need?
clf = CEGBClassifier(feature_costs={g: polydom.CostCurve.parse(c)(1000.0)
                                    for g, c in costs.items()},
                     tradeoff=0.002, feature_groups=groups, n_estimators=100,
                     random_state=0).fit(X_tr, y_tr)
usage = clf.feature_usage(X_va)
print("accuracy", round(clf.score(X_va, y_va), 3))
print("P(group used)", {g: float(p) for g, p in zip(clf.feature_names_, usage.mean(axis=0),
                                                    strict=True)})
print("expected cost curve", clf.expected_cost(X_va, costs))
print("mean split evaluations per row", float(clf.split_evaluations(X_va).mean()))

# a sweep of trade-offs and reference sizes -> candidates
cegb = sweep(CEGBClassifier(feature_groups=groups, n_estimators=100, random_state=0),
             [1e-4, 1e-3, 1e-2], X_tr, y_tr, costs, evaluation=(X_va, y_va), sizes=[100, 10_000],
             key="cegb")

# a few feature-set models (what the lattice produces), same candidate type
sets = [("size",), ("size", "texture"), ("size", "texture", "shape", "other")]
fsm = []
for s in sets:
    cols = [c for g in groups if g in s for c in groups[g]]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X_tr[:, cols], y_tr)
    fsm.append(polydom.Candidate("+".join(s), model.score(X_va[:, cols], y_va),
                                 polydom.CostCurve.total([polydom.CostCurve.parse(costs[g])
                                                          for g in s]), s, model))

index = polydom.Index(polydom.PolyDomIndex.build(cegb + fsm),
                      {g: polydom.CostCurve.parse(c) for g, c in costs.items()}, columns=groups)
for size, budget in [(100, 2.0), (100, 5.0), (100, 20.0), (10_000, 30.0), (10_000, 200.0),
                     (10_000, 700.0)]:
    hit = index.lookup(size, budget)
    print(f"n={size:>6} budget={budget:>6}: {hit.key!s:40} acc={hit.accuracy:.3f} "
          f"expected cost={hit.cost:.2f}")
    pred = index.predict(X_va, size, budget)
    assert pred.shape == y_va.shape


# on-demand prediction of one item: a feature group is computed only when a split needs it
class RowFeaturizer:
    """Reads a group's columns from a stored row (stands for an expensive computation)."""

    def __init__(self):
        self.calls = []

    def compute(self, row, name):
        self.calls.append(name)
        return row[groups[name]]


feat = RowFeaturizer()
item = clf.predict_item(X_va[0], feat)
print("predict_item:", item.label, "computed", item.computed, "splits", item.split_evaluations)
assert item.label == clf.predict(X_va[:1])[0] and feat.calls == list(item.computed)
print("row 0 usage from the batch path computation:",
      [g for g, u in zip(clf.feature_names_, usage[0], strict=True) if u])
