"""polydom plan: a workload plan from a stored index, a sizes file and a budget, with a plot."""

from __future__ import annotations

import pytest

from polydom.app.cli import main
from polydom.app.commands.plan import read_sizes
from storage import IndexStore
from tests.storage_support import COSTS, GROUPS, index_of, random_candidates


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('plan') / 'index.db'}"
    with IndexStore(url) as store:
        store.publish(store.begin_build({"learner": "plan-test"}, COSTS, GROUPS),
                      index_of(random_candidates(30, seed=5)))
    return url


def write(tmp_path, text):
    path = tmp_path / "sizes.txt"
    path.write_text(text)
    return str(path)


def test_plan_prints_the_plan_and_the_uniform_baseline(url, tmp_path, capsys):
    sizes = write(tmp_path, "# sizes\n" + "\n".join(str(s) for s in (10, 10, 20, 400)))
    png = tmp_path / "plan.png"
    assert main(["plan", url, "--sizes", sizes, "--budget", "200", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "exact plan for 4 sizes in 3 bins, budget 200 units per item" in out
    assert "uniform budget" in out
    assert png.stat().st_size > 0


def test_plan_says_when_a_uniform_budget_cannot_serve_every_size(url, tmp_path, capsys):
    sizes = write(tmp_path, "10\n800\n")
    assert main(["plan", url, "--sizes", sizes, "--budget", "300"]) == 0
    assert "uniform per-item budget: budget 300.0: no candidate fits at size 800.0" in (
        capsys.readouterr().out)


def test_plan_takes_a_histogram_and_a_budget_per_hour(url, tmp_path, capsys):
    sizes = write(tmp_path, "10, 3\n400, 1\n")
    assert main(["plan", url, "--sizes", sizes, "--per-hour", "720000", "--rate", "3600"]) == 0
    assert "budget 200 units per item" in capsys.readouterr().out


def test_read_sizes_reads_samples_and_histograms(tmp_path):
    sizes, weights = read_sizes(write(tmp_path, "1\n2  # two\n\n3\n"))
    assert sizes.tolist() == [1.0, 2.0, 3.0] and weights is None
    sizes, weights = read_sizes(write(tmp_path, "1 5\n2 7\n"))
    assert weights.tolist() == [5.0, 7.0]


@pytest.mark.parametrize(
    "text, args, reason",
    [
        ("# nothing\n", ["--budget", "200"], "sizes must not be empty"),
        ("10\n1e9\n", ["--budget", "200"], "sizes[1] must be finite and inside"),
        ("10\n", ["--budget", "0.001"], "below the cheapest plan"),
        ("10\n", [], "give --budget, or --per-hour and --rate"),
        ("10 1 2\n", ["--budget", "5"], "every line must hold a size"),
    ],
)
def test_bad_input_exits_2_with_the_reason(url, tmp_path, capsys, text, args, reason):
    assert main(["plan", url, "--sizes", write(tmp_path, text), *args]) == 2
    assert reason in capsys.readouterr().err
