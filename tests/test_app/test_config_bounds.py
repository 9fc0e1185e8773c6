"""Config data bounded and named (issue 31 items 5 and 6, issue 28's small lies).

Each probe is built here as the attacker wrote it: complex values, 1 MB labels in a 50 KB
Parquet file, ``nan``/``inf`` labels, a loader's ragged rows, a loader that calls
``sys.exit(0)``, a private ``_dir`` key, a column listed a million times, a cost written
``1ms``, ``sqlite:///rel.db``, and a disk that fills up.  Every refusal is one line naming
the file or loader and the column or label, and stores nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import polydom
from polydom.app import config_data
from polydom.app.cli import main
from polydom.app.config_build import ConfigError, build_from_config, load_config, store_url
from polydom.app.config_data import MAX_CLASSES, MAX_LABEL_CHARS, MAX_SELECTORS, load_dataset

ROOT = Path(__file__).resolve().parents[2]
ROWS = [[1, 2, 3, 0], [2, 3, 4, 1], [3, 4, 5, 0], [4, 5, 6, 1], [5, 1, 2, 0], [6, 2, 1, 1]]


def _csv(path: Path, names, rows) -> Path:
    path.write_text("\n".join(",".join(map(str, r)) for r in [names, *rows]) + "\n")
    return path


def _config(folder: Path, **change) -> Path:
    config = {"data": "d.csv", "target": "label", "learner": "tree", "store": "x.db", "cv": 2,
              "features": {"pq": ["p", "q"], "r": ["r"]}, "costs": {"pq": "1", "r": "n"},
              **change}
    path = folder / "cfg.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    return path


def _fails(folder: Path, capsys, **change) -> str:
    """``polydom build`` of the config with ``change``: exit 2, one line, nothing stored."""
    _csv(folder / "d.csv", ["p", "q", "r", "label"], ROWS)
    code = main(["build", str(_config(folder, **change))])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert not list(folder.glob("*.db")), "a refused config stored something"
    return err


def _load(folder: Path, data: str, target=None) -> None:
    load_dataset({"data": data} | ({"target": target} if target is not None else {}), folder)


# ----------------------------------------------------------------------------- complex
def test_complex_values_are_refused_not_cut_to_their_real_part(tmp_path):
    np.save(tmp_path / "c.npy", np.array([[1 + 2j, 0], [3 + 0j, 1]]))
    with pytest.raises(ConfigError, match=r"data file 'c.npy' holds complex numbers"):
        _load(tmp_path, "c.npy", -1)
    np.savez(tmp_path / "c.npz", X=np.array([[1.0], [2.0]]), y=np.array([1j, 2j]))
    with pytest.raises(ConfigError, match=r"array 'y' of 'c.npz' holds complex numbers"):
        _load(tmp_path, "c.npz")
    (tmp_path / "cplx.py").write_text(textwrap.dedent("""
        import numpy as np
        def x(): return np.array([[1 + 1j, 2.0], [3.0, 4.0]]), [0, 1]
        def objects(): return np.array([[1.0, 2j], [3.0, 4.0]], dtype=object), [0, 1]
        def labels(): return [[1.0], [2.0]], [0, 1j]
    """))
    for loader, message in (("cplx:x", "data 'cplx:x' column 'x0' holds complex numbers"),
                            ("cplx:objects", "data 'cplx:objects' column 'x1' holds complex"),
                            ("cplx:labels", "y from 'cplx:labels' holds complex numbers")):
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as caught:
            _load(tmp_path, loader)
        assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------- labels
def test_megabyte_labels_in_a_small_parquet_file_are_refused_before_they_are_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"x": np.arange(1000.0), "y": ["a" * 10**6] * 999 + ["b"]})
    pq.write_table(table, tmp_path / "big.parquet")
    del table
    assert (tmp_path / "big.parquet").stat().st_size < 200_000  # 1 GB of labels, compressed
    pool = pa.default_memory_pool()
    before = pool.max_memory()
    with pytest.raises(ConfigError, match=rf"target 'y' of 'big.parquet': a label of 1,000,000 "
                                          rf"characters .*; a label has at most "
                                          rf"{MAX_LABEL_CHARS}"):
        _load(tmp_path, "big.parquet", "y")
    # read dictionary-encoded: the distinct label once (1 MB), never a row each (1 GB)
    assert pool.max_memory() - before < 50 * 2**20


def test_plain_encoded_labels_are_bounded_by_their_uncompressed_size(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    labels = [f"class-{k % 7}-" + "z" * 40 for k in range(2000)]
    pq.write_table(pa.table({"x": np.arange(2000.0), "y": labels}), tmp_path / "p.parquet",
                   use_dictionary=False, compression="zstd")
    monkeypatch.setattr(config_data, "MAX_LABEL_BYTES", 50_000)
    with pytest.raises(ConfigError, match=r"target 'y' of 'p.parquet' holds [\d,]+ bytes of "
                                          r"labels; the limit is 50,000"):
        _load(tmp_path, "p.parquet", "y")
    monkeypatch.undo()
    data = load_dataset({"data": "p.parquet", "target": "y"}, tmp_path)
    assert data.y.tolist() == labels


def test_many_rows_of_one_text_label_are_bounded_before_the_label_array(tmp_path, monkeypatch):
    """A few KB of Parquet can hold millions of rows of one 64-character label: 4 bytes a
    character a row as a text array.  The labels' size is checked before that array."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = 20_000
    pq.write_table(pa.table({"x": np.zeros(rows), "y": ["abcdefgh"] * rows}),
                   tmp_path / "r.parquet")
    _csv(tmp_path / "r.csv", ["x", "y"], [[0, "abcdefgh"]] * rows)
    assert (tmp_path / "r.parquet").stat().st_size < 10_000
    monkeypatch.setattr(config_data, "MAX_LABEL_BYTES", 100_000)
    for name in ("r.parquet", "r.csv"):
        with pytest.raises(ConfigError, match=rf"target 'y' of '{name}': 20,000 text labels of "
                                              r"up to 8 characters take 640,000 bytes; the "
                                              r"limit is 100,000"):
            _load(tmp_path, name, "y")
    monkeypatch.undo()
    assert load_dataset({"data": "r.csv", "target": "y"}, tmp_path).y.dtype == np.dtype("<U8")


