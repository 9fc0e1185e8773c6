"""The overrun guard and the in-situ quantile fit, against known distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polydom
from polydom.curves.calibration import (
    calibrate_overrun,
    conformal_factor,
    min_calibration_items,
)
from polydom.curves.quantile_fit import InSituProfile, fit_quantile_curve


def test_conformal_factor_is_the_ceil_m_plus_one_times_one_minus_q_th_order_statistic():
    rng = np.random.default_rng(1)
    for m in (19, 20, 57, 200):
        r = rng.exponential(size=m)
        k = math.ceil((m + 1) * 0.95 - 1e-12)
        assert conformal_factor(r, 0.05) == np.sort(r)[k - 1]


def test_conformal_calibration_meets_the_target_rate_within_sampling_error():
    # ratios lognormal(0, 0.4): the realised/predicted distribution is known, the curve is
    # off by a factor; the mean exceedance over calibration draws is exactly 1 - k/(m+1)
    rng = np.random.default_rng(7)
    q, m, draws, fresh = 0.05, 99, 400, 2000
    curve = polydom.CostCurve([1e-4, 2e-6])
    rates = []
    for _ in range(draws):
        n_cal = rng.uniform(10, 1000, m)
        t_cal = curve(n_cal) * 1.7 * rng.lognormal(0.0, 0.4, m)
        cal = calibrate_overrun([curve], [{"f": 1.0}], n_cal, {"f": t_cal}, q, score="ratio")
        n_new = rng.uniform(10, 1000, fresh)
        t_new = curve(n_new) * 1.7 * rng.lognormal(0.0, 0.4, fresh)
        rates.append(np.mean(t_new > cal.factors[0] * curve(n_new)))
    k = math.ceil((m + 1) * (1 - q))
    expected = 1 - k / (m + 1)  # 0.05 for m = 99
    se = np.std(rates) / math.sqrt(draws)
    assert abs(np.mean(rates) - expected) < 4 * se
    assert np.mean(rates) <= q + 4 * se


def test_an_offset_calibration_meets_the_rate_under_additive_delays():
    # a fixed delay of 5 ms on 20% of the items, whatever their size: the excess score's
    # offset is the right shape; "best" holds q with both scores at q/2
    rng = np.random.default_rng(8)
    q, m, draws, fresh = 0.05, 199, 200, 2000
    curve = polydom.CostCurve([1e-4, 2e-6])

    def draw(size):
        n = rng.uniform(10, 1000, size)
        return n, curve(n) * rng.uniform(0.5, 1.0, size) + 5e-3 * (rng.random(size) < 0.2)

    rates = {"excess": [], "best": []}
    for _ in range(draws):
        n_cal, t_cal = draw(m)
        n_new, t_new = draw(fresh)
        for score in rates:
            cal = calibrate_overrun([curve], [{"f": 1.0}], n_cal, {"f": t_cal}, q, score)
            bound = cal.curves([curve])[0]
            rates[score].append(np.mean(t_new > bound(n_new)))
            if score == "excess":
                assert cal.factors[0] == 1.0 and cal.offsets[0] > 0
    k = math.ceil((m + 1) * (1 - q))
    se = np.std(rates["excess"]) / math.sqrt(draws)
    assert abs(np.mean(rates["excess"]) - (1 - k / (m + 1))) < 4 * se
    assert np.mean(rates["best"]) <= q + 4 * np.std(rates["best"]) / math.sqrt(draws)


def test_best_picks_the_smaller_calibrated_curve_of_the_two_scores():
    rng = np.random.default_rng(9)
    n = rng.uniform(10, 1000, 200)
    curve = polydom.CostCurve([0.0, 1e-5])
    uniform_slowdown = curve(n) * 3.0 * rng.uniform(0.9, 1.0, 200)
    cal = calibrate_overrun([curve], [{"f": 1.0}], n, {"f": uniform_slowdown}, 0.05, "best")
    assert cal.offsets[0] == 0.0 and 2.6 < cal.factors[0] <= 3.0
    delayed = curve(n) + 2e-3 * (rng.random(200) < 0.5)
    cal = calibrate_overrun([curve], [{"f": 1.0}], n, {"f": delayed}, 0.05, "best")
    assert cal.factors[0] == 1.0 and cal.offsets[0] == pytest.approx(2e-3)
    with pytest.raises(ValueError, match="score must be one of"):
        calibrate_overrun([curve], [{"f": 1.0}], n, {"f": delayed}, 0.05, "median")


def test_a_feature_set_is_calibrated_on_the_sum_of_its_atoms_times():
    rng = np.random.default_rng(3)
    n = rng.uniform(1, 100, 60)
    ta, tb = rng.uniform(0.5, 1.5, 60) * n, rng.uniform(1, 3, 60)
    curve = polydom.CostCurve([2.0, 1.0])
    cal = calibrate_overrun([curve, polydom.CostCurve([0.0])], [{"a": 1.0, "b": 1.0}, {}],
                            n, {"a": ta, "b": tb}, 0.1, score="ratio")
    ratios = np.sort((ta + tb) / curve(n))
    assert cal.factors[0] == ratios[math.ceil(61 * 0.9) - 1]
    assert cal.factors[1] == 1.0  # needs nothing: never overruns


def test_too_few_held_out_items_is_refused_naming_the_target():
    assert min_calibration_items(0.05) == 19
    with pytest.raises(ValueError, match=r"target_overrun=0\.05 with score 'ratio' needs "
                                         r"at least 19"):
        calibrate_overrun([polydom.CostCurve([1.0])], [{"a": 1.0}], np.ones(18),
                          {"a": np.ones(18)}, 0.05, "ratio")
    with pytest.raises(ValueError, match="needs at least 39"):  # q/2 for each score
        calibrate_overrun([polydom.CostCurve([1.0])], [{"a": 1.0}], np.ones(38),
                          {"a": np.ones(38)}, 0.05, "best")


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_bad_held_out_timings_are_refused_naming_the_atom(bad):
    t = np.ones(30)
    t[4] = bad
    with pytest.raises(ValueError, match=r"atom 'a'.*position 4"):
        calibrate_overrun([polydom.CostCurve([1.0])], [{"a": 1.0}], np.ones(30), {"a": t})


def test_a_candidate_needing_an_untimed_atom_is_refused_naming_it():
    with pytest.raises(ValueError, match="'b'"):
        calibrate_overrun([polydom.CostCurve([1.0])], [{"b": 1.0}], np.ones(40),
                          {"a": np.ones(40)})


def test_the_quantile_fit_recovers_a_known_quantile_curve():
    rng = np.random.default_rng(11)
    n = rng.uniform(50, 1500, 3000)
    base = 2e-5 + 1e-8 * n + 4e-11 * n**2
    t = base * rng.lognormal(0.0, 0.25, n.size)
    fitted = fit_quantile_curve(n, t, 0.9, degree=2)
    truth = base * math.exp(0.25 * 1.2815515655446004)  # the lognormal's 0.9 quantile
    grid = np.linspace(100, 1400, 14)
    assert np.all(np.abs(fitted(grid) / (truth[0] / base[0] * (2e-5 + 1e-8 * grid
                                                              + 4e-11 * grid**2)) - 1) < 0.08)
    covered = np.mean(t <= fitted(n) * (1 + 1e-9))
    assert abs(covered - 0.9) < 3 * math.sqrt(0.09 / n.size) + 0.005
    assert np.all(fitted.coefficients >= 0)


def test_in_situ_profile_reports_what_each_curve_covers():
    rng = np.random.default_rng(2)
    n = np.repeat(np.arange(10.0, 110.0, 10.0), 30)
    prof = InSituProfile.fit(n, {"f": n * rng.uniform(1, 2, n.size)}, quantile=0.8, degree=1)
    assert abs(prof.coverage["f"] - 0.8) < 0.05
    assert "covered" in prof.table()
    with pytest.raises(ValueError, match="quantile"):
        prof.refit(quantile=1.0)


def _scaled_index(cal_factor: float):
    costs = {"a": polydom.CostCurve([1.0, 0.01]), "b": polydom.CostCurve([0.5, 0.0, 1e-4])}
    cands = [
        polydom.Candidate("none", 0.3, [0.0], features=()),
        polydom.Candidate("a", 0.7, costs["a"], features={"a"}),
        polydom.Candidate("b", 0.8, costs["b"], features={"b"}),
        polydom.Candidate("ab", 0.9, costs["a"] + costs["b"], features={"a", "b"}),
    ]
    table = polydom.PolyDomIndex.build(cands, 0.0, 500.0)
    return polydom.Index(table, costs), cands, costs


def test_a_calibrated_index_answers_as_a_sweep_over_the_scaled_curves():
    index, cands, costs = _scaled_index(1.0)
    rng = np.random.default_rng(5)
    n = rng.uniform(0, 500, 80)
    timings = {"a": costs["a"](n) * rng.uniform(0.8, 2.0, 80),
               "b": costs["b"](n) * rng.uniform(1.0, 1.5, 80)}
    guarded = index.calibrated(n, timings, 0.05)
    cal = calibrate_overrun([c.cost for c in cands], [c.needs for c in cands], n, timings)
    fresh = polydom.PolyDomIndex.build(
        [polydom.Candidate(c.key, c.accuracy, c.cost * float(k) + float(d), c.features)
         for c, k, d in zip(cands, cal.factors, cal.offsets, strict=True)], 0.0, 500.0)
    sizes = np.repeat(np.linspace(0, 500, 41), 41)
    budgets = np.tile(np.geomspace(0.1, 60, 41), 41)
    assert np.array_equal(guarded.lookup_many(sizes, budgets), fresh.lookup_many(sizes, budgets))
    assert guarded.info["overrun"]["factors"] == cal.factors.tolist()
    assert guarded.info["overrun"]["offsets"] == cal.offsets.tolist()
    assert guarded.candidates[1].payload is index.candidates[1].payload
    twice = guarded.calibrated(n, timings, 0.05, "ratio")  # composes with the first
    again = calibrate_overrun([c.cost for c in guarded.candidates],
                              [c.needs for c in cands], n, timings, 0.05, "ratio")
    assert np.allclose(twice.overrun_factors(), cal.factors * again.factors)
    assert np.allclose(twice.overrun_offsets(), cal.offsets * again.factors)


def test_new_atom_curves_keep_each_candidates_factor_and_overhead():
    index, cands, costs = _scaled_index(1.0)
    overhead = polydom.Candidate("adaptive", 0.95, costs["a"] * 0.5 + polydom.CostCurve([3.0]),
                                 features={"a"}, needs={"a": 0.5})
    table = polydom.PolyDomIndex.build([*cands, overhead], 0.0, 500.0)
    index = polydom.Index(table, costs, info={"overrun": {"factors": [1, 1, 2, 1, 1],
                                                          "offsets": [0, 0, 0, 0.5, 0]}})
    slower = {"a": costs["a"] * 2.0}
    out = index.with_atom_costs(slower)
    got = {c.key: c.cost for c in out.candidates}
    assert got["b"] == costs["b"] * 2.0  # factor 2 kept, atom b unchanged
    assert got["ab"] == slower["a"] + costs["b"] + 0.5  # offset kept
    assert np.allclose(got["adaptive"].coefficients,
                       (slower["a"] * 0.5 + polydom.CostCurve([3.0])).coefficients)
    assert out.costs["a"] == slower["a"]
    with pytest.raises(ValueError, match="unknown atom 'zz'"):
        index.with_atom_costs({"zz": polydom.CostCurve([1.0])})
