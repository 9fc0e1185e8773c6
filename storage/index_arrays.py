"""A published build's index as one array blob: packed by publish, unpacked by open_index.

Opening a build from its rows turns every row into Python objects twice (SQLAlchemy rows,
then keys, feature sets, needs and the seal's canonical text).  :func:`encode` packs what a
reader needs into a few numpy arrays, stored as one ``.npz`` archive (``numpy.savez``, read
back with ``allow_pickle=False``: nothing in it can run code); :func:`decode` checks every
array against the others and returns each field's column as stored (what
:func:`storage.candidate_fields.read_candidates` turns into the columns
:meth:`polydom.Candidate.from_columns` takes, as it does the rows' columns), the needs and
the skylines.  The layout is ours because no library stores "candidates,
cost coefficients, needs, ranges and skylines" as one unit; the container is numpy's.

The candidates' columns are those of :mod:`storage.candidate_fields` that decide answers
(``CandidateField.array``), each in its encoding.  What the blob holds (``K`` candidates,
``L`` coefficients, ``N`` needs, ``R`` ranges, ``E`` skyline entries):

============================  =================================================================
``meta`` (uint8, JSON)         format version, build id, the build's seal, index kind, key mode,
                               the fields (name, encoding) in order, the distinct texts of each
                               ``"text"`` field, and ``header`` (what else the seal covers: the
                               publication number, the cost model's digest, the seals of the
                               expansions the candidates use)
``domain`` float64 (2,)        ``n_min, n_max``
``keys`` (uint8, JSON)         the keys as a JSON list of strings (key mode ``"str"``), or of
                               their ``key_json`` texts (``"json"``: any other key)
one array per other field     float64 (K,) / int64 (K,) (-1: None) / int64 (K,) text positions
``coefficients`` float64 (K,L) cost coefficients, lowest degree first, zero-padded
``need_candidate``, ``need_atom`` int64 (N,), ``need_probability`` float64 (N,):
                               the needs, sorted by candidate then atom
``breaks`` float64 (R,)        start of each range
``sky_offsets`` int64 (R+1,), ``sky_candidates`` int64 (E,): the skylines, range after range
``ids`` int64 (K,)             each candidate's position in the build's pool (ascending; the
                               pool's size in ``meta["size"]``): a build publishes the
                               candidates on its skylines, the others are in its side record
                               (:mod:`storage.pool_record`).  Blobs written before it existed
                               hold every candidate (``ids`` 0..K-1)
============================  =================================================================

Needs and skyline entries name candidates by ``ids``.

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

from polydom.blobs.bounds import BlobBoundsError, load_npz
from storage.candidate_fields import CandidateField, by_feed
from storage.codec import decode_key
from storage.seal import IndexIntegrityError

__all__ = ["FORMAT", "IndexArrays", "check_rows", "decode", "encode"]

#: The value of ``build_arrays.format`` this module writes and reads (``npz-1``, the layout
#: before :mod:`storage.candidate_fields`, is not read: such builds open from their rows).
FORMAT = "npz-2"
_VERSION = 2
_NONE = -1


@dataclass(frozen=True)
class IndexArrays:
    """The decoded columns of a build's index (see the module docstring).

    ``columns`` holds every field's column as stored (None where a row holds NULL), the
    key field's as the keys themselves (what :func:`storage.candidate_fields.
    read_candidates` reads, with the key field ``done``), ``needs`` one dict per candidate
    (atom name -> probability, in atom order), ``skylines`` lists of candidate positions,
    cheapest first, ``header`` what else the seal covers.
    """

    build_id: int
    seal: str | None
    kind: str
    n_min: float
    n_max: float
    keys: list[Hashable]
    columns: dict[str, list]
    coefficients: np.ndarray
    needs: list[dict[str, float]]
    breaks: list[float]
    skylines: list[list[int]]
    header: dict[str, Any]
    #: Each candidate's position in the build's pool (ascending), and the pool's size.
    ids: list[int] = field(default_factory=list)
    size: int = 0
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
    fields: Sequence[CandidateField],
    rows: Sequence[Sequence[Any]],
    coefficients: Sequence[np.ndarray],
    needs: Sequence[tuple[int, int, float]],
    breaks: Sequence[float],
    skylines: Sequence[Sequence[int]],
    header: dict[str, Any] | None = None,
    ids: Sequence[int] | None = None,
    size: int | None = None,
) -> bytes:
    """The blob of one build, from the rows :func:`storage.builds.publish` writes.

    ``keys[i]`` is candidate ``i``'s key; ``rows[i]`` is ``(ids[i], *values of fields)``
    (the sealed fields of :mod:`storage.candidate_fields`); ``needs`` rows are ``(candidate
    id, atom id, probability)``; skylines hold candidate ids; ``ids`` (default ``0..K-1``)
    are the candidates' positions in a pool of ``size`` (default K); ``header`` is JSON-able,
    stored as it is.

    Runtime complexity: O(K * (L + fields) + N + E) numpy work plus one JSON text of the
    keys.
    """
    k = len(keys)
    width = max((len(c) for c in coefficients), default=1)
    coef = np.zeros((k, max(width, 1)))
    for i, c in enumerate(coefficients):
        coef[i, : len(c)] = c
    plain = all(type(key) is str for key in keys)
    values = list(zip(*rows, strict=True))[1:] if rows else [()] * len(fields)
    arrays: dict[str, np.ndarray] = {}
    texts: dict[str, list[str]] = {}
    key_json: list[str] = []
    for f, column in zip(fields, values, strict=True):
        if f.array == "key":
            key_json = list(column)
        elif f.array == "float":
            arrays[f.name] = np.array([np.nan if v is None else v for v in column],
                                      dtype=np.float64).reshape(k)
        elif f.array == "id":
            arrays[f.name] = np.array([_NONE if v is None else int(v) for v in column],
                                      dtype=np.int64).reshape(k)
        else:
            distinct: dict[str, int] = {}
            arrays[f.name] = np.array(
                [_NONE if v is None else distinct.setdefault(v, len(distinct)) for v in column],
                dtype=np.int64).reshape(k)
            texts[f.name] = list(distinct)
    need = sorted((int(c), int(a), float(p)) for c, a, p in needs)
    meta = {
        "version": _VERSION,
        "build_id": int(build_id),
        "seal": seal,
        "kind": kind,
        "keys": "str" if plain else "json",
        "fields": [[f.name, f.array] for f in fields],
        "texts": texts,
        "header": header or {},
        "size": k if size is None else int(size),
    }
    arrays.update({
        "meta": _text(meta),
        "domain": np.array(domain, dtype=np.float64),
        "keys": _text(list(keys) if plain else key_json),
        "coefficients": coef,
        "need_candidate": np.array([r[0] for r in need], dtype=np.int64),
        "need_atom": np.array([r[1] for r in need], dtype=np.int64),
        "need_probability": np.array([r[2] for r in need], dtype=np.float64),
        "breaks": np.array(breaks, dtype=np.float64),
        "sky_offsets": np.cumsum([0] + [len(s) for s in skylines], dtype=np.int64),
        "sky_candidates": np.array([i for s in skylines for i in s], dtype=np.int64),
        "ids": np.arange(k, dtype=np.int64) if ids is None else np.array(ids, dtype=np.int64),
    })
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


_OPTIONAL = ("ids",)  # arrays a blob written before they existed lacks
_SHAPES = {  # name -> (dtype kind, ndim)
    "meta": ("u", 1), "domain": ("f", 1), "keys": ("u", 1), "coefficients": ("f", 2),
    "need_candidate": ("i", 1), "need_atom": ("i", 1), "need_probability": ("f", 1),
    "breaks": ("f", 1), "sky_offsets": ("i", 1), "sky_candidates": ("i", 1),
}
_FIELD_DTYPE = {"float": "f", "id": "i", "text": "i"}


def decode(
    blob: bytes, build_id: int, atoms: Sequence[str], fields: Sequence[CandidateField]
) -> IndexArrays:
    """The columns of a blob written by :func:`encode` for build ``build_id``.

    ``atoms`` are the build's atomic features in their stored order (need rows name them
    by position); ``fields`` the sealed fields the blob must hold, in order.  Every array is
    checked against the others (lengths, index ranges, order), so a blob that decodes is a
    well-formed index; values (accuracies in [0, 1], finite coefficients, probabilities,
    feature sets) are checked by the readers and constructors they feed.

    Runtime complexity: O(K * (L + fields) + N + E) numpy work, plus O(K + N + R) to build
    the Python columns.

    Raises
    ------
    IndexIntegrityError
        If the blob does not decode, or its arrays do not form an index of build
        ``build_id`` with these fields.
    """
    what = f"build {build_id}: its index arrays"

    def bad(reason: str) -> IndexIntegrityError:
        return IndexIntegrityError(f"{what}: {reason}; refusing to open it")

    names = {f.name: f.array for f in fields if f.array != "key"}
    arrays, meta, keys = _load(blob, what, names)
    texts = _check_meta(meta, build_id, fields, names, bad)
    k = len(keys) if isinstance(keys, list) else -1
    if not _strings(keys) or k == 0:
        raise bad(f"{k} keys")
    ids = stored_ids(arrays, meta, k, bad)
    _check_lengths(arrays, k, len(atoms), names, texts, bad, ids)
    if meta["keys"] == "str":
        key_list: list[Hashable] = keys
    else:
        try:
            key_list = [decode_key(t) for t in keys]
        except ValueError as exc:
            raise bad(f"a key does not decode ({exc})") from None
    columns = _columns(arrays, names, texts)
    feeds = by_feed(fields)
    if "expansion" in feeds and "model_digest" in feeds:
        eid = arrays[feeds["expansion"].name]
        own = [i for i, d in enumerate(columns[feeds["model_digest"].name]) if d is not None]
        if (eid[own] >= 0).any():
            raise bad("a candidate has both an expansion's model and its own")
    columns.update({f.name: key_list for f in fields if f.array == "key"})
    offsets, sky = arrays["sky_offsets"].tolist(), arrays["sky_candidates"].tolist()
    return IndexArrays(
        build_id=build_id,
        seal=meta["seal"],
        kind=meta["kind"],
        n_min=float(arrays["domain"][0]),
        n_max=float(arrays["domain"][1]),
        keys=key_list,
        columns=columns,
        coefficients=arrays["coefficients"],
        needs=_needs(arrays, k, atoms, ids),
        breaks=arrays["breaks"].tolist(),
        skylines=[sky[a:b] for a, b in zip(offsets, offsets[1:], strict=False)],
        header=meta["header"],
        ids=ids.tolist(),
        size=int(meta.get("size", k)),
        raw={"key_mode": meta["keys"], "key_text": arrays["keys"].tobytes().decode(),
             "key_json": None if meta["keys"] == "str" else keys,
             "fields": list(fields), "arrays": {n: arrays[n] for n in names},
             **{name: arrays[name] for name in ("need_candidate", "need_atom",
                                                "need_probability", "sky_offsets",
                                                "sky_candidates")}},
    )


def _load(blob: bytes, what: str, names: dict[str, str]) -> tuple[dict[str, np.ndarray],
                                                                  Any, Any]:
    """The arrays of the blob (each of the dtype kind and dimensions it must have), its
    meta JSON and its keys JSON."""
    try:
        stored = load_npz(blob, what)
        arrays = {name: stored[name] for name in [*_SHAPES, *names]}
        arrays.update({name: stored[name] for name in _OPTIONAL if name in stored})
        meta = json.loads(arrays["meta"].tobytes())
        keys = json.loads(arrays["keys"].tobytes())
    except BlobBoundsError as exc:
        raise IndexIntegrityError(f"{exc}; refusing to open it") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure means a corrupt blob
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise IndexIntegrityError(
            f"{what} do not decode ({type(exc).__name__}: {reason}); refusing to open it"
        ) from None
    shapes = {**_SHAPES, **{n: (_FIELD_DTYPE[a], 1) for n, a in names.items()}}
    for name, (kind, ndim) in shapes.items():
        a = arrays[name]
        if a.dtype.kind != kind or a.ndim != ndim:
            raise IndexIntegrityError(f"{what}: {name!r} has dtype {a.dtype} and {a.ndim} "
                                      f"dimensions, not kind {kind!r} and {ndim}")
    return arrays, meta, keys


def _check_meta(meta: Any, build_id: int, fields: Sequence[CandidateField],
                names: dict[str, str], bad: Any) -> dict[str, list[str]]:
    """The distinct texts of the ``"text"`` fields, after checking that ``meta`` is the
    header of this layout, of build ``build_id``, with exactly ``fields``."""
    if not isinstance(meta, dict) or meta.get("version") != _VERSION:
        raise bad(f"unknown layout {meta.get('version') if isinstance(meta, dict) else meta!r}")
    if meta.get("build_id") != build_id:
        raise bad(f"they were written for build {meta.get('build_id')!r}")
    if meta.get("fields") != [[f.name, f.array] for f in fields]:
        raise bad(f"they hold the fields {meta.get('fields')!r}, not those of this store")
    texts = meta.get("texts")
    if not (isinstance(texts, dict) and set(texts) == {n for n, a in names.items()
                                                        if a == "text"}
            and all(_strings(t) for t in texts.values())
            and isinstance(meta.get("header"), dict)
            and isinstance(meta.get("kind"), str) and meta.get("keys") in ("str", "json")
            and (meta.get("seal") is None or isinstance(meta.get("seal"), str))):
        raise bad("their header is malformed")
    return texts


def stored_ids(arrays: dict[str, np.ndarray], meta: dict[str, Any], k: int,
               bad: Any) -> np.ndarray:
    """The candidates' positions in the build's pool: ``ids`` (ascending, inside the
    pool's ``meta["size"]``), or ``0..k-1`` in a blob written before they existed."""
    if "ids" not in arrays:
        if "size" in meta:
            raise bad("they name a pool size but no candidate ids")
        return np.arange(k, dtype=np.int64)
    ids, size = arrays["ids"], meta.get("size")
    if (ids.dtype.kind != "i" or ids.shape != (k,) or not isinstance(size, int)
            or (k and (ids[0] < 0 or ids[-1] >= size))
            or (k > 1 and (np.diff(ids) <= 0).any())):
        raise bad(f"their candidate ids do not name {k} candidates of a pool of {size!r}")
    return ids


def _row_of(ids: np.ndarray, values: np.ndarray, name: str, bad: Any) -> np.ndarray:
    """Each of ``values`` (candidate ids) as a row of the candidates' columns."""
    rows = np.searchsorted(ids, values)
    if values.size and ((rows >= ids.size).any()
                        or (ids[rows.clip(0, ids.size - 1)] != values).any()):
        raise bad(f"{name!r} names a candidate the arrays do not hold")
    return rows


def _check_lengths(arrays: dict[str, np.ndarray], k: int, n_atoms: int,
                   names: dict[str, str], texts: dict[str, list[str]], bad: Any,
                   ids: np.ndarray) -> None:
    """Every array's length and index range against the others, for ``k`` candidates of
    positions ``ids``."""
    for name, kind in names.items():
        if arrays[name].shape != (k,):
            raise bad(f"{name!r} has {arrays[name].shape[0]} entries for {k} candidates")
        if kind == "text":
            _within(arrays[name], _NONE, len(texts[name]), name, bad)
    if arrays["coefficients"].shape[0] != k or arrays["coefficients"].shape[1] == 0:
        raise bad(f"coefficients of shape {arrays['coefficients'].shape} for {k} candidates")
    nc, na, npr = arrays["need_candidate"], arrays["need_atom"], arrays["need_probability"]
    if not nc.shape == na.shape == npr.shape:
        raise bad("need columns differ in length")
    rows = _row_of(ids, nc, "need_candidate", bad)
    _within(na, 0, n_atoms, "need_atom", bad)
    if len(nc) > 1 and (np.diff(rows * n_atoms + na) <= 0).any():
        raise bad("needs are not sorted by candidate and atom, or repeat one")
    breaks, offsets, sky = arrays["breaks"], arrays["sky_offsets"], arrays["sky_candidates"]
    r = breaks.shape[0]
    if (r == 0 or offsets.shape != (r + 1,) or offsets[0] != 0 or offsets[-1] != len(sky)
            or (np.diff(offsets) < 0).any()):
        raise bad(f"skyline offsets do not cover {r} ranges and {len(sky)} entries")
    _row_of(ids, sky, "sky_candidates", bad)
    if arrays["domain"].shape != (2,):
        raise bad(f"domain of shape {arrays['domain'].shape}")


def _columns(arrays: dict[str, np.ndarray], names: dict[str, str],
             texts: dict[str, list[str]]) -> dict[str, list]:
    """Each non-key field's column as stored (None for NaN, -1 and a text position -1)."""
    columns: dict[str, list] = {}
    for name, kind in names.items():
        a = arrays[name]
        if kind == "float":
            columns[name] = [None if v != v else v for v in a.tolist()]
        elif kind == "id":
            columns[name] = [None if v == _NONE else v for v in a.tolist()]
        else:
            values = [*texts[name], None]  # position -1: None
            columns[name] = [values[i] for i in a.tolist()]
    return columns


def _needs(arrays: dict[str, np.ndarray], k: int, atoms: Sequence[str], ids: np.ndarray
           ) -> list[dict[str, float]]:
    """One ``atom name -> probability`` dict per candidate (in the order of ``ids``), in
    atom order."""
    atom_names = list(atoms)
    needs: list[dict[str, float]] = [{} for _ in range(k)]
    rows = np.searchsorted(ids, arrays["need_candidate"]).tolist()
    for c, a, p in zip(rows, arrays["need_atom"].tolist(),
                       arrays["need_probability"].tolist(), strict=True):
        needs[c][atom_names[a]] = p
    return needs


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
    *sealed fields)`` (the fields the arrays were decoded with), ``coefficients``
    ``(candidate_id, degree, coefficient)`` (any order), ``needs`` ``(candidate_id,
    feature_id, probability)``, ``ranges`` ``(range_id, n_lo, n_hi)``, ``entries``
    ``(range_id, rank, candidate_id)``.  Arrays that match their digest and rows equal to
    them are rows equal to what was sealed: the rows are checked column by column (list and
    array comparisons) instead of through the seal's canonical text.

    Runtime complexity: O(K * (d + fields) + N + E) for K candidates of degree d, N needs
    and E entries, in list and numpy comparisons.
    """
    raw = arrays.raw
    k = len(arrays.keys)
    fields: list[CandidateField] = raw["fields"]
    cols = list(zip(*candidates, strict=True)) if candidates else [()] * (len(fields) + 1)
    if len(cols) != len(fields) + 1 or list(cols[0]) != arrays.ids:
        return "candidates"
    for f, column in zip(fields, cols[1:], strict=True):
        if f.array == "key":
            same = ("[" + ",".join(column) + "]" == raw["key_text"]
                    if raw["key_mode"] == "str" else list(column) == raw["key_json"])
        elif f.array == "float":
            try:
                values = np.array([np.nan if v is None else v for v in column],
                                  dtype=np.float64)
            except (TypeError, ValueError):  # a value edited to text
                return "candidates"
            same = np.array_equal(values, raw["arrays"][f.name], equal_nan=True)
        else:
            same = list(column) == arrays.columns[f.name]
        if not same:
            return "candidates"
    coef = arrays.coefficients
    nonzero = coef != 0.0
    lengths = np.where(nonzero.any(axis=1), coef.shape[1] - np.argmax(nonzero[:, ::-1], axis=1),
                       1)
    rows = _numbers(coefficients)
    if rows is None or len(rows) != int(lengths.sum()):
        return "cost coefficients"
    ids = np.array(arrays.ids, dtype=np.int64)
    named, degree = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    owner = np.searchsorted(ids, named).clip(0, max(k - 1, 0))
    if ((ids[owner] != named) | (degree < 0) | (degree >= lengths[owner])
            ).any() or not np.array_equal(coef[owner, degree.clip(0, coef.shape[1] - 1)],
                                          rows[:, 2]) or not (
                np.array_equal(named, rows[:, 0]) and np.array_equal(degree, rows[:, 1])):
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
