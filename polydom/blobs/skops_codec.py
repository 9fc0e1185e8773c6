"""The ``"skops"`` model blob: a scikit-learn estimator written with ``skops.io``.

A codec among codecs (``claims``, ``dump``, ``load``, the shape storage's registry asks of
each): storage names it ``"polydom.blobs.skops_codec"`` and imports it when a skops blob is
first decoded or an estimator first written, so a reader of other formats never loads skops
or scikit-learn.  ``load`` builds nothing before every node of the archive passed the
grammar of :mod:`polydom.blobs.allowlist` (and every tree and libsvm model in it its range
checks).

Runtime complexity: linear in the blob's size.
"""

from __future__ import annotations

from typing import Any

from polydom.blobs.allowlist import load_skops

__all__ = ["claims", "dump", "load"]


def claims(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn estimator (this codec is asked to dump it).

    >>> claims(object())
    False
    """
    if type(model).__module__.split(".")[0] == "sklearn":
        return True
    try:
        from sklearn.base import BaseEstimator
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return False
    return isinstance(model, BaseEstimator)


def dump(model: Any) -> bytes:
    """The skops archive of ``model``."""
    import skops.io

    return skops.io.dumps(model)


def load(blob: bytes, trusted: bool, what: str) -> Any:
    """The estimator of a skops archive, after the allow-list's grammar found nothing to
    refuse (or ``trusted``); a malformed archive is refused either way."""
    return load_skops(blob, what=what, trusted=trusted)
