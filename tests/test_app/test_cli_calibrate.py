"""The in-situ guard outside Python: ``polydom calibrate`` on a store, and ``polydom
build`` taking ``target_overrun`` from its config; both checked against
``Index.calibrated`` on the same timings (converted from seconds into the store's ms)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import polydom
from polydom.app.cli import main
from tests import serve_support
from tests import storage_support as S

QUERIES = [(size, budget) for size in (0.0, 50.0, 300.0, 1000.0)
           for budget in (3.0, 10.0, 40.0, 200.0, 2000.0)]


def _timings(path, atoms, items=120, seed=0):
    """Held-out timings: each atom's curve (ms) times a log-normal factor, in seconds."""
    rng = np.random.default_rng(seed)
    sizes = rng.uniform(0.0, S.N_MAX, items).round(2)
    seconds = {a: np.array([float(S.COSTS[a](n)) for n in sizes]) / 1000
               * rng.lognormal(0.0, 0.3, items) for a in atoms}
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["size", *atoms])
        for i, n in enumerate(sizes):
            writer.writerow([n, *(repr(float(seconds[a][i])) for a in atoms)])
    return sizes, seconds


def _answers(index):
    return [None if (h := index.lookup(n, b)) is None else (h.name, round(h.cost, 9))
            for n, b in QUERIES]


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    serve_support.publish_string_labels(url)
    return url


def test_calibrate_publishes_the_index_calibrated_on_the_timings(store, tmp_path, capsys):
    sizes, seconds = _timings(tmp_path / "held_out.csv", list(S.GROUPS))
    before = polydom.open_index(store)
    code = main(["calibrate", store, "--timings", str(tmp_path / "held_out.csv"),
                 "--target-overrun", "0.1", "--level", "0.02"])
    assert code == 0
    assert "published build 2" in capsys.readouterr().out
    after = polydom.open_index(store)
    expected = before.calibrated(sizes, {a: t * 1000 for a, t in seconds.items()}, 0.1,
                                 levels=[0.02])
    assert after.info["build_id"] == 2
    assert after.overrun_levels() == [0.02, 0.1]
    assert _answers(after) == _answers(expected) != _answers(before)
    assert _answers(after.at_overrun(0.02)) == _answers(expected.at_overrun(0.02))


def test_too_few_items_for_the_rate_is_refused_and_nothing_published(store, tmp_path, capsys):
    _timings(tmp_path / "held_out.csv", list(S.GROUPS), items=30)
    code = main(["calibrate", store, "--timings", str(tmp_path / "held_out.csv"),
                 "--target-overrun", "0.01"])
    err = capsys.readouterr().err
    assert code == 2 and "needs at least 99 held-out items, got 30" in err
    assert len(err.strip().splitlines()) == 1
    assert polydom.open_index(store).info["build_id"] == 1


def test_a_column_that_is_no_atom_is_refused(store, tmp_path, capsys):
    (tmp_path / "held_out.csv").write_text("size,g0,g9\n1,0.1,0.2\n")
    assert main(["calibrate", store, "--timings", str(tmp_path / "held_out.csv"),
                 "--target-overrun", "0.1"]) == 2
    assert "column 'g9' is not an atom of the index" in capsys.readouterr().err


CONFIG = """
data = "breast_cancer"
learner = "logistic"
store = "guarded.db"
domain = [0, 1000]
cost_unit = "ms"
target_overrun = 0.1
overrun_levels = [0.3]
calibration_timings = "held_out.csv"

[features]
g0 = ["0:6"]
g1 = ["6:12"]

[costs]
g0 = "1 + 0.5*n"
g1 = "2 + 0.4*n + 0.001*n**2"
"""


def test_build_takes_the_guard_from_its_config(tmp_path, capsys):
    sizes, seconds = _timings(tmp_path / "held_out.csv", ["g0", "g1"])
    (tmp_path / "guarded.toml").write_text(CONFIG)
    assert main(["build", str(tmp_path / "guarded.toml")]) == 0
    assert "guarded for overrun 0.1 on 120 held-out items" in capsys.readouterr().out
    url = f"sqlite:///{tmp_path / 'guarded.db'}"
    guarded = polydom.open_index(url)
    plain = polydom.open_index(url, build=1)
    expected = plain.calibrated(sizes, {a: t * 1000 for a, t in seconds.items()}, 0.1,
                                levels=[0.3])
    assert guarded.info["build_id"] == 2 and guarded.overrun_levels() == [0.1, 0.3]
    assert _answers(guarded) == _answers(expected)


def test_a_config_guard_without_timings_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "guarded.toml").write_text(CONFIG.replace(
        'calibration_timings = "held_out.csv"\n', ""))
    assert main(["build", str(tmp_path / "guarded.toml")]) == 2
    assert "target_overrun needs calibration_timings" in capsys.readouterr().err
    assert not (tmp_path / "guarded.db").exists()
