"""A build config's traversal and training cap (issue 39): keys, flags, what is printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import polydom
from polydom.app.cli import main

ROWS = [[1, 2, 3, 0], [2, 3, 4, 1], [3, 4, 5, 0], [4, 5, 6, 1], [5, 1, 2, 0], [6, 2, 1, 1],
        [1, 3, 2, 0], [2, 4, 6, 1]]


def _config(folder: Path, **change) -> Path:
    (folder / "d.csv").write_text(
        "\n".join(",".join(map(str, r)) for r in [["p", "q", "r", "label"], *ROWS]) + "\n")
    config = {"data": "d.csv", "target": "label", "learner": "tree", "store": "x.db", "cv": 2,
              "features": {"p": ["p"], "q": ["q"], "r": ["r"]},
              "costs": {"p": "1", "q": "2", "r": "n"}, **change}
    path = folder / "cfg.json"
    path.write_text(json.dumps(config))
    return path


def test_a_capped_anytime_build_from_a_config_prints_the_cap_used_and_the_bound(
        tmp_path, capsys):
    path = _config(tmp_path, traversal="anytime", max_expansions=3)
    with pytest.warns(RuntimeWarning, match="cap of 3"):
        assert main(["build", str(path)]) == 0
    out = capsys.readouterr().out
    assert "exploration: traversal anytime, 3 new trainings of a cap of 3" in out
    assert "lattice.cap_bound" in out and "no alpha guarantee" in out
    index = polydom.open_index(str(tmp_path / "x.db"))
    assert index.info["traversal"] == "anytime" and index.info["cap"] == 3
    assert index.info["complete"] is False and index.info["trained"] == 3


def test_the_command_line_cap_overrides_the_config_and_covers_a_small_lattice(
        tmp_path, capsys):
    path = _config(tmp_path, traversal="paper", max_expansions=2)
    assert main(["build", str(path), "--traversal", "anytime", "--max-expansions", "100"]) == 0
    out = capsys.readouterr().out
    assert "exploration: traversal anytime, " in out and "of a cap of 100" in out
    assert "lattice covered" in out
    assert polydom.open_index(str(tmp_path / "x.db")).info["complete"] is True


@pytest.mark.parametrize("change, named", [
    ({"traversal": "greedy"}, "traversal must be one of complete, paper, anytime"),
    ({"max_expansions": 0}, "max_expansions must be an integer in [1, "),
    ({"max_expansions": 2.5}, "max_expansions must be an integer in [1, "),
])
def test_a_bad_traversal_or_cap_is_one_line_naming_the_key(tmp_path, capsys, change, named):
    assert main(["build", str(_config(tmp_path, **change))]) == 2
    out, err = capsys.readouterr()
    assert named in err and err.count("\n") == 1 and out == ""
    assert not list(tmp_path.glob("*.db"))


def test_a_bad_max_expansions_flag_names_the_flag(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["build", str(_config(tmp_path)), "--max-expansions", "-1"])
    assert "--max-expansions must be an integer >= 1" in capsys.readouterr().err
