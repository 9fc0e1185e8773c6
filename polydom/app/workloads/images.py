"""A real image workload from bundled data: digits at several sides and 12 size-normalised features.

Items are square grayscale images (2-D float arrays in ``[0, 1]``).  **The item size is the
image side** ``n`` (``sqrt(height * width)``), as in the Poly-Dom paper's scene experiments;
every feature's cost is then a polynomial in ``n`` of degree at most 3:

=================  ========  ==================================================  ============
feature            length    what                                                cost in n
=================  ========  ==================================================  ============
thumbnail          64        8x8 point samples at cell centres                   constant
sample_stats       6         mean, std, p10/p50/p90, ink fraction of 16x16       constant
                             point samples
histogram          16        normalised 16-bin intensity histogram               n**2
projections        16        row and column means over 8 bands each              n**2
zones              16        mean intensity of a 4x4 grid of zones               n**2
hog                144       HOG, 4x4 cells per image (not pixels per cell),     n**2
                             9 orientations
lbp                10        uniform LBP histogram, P=8, radius n/8              n**2
moments            7         Hu moments (scale invariant), log-scaled            n**2
edges              16        Sobel magnitude (per image width) over a 4x4 grid   n**2
spectrum           8         FFT power in radial bands of cycles per image       n**2 log n
self_similarity    16        mean |I - shift(I, d)| for every shift d <= n/2,    n**3
                             both axes, averaged over 8 bands of d/n
harris             16        Harris response, sigma n/16, 4x4 grid, shares       n**3
=================  ========  ==================================================  ============

Every feature is defined relative to the image (fractions of the side, cells per image,
normalised histograms), so it means the same thing at every side: a model trained at one
side applies at another (accuracy is independent of n).  ``n**2 log n`` is fitted by a
polynomial anyway (degree 3 covers it from above on any bounded range).

Data: scikit-learn's 1,797 handwritten digits (8x8) upsampled with
:func:`skimage.transform.resize`, and scikit-learn's two sample photographs (427x640) in
grayscale, cropped square and resized, for timing at large sides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from skimage.feature import local_binary_pattern
from skimage.measure import moments_central, moments_hu, moments_normalized
from skimage.transform import resize

from polydom.errors import InvalidArgumentError
from polydom.serving.featurizer import Featurizer

__all__ = [
    "DigitsWorkload",
    "FEATURE_LENGTHS",
    "image_featurizer",
    "image_side",
    "load_digits_workload",
    "profiling_images",
    "render",
]

_GRID = 4  # zones per axis for grid-pooled features
_EPS = 1e-12


# ---------------------------------------------------------------------------- helpers
def image_side(image: np.ndarray) -> float:
    """The size of an image: its side ``sqrt(height * width)`` (the side of a square one)."""
    a = np.asarray(image)
    if a.ndim != 2:
        raise InvalidArgumentError(f"image must be a 2-D grayscale array, got shape {a.shape}")
    return math.sqrt(a.shape[0] * a.shape[1])


def render(image: np.ndarray, side: int) -> np.ndarray:
    """``image`` resized to ``side x side`` (bilinear; anti-aliased when shrinking), in [0, 1].

    Runtime complexity: O(side**2 + pixels of image).
    """
    if isinstance(side, bool) or not isinstance(side, (int, np.integer)) or side < 8:
        raise InvalidArgumentError(f"side must be an integer >= 8, got {side!r}")
    img = np.asarray(image, dtype=np.float64)
    shrinking = side < min(img.shape)
    out = resize(img, (int(side), int(side)), order=1, mode="edge", anti_aliasing=shrinking)
    return np.clip(out, 0.0, 1.0)


def _edges(side: int, parts: int) -> np.ndarray:
    return (np.arange(parts) * side) // parts


def _grid_means(values: np.ndarray, parts: int = _GRID) -> np.ndarray:
    """Mean of ``values`` over a ``parts x parts`` grid of zones (any side >= parts)."""
    h, w = values.shape
    rows = np.add.reduceat(values, _edges(h, parts), axis=0)
    sums = np.add.reduceat(rows, _edges(w, parts), axis=1)
    counts = np.outer(
        np.diff(np.append(_edges(h, parts), h)), np.diff(np.append(_edges(w, parts), w))
    )
    return (sums / counts).ravel()


def _point_samples(img: np.ndarray, k: int) -> np.ndarray:
    h, w = img.shape
    rows = ((np.arange(k) + 0.5) * h / k).astype(int)
    cols = ((np.arange(k) + 0.5) * w / k).astype(int)
    return img[np.ix_(rows, cols)]


# ---------------------------------------------------------------------------- features
def thumbnail(img: np.ndarray) -> np.ndarray:
    """8x8 point samples at the cell centres (64 values).  O(1)."""
    return _point_samples(img, 8).ravel()


def sample_stats(img: np.ndarray) -> np.ndarray:
    """Mean, std, 10/50/90th percentiles and fraction above 0.5 of 16x16 point samples.  O(1)."""
    s = _point_samples(img, 16).ravel()
    p10, p50, p90 = np.percentile(s, [10, 50, 90])
    return np.array([s.mean(), s.std(), p10, p50, p90, np.mean(s > 0.5)])


def histogram(img: np.ndarray) -> np.ndarray:
    """Normalised 16-bin histogram of intensities in [0, 1].  O(n**2)."""
    bins = np.minimum((img.ravel() * 16).astype(np.intp), 15)
    return np.bincount(bins, minlength=16) / bins.size


def projections(img: np.ndarray) -> np.ndarray:
    """Row means over 8 horizontal bands, then column means over 8 vertical bands.  O(n**2)."""
    h, w = img.shape
    rows = img.mean(axis=1)
    cols = img.mean(axis=0)
    r = np.add.reduceat(rows, _edges(h, 8)) / np.diff(np.append(_edges(h, 8), h))
    c = np.add.reduceat(cols, _edges(w, 8)) / np.diff(np.append(_edges(w, 8), w))
    return np.concatenate([r, c])


def zones(img: np.ndarray) -> np.ndarray:
    """Mean intensity of each zone of a 4x4 grid.  O(n**2)."""
    return _grid_means(img)


def gradient(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shared step of the gradient-based features: ``numpy.gradient`` of the image per
    image width, ``(gy, gx)`` (central differences inside, one-sided at the border).
    O(n**2)."""
    side = image_side(img)
    gy, gx = np.gradient(img)
    return gy * side, gx * side


