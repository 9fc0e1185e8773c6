"""The command line and configs as a new user meets them (issue 14): bounded configs, checks
before output, units, exit statuses, optional dependencies, readable tables and plots."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import polydom
from polydom.app import plots
from polydom.app.cli import main, version

BASE = {"data": "breast_cancer", "learner": "tree", "store": "bc.db", "domain": [1, 100],
        "features": {"mean": [0, 1], "worst": [20, 21]},
        "costs": {"mean": "1 + n", "worst": "5 + 0.01*n**2"}}


def _config(folder: Path, **change) -> Path:
    config = {**BASE, **change}
    path = folder / "cfg.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A small stored index built by the command line (costs in ms), with an empty model."""
    folder = tmp_path_factory.mktemp("built")
    assert main(["build", str(_config(folder, cost_unit="ms"))]) == 0
    return folder / "bc.db"


def _fails(argv, capsys) -> str:
    """Run ``argv``; it must exit 2 with one line on stderr and nothing on stdout."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    return err


# ------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "change, message",
    [
        ({"data": "digits", "sides": [8, 20000], "features": ["zones"], "costs": {}},
         "sides must be a list of integers in [8, 512], got [8, 20000]"),
        ({"store": 5}, "store must be a SQLAlchemy URL or a file path (text), got 5"),
        ({"cv": 2.5}, "cv must be an integer >= 2, got 2.5"),
        ({"seed": 1.5}, "seed must be an integer in [0, 4294967295], got 1.5"),
        ({"cv": 10_000}, "cv must be at most the number of rows (569), got 10000"),
        ({"cost_unit": ""}, "cost_unit must be a non-empty text"),
        ({"costs": {"mean": "((n**32)**32)**32", "worst": "1"}}, "the limit is 32"),
    ],
)
def test_config_values_are_bounded_and_typed_before_the_store_is_touched(tmp_path, capsys,
                                                                           change, message):
    err = _fails(["build", str(_config(tmp_path, **change))], capsys)
    assert message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.json"]  # no bc.db, no "5"


# ------------------------------------------------------------------- inspect / plot / lookup
@pytest.mark.parametrize("command", ["inspect", "plot"])
def test_ranges_validation_is_the_same_for_inspect_and_plot(built, tmp_path, capsys, command):
    argv = [command, str(built), "--ranges", "-1"]
    if command == "plot":
        argv += ["--out", str(tmp_path)]
    err = _fails(argv, capsys)
    assert "--ranges: expected an integer >= 0, got '-1'" in err


def test_inspect_unknown_build_errors_before_printing(built, capsys):
    err = _fails(["inspect", str(built), "--build", "99"], capsys)
    assert "build 99 does not exist" in err and "(builds: 1)" in err


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"polydom {version()}"


def test_lookup_tells_nothing_fits_from_the_empty_model(tmp_path, capsys):
    from storage import IndexStore

    # The lattice's empty model costs nothing: it answers a zero budget, and says what it is.
    url = f"sqlite:///{tmp_path / 'e.db'}"
    polydom.build_index({"a": "1 + n"}, _synthetic(), n_max=10.0, store=url, cost_unit="s")
    capsys.readouterr()
    assert main(["lookup", url, "--size", "5", "--budget", "0"]) == 0
    out = capsys.readouterr().out
    assert "{} (no features)" in out and "the empty model answers" in out
    # With only paid candidates nothing fits a zero budget: exit status 1, and it says so.
    table = polydom.PolyDomIndex.build([polydom.Candidate("paid", 0.9, "1 + n")], 0.0, 10.0)
    paid = f"sqlite:///{tmp_path / 'p.db'}"
    with IndexStore(paid) as store:
        build = store.begin_build({"learner": "t"}, {"a": polydom.CostCurve([1, 1])},
                                  {"a": [0]})
        store.publish(build, polydom.Index(table, {"a": "1 + n"}, {"a": [0]},
                                           {"cost_unit": "s"}))
    assert main(["lookup", paid, "--size", "5", "--budget", "0"]) == 1
    assert capsys.readouterr().out == (
        "nothing fits: no candidate of build 1 costs at most 0 s at size 5\n")


def _synthetic():
    import learners

    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8}
    return learners.SyntheticLearner(acc.__getitem__)


def test_cost_units_are_stored_and_printed_by_inspect_lookup_and_plot(built, tmp_path, capsys):
    assert polydom.open_index(str(built)).info["cost_unit"] == "ms"
    assert main(["inspect", str(built)]) == 0
    out = capsys.readouterr().out
    assert "costs in ms" in out and "cost(n_lo) (ms)" in out
    assert main(["lookup", str(built), "--size", "10", "--budget", "50"]) == 0
    assert "cost (ms)" in capsys.readouterr().out
    figures = _figures_of(lambda: main(["plot", str(built), "--out", str(tmp_path)]))
    labels = {ax.get_xlabel() for fig in figures for ax in fig.axes}
    assert "cost at n (ms)" in labels


def test_inspect_prints_readable_candidates_and_a_short_learner_column(built, capsys):
    assert main(["inspect", str(built)]) == 0
    out = capsys.readouterr().out
    assert "('" not in out  # no tuple reprs of lattice keys
    assert "  worst  " in out and "{} (no features)" in out
    assert max(len(line) for line in out.splitlines()) < 200


# ------------------------------------------------------------------- optional dependencies
@pytest.mark.parametrize("argv", [["demo", "--tiny", "--no-progress"],
                                  ["plot", "x.db", "--out", "p"]])
def test_missing_matplotlib_is_reported_before_anything_runs(tmp_path, capsys, monkeypatch,
                                                             argv):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.chdir(tmp_path)
    err = _fails(argv, capsys)
    assert "matplotlib" in err and "is not installed" in err
    assert list(tmp_path.iterdir()) == []  # no store, no plots: nothing ran


# ------------------------------------------------------------------- plots
def _figures_of(draw) -> list:
    """Run ``draw`` and return the matplotlib figures it saved (kept open for inspection)."""
    saved = []
    original = plots._save

    def keep(fig, axes, used, path):
        out = original(fig, axes, used, path)  # lays the figure out, then closes it

        saved.append(fig)
        return out

    plots._save = keep
    try:
        draw()
    finally:
        plots._save = original
    return saved


def _drawn_texts(fig) -> list:
    """Every text the figure shows: titles, labels, annotations, legends, tick labels in view."""
    texts = list(fig.texts)
    for ax in fig.axes:
        if not ax.axison and not ax.texts:
            continue
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend():
            texts += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis) if ax.axison else ():
            lo, hi = sorted(axis.get_view_interval())
            texts += [tick.label1 for tick in axis.get_major_ticks() if lo <= tick.get_loc() <= hi]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _texts_inside_and_readable(fig) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    box = fig.bbox
    for text in _drawn_texts(fig):
        assert text.get_fontsize() >= 7.5, (text.get_text(), text.get_fontsize())
        assert text.get_rotation() in (0.0, 90.0), text.get_text()
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


def test_plots_have_readable_labels_inside_the_figure(built, tmp_path):
    pytest.importorskip("matplotlib")
    index = polydom.open_index(str(built))
    figures = _figures_of(lambda: plots.plot_skylines(index, tmp_path / "s.png", max_ranges=0))
    figures += _figures_of(lambda: plots.plot_cost_curves(index.costs, 1.0, 100.0,
                                                          tmp_path / "c.png"))
    figures += _figures_of(lambda: plots.plot_serving_map(index, tmp_path / "m.png"))
    figures += _figures_of(lambda: plots.plot_accuracy_at_sizes(
        index, [5.0, 50.0], tmp_path / "a.png", realised=[(5.0, 3.0, 2.5)]))
    for fig in figures:
        _texts_inside_and_readable(fig)


def test_every_skyline_point_is_inside_its_panel_the_empty_models_included(built, tmp_path):
    # issue 28: the accuracy axis started just below the least accurate non-empty set, so
    # the empty model's point (the base rate) was drawn off the panel
    index = polydom.open_index(str(built))
    empty = [c.accuracy for c in index.candidates if not c.features]
    assert empty and min(empty) < min(c.accuracy for c in index.candidates if c.features)
    [fig] = _figures_of(lambda: plots.plot_skylines(index, tmp_path / "s.png", max_ranges=0))
    panels = [ax for ax in fig.axes if ax.collections]
    assert len(panels) == len(index.table.ranges)
    for ax, sky in zip(panels, index.table.skylines, strict=True):
        lo, hi = ax.get_ylim()
        drawn = [float(y) for _, y in ax.collections[0].get_offsets()]
        assert sorted(drawn) == sorted(c.accuracy for c in sky)
        assert all(lo <= y <= hi for y in drawn), (lo, hi, drawn)


def test_typed_cost_curves_are_not_labelled_fitted(built, tmp_path):
    index = polydom.open_index(str(built))
    [fig] = _figures_of(lambda: plots.plot_cost_curves(index.costs, 1.0, 100.0,
                                                       tmp_path / "c.png"))
    legends = [t.get_text() for ax in fig.axes if ax.get_legend()
               for t in ax.get_legend().get_texts()]
    # the overview panel names the features; the per-feature panels say "cost curve"
    assert legends[-1] == "cost curve" and not any("fitted" in t for t in legends)


def test_accuracy_plot_shows_realized_cost_and_over_budget_rate(tmp_path):
    from polydom.serving.adherence import AdherenceRow

    rows = [AdherenceRow(m, s, b, 10, 0.9, 1.0, over, 0.0, 0.9 * b, b, 0.0)
            for m, over in (("poly-dom", 0.1), ("any-time", 0.0))
            for s in (8.0, 16.0) for b in (1e-4, 1e-3)]
    [fig] = _figures_of(lambda: plots.plot_accuracy_vs_budget(rows, tmp_path / "a.png"))
    ylabels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert ylabels == ["accuracy", "mean realized cost (ms)", "over-budget rate"]
    styles = {line.get_linestyle() for line in fig.axes[0].get_lines()}
    assert len(styles) == 2  # two methods stay visible where their lines coincide
    _texts_inside_and_readable(fig)


# ------------------------------------------------------------------- progress
@pytest.mark.slow
def test_progress_bar_counts_trained_plus_pruned_against_the_lattice(tmp_path, capsys):
    pytest.importorskip("skimage")
    from polydom.app import demo

    demo.run_demo(demo.TINY, store=tmp_path / "d.db", plots=None, timer="cpu",
                  out=lambda s: None, progress=True)
    err = capsys.readouterr().err
    lattice = [line for line in err.replace("\r", "\n").splitlines() if "feature sets" in line]
    assert "8/8" in lattice[-1] and "trained +" in lattice[-1] and "pruned" in lattice[-1]


def test_serving_map_colours_each_cell_by_the_model_lookup_returns(tmp_path):
    pytest.importorskip("matplotlib")
    cands = [polydom.Candidate("cheap", 0.7, "1 + 0.1*n", learner="lattice"),
             polydom.Candidate("mid", 0.8, "2 + 0.5*n", learner="cegb"),
             polydom.Candidate("dear", 0.9, "5 + 0.01*n**2", learner="lattice")]
    index = polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 100.0), {})
    sizes, budgets = np.linspace(0, 100, 41), np.geomspace(0.5, 200, 37)
    [fig] = _figures_of(lambda: plots.plot_serving_map(index, tmp_path / "m.png", sizes=sizes,
                                                       budgets=budgets))
    ax = fig.axes[0]
    cells = np.asarray(ax.collections[0].get_array()).reshape(len(budgets), len(sizes))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # legend: most accurate first, then "nothing fits"; colour k + 1 is the k-th least accurate
    assert labels == ["dear [lattice] acc 0.900", "mid [cegb] acc 0.800",
                      "cheap [lattice] acc 0.700", "nothing fits"]
    colour = {-1: 0, 0: 1, 1: 2, 2: 3}  # position -> colour (positions follow accuracy here)
    want = np.vectorize(colour.get)(index.lookup_many(sizes[None, :], budgets[:, None]))
    assert np.array_equal(cells, want)
    assert {0, 1, 2, 3} <= set(np.unique(cells).tolist())
