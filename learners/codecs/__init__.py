"""The learners' own model blob formats (codecs), registered with storage by the pipeline.

Storage keeps a registry of codecs and the integrity checks (digests, the store key); it
knows no learner's format.  Each codec here is a :class:`BlobCodec`: the format name
written into ``model_format``, ``claims(model)`` (whether to dump this model with it),
``dump(model) -> bytes | None`` and ``load(blob, trusted, what)``, which checks the blob's
structure with our own code before any library builds from it.
:func:`polydom.pipeline.open.register_learner_models` registers :data:`CODECS` with
``storage.register_blob_codec``; both :func:`polydom.open_index` and
:func:`polydom.build_index` call it.

* ``"lightgbm"`` (:mod:`learners.codecs.lightgbm_codec`): booster text checked by
  :mod:`learners.codecs.lightgbm_text` before LightGBM reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from learners.codecs import lightgbm_codec
from learners.codecs.lightgbm_text import LightGBMTextError, booster_from_text

__all__ = ["CODECS", "BlobCodec", "LightGBMTextError", "booster_from_text"]


class BlobCodec(NamedTuple):
    """One model blob format: its name and how to recognise, dump and load a model."""

    name: str
    claims: Callable[[Any], bool]
    dump: Callable[[Any], bytes | None]
    load: Callable[[bytes, bool, str], Any]


#: The codecs of the project's learners, in the order storage asks them.
CODECS = (BlobCodec("lightgbm", lightgbm_codec.claims, lightgbm_codec.dump,
                    lightgbm_codec.load),)
