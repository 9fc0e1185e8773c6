"""``polydom predict``: the batch door, checked against a plain loop over the index.

The store has real models (logistic regressions on column groups of breast cancer) whose
labels are strings that look like numbers (``"1"``, ``"2"``), in ms: a batch answer must
keep them strings, and must equal, row by row, what ``Index.lookup`` and
``Index.predict_hit`` answer for that row.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import polydom
from polydom.app.cli import main
from tests import serve_support
from tests import storage_support as S

BUDGET = 40.0  # ms: the cheap groups fit at small sizes, nothing at the largest


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store of five real models with string labels, and its index with models."""
    url = f"sqlite:///{tmp_path_factory.mktemp('predict') / 'labels.db'}"
    serve_support.publish_string_labels(url)
    return url, polydom.open_index(url)


@pytest.fixture(scope="module")
def rows():
    """60 rows of the data with sizes over (and past) the domain."""
    X, _ = S.data()
    sizes = np.linspace(0.0, S.N_MAX, 60)
    return X[:60], sizes


def _write_csv(path, X, sizes, extra=()):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["n", *[f"x{i}" for i in range(X.shape[1])]])
        for size, row in zip(sizes, X, strict=True):
            writer.writerow([repr(float(size)), *map(repr, row.tolist())])
        for line in extra:
            writer.writerow(line)


def _expected(index, X, sizes):
    out = []
    for size, row in zip(sizes, X, strict=True):
        hit = index.lookup(float(size), BUDGET)
        if hit is None:
            out.append((None, None))
        else:
            out.append((hit.name, index.predict_hit(hit, row[None, :])[0].item()))
    return out


def _jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_each_row_gets_what_a_loop_over_lookup_and_predict_gives(store, rows, tmp_path,
                                                                 capsys):
    url, index = store
    X, sizes = rows
    _write_csv(tmp_path / "rows.csv", X, sizes)
    out = tmp_path / "preds.jsonl"
    code = main(["predict", url, "--data", str(tmp_path / "rows.csv"), "--out", str(out),
                 "--budget", "40ms", "--size-from", "n", "--chunk-rows", "7", "--no-progress"])
    records = _jsonl(out)
    expected = _expected(index, X, sizes)
    assert [(r["model"], r["label"]) for r in records] == expected
    assert any(m is None for m, _ in expected) and any(m for m, _ in expected)
    assert code == 1  # some rows found no model within the budget
    assert {type(r["label"]) for r in records if r["model"]} == {str}
    assert [r["line"] for r in records] == list(range(2, 62))
    first = next(r for r in records if r["model"])
    hit = index.lookup(first["size"], BUDGET)
    assert first["features"] == hit.to_dict()["features"]
    assert first["predicted_cost"] == pytest.approx(hit.cost)
    assert first["unit"] == "ms" and first["measured_cost"] is None
    assert "60 rows" in capsys.readouterr().err


def test_a_bad_row_is_named_by_its_line_and_the_others_go_on(store, rows, tmp_path, capsys):
    url, _ = store
    X, sizes = rows
    good = ["1.0", *map(repr, X[0].tolist())]
    _write_csv(tmp_path / "rows.csv", X[:3], [1.0, 2.0, 3.0], extra=[
        ["1.0", "oops", *good[2:]], ["5000", *good[1:]], good[:5], ["", *good[1:]], good])
    out = tmp_path / "preds.csv"
    code = main(["predict", url, "--data", str(tmp_path / "rows.csv"), "--out", str(out),
                 "--budget", "1000", "--size-from", "n", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "line 5: column 'x0': 'oops' is not a number" in err
    assert "line 6: size 5000.0 is outside the index domain [0.0, 1000.0]" in err
    assert "line 7: 5 fields where the header has 31" in err
    assert "line 8: no size in column 'n'" in err
    assert "8 rows in" in err and "4 predicted" in err and "4 bad" in err
    lines = [int(r["line"]) for r in csv.DictReader(open(out, encoding="utf-8"))]
    assert lines == [2, 3, 4, 9]


@pytest.mark.parametrize("suffix", [".parquet", ".npy"])
def test_parquet_and_npy_stream_in_chunks_to_the_same_answers(store, rows, tmp_path, suffix):
    pytest.importorskip("pyarrow")
    import pyarrow
    import pyarrow.parquet

    url, index = store
    X, sizes = rows
    data = tmp_path / f"rows{suffix}"
    table = np.column_stack([sizes, X])
    if suffix == ".npy":
        np.save(data, table)
        size_column = "0"
    else:
        pyarrow.parquet.write_table(pyarrow.table(
            {"n": sizes, **{f"x{i}": X[:, i] for i in range(X.shape[1])}}), data,
            row_group_size=16)
        size_column = "n"
    out = tmp_path / "preds.parquet"
    main(["predict", url, "--data", str(data), "--out", str(out), "--budget", "40",
          "--size-from", size_column, "--chunk-rows", "9", "--no-progress"])
    records = pyarrow.parquet.read_table(out).to_pylist()
    assert [(r["model"], r["label"]) for r in records] == _expected(index, X, sizes)
    assert pyarrow.parquet.read_schema(out).field("label").type == pyarrow.string()


#: A featurizer of CSV rows read as dicts of text: ``n`` is the size, ``x0``... the columns.
FEATURIZER_MODULE = """
import polydom
from tests.storage_support import GROUPS

def _group(cols):
    return lambda row: [float(row[f"x{c}"]) for c in cols]

featurizer = polydom.Featurizer(size=lambda row: float(row["n"]))
for name, cols in GROUPS.items():
    featurizer.add(name, _group(cols), len(cols))
"""


def test_raw_items_are_featurized_timed_and_measured(store, rows, tmp_path, monkeypatch):
    url, index = store
    X, _ = rows
    sizes = [10.0 * i for i in range(5)]
    _write_csv(tmp_path / "items.csv", X[:5], sizes,
               extra=[["3.0", "oops", *map(repr, X[0, 1:].tolist())]])
    (tmp_path / "batch_items.py").write_text(FEATURIZER_MODULE)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "preds.jsonl"
    code = main(["predict", url, "--data", "items.csv", "--out", str(out), "--budget", "40ms",
                 "--featurizer", "batch_items:featurizer", "--no-progress"])
    records = _jsonl(out)
    assert code == 1 and len(records) == 5  # the last item's featurizer fails on 'oops'
    for size, row, record in zip(sizes, X, records, strict=False):
        served = index.predict_item({"size": size, "x": row.tolist()}, BUDGET,
                                    serve_support.FEATURIZER)
        assert (record["label"], record["size"]) == (served.label, served.size)
        assert record["measured_cost"] > 0 and isinstance(record["label"], str)


def test_bad_arguments_are_one_line_and_leave_no_file(store, tmp_path, capsys):
    url, _ = store
    out = tmp_path / "preds.csv"
    data = tmp_path / "rows.csv"
    data.write_text("n,a\n1,2\n")
    assert main(["predict", url, "--data", str(data), "--out", str(out), "--budget", "5",
                 "--size-from", "n"]) == 2
    assert "--data has 1 feature columns" in capsys.readouterr().err
    assert main(["predict", url, "--data", str(data), "--out", str(out), "--budget", "5",
                 "--size-from", "nn"]) == 2
    assert "--size-from 'nn' is not a column of --data (did you mean 'n'?)" in \
        capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["rows.csv"]
