"""The learners' own model blob formats (codecs), registered with storage by name.

Storage keeps a registry of codecs and the integrity checks (digests, the store key); it
knows no learner's format.  A codec is a module with ``claims(model)`` (whether to dump
this model with it), ``dump(model) -> bytes | None`` and ``load(blob, trusted, what)``,
which checks the blob's structure with our own code before any library builds from it.
:func:`polydom.pipeline.model_classes.register_learner_models` registers :data:`CODECS`
with ``storage.register_blob_codec`` by path: a codec module, and its library, are
imported when a blob of its format is first decoded or a model of it first written.

* ``"lightgbm"`` (:mod:`learners.codecs.lightgbm_codec`): booster text checked by
  :mod:`learners.codecs.lightgbm_text` before LightGBM reads it.

(scikit-learn's skops archives are storage's default codec,
:mod:`polydom.blobs.skops_codec`, next to the allow-list that checks them.)
"""

__all__ = ["CODECS"]

#: format -> path of its codec module, in the order storage asks them.
CODECS = {"lightgbm": "learners.codecs.lightgbm_codec"}
