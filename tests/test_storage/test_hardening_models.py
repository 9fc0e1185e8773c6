"""Stored models against a writer of the database (issue 25): code in skops "data" nodes,
crafted decision trees, archive bombs.  Every blob here is crafted in the test from a real
dump; each attack is first shown to work against bare skops / numpy where that is safe to
run, then shown refused by our loaders with a clear one-line error."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import skops.io
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import SGDClassifier
from sklearn.tree import DecisionTreeClassifier

import learners
import polydom
import storage
import storage.blobs
from polydom.blobs.bounds import BlobBoundsError, load_npz
from storage.blobs import dump_model, load_model, load_predictions, sha256_hex
from tests.storage_support import (
    archive_members,
    load_isolated,
    refusal,
    unseal,
    zip_archive,
)

X, Y = load_breast_cancer(return_X_y=True)
X, Y = X[:150, :6], Y[:150]


# ---------------------------------------------------------------------------- crafting
def _nodes(state, loader):
    """Every node of a skops schema with this loader."""
    if isinstance(state, dict):
        if state.get("__loader__") == loader:
            yield state
        for value in state.values():
            yield from _nodes(value, loader)
    elif isinstance(state, list):
        for value in state:
            yield from _nodes(value, loader)


def _json_node(value) -> dict:
    return {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode",
            "content": json.dumps(value), "is_json": True, "__id__": id(value) + 7}


def _with_schema(blob: bytes, edit) -> bytes:
    """``blob`` with its schema edited in place by ``edit(schema)``."""
    members = archive_members(blob)
    schema = json.loads(members["schema.json"])
    edit(schema)
    members["schema.json"] = json.dumps(schema).encode()
    return zip_archive(members)


def _sgd_blob() -> bytes:
    return skops.io.dumps(SGDClassifier(loss="hinge", random_state=0).fit(X, Y))


def _loss_calling(module: str, name: str, args: list) -> bytes:
    """An SGD classifier whose loss node (a "data" node to skops) calls ``module.name``."""

    def edit(schema):
        loss = next(_nodes(schema, "LossNode"))
        loss["__module__"], loss["__class__"] = module, name
        loss["__reduce__"]["args"]["content"] = [_json_node(a) for a in args]

    return _with_schema(_sgd_blob(), edit)


def _dict_key_calling(name: str, key: str) -> bytes:
    """A model whose state dict types a key with ``builtins.name`` (skops calls it on the
    key's text)."""

    def edit(schema):
        state = schema["content"]
        state["content"] = {key: _json_node(1), **state["content"]}
        kinds = state["key_types"]["content"]
        kinds.insert(0, {**kinds[0], "__class__": name, "__id__": 99})

    return _with_schema(_sgd_blob(), edit)


def _attacks(tmp_path: Path) -> dict[str, tuple[bytes, Path]]:
    """Crafted blobs and the file each one creates when skops builds it."""
    marks = {k: tmp_path / f"{k}.mark" for k in ("eval", "memmap", "dictkey")}
    code = f"__import__('pathlib').Path({str(marks['eval'])!r}).touch()"
    key_code = f"__import__('pathlib').Path({str(marks['dictkey'])!r}).touch()"
    return {
        "eval": (_loss_calling("builtins", "eval", [code]), marks["eval"]),
        "memmap": (_loss_calling("numpy", "memmap", [str(marks["memmap"]), "uint8", "w+", 0,
                                                     [16]]), marks["memmap"]),
        "dictkey": (_dict_key_calling("eval", key_code), marks["dictkey"]),
    }


# ---------------------------------------------------------------------------- code in nodes
@pytest.mark.parametrize("attack", ["eval", "memmap", "dictkey"])
def test_the_crafted_node_runs_code_under_bare_skops(tmp_path, attack):
    # The precondition of the attack: skops's own audit trusts these node kinds.
    blob, mark = _attacks(tmp_path)[attack]
    try:
        skops.io.loads(blob, trusted=skops.io.get_untrusted_types(data=blob))
    except Exception:  # noqa: BLE001 - what happens after the call does not matter
        pass
    assert mark.exists()


@pytest.mark.parametrize("attack, named", [("eval", "builtins.eval (LossNode)"),
                                           ("memmap", "numpy.memmap (LossNode)"),
                                           ("dictkey", "builtins.eval (TypeNode)")])
def test_a_data_node_naming_a_callable_is_refused_before_anything_is_built(
        tmp_path, attack, named):
    blob, mark = _attacks(tmp_path)[attack]
    with pytest.raises(storage.UntrustedModelError, match="model x: .*" + re.escape(named)):
        load_model(blob, "skops", sha256_hex(blob), what="model x")
    assert not mark.exists()


def test_trusted_does_not_admit_a_malformed_tree(tmp_path):
    blob = _tree_blob(_set("left_child", 0, 10**6))
    with pytest.raises(storage.ModelIntegrityError, match="malformed.*out of range"):
        load_model(blob, "skops", sha256_hex(blob), trusted=True)


def _store_with_a_skops_model(tmp_path: Path) -> tuple[str, Path]:
    from sklearn.linear_model import LogisticRegression

    learner = learners.SklearnLearner(LogisticRegression(max_iter=300), X, Y,
                                      features={"a": [0, 1, 2], "b": [3, 4, 5]}, cv=3)
    path = tmp_path / "index.db"
    polydom.build_index({"a": "1", "b": "2"}, learner, alpha=1.0, n_max=10.0,
                        store=f"sqlite:///{path}")
    return f"sqlite:///{path}", path


def _rewrite_models(path: Path, blob: bytes) -> None:
    """What a writer of the database without the key can do: new blobs, new sha256, the
    seals deleted (an unsigned store then opens its builds unverified)."""
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE expansions SET model_blob = :b, model_sha256 = :d, "
                             "model_format = 'skops'"), {"b": blob, "d": sha256_hex(blob)})
    engine.dispose()
    unseal(f"sqlite:///{path}")


