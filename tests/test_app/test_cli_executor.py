"""``polydom build --executor`` and the config's ``executor`` key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import polydom
from polydom.app.cli import main

CONFIG = {"data": "breast_cancer", "learner": "tree", "store": "bc.db", "domain": [1, 100],
          "features": {"mean": [0, 1, 2, 3], "error": [10, 11], "worst": [20, 21, 22, 23]},
          "costs": {"mean": "1 + n", "error": "2", "worst": "5 + 0.01*n**2"}}


def _write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.slow
def test_build_on_a_process_pool_stores_the_in_process_index(tmp_path, capsys):
    (tmp_path / "serial").mkdir()
    (tmp_path / "pool").mkdir()
    assert main(["build", str(_write(tmp_path / "serial", CONFIG))]) == 0
    pooled = _write(tmp_path / "pool", {**CONFIG, "executor": "processes:2"})
    assert main(["build", str(pooled)]) == 0
    assert capsys.readouterr().out.count("8 of 8 feature sets trained (8 new, 0 reused)") == 2
    serial, pool = (polydom.open_index(str(tmp_path / d / "bc.db")) for d in ("serial", "pool"))
    assert [(c.key, c.accuracy) for c in serial.candidates] == [
        (c.key, c.accuracy) for c in pool.candidates]


def test_the_command_line_executor_overrides_the_config(tmp_path, capsys):
    path = _write(tmp_path, {**CONFIG, "executor": "nonsense"})
    assert main(["build", str(path), "--executor", "inprocess"]) == 0
    assert "8 of 8 feature sets trained" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "config", "message"),
    [
        ([], {"executor": "cluster"}, "unknown executor 'cluster'"),
        (["--executor", "dask://scheduler"], {}, "not an address of the form dask://host:port"),
        (["--executor", "processes:0"], {}, "processes:N must be an integer >= 1"),
    ],
)
def test_a_bad_executor_is_one_line_and_stores_nothing(tmp_path, capsys, argv, config,
                                                       message):
    path = _write(tmp_path, {**CONFIG, **config})
    assert main(["build", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polydom build: error: ") and message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "bc.db").exists()
