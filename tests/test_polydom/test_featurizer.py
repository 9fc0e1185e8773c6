"""Featurizer: layout, only-requested computation, timing, and non-negative cost fits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
from polydom.curves.fitting import fit_cost_curve, summarise_timings
from polydom.serving.featurizer import Featurizer
from tests.strategies import examples

SIZES = np.array([8.0, 16.0, 32.0, 64.0, 128.0])


class FakeClock:
    """A clock that only moves when a routine says how long it "took"."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def counting_featurizer(calls: dict[str, int]) -> Featurizer:
    def routine(name: str, length: int):
        def run(x):
            calls[name] = calls.get(name, 0) + 1
            return np.full(length, float(len(x)))
        return run

    fz = Featurizer(size=len)
    fz.add("a", routine("a", 2), 2).add("b", routine("b", 3), 3).add("c", routine("c", 1), 1)
    return fz


# ---------------------------------------------------------------------- layout and transform
def test_columns_follow_registration_order():
    fz = counting_featurizer({})
    assert fz.columns == {"a": [0, 1], "b": [2, 3, 4], "c": [5]}
    assert fz.n_columns == 6 and fz.names == ["a", "b", "c"]


def test_transform_computes_only_requested_features_full_width_nan_elsewhere():
    calls: dict[str, int] = {}
    fz = counting_featurizer(calls)
    X = fz.transform([[1, 2, 3], [1]], features=["c", "a"])
    assert calls == {"a": 2, "c": 2}
    assert X.shape == (2, 6)
    assert np.isnan(X[:, 2:5]).all()
    assert X[0].tolist()[:2] == [3.0, 3.0] and X[1, 5] == 1.0


def test_transform_narrow_returns_requested_columns_in_registration_order():
    fz = counting_featurizer({})
    X = fz.transform([[1, 2]], features=["c", "a"], narrow=True)
    assert X.shape == (1, 3) and X.tolist() == [[2.0, 2.0, 2.0]]


def test_full_rows_fit_index_model_columns():
    fz = counting_featurizer({})
    cand = polydom.Candidate("ac", 0.9, "n", features={"a", "c"})
    index = polydom.Index(polydom.PolyDomIndex.build([cand]),
                          {n: "n" for n in fz.names}, columns=fz.columns)
    full = fz.transform([[1, 2, 3]])
    narrow = fz.transform([[1, 2, 3]], features=["a", "c"], narrow=True)
    assert full[:, index.model_columns(cand.features)].tolist() == narrow.tolist()


def test_compute_times_one_feature_with_the_featurizer_clock():
    clock = FakeClock()
    fz = Featurizer(size=len, timer=clock).add("f", lambda x: clock.spend(0.25) or [1.0], 1)
    vec, seconds = fz.compute([0], "f")
    assert vec.tolist() == [1.0] and seconds == 0.25


# ---------------------------------------------------------------------- validation
def test_cpu_clock_counts_the_computing_thread_not_the_process():
    """``CLOCKS["cpu"]`` times the thread computing the feature: another thread of the process
    burning CPU meanwhile (a BLAS worker, another request) is not in the feature's timing,
    where ``time.process_time`` would put it there."""
    import threading
    import time

    from polydom.serving.featurizer import CLOCKS

    started, done = threading.Event(), threading.Event()

    def burn() -> None:  # numpy releases the GIL: this thread takes CPU while the other waits
        a = np.random.default_rng(0).random((300, 300))
        started.set()
        until = time.thread_time() + 0.2  # its own CPU: the same on a loaded machine
        while time.thread_time() < until:
            a = np.tanh(a @ a.T / 300.0)
        done.set()

    def wait(item):  # waits for the other thread: next to no CPU of its own
        done.wait(5.0)
        return [0.0]

    timed = {}
    for name in ("cpu", "process"):
        started.clear()
        done.clear()
        worker = threading.Thread(target=burn)
        worker.start()
        started.wait(5.0)
        clock = CLOCKS["cpu"] if name == "cpu" else time.process_time
        fz = Featurizer(timer=clock).add("wait", wait, 1)
        timed[name] = fz.compute(None, "wait").seconds
        worker.join()
    assert timed["process"] > 0.15  # the burning thread's CPU, counted by the process clock
    assert timed["cpu"] < 0.05  # not by the thread clock


