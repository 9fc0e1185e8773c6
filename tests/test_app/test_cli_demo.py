"""The CLI end to end: build from a config -> inspect -> lookup -> plot; the demo; bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from polydom.app.cli import main

pytest.importorskip("matplotlib")

TINY_TOML = """
data = "breast_cancer"
learner = "tree"
store = "bc.db"
alpha = 1.0
domain = [1, 100]
cv = 3

[features]
mean = [0, 1, 2, 3]
error = ["radius error", "texture error"]
worst = [20, 21, 22, 23]

[costs]
mean = "1 + n"
error = "2"
worst = "5 + 0.01*n**2"
"""


def _write(tmp_path: Path, text: str, name: str = "cfg.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_build_inspect_lookup_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = _write(tmp_path, TINY_TOML)
    assert main(["build", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "8 of 8 feature sets trained" in out
    db = tmp_path / "bc.db"
    assert db.exists()

    assert main(["inspect", str(db)]) == 0
    out = capsys.readouterr().out
    assert "complete" in out and "skylines of build 1" in out

    # the lookup agrees with the index reopened through the public API
    import polydom

    index = polydom.open_index(str(db))
    hit = index.lookup(10.0, 12.0)
    assert hit is not None
    assert main(["lookup", str(db), "--size", "10", "--budget", "12"]) == 0
    out = capsys.readouterr().out
    assert "+".join(sorted(hit.features)) in out  # the CLI joins feature names with +
    # only the empty feature set (cost 0) fits a budget of 0.5 at size 10
    assert index.lookup(10.0, 0.5).features == frozenset()
    assert main(["lookup", str(db), "--size", "10", "--budget", "0.5"]) == 0
    out = capsys.readouterr().out
    row = out.splitlines()[2]  # the answer's row, under the header and its rule
    assert "mean" not in row and "worst" not in row and "error" not in row
    assert "{} (no features)" in row

    plots = tmp_path / "plots"
    assert main(["plot", str(db), "--out", str(plots)]) == 0
    for name in ("skylines.png", "cost_curves.png", "serving_map.png",
                 "accuracy_at_sizes.png"):
        assert (plots / name).stat().st_size > 1000

    # building again with the same config reuses every stored expansion
    assert main(["build", str(cfg)]) == 0
    assert "(0 new, 8 reused)" in capsys.readouterr().out


def test_build_json_lightgbm(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("lightgbm")
    cfg = {"data": "breast_cancer", "learner": "lightgbm", "store": "lgb.db",
           "features": {"a": [0, 1], "b": [20, 21]}, "costs": {"a": "1", "b": "n"},
           "domain": [0, 10], "alpha": 1.1}
    path = _write(tmp_path, json.dumps(cfg), "cfg.json")
    assert main(["build", str(path)]) == 0
    assert "stored as build 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learner": "svm-magic"}, "unknown learner 'svm-magic'; known: logistic, sgd-hinge-l1"),
        ({"learner": None}, "missing key 'learner'"),
        ({"store": None}, "missing key 'store'"),
        ({"costs": {"mean": "1 + n", "error": "2", "worst": "5 + sin(n)"}},
         "cost of 'worst'"),
        ({"costs": {"mean": "1 + n", "error": "2", "worst": "5", "colour": "1"}},
         "unknown feature(s) ['colour']"),
        ({"costs": {"mean": "1 + n", "error": "2"}}, "costs missing for feature(s) ['worst']"),
        ({"alpha": 0.5}, "alpha must be a finite number >= 1"),
        ({"data": "mnist"}, "unknown data 'mnist'"),
        ({"colour": 3}, "unknown key(s) ['colour']"),
        ({"costs": {"mean": "1 - n", "error": "2", "worst": "5"}}, "is negative somewhere"),
        ({"features": {"mean": [0, 99]}}, "unknown column 99"),
    ],
)
def test_bad_config_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, change: dict,
                             message: str) -> None:
    cfg = {"data": "breast_cancer", "learner": "logistic", "store": "x.db",
           "features": {"mean": [0, 1], "error": [10, 11], "worst": [20, 21]},
           "costs": {"mean": "1 + n", "error": "2", "worst": "5"}, "domain": [1, 100]}
    for key, value in change.items():
        if value is None:
            del cfg[key]
        else:
            cfg[key] = value
    path = _write(tmp_path, json.dumps(cfg), "cfg.json")
    assert main(["build", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polydom build: error: ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "x.db").exists()


def test_bad_config_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["build", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read config" in capsys.readouterr().err
    bad = _write(tmp_path, "data = [unclosed\n")
    assert main(["build", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "is not valid TOML" in err and err.count("\n") == 1


def test_unwritable_outputs_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    assert main(["demo", "--tiny", "--store", str(blocker / "x.db"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polydom demo: error: ") and err.count("\n") == 1


def test_demo_bad_arguments(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--seed", "-3"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--seed" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as exc:
        main(["plot", "x.db"])
    assert exc.value.code == 2


def test_demo_tiny_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("skimage")
    db, plots = tmp_path / "demo.db", tmp_path / "plots"
    assert main(["demo", "--tiny", "--store", str(db), "--plots", str(plots),
                 "--no-progress", "--timer", "cpu"]) == 0
    out = capsys.readouterr().out
    for step in ("[1/6]", "[2/6]", "[3/6]", "[4/6]", "[5/6]", "[6/6]"):
        assert step in out
    for name in ("cost_curves.png", "accuracy_vs_budget.png", "skylines.png"):
        assert (plots / name).stat().st_size > 1000
    # the stored index is there and answers like the demo's table says
    assert main(["inspect", str(db)]) == 0
    assert "complete" in capsys.readouterr().out
    # every cost, budget and time says its unit (ms by default; the store keeps seconds) ...
    assert "budget (ms)" in out and "cost(n_lo) (ms)" in out and "fitted cost (ms)" in out
    assert "stored in s" in out
    # ... and a budget copied from the serving table means the same to `polydom lookup`:
    # with --unit ms (as the suggested command passes it) or with its unit written
    import polydom

    index = polydom.open_index(str(db))
    side, budgets = _served_budgets(out)
    suggested = out.split("|   polydom lookup ")[1].split("   (")[0].split()
    assert suggested[0].endswith("demo.db")
    assert suggested[1:3] == ["--size", f"{side:g}"] and suggested[-2:] == ["--unit", "ms"]
    assert float(suggested[4]) in budgets
    for budget in budgets:
        hit = index.lookup(float(side), budget / 1e3)
        for argv, unit, shown in ((["--budget", f"{budget:g}", "--unit", "ms"], "ms", budget),
                                  (["--budget", f"{budget:g}ms"], "s", budget / 1e3)):
            code = main(["lookup", str(db), "--size", str(side), *argv, "--json"])
            answer = json.loads(capsys.readouterr().out)
            assert code == (1 if hit is None else 0)
            assert answer["unit"] == unit and answer["budget"] == pytest.approx(shown)
            assert answer["fits"] == (hit is not None) and answer["warning"] is None
            if hit is not None:
                assert answer["model"]["features"] == hit.to_dict()["features"]


def _served_budgets(out: str) -> tuple[int, list[float]]:
    """The largest side and its budgets, read off the demo's serving table (step 5)."""
    lines = out.split("[5/6]")[1].split("[6/6]")[0].strip().splitlines()
    header = lines[1].split("  ")
    assert [h.strip() for h in header if h.strip()][:2] == ["side", "budget (ms)"]
    rows = [line.split() for line in lines[3:] if line.strip()]
    side = max(int(r[0]) for r in rows)
    return side, [float(r[1]) for r in rows if int(r[0]) == side]


