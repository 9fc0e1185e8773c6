"""Serving raw items with a CostModel: atoms computed once, adaptive models on demand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import learners
import polydom


def featurizer() -> tuple[polydom.Featurizer, dict]:
    calls = {"edges": 0, "hog": 0, "lbp": 0}

    def counted(name, routine):
        def run(x):
            calls[name] += 1
            return routine(x)
        return run

    fz = polydom.Featurizer(size=len)
    fz.add("edges", counted("edges", lambda x: [float(np.mean(np.abs(np.diff(x))))]), 1)
    fz.add("hog", counted("hog", lambda x: [float(np.max(x)), float(np.min(x))]), 2)
    fz.add("lbp", counted("lbp", lambda x: [float(np.std(x))]), 1)
    return fz, calls


def items(n: int = 200, seed: int = 0) -> tuple[list, np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = [rng.normal(scale=rng.uniform(0.5, 2.0), size=int(rng.integers(5, 30)))
          for _ in range(n)]
    y = np.array([int(np.std(x) > 1.2) for x in xs])
    return xs, y


def test_a_model_on_bundles_sharing_an_atom_computes_that_atom_once():
    fz, calls = featurizer()
    model = polydom.CostModel({"edges": "2*n", "hog": "n", "lbp": "3"},
                              bundles={"shape": ["edges", "hog"], "texture": ["edges", "lbp"]},
                              columns=fz.columns)
    xs, y = items()
    X = fz.transform(xs)
    cols = model.columns_of(["shape", "texture"])
    clf = LogisticRegression().fit(X[:, cols], y)
    cand = polydom.Candidate(("shape", "texture"), 0.9, model.cost(["shape", "texture"]),
                             features={"shape", "texture"}, payload=clf,
                             needs=dict.fromkeys(model.atoms_of(["shape", "texture"]), 1.0))
    index = polydom.Index(polydom.PolyDomIndex.build([cand]), model)
    calls.update(dict.fromkeys(calls, 0))
    out = index.predict_item(xs[0], 1e9, fz)
    assert sorted(out.computed) == ["edges", "hog", "lbp"]
    assert calls == {"edges": 1, "hog": 1, "lbp": 1}
    assert out.label == clf.predict(X[:1, cols])[0]
    assert out.predicted_cost == model.cost(["shape", "texture"])(len(xs[0]))


def test_an_adaptive_model_in_the_index_computes_only_the_atoms_its_path_needs():
    pytest.importorskip("lightgbm")
    fz, calls = featurizer()
    model = polydom.CostModel({"edges": "1", "hog": "5", "lbp": "2"}, columns=fz.columns)
    xs, y = items(300)
    X = fz.transform(xs)
    proto = learners.CEGBClassifier(n_estimators=15, num_leaves=4, random_state=0)
    (cand,) = learners.sweep(proto, [0.01], X[:200], y[:200], model,
                             evaluation=(X[200:], y[200:]))
    index = polydom.Index(polydom.PolyDomIndex.build([cand]), model)
    est = cand.payload.estimator
    usage = est.feature_usage(X[200:])
    for i, x in enumerate(xs[200:240]):
        calls.update(dict.fromkeys(calls, 0))
        out = index.predict_item(x, 1e9, fz)
        needed = {n for n, u in zip(est.feature_names_, usage[i], strict=True) if u}
        assert set(out.computed) == needed
        assert all(calls[n] == (n in needed) for n in calls)
        assert out.label == est.predict(X[200 + i:201 + i])[0]
        assert out.key == cand.key
