"""The learner registry: built-ins, registration, refusals."""

from __future__ import annotations

import pytest

import learners
import learners.registry


def test_built_in_learners_are_registered_by_kind():
    assert {"logistic", "sgd-hinge-l1", "lightgbm", "tree", "synthetic"} <= set(
        learners.registry.registered_learners("lattice"))
    assert {"cegb", "greedymiser"} <= set(learners.registry.registered_learners("budgeted"))


def test_a_budgeted_factory_makes_a_fresh_prototype_with_the_seed_and_params():
    pytest.importorskip("lightgbm")
    proto = learners.registry.get_learner("cegb").make(seed=3, n_estimators=7)
    assert isinstance(proto, learners.CEGBClassifier)
    assert proto.random_state == 3 and proto.n_estimators == 7
    assert learners.registry.get_learner("cegb").classes() == [learners.CEGBClassifier]


def test_a_name_used_twice_is_refused_and_the_first_registration_kept():
    first = learners.registry.get_learner("tree")
    with pytest.raises(ValueError, match="learner name 'tree' is already registered"):
        learners.register_learner("tree", lambda seed=0: None)
    assert learners.registry.get_learner("tree") is first


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"name": "", "factory": print}, "non-empty string"),
        ({"name": "x-bad-kind", "factory": print, "kind": "magic"}, "kind of learner"),
        ({"name": "x-not-callable", "factory": 3}, "must be callable"),
        ({"name": "x-bad-class", "factory": print, "model_classes": [3]}, "model_classes"),
    ],
)
def test_bad_registrations_are_named_and_register_nothing(kwargs, match):
    before = learners.registry.registered_learners()
    with pytest.raises(ValueError, match=match):
        learners.register_learner(**kwargs)
    assert learners.registry.registered_learners() == before


def test_unknown_learner_is_named_with_the_registered_ones():
    with pytest.raises(ValueError, match="unknown learner 'nope'; registered: logistic"):
        learners.registry.get_learner("nope")


def test_a_registered_learner_model_class_is_stored_without_editing_storage(monkeypatch):
    import numpy as np

    import polydom.blobs.learner_specs as specs_module
    import storage
    import storage.blobs
    from polydom.blobs.learner_specs import LearnerSpec, learner_specs

    class Constant:
        def __init__(self, value):
            self.value = value

        def to_arrays(self):
            return {"value": np.array([self.value])}, {}

        @classmethod
        def from_arrays(cls, arrays, meta):
            return cls(float(arrays["value"][0]))

    Constant.__module__ = "learners.test_registry_constant"
    learner_specs()  # the entry points read; then one more spec, undone after the test
    monkeypatch.setitem(specs_module._SPECS, "constant", LearnerSpec(
        "constant", lambda seed=0: Constant(1.0), "budgeted", (Constant,)))
    monkeypatch.setattr(specs_module, "_VERSION", specs_module._VERSION + 1)
    blob, fmt = storage.blobs.dump_model(Constant(2.5))
    assert fmt == "arrays"
    from storage.blobs import sha256_hex

    assert storage.blobs.load_model(blob, fmt, sha256_hex(blob)).value == 2.5


def test_adapt_is_registered_around_a_named_lattice_estimator():
    pytest.importorskip("lightgbm")
    proto = learners.registry.get_learner("adapt").make(seed=2, high_cost="tree", method="gbrt")
    assert isinstance(proto, learners.AdaptClassifier)
    assert proto.fit_high_cost and proto.random_state == 2 and proto.method == "gbrt"
    assert type(proto.high_cost_model).__name__ == "DecisionTreeClassifier"
    assert learners.registry.get_learner("adapt").classes() == [learners.AdaptClassifier]
    with pytest.raises(ValueError, match="high_cost of learner 'adapt' must name a lattice"):
        learners.registry.get_learner("adapt").make(high_cost="cegb")


def test_the_project_declares_its_own_specs_as_entry_points_in_pyproject():
    import tomllib
    from pathlib import Path

    from polydom.blobs.learner_specs import ENTRY_POINT_GROUP, OWN_SPECS

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml")
                            .read_text())["project"]
    assert project["entry-points"][ENTRY_POINT_GROUP] == OWN_SPECS


def test_every_spec_names_a_factory_and_classes_that_exist():
    from polydom.blobs.learner_specs import learner_specs

    pytest.importorskip("lightgbm")
    for spec in learner_specs().values():
        assert len(spec.classes()) == len(spec.model_classes), spec.name
        if spec.factory is not None and spec.name != "synthetic":
            assert spec.make(0) is not None, spec.name


def test_a_spec_admits_its_skops_classes_and_nothing_else(monkeypatch):
    import skops.io
    from sklearn.datasets import load_iris
    from sklearn.linear_model import Perceptron

    import polydom.blobs.learner_specs as specs_module
    from polydom.blobs.allowlist import skops_refusals
    from polydom.blobs.learner_specs import LearnerSpec, learner_specs

    blob = skops.io.dumps(Perceptron(max_iter=5).fit(*load_iris(return_X_y=True)))
    written = "sklearn.linear_model._perceptron.Perceptron"
    assert f"{written} (ObjectNode)" in skops_refusals(blob)
    learner_specs()
    monkeypatch.setitem(specs_module._SPECS, "perceptron", LearnerSpec(
        "perceptron", "sklearn.linear_model:Perceptron", skops_classes=(written,)))
    monkeypatch.setattr(specs_module, "_VERSION", specs_module._VERSION + 1)
    assert skops_refusals(blob) == []