def test_demo_unit_is_checked_before_anything_runs(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "sub" / "demo.db"
    assert main(["demo", "--tiny", "--store", str(db), "--no-progress", "--unit", "parsec"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--unit: unknown unit 'parsec'" in err
    assert not (tmp_path / "sub").exists()


def test_run_demo_function(tmp_path: Path) -> None:
    pytest.importorskip("skimage")
    from polydom.app import demo

    lines: list[str] = []
    res = demo.run_demo(demo.TINY, store=tmp_path / "d.db", plots=None, timer="cpu",
                        out=lines.append, progress=False)
    assert res.plots == []
    # two methods x sides x budgets, real accuracies; the largest budget answers everything
    assert len(res.rows) == 2 * len(demo.TINY.sides) * len(res.budgets)
    top = [r for r in res.rows if r.budget == max(res.budgets)]
    assert all(r.answered == 1.0 for r in top)
    assert max(r.accuracy for r in top) > 0.5
    # the index reopened from the store answers like a fresh open
    import polydom

    again = polydom.open_index(res.store)
    for size in demo.TINY.sides:
        for budget in res.budgets:
            a, b = res.index.lookup(size, budget), again.lookup(size, budget)
            assert (a is None) == (b is None)
            if a is not None:
                assert a.key == b.key
    # costs profiled in situ: one timing per profiled digit (at sides of the domain), and
    # the stored atoms' curves are the profile's q0.95 curves
    prof = res.profile
    assert prof.quantile == 0.95
    assert set(prof.sizes.tolist()) <= {float(s) for s in demo.TINY.sides}
    assert all(len(t) == demo.TINY.profile_items for t in prof.timings.values())
    assert set(again.costs) == set(prof.curves)
    for name, curve in prof.curves.items():
        assert np.allclose(again.costs[name].coefficients, curve.coefficients, rtol=1e-12)
