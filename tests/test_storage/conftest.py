"""Storage tests dump and load models through storage directly: storage gets the learners'
blob codecs (LightGBM's text, :mod:`learners.codecs`) as ``polydom.open_index`` and
``polydom.build_index`` give them."""

from polydom.pipeline.open import register_learner_models

register_learner_models()
