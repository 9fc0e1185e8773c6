"""LightGBM's text model, parsed and bounded by our own checks before LightGBM reads it.

LightGBM's own parser trusts its input: wrong ``tree_sizes`` abort the process, a large
``num_tree_per_iteration`` or a child index past the node arrays crashes it, a cycle of
children hangs ``predict``, an objective naming more classes than trees are stored writes
past its buffers.  :func:`checked_model_text` reads the text as a grammar and returns a
*canonical* text rebuilt from what it checked (header, trees, ``end of trees``; the
feature importances and parameter echo that follow are dropped: predicting does not read
them), which is all LightGBM ever sees (:func:`booster_from_text`).

The grammar (every line accounted for; anything else is refused):

* header: ``tree``, ``version=v3|v4``, ``num_class=K``, ``num_tree_per_iteration=T``,
  ``label_index``, ``max_feature_idx=F``, ``objective=`` one of :data:`OBJECTIVES` with
  ``key:number`` options (and ``sqrt``; no objective line for a custom objective),
  optional ``average_output``, ``feature_names`` and ``feature_infos`` (``F+1`` entries
  each, numeric ranges only), optional
  ``monotone_constraints``, ``tree_sizes`` (one per tree, equal to each tree's length);
  ``K`` and ``T`` in ``[1, MAX_CLASSES]``; ``T == K`` for multiclass objectives (whose
  ``num_class`` option must equal ``K``) and without an objective, else ``K == T == 1``;
* trees ``Tree=0 .. Tree=N-1`` (``N`` a multiple of ``T``), each with ``num_leaves=L`` in
  ``[1, MAX_LEAVES]``, ``num_cat=0`` (no categorical splits), ``is_linear=0``, arrays of
  ``L-1`` splits (features in ``[0, F]``, numeric thresholds, decision types without the
  categorical bit) and ``L`` leaves of finite numbers, and children that form one tree
  rooted at node 0 (every internal node and leaf reached exactly once).

Runtime complexity: O(length of the text).
"""

from __future__ import annotations

import math
import re
from typing import Any

from polydom.blobs.bounds import MalformedBlobError

__all__ = [
    "MAX_CLASSES",
    "MAX_FEATURES",
    "MAX_LEAVES",
    "MAX_TREES",
    "OBJECTIVES",
    "LightGBMTextError",
    "booster_from_text",
    "checked_model_text",
]

MAX_CLASSES = 10_000
MAX_FEATURES = 10**6
MAX_LEAVES = 1 << 17
MAX_TREES = 10**6
#: Objectives a stored model may name (their ``ToString`` forms), and which are multiclass.
OBJECTIVES = {
    "regression": False, "regression_l1": False, "huber": False, "fair": False,
    "poisson": False, "quantile": False, "mape": False, "gamma": False, "tweedie": False,
    "binary": False, "cross_entropy": False, "cross_entropy_lambda": False,
    "multiclass": True, "multiclassova": True,
}
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?inf|nan")
_INT = re.compile(r"[-+]?\d{1,18}")
_NAME = re.compile(r"[^\s\[\]:=,]{1,256}")
_RANGE = re.compile(r"\[([^:\]]+):([^\]]+)\]")
_SPLIT_KEYS = ("split_feature", "split_gain", "threshold", "decision_type", "left_child",
               "right_child", "internal_value", "internal_weight", "internal_count")
_LEAF_KEYS = ("leaf_value", "leaf_weight", "leaf_count")


class LightGBMTextError(MalformedBlobError):
    """A LightGBM text model outside the grammar (refused before LightGBM reads it)."""


def _int(text: str, what: str, low: int, high: int) -> int:
    if not _INT.fullmatch(text) or not low <= int(text) <= high:
        raise LightGBMTextError(f"{what} {text[:40]!r} is not an integer in [{low}, {high}]")
    return int(text)


def _numbers(text: str, what: str, count: int, finite: bool = False) -> list[float]:
    items = text.split(" ") if text else []
    if len(items) != count or not all(_NUMBER.fullmatch(x) for x in items):
        raise LightGBMTextError(f"{what} is not {count} numbers")
    values = [float(x) for x in items]
    if finite and not all(math.isfinite(v) for v in values):
        raise LightGBMTextError(f"{what} holds a value that is not finite")
    return values


def _ints(text: str, what: str, count: int, low: int, high: int) -> list[int]:
    items = text.split(" ") if text else []
    if len(items) != count:
        raise LightGBMTextError(f"{what} is not {count} integers")
    return [_int(x, what, low, high) for x in items]