def test_parquet_columns_of_other_types_are_refused_naming_them(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"x": ["1.5", "2"], "y": [0, 1]}), tmp_path / "t.parquet")
    with pytest.raises(ConfigError, match=r"data 't.parquet' column 'x' holds string; feature "
                                          "columns must hold real numbers"):
        _load(tmp_path, "t.parquet", "y")
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [[0], [1]]}), tmp_path / "l.parquet")
    with pytest.raises(ConfigError, match=r"target 'y' of 'l.parquet' holds list<.*>; "
                                          "labels must be numbers or text"):
        _load(tmp_path, "l.parquet", "y")
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "y": ["a", None, "b"]}),
                   tmp_path / "n.parquet")
    with pytest.raises(ConfigError, match=r"target 'y' of 'n.parquet' row 2: a missing label"):
        _load(tmp_path, "n.parquet", "y")


def test_long_text_labels_and_too_many_classes_are_named(tmp_path):
    long = "w" * (MAX_LABEL_CHARS + 1)
    _csv(tmp_path / "long.csv", ["x", "kind"], [[1, "cat"], [2, long]])
    with pytest.raises(ConfigError, match=rf"target 'kind' of 'long.csv' line 3: a label of "
                                          rf"{MAX_LABEL_CHARS + 1} characters"):
        _load(tmp_path, "long.csv", "kind")
    _csv(tmp_path / "many.csv", ["x", "kind"], [[k, f"c{k}"] for k in range(MAX_CLASSES + 1)])
    with pytest.raises(ConfigError, match=rf"target 'kind' of 'many.csv' has more than "
                                          rf"{MAX_CLASSES:,} distinct labels"):
        _load(tmp_path, "many.csv", "kind")
    np.save(tmp_path / "u.npy", np.array([["1", "a" * 100], ["2", "b"]]))
    with pytest.raises(ConfigError, match=r"data file 'u.npy' holds text of up to 100 "):
        _load(tmp_path, "u.npy", -1)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN"])