def test_a_store_rewritten_with_the_eval_node_runs_nothing_on_open_nor_in_a_writer(tmp_path):
    url, path = _store_with_a_skops_model(tmp_path)
    blob, mark = _attacks(tmp_path)["eval"]
    _rewrite_models(path, blob)
    index = polydom.open_index(url)  # models load on first use
    with pytest.raises(storage.UntrustedModelError, match=r"builtins\.eval \(LossNode\)"):
        index.predict(X[:2], size=5.0, budget=100.0)
    store = storage.IndexStore(url)
    build = store.begin_build({"alpha": 1.0, "learner": "other"}, {"a": "1", "b": "2"},
                              {"a": [0, 1, 2], "b": [3, 4, 5]})
    cache = store.expansion_cache(build)
    for fs in ({"a"}, {"b"}, {"a", "b"}):
        if frozenset(fs) in cache:
            with pytest.raises(storage.UntrustedModelError, match=r"builtins\.eval"):
                cache[frozenset(fs)]
    assert not mark.exists()


# ---------------------------------------------------------------------------- crafted trees
def _tree_blob(edit) -> bytes:
    """A fitted tree's skops blob with its ``nodes`` array edited by ``edit(nodes)``."""
    blob = skops.io.dumps(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, Y))
    members = archive_members(blob)
    schema = json.loads(members["schema.json"])
    tree = next(_nodes(schema, "TreeNode"))
    name = tree["content"]["content"]["nodes"]["file"]
    nodes = np.load(io.BytesIO(members[name]), allow_pickle=False)
    edit(nodes)
    buf = io.BytesIO()
    np.save(buf, nodes, allow_pickle=False)
    members[name] = buf.getvalue()
    return zip_archive(members)


def _set(field: str, node: int, value):
    """An edit of a tree's nodes: ``nodes[field][node] = value(nodes)`` (or ``value``)."""

    def edit(nodes):
        nodes[field][node] = value(nodes) if callable(value) else value

    return edit


TREE_EDITS = {
    "child-out-of-range": (_set("left_child", 0, 10**6), "out of range"),
    "child-before-parent": (_set("left_child", 1, 0), "out of range"),
    "feature-out-of-range": (_set("feature", 0, 10**5), "feature"),
    "negative-feature": (_set("feature", 0, -7), "feature"),
    "one-child": (_set("right_child", 0, -1), "one child"),
    "two-parents": (_set("right_child", 0, lambda n: n["left_child"][0]), "out of range"),
}


@pytest.mark.parametrize("edit", sorted(TREE_EDITS))
def test_a_crafted_tree_is_refused_before_it_can_run(tmp_path, edit):
    change, message = TREE_EDITS[edit]
    blob = _tree_blob(change)
    (tmp_path / "tree.skops").write_bytes(blob)
    line = refusal(load_isolated(tmp_path / "tree.skops", "skops", "np.zeros((4, 6))"))
    assert line.startswith("ModelIntegrityError model m: skops archive is malformed")
    assert message in line