def _objective(text: str, n_class: int, per_iteration: int) -> None:
    parts = text.split(" ")
    name = parts[0]
    if name not in OBJECTIVES:
        raise LightGBMTextError(f"objective {name[:40]!r} is not one of {sorted(OBJECTIVES)}")
    options: dict[str, float] = {}
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if part == "sqrt":
            continue
        if not sep or not _NAME.fullmatch(key) or not _NUMBER.fullmatch(value):
            raise LightGBMTextError(f"objective option {part[:40]!r} is not key:number")
        options[key] = float(value)
    if OBJECTIVES[name]:
        if options.get("num_class") != n_class or per_iteration != n_class:
            raise LightGBMTextError(
                f"objective {text[:60]!r} does not match num_class={n_class} and "
                f"num_tree_per_iteration={per_iteration}")
    elif n_class != 1 or per_iteration != 1:
        raise LightGBMTextError(f"objective {name!r} with num_class={n_class} and "
                                f"num_tree_per_iteration={per_iteration}, not 1")


def _header(lines: list[str]) -> tuple[dict[str, str], int]:
    """The header's ``key=value`` lines and the number of features (checked)."""
    if not lines or lines[0] != "tree":
        raise LightGBMTextError("not a LightGBM text model (no 'tree' header)")
    known = {"version", "num_class", "num_tree_per_iteration", "label_index",
             "max_feature_idx", "objective", "feature_names", "feature_infos",
             "monotone_constraints", "tree_sizes"}
    head: dict[str, str] = {}
    for line in lines[1:]:
        if line == "average_output":
            head[line] = ""
            continue
        key, sep, value = line.partition("=")
        if not sep or key not in known or key in head:
            raise LightGBMTextError(f"header line {line[:60]!r} is not part of the format")
        head[key] = value
    missing = known - {"monotone_constraints", "tree_sizes", "objective"} - set(head)
    if missing:
        raise LightGBMTextError(f"header lacks {sorted(missing)}")
    if head["version"] not in ("v3", "v4"):
        raise LightGBMTextError(f"version {head['version'][:20]!r} is not v3 or v4")
    n_class = _int(head["num_class"], "num_class", 1, MAX_CLASSES)
    per_iteration = _int(head["num_tree_per_iteration"], "num_tree_per_iteration", 1,
                         MAX_CLASSES)
    _int(head["label_index"], "label_index", 0, MAX_FEATURES)
    n_features = _int(head["max_feature_idx"], "max_feature_idx", 0, MAX_FEATURES - 1) + 1
    if "objective" in head:
        _objective(head["objective"], n_class, per_iteration)
    elif per_iteration != n_class:  # a custom objective: raw scores, one tree per class
        raise LightGBMTextError(f"num_tree_per_iteration={per_iteration} differs from "
                                f"num_class={n_class}")
    names = head["feature_names"].split(" ")
    if len(names) != n_features or not all(_NAME.fullmatch(n) for n in names):
        raise LightGBMTextError(f"feature_names is not {n_features} names")
    infos = head["feature_infos"].split(" ")
    if len(infos) != n_features or not all(
            i == "none" or ((m := _RANGE.fullmatch(i)) and _NUMBER.fullmatch(m.group(1))
                            and _NUMBER.fullmatch(m.group(2))) for i in infos):
        raise LightGBMTextError(f"feature_infos is not {n_features} numeric ranges")
    if "monotone_constraints" in head:
        _ints(head["monotone_constraints"], "monotone_constraints", n_features, -1, 1)
    return head, n_features


