"""The PLAID time-series workload: real extractors, sizes = lengths, an in-situ build."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

MISSING = [m for m in ("sktime", "pycatch22") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not installed (pip install '.[timeseries]')")


@pytest.fixture(scope="module")
def workload():
    from polydom.app.workloads.timeseries import load_plaid_workload

    return load_plaid_workload(series=60, features=["c22_spectral", "shape", "autocorr",
                                                    "shapelets"], seed=1)


def test_items_are_plaid_series_whose_size_is_their_length(workload):
    assert len(workload.items) == 60
    assert workload.sizes.tolist() == [float(x.size) for x in workload.items]
    assert 100 <= workload.sizes.min() and workload.sizes.max() <= 1344
    assert set(np.unique(workload.labels)) <= {str(k) for k in range(11)}
    fz = workload.featurizer
    assert fz.size(workload.items[0]) == workload.items[0].size
    assert fz.names == ["SP_Summaries_fft_area_5_1", "SP_Summaries_fft_wq_50", "shape",
                        "autocorr", "shapelets"]
    assert workload.cost_model.bundles == {
        "c22_spectral": frozenset({"SP_Summaries_fft_area_5_1", "SP_Summaries_fft_wq_50"})}


def test_every_feature_is_finite_and_of_its_declared_length(workload):
    rows = workload.featurizer.transform(workload.items[:10])
    assert rows.shape == (10, workload.featurizer.n_columns)
    assert np.all(np.isfinite(rows))


def test_shapelet_distances_match_a_window_by_window_scan():
    from polydom.app.workloads.timeseries import shapelet_distances

    rng = np.random.default_rng(0)
    z = rng.normal(size=80).cumsum()
    shapelets = [rng.normal(size=12), rng.normal(size=12).cumsum()]
    got = shapelet_distances(z, shapelets)
    for k, s in enumerate(shapelets):
        s = (s - s.mean()) / s.std()
        best = np.inf
        for i in range(z.size - 11):
            w = z[i:i + 12]
            w = (w - w.mean()) / w.std()
            best = min(best, np.mean((w - s) ** 2))
        assert got[k] == pytest.approx(best, abs=1e-9)


def test_an_unknown_feature_is_refused_naming_it():
    from polydom.app.workloads.timeseries import plaid_featurizer

    with pytest.raises(ValueError, match="'fourier'"):
        plaid_featurizer([np.ones(10)], ["fourier"])


def test_an_in_situ_build_is_guarded_and_serves_held_out_series(workload):
    from polydom.app.insitu_run import (
        build_in_situ,
        serve_side_by_side,
        size_agnostic,
        split_items,
    )

    train, cal, test = split_items(len(workload.items), 0.25, 0.67, seed=0)  # 40 to calibrate
    built = build_in_situ(workload.items, workload.labels, workload.featurizer,
                          workload.cost_model, train, cal, 100.0, 1344.0,
                          target_overrun=0.05, profile_items=20, alpha=1.0, cv=2,
                          max_iter=100)
    assert built.guarded is not None and built.calibration[0].size == len(cal)
    factors, offsets = built.guarded.overrun_factors(), built.guarded.overrun_offsets()
    assert factors.size == len(built.index.candidates) and np.all(factors > 0)
    for c, g, k, d in zip(built.index.candidates, built.guarded.candidates, factors, offsets,
                          strict=True):
        assert np.allclose(g.cost.coefficients, (c.cost * float(k) + float(d)).coefficients)
    assert set(built.curves) == set(workload.featurizer.names)
    flat = size_agnostic(built.guarded, 1344.0)
    assert all(c.cost.degree == 0 for c in flat.candidates)
    rows = serve_side_by_side({"guard": built.guarded, "flat": flat},
                              [workload.items[i] for i in test], workload.labels[test],
                              [1e-3, 1.0], workload.featurizer)
    assert {(r.method, r.budget) for r in rows} == {(m, b) for m in ("guard", "flat")
                                                    for b in (1e-3, 1.0)}
    assert all(0 <= r.over <= 1 and 0 <= r.accuracy <= 1 for r in rows)


@pytest.mark.slow
def test_the_plaid_demo_stores_a_guarded_build_and_serves_from_it(tmp_path, capsys):
    from polydom.app.cli import main

    store = tmp_path / "plaid.db"
    assert main(["demo", "--workload", "plaid", "--tiny", "--no-plots", "--no-progress",
                 "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "[1/6] PLAID: 100 series" in out and "[5/6] served" in out
    import polydom

    builds = polydom.list_builds(str(store))
    assert [b.status for b in builds] == ["complete", "complete"]
    index = polydom.open_index(str(store))
    assert index.info["build_id"] == 2 and "overrun" in index.info
    assert index.info["overrun"]["target_overrun"] == 0.05
    # costs, budgets and times in ms, said so; the suggested lookup reads its budget in ms
    assert "budget (ms)" in out and "guard mean (ms)" in out and "stored in s" in out
    suggested = out.split("|   polydom lookup ")[1].split("   (")[0].split()
    assert suggested[-2:] == ["--unit", "ms"]
    size, budget = float(suggested[2]), float(suggested[4])
    hit = index.lookup(size, budget / 1e3)
    assert main(["lookup", *suggested, "--json"]) == (1 if hit is None else 0)
    answer = json.loads(capsys.readouterr().out)
    assert answer["unit"] == "ms" and answer["budget"] == pytest.approx(budget)
    assert answer["fits"] == (hit is not None)
    if hit is not None:
        assert answer["model"]["features"] == hit.to_dict()["features"]
