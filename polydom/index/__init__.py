"""The index: dominance pruning, the kinetic sweep, skyline tables, baselines, built indexes.

Builds on :mod:`polydom.curves` only.
"""

from polydom.lazy_exports import lazy_exports

# names load on first use: a light module (the lookup rules) imports without numpy
__getattr__ = lazy_exports(__name__, {
    "Explanation": "polydom.index.explanation",
    "FixedBudgetIndex": "polydom.index.polydom_index",
    "Hit": "polydom.index.built",
    "Index": "polydom.index.built",
    "IndexAll": "polydom.index.polydom_index",
    "ItemPrediction": "polydom.index.item_prediction",
    "LazyPayload": "polydom.index.lazy_payload",
    "NaiveLookup": "polydom.index.naive",
    "PolyDomIndex": "polydom.index.polydom_index",
    "RULES": "polydom.index.rules",
    "RuleUnavailableError": "polydom.errors",
    "SkylineEntry": "polydom.index.explanation",
    "SkylineTable": "polydom.index.table",
    "check_rule": "polydom.index.rules",
    "prune_dominated": "polydom.index.dominance",
    "resolve_payload": "polydom.index.lazy_payload",
})

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
