"""``polydom lookup``: the most accurate model whose cost at a size fits a budget, for one
query or many (a file or standard input of ``size budget`` lines)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from polydom.app.arguments import (
    UsageError,
    add_min_publication_option,
    add_output_option,
    add_store_options,
    add_unit_option,
    non_negative,
    quantity,
    store_key,
)
from polydom.app.output import write_csv, write_json
from polydom.app.tables import (
    clip,
    cost_unit,
    format_table,
    learner_text,
)
from polydom.curves.units import CostUnit, budget_warning, cost_unit_for
from polydom.errors import InvalidArgumentError
from polydom.index.rules import RULES
from polydom.serving.provenance import unproven_field

__all__ = ["add_lookup", "read_queries", "run_lookup"]

#: Most queries read from one file or stream.
MAX_QUERIES = 1_000_000


def add_lookup(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lookup``."""
    p = subparsers.add_parser(
        "lookup",
        help="the most accurate model whose cost at a size fits a budget",
        description="Answer queries against a stored index: among the candidates whose "
        "cost at size N is at most C, the most accurate.  One query (--size, --budget) or "
        "many (--queries FILE, '-' for standard input: one 'size budget' pair a line).  "
        "Budgets are in the store's cost unit unless --unit says otherwise or the number "
        "carries its unit (770ms, 0.5s, 20us).  Exit status for one query: 0 when a model "
        "fits (the empty model, which uses no features, included: it is named as such), 1 "
        "when nothing fits (\"nothing fits: ...\"); for --queries 0 (each answer says "
        "whether something fits, or names the error of a query it cannot answer, such as a "
        "size outside the index's domain); 2 when the file or the store is bad.  Models are "
        "not loaded.",
    )
    add_store_options(p)
    add_min_publication_option(p)
    p.add_argument("--size", type=non_negative, metavar="N", help="item size n")
    p.add_argument("--budget", type=quantity, metavar="C",
                   help="cost budget: a number in the unit of the costs (see inspect, "
                   "--unit), or a number with its unit (770ms)")
    p.add_argument("--queries", metavar="FILE",
                   help="answer many queries: a text file ('-': standard input) of 'size "
                   "budget' lines (commas or blanks separate; '#' starts a comment)")
    p.add_argument("--rule", choices=RULES, default="best",
                   help="best: the most accurate model that fits (default); one_se: the "
                   "cheapest that fits within one standard error of the best's accuracy")
    add_unit_option(p)
    add_output_option(p)
    p.set_defaults(run=run_lookup)


def read_queries(path: str) -> list[tuple[float, tuple[float, str | None]]]:
    """(size, (budget, unit)) pairs from a text file, or standard input for ``-``.

    One query a line: a size and a budget separated by blanks or a comma; the budget may
    carry its unit (``64 770ms``); ``#`` starts a comment.

    Runtime complexity: O(size of the file).

    Raises
    ------
    ValueError
        Naming the file and the line when a line is not a size and a budget, when the file
        holds no query or more than :data:`MAX_QUERIES`, or cannot be decoded as UTF-8.
    """
    name = "standard input" if path == "-" else f"queries file {path!r}"
    handle = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    out = []
    try:
        for number, line in enumerate(handle, 1):
            words = line.split("#", 1)[0].replace(",", " ").split()
            if not words:
                continue
            if len(words) == 3 and any(c.isalpha() for c in words[2]):  # "64 770 ms"
                words = [words[0], words[1] + words[2]]
            if len(words) != 2:
                raise InvalidArgumentError(
                    f"{name}: line {number} is not 'size budget': "
                    f"{clip(line.strip(), 60)!r}")
            try:
                out.append((non_negative(words[0]), quantity(words[1])))
            except argparse.ArgumentTypeError as exc:
                raise InvalidArgumentError(f"{name}: line {number}: {exc}") from None
            if len(out) > MAX_QUERIES:
                raise InvalidArgumentError(f"{name} holds more than {MAX_QUERIES} queries")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{name} is not UTF-8 text") from None
    finally:
        if handle is not sys.stdin:
            handle.close()
    if not out:
        raise InvalidArgumentError(f"{name} holds no query (one 'size budget' pair a line)")
    return out


def _answer(index: Any, formats: dict[int, str | None], unit: CostUnit, size: float,
            budget: float, rule: str) -> dict[str, Any]:
    """One query's answer as a dict (costs in ``unit``): the fields of
    :meth:`polydom.index.built.Hit.to_dict` (what ``GET /lookup`` answers), ``candidate``
    (the name, as before), the cost curve and the model's format.  ``size``, ``budget`` and
    ``rule`` were checked already (:meth:`polydom.Index.check_query`).

    Runtime complexity: O(log R + d log S) for R ranges and skylines of S entries of
    degree d.  ``formats`` maps ``id(candidate)`` to its model's format."""
    hit = index.lookup(size, budget, rule, check_input=False)
    stored = [entry.cost(size) for entry in index.table.skyline(size, check_input=False)]
    out: dict[str, Any] = {"build": index.info["build_id"], "size": size,
                           "budget": unit.shown(budget), "unit": unit.name, "rule": rule,
                           "fits": hit is not None,
                           "warning": budget_warning(budget, stored, size, unit)}
    if hit is None:
        return out
    curve = hit.candidate.cost * unit.scale
    out.update(candidate=hit.name, **hit.to_dict())
    out.update(cost=curve(size), unit=unit.name, cost_curve=curve.text(),
               cost_coefficients=curve.coefficients.tolist(),
               model=formats.get(id(hit.candidate)))
    return out