def test_in_situ_timings_are_what_a_served_one_feature_set_pays():
    """Serving computes only the chosen set, so its first feature always follows a model
    prediction; a feature whose cost depends on that context (cold after a prediction, warm
    after another feature of the same item) must be timed in it by the in-situ protocol,
    as ``predict_item`` pays it for a one-feature set."""
    clock = FakeClock()
    state = {"cold": True}

    def routine(cost_cold: float, cost_warm: float):
        def run(item):
            clock.spend(cost_cold if state["cold"] else cost_warm)
            state["cold"] = False
            return [float(len(item))]
        return run

    def predict(row):
        state["cold"] = True
        return [0]

    fz = Featurizer(size=len, timer=clock)
    fz.add("a", routine(2.0, 1.0), 1).add("b", routine(5.0, 4.0), 1).add("c", routine(3.0, 2.5), 1)
    items = [[1.0] * k for k in range(1, 41)]
    run = fz.featurize_in_situ(items, predict=predict, seed=1)
    warm = 0
    for name, cold in (("a", 2.0), ("b", 5.0), ("c", 3.0)):
        # each timed as a served set's first feature, but the first item's second and third
        # (no item before it to predict on)
        assert np.sum(run.timings[name] != cold) <= 1, name
        warm += int(np.sum(run.timings[name] != cold))
    assert warm == 2
    from sklearn.linear_model import LogisticRegression

    from polydom.pipeline.subsets import index_over_subsets

    rows = fz.transform(items)
    labels = (rows[:, 0] > 20).astype(int)
    index = index_over_subsets(rows, labels, fz.columns, {"a": "2", "b": "5", "c": "3"},
                               [{"a"}, {"a", "b", "c"}], LogisticRegression(), n_min=1,
                               n_max=40)
    for item in items[:5]:
        predict(None)  # the model served before this item
        served = index.predict_item(item, 2.5, fz)
        assert served.computed == ("a",) and served.label is not None
        assert served.seconds == 2.0  # what the in-situ timing of "a" says


def test_unknown_feature_names_are_named():
    fz = counting_featurizer({})
    with pytest.raises(ValueError, match="unknown feature.*'zz'"):
        fz.transform([[1]], features=["a", "zz"])
    with pytest.raises(ValueError, match="unknown feature 'zz'"):
        fz.compute([1], "zz")


def test_wrong_vector_length_is_an_error():
    fz = Featurizer().add("f", lambda x: [1.0, 2.0], 3)
    with pytest.raises(ValueError, match="returned 2 values, registered length is 3"):
        fz.compute([1], "f")


@pytest.mark.parametrize("degree", [-1, 4, 1.5, True, "2"])
def test_degree_out_of_range_is_rejected(degree):
    fz = counting_featurizer({})
    with pytest.raises(ValueError, match="degree must be an integer in"):
        fz.profile([[1], [1, 2]], degree=degree)
    with pytest.raises(ValueError, match="degree must be an integer in"):
        fit_cost_curve([1, 2, 3], [1, 2, 3], degree=degree)


def test_bad_profile_arguments_are_rejected():
    fz = counting_featurizer({})
    with pytest.raises(ValueError, match="statistic must be one of"):
        fz.profile([[1], [1, 2], [1, 2, 3]], statistic="median")
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        fz.profile([[1], [1, 2], [1, 2, 3]], repeats=0)
    with pytest.raises(ValueError, match="at least 3 distinct sizes"):
        fz.profile([[1], [2], [1, 2]], degree=2)
    with pytest.raises(ValueError, match="items must not be empty"):
        fz.profile([], degree=0)


def test_bad_registrations_are_rejected():
    fz = counting_featurizer({})
    with pytest.raises(ValueError, match="already registered"):
        fz.add("a", len, 1)
    with pytest.raises(ValueError, match="positive integer"):
        fz.add("d", len, 0)
    with pytest.raises(ValueError, match="must be callable"):
        fz.add("d", 3, 1)
    with pytest.raises(ValueError, match="size of an item"):
        Featurizer(size=lambda x: -1.0).size([1])


# ---------------------------------------------------------------------- fitting
@pytest.mark.parametrize(
    "coefs",
    [[2e-3], [1e-4, 3e-6], [5e-5, 0.0, 2e-7], [1e-5, 1e-6, 0.0, 4e-9], [0.0, 0.0, 0.0, 1e-8]],
)
@pytest.mark.parametrize("weighting", ["relative", "absolute"])
def test_fit_recovers_known_polynomials_exactly(coefs, weighting):
    truth = polydom.CostCurve(coefs)
    fitted = fit_cost_curve(SIZES, truth(SIZES), degree=3, weighting=weighting)
    assert fitted.coefficients.size <= 4
    np.testing.assert_allclose(fitted(SIZES), truth(SIZES), rtol=1e-6)
    padded = np.zeros(4)
    padded[: fitted.coefficients.size] = fitted.coefficients
    np.testing.assert_allclose(padded, np.pad(coefs, (0, 4 - len(coefs))), rtol=1e-5, atol=1e-12)


