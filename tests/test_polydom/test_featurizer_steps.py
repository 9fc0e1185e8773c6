"""Shared steps in the featurizer (issue 37 item 5): a served item computes a step once however
many of its features use it; the in-situ protocol times every pair as a set's first feature
(its steps included); a new item, or the same item served again, computes them again.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier

import polydom
from polydom.app.workloads.images import harris, hog_cells, image_featurizer


def _counted():
    calls = {"grad": 0}

    def grad(x):
        calls["grad"] += 1
        return np.diff(np.asarray(x, dtype=float))

    fz = polydom.Featurizer(size=len).add_step("grad", grad)
    fz.add("up", lambda x, g: [float((g > 0).sum())], 1, steps=["grad"])
    fz.add("down", lambda x, g: [float((g < 0).sum())], 1, steps=["grad"])
    fz.add("mean", lambda x: [float(np.mean(x))], 1)
    return fz, calls


def test_a_served_item_computes_a_shared_step_once():
    fz, calls = _counted()
    model = DummyClassifier(strategy="constant", constant=1).fit([[0.0, 0.0]], [1])
    cand = polydom.Candidate(("both",), 0.9, "1e-3*n", features={"up", "down"}, payload=model)
    index = polydom.Index(polydom.PolyDomIndex.build([cand], 0.0, 100.0),
                          polydom.CostModel({"up": "1e-3*n", "down": "1e-3*n",
                                             "mean": "1e-3"}, columns=fz.columns))
    item = [1.0, 3.0, 2.0, 5.0]
    pred = index.predict_item(item, 10.0, fz)
    assert set(pred.computed) == {"up", "down"} and calls["grad"] == 1
    index.predict_item(item, 10.0, fz)          # the same item served again pays it again
    index.predict_item(list(item), 10.0, fz)    # and so does another item
    assert calls["grad"] == 3
    rows = fz.transform([item, item[::-1]])
    assert rows[:, :2].tolist() == [[2.0, 1.0], [1.0, 2.0]]


def test_in_situ_pairs_each_pay_their_steps():
    fz, calls = _counted()
    items = [list(np.random.default_rng(k).random(6)) for k in range(5)]
    fz.featurize_in_situ(items, seed=0)
    assert calls["grad"] == 2 * len(items)  # every (item, user) pair alone


def test_bad_steps_are_refused():
    fz, _ = _counted()
    with pytest.raises(ValueError, match="unknown step"):
        fz.add("x", lambda x, g: [0.0], 1, steps=["nope"])
    with pytest.raises(ValueError, match="already registered"):
        fz.add_step("up", lambda x: x)
    with pytest.raises(ValueError, match="already registered"):
        fz.add("grad", lambda x: [0.0], 1)


def test_the_image_features_share_the_gradient_and_give_what_they_give_alone():
    fz = image_featurizer(["hog", "harris", "zones"])
    assert fz.steps == ["gradient"] and fz.uses == {"hog": ["gradient"],
                                                    "harris": ["gradient"]}
    img = np.random.default_rng(0).random((32, 32))
    row = fz.transform([img])[0]
    assert np.allclose(row[fz.columns["hog"]], hog_cells(img))
    assert np.allclose(row[fz.columns["harris"]], harris(img))
    assert image_featurizer(["hog", "zones"]).steps == []  # one user: nothing shared
