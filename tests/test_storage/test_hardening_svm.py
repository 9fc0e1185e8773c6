"""Stored libsvm models (SVC, NuSVC, SVR, NuSVR, OneClassSVM) against a writer of the
database (issue 25 follow-up): their compiled internals (support vectors, dual
coefficients, intercepts, class counts) are range-checked before the model is built
(:mod:`polydom.blobs.svm_check`).  Each crafted blob is made here from a real dump, first
shown to crash or misbehave under bare skops and scikit-learn (in a fresh interpreter),
then shown refused with one line by our loader."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import skops.io
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

import storage
from polydom.blobs.allowlist import register_model_class, unregister_model_class
from storage.blobs import dump_model, load_model, sha256_hex
from tests.storage_support import (
    archive_members,
    execute_sql,
    load_isolated,
    refusal,
    run_isolated,
    unseal,
    zip_archive,
)

X, Y = load_iris(return_X_y=True)
GRAM = X @ X.T


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _edited(model, arrays=None, json_values=None, drop=()) -> bytes:
    """``model``'s skops blob with stored attributes replaced: ``arrays`` (name -> array,
    written over the attribute's ``.npy`` member), ``json_values`` (name -> JSON value);
    the attributes ``drop`` deleted."""
    members = archive_members(skops.io.dumps(model))
    schema = json.loads(members["schema.json"])
    state = schema["content"]["content"]
    keys = schema["content"]["key_types"]["content"]
    for name in drop:
        del keys[list(state).index(name)]
        del state[name]
    for name, value in (arrays or {}).items():
        members[state[name]["file"]] = _npy(value)
    for name, value in (json_values or {}).items():
        if name not in state:
            keys.append(keys[0])  # a new attribute: its key is a str too
        state[name] = {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode",
                       "content": json.dumps(value), "is_json": True,
                       "__id__": 10**6 + len(name)}
    members["schema.json"] = json.dumps(schema).encode()
    return zip_archive(members)


def _svc() -> SVC:
    return SVC(random_state=0).fit(X, Y)


def _precomputed() -> SVC:
    return SVC(kernel="precomputed").fit(GRAM, Y)


def _crafted(attack: str) -> bytes:
    model = _precomputed() if attack == "support-out-of-range" else _svc()
    n_sv = len(model.support_)
    return _edited(model, {
        # libsvm reads the support vectors _n_support says there are: none are stored
        # (scikit-learn's own check skips a model without support vectors)
        "no-support-vectors": {"support_vectors_": np.zeros((0, 4))},
        # 70001 classes: libsvm copies 70001 * 70000 / 2 intercepts
        "too-many-classes": {"_n_support": np.array([n_sv] + [0] * 70000, np.int32)},
        # the counts sum right, one is negative
        "negative-count": {"_n_support": np.array([n_sv + 10**6, -10**6, 0], np.int32)},
        # a precomputed kernel's support_ indexes the columns of the rows predicted
        "support-out-of-range": {"support_": np.full(n_sv, 2**30, np.int32)},
        # one intercept for three pairs of classes: two are read past the array
        "short-intercept": {"_intercept_": model._intercept_[:1]},
        # one coefficient per class pair for n_sv support vectors
        "narrow-dual-coef": {"_dual_coef_": np.ascontiguousarray(model._dual_coef_[:, :1])},
    }[attack])


#: attack -> what the refusal names.
ATTACKS = {
    "no-support-vectors": "support vectors of shape (0, 4)",
    "too-many-classes": "_n_support names 70001 classes",
    "negative-count": "does not split the",
    "support-out-of-range": "support_ indexes rows outside [0, 150)",
    "short-intercept": "_intercept_ of shape (1,) is not (3,)",
    "narrow-dual-coef": "_dual_coef_ of shape (2, 1) is not (2,",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_crafted_svm_crashes_or_misbehaves_under_bare_skops(tmp_path, attack):
    # The precondition of each attack: scikit-learn itself runs the crafted model, and the
    # process dies (rc != 0: a segmentation fault) or answers other than the true model.
    (tmp_path / "svm.skops").write_bytes(_crafted(attack))
    rows = "gram" if attack == "support-out-of-range" else "X"
    done = run_isolated(f"""
        import numpy as np, skops.io
        from sklearn.datasets import load_iris
        from sklearn.svm import SVC
        X, y = load_iris(return_X_y=True)
        gram = X @ X.T
        true = (SVC(kernel="precomputed").fit(gram, y) if {rows!r} == "gram"
                else SVC(random_state=0).fit(X, y))
        blob = open({str(tmp_path / 'svm.skops')!r}, 'rb').read()
        model = skops.io.loads(blob, trusted=skops.io.get_untrusted_types(data=blob))
        same = np.array_equal(model.decision_function({rows}), true.decision_function({rows}))
        print("SAME" if same else "DIFFERENT")
    """)
    assert done.returncode != 0 or done.stdout.strip() == "DIFFERENT", done.stdout


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_crafted_svm_is_refused_before_it_can_run(tmp_path, attack):
    (tmp_path / "svm.skops").write_bytes(_crafted(attack))
    rows = "np.ones((3, 150))" if attack == "support-out-of-range" else "np.ones((3, 4))"
    line = refusal(load_isolated(tmp_path / "svm.skops", "skops", rows))
    assert line.startswith("ModelIntegrityError model m: skops archive is malformed (a "
                           "stored SVC (libsvm) is malformed: ")
    assert ATTACKS[attack] in line


@pytest.fixture
def registered():
    """SVR, NuSVC, NuSVR and OneClassSVM admitted (the project stores SVC only)."""
    classes = (SVR, NuSVC, NuSVR, OneClassSVM)
    for cls in classes:
        register_model_class(cls)
    yield
    for cls in classes:
        unregister_model_class(cls)


@pytest.mark.parametrize("model, edit, message", [
    (_svc, {"json_values": {"_sparse": True}}, "_sparse is True"),
    (_svc, {"drop": ["_dual_coef_"]}, "_dual_coef_ is not a stored array"),
    (_svc, {"json_values": {"kernel": "sinc"}}, "kernel 'sinc'"),
    (_svc, {"json_values": {"_impl": "epsilon_svr"}}, "sets _impl"),
    (_svc, {"json_values": {"degree": 10**9}}, "degree 1000000000"),
    (_svc, {"arrays": {"_gamma": np.float64(np.inf)}}, "_gamma or coef0"),
    (_svc, {"arrays": {"support_": np.arange(150, 150 + 60)}}, "support_ of dtype int64"),
    (_svc, {"arrays": {"classes_": np.arange(2)}}, "classes_ is not 3 classes"),
    (_svc, {"arrays": {"_probA": np.ones(1), "_probB": np.ones(1)}}, "_probA and _probB"),
    (_svc, {"arrays": {"support_vectors_": np.zeros((4, 60)).T}}, "C-ordered"),
    (lambda: SVR().fit(X, X[:, 0]), {"arrays": {"_n_support": np.array([23, 0], np.int32)}},
     "is not [23, 23]"),
    (lambda: OneClassSVM().fit(X), {"arrays": {"_dual_coef_": np.ones((2, 76))}},
     "is not (1, 76)"),
], ids=["sparse", "partly-fitted", "kernel", "impl", "degree", "gamma", "support-dtype", "classes",
        "prob-pairs", "fortran", "svr-counts", "one-class-dual"])
def test_inconsistent_libsvm_state_is_refused_in_one_line(registered, model, edit, message):
    blob = _edited(model(), **edit)
    with pytest.raises(storage.ModelIntegrityError, match="libsvm") as caught:
        load_model(blob, "skops", sha256_hex(blob), what="model m")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert "more problems" not in str(caught.value)  # the edit is the only problem


def test_a_libsvm_model_inside_a_pipeline_or_calibration_is_checked_too():
    for model in (make_pipeline(StandardScaler(), SVC()).fit(X, Y),
                  CalibratedClassifierCV(SVC(), cv=2).fit(X, Y)):
        members = archive_members(skops.io.dumps(model))
        schema = json.loads(members["schema.json"])
        text = json.dumps(schema)
        start = text.index('"_intercept_"')
        name = json.loads(text[text.index("{", start):text.index("}", start) + 1])["file"]
        members[name] = _npy(np.ones(1))
        blob = zip_archive(members)
        with pytest.raises(storage.ModelIntegrityError, match=r"_intercept_ of shape \(1,\)"):
            load_model(blob, "skops", sha256_hex(blob))


@pytest.mark.parametrize("make", [
    lambda: SVC(random_state=0).fit(X, Y),
    lambda: SVC(kernel="linear").fit(X, Y % 2),
    lambda: SVC(kernel="poly", degree=2, probability=True, random_state=0).fit(X, Y),
    lambda: SVC(kernel="sigmoid", gamma=0.01).fit(X, Y),
    lambda: NuSVC().fit(X, Y),
    lambda: SVR().fit(X, X[:, 0]),
    lambda: NuSVR().fit(X, X[:, 0]),
    lambda: OneClassSVM().fit(X),
    lambda: make_pipeline(StandardScaler(), SVC()).fit(X, Y),
    lambda: CalibratedClassifierCV(SVC(), cv=2).fit(X, Y),
], ids=["svc-rbf", "svc-linear-binary", "svc-poly-probability", "svc-sigmoid", "nusvc",
        "svr", "nusvr", "one-class", "pipeline", "calibrated"])
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_untouched_libsvm_models_load_and_predict_the_same(registered, make):
    model = make()
    blob, fmt = dump_model(model)
    again = load_model(blob, fmt, sha256_hex(blob))
    assert np.array_equal(again.predict(X), model.predict(X))
    if hasattr(model, "decision_function"):
        assert np.array_equal(again.decision_function(X), model.decision_function(X))


def test_an_untouched_precomputed_kernel_svc_loads_and_predicts_the_same():
    model = _precomputed()
    blob, fmt = dump_model(model)
    again = load_model(blob, fmt, sha256_hex(blob))
    assert np.array_equal(again.decision_function(GRAM), model.decision_function(GRAM))


def test_a_store_whose_svc_models_were_rewritten_refuses_them_at_first_use(tmp_path):
    import learners
    import polydom

    learner = learners.SklearnLearner(SVC(random_state=0), X, Y,
                                      features={"a": [0, 1], "b": [2, 3]}, cv=2)
    path = tmp_path / "index.db"
    polydom.build_index({"a": "1", "b": "2"}, learner, alpha=1.0, n_max=10.0,
                        store=f"sqlite:///{path}")
    # what a writer without the key does: crafted blobs, their sha256, the seals deleted
    blob = _crafted("too-many-classes")
    execute_sql(f"sqlite:///{path}",
                f"UPDATE expansions SET model_blob = x'{blob.hex()}', "
                f"model_sha256 = '{sha256_hex(blob)}', model_format = 'skops'")
    unseal(f"sqlite:///{path}")
    done = run_isolated(f"""
        import numpy as np
        import polydom
        index = polydom.open_index({str(path)!r})  # lazy: nothing is decoded yet
        try:
            index.predict(np.ones((3, 4)), 10.0, 100.0)
            print('RAN')
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    line = refusal(done)
    assert line.startswith("ModelIntegrityError ") and "_n_support names 70001 classes" in line
