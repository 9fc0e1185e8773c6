"""A real time-series workload from bundled data: PLAID appliance currents of unequal length.

Items are 1-D float arrays (one current waveform each).  **The item size is the series
length** ``n`` (PLAID: 1,074 series of 100 to 1,344 points, 11 appliance classes; shipped
inside sktime's wheel, :func:`sktime.datasets.load_plaid`, nothing downloaded).  The features
are real extractors whose costs grow differently with ``n``:

==============  ========  =====================================================  ===========
feature         length    what                                                   cost in n
==============  ========  =====================================================  ===========
catch22 atoms   1 each    the 22 catch22 features (:mod:`pycatch22`, C code),    n to
                          each an atomic feature, timed on its own; the          n log n,
                          lattice sees them as six family bundles (below)        some n**2
shape           24        z-normalised series resampled to 16 points, plus the   n
                          mean, std, min, max, crest factor, zero-crossing
                          rate, mean absolute difference, RMS of the raw series
autocorr        16        autocorrelation at 16 lags spread over [1, n/2]        n (16 dot
                          (fractions of the length)                              products)
spectrum        16        FFT power in 16 log-spaced bands of cycles per series  n log n
                          (normalised), the spectral centroid in the last
shapelets       8         least z-normalised distances of 8 shapelets (two       n**2
                          segments of each of 4 prototype series, resampled
                          to n/4 points) to every window of the series
==============  ========  =====================================================  ===========

Families of catch22 (bundles of atoms, the lattice's features): ``c22_distribution``
(DN_*), ``c22_correlation`` (CO_*, IN_*), ``c22_symbolic`` (SB_*), ``c22_forecast`` (FC_*,
MD_*, PD_*), ``c22_scaling`` (SC_*), ``c22_spectral`` (SP_*).  Every own feature is defined
relative to the length (lags and bands as fractions, shapelets a quarter of it), so a model
trained on some lengths applies to others.

The shapelet distances are ours (one matrix product over a sliding window view): sktime's
shapelet and distance code needs numba, which is not one of our dependencies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pycatch22

from polydom.curves.cost_model import CostModel
from polydom.errors import InvalidArgumentError
from polydom.serving.featurizer import Featurizer

__all__ = [
    "CATCH22_FAMILIES",
    "OWN_FEATURES",
    "PlaidWorkload",
    "shapelet_distances",
    "load_plaid_workload",
    "plaid_featurizer",
    "series_length",
]

#: catch22 feature names (pycatch22 v1 names) by family: the bundles of the lattice.
CATCH22_FAMILIES: dict[str, tuple[str, ...]] = {
    "c22_distribution": ("DN_HistogramMode_5", "DN_HistogramMode_10",
                         "DN_OutlierInclude_p_001_mdrmd", "DN_OutlierInclude_n_001_mdrmd"),
    "c22_correlation": ("CO_FirstCrossing_acf_1e_pointOfCrossing", "CO_FirstMin_ac",
                        "CO_HistogramAMI_even_5bin_ami2", "CO_trev_1_num",
                        "CO_Embed2_Dist_tau_d_expfit_meandiff",
                        "IN_AutoMutualInfoStats_40_gaussian_fmmi"),
    "c22_symbolic": ("SB_BinaryStats_mean_longstretch1", "SB_BinaryStats_diff_longstretch0",
                     "SB_MotifThree_quantile_hh",
                     "SB_TransitionMatrix_quantile_3_ac_sumdiagcov"),
    "c22_forecast": ("FC_LocalSimple_mean3_stde", "FC_LocalSimple_mean1_taurat",
                     "MD_pNN_pnn40", "PD_PeriodicityWang_th0_01"),
    "c22_scaling": ("SC_FluctAnal_2_rsrangefit_50_1_logi_prop_r1",
                    "SC_FluctAnal_2_dfa_50_1_2_logi_prop_r1"),
    "c22_spectral": ("SP_Summaries_fft_area_5_1", "SP_Summaries_fft_wq_50"),
}
_EPS = 1e-12
_PROTOTYPES = 4


def series_length(series: np.ndarray) -> float:
    """The size of a series: its number of points."""
    a = np.asarray(series)
    if a.ndim != 1:
        raise InvalidArgumentError(f"a series must be 1-D, got shape {a.shape}")
    return float(a.shape[0])


def _znorm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + _EPS)


def _resample(x: np.ndarray, points: int) -> np.ndarray:
    return np.interp(np.linspace(0.0, x.size - 1.0, points), np.arange(x.size), x)


# ---------------------------------------------------------------------------- features
def znorm(x: np.ndarray) -> np.ndarray:
    """The shared step of the own features: the z-normalised series.  O(n)."""
    return _znorm(np.asarray(x, dtype=np.float64))


def shape(x: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """Z-normalised series at 16 points plus 8 amplitude statistics (24 values).  O(n)."""
    x = np.asarray(x, dtype=np.float64)
    z = _znorm(x) if z is None else z
    rms = float(np.sqrt(np.mean(x * x)))
    stats = [x.mean(), x.std(), x.min(), x.max(), np.abs(x).max() / (rms + _EPS),
             np.mean(np.diff(np.signbit(x - x.mean())) != 0), np.mean(np.abs(np.diff(x))), rms]
    return np.concatenate([_resample(z, 16), stats])


def autocorr(x: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """Autocorrelation at 16 lags spread over [1, n/2] (fractions of the length).  O(n)."""
    z = znorm(x) if z is None else z
    n = z.size
    lags = np.unique(np.maximum(1, np.round(np.linspace(1, n // 2, 16)).astype(int)))
    values = np.array([np.dot(z[:-lag], z[lag:]) / n for lag in lags])
    return np.pad(values, (0, 16 - values.size), mode="edge")


def spectrum(x: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    """FFT power in 15 log-spaced bands of cycles per series (normalised) and the spectral
    centroid (as a fraction of the Nyquist band).  O(n log n)."""
    z = znorm(x) if z is None else z
    power = np.abs(np.fft.rfft(z)) ** 2
    k = np.arange(power.size)
    edges = np.unique(np.geomspace(1, max(power.size, 2), 16).astype(int))
    bands = np.add.reduceat(power, edges[:-1])[: edges.size - 1] if edges.size > 1 else power
    bands = np.pad(bands[:15], (0, max(0, 15 - bands[:15].size)))
    total = power[1:].sum() + _EPS
    centroid = float((k * power).sum() / (power.sum() + _EPS)) / max(power.size - 1, 1)
    return np.append(bands / total, centroid)


def shapelet_distances(z: np.ndarray, shapelets: Sequence[np.ndarray]) -> np.ndarray:
    """Least z-normalised Euclidean distance (squared, per point) from each shapelet to any
    window of ``z`` of the shapelet's length ``L``: ``2 * (1 - max correlation)``.

    One matrix product of the ``n - L + 1`` windows with the shapelets, window means and
    deviations from cumulative sums.

    Runtime complexity: O(n * L * k) for k shapelets of length L.

    >>> z = np.sin(np.linspace(0, 6, 60))
    >>> shapelet_distances(z, [z[10:30]]).round(6).tolist()
    [0.0]
    """
    z = np.asarray(z, dtype=np.float64)
    L = shapelets[0].size
    if not 2 <= L <= z.size or any(s.size != L for s in shapelets):
        raise InvalidArgumentError(
            f"shapelets must share one length in [2, {z.size}], got "
            f"{[s.size for s in shapelets]}")
    windows = np.lib.stride_tricks.sliding_window_view(z, L)
    c1 = np.concatenate([[0.0], np.cumsum(z)])
    c2 = np.concatenate([[0.0], np.cumsum(z * z)])
    mean = (c1[L:] - c1[:-L]) / L
    sd = np.sqrt(np.maximum((c2[L:] - c2[:-L]) / L - mean * mean, 0.0)) + _EPS
    S = np.stack([_znorm(s) for s in shapelets], axis=1)  # (L, k), columns mean 0, std 1
    corr = (windows @ S) / (L * sd[:, None])  # the window mean drops out against mean-0 s
    return 2.0 * (1.0 - np.clip(corr.max(axis=0), -1.0, 1.0))


def shapelets_from(prototypes: Sequence[np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The ``shapelets`` feature: two segments of each prototype (its first and third
    quarter) resampled to a quarter of the item's length, and their least distances to
    the z-normalised item (:func:`shapelet_distances`).  O(n**2) per item."""
    segments = []
    for p in prototypes:
        p = _znorm(np.asarray(p, dtype=np.float64))
        q = p.size // 4
        segments += [p[:q], p[2 * q:3 * q]]

    def shapelets(x: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        z = znorm(x) if z is None else z
        L = max(2, z.size // 4)
        return shapelet_distances(z, [_resample(s, L) for s in segments])

    return shapelets


def _catch22(name: str) -> Callable[[np.ndarray], list[float]]:
    routine = getattr(pycatch22, name)

    def feature(x: np.ndarray) -> list[float]:
        value = float(routine(np.asarray(x, dtype=np.float64).tolist()))
        return [value if np.isfinite(value) else 0.0]  # undefined on a flat series

    feature.__name__ = name
    return feature


#: Own features (not catch22): name -> vector length.
OWN_FEATURES = {"shape": 24, "autocorr": 16, "spectrum": 16, "shapelets": 2 * _PROTOTYPES}


def plaid_featurizer(
    prototypes: Sequence[np.ndarray], features: Sequence[str] | None = None
) -> tuple[Featurizer, CostModel]:
    """A featurizer of every atom and the bundles over them (cost curves 0 until profiled).

    ``features`` names lattice features (the six catch22 families and the own features;
    all by default).  Returns the featurizer (one atom per catch22 feature, one per own
    feature; size = length) and a :class:`polydom.CostModel` skeleton with the bundles and
    the columns, and the own features' shared step ``znorm`` (the z-normalised series,
    computed once per served item; its curve 0 until fitted on served sets: the in-situ
    curves of its users include it); give it curves with
    :meth:`polydom.CostModel.with_curves`.

    Runtime complexity: O(atoms).
    """
    known = [*CATCH22_FAMILIES, *OWN_FEATURES]
    names = known if features is None else list(features)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidArgumentError(f"unknown PLAID feature(s) {unknown}; available: {known}")
    fz = Featurizer(size=series_length)
    own = [n for n in names if n in OWN_FEATURES]
    if len(own) > 1:  # the own features share the z-normalised series
        fz.add_step("znorm", znorm)
    bundles: dict[str, list[str]] = {}
    for name in names:
        if name in CATCH22_FAMILIES:
            for atom in CATCH22_FAMILIES[name]:
                fz.add(atom, _catch22(atom), 1)
            bundles[name] = list(CATCH22_FAMILIES[name])
        else:
            routine = shapelets_from(prototypes) if name == "shapelets" else globals()[name]
            fz.add(name, routine, OWN_FEATURES[name], steps=fz.steps)
            bundles[name] = [name]
    zero = {atom: [0.0] for atom in fz.names}
    model = CostModel(zero, bundles={k: v for k, v in bundles.items() if v != [k]},
                      columns=fz.columns, steps={s: [0.0] for s in fz.steps} or None,
                      uses=fz.uses or None)
    return fz, model


# ---------------------------------------------------------------------------- data
@dataclass(frozen=True)
class PlaidWorkload:
    """PLAID series with labels, sizes, a featurizer and its cost-model skeleton.

    Attributes
    ----------
    items : list of ndarray
        The series (prototypes excluded).
    labels : ndarray of str
        Appliance class of each item.
    sizes : ndarray of float
        Length of each item.
    featurizer : Featurizer
        Every atom (:func:`plaid_featurizer`).
    cost_model : CostModel
        The bundles and columns (curves 0 until profiled).
    prototypes : list of ndarray
        The series the ``shapelets`` come from (not among ``items``).
    """

    items: list[np.ndarray]
    labels: np.ndarray
    sizes: np.ndarray
    featurizer: Featurizer
    cost_model: CostModel
    prototypes: list[np.ndarray]

    def with_curves(self, curves: dict) -> CostModel:
        """The cost model with these atom curves (bundles and columns kept)."""
        return self.cost_model.with_curves(atoms=curves)


def load_plaid_workload(
    series: int | None = None,
    features: Sequence[str] | None = None,
    seed: int = 0,
) -> PlaidWorkload:
    """PLAID from sktime's bundled copy, four prototypes set aside (shapelets), a featurizer.

    Runtime complexity: O(total length) to load (plus sktime's import, about a second).

    Parameters
    ----------
    series : int, optional
        How many series to keep (a stratified-by-chance random draw, seeded); all when None.
    features : sequence of str, optional
        Lattice features (default all: six catch22 families and four own features).
    seed : int, default 0

    Raises
    ------
    ValueError
        On a count outside [20, 1070] or an unknown feature.
    """
    from sktime.datasets import load_plaid

    X, y = load_plaid()
    data = [np.asarray(X.iloc[i, 0], dtype=np.float64) for i in range(len(X))]
    labels = np.asarray(y)
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    proto_ids = []
    for cls in classes[np.argsort(-counts, kind="stable")][:_PROTOTYPES]:
        members = np.flatnonzero(labels == cls)
        lengths = np.array([data[i].size for i in members])
        proto_ids.append(int(members[np.argsort(lengths)[lengths.size // 2]]))
    rest = np.array([i for i in range(len(data)) if i not in set(proto_ids)])
    if series is not None:
        if isinstance(series, bool) or not isinstance(series, (int, np.integer)) \
                or not 20 <= series <= rest.size:
            raise InvalidArgumentError(
                f"series must be a count in [20, {rest.size}], got {series!r}")
        rest = np.sort(rng.choice(rest, size=int(series), replace=False))
    prototypes = [data[i] for i in proto_ids]
    fz, model = plaid_featurizer(prototypes, features)
    items = [data[i] for i in rest]
    return PlaidWorkload(items, labels[rest], np.array([x.size for x in items], dtype=float),
                         fz, model, prototypes)