def test_nan_and_inf_labels_are_one_line_naming_file_column_and_value(tmp_path, capsys, bad):
    rows = [r[:] for r in ROWS]
    rows[2][3] = bad
    _csv(tmp_path / "d.csv", ["p", "q", "r", "label"], rows)
    code = main(["build", str(_config(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert f"target 'label' of 'd.csv' row 3: label '{bad}' is not a finite number" in err
    assert not (tmp_path / "x.db").exists()


def test_a_loaders_nan_label_names_the_loader_and_row(tmp_path):
    (tmp_path / "nanlab.py").write_text("def load():\n    return [[1.0], [2.0]], "
                                        "[0.0, float('nan')]\n")
    with pytest.raises(ConfigError, match=r"y from 'nanlab:load' row 2: label 'nan' is not"):
        _load(tmp_path, "nanlab:load")


# ----------------------------------------------------------------------------- loaders
def test_ragged_rows_of_a_loader_name_the_loader_and_the_row(tmp_path):
    (tmp_path / "ragged.py").write_text(textwrap.dedent("""
        def load():
            return [[1.0, 2.0], [3.0, 4.0], [5.0]], [0, 1, 0]
        def bunch():
            return {"data": [[1.0], [2.0, 3.0]], "target": [0, 1]}
        def labels():
            return [[1.0], [2.0]], [[0, 1], [1]]
    """))
    for loader, message in (
            ("ragged:load", "X from 'ragged:load' must be a 2-D table of numbers with rows of "
                            "one length: row 3 has 1 values, row 1 has 2"),
            ("ragged:bunch", "X from 'ragged:bunch' must be a 2-D table"),
            ("ragged:labels", "y from 'ragged:labels' must be 1-D with one label per row")):
        with pytest.raises(ConfigError) as caught:
            _load(tmp_path, loader)
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_loader_that_exits_is_an_error_not_a_silent_success(tmp_path, capsys):
    (tmp_path / "quits.py").write_text("import sys\ndef load():\n    sys.exit(0)\n")
    (tmp_path / "quitsearly.py").write_text("import sys\nsys.exit(0)\ndef load(): pass\n")
    err = _fails(tmp_path, capsys, data="quits:load", target=None)
    assert "data 'quits:load' called exit (SystemExit(0)) instead of returning" in err
    err = _fails(tmp_path, capsys, data="quitsearly:load", target=None)
    assert "data 'quitsearly:load': importing 'quitsearly' called exit (SystemExit(0))" in err


def test_a_loader_exit_in_a_subprocess_exits_2_with_one_line(tmp_path):
    """As the probe ran it: ``polydom build`` in its own process said nothing and exited 0."""
    (tmp_path / "quits.py").write_text("import sys\ndef load():\n    sys.exit(0)\n")
    _csv(tmp_path / "d.csv", ["p", "q", "r", "label"], ROWS)
    path = _config(tmp_path, data="quits:load", target=None)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "polydom.app.cli", "build", str(path)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "called exit (SystemExit(0))" in done.stderr
    assert not (tmp_path / "x.db").exists()


# ----------------------------------------------------------------------------- keys
def test_a_private_dir_key_is_refused_and_cannot_move_the_store(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    err = _fails(tmp_path, capsys, _dir=str(elsewhere))
    assert "unknown key(s) ['_dir']" in err
    assert not list(elsewhere.iterdir())


def test_the_unknown_key_message_lists_only_accepted_keys(tmp_path, capsys):
    err = _fails(tmp_path, capsys, targt="label")
    assert "unknown key(s) ['targt'] (did you mean 'target'?); accepted: " in err
    accepted = err.split("accepted: ")[1].strip().split(", ")
    assert "repeats" not in accepted and "statistic" not in accepted and "target" in accepted
    err = _fails(tmp_path, capsys, repeats=5)
    assert "repeats belonged to the warm-loop profiling" in err


def test_a_cost_with_a_unit_names_the_feature_and_cost_unit(tmp_path, capsys):
    for cost, unit in (("1ms", "ms"), ("2 us", "us"), ("0.5*n s", "s")):
        err = _fails(tmp_path, capsys, costs={"pq": cost, "r": "n"})
        assert (f"cost of 'pq' ('{cost}'): costs are plain numbers in the store's cost_unit, "
                f"not quantities: write it without '{unit}' and set cost_unit = '{unit}'") in err
    err = _fails(tmp_path, capsys, costs={"pq": "1 +", "r": "n"})
    assert "cost of 'pq' ('1 +'): malformed cost expression" in err  # no unit, no unit hint


# ----------------------------------------------------------------------------- older probes
def test_a_column_listed_a_million_times_is_refused_at_once(tmp_path, capsys):
    err = _fails(tmp_path, capsys, features={"pq": ["p"] * 10**6, "r": ["r"]})
    assert f"feature 'pq' lists 1,000,000 columns; the limit is {MAX_SELECTORS:,}" in err
    err = _fails(tmp_path, capsys, features={"pq": ["p", "q", "p"], "r": ["r"]})
    assert "feature 'pq' lists column 'p' twice" in err
    err = _fails(tmp_path, capsys, features={"pq": [0, 1, 0], "r": ["r"]})
    assert "feature 'pq' lists column 0 twice" in err


def test_overlapping_globs_still_pick_each_column_once(tmp_path):
    _csv(tmp_path / "d.csv", ["p", "q", "r", "label"], ROWS)
    data = load_dataset({"data": "d.csv", "target": "label"}, tmp_path)
    assert config_data.feature_columns({"a": ["p", "*"]}, data) == {"a": [0, 1, 2]}


def test_a_relative_sqlite_url_lands_next_to_the_config(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "project"
    folder.mkdir()
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _csv(folder / "d.csv", ["p", "q", "r", "label"], ROWS)
    path = _config(folder, store="sqlite:///rel.db")
    assert main(["build", str(path)]) == 0
    out = capsys.readouterr().out
    assert (folder / "rel.db").exists() and not (elsewhere / "rel.db").exists()
    assert f"stored as build 1 in sqlite:///{folder / 'rel.db'}" in out
    assert polydom.open_index(f"sqlite:///{folder / 'rel.db'}").lookup(1.0, 100.0) is not None
    assert store_url({"store": "sqlite:///a/b.db?mode=rwc"}, "/data") == \
        "sqlite:////data/a/b.db?mode=rwc"
    assert store_url({"store": "sqlite:////abs.db"}, "/data") == "sqlite:////abs.db"
    assert store_url({"store": "sqlite://"}, "/data") == "sqlite://"


def test_build_from_config_reads_paths_relative_to_the_loaded_file(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    _csv(folder / "d.csv", ["p", "q", "r", "label"], ROWS)
    config = load_config(_config(folder))
    assert "_dir" not in config and config.folder == folder.resolve()
    build_from_config(config, out=lambda line: None)
    assert (folder / "x.db").exists() and not (tmp_path / "x.db").exists()


_FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))
from polydom.app.cli import main
sys.exit(main(["build", sys.argv[1]]))
"""


@pytest.mark.skipif(importlib.util.find_spec("resource") is None,
                    reason="RLIMIT_FSIZE is a POSIX limit (no resource module here)")
def test_a_full_disk_names_the_store_not_the_config_file(tmp_path):
    _csv(tmp_path / "d.csv", ["p", "q", "r", "label"], ROWS)
    path = _config(tmp_path, store="bc.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"store 'sqlite:///{tmp_path / 'bc.db'}': " in done.stderr
    assert "cfg.json" not in done.stderr
