"""Progress of `polydom build`: a bar per phase (the lattice, each budgeted learner), each
counting its finished trainings against the trainings handed out (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polydom.app.cli import main
from tests.config_support import breast_cancer_config

pytest.importorskip("lightgbm")
tqdm = pytest.importorskip("tqdm")

CONFIG = breast_cancer_config("p.db", """[[budgeted]]
learner = "cegb"
tradeoffs = [0.0005, 0.01, 0.1]
params = { n_estimators = 5, num_leaves = 4 }
""")


class RecordingBar:
    """What a tqdm bar is asked to show: its name, total and count."""

    bars: list[RecordingBar] = []

    def __init__(self, desc: str, total: int, **_: object) -> None:
        self.desc, self.total, self.n = desc, total, 0
        RecordingBar.bars.append(self)

    def __enter__(self) -> RecordingBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, k: int) -> None:
        self.n += k

    def refresh(self) -> None:
        return None


def test_every_phase_counts_its_trainings_against_a_total(tmp_path: Path, capsys,
                                                          monkeypatch) -> None:
    monkeypatch.setattr(tqdm, "tqdm", RecordingBar)
    RecordingBar.bars = []
    (tmp_path / "p.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    assert main(["build", str(tmp_path / "p.toml")]) == 0
    out = capsys.readouterr().out
    bars = {bar.desc: bar for bar in RecordingBar.bars}
    assert list(bars) == ["budgeted cegb", "lattice"]
    assert bars["budgeted cegb"].total >= 3 and bars["budgeted cegb"].n == bars[
        "budgeted cegb"].total
    trained = int(out.split("(")[1].split(" new")[0])
    assert bars["lattice"].n == bars["lattice"].total == trained == 8
