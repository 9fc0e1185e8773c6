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
    store_key,
)
from polydom.app.arguments import budget as budget_text
from polydom.app.arguments import size as size_value
from polydom.app.output import write_csv, write_json
from polydom.app.tables import (
    clip,
    format_table,
    learner_text,
)
from polydom.errors import InvalidArgumentError, QueryError
from polydom.index.rules import RULES
from polydom.serving.provenance import unproven

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
    p.add_argument("--size", type=size_value, metavar="N", help="item size n")
    p.add_argument("--budget", type=budget_text, metavar="C",
                   help="cost budget: a number in the unit of the costs (see inspect, "
                   "--unit), or a number with its unit (770ms)")
    p.add_argument("--queries", metavar="FILE",
                   help="answer many queries: a text file ('-': standard input) of 'size "
                   "budget' lines (commas or blanks separate; '#' starts a comment)")
    p.add_argument("--rule", choices=RULES, default="best",
                   help="best: the most accurate model that fits (default); one_se: the "
                   "cheapest that fits within one standard error of the best's accuracy")
    p.add_argument("--overrun", metavar="RATE",
                   help="answer at this overrun level, one the build was calibrated for "
                   "(as HTTP's overrun=; default the build's own); every answer states it")
    add_unit_option(p)
    add_output_option(p)
    p.set_defaults(run=run_lookup)


