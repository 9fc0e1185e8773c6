"""`polydom build` with budgeted learners next to the lattice learner, all in one index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import learners
import polydom
from polydom.app.cli import main
from tests.config_support import breast_cancer_config

pytest.importorskip("lightgbm")

CEGB = """[[budgeted]]
learner = "cegb"
tradeoffs = [0.0005, 0.01]
params = { n_estimators = 10, num_leaves = 8 }
"""
MIXED_TOML = breast_cancer_config("mixed.db", CEGB)


@pytest.mark.slow
def test_build_runs_lattice_and_budgeted_learners_into_one_index_and_inspect_names_them(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED_TOML)
    assert main(["build", str(path)]) == 0
    out = capsys.readouterr().out
    assert "budgeted: 2 candidates from cegb" in out
    index = polydom.open_index(tmp_path / "mixed.db")
    assert {c.learner for c in index.candidates} <= {"tree", "cegb"}
    assert len(index.cost_model.atoms) == 30 and set(index.cost_model.bundles) == {
        "mean", "error", "worst"}
    assert main(["inspect", str(tmp_path / "mixed.db"), "--ranges", "0"]) == 0
    table = capsys.readouterr().out
    assert "learner" in table and "tree" in table
    on_skyline = {c.learner for pos in index.table.skyline_positions[0]
                  for c in [index.candidates[pos]]}
    assert all(name in table for name in on_skyline)


ADAPT_TOML = breast_cancer_config("mixed.db", """[[budgeted]]
learner = "adapt"
tradeoffs = [0.1]
params = { method = "gbrt", n_estimators = 10, max_iter = 2, high_cost = "tree" }
""")


@pytest.mark.slow
def test_build_config_runs_adapt_around_a_registered_high_cost_learner(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "adapt.toml"
    path.write_text(ADAPT_TOML)
    assert main(["build", str(path)]) == 0
    assert "candidates from adapt" in capsys.readouterr().out
    index = polydom.open_index(tmp_path / "mixed.db")
    adapt = [c for c in index.candidates if c.learner == "adapt"]
    assert adapt and all(isinstance(c.payload.estimator, learners.AdaptClassifier)
                         for c in adapt)


@pytest.mark.parametrize(
    ("budgeted", "message"),
    [
        ([{"learner": "magic", "tradeoffs": [1.0]}], "unknown budgeted learner 'magic'"),
        ([{"learner": "cegb", "tradeoffs": []}], "tradeoffs must be a non-empty list"),
        ([{"learner": "cegb", "tradeoffs": [1.0], "colour": 1}], "unknown key(s) ['colour']"),
        ([{"learner": "cegb", "tradeoffs": [1.0], "cost": "median"}], "cost must be"),
    ],
)
def test_bad_budgeted_entries_are_one_line_errors_and_store_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture, budgeted: list, message: str) -> None:
    cfg = {"data": "breast_cancer", "learner": "tree", "store": "x.db",
           "features": {"a": list(range(15)), "b": list(range(15, 30))},
           "costs": {"a": "1", "b": "2"}, "budgeted": budgeted}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    assert main(["build", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.db").exists()


CSTC = """[[budgeted]]
learner = "cstc"
tradeoffs = [0.001, 0.1]
sizes = [1.0, 50.0]
params = { depth = 2, max_sweeps = 2, feature_map = "standard" }
"""
CSTC_TOML = breast_cancer_config("mixed.db", CSTC, atoms=False)


def candidates_of(url: Path) -> list:
    return sorted((str(c.key), c.learner, c.accuracy, c.cost.coefficients.tolist(),
                   sorted(c.needs.items())) for c in polydom.open_index(url).candidates)


@pytest.mark.slow
def test_the_budgeted_sweeps_of_a_build_run_on_its_executor(tmp_path: Path) -> None:
    from polydom.app.config_build import build_from_config, load_config
    from tests.executor_support import RecordingExecutor

    recording = RecordingExecutor()

    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "cstc.toml").write_text(CSTC_TOML)
    build_from_config(load_config(tmp_path / "ref" / "cstc.toml"), out=lambda _: None)
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "cstc.toml").write_text(CSTC_TOML)
    build_from_config(load_config(tmp_path / "rec" / "cstc.toml"), out=lambda _: None,
                      executor=recording)
    sweeps = [tasks for name, tasks in recording.calls if name == "_fit_point"]
    # one batch: (size, trade-off, fit) for both sizes and trade-offs, on the build's 2 folds
    # and the refit on all rows that is served
    assert sweeps == [[(k, j, f) for k in range(2) for j in range(2) for f in range(3)]]
    assert any(name == "expand_task" for name, _ in recording.calls)  # the lattice: same executor
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "cstc.toml").write_text(
        breast_cancer_config("mixed.db", CSTC, atoms=False, executor="processes:2"))
    assert main(["build", str(tmp_path / "pool" / "cstc.toml")]) == 0
    ref = candidates_of(tmp_path / "ref" / "mixed.db")
    assert {learner for _, learner, *_ in ref} == {"tree", "cstc"}
    assert candidates_of(tmp_path / "rec" / "mixed.db") == ref
    assert candidates_of(tmp_path / "pool" / "mixed.db") == ref


PROTOCOL_CEGB = """[[budgeted]]
learner = "cegb"
tradeoffs = [0.001, 0.1]
params = { n_estimators = 3, num_leaves = 4 }
"""
PROTOCOL_TOML = breast_cancer_config("protocol.db", PROTOCOL_CEGB, atoms=False, seed=3)


def test_every_learner_of_a_config_build_scores_on_one_protocol(tmp_path: Path) -> None:
    """The lattice's feature sets and the budgeted settings are scored on the same seeded
    folds; the build says so and keeps the protocol."""
    from polydom.app.config_build import build_from_config, load_config

    path = tmp_path / "protocol.toml"
    path.write_text(PROTOCOL_TOML)
    lines: list[str] = []
    index = build_from_config(load_config(path), out=lines.append)
    assert index.info["evaluation"] == learners.EvaluationProtocol(folds=2, seed=3).describe()
    assert any("evaluation: 2-fold cross-validation (stratified, seed 3) for every learner"
               in line for line in lines)
    assert {c.learner for c in index.candidates} >= {"cegb"}
    for cand in index.candidates:
        assert len(cand.fold_scores) == 2
        assert cand.accuracy == pytest.approx(sum(cand.fold_scores) / 2)


def test_cv_and_holdout_together_are_refused(tmp_path: Path) -> None:
    from polydom.app.config_build import ConfigError, build_from_config, load_config

    path = tmp_path / "both.toml"
    path.write_text(breast_cancer_config("protocol.db", PROTOCOL_CEGB, atoms=False, seed=3,
                                         holdout=0.3))
    with pytest.raises(ConfigError, match="give cv .folds. or holdout .a held-out share., "
                                          "not both"):
        build_from_config(load_config(path), out=lambda line: None)
    assert not (tmp_path / "protocol.db").exists()
