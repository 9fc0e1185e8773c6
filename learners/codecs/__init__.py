"""The learners' own model blob formats (codecs), declared in the specs of their learners.

Storage keeps a registry of codecs and the integrity checks (digests, the store key); it
knows no learner's format.  A codec is a module with ``claims(model)`` (whether to dump
this model with it), ``dump(model) -> bytes | None`` and ``load(blob, trusted, what)``,
which checks the blob's structure with our own code before any library builds from it.
A learner's spec names its codecs by path (:attr:`polydom.blobs.learner_specs.LearnerSpec.
codecs`), so a codec module, and its library, are imported when a blob of its format is
first decoded or a model of it first written.

* ``"lightgbm"`` (:mod:`learners.codecs.lightgbm_codec`, the ``"lightgbm"`` learner's spec
  in :mod:`learners.specs`): booster text checked by :mod:`learners.codecs.lightgbm_text`
  before LightGBM reads it.

(scikit-learn's skops archives are storage's default codec,
:mod:`polydom.blobs.skops_codec`, next to the allow-list that checks them.)
"""
