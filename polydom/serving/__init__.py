"""Serving: computing features of raw items (timed), serving them within a budget, adherence."""

from polydom.serving.adherence import AdherenceRow, adherence_table, measure_adherence
from polydom.serving.featurizer import Computed, Featurizer
from polydom.serving.item_serving import ItemServer, predict_item

__all__ = [
    "AdherenceRow",
    "Computed",
    "Featurizer",
    "ItemServer",
    "adherence_table",
    "measure_adherence",
    "predict_item",
]