def run_lookup(args: argparse.Namespace) -> int:
    """Print the hit of each query; for one query exit status 1 (and say so) when nothing
    fits."""
    from polydom.curves.domain import check_query
    from polydom.pipeline.open import open_index
    from polydom.pipeline.stores import model_formats

    if args.queries is not None:
        if args.size is not None or args.budget is not None:
            raise UsageError("give --size and --budget, or --queries, not both")
        queries = read_queries(args.queries)
    elif args.size is None or args.budget is None:
        raise UsageError("give --size N and --budget C (or --queries FILE)")
    else:
        queries = [(args.size, args.budget)]
    key = store_key(args)
    index = open_index(args.url, build=args.build, key=key, models=False,
                       min_publication=args.min_publication)
    formats = model_formats(args.url, index.info["build_id"], key=key)
    formats = {id(c): formats.get(i) for i, c in enumerate(index.candidates)}
    rule = index.check_rule(args.rule)  # once: "one_se" without standard errors refused
    unit = cost_unit_for(cost_unit(index.info), args.unit)
    lo, hi = index.table.domain
    answers = []
    for number, (size, (value, written)) in enumerate(queries, 1):
        where = "--budget" if args.queries is None else f"query {number}"
        budget = None
        try:
            budget = unit.to_store(value, written, where)
            size, budget = check_query(size, budget, lo, hi)
        except ValueError as exc:
            if args.queries is None:
                raise InvalidArgumentError(str(exc)) from None
            # one bad query of many: its answer names the error, the others are answered
            error = str(exc) if str(exc).startswith(where) else f"{where}: {exc}"
            print(error, file=sys.stderr)
            answers.append({"build": index.info["build_id"], "size": size,
                            "budget": None if budget is None else unit.shown(budget),
                            "unit": unit.name, "rule": rule, "fits": False,
                            "warning": None, "error": error})
            continue
        answers.append(_answer(index, formats, unit, size, budget, rule))
    doubt = unproven_field(index.info)  # said on every answer, never left out
    if doubt:
        print(f"polydom lookup: warning: {doubt['unproven']}", file=sys.stderr)
        answers = [{**a, **doubt} for a in answers]
    warnings = [a["warning"] for a in answers if a["warning"]]
    if warnings:
        more = f" ({len(warnings) - 1} more queries like it)" if len(warnings) > 1 else ""
        print(warnings[0] + more, file=sys.stderr)
    if args.output == "json":
        write_json(answers[0] if args.queries is None else answers)
    elif args.output == "csv":
        write_csv(["size", "budget", "unit", "fits", "candidate", "learner", "features",
                   "accuracy", "accuracy_se", "cost", "cost_curve", "model", "build", "error"],
                  [[a["size"], a["budget"], a["unit"], a["fits"], a.get("candidate"),
                    a.get("learner"), "+".join(a.get("features", ())), a.get("accuracy"),
                    a.get("accuracy_se"), a.get("cost"), a.get("cost_curve"), a.get("model"),
                    a["build"], a.get("error")]
                   for a in answers])
    elif args.queries is not None:
        print(format_table(
            ["size", f"budget ({clip(unit.name, 20)})", "candidate", "learner", "features",
             "accuracy", "std. error", f"cost ({clip(unit.name, 20)})"],
            [[a["size"], a["budget"],
              clip(a.get("candidate", "error" if "error" in a else "nothing fits"), 32),
              learner_text(a.get("learner")), _features(a), a.get("accuracy"),
              _se_text(a), a.get("cost")] for a in answers]))
    else:
        return _print_one(answers[0], unit)
    return 0 if args.queries is not None or answers[0]["fits"] else 1


def _se_text(answer: dict[str, Any]) -> Any:
    """The standard error as the table prints it: ``-`` where none is stored or nothing fits."""
    se = answer.get("accuracy_se")
    return "-" if se is None else se


def _features(answer: dict[str, Any]) -> str:
    if not answer["fits"]:
        return "-"
    return clip("+".join(answer["features"]) or "{} (no features)", 60)


def _print_one(a: dict[str, Any], unit: CostUnit) -> int:
    """Print one answer as text; 1 when nothing fits."""
    name = clip(unit.name, 20)
    if not a["fits"]:
        print(f"nothing fits: no candidate of build {a['build']} costs at most "
              f"{a['budget']:g} {name} at size {a['size']:g}")
        return 1
    print(format_table(
        ["build", "candidate", "learner", "features", "accuracy", "std. error",
         f"cost ({name})", f"cost curve ({name})", "model"],
        [[a["build"], clip(a["candidate"], 32), learner_text(a["learner"]), _features(a),
          a["accuracy"], _se_text(a), a["cost"], clip(a["cost_curve"], 60),
          a["model"] or "-"]]))
    if not a["features"]:
        print("the empty model answers: it uses no features (it predicts without looking at "
              "the item, e.g. the majority class)")
    return 0
