"""A published build's index as one array blob: packed by publish, unpacked by open_index.

Opening a build from its rows turns every row into Python objects twice (SQLAlchemy rows,
then keys, feature sets, needs and the seal's canonical text).  :func:`encode` packs what a
reader needs into a few numpy arrays, stored as one ``.npz`` archive (``numpy.savez``, read
back with ``allow_pickle=False``: nothing in it can run code); :func:`decode` checks every
array against the others and returns the columns :meth:`polydom.Candidate.from_columns` and
the skyline table take.  The layout is ours because no library stores "candidates,
cost coefficients, needs, ranges and skylines" as one unit; the container is numpy's.

What the blob holds (``K`` candidates, ``L`` coefficients, ``N`` needs, ``R`` ranges, ``E``
skyline entries):

============================  =================================================================
``meta`` (uint8, JSON)         format version, build id, the build's seal, index kind, key mode,
                               the distinct feature sets (their ``features_json``) and learners
``domain`` float64 (2,)        ``n_min, n_max``
``keys`` (uint8, JSON)         the keys as a JSON list of strings (key mode ``"str"``), or of
                               their ``key_json`` texts (``"json"``: any other key)
``accuracy`` float64 (K,)
``coefficients`` float64 (K,L) cost coefficients, lowest degree first, zero-padded
``feature_set_of`` int64 (K,)  index into the distinct feature sets
``learner_of`` int64 (K,)      index into the distinct learners, -1: none
``expansion_id`` int64 (K,)    the expansion whose model the candidate uses, -1: none
``own_models`` int64 (M,)      candidates with their own model blob, ascending; ``meta`` holds
                               the digests of those blobs in the same order
``need_candidate``, ``need_atom`` int64 (N,), ``need_probability`` float64 (N,):
                               the needs, sorted by candidate then atom
``breaks`` float64 (R,)        start of each range
``sky_offsets`` int64 (R+1,), ``sky_candidates`` int64 (E,): the skylines, range after range
============================  =================================================================

Invariant: decoding what :func:`encode` wrote gives exactly the columns the rows give
(tested against the row path on random stores).
"""

from __future__ import annotations

import io
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polydom.blob_bounds import BlobBoundsError, load_npz
from storage.codec import decode_key
from storage.seal import IndexIntegrityError

__all__ = ["FORMAT", "IndexArrays", "check_rows", "decode", "encode"]

#: The value of ``build_arrays.format`` this module writes and reads.
FORMAT = "npz-1"
_VERSION = 1


@dataclass(frozen=True)
class IndexArrays:
    """The decoded columns of a build's index (see the module docstring).

    ``features`` are frozensets (equal sets are one object), ``needs`` one dict per
    candidate (atom name -> probability, in atom order), ``skylines`` lists of candidate
    positions, cheapest first.
    """

    build_id: int
    seal: str | None
    kind: str
    n_min: float
    n_max: float
    keys: list[Hashable]
    accuracy: np.ndarray
    coefficients: np.ndarray
    features: list[frozenset]
    learners: list[str | None]
    expansion_id: np.ndarray
    own_models: dict[int, str]
    needs: list[dict[str, float]]
    breaks: list[float]
    skylines: list[list[int]]
    #: What :func:`check_rows` compares the rows with.
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


def _text(value: Any) -> np.ndarray:
    """Canonical JSON (as :func:`storage.codec.canonical_json` writes each key) as bytes."""
    return np.frombuffer(
        json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode(),
        dtype=np.uint8)