def test_profile_recovers_known_polynomials_from_synthetic_timings():
    """Each run "takes" c(n) * (1 + noise); max, p90 and mean fits bracket the truth."""
    clock = FakeClock()
    rng = np.random.default_rng(0)
    truth = {"lin": polydom.CostCurve([1e-4, 2e-6]), "quad": polydom.CostCurve([5e-5, 0, 3e-8])}

    def routine(name):
        def run(x):
            clock.spend(float(truth[name](len(x))) * (1.0 + 0.1 * rng.random()))
            return [0.0]
        return run

    fz = Featurizer(size=len, timer=clock)
    for name in truth:
        fz.add(name, routine(name), 1)
    items = [[0] * int(n) for n in SIZES for _ in range(4)]
    prof = fz.profile(items, repeats=5, statistic="max", degree=2)
    mean = prof.refit(statistic="mean")
    p90 = prof.refit(statistic="p90")
    for name, curve in truth.items():
        np.testing.assert_allclose(prof.curves[name](SIZES), 1.1 * curve(SIZES), rtol=0.02)
        np.testing.assert_allclose(mean.curves[name](SIZES), 1.05 * curve(SIZES), rtol=0.02)
        assert np.all(p90.curves[name](SIZES) <= prof.curves[name](SIZES) * 1.01)
        assert np.all(p90.curves[name](SIZES) >= mean.curves[name](SIZES) * 0.99)
        assert prof.timings[name].shape == (len(items), 5)
        assert prof.residuals[name] < 0.05


def test_refit_reuses_timings_without_running_routines():
    calls: dict[str, int] = {}
    fz = counting_featurizer(calls)
    prof = fz.profile([[0] * n for n in (1, 2, 3, 4)], repeats=2, degree=1)
    before = dict(calls)
    again = prof.refit(statistic="mean", degree=0)
    assert calls == before
    assert again.degree == 0 and set(again.curves) == {"a", "b", "c"}


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.floats(0.0, 1e3), min_size=4, max_size=12, unique=True),
    st.lists(st.floats(0.0, 10.0), min_size=12, max_size=12),
    st.integers(0, 3),
    st.sampled_from(["relative", "absolute"]),
)
def test_fitted_curves_are_nonnegative_on_the_domain(sizes, seconds, degree, weighting):
    sizes = np.array(sizes)
    curve = fit_cost_curve(sizes, np.array(seconds[: sizes.size]), degree, weighting)
    assert np.all(curve.coefficients >= 0)
    assert curve.is_nonnegative(0.0, float("inf"))
    grid = np.linspace(0.0, 2 * sizes.max() + 1, 50)
    assert np.all(curve(grid) >= 0)


def test_summarise_timings_statistics_are_ordered():
    rng = np.random.default_rng(1)
    sizes = np.repeat([1.0, 2.0, 3.0], 10)
    t = rng.random((30, 3))
    _, top = summarise_timings(sizes, t, "max")
    _, p90 = summarise_timings(sizes, t, "p90")
    _, avg = summarise_timings(sizes, t, "mean")
    assert np.all(top >= p90) and np.all(p90 >= avg)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(st.floats(1.0, 1e3), min_size=4, max_size=10, unique=True),
    st.lists(st.floats(1e-6, 1.0), min_size=10, max_size=10),
    st.integers(0, 3),
)
def test_covering_fit_is_at_or_above_every_point(sizes, seconds, degree):
    sizes = np.array(sizes)
    y = np.array(seconds[: sizes.size])
    curve = fit_cost_curve(sizes, y, degree, cover=True)
    assert np.all(curve.coefficients >= 0)
    assert np.all(curve(sizes) >= y * (1 - 1e-9))


def test_covering_fit_of_exact_points_is_the_polynomial():
    truth = polydom.CostCurve([1e-4, 2e-6, 3e-9])
    fitted = fit_cost_curve(SIZES, truth(SIZES), degree=2, cover=True)
    np.testing.assert_allclose(fitted(SIZES), truth(SIZES), rtol=1e-6)


def test_profile_takes_explicit_sizes():
    fz = counting_featurizer({})
    items = [[0], [0], [0], [0]]
    prof = fz.profile(items, repeats=1, degree=1, sizes=[1, 2, 3, 4])
    assert prof.sizes.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="one value per item"):
        fz.profile(items, degree=1, sizes=[1, 2])
    with pytest.raises(ValueError, match=r"sizes\[2\] must be finite and >= 0, got -3.0"):
        fz.profile(items, degree=1, sizes=[1, 2, -3, 4])