def test_a_forest_whose_tree_is_wider_than_the_forest_is_refused():
    from sklearn.ensemble import RandomForestClassifier

    blob = skops.io.dumps(RandomForestClassifier(2, max_depth=2, random_state=0).fit(X, Y))

    def edit(schema):
        for node in _nodes(schema, "ObjectNode"):
            if node["__class__"] == "DecisionTreeClassifier":
                node["content"]["content"]["n_features_in_"] = _json_node(60)
                break

    crafted = _with_schema(blob, edit)
    with pytest.raises(storage.ModelIntegrityError, match="malformed"):
        load_model(crafted, "skops", sha256_hex(crafted))


def test_untouched_trees_and_forests_still_load_and_predict_the_same():
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

    for model in (DecisionTreeClassifier(max_depth=4, random_state=0),
                  RandomForestClassifier(5, random_state=0),
                  ExtraTreesClassifier(3, random_state=0)):
        model.fit(X, Y)
        blob, fmt = dump_model(model)
        again = load_model(blob, fmt, sha256_hex(blob))
        assert np.array_equal(again.predict_proba(X), model.predict_proba(X))


# ---------------------------------------------------------------------------- bombs
def _bomb(inflated: int, name: str = "big.npy") -> dict[str, bytes]:
    """An ``.npy`` member of ``inflated`` bytes of zeros (deflates ~1000x)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (inflated,)})
    return {name: header.getvalue() + bytes(inflated - len(header.getvalue()) + 128)}


def test_a_zip_bomb_model_blob_is_refused_before_it_is_inflated():
    schema = json.loads(archive_members(_sgd_blob())["schema.json"])
    for fmt, members in (("skops", {"schema.json": json.dumps(schema).encode(),
                                    **_bomb(64 << 20)}),
                         ("arrays", _bomb(64 << 20, "__polydom_meta__.npy"))):
        blob = zip_archive(members, zipfile.ZIP_DEFLATED)
        assert len(blob) < 1 << 20  # < 1 MiB stored, 64 MiB inflated
        with pytest.raises(storage.ModelIntegrityError,
                           match=r"declares \d+ bytes once inflated.*refusing to decompress"):
            load_model(blob, fmt, sha256_hex(blob), what="model x")


def test_an_npy_header_declaring_more_than_its_data_is_refused():
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)})
    blob = header.getvalue() + bytes(8)
    with pytest.raises(storage.ModelIntegrityError, match="declares shape"):
        load_predictions(blob, "npy", sha256_hex(blob), storage.blobs.BlobDigest(), "predictions")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<U100000000", "fortran_order": False, "shape": (0,)})
    with pytest.raises(BlobBoundsError, match="items of 400000000 bytes"):
        load_npz(zip_archive({"a.npy": header.getvalue()}), "arrays")


def test_a_zip_bomb_in_build_arrays_is_refused_on_open(tmp_path):
    url, path = _store_with_a_skops_model(tmp_path)
    blob = zip_archive(_bomb(64 << 20, "meta.npy"), zipfile.ZIP_DEFLATED)
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE build_arrays SET blob = :b, digest = :d"),
                     {"b": blob, "d": sha256_hex(blob)})
    engine.dispose()
    with pytest.raises(storage.IndexIntegrityError, match="refusing to decompress"):
        polydom.open_index(url)


def _allowed_estimators():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestRegressor
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.svm import SVC

    labels = np.array(["no", "yes"])[Y]
    return [
        (make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)), X, labels),
        (make_pipeline(MinMaxScaler(), SGDClassifier(loss="log_loss", random_state=0)), X, Y),
        (SGDClassifier(loss="modified_huber", random_state=np.random.RandomState(0)), X, Y),
        (ExtraTreesClassifier(3, random_state=0), X, labels),
        (RandomForestRegressor(3, max_depth=3, random_state=0), X, X[:, 0]),
        (CalibratedClassifierCV(DecisionTreeClassifier(max_depth=2), cv=2,
                                method="isotonic"), X, Y),
        (CalibratedClassifierCV(SVC(), cv=2), X, Y),
        (DummyClassifier(), X, labels), (GaussianNB(), X, Y), (Lasso(), X, X[:, 1]),
        (Ridge(), X, X[:, 1]), (KNeighborsClassifier(algorithm="brute"), X, Y),
        (IsotonicRegression(), X[:, 0], X[:, 1]),
    ]


@pytest.mark.parametrize("case", range(13))
def test_the_grammar_admits_every_kind_of_estimator_the_project_stores(case):
    model, data, target = _allowed_estimators()[case]
    model.fit(data, target)
    blob, fmt = dump_model(model)
    assert fmt == "skops"
    again = load_model(blob, fmt, sha256_hex(blob))
    np.testing.assert_array_equal(again.predict(data), model.predict(data))
