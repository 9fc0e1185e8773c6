"""The lookup rules an index answers by (:mod:`polydom.index.table` explains them).

No numpy: the command line's parser offers them as choices before anything heavy loads.
"""

from __future__ import annotations

from polydom.errors import InvalidArgumentError

__all__ = ["RULES", "check_rule"]

#: Lookup rules: the most accurate candidate that fits, or the cheapest within one standard
#: error of it.
RULES = ("best", "one_se")


def check_rule(rule: object) -> str:
    """``rule`` when it is one of :data:`RULES`, else ``ValueError`` naming it.

    Runtime complexity: O(1).

    >>> check_rule("one_se")
    'one_se'
    """
    if not (isinstance(rule, str) and rule in RULES):
        raise InvalidArgumentError(
            f"rule must be one of {', '.join(map(repr, RULES))}, got {rule!r}")
    return rule