def encode(
    build_id: int,
    seal: str | None,
    kind: str,
    domain: tuple[float, float],
    keys: Sequence[Hashable],
    key_json: Sequence[str],
    accuracy: Sequence[float],
    coefficients: Sequence[np.ndarray],
    features_json: Sequence[str],
    learners: Sequence[str | None],
    expansion_ids: Sequence[int | None],
    model_digests: Sequence[str | None],
    needs: Sequence[tuple[int, int, float]],
    breaks: Sequence[float],
    skylines: Sequence[Sequence[int]],
) -> bytes:
    """The blob of one build, from the columns :func:`storage.builds.publish` writes as rows.

    ``keys[i]`` is candidate ``i``'s key and ``key_json[i]`` its stored text; ``needs`` rows
    are ``(candidate, atom id, probability)``; ``model_digests[i]`` is the digest of the
    candidate's own model blob (None: none, or its model is an expansion's).

    Runtime complexity: O(K * L + N + E) numpy work plus one JSON text of the keys.
    """
    k = len(keys)
    width = max((len(c) for c in coefficients), default=1)
    coef = np.zeros((k, max(width, 1)))
    for i, c in enumerate(coefficients):
        coef[i, : len(c)] = c
    plain = all(type(key) is str for key in keys)
    set_ids: dict[str, int] = {}
    learner_ids: dict[str, int] = {}
    set_of = np.array([set_ids.setdefault(f, len(set_ids)) for f in features_json],
                      dtype=np.int64)
    learner_of = np.array(
        [-1 if name is None else learner_ids.setdefault(name, len(learner_ids))
         for name in learners], dtype=np.int64)
    own = [i for i, d in enumerate(model_digests) if d is not None]
    need = sorted((int(c), int(a), float(p)) for c, a, p in needs)
    meta = {
        "version": _VERSION,
        "build_id": int(build_id),
        "seal": seal,
        "kind": kind,
        "keys": "str" if plain else "json",
        "feature_sets": list(set_ids),
        "learners": list(learner_ids),
        "model_digests": [model_digests[i] for i in own],
    }
    arrays = {
        "meta": _text(meta),
        "domain": np.array(domain, dtype=np.float64),
        "keys": _text(list(keys) if plain else list(key_json)),
        "accuracy": np.asarray(accuracy, dtype=np.float64).reshape(k),
        "coefficients": coef,
        "feature_set_of": set_of.reshape(k),
        "learner_of": learner_of.reshape(k),
        "expansion_id": np.array([-1 if e is None else int(e) for e in expansion_ids],
                                 dtype=np.int64).reshape(k),
        "own_models": np.array(own, dtype=np.int64),
        "need_candidate": np.array([r[0] for r in need], dtype=np.int64),
        "need_atom": np.array([r[1] for r in need], dtype=np.int64),
        "need_probability": np.array([r[2] for r in need], dtype=np.float64),
        "breaks": np.array(breaks, dtype=np.float64),
        "sky_offsets": np.cumsum([0] + [len(s) for s in skylines], dtype=np.int64),
        "sky_candidates": np.array([i for s in skylines for i in s], dtype=np.int64),
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


_SHAPES = {  # name -> (dtype kind, ndim)
    "meta": ("u", 1), "domain": ("f", 1), "keys": ("u", 1), "accuracy": ("f", 1),
    "coefficients": ("f", 2), "feature_set_of": ("i", 1), "learner_of": ("i", 1),
    "expansion_id": ("i", 1), "own_models": ("i", 1), "need_candidate": ("i", 1),
    "need_atom": ("i", 1), "need_probability": ("f", 1), "breaks": ("f", 1),
    "sky_offsets": ("i", 1), "sky_candidates": ("i", 1),
}


def decode(blob: bytes, build_id: int, atoms: Sequence[str]) -> IndexArrays:
    """The columns of a blob written by :func:`encode` for build ``build_id``.

    ``atoms`` are the build's atomic features in their stored order (need rows name them
    by position).  Every array is checked against the others (lengths, index ranges,
    order), so a blob that decodes is a well-formed index; values (accuracies in [0, 1],
    finite coefficients, probabilities) are checked by the constructors they feed.

    Runtime complexity: O(K * L + N + E) numpy work, plus O(K + N + R) to build the Python
    columns.

    Raises
    ------
    IndexIntegrityError
        If the blob does not decode, or its arrays do not form an index of build
        ``build_id``.
    """
    what = f"build {build_id}: its index arrays"
    try:
        stored = load_npz(blob, what)
        arrays = {name: stored[name] for name in _SHAPES}
        meta = json.loads(arrays["meta"].tobytes())
        keys = json.loads(arrays["keys"].tobytes())
    except BlobBoundsError as exc:
        raise IndexIntegrityError(f"{exc}; refusing to open it") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure means a corrupt blob
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise IndexIntegrityError(
            f"{what} do not decode ({type(exc).__name__}: {reason}); refusing to open it"
        ) from None
    for name, (kind, ndim) in _SHAPES.items():
        a = arrays[name]
        if a.dtype.kind != kind or a.ndim != ndim:
            raise IndexIntegrityError(f"{what}: {name!r} has dtype {a.dtype} and {a.ndim} "
                                      f"dimensions, not kind {kind!r} and {ndim}")

    def bad(reason: str) -> IndexIntegrityError:
        return IndexIntegrityError(f"{what}: {reason}; refusing to open it")

    if not isinstance(meta, dict) or meta.get("version") != _VERSION:
        raise bad(f"unknown layout {meta.get('version') if isinstance(meta, dict) else meta!r}")
    if meta.get("build_id") != build_id:
        raise bad(f"they were written for build {meta.get('build_id')!r}")
    sets, learners, digests = (meta.get(n) for n in ("feature_sets", "learners",
                                                     "model_digests"))
    if not (_strings(sets) and _strings(learners) and _strings(digests)
            and isinstance(meta.get("kind"), str) and meta.get("keys") in ("str", "json")
            and (meta.get("seal") is None or isinstance(meta.get("seal"), str))):
        raise bad("their header is malformed")
    acc = arrays["accuracy"]
    k = acc.shape[0]
    if not _strings(keys) or len(keys) != k or k == 0:
        raise bad(f"{len(keys) if isinstance(keys, list) else keys!r} keys for {k} accuracies")
    for name in ("feature_set_of", "learner_of", "expansion_id"):
        if arrays[name].shape != (k,):
            raise bad(f"{name!r} has {arrays[name].shape[0]} entries for {k} candidates")
    if arrays["coefficients"].shape[0] != k or arrays["coefficients"].shape[1] == 0:
        raise bad(f"coefficients of shape {arrays['coefficients'].shape} for {k} candidates")
    _within(arrays["feature_set_of"], 0, len(sets), "feature_set_of", bad)
    _within(arrays["learner_of"], -1, len(learners), "learner_of", bad)
    own = arrays["own_models"]
    _within(own, 0, k, "own_models", bad)
    if len(own) != len(digests) or (np.diff(own) <= 0).any():
        raise bad("own model positions are not ascending or do not match their digests")
    if ((arrays["expansion_id"] >= 0)[own]).any():
        raise bad("a candidate has both an expansion's model and its own")
    nc, na, npr = arrays["need_candidate"], arrays["need_atom"], arrays["need_probability"]
    if not nc.shape == na.shape == npr.shape:
        raise bad("need columns differ in length")
    _within(nc, 0, k, "need_candidate", bad)
    _within(na, 0, len(atoms), "need_atom", bad)
    if len(nc) > 1 and (np.diff(nc * len(atoms) + na) <= 0).any():
        raise bad("needs are not sorted by candidate and atom, or repeat one")
    breaks, offsets, sky = arrays["breaks"], arrays["sky_offsets"], arrays["sky_candidates"]
    r = breaks.shape[0]
    if (r == 0 or offsets.shape != (r + 1,) or offsets[0] != 0 or offsets[-1] != len(sky)
            or (np.diff(offsets) < 0).any()):
        raise bad(f"skyline offsets do not cover {r} ranges and {len(sky)} entries")
    _within(sky, 0, k, "sky_candidates", bad)
    domain = arrays["domain"]
    if domain.shape != (2,):
        raise bad(f"domain of shape {domain.shape}")
    if meta["keys"] == "str":
        key_list: list[Hashable] = keys
    else:
        try:
            key_list = [decode_key(t) for t in keys]
        except ValueError as exc:
            raise bad(f"a key does not decode ({exc})") from None
    set_list = []
    for text in sets:
        try:
            names = json.loads(text)
        except ValueError:
            names = None
        if not _strings(names):
            raise bad(f"feature set {text!r} is not a JSON list of names")
        set_list.append(frozenset(names))
    names = list(atoms)
    needs: list[dict[str, float]] = [{} for _ in range(k)]
    for c, a, p in zip(nc.tolist(), na.tolist(), npr.tolist(), strict=True):
        needs[c][names[a]] = p
    learner_names: list[str | None] = [*learners, None]  # index -1: none
    cands = sky.tolist()
    cuts = offsets.tolist()
    return IndexArrays(
        build_id=build_id,
        seal=meta["seal"],
        kind=meta["kind"],
        n_min=float(domain[0]),
        n_max=float(domain[1]),
        keys=key_list,
        accuracy=acc,
        coefficients=arrays["coefficients"],
        features=[set_list[i] for i in arrays["feature_set_of"].tolist()],
        learners=[learner_names[i] for i in arrays["learner_of"].tolist()],
        expansion_id=arrays["expansion_id"],
        own_models=dict(zip(own.tolist(), digests, strict=True)),
        needs=needs,
        breaks=breaks.tolist(),
        skylines=[cands[a:b] for a, b in zip(cuts, cuts[1:], strict=False)],
        raw={"key_mode": meta["keys"], "key_text": arrays["keys"].tobytes().decode(),
             "key_json": None if meta["keys"] == "str" else keys, "feature_sets": sets,
             **{name: arrays[name] for name in ("feature_set_of", "need_candidate",
                                                "need_atom", "need_probability",
                                                "sky_offsets", "sky_candidates")}},
    )


def check_rows(
    arrays: IndexArrays,
    candidates: Sequence[Sequence[Any]],
    coefficients: Sequence[Sequence[Any]],
    needs: Sequence[Sequence[Any]],
    ranges: Sequence[Sequence[Any]],
    entries: Sequence[Sequence[Any]],
) -> str | None:
    """The first group of a build's rows that differs from its arrays (None: all agree).

    The rows are those the build's seal covers, in key order: ``candidates`` ``(candidate_id,
    key_json, accuracy, features_json, learner, expansion_id, model_sha256)``,
    ``coefficients`` ``(candidate_id, degree, coefficient)`` (any order), ``needs``
    ``(candidate_id, feature_id, probability)``, ``ranges`` ``(range_id, n_lo, n_hi)``,
    ``entries`` ``(range_id, rank, candidate_id)``.  Arrays that match their digest and
    rows equal to them are rows equal to what was sealed: the rows are checked column by
    column (list and array comparisons) instead of through the seal's canonical text.

    Runtime complexity: O(K * d + N + E) for K candidates of degree d, N needs and E
    entries, in list and numpy comparisons.
    """
    raw = arrays.raw
    k = len(arrays.keys)
    cols = list(zip(*candidates, strict=True)) if candidates else [()] * 7
    ids, key_json, acc, feats, learners, eids, digests = cols
    if list(ids) != list(range(k)):
        return "candidates"
    if raw["key_mode"] == "str":
        if "[" + ",".join(key_json) + "]" != raw["key_text"]:
            return "candidates"
    elif list(key_json) != raw["key_json"]:
        return "candidates"
    sets = raw["feature_sets"]
    own = [None] * k
    for pos, sha in arrays.own_models.items():
        own[pos] = sha
    try:
        accuracy = np.array(acc, dtype=np.float64)
    except (TypeError, ValueError):  # a value edited to text
        return "candidates"
    if not (np.array_equal(accuracy, arrays.accuracy)
            and list(feats) == [sets[i] for i in raw["feature_set_of"].tolist()]
            and list(learners) == arrays.learners
            and list(eids) == [None if e < 0 else e for e in arrays.expansion_id.tolist()]
            and list(digests) == own):
        return "candidates"
    coef = arrays.coefficients
    nonzero = coef != 0.0
    lengths = np.where(nonzero.any(axis=1), coef.shape[1] - np.argmax(nonzero[:, ::-1], axis=1),
                       1)
    rows = _numbers(coefficients)
    if rows is None or len(rows) != int(lengths.sum()):
        return "cost coefficients"
    owner, degree = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    if ((owner < 0) | (owner >= k) | (degree < 0) | (degree >= lengths[owner.clip(0, k - 1)])
            ).any() or not np.array_equal(coef[owner, degree], rows[:, 2]) or not (
                np.array_equal(owner, rows[:, 0]) and np.array_equal(degree, rows[:, 1])):
        return "cost coefficients"
    rows = _numbers(needs)
    if rows is None or not (np.array_equal(rows[:, 0], raw["need_candidate"])
                            and np.array_equal(rows[:, 1], raw["need_atom"])
                            and np.array_equal(rows[:, 2], raw["need_probability"])):
        return "needs"
    r = len(arrays.breaks)
    ends = [*arrays.breaks[1:], arrays.n_max]
    if [tuple(x) for x in ranges] != list(zip(range(r), arrays.breaks, ends, strict=True)):
        return "ranges"
    offsets = raw["sky_offsets"]
    sizes = np.diff(offsets)
    rows = _numbers(entries)
    if rows is None or not (
            np.array_equal(rows[:, 0], np.repeat(np.arange(r), sizes))
            and np.array_equal(rows[:, 1], np.arange(len(raw["sky_candidates"]))
                               - np.repeat(offsets[:-1], sizes))
            and np.array_equal(rows[:, 2], raw["sky_candidates"])):
        return "skyline entries"
    return None


def _numbers(rows: Sequence[Sequence[Any]]) -> np.ndarray | None:
    """Rows of three numbers as a ``(n, 3)`` float64 matrix; None when a value is not a
    number (a column edited to text)."""
    if not rows:
        return np.empty((0, 3))
    try:
        out = np.array(rows, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return out if out.shape == (len(rows), 3) else None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _within(values: np.ndarray, lo: int, hi: int, name: str, bad: Any) -> None:
    if values.size and (values.min() < lo or values.max() >= hi):
        raise bad(f"{name!r} holds values outside [{lo}, {hi})")