def read_queries(path: str) -> list[tuple[float, str]]:
    """(size, budget text) pairs from a file, or standard input for ``-``, each checked as
    ``--size`` and ``--budget`` are (the serving core,
    :func:`polydom.serving.query.read_query`, checks each against the store).

    One query a line: a size and a budget separated by blanks or a comma; the budget may
    carry its unit (``64 770ms``, ``64 770 ms``); ``#`` starts a comment.

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
                out.append((size_value(words[0]), budget_text(words[1])))
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


def run_lookup(args: argparse.Namespace) -> int:
    """Print the answer of each query (the serving core's record,
    :mod:`polydom.serving.query`); for one query exit status 1 (and say so) when nothing
    fits.  The store is opened once."""
    from polydom.pipeline.stores import open_with_model_formats
    from polydom.serving.query import lookup_answer

    if args.queries is not None:
        if args.size is not None or args.budget is not None:
            raise UsageError("give --size and --budget, or --queries, not both")
        queries = read_queries(args.queries)
    elif args.size is None or args.budget is None:
        raise UsageError("give --size N and --budget C (or --queries FILE)")
    else:
        queries = [(args.size, args.budget)]
    index, formats = open_with_model_formats(args.url, build=args.build, key=store_key(args),
                                             min_publication=args.min_publication)
    formats = {id(c): formats.get(i) for i, c in enumerate(index.candidates)}
    fields = {"rule": args.rule, "unit": args.unit, "overrun": args.overrun}
    fields = {k: v for k, v in fields.items() if v is not None}
    answers, formats_of = [], []
    for number, (size, budget) in enumerate(queries, 1):
        try:
            answer = lookup_answer(index, {**fields, "size": size, "budget": budget})
        except QueryError as exc:
            if args.queries is None or exc.field not in ("size", "budget"):
                raise
            # one bad query of many: its answer names the error, the others are answered
            error = f"query {number}: {exc}"
            print(error, file=sys.stderr)
            answers.append({"build": index.info["build_id"], "size": size,
                            "budget": _shown_budget(index, args.unit, budget),
                            "unit": None, "rule": args.rule, "overrun": None, "fits": False,
                            "warning": None, "model": None, "error": error})
            formats_of.append(None)
            continue
        record = answer.to_dict()
        answers.append(record)
        formats_of.append(None if answer.hit is None else formats[id(answer.hit.candidate)])
    doubt = unproven(index.info)  # also in each record (``unproven``), never left unsaid
    if doubt is not None:
        print(f"polydom lookup: warning: {doubt}", file=sys.stderr)
    warnings = [a["warning"] for a in answers if a["warning"]]
    if warnings:
        more = f" ({len(warnings) - 1} more queries like it)" if len(warnings) > 1 else ""
        print(warnings[0] + more, file=sys.stderr)
    if args.output == "json":
        write_json(answers[0] if args.queries is None else answers)
    elif args.output == "csv":
        write_csv(CSV_COLUMNS, [csv_row(a, f) for a, f in zip(answers, formats_of, strict=True)])
    elif args.queries is not None:
        name = clip(answers[0]["unit"] or "", 20)
        print(format_table(
            ["size", f"budget ({name})", "candidate", "learner", "features",
             "accuracy", "std. error", f"cost ({name})"],
            [[a["size"], a["budget"], clip(_model(a).get("name", "error" if "error" in a
                                                           else "nothing fits"), 32),
              learner_text(_model(a).get("learner")), _features(a), _model(a).get("accuracy"),
              _se_text(a), _model(a).get("cost")] for a in answers]))
    else:
        return _print_one(answers[0], formats_of[0])
    return 0 if args.queries is not None or answers[0]["fits"] else 1


#: The columns of ``--csv``: the record's fields, the model's flattened in.
CSV_COLUMNS = ("build", "size", "budget", "unit", "rule", "overrun", "fits", "name", "learner",
               "features", "accuracy", "accuracy_se", "cost", "cost_curve", "model_format",
               "warning", "error")


def csv_row(a: dict[str, Any], model_format: str | None) -> list[Any]:
    """One record as a ``--csv`` row (:data:`CSV_COLUMNS`; features joined by ``+``)."""
    m = _model(a)
    return [a["build"], a["size"], a["budget"], a["unit"], a["rule"], a["overrun"], a["fits"],
            m.get("name"), m.get("learner"), "+".join(m.get("features", ())),
            m.get("accuracy"), m.get("accuracy_se"), m.get("cost"), m.get("cost_curve"),
            model_format, a["warning"], a.get("error")]


def _shown_budget(index: Any, unit: str | None, text: str) -> float | None:
    """The budget ``text`` in the unit costs are shown in, for a query the core refused
    (None when it does not convert)."""
    from polydom.curves.units import cost_unit_for, split_quantity, unit_name

    try:
        shown = cost_unit_for(unit_name(index.info), unit)
        value, written = split_quantity(text)
        return shown.shown(shown.to_store(value, written, "budget"))
    except ValueError:
        return None


def _model(answer: dict[str, Any]) -> dict[str, Any]:
    return answer["model"] or {}


def _se_text(answer: dict[str, Any]) -> Any:
    """The standard error as the table prints it: ``-`` where none is stored or nothing fits."""
    se = _model(answer).get("accuracy_se")
    return "-" if se is None else se


def _features(answer: dict[str, Any]) -> str:
    if not answer["fits"]:
        return "-"
    return clip("+".join(_model(answer)["features"]) or "{} (no features)", 60)


def _print_one(a: dict[str, Any], model_format: str | None) -> int:
    """Print one answer as text; 1 when nothing fits."""
    name = clip(a["unit"], 20)
    if not a["fits"]:
        print(f"nothing fits: no candidate of build {a['build']} costs at most "
              f"{a['budget']:g} {name} at size {a['size']:g}")
        return 1
    m = a["model"]
    print(format_table(
        ["build", "candidate", "learner", "features", "accuracy", "std. error",
         f"cost ({name})", f"cost curve ({name})", "model"],
        [[a["build"], clip(m["name"], 32), learner_text(m["learner"]), _features(a),
          m["accuracy"], _se_text(a), m["cost"], clip(m["cost_curve"], 60),
          model_format or "-"]]))
    if not m["features"]:
        print("the empty model answers: it uses no features (it predicts without looking at "
              "the item, e.g. the majority class)")
    return 0
