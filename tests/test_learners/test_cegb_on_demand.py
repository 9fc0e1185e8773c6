"""On-demand prediction of single items, and expected cost curves against measured cost."""

from collections import Counter

import numpy as np
import pytest
from sklearn.datasets import load_digits

import polydom
from learners import CEGBClassifier, OnDemandFeaturizer, expected_cost_curve

QUADRANTS = {
    "q0": (slice(0, 4), slice(0, 4)),
    "q1": (slice(0, 4), slice(4, 8)),
    "q2": (slice(4, 8), slice(0, 4)),
    "q3": (slice(4, 8), slice(4, 8)),
}


class DigitFeaturizer:
    """Multi-resolution features of an 8x8 digit image, computed one feature at a time."""

    names = ("pool4", "pool2", "q0", "q1", "q2", "q3")

    def __init__(self):
        self.calls = Counter()

    def compute(self, item, name):
        key, image = item
        self.calls[(key, name)] += 1
        if name == "pool4":
            return image.reshape(2, 4, 2, 4).mean(axis=(1, 3)).ravel()
        if name == "pool2":
            return image.reshape(4, 2, 4, 2).mean(axis=(1, 3)).ravel()
        return image[QUADRANTS[name]].ravel()

    def groups(self):
        out, start = {}, 0
        for name, width in zip(self.names, (4, 16, 16, 16, 16, 16), strict=True):
            out[name] = list(range(start, start + width))
            start += width
        return out

    def matrix(self, images):
        return np.array(
            [np.concatenate([self.compute((-1, im), n) for n in self.names]) for im in images]
        )


COSTS = {
    "pool4": "1 + 0.01*n",
    "pool2": "2 + 0.04*n",
    "q0": "3 + 0.1*n",
    "q1": "3 + 0.1*n",
    "q2": "3 + 0.1*n",
    "q3": "3 + 0.1*n",
}


@pytest.fixture(scope="module")
def fitted():
    images = load_digits().images
    y = load_digits().target
    feat = DigitFeaturizer()
    X = feat.matrix(images)
    groups = feat.groups()
    ref = {k: polydom.CostCurve.parse(v)(64.0) for k, v in COSTS.items()}
    clf = CEGBClassifier(
        ref, tradeoff=0.02, feature_groups=groups, n_estimators=15, num_leaves=16
    ).fit(X[:1200], y[:1200])
    return clf, images[1200:1400], X[1200:1400], y[1200:1400]


def test_featurizer_satisfies_the_protocol():
    assert isinstance(DigitFeaturizer(), OnDemandFeaturizer)


def test_on_demand_prediction_equals_batch_prediction(fitted):
    clf, images, X, _ = fitted
    feat = DigitFeaturizer()
    items = [clf.predict_item((i, im), feat) for i, im in enumerate(images)]
    np.testing.assert_array_equal([it.label for it in items], clf.predict(X))
    np.testing.assert_allclose(
        np.array([it.proba for it in items]), clf.predict_proba(X), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_array_equal([it.split_evaluations for it in items], clf.split_evaluations(X))


def test_on_demand_computes_exactly_the_path_features_once_each(fitted):
    clf, images, X, _ = fitted
    feat = DigitFeaturizer()
    usage = clf.feature_usage(X)
    for i, im in enumerate(images):
        item = clf.predict_item((i, im), feat)
        computed = {n for (k, n) in feat.calls if k == i}
        assert computed == set(item.computed) == set(np.array(clf.feature_names_)[usage[i]])
        assert all(feat.calls[(i, n)] == 1 for n in computed)
        assert set(item.feature_seconds) == computed and item.seconds >= 0.0
    # the model is adaptive: not every item needs every feature
    assert 0 < usage.mean() < 1 and len({tuple(r) for r in usage}) > 1


def test_expected_cost_curve_equals_measured_mean_cost_at_several_sizes(fitted):
    clf, images, X, _ = fitted
    feat = DigitFeaturizer()
    curve = clf.expected_cost(X, COSTS)
    parsed = {n: polydom.CostCurve.parse(c) for n, c in COSTS.items()}
    computed = [clf.predict_item((i, im), feat).computed for i, im in enumerate(images)]
    for size in (0.0, 64.0, 1000.0, 1e5):
        measured = [sum(parsed[n](size) for n in names) for names in computed]
        assert curve(size) == pytest.approx(np.mean(measured), rel=1e-12)
    assert curve == expected_cost_curve(clf.feature_usage(X), COSTS, clf.feature_names_)


def test_featurizer_returning_the_wrong_width_is_reported(fitted):
    clf, images, _, _ = fitted

    class Short(DigitFeaturizer):
        def compute(self, item, name):
            return super().compute(item, name)[:-1]

    with pytest.raises(ValueError, match="must return"):
        clf.predict_item((0, images[0]), Short())
    with pytest.raises(ValueError, match="featurizer"):
        clf.predict_item((0, images[0]), object())


def test_predict_item_with_the_project_featurizer_uses_its_timings():
    fz = polydom.Featurizer(size=len)
    fz.add("mean", lambda x: [float(np.mean(x))], 1)
    fz.add("ends", lambda x: [x[0], x[-1]], 2)
    fz.add("spread", lambda x: [float(np.std(x)), float(np.ptp(x))], 2)
    rng = np.random.default_rng(0)
    items = [rng.normal(size=int(rng.integers(5, 40))) for _ in range(300)]
    X = fz.transform(items)
    y = (X[:, 0] + 0.5 * X[:, 3] > 0).astype(int)
    clf = CEGBClassifier({"mean": 1.0, "ends": 5.0, "spread": 2.0}, tradeoff=0.01,
                         feature_groups=fz.columns, n_estimators=20).fit(X[:200], y[:200])
    usage = clf.feature_usage(X[200:])
    for i, item in enumerate(items[200:]):
        out = clf.predict_item(item, fz)
        assert out.label == clf.predict(X[200 + i:201 + i])[0]
        assert set(out.computed) == {n for n, u in zip(clf.feature_names_, usage[i],
                                                        strict=True) if u}
        assert all(s >= 0.0 for s in out.feature_seconds.values())
