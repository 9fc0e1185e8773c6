"""LightGBM blobs against a writer of the database (issue 25): the model text is parsed and
bounded by our grammar (learners.codecs.lightgbm_text) before LightGBM reads it.  Crafted
texts are made here from a real model; loads that could crash run in a fresh interpreter,
so a regression fails a test instead of killing the suite."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

import storage  # noqa: E402
from learners.codecs.lightgbm_text import (  # noqa: E402
    LightGBMTextError,
    booster_from_text,
    checked_model_text,
)
from storage.blobs import dump_model, load_model, sha256_hex  # noqa: E402
from tests.storage_support import load_isolated, refusal, run_isolated  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(200, 5))
Y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)


def _model() -> lightgbm.LGBMClassifier:
    return lightgbm.LGBMClassifier(n_estimators=4, num_leaves=4, verbose=-1, n_jobs=1).fit(X, Y)


def _text() -> str:
    return _model().booster_.model_to_string()


def _sub(text: str, pattern: str, repl: str, count: int = 1) -> str:
    new = re.sub(pattern, repl, text, count=count, flags=re.M)
    assert new != text, pattern
    return new


def _resized(text: str) -> str:
    """``text`` with ``tree_sizes`` made right again (so each attack is tested alone)."""
    end = text.index("\nend of trees") + 1
    starts = [m.start() + 1 for m in re.finditer(r"\nTree=", text)]
    sizes = [b - a for a, b in zip(starts, [*starts[1:], end], strict=True)]
    return re.sub(r"^tree_sizes=.*$", "tree_sizes=" + " ".join(map(str, sizes)), text,
                  count=1, flags=re.M)


#: Crafted texts: name -> (edit of a real model's text, what the refusal says).
ATTACKS = {
    "tree_sizes": (lambda t: _sub(t, r"^tree_sizes=(\d+)", r"tree_sizes=9\1"), "tree_sizes"),
    "num_tree_per_iteration": (
        lambda t: _sub(t, r"^num_tree_per_iteration=3", "num_tree_per_iteration=1000000"),
        "num_tree_per_iteration"),
    "objective-classes": (lambda t: _sub(t, r"num_class:3", "num_class:100000"), "objective"),
    "child-out-of-range": (lambda t: _sub(t, r"^left_child=\S+", "left_child=7"), "left_child"),
    "child-cycle": (lambda t: _sub(t, r"^right_child=\S+", "right_child=0"), "reached twice"),
    "feature-out-of-range": (lambda t: _sub(t, r"^split_feature=\S+", "split_feature=4096"),
                             "split_feature"),
    "categorical-split": (lambda t: _sub(t, r"^num_cat=0", "num_cat=1"), "categorical"),
    "unknown-header-line": (lambda t: _sub(t, r"^label_index=0", "label_index=0\nfoo=1"),
                            "not part of the format"),
    "leaf-count": (lambda t: _sub(t, r"^num_leaves=4", "num_leaves=40"), "leaf_value"),
}


def test_wrong_tree_sizes_abort_bare_lightgbm(tmp_path):
    # The precondition of the attack: LightGBM itself dies on this text.
    text = ATTACKS["tree_sizes"][0](_text())
    (tmp_path / "model.txt").write_text(text)
    done = run_isolated(f"""
        import lightgbm
        lightgbm.Booster(model_str=open({str(tmp_path / 'model.txt')!r}).read())
        print('LOADED')
    """)
    assert done.returncode != 0 or "LOADED" not in done.stdout


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_crafted_lightgbm_text_is_refused_before_lightgbm_reads_it(tmp_path, attack):
    edit, message = ATTACKS[attack]
    model = _model()
    blob, fmt = dump_model(model)
    doc = json.loads(blob)
    doc["model"] = edit(doc["model"])
    if attack != "tree_sizes":
        doc["model"] = _resized(doc["model"])
    (tmp_path / "blob.json").write_bytes(json.dumps(doc).encode())
    done = load_isolated(tmp_path / "blob.json", "lightgbm", "np.zeros((3, 5))", codecs=True)
    line = refusal(done)
    assert line.startswith("ModelIntegrityError model m: ")
    assert message in line
    assert "[LightGBM]" not in done.stdout + done.stderr


def test_a_huge_class_dtype_is_refused_before_anything_is_allocated(tmp_path):
    blob, _ = dump_model(_model())
    doc = json.loads(blob)
    doc["classes"]["dtype"] = "<U100000000"
    (tmp_path / "blob.json").write_bytes(json.dumps(doc).encode())
    # under a 3 GiB address space: a regression (the dtype allocated) fails the test
    line = refusal(load_isolated(tmp_path / "blob.json", "lightgbm", codecs=True,
                                 address_space=3 << 30))
    assert line.startswith("ModelIntegrityError model m: ")
    assert "classes of dtype '<U100000000'" in line


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(kind="Dataset"), "kind"),
    (lambda d: d["params"].update(n_jobs=10**9), "n_jobs"),
    (lambda d: d["state"].update(_n_classes="3"), "_n_classes"),
    (lambda d: d["state"].update(__class__=1), "__class__"),
    (lambda d: d["classes"].update(values=list(range(500))), "3 plain values"),
])
def test_the_wrapper_around_the_text_is_checked_too(edit, message):
    blob, _ = dump_model(_model())
    doc = json.loads(blob)
    edit(doc)
    crafted = json.dumps(doc).encode()
    with pytest.raises(storage.ModelIntegrityError, match=message):
        load_model(crafted, "lightgbm", sha256_hex(crafted))


def test_real_models_pass_the_grammar_and_predict_the_same():
    xr = RNG.normal(size=(150, 4))
    models = [
        _model(),
        lightgbm.LGBMClassifier(n_estimators=3, verbose=-1, n_jobs=1).fit(X, Y > 0),
        lightgbm.LGBMRegressor(n_estimators=3, verbose=-1, n_jobs=1).fit(xr, xr[:, 0]),
        lightgbm.LGBMRegressor(n_estimators=2, verbose=-1, n_jobs=1).fit(xr, np.ones(150)),
        lightgbm.LGBMClassifier(n_estimators=3, verbose=-1, n_jobs=1, boosting_type="rf",
                                bagging_freq=1, bagging_fraction=0.5).fit(X, Y > 0),
    ]
    for model in models:
        data = X if model.n_features_in_ == 5 else xr
        booster = booster_from_text(model.booster_.model_to_string())
        np.testing.assert_array_equal(booster.predict(data), model.booster_.predict(data))
        blob, fmt = dump_model(model)
        np.testing.assert_array_equal(load_model(blob, fmt, sha256_hex(blob)).predict(data),
                                      model.predict(data))


def test_the_canonical_text_keeps_header_and_trees_only():
    text = _text()
    checked = checked_model_text(text)
    assert checked == text[:text.index("end of trees")] + "end of trees\n"
    with pytest.raises(LightGBMTextError, match="no 'end of trees'"):
        checked_model_text(text.replace("end of trees", "end"))
