"""A published build's side record: the candidates no lookup can return, kept as one blob.

A build's lookups only ever answer with the candidates on its skylines; those are its rows
(``candidates``, ``candidate_costs``, ``candidate_needs``: what the SQL views show) and its
index arrays (:mod:`storage.index_arrays`: what ``open_index`` reads).  The others (the
dominated candidates, which a rebuild, a recalibration or a calibration sweeps again) are
kept apart in ``build_pools``: one ``.npz`` archive (deflated at level 1; read back with
``allow_pickle=False`` after the bounds of :mod:`polydom.blobs.bounds`; a column of one
value, such as standard errors all 0 or no models, is stored as that value),
whose digest (sha256, or HMAC under the store key) the build's seal covers
(:func:`storage.seal.seal_header`'s ``pool`` part).  ``open_index`` reads the record's
digest, never its blob; the blob is read, checked against that digest and decoded when
something first asks for every candidate (:class:`StoredPool`).

What the blob holds (``M`` candidates, each at its position in the build's pool):

==========================  ==================================================================
``meta`` (uint8, JSON)       format version, build id, M, the pool's size, feature names,
                             atoms, key mode, the distinct learner / model format / model
                             digest texts, the seals of the expansions the candidates use
``positions`` int64 (M,)     each candidate's position in the build's pool, ascending
``keys`` (uint8, JSON)       the keys (key mode ``"str"``) or their ``key_json`` texts
``accuracies``, ``accuracy_ses`` float64 (M,); ``coefficients`` float64 (M, L)
``features`` uint8           the (M, F) feature matrix, bit-packed by row (``numpy.packbits``)
``need_row``, ``need_atom`` int64, ``need_probability`` float64: the needs (absent when each
                             candidate needs its features with probability 1)
``fold_values`` float64, ``fold_offsets`` int64 (M+1,): each candidate's fold scores
``learner``, ``model_format``, ``model_digest`` int64 (M,): positions into the texts (-1: None)
``expansion`` int64 (M,)     the stored expansion whose model the candidate uses (-1: none)
``model_offsets`` int64 (M+1,), ``model_bytes`` uint8: the candidates' own model blobs
==========================  ==================================================================

Runtime complexity of both directions: O(M * (L + F + S) + N) numpy work and one JSON text
of the keys; no Python loop over the candidates without needs or models.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polydom.blobs.bounds import BlobBoundsError, load_npz
from polydom.curves.candidate import Candidate
from polydom.curves.candidate_arrays import CandidateArrays
from polydom.errors import IndexIntegrityError
from storage.codec import decode_key, encode_key

__all__ = ["FORMAT", "PoolRecord", "StoredPool", "decode", "encode"]

#: The value of ``build_pools.format`` this module writes and reads.
FORMAT = "pool-1"
_VERSION = 1
#: Columns stored as one value when every candidate has it (``meta["constant"]``).
_CONSTANT = ("accuracy_ses", "learner", "model_format", "model_digest", "expansion")


@dataclass(frozen=True)
class PoolRecord:
    """A decoded side record: the candidates' positions and columns (no payloads), and for
    each the expansion whose model it uses (-1: none) or its own model (format, digest,
    blob; None: no model)."""

    positions: np.ndarray
    pool: CandidateArrays
    expansion: np.ndarray
    model_format: list[str | None]
    model_digest: list[str | None]
    model_blob: list[bytes | None]
    expansion_seals: dict[str, str]


def _json(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, sort_keys=True, separators=(",", ":"),
                                    allow_nan=False).encode(), dtype=np.uint8)


def _texts(values: Sequence[str | None]) -> tuple[list[str], np.ndarray]:
    distinct: dict[str, int] = {}
    ids = [-1 if v is None else distinct.setdefault(v, len(distinct)) for v in values]
    return list(distinct), np.array(ids, dtype=np.int64).reshape(len(values))


def encode(
    build_id: int,
    size: int,
    positions: np.ndarray,
    pool: CandidateArrays,
    expansion: np.ndarray | None = None,
    models: Sequence[tuple[bytes, str, str] | None] | None = None,
    expansion_seals: dict[str, str] | None = None,
) -> bytes:
    """The blob of the side record of build ``build_id`` (a pool of ``size`` candidates):
    the candidates of ``pool`` at ``positions``, with the expansions their models come from
    and their own models ``(blob, format, digest)``.

    Runtime complexity: O(M * (L + F + S) + N) plus one JSON text of the keys.
    """
    m = len(pool)
    plain = all(type(key) is str for key in pool.keys)
    models = [None] * m if models is None else list(models)
    formats, format_ids = _texts([None if x is None else x[1] for x in models])
    digests, digest_ids = _texts([None if x is None else x[2] for x in models])
    learners, learner_ids = _texts(pool.learners)
    blobs = [b"" if x is None else x[0] for x in models]
    offsets = np.cumsum([0, *map(len, blobs)], dtype=np.int64)
    meta = {"version": _VERSION, "build_id": int(build_id), "count": m, "size": int(size),
            "feature_names": list(pool.feature_names), "atoms": list(pool.atoms),
            "keys": "str" if plain else "json", "learners": learners, "formats": formats,
            "digests": digests, "expansion_seals": dict(expansion_seals or {}),
            "width": int(pool.features.shape[1])}
    arrays = {
        "meta": _json(meta),
        "positions": np.asarray(positions, dtype=np.int64).reshape(m),
        "keys": _json(pool.keys if plain else [encode_key(k) for k in pool.keys]),
        "accuracies": pool.accuracies,
        "accuracy_ses": pool.accuracy_ses,
        "coefficients": pool.coefficients,
        "features": np.packbits(pool.features, axis=1),
        "fold_values": pool.fold_values,
        "fold_offsets": pool.fold_offsets,
        "learner": learner_ids,
        "model_format": format_ids,
        "model_digest": digest_ids,
        "expansion": (np.full(m, -1, dtype=np.int64) if expansion is None
                      else np.asarray(expansion, dtype=np.int64).reshape(m)),
        "model_offsets": offsets,
        "model_bytes": np.frombuffer(b"".join(blobs), dtype=np.uint8),
    }
    if pool.needs is not None:
        rows, atoms = np.nonzero(pool.needs)
        arrays.update(need_row=rows.astype(np.int64), need_atom=atoms.astype(np.int64),
                      need_probability=pool.needs[rows, atoms])
    # a column of one value (no standard errors, no learner, no models) is stored as that
    # value: the archive then holds what varies
    for name in _CONSTANT:
        column = arrays[name]
        if column.size and (column == column.flat[0]).all():
            meta.setdefault("constant", {})[name] = column.flat[0].item()
            arrays[name] = np.zeros((0,) + column.shape[1:], dtype=column.dtype)
    arrays["meta"] = _json(meta)
    buf = io.BytesIO()
    # deflate at its fastest level: the floats barely compress, the keys and bits do
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(value),
                                          allow_pickle=False)
    return buf.getvalue()


def decode(blob: bytes, build_id: int) -> PoolRecord:
    """The side record a blob written by :func:`encode` for build ``build_id`` holds,
    every array checked against the others and the columns by :class:`CandidateArrays`.

    Runtime complexity: O(M * (L + F + S) + N) numpy work, O(M) for the keys.

    Raises
    ------
    IndexIntegrityError
        If the blob does not decode or does not form the side record of this build.
    """
    what = f"build {build_id}: its side record (build_pools)"

    def bad(reason: str) -> IndexIntegrityError:
        return IndexIntegrityError(f"{what}: {reason}; refusing to read it")

    try:
        arrays = load_npz(blob, what)
        meta = json.loads(arrays["meta"].tobytes())
        for name, value in meta.get("constant", {}).items():
            if name not in _CONSTANT or arrays[name].shape[0] != 0:
                raise bad(f"its column {name!r} is not a constant column")
            arrays[name] = np.full((int(meta["count"]),) + arrays[name].shape[1:], value,
                                   dtype=arrays[name].dtype)
        keys = json.loads(arrays["keys"].tobytes())
        if meta.get("version") != _VERSION or meta.get("build_id") != build_id:
            raise bad(f"it is not the side record of this build ({meta.get('build_id')!r})")
        m = int(meta["count"])
        positions = arrays["positions"]
        if not (isinstance(keys, list) and len(keys) == m and positions.shape == (m,)
                and (m < 2 or (np.diff(positions) > 0).all())
                and (m == 0 or 0 <= positions[0] and positions[-1] < meta["size"])):
            raise bad("its positions or keys do not match its count")
        key_list: list[Hashable] = (keys if meta["keys"] == "str"
                                    else [decode_key(t) for t in keys])
        names = meta["feature_names"]
        features = np.unpackbits(arrays["features"], axis=1, count=int(meta["width"]))
        features = features[:, : len(names)].astype(bool)
        needs = None
        if "need_row" in arrays:
            needs = np.zeros((m, len(meta["atoms"])))
            needs[arrays["need_row"], arrays["need_atom"]] = arrays["need_probability"]
        learners = [None if i < 0 else meta["learners"][i] for i in arrays["learner"].tolist()]
        pool = CandidateArrays(
            key_list, arrays["accuracies"], arrays["coefficients"], features, names, needs,
            meta["atoms"] if needs is not None else None, learners, arrays["accuracy_ses"],
            _ragged(arrays["fold_values"], arrays["fold_offsets"], m))
        offsets = arrays["model_offsets"].tolist()
        data = arrays["model_bytes"].tobytes()
        if len(offsets) != m + 1 or offsets[-1] != len(data):
            raise bad("its model offsets do not cover its model bytes")
        formats = [None if i < 0 else meta["formats"][i] for i in arrays["model_format"].tolist()]
        digests = [None if i < 0 else meta["digests"][i] for i in arrays["model_digest"].tolist()]
        blobs = [data[a:b] if f is not None else None
                 for a, b, f in zip(offsets, offsets[1:], formats, strict=False)]
        expansion = arrays["expansion"]
        if expansion.shape != (m,):
            raise bad("its expansion column does not match its count")
    except IndexIntegrityError:
        raise
    except BlobBoundsError as exc:
        raise IndexIntegrityError(f"{exc}; refusing to read it") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure means a corrupt blob
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise bad(f"it does not decode ({type(exc).__name__}: {reason})") from None
    return PoolRecord(positions, pool, expansion, formats, digests, blobs,
                      dict(meta["expansion_seals"]))


def _ragged(values: np.ndarray, offsets: np.ndarray, m: int) -> list[np.ndarray]:
    """One array of ``values`` per candidate, cut at ``offsets``."""
    if offsets.shape != (m + 1,) or offsets[0] != 0 or offsets[-1] != values.size or (
            np.diff(offsets) < 0).any():
        raise IndexIntegrityError("fold offsets do not cover the fold values")
    return np.split(values, offsets[1:-1]) if m else []


class StoredPool(Sequence):
    """A build's whole pool: the candidates of its skylines, held, and the others read from
    its side record by ``load()`` on the first access to one of them (once; a failed
    read raises at every access).

    ``load()`` returns ``position -> Candidate`` for the side record's candidates.

    Runtime complexity: O(1) per held candidate; the first other access costs the read.
    """

    def __init__(self, size: int, held: dict[int, Candidate],
                 load: Callable[[], dict[int, Candidate]] | None) -> None:
        self._size = size
        self._held = held
        self._load = load
        self._rest: dict[int, Candidate] | None = None if load is not None else {}
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the side record was read (or there is none)."""
        return self._rest is not None

    def _others(self) -> dict[int, Candidate]:
        with self._lock:
            if self._rest is None:
                rest = self._load()
                if set(rest) | set(self._held) != set(range(self._size)):
                    raise IndexIntegrityError(
                        "the side record and the published candidates do not make up the "
                        f"build's pool of {self._size}; refusing to read it")
                self._rest = rest
            return self._rest

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> Candidate:  # type: ignore[override]
        if not -self._size <= i < self._size:
            raise IndexError(f"candidate position {i} outside a pool of {self._size}")
        i %= self._size
        found = self._held.get(i)
        return self._others()[i] if found is None else found

    def __iter__(self) -> Iterator[Candidate]:
        rest = self._others() if len(self._held) < self._size else {}
        return (self._held.get(i) or rest[i] for i in range(self._size))