def hog_cells(img: np.ndarray, grad: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """HOG with 4x4 cells per image (cell side n/4), 9 unsigned orientations, 1x1 blocks
    (L2-Hys), on the shared :func:`gradient` (skimage's ``hog`` computes its own gradients
    and takes none, so the cell histograms are taken here: magnitude-weighted orientation
    counts per cell, averaged over the cell's pixels).  O(n**2).
    """
    gy, gx = gradient(img) if grad is None else grad
    h, w = img.shape
    ch, cw = h // _GRID, w // _GRID
    gy, gx = gy[: ch * _GRID, : cw * _GRID], gx[: ch * _GRID, : cw * _GRID]
    magnitude = np.hypot(gx, gy)
    orientation = np.rad2deg(np.arctan2(gy, gx)) % 180.0
    bins = np.minimum((orientation / 20.0).astype(np.intp), 8)
    cell = (np.arange(ch * _GRID)[:, None] // ch) * _GRID + np.arange(cw * _GRID)[None, :] // cw
    flat = (cell * 9 + bins).ravel()
    hist = np.bincount(flat, weights=magnitude.ravel(), minlength=_GRID * _GRID * 9)
    hist = hist.reshape(_GRID * _GRID, 9) / (ch * cw)
    out = hist / np.sqrt((hist ** 2).sum(axis=1, keepdims=True) + 1e-10)
    out = np.minimum(out, 0.2)
    out = out / np.sqrt((out ** 2).sum(axis=1, keepdims=True) + 1e-10)
    return out.ravel()


def lbp(img: np.ndarray) -> np.ndarray:
    """Histogram of uniform LBP codes (P=8) at radius n/8: 10 normalised bins.  O(n**2)."""
    radius = max(1.0, image_side(img) / 8.0)
    codes = local_binary_pattern((img * 255).astype(np.uint8), 8, radius, method="uniform")
    return np.bincount(codes.astype(np.intp).ravel(), minlength=10)[:10] / codes.size


def moments(img: np.ndarray) -> np.ndarray:
    """Hu's 7 moment invariants of the image, as ``sign * log10(|h| + 1e-12)``.  O(n**2)."""
    nu = moments_normalized(moments_central(img, order=3), order=3)
    hu = moments_hu(nu)
    return np.sign(hu) * np.log10(np.abs(hu) + _EPS)


def edges(img: np.ndarray, grad: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Gradient magnitude per image width (the shared :func:`gradient`), averaged over a 4x4
    grid.  O(n**2)."""
    gy, gx = gradient(img) if grad is None else grad
    return _grid_means(np.hypot(gx, gy))


def spectrum(img: np.ndarray) -> np.ndarray:
    """Share of the (mean-removed) FFT power in 8 radial bands of 0.5 cycles per image.

    Runtime complexity: O(n**2 log n).
    """
    h, w = img.shape
    power = np.abs(np.fft.fft2(img - img.mean())) ** 2
    fy = np.fft.fftfreq(h) * h
    fx = np.fft.fftfreq(w) * w
    radius = np.sqrt(fy[:, None] ** 2 + fx[None, :] ** 2)
    band = np.minimum((radius * 2).astype(np.intp), 8)  # 8: beyond 4 cycles per image
    totals = np.bincount(band.ravel(), weights=power.ravel(), minlength=9)
    return totals[:8] / (power.sum() + _EPS)


def self_similarity(img: np.ndarray) -> np.ndarray:
    """Mean absolute difference between the image and itself shifted by every d <= n/2.

    Along each axis the profile over all shifts ``d`` is interpolated at 64 fractions ``d/n``
    in (0, 1/2) and averaged over 8 bands: 16 values.

    Runtime complexity: O(n**3) (n/2 shifts, O(n**2) each, per axis).
    """
    h, w = img.shape
    fine = (np.arange(64) + 0.5) / 128.0
    out = []
    for axis, length in ((0, h), (1, w)):
        shifts = np.arange(0, length // 2 + 1)
        profile = np.zeros(shifts.size)
        for d in shifts[1:]:
            if axis == 0:
                profile[d] = np.abs(img[d:] - img[:-d]).mean()
            else:
                profile[d] = np.abs(img[:, d:] - img[:, :-d]).mean()
        vals = np.interp(fine * length, shifts, profile)
        out.append(vals.reshape(8, 8).mean(axis=1))
    return np.concatenate(out)


def harris(img: np.ndarray, grad: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Harris corner response at Gaussian scale n/16 over a 4x4 grid, as shares of the total.

    The structure tensor is built from the shared :func:`gradient` (per image width)
    smoothed by a Gaussian of sigma ``n/16`` (:func:`scipy.ndimage.gaussian_filter`), so it is
    the same at every side (:func:`skimage.feature.corner_harris` works at pixel scale and
    drifts with the side); ``R = det - 0.05 * trace**2``.  The 16 zone means of ``R`` are
    divided by the sum of their absolute values.

    Runtime complexity: O(n**3) (Gaussian smoothing with a kernel of width proportional to n).
    """
    side = image_side(img)
    gy, gx = gradient(img) if grad is None else grad
    sigma = side / 16.0
    a = ndimage.gaussian_filter(gx * gx, sigma, mode="constant")
    b = ndimage.gaussian_filter(gx * gy, sigma, mode="constant")
    c = ndimage.gaussian_filter(gy * gy, sigma, mode="constant")
    g = _grid_means(a * c - b * b - 0.05 * (a + c) ** 2)
    return g / (np.abs(g).sum() + _EPS)


FEATURES = {
    "thumbnail": (thumbnail, 64),
    "sample_stats": (sample_stats, 6),
    "histogram": (histogram, 16),
    "projections": (projections, 16),
    "zones": (zones, 16),
    "hog": (hog_cells, _GRID * _GRID * 9),
    "lbp": (lbp, 10),
    "moments": (moments, 7),
    "edges": (edges, 16),
    "spectrum": (spectrum, 8),
    "self_similarity": (self_similarity, 16),
    "harris": (harris, 16),
}
#: The shared steps (issue 37): name -> routine, and the features that use each.
STEPS = {"gradient": gradient}
STEP_USERS = {"gradient": ("hog", "edges", "harris")}
#: Length of each feature's vector, in registration order.
FEATURE_LENGTHS = {name: length for name, (_, length) in FEATURES.items()}


def image_featurizer(features: Sequence[str] | None = None) -> Featurizer:
    """A :class:`Featurizer` with the image features (all 12 by default), size = image side.

    HOG, the gradient magnitudes (``edges``) and Harris declare the shared step
    ``gradient`` when two or more of them are chosen: a served item computes it once.

    Runtime complexity: O(number of features).

    >>> fz = image_featurizer(["zones", "spectrum"])
    >>> fz.columns["spectrum"][:3], fz.n_columns
    ([16, 17, 18], 24)
    """
    names = list(FEATURES) if features is None else list(features)
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise InvalidArgumentError(
            f"unknown image feature(s) {unknown}; available: {list(FEATURES)}")
    fz = Featurizer(size=image_side)
    for step, users in STEP_USERS.items():
        if sum(name in users for name in names) > 1:  # shared only when two use it
            fz.add_step(step, STEPS[step])
    for name in names:
        routine, length = FEATURES[name]
        fz.add(name, routine, length,
               steps=[s for s, users in STEP_USERS.items() if name in users and s in fz.steps])
    return fz


# ---------------------------------------------------------------------------- data
@dataclass(frozen=True)
class DigitsWorkload:
    """Digits rendered at several sides, with labels and a featurizer.

    Attributes
    ----------
    items : list of ndarray
        The images (``side x side`` floats in [0, 1]), ``len(digits) * len(sides)`` of them,
        side-major: every chosen digit at ``sides[0]``, then at ``sides[1]``, ...
    labels : ndarray of int
        Class (0-9) of each item.
    sizes : ndarray of float
        Side of each item.
    digit : ndarray of int
        Index of each item's source image in :func:`sklearn.datasets.load_digits`.
    featurizer : Featurizer
        :func:`image_featurizer` over the chosen features.
    """

    items: list[np.ndarray]
    labels: np.ndarray
    sizes: np.ndarray
    digit: np.ndarray
    featurizer: Featurizer

    def at(self, side: float) -> tuple[list[np.ndarray], np.ndarray]:
        """Items and labels at one side."""
        pos = np.flatnonzero(self.sizes == float(side))
        if pos.size == 0:
            raise InvalidArgumentError(
                f"side {side!r} not rendered; sides: {sorted(set(self.sizes))}")
        return [self.items[i] for i in pos], self.labels[pos]


def load_digits_workload(
    sides: Sequence[int] = (8, 16, 32, 64, 128),
    digits: Sequence[int] | int | None = None,
    features: Sequence[str] | None = None,
    seed: int = 0,
) -> DigitsWorkload:
    """scikit-learn's digits rendered at each of ``sides``, with labels and a featurizer.

    Runtime complexity: O(len(digits) * sum(side**2)).

    Parameters
    ----------
    sides : sequence of int, default (8, 16, 32, 64, 128)
        Sides to render at (>= 8).
    digits : int or sequence of int, optional
        Which of the 1,797 digits: their indices, or a count drawn at random (seeded);
        all when None.
    features : sequence of str, optional
        Feature names for the featurizer (default all 12).
    seed : int, default 0
        Seed of the random draw when ``digits`` is a count.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    total = len(data.target)
    if digits is None:
        chosen = np.arange(total)
    elif isinstance(digits, (int, np.integer)) and not isinstance(digits, bool):
        if not 1 <= digits <= total:
            raise InvalidArgumentError(f"digits must be a count in [1, {total}], got {digits!r}")
        chosen = np.sort(np.random.default_rng(seed).choice(total, size=int(digits), replace=False))
    else:
        chosen = np.asarray(list(digits), dtype=np.intp)
        if chosen.size == 0 or chosen.min() < 0 or chosen.max() >= total:
            raise InvalidArgumentError(
                f"digits must be indices in [0, {total}), got {list(digits)!r}")
    sides = [int(s) for s in sides]
    if not sides:
        raise InvalidArgumentError("sides must not be empty")
    images = data.images[chosen] / 16.0
    items: list[np.ndarray] = []
    for side in sides:
        items.extend(render(img, side) for img in images)
    k = len(sides)
    return DigitsWorkload(
        items=items,
        labels=np.tile(data.target[chosen], k),
        sizes=np.repeat(np.array(sides, dtype=np.float64), chosen.size),
        digit=np.tile(chosen, k),
        featurizer=image_featurizer(features),
    )


def profiling_images(
    sides: Sequence[int] = (16, 32, 64, 128, 256),
    digits_per_side: int = 3,
    photos: bool = True,
    seed: int = 0,
) -> list[np.ndarray]:
    """Images for timing the features: digits and the two sample photographs at each side.

    The photographs (:func:`sklearn.datasets.load_sample_images`, grayscale, centre-cropped
    square) give realistic content at large sides; digits give the workload's own content.

    Runtime complexity: O((digits_per_side + 2) * sum(side**2)).
    """
    from sklearn.datasets import load_digits, load_sample_images

    rng = np.random.default_rng(seed)
    data = load_digits()
    picks = rng.choice(len(data.target), size=int(digits_per_side), replace=False)
    sources = [data.images[i] / 16.0 for i in picks]
    if photos:
        for photo in load_sample_images().images:
            gray = photo.astype(np.float64) @ np.array([0.2125, 0.7154, 0.0721]) / 255.0
            h, w = gray.shape
            m = min(h, w)
            sources.append(gray[(h - m) // 2:(h - m) // 2 + m, (w - m) // 2:(w - m) // 2 + m])
    return [render(src, int(side)) for side in sides for src in sources]

