"""Configs on the user's own data (issue 23 item 1) and bounded configs (issue 25).

The data a config names (CSV/TSV/Parquet/.npy/.npz files, ``module:function`` loaders,
featurizers over raw items) is read back and compared with the arrays it was written from;
feature selectors (names, indices, ranges, globs) and per-column costs against hand-worked
answers; every bad config is one line naming the key or file, and stores nothing.
"""

from __future__ import annotations

import json
import runpy
import shutil
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_wine

import polydom
from polydom.app.cli import main
from polydom.app.config_data import (
    MAX_COLUMNS,
    MAX_FEATURES,
    Dataset,
    feature_columns,
    feature_costs,
    load_dataset,
)
from polydom.curves.cost_curve import CostCurve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WINE = load_wine()
NAMES = [*WINE.feature_names, "cultivar"]


def _write_csv(path: Path, names, rows, delimiter=",") -> Path:
    lines = [delimiter.join(names)] + [delimiter.join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _fails(argv, capsys) -> str:
    """Run ``argv``: exit 2, one line on stderr, nothing on stdout; the line."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    return err


# ------------------------------------------------------------------- the shipped example
def test_the_shipped_wine_csv_is_what_its_script_writes(tmp_path):
    script = runpy.run_path(str(EXAMPLES / "make_wine_csv.py"))  # its functions, not run as main
    written = script["write_wine_csv"](tmp_path / "wine.csv")
    assert written.read_bytes() == (EXAMPLES / "wine.csv").read_bytes()
    data = load_dataset({"data": "wine.csv", "target": "cultivar"}, EXAMPLES)
    np.testing.assert_array_equal(data.X, WINE.data)  # every value round-trips exactly
    np.testing.assert_array_equal(data.y, WINE.target)
    assert data.names == list(WINE.feature_names)


@pytest.mark.slow
def test_the_wine_example_builds_and_answers_through_the_cli(tmp_path, capsys):
    for name in ("wine.toml", "wine.csv"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    assert main(["build", str(tmp_path / "wine.toml")]) == 0
    assert "stored as build 1" in capsys.readouterr().out
    config = tomllib.loads((tmp_path / "wine.toml").read_text())
    index = polydom.open_index(f"sqlite:///{tmp_path / 'wine.db'}")
    # each feature's columns are the ones its selectors name in the CSV's header
    names = list(WINE.feature_names)
    expected = {
        "basic": [names.index(c) for c in ("alcohol", "ash", "magnesium")],
        "acids": [names.index(c) for c in ("malic_acid", "alcalinity_of_ash")],
        "phenols": [names.index(c) for c in ("total_phenols", "nonflavanoid_phenols",
                                             "flavanoids", "proanthocyanins")],
        "colour": [9, 10, 11],
        "proline": [12],
    }
    for feature, cols in expected.items():
        assert sorted(index.model_columns([feature])) == sorted(cols)
    # every candidate costs the sum of its features' configured costs (colour: its columns')
    costs = {k: CostCurve.parse(v) for k, v in config["costs"].items()}
    costs["colour"] = (costs["color_intensity"] + costs["hue"]
                       + costs["od280/od315_of_diluted_wines"])
    for c in index.candidates:
        for n in (1.0, 50.0, 100.0):
            assert c.cost(n) == pytest.approx(sum(costs[f](n) for f in c.features), abs=1e-9)
    hit = index.lookup(size=50.0, budget=10.0)
    assert hit is not None and sum(costs[f](50.0) for f in hit.features) <= 10.0
    assert main(["lookup", str(tmp_path / "wine.db"), "--size", "50", "--budget", "10"]) == 0
    out = capsys.readouterr().out
    assert all(f in out for f in hit.features)
    best = index.lookup(size=1.0, budget=1e6)
    assert set(best.features) >= {"colour", "proline"}  # the two most telling groups
    predicted = index.predict(WINE.data, size=1.0, budget=1e6)
    assert np.mean(predicted == WINE.target) > 0.95


# ------------------------------------------------------------------- every source reads back
@pytest.fixture
def table() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return np.round(rng.normal(size=(12, 4)), 6), np.array([0, 1, 2] * 4)


def test_csv_and_tsv_read_back_with_the_target_anywhere(tmp_path, table):
    X, y = table
    names = ["a", "label", "b", "c", "d"]
    rows = [[X[i, 0], y[i], *X[i, 1:]] for i in range(len(y))]
    _write_csv(tmp_path / "t.csv", names, rows)
    _write_csv(tmp_path / "t.tsv", names, rows, "\t")
    for name, target in (("t.csv", "label"), ("t.tsv", 1), ("t.csv", -4)):
        data = load_dataset({"data": name, "target": target}, tmp_path)
        np.testing.assert_array_equal(data.X, X)
        np.testing.assert_array_equal(data.y, y)
        assert data.names == ["a", "b", "c", "d"]


def test_text_labels_stay_text(tmp_path):
    _write_csv(tmp_path / "t.csv", ["x", "kind"], [[1, "cat"], [2, "dog"], [3, "cat"]])
    data = load_dataset({"data": "t.csv", "target": "kind"}, tmp_path)
    assert data.y.tolist() == ["cat", "dog", "cat"]


def test_parquet_reads_back(tmp_path, table):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X, y = table
    columns = {f"f{j}": X[:, j] for j in range(4)} | {"y": y}
    pq.write_table(pa.table(columns), tmp_path / "t.parquet")
    data = load_dataset({"data": "t.parquet", "target": "y"}, tmp_path)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    assert data.names == ["f0", "f1", "f2", "f3"]


def test_npy_and_npz_read_back(tmp_path, table):
    X, y = table
    np.save(tmp_path / "t.npy", np.column_stack([X, y]))
    np.savez(tmp_path / "t.npz", X=X, labels=y)
    data = load_dataset({"data": "t.npy", "target": -1}, tmp_path)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    data = load_dataset({"data": "t.npz", "target": "labels"}, tmp_path)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    assert data.names == ["x0", "x1", "x2", "x3"]


def test_loaders_return_xy_a_frame_or_a_bunch(tmp_path, table):
    X, y = table
    np.save(tmp_path / "arrays.npy", np.column_stack([X, y]))
    (tmp_path / "myloaders.py").write_text(textwrap.dedent("""
        from pathlib import Path
        import numpy as np
        HERE = Path(__file__).parent
        def xy():
            a = np.load(HERE / "arrays.npy")
            return a[:, :-1], a[:, -1].astype(int)
        def frame():
            import pandas as pd
            a = np.load(HERE / "arrays.npy")
            return pd.DataFrame({"p": a[:, 0], "q": a[:, 1], "r": a[:, 2], "s": a[:, 3],
                                 "t": a[:, 4].astype(int)})
    """))
    base = str(tmp_path)
    data = load_dataset({"data": "myloaders:xy"}, base)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    assert "myloaders" in sys.modules and base not in sys.path  # imported, path restored
    pytest.importorskip("pandas")
    data = load_dataset({"data": "myloaders:frame", "target": "t"}, base)
    np.testing.assert_array_equal(data.X, X)
    assert data.names == ["p", "q", "r", "s"]
    data = load_dataset({"data": "sklearn.datasets:load_wine"}, base)
    np.testing.assert_array_equal(data.X, WINE.data)
    assert data.names == list(WINE.feature_names)


def test_a_featurizer_turns_raw_items_into_its_routines_columns(tmp_path):
    (tmp_path / "rawitems.py").write_text(textwrap.dedent("""
        import polydom
        ITEMS = [[float(k)] * (k + 2) for k in range(10)]
        def load():
            return ITEMS, [k % 2 for k in range(10)]
        fz = (polydom.Featurizer(size=len).add("mean", lambda x: [sum(x) / len(x)], 1)
              .add("ends", lambda x: [x[0], x[-1] + 1], 2))
    """))
    config = {"data": "rawitems:load", "featurizer": "rawitems:fz"}
    data = load_dataset(config, tmp_path)
    ks = np.arange(10.0)
    np.testing.assert_array_equal(data.X, np.column_stack([ks, ks, ks + 1]))
    assert feature_columns(None, data) == {"mean": [0], "ends": [1, 2]}
    data = load_dataset(config, tmp_path)
    assert feature_columns(["ends"], data) == {"ends": [0, 1]}  # narrowed to its columns
    np.testing.assert_array_equal(data.X, np.column_stack([ks, ks + 1]))


# ------------------------------------------------------------------- features and costs
def _dataset(names) -> Dataset:
    return Dataset(np.zeros((2, len(names))), np.array([0, 1]), list(names), "t.csv")


def test_selectors_pick_names_indices_ranges_and_globs():
    data = _dataset(["mean radius", "mean area", "sd radius", "worst radius", "x", "y"])
    spec = {"means": ["mean *"], "by_index": [4, "mean area"], "tail": ["3:6"],
            "radius": ["*radius"], "one": "y"}
    assert feature_columns(spec, data) == {"means": [0, 1], "by_index": [4, 1],
                                           "tail": [3, 4, 5], "radius": [0, 2, 3], "one": [5]}
    assert feature_columns(None, data) == {n: [j] for j, n in enumerate(data.names)}


def test_costs_per_feature_or_per_column_sum_as_worked_by_hand():
    names = ["a", "b", "c", "d"]
    columns = {"ab": [0, 1], "c": [2], "d": [3]}
    per_feature, per_column = feature_costs(
        {"a": "1 + n", "b": "2*n**2", "c": "3", "d": "n"}, columns, names)
    assert per_feature["ab"](3.0) == pytest.approx(1 + 3 + 18)
    assert per_feature["c"](7.0) == 3 and per_feature["d"](7.0) == 7
    assert sorted(per_column) == [0, 1, 2, 3]
    per_feature, per_column = feature_costs({"ab": "5", "c": "1", "d": "1"}, columns, names)
    assert per_feature["ab"](100.0) == 5


@pytest.mark.parametrize("atoms", ["features", "columns"])
def test_a_csv_build_costs_what_its_columns_cost(tmp_path, capsys, atoms, table):
    X, y = table
    _write_csv(tmp_path / "d.csv", ["p", "q", "r", "s", "label"],
               [[*X[i], y[i]] for i in range(len(y))])
    config = {"data": "d.csv", "target": "label", "learner": "tree", "store": "d.db", "cv": 2,
              "atoms": atoms, "features": {"pq": ["p", "q"], "rs": ["2:4"]},
              "costs": {"p": "1", "q": "n", "rs": "4"}, "domain": [0, 10]}
    (tmp_path / "d.json").write_text(json.dumps(config))
    assert main(["build", str(tmp_path / "d.json")]) == 0
    model = polydom.open_index(f"sqlite:///{tmp_path / 'd.db'}").cost_model
    # p costs 1 and q costs n (per column); rs costs 4 as a feature, and as atoms each of
    # its columns costs the feature's curve
    assert model.cost(["pq"])(3.0) == pytest.approx(1 + 3)
    assert model.cost(["rs"])(3.0) == pytest.approx(4 if atoms == "features" else 8)
    assert model.columns_of(["pq"]) == [0, 1] and model.columns_of(["rs"]) == [2, 3]


# ------------------------------------------------------------------- errors: one line each
BASE = {"data": "d.csv", "target": "label", "learner": "tree", "store": "x.db",
        "features": {"pq": ["p", "q"], "r": ["r"]}, "costs": {"pq": "1", "r": "n"}}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    _write_csv(tmp_path / "d.csv", ["p", "q", "r", "label"],
               [[1, 2, 3, 0], [2, 3, 4, 1], [3, 4, 5, 0], [4, 5, 6, 1]])
    _write_csv(tmp_path / "bad.csv", ["p", "label"], [[1, 0], ["abc", 1]])
    _write_csv(tmp_path / "nan.csv", ["p", "label"], [[1, 0], ["nan", 1]])
    (tmp_path / "ragged.csv").write_text("p,label\n1,0\n2,1,5\n")
    _write_csv(tmp_path / "wide.csv", [f"c{j}" for j in range(MAX_COLUMNS + 2)], [])
    (tmp_path / "failing.py").write_text("def load():\n    raise RuntimeError('disk on fire')\n")
    return tmp_path


def _run(folder: Path, capsys, **change) -> str:
    config = {**BASE, **change}
    config = {k: v for k, v in config.items() if v is not None}
    path = folder / "cfg.json"
    path.write_text(json.dumps(config))
    err = _fails(["build", str(path)], capsys)
    assert not (folder / "x.db").exists()
    return err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"data": "wine"}, "unknown data 'wine'; give a file (.csv, .tsv, .parquet, .npy, .npz)"),
        ({"data": "breast_cancr"}, "(did you mean 'breast_cancer'?)"),
        ({"data": "nope.csv"}, "data file 'nope.csv' not found"),
        ({"target": None}, "missing key 'target': which column of 'd.csv' holds the labels"),
        ({"target": "lable"}, "target 'lable' is not a column of 'd.csv' (did you mean 'label'?)"),
        ({"target": 9}, "target 9 is out of range: 'd.csv' has 4 columns"),
        ({"data": "bad.csv", "features": None, "costs": {"p": "1"}},
         "data 'bad.csv' column 'p' line 3: 'abc' is not a number"),
        ({"data": "nan.csv", "features": None, "costs": {"p": "1"}},
         "column 'p' row 2: nan (missing or infinite values are not accepted"),
        ({"data": "ragged.csv"}, "data file 'ragged.csv' line 3: 3 cells, the header has 2"),
        ({"data": "wide.csv"}, f"has {MAX_COLUMNS + 2} columns; the limit is {MAX_COLUMNS}"),
        ({"features": {"pq": ["p", "qq"], "r": ["r"]}},
         "feature 'pq': unknown column 'qq' (did you mean 'q'?)"),
        ({"features": {"pq": ["z*"], "r": ["r"]}}, "glob 'z*' matches no column of 'd.csv'"),
        ({"features": {"pq": ["2:9"], "r": ["r"]}}, "range '2:9' must have 0 <= start < stop"),
        ({"costs": {"pq": "1", "r": "n", "p": "2"}}, "feature 'pq' has a cost and so do its"),
        ({"costs": {"pq": "1"}}, "costs missing for feature(s) ['r']"),
        ({"costs": {"pq": "1", "r": "n", "rr": "1"}}, "unknown feature(s) ['rr'] (did you mean"),
        ({"costs": {"pq": "1" * 401, "r": "n"}}, "cost of 'pq' ('111"),
        ({"data": "nosuchmodule:load"}, "cannot import 'nosuchmodule'"),
        ({"data": "failing:lod"}, "module 'failing' has no 'lod' (did you mean 'load'?)"),
        ({"data": "failing:load"}, "data 'failing:load' failed: RuntimeError: disk on fire"),
        ({"featurizer": "failing:load"}, "featurizer needs data = 'module:function'"),
        ({"profile": True}, "profile = true needs a featurizer"),
        ({"targt": "label"}, "unknown key(s) ['targt'] (did you mean 'target'?)"),
        ({"features": {f"f{k}": ["p"] for k in range(10**5)}},
         f"features has 100000 entries; the limit is {MAX_FEATURES}"),
        ({"seed": 2**40}, "seed must be an integer in [0, 4294967295], got an integer of 41 bits"),
        ({"budgeted": [{"learner": "cegb", "tradeoffs": [0.1] * 10**4}]},
         "budgeted[0]: 10000 tradeoffs; the limit is 256"),
        ({"budgeted": [{"learner": "cegb", "tradeoffs": [0.1],
                        "params": {"n_estimators": 10**7}}]},
         "budgeted[0].params.n_estimators must be an integer in [1, 10000], got 10000000"),
        ({"budgeted": [{"learner": "cegb", "tradeoffs": [0.1],
                        "params": {"num_leaves": 10**9}}]},
         "budgeted[0].params.num_leaves must be an integer in [2, 131072]"),
        ({"budgeted": [{"learner": "cgb", "tradeoffs": [0.1]}]},
         "unknown budgeted learner 'cgb' (did you mean 'cegb'?)"),
    ],
)
def test_bad_data_configs_are_one_line_and_store_nothing(folder, capsys, change, message):
    assert message in _run(folder, capsys, **change)


def test_a_feature_without_columns_needs_its_own_cost():
    with pytest.raises(ValueError, match=r"costs missing for feature\(s\) \['zones'\]"):
        feature_costs({"thumbnail": "1"}, {"thumbnail": [], "zones": []}, [])


def test_a_huge_cost_or_seed_in_toml_is_one_line(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('data = "breast_cancer"\nlearner = "tree"\nstore = "x.db"\n'
                    f"seed = {2**40}\n")
    assert "seed must be an integer in [0, 4294967295]" in _fails(["build", str(path)], capsys)
    path.write_text('data = "breast_cancer"\nlearner = "tree"\nstore = "x.db"\n'
                    f'[costs]\nmean = "{"9" * 401}*n"\nerror = "1"\nworst = "1"\n')
    assert "cost of 'mean'" in _fails(["build", str(path)], capsys)
    assert not (tmp_path / "x.db").exists()


# ------------------------------------------------------------------- profile = true
_TIMED = """
    import polydom
    ITEMS = [[float(k % 7)] * (40 + 40 * (k % 10)) for k in range(40)]
    def load():
        return ITEMS, [k % 2 for k in range(40)]
    def pairs(x):  # O(n**2) Python work: far dearer than 'first' at every size
        return [float(sum(1 for a in x for b in x if a <= b))]
    fz = (polydom.Featurizer(size=len).add("first", lambda x: [x[0]], 1)
          .add("pairs", pairs, 1))
"""


def _timed_config(tmp_path, **extra) -> Path:
    (tmp_path / "timed.py").write_text(textwrap.dedent(_TIMED))
    lines = ['data = "timed:load"', 'featurizer = "timed:fz"', 'learner = "tree"',
             'store = "timed.db"', "profile = true", "cv = 2",
             *[f"{k} = {json.dumps(v)}" for k, v in extra.items()]]
    path = tmp_path / "timed.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_profile_true_times_the_routines_in_situ_and_stores_their_quantile_curves(
        tmp_path, capsys):
    assert main(["build", str(_timed_config(tmp_path, quantile=0.9))]) == 0
    printed = capsys.readouterr().out
    assert "q0.9 in situ" in printed and "covered" in printed  # the in-situ profile's table
    index = polydom.open_index(tmp_path / "timed.db")
    assert index.info["cost_unit"] == "s"
    first, pairs = index.costs["first"], index.costs["pairs"]
    assert max(len(first.coefficients), len(pairs.coefficients)) <= 3  # degree <= 2
    # 'pairs' does ~n**2/2 comparisons in Python (~160,000 at n = 400), 'first' one index:
    # their measured curves are orders of magnitude apart at the largest size
    assert pairs(400.0) > 20 * max(first(400.0), 1e-9)


@pytest.mark.parametrize("extra, message", [
    ({"statistic": "p90"}, "statistic belonged to the warm-loop profiling; profile = true "
                           "now times the features in situ"),
    ({"repeats": 3, "statistic": "max"}, "statistic and repeats belonged to the warm-loop"),
    ({"quantile": 1.5}, "quantile must be a number in (0, 1), got 1.5"),
    ({"degree": 4}, "degree must be an integer in [0, 3], got 4"),
])
def test_profile_true_refuses_warm_loop_keys_and_bad_quantiles_storing_nothing(
        tmp_path, capsys, extra, message):
    assert main(["build", str(_timed_config(tmp_path, **extra))]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "timed.db").exists()
