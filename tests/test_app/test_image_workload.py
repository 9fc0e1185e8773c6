"""The digits image workload: feature shapes, size normalisation, cost growth, loaders."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from polydom.app.workloads.images import (
    FEATURE_LENGTHS,
    image_featurizer,
    image_side,
    load_digits_workload,
    profiling_images,
    render,
)
from polydom.serving.featurizer import CLOCKS


@pytest.fixture(scope="module")
def digit() -> np.ndarray:
    from sklearn.datasets import load_digits

    return load_digits().images[7] / 16.0


def test_there_are_twelve_features_in_registration_order():
    fz = image_featurizer()
    assert len(fz) == 12
    assert fz.names == list(FEATURE_LENGTHS)
    assert fz.n_columns == sum(FEATURE_LENGTHS.values())


@pytest.mark.parametrize("shape", [(8, 8), (13, 13), (64, 64), (20, 30)])
def test_every_feature_returns_its_length_finite_at_any_shape(digit, shape):
    fz = image_featurizer()
    img = render(digit, max(shape))[: shape[0], : shape[1]]
    for name in fz.names:
        vec = fz.compute(img, name).vector
        assert vec.shape == (FEATURE_LENGTHS[name],), name
        assert np.all(np.isfinite(vec)), name


def test_size_is_the_image_side():
    assert image_side(np.zeros((16, 16))) == 16.0
    assert image_side(np.zeros((4, 9))) == 6.0
    with pytest.raises(ValueError, match="2-D grayscale"):
        image_side(np.zeros((4, 4, 3)))


def test_features_mean_the_same_at_every_side(digit):
    """Each feature of one digit changes little between sides 32, 64 and 128 (relative to
    how much it varies across digits)."""
    from sklearn.datasets import load_digits

    fz = image_featurizer()
    others = [render(im / 16.0, 32) for im in load_digits().images[:40]]
    spread = np.std(fz.transform(others), axis=0).mean()
    rows = fz.transform([render(digit, s) for s in (32, 64, 128)])
    for name, cols in fz.columns.items():
        scale = np.std(fz.transform(others, features=[name])[:, cols], axis=0).mean()
        drift = np.abs(rows[1:, cols] - rows[0, cols]).mean()
        assert drift < 0.5 * scale, (name, drift, scale)
    assert spread > 0


def test_a_model_trained_at_small_sides_predicts_well_at_larger_ones():
    wl = load_digits_workload(sides=(16, 32, 64), digits=400, seed=0,
                              features=["thumbnail", "zones", "hog", "projections", "lbp"])
    fz = wl.featurizer
    X = fz.transform(wl.items)
    train = np.isin(wl.digit, np.unique(wl.digit)[:300])
    fit_rows = train & (wl.sizes <= 32)
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    clf.fit(X[fit_rows], wl.labels[fit_rows])
    for side in (16, 32, 64):
        held = ~train & (wl.sizes == side)
        assert clf.score(X[held], wl.labels[held]) >= 0.93, side


def _median_seconds(fz, name, img, repeats=5):
    return float(np.median([fz.compute(img, name).seconds for _ in range(repeats)]))


def test_cost_grows_differently_with_the_side():
    fz = image_featurizer(["thumbnail", "histogram", "self_similarity", "harris"])
    fz.timer = CLOCKS["cpu"]  # this thread's CPU time: other processes and threads do not count
    small, large = profiling_images(sides=(16, 256), digits_per_side=0)[::2]
    assert small.shape == (16, 16) and large.shape == (256, 256)
    ratio = {}
    for name in fz.names:
        fz.compute(large, name)
        ratio[name] = _median_seconds(fz, name, large) / _median_seconds(fz, name, small)
    assert ratio["thumbnail"] < 4
    assert ratio["histogram"] > 4
    assert ratio["self_similarity"] > 20
    assert ratio["harris"] > 20


def test_loader_renders_every_digit_at_every_side():
    wl = load_digits_workload(sides=(8, 24), digits=[0, 5, 9])
    assert len(wl.items) == 6
    assert wl.sizes.tolist() == [8.0, 8.0, 8.0, 24.0, 24.0, 24.0]
    assert wl.digit.tolist() == [0, 5, 9, 0, 5, 9]
    items, labels = wl.at(24)
    assert all(im.shape == (24, 24) for im in items) and labels.tolist() == [0, 5, 9]
    assert all(0.0 <= im.min() and im.max() <= 1.0 for im in wl.items)


def test_loader_rejects_bad_arguments():
    with pytest.raises(ValueError, match="digits must be a count"):
        load_digits_workload(digits=0)
    with pytest.raises(ValueError, match="digits must be indices"):
        load_digits_workload(digits=[5000])
    with pytest.raises(ValueError, match="side must be an integer >= 8"):
        load_digits_workload(sides=(4,), digits=3)
    with pytest.raises(ValueError, match="unknown image feature"):
        image_featurizer(["hog", "sift"])


def test_profiling_images_include_the_sample_photographs():
    imgs = profiling_images(sides=(32, 64), digits_per_side=1)
    assert len(imgs) == 6  # (1 digit + 2 photos) per side
    assert [im.shape[0] for im in imgs] == [32, 32, 32, 64, 64, 64]
    assert np.std(imgs[1]) > 0.05  # a photograph, not a blank


def test_profile_of_the_image_features_fits_nonnegative_curves():
    fz = image_featurizer(["thumbnail", "zones", "spectrum"])
    prof = fz.profile(profiling_images(sides=(8, 16, 32, 64), digits_per_side=1), repeats=2,
                      degree=2)
    assert set(prof.curves) == {"thumbnail", "zones", "spectrum"}
    for curve in prof.curves.values():
        assert np.all(curve.coefficients >= 0)
        assert curve(64.0) > 0
