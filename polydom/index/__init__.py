"""The index: dominance pruning, the kinetic sweep, skyline tables, baselines, built indexes.

Builds on :mod:`polydom.curves` only.
"""

from polydom.index.built import Hit, Index
from polydom.index.dominance import prune_dominated
from polydom.index.explanation import Explanation, SkylineEntry
from polydom.index.item_prediction import ItemPrediction
from polydom.index.lazy_payload import LazyPayload, resolve_payload
from polydom.index.naive import NaiveLookup
from polydom.index.polydom_index import FixedBudgetIndex, IndexAll, PolyDomIndex
from polydom.index.table import RULES, RuleUnavailableError, SkylineTable, check_rule

__all__ = [
    "Explanation",
    "FixedBudgetIndex",
    "Hit",
    "Index",
    "IndexAll",
    "ItemPrediction",
    "LazyPayload",
    "NaiveLookup",
    "PolyDomIndex",
    "RULES",
    "RuleUnavailableError",
    "SkylineEntry",
    "SkylineTable",
    "check_rule",
    "prune_dominated",
    "resolve_payload",
]
