"""Read stored archives (``.zip``, ``.npz``, ``.npy``) with every size bounded first.

A blob in a store may be hostile even when its digest matches (without a store key anyone
who writes the database recomputes the sha256).  Decompressing or allocating what a hostile
header declares is how a small blob becomes a memory bomb: a 0.5 MB zip member inflating to
512 MiB, an ``.npy`` header declaring a ``(10**9,)`` shape over a few bytes of data, a
dtype of ``<U100000000``.  Every reader of stored archives goes through this module, which
checks what the headers declare *before* anything is inflated or allocated:

* a zip archive's members may declare at most :data:`MAX_INFLATION` times the archive's
  own size in total (plus :data:`INFLATION_SLACK`), and at most :data:`MAX_MEMBERS`
  members; :mod:`zipfile` never inflates a member past its declared size (it stops there
  and fails the CRC), so the declared total bounds the memory spent;
* an ``.npy`` member's dtype must hold no Python objects, be of a numeric, boolean, text or
  structured kind with items of at most :data:`MAX_ITEMSIZE` bytes, and its shape times
  its item size must equal the bytes that follow the header exactly (so nothing is
  allocated that the blob does not hold).

We parse the headers with numpy's own reader (:func:`numpy.lib.format.read_array_header_1_0`,
which evaluates the header as a literal, never as code) and check them ourselves: numpy
trusts the declared shape and allocates it before reading the data.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from polydom.errors import BlobBoundsError, InvalidArgumentError, MalformedBlobError

__all__ = [
    "INFLATION_SLACK",
    "MAX_INFLATION",
    "MAX_ITEMSIZE",
    "MAX_MEMBERS",
    "BlobBoundsError",
    "MalformedBlobError",
    "check_npy",
    "load_npy",
    "load_npz",
    "open_zip",
]

#: A zip archive's members may declare at most this many times the archive's size.  numpy
#: and skops write members uncompressed (ratio ~1); deflate reaches ~1000.
MAX_INFLATION = 16
#: Bytes allowed on top of ``MAX_INFLATION * len(blob)`` (tiny archives of tiny members).
INFLATION_SLACK = 1 << 20
#: Most members a stored archive may have.
MAX_MEMBERS = 100_000
#: Largest item of an array (a string of 4096 characters is 16 KiB).
MAX_ITEMSIZE = 1 << 16
_KINDS = set("biufcUSV")


def open_zip(blob: bytes, what: str) -> zipfile.ZipFile:
    """The zip archive in ``blob``, after its declared sizes were checked.

    Runtime complexity: O(members) (the central directory only; nothing is inflated).

    Raises
    ------
    BlobBoundsError
        If the members declare more than ``MAX_INFLATION * len(blob) + INFLATION_SLACK``
        bytes in total, or there are more than :data:`MAX_MEMBERS` of them.
    zipfile.BadZipFile
        If ``blob`` is not a zip archive.
    """
    archive = zipfile.ZipFile(io.BytesIO(blob))
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BlobBoundsError(
            f"{what}: archive has {len(infos)} members, more than {MAX_MEMBERS}; refusing it"
        )
    declared = sum(info.file_size for info in infos)
    limit = MAX_INFLATION * len(blob) + INFLATION_SLACK
    if declared > limit:
        raise BlobBoundsError(
            f"{what}: archive of {len(blob)} bytes declares {declared} bytes once inflated, "
            f"more than {MAX_INFLATION}x its size; refusing to decompress it"
        )
    return archive


def check_npy(data: bytes, what: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """The dtype, shape and header length an ``.npy`` buffer declares, checked.

    Runtime complexity: O(header) (at most numpy's 10000-byte header limit).

    Raises
    ------
    BlobBoundsError
        If the dtype holds objects, is of another kind, has items over
        :data:`MAX_ITEMSIZE` bytes, or shape x item size differs from the data's length.
    ValueError
        If ``data`` is not an ``.npy`` buffer.
    """
    from numpy.lib import format as npy

    buf = io.BytesIO(data)
    version = npy.read_magic(buf)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(buf)
    elif version in ((2, 0), (3, 0)):
        shape, _, dtype = npy.read_array_header_2_0(buf)
    else:  # pragma: no cover - read_magic refuses other versions itself
        raise InvalidArgumentError(f"unknown .npy version {version}")
    if dtype.hasobject or not _plain(dtype):
        raise BlobBoundsError(f"{what}: array of dtype {dtype} is not a plain data dtype")
    if dtype.itemsize > MAX_ITEMSIZE:
        raise BlobBoundsError(
            f"{what}: array items of {dtype.itemsize} bytes ({str(dtype)[:40]}), more than "
            f"{MAX_ITEMSIZE}; refusing to allocate them"
        )
    count = 1
    for dim in shape:
        if not isinstance(dim, int) or dim < 0:
            raise BlobBoundsError(f"{what}: array shape {shape} is not a shape")
        count *= dim
    body = len(data) - buf.tell()
    if count * dtype.itemsize != body:
        raise BlobBoundsError(
            f"{what}: array header declares shape {shape[:8]} of {dtype.itemsize}-byte items "
            f"({count * dtype.itemsize} bytes) over {body} bytes of data; refusing it"
        )
    return dtype, tuple(shape), buf.tell()


def _plain(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is numeric, boolean, text, or structured of such fields."""
    if dtype.subdtype is not None:
        return _plain(dtype.subdtype[0])
    if dtype.names is not None:
        return all(_plain(dtype.fields[name][0]) for name in dtype.names)
    return dtype.kind in _KINDS and dtype.kind != "V"


def load_npy(data: bytes, what: str) -> np.ndarray:
    """An ``.npy`` buffer as an array, checked by :func:`check_npy` first, read with
    ``allow_pickle=False``.  Runtime complexity: O(len(data))."""
    check_npy(data, what)
    return np.load(io.BytesIO(data), allow_pickle=False)


def load_npz(blob: bytes, what: str) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` blob (by name, without ``.npy``), each checked first.

    Runtime complexity: O(len(blob)) after the bounds (at most ``MAX_INFLATION`` times the
    blob's size is inflated).

    Raises
    ------
    BlobBoundsError
        If the archive or one of its arrays exceeds the bounds.
    """
    out: dict[str, np.ndarray] = {}
    with open_zip(blob, what) as archive:
        for name in archive.namelist():
            key = name[:-4] if name.endswith(".npy") else name
            out[key] = load_npy(archive.read(name), f"{what}, array {key!r}")
    return out
