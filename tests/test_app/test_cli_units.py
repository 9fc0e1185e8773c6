"""Budgets with units on the command line (issue 28 item 2): every budget text the one
conversion path takes is taken by ``polydom lookup``, and a bare budget far from every stored
cost is named."""

from __future__ import annotations

import json

import pytest

import polydom
from polydom.app.cli import main


def _synthetic():
    import learners

    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.7,
           frozenset({"a", "b"}): 0.9}
    return learners.SyntheticLearner(acc.__getitem__)


@pytest.fixture(scope="module")
def store_s(tmp_path_factory) -> str:
    """A store in s: at size 5, b costs 2 ms, a 6 ms, a+b 8 ms (and the free empty model)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('units') / 's.db'}"
    polydom.build_index({"a": "1e-3 * (1 + n)", "b": "2e-3"}, _synthetic(), n_max=10.0,
                        store=url, cost_unit="s")
    return url


@pytest.mark.parametrize("budget", ["1e-05ms", "2.5e-3s", "2.5ms", "2500 us", "0.0025"])
def test_lookup_takes_every_budget_text_of_the_conversion_path(store_s, capsys, budget):
    assert main(["lookup", store_s, "--size", "5", "--budget", budget, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["unit"] == "s"
    if budget == "1e-05ms":  # 1e-8 s: only the free empty model fits
        assert answer["model"]["features"] == [] and answer["budget"] == pytest.approx(1e-8)
    else:  # 2.5 ms: b (2 ms) fits, a (6 ms) does not
        assert answer["model"]["features"] == ["b"] and answer["budget"] == pytest.approx(2.5e-3)


def test_a_bare_budget_ten_times_the_dearest_cost_is_named(store_s, capsys):
    # 0.1 (read as 0.1 s, but meant as ms?) is 12.5x the dearest model's 8 ms at size 5
    assert main(["lookup", store_s, "--size", "5", "--budget", "0.1"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: budget 0.1 s is 12.5 times the cost of the dearest")
    assert "costs are in s (store unit 's') and so are bare budgets" in err and err.count("\n") == 1
    assert main(["lookup", store_s, "--size", "5", "--budget", "0.05"]) == 0
    assert capsys.readouterr().err == ""


def test_the_plan_plot_labels_its_unit(store_s, tmp_path, monkeypatch):
    from polydom.app import plots

    saved = []
    original = plots._save

    def keep(fig, axes, used, path):
        saved.append(fig)
        return original(fig, axes, used, path)

    monkeypatch.setattr(plots, "_save", keep)
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("1\n5\n9\n")
    assert main(["plan", store_s, "--sizes", str(sizes), "--budget", "5ms",
                 "--plot", str(tmp_path / "plan.png")]) == 0
    labels = {label for fig in saved for ax in fig.axes
              for label in (ax.get_xlabel(), ax.get_ylabel())}
    assert "per-item budget (s)" in labels and "mean cost per item, the budget (s)" in labels
