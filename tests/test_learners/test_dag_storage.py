"""DAG models in a stored index: arrays + JSON (no pickle), loaded back with the same answers."""

import fractions
import operator

import numpy as np
import pytest
import skops.io
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import polydom
from learners import DAGClassifier, SklearnLearner, sweep
from learners.budgeted.sklearn_blobs import dump_estimator, load_estimator
from tests.config_support import BUNDLE_ROWS, breast_cancer_config

WINE = {"chem": [0, 1, 2, 3, 4], "phenols": [5, 6, 7, 8], "colour": [9, 10, 11, 12]}
COSTS = {"chem": "1 + 0.1*n", "phenols": "2", "colour": "0.5 + 0.2*n"}


def test_sub_model_blobs_load_classes_and_refuse_functions():
    X = np.arange(6.0).reshape(3, 2)
    scaler = StandardScaler().fit(X)
    np.testing.assert_array_equal(load_estimator(dump_estimator(scaler)).transform(X),
                                  scaler.transform(X))
    for model in (FunctionTransformer(operator.neg).fit(X), {"f": fractions.Fraction(1, 3)}):
        with pytest.raises(ValueError, match="allow-list refuses"):
            dump_estimator(model)
        blob = np.frombuffer(skops.io.dumps(model), dtype=np.uint8)
        with pytest.raises(ValueError, match="allow-list refuses"):
            load_estimator(blob)


@pytest.mark.slow
def test_an_index_with_dag_candidates_is_stored_and_reopened_unchanged(tmp_path):
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    extra = sweep(DAGClassifier(feature_groups=WINE, cv=3), [0.005, 0.05], Xtr, ytr, COSTS,
                  evaluation=(Xte, yte))
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    learner = SklearnLearner(lr, Xtr, ytr, features=WINE, cv=3)
    url = f"sqlite:///{tmp_path / 'dag.db'}"
    built = polydom.build_index(COSTS, learner, alpha=1.5, n_max=100.0, store=url,
                                extra_candidates=extra)
    opened = polydom.open_index(url)
    dag_keys = {c.key for c in extra}
    served = 0
    for budget in [1.0, 3.0, 6.0, 30.0]:
        a, b = built.lookup(size=10.0, budget=budget), opened.lookup(size=10.0, budget=budget)
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert a.key == b.key
        np.testing.assert_array_equal(built.predict(Xte, size=10.0, budget=budget),
                                      opened.predict(Xte, size=10.0, budget=budget))
        served += a.key in dag_keys
    assert served


def test_the_dag_is_a_registered_budgeted_learner_swept_by_the_one_sweep():
    import learners
    import learners.registry
    spec = learners.registry.get_learner("dag")
    assert spec.kind == "budgeted" and spec.classes() == [DAGClassifier]
    proto = spec.make(seed=3, tradeoff=0.1)
    assert isinstance(proto, DAGClassifier) and proto.random_state == 3
    assert proto.learner_name == spec.name
    X, y = load_wine(return_X_y=True)
    cands = learners.sweep(DAGClassifier(feature_groups=WINE, cv=2), [0.05], X, y, COSTS,
                           evaluation=(X, y), sizes=(1.0,), cost="expected")
    assert [c.key for c in cands] == ["dag(tradeoff=0.05, n=1)"] and cands[0].learner == "dag"


DAG_TOML = breast_cancer_config("dag.db", """[[budgeted]]
learner = "dag"
tradeoffs = [0.0005, 0.005]
[budgeted.params]
cv = 2

[budgeted.params.feature_groups]   # the DAG's sensors: the three bundles
""" + BUNDLE_ROWS, learner="logistic")


@pytest.mark.slow
def test_a_build_config_runs_the_dag_next_to_the_lattice(tmp_path, capsys):
    from polydom.app.cli import main

    path = tmp_path / "dag.toml"
    path.write_text(DAG_TOML)
    assert main(["build", str(path)]) == 0
    assert "budgeted: 2 candidates from dag" in capsys.readouterr().out
    index = polydom.open_index(tmp_path / "dag.db")
    dags = [c for c in index.candidates if c.learner == "dag"]
    assert len(dags) == 2 and all(set(c.needs) <= set(index.cost_model.atoms) for c in dags)
