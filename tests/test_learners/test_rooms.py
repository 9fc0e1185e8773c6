"""The budgeted learners' rooms: every public name reachable from ``learners`` and
``learners.budgeted`` (the same object as in its room), and models stored before the move
(blobs naming the flat modules) still load."""

import hashlib
import io
import json

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import learners
import learners.budgeted as budgeted
import storage
import storage.blobs
from learners.budgeted import adapt, cegb, cstc, dag
from learners.budgeted.contract import ColumnSubsetModel
from learners.budgeted.former_names import FORMER_CLASS_PATHS
from polydom.pipeline.open import register_learner_models

ROOMS = {"cegb": cegb, "cstc": cstc, "dag": dag, "adapt": adapt}


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_every_name_of_a_room_is_the_one_learners_and_budgeted_export(room):
    pytest.importorskip("lightgbm")
    package = ROOMS[room]
    assert package.__all__
    for name in package.__all__:
        obj = getattr(package, name)
        if callable(obj):
            assert obj.__module__.startswith(f"learners.budgeted.{room}.")
        if name in budgeted.__all__:
            assert getattr(budgeted, name) is obj
        if name in learners.__all__:
            assert getattr(learners, name) is obj


def test_every_public_name_of_learners_resolves():
    pytest.importorskip("lightgbm")
    for package in (learners, budgeted):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
        with pytest.raises(AttributeError, match="has no attribute 'NoSuchLearner'"):
            package.NoSuchLearner  # noqa: B018


def test_every_former_class_path_names_a_class_of_its_room():
    pytest.importorskip("lightgbm")
    for former, current in FORMER_CLASS_PATHS.items():
        module, _, qualname = current.partition(":")
        cls = getattr(ROOMS[module.split(".")[2]], qualname)
        assert f"{cls.__module__}:{cls.__qualname__}" == current
        assert former.rsplit(".", 1)[1] == qualname


@pytest.fixture(scope="module")
def small_cegb():
    pytest.importorskip("lightgbm")
    X, y = load_breast_cancer(return_X_y=True)
    groups = {f"g{j}": [j, j + 10, j + 20] for j in range(10)}
    clf = learners.CEGBClassifier(feature_groups=groups, n_estimators=6, num_leaves=4,
                                  feature_costs={g: 1.0 for g in groups},
                                  random_state=0).fit(X[:300], y[:300])
    return clf, X[300:]


def _renamed(blob: bytes, name: str) -> bytes:
    """The arrays blob with its class name replaced (as a store written before the move)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays["__polydom_meta__"].tobytes().decode())
    header["class"] = name
    arrays["__polydom_meta__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def test_a_blob_naming_the_flat_module_of_before_the_rooms_loads(small_cegb):
    clf, X = small_cegb
    register_learner_models()
    blob, fmt = storage.blobs.dump_model(clf)
    assert fmt == "arrays"
    assert b"learners.budgeted.cegb.classifier.CEGBClassifier" in blob  # written as it is now
    old = _renamed(blob, "learners.budgeted.cegb.CEGBClassifier")
    back = storage.blobs.load_model(old, fmt, hashlib.sha256(old).hexdigest())
    assert type(back) is type(clf)
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    unknown = _renamed(blob, "learners.budgeted.cegb.NoSuchClassifier")
    with pytest.raises(ValueError, match="is not registered"):
        storage.blobs.load_model(unknown, fmt, hashlib.sha256(unknown).hexdigest())


def test_a_column_subset_model_naming_a_former_module_loads(small_cegb):
    clf, X = small_cegb
    arrays, meta = clf.subset_model().to_arrays()
    cols = list(arrays["columns"])
    for former in ("learners.budgeted.cegb:CEGBClassifier",
                   "learners.budgeted.cegb.classifier:CEGBClassifier"):
        back = ColumnSubsetModel.from_arrays(arrays, {**meta, "estimator": former})
        np.testing.assert_array_equal(back.predict(X[:, cols]), clf.predict(X))
