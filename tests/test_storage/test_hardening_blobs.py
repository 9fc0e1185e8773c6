"""Model blobs against a writer of the database (issue 14): the narrowed allow-list, no
function-valued parameters, the optional HMAC key, and corrupt blobs as our own error."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import storage
from polydom.blobs.allowlist import skops_refusals, unregister_model_class
from storage.blobs import BlobDigest, dump_model, load_model, sha256_hex

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:120, :4], Y[:120]


def _skops(model):
    blob, fmt = dump_model(model)
    assert fmt == "skops"
    return blob


@pytest.mark.parametrize(
    "model",
    [
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)),
        make_pipeline(StandardScaler(), SGDClassifier(loss="hinge", penalty="l1")),
        pytest.param("tree", id="tree"),
        pytest.param("forest", id="forest"),
        pytest.param("calibrated-svc", id="calibrated-svc"),
    ],
)
def test_model_allow_list_admits_the_estimators_the_project_stores(model):
    if model == "tree":
        from sklearn.tree import DecisionTreeClassifier

        model = DecisionTreeClassifier(max_depth=3)
    elif model == "forest":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(3, max_depth=2, random_state=0)
    elif model == "calibrated-svc":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.svm import SVC

        model = CalibratedClassifierCV(SVC(), cv=2)
    model.fit(X, Y)
    blob = _skops(model)
    assert skops_refusals(blob) == []
    loaded = load_model(blob, "skops", sha256_hex(blob))
    assert (loaded.predict(X) == model.predict(X)).all()


def test_model_allow_list_refuses_function_transformer_with_numpy_memmap(tmp_path):
    # The attack of the issue: a writer of the database stores this blob with a recomputed
    # sha256; predict() would create files.  It must not even be built.
    evil = FunctionTransformer(func=np.memmap).fit(X, Y)
    blob = _skops(evil)
    with pytest.raises(storage.UntrustedModelError, match="numpy.memmap"):
        load_model(blob, "skops", sha256_hex(blob), what="model of candidate 'x'")


def test_model_allow_list_refuses_function_valued_parameters():
    blob = _skops(FunctionTransformer(func=np.log1p).fit(X, Y))
    with pytest.raises(storage.UntrustedModelError, match=r"numpy.log1p \(FunctionNode\)"):
        load_model(blob, "skops", sha256_hex(blob))


def test_model_allow_list_refuses_estimators_the_project_does_not_store():
    from sklearn.neural_network import MLPClassifier

    blob = _skops(MLPClassifier(hidden_layer_sizes=(2,), max_iter=5).fit(X, Y))
    with pytest.raises(storage.UntrustedModelError, match="MLPClassifier"):
        load_model(blob, "skops", sha256_hex(blob))


def test_registered_model_classes_are_admitted():
    from sklearn.naive_bayes import BernoulliNB

    blob = _skops(BernoulliNB().fit(X, Y))
    with pytest.raises(storage.UntrustedModelError):
        load_model(blob, "skops", sha256_hex(blob))
    storage.register_model_class(BernoulliNB)
    try:
        assert load_model(blob, "skops", sha256_hex(blob)).predict(X[:3]).shape == (3,)
    finally:
        unregister_model_class(BernoulliNB)


def test_corrupt_blobs_with_a_valid_digest_raise_model_integrity_error_truncated_skops():
    blob = _skops(LogisticRegression(max_iter=200).fit(X, Y))[:200]
    with pytest.raises(storage.ModelIntegrityError, match="does not decode"):
        load_model(blob, "skops", sha256_hex(blob))


def test_corrupt_blobs_with_a_valid_digest_raise_model_integrity_error_skops_bad_schema():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("schema.json", "{not json")
    blob = buf.getvalue()
    with pytest.raises(storage.ModelIntegrityError, match="does not decode"):
        load_model(blob, "skops", sha256_hex(blob))


@pytest.mark.parametrize("text", ["garbage text", "tree\nversion=v4\nTree=0\n"])
def test_corrupt_blobs_with_a_valid_digest_raise_model_integrity_error_lightgbm(text, capfd):
    pytest.importorskip("lightgbm")
    import json

    blob = json.dumps({"kind": "Booster", "model": text}).encode()
    with pytest.raises(storage.ModelIntegrityError, match="not a LightGBM text model"):
        load_model(blob, "lightgbm", sha256_hex(blob))
    out, err = capfd.readouterr()
    assert "[LightGBM] [Fatal]" not in out + err


@pytest.mark.parametrize("fmt, blob", [("arrays", b"PK\x03\x04junk"), ("lightgbm", b"\xff\xfe"),
                                       ("arrays", b"")])
def test_corrupt_blobs_with_a_valid_digest_raise_model_integrity_error_any_format(fmt, blob):
    with pytest.raises(storage.ModelIntegrityError, match="does not decode"):
        load_model(blob, fmt, sha256_hex(blob))


def test_optional_hmac_key_proves_blobs_were_written_by_a_key_holder():
    model = LogisticRegression(max_iter=200).fit(X, Y)
    blob = _skops(model)
    keyed = BlobDigest(b"secret")
    stored = keyed.of(blob)
    assert load_model(blob, "skops", stored, digest=keyed).predict(X[:2]).shape == (2,)
    # a writer without the key can only recompute a plain sha256 or an HMAC under another key
    for forged in (sha256_hex(blob), BlobDigest(b"guess").of(blob)):
        with pytest.raises(storage.ModelIntegrityError, match="HMAC"):
            load_model(blob, "skops", forged, digest=keyed)


def test_optional_hmac_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(storage.blobs.KEY_ENV, "from-env")
    assert BlobDigest.resolve().of(b"x") == BlobDigest("from-env").of(b"x")
    assert BlobDigest.resolve("given").of(b"x") == BlobDigest("given").of(b"x")
    monkeypatch.setenv(storage.blobs.KEY_ENV, "")
    assert not BlobDigest.resolve().keyed
    assert BlobDigest("from-env").key_id != BlobDigest("other").key_id