def _tree(block: list[str], index: int, n_features: int) -> None:
    """Check one ``Tree=i`` block (its lines after ``Tree=i``)."""
    what = f"Tree={index}"
    fields: dict[str, str] = {}
    for line in block:
        key, sep, value = line.partition("=")
        if not sep or key in fields:
            raise LightGBMTextError(f"{what}: line {line[:60]!r} is not part of the format")
        fields[key] = value
    allowed = {"num_leaves", "num_cat", "is_linear", "shrinkage", *_SPLIT_KEYS, *_LEAF_KEYS}
    if set(fields) - allowed:
        raise LightGBMTextError(f"{what}: unknown fields {sorted(set(fields) - allowed)[:4]}"
                                " (categorical or linear trees are not stored)")
    leaves = _int(fields.get("num_leaves", ""), f"{what}: num_leaves", 1, MAX_LEAVES)
    if fields.get("num_cat") != "0" or fields.get("is_linear", "0") != "0":
        raise LightGBMTextError(f"{what}: categorical or linear tree (num_cat, is_linear)")
    _numbers(fields.get("shrinkage", "1"), f"{what}: shrinkage", 1, finite=True)
    _numbers(fields.get("leaf_value", ""), f"{what}: leaf_value", leaves, finite=True)
    for key in _LEAF_KEYS[1:]:  # not read by predict; empty for a tree of one leaf
        if fields.get(key):
            _numbers(fields[key], f"{what}: {key}", leaves)
    if leaves == 1:
        if any(fields.get(k) for k in _SPLIT_KEYS):
            raise LightGBMTextError(f"{what}: a tree of one leaf has splits")
        return
    inner = leaves - 1
    _ints(fields.get("split_feature", ""), f"{what}: split_feature", inner, 0, n_features - 1)
    for key in ("split_gain", "threshold", "internal_value", "internal_weight",
                "internal_count"):
        if key in fields or key == "threshold":
            _numbers(fields.get(key, ""), f"{what}: {key}", inner)
    for kind in _ints(fields.get("decision_type", ""), f"{what}: decision_type", inner, 0, 15):
        if kind & 1 or (kind >> 2) & 3 == 3:
            raise LightGBMTextError(f"{what}: decision_type {kind} (categorical or unknown)")
    left = _ints(fields.get("left_child", ""), f"{what}: left_child", inner, -leaves,
                 inner - 1)
    right = _ints(fields.get("right_child", ""), f"{what}: right_child", inner, -leaves,
                  inner - 1)
    seen_inner, seen_leaf, stack = {0}, set(), [0]
    while stack:
        node = stack.pop()
        for child in (left[node], right[node]):
            if child >= 0:
                if child in seen_inner:
                    raise LightGBMTextError(f"{what}: node {child} is reached twice")
                seen_inner.add(child)
                stack.append(child)
            else:
                if ~child in seen_leaf:
                    raise LightGBMTextError(f"{what}: leaf {~child} is reached twice")
                seen_leaf.add(~child)
    if len(seen_inner) != inner or len(seen_leaf) != leaves:
        raise LightGBMTextError(f"{what}: its children do not form one tree")


def checked_model_text(text: Any) -> str:
    """The canonical text of a LightGBM text model that passes the grammar (module
    docstring): header and trees as given, ``tree_sizes`` as they are, then ``end of trees``.

    Runtime complexity: O(len(text)).

    Raises
    ------
    LightGBMTextError
        Naming the first line or value outside the grammar.
    """
    if not isinstance(text, str):
        raise LightGBMTextError(f"model text is a {type(text).__name__}, not text")
    end = text.find("\nend of trees")
    if end < 0:
        raise LightGBMTextError("not a LightGBM text model (no 'end of trees')")
    body = text[:end + 1]
    first = body.find("\nTree=")
    head_lines = [x for x in body[:first if first >= 0 else len(body)].split("\n") if x]
    head, n_features = _header(head_lines)
    starts = [m.start() + 1 for m in re.finditer(r"\nTree=", body)]
    n_trees = len(starts)
    per_iteration = int(head["num_tree_per_iteration"])
    if n_trees > MAX_TREES or n_trees % per_iteration:
        raise LightGBMTextError(f"{n_trees} trees, not a multiple of "
                                f"num_tree_per_iteration={per_iteration} up to {MAX_TREES}")
    sizes = [b - a for a, b in zip(starts, [*starts[1:], end + 1], strict=True)]
    if "tree_sizes" in head and head["tree_sizes"] != " ".join(map(str, sizes)):
        raise LightGBMTextError("tree_sizes do not match the lengths of the trees")
    for i, (a, b) in enumerate(zip(starts, [*starts[1:], end + 1], strict=True)):
        lines = [x for x in body[a:b].split("\n") if x]
        if lines[0] != f"Tree={i}":
            raise LightGBMTextError(f"tree {i} is headed {lines[0][:30]!r}, not 'Tree={i}'")
        _tree(lines[1:], i, n_features)
    return body + "end of trees\n"


def booster_from_text(text: Any, what: str = "LightGBM model") -> Any:
    """A ``lightgbm.Booster`` built from :func:`checked_model_text` of ``text`` only.

    The one way the project turns stored LightGBM text into a booster (model blobs and
    the boosters budgeted learners keep in their arrays).  Runtime complexity: O(len(text))
    plus LightGBM's parse.

    Raises
    ------
    LightGBMTextError
        If the text is outside the grammar (``what`` names it).
    """
    import lightgbm

    try:
        checked = checked_model_text(text)
    except LightGBMTextError as exc:
        raise LightGBMTextError(f"{what}: {exc}; refusing to load it") from None
    return lightgbm.Booster(model_str=checked)
