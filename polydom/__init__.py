"""polydom: the most accurate model whose feature cost fits a budget at a given item size."""

from polydom.adherence import AdherenceRow, adherence_table, measure_adherence
from polydom.build import build_index
from polydom.candidate import Candidate
from polydom.cost_curve import CostCurve
from polydom.dominance import prune_dominated
from polydom.expansion import Expansion
from polydom.featurizer import CostProfile, Featurizer, fit_cost_curve
from polydom.index import FixedBudgetIndex, IndexAll, PolyDomIndex
from polydom.item_serving import ItemPrediction, predict_item
from polydom.naive import NaiveLookup
from polydom.persistence import list_builds, open_index
from polydom.serving import Hit, Index

__all__ = [
    "AdherenceRow",
    "Candidate",
    "CostCurve",
    "CostProfile",
    "Expansion",
    "Featurizer",
    "FixedBudgetIndex",
    "Hit",
    "Index",
    "IndexAll",
    "ItemPrediction",
    "NaiveLookup",
    "PolyDomIndex",
    "adherence_table",
    "build_index",
    "fit_cost_curve",
    "list_builds",
    "measure_adherence",
    "open_index",
    "predict_item",
    "prune_dominated",
]
