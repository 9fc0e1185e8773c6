"""polydom: the most accurate model whose feature cost fits a budget at a given item size."""

from polydom.build import build_index
from polydom.candidate import Candidate
from polydom.cost_curve import CostCurve
from polydom.dominance import prune_dominated
from polydom.expansion import Expansion
from polydom.index import FixedBudgetIndex, IndexAll, PolyDomIndex
from polydom.naive import NaiveLookup
from polydom.persistence import list_builds, open_index
from polydom.serving import Hit, Index

__all__ = [
    "Candidate",
    "CostCurve",
    "Expansion",
    "FixedBudgetIndex",
    "Hit",
    "Index",
    "IndexAll",
    "NaiveLookup",
    "PolyDomIndex",
    "build_index",
    "list_builds",
    "open_index",
    "prune_dominated",
]
