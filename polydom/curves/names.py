"""The one name of a candidate, as every door prints it (CLI, HTTP, SQL views, Datasette,
plots, docs), and the one text of a feature set (:func:`feature_set_text`).

A candidate's name is its key as text, in the key's own order: a lattice key (a tuple of
feature names, in the order the build's features were given) joins its names with ``+``,
so ``("marriage", "demographics", "work")`` is ``marriage+demographics+work`` everywhere.
This is the text every store has written into ``candidates.key`` since its first schema
version, which the SQL views show as ``candidate``: the views of stores made before this
module existed (read-only stores of schema versions 1 and 2, and version-3 stores whose
views are fixed in their files) therefore print the same name as the CLI and HTTP do.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from polydom.curves.curve_text import natural_key

__all__ = ["EMPTY_NAME", "candidate_name", "feature_set_text"]

#: The name of the empty lattice key (the model that uses no feature).
EMPTY_NAME = "{}"


def candidate_name(key: Hashable) -> str:
    """A candidate's name: text keys as they are, a lattice key (a tuple of feature names)
    joined by ``+`` in its own order (``{}`` when empty), a set of keys as ``{a, b}`` (the
    members' names sorted), anything else as its repr.

    Runtime complexity: O(k log k) for a key of k parts.

    >>> candidate_name(("marriage", "demographics", "work"))
    'marriage+demographics+work'
    >>> candidate_name(()), candidate_name("cegb[0.5]"), candidate_name(frozenset({"b", "a"}))
    ('{}', 'cegb[0.5]', '{a, b}')
    >>> candidate_name(3)
    '3'
    """
    if isinstance(key, str):
        return key
    if isinstance(key, frozenset):
        return "{" + ", ".join(sorted(candidate_name(k) for k in key)) + "}"
    if isinstance(key, tuple) and all(isinstance(k, str) for k in key):
        return "+".join(key) if key else EMPTY_NAME
    return repr(key)


def feature_set_text(features: Iterable[object]) -> str:
    """A feature set as every door prints it: its names in natural order joined by ``+``
    (``x2+x13``), the empty set as ``""``.  The CLI's ``--csv``, HTTP and the SQL views'
    ``features`` column (written by a publish) give this text.  O(k log k).

    >>> feature_set_text({"x13", "x2", "acf"}), feature_set_text(())
    ('acf+x2+x13', '')
    """
    return "+".join(sorted(map(str, features), key=natural_key))
