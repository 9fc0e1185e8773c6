"""``polydom inspect``: the builds, ranges and skylines of a stored index."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from polydom.app.arguments import (
    add_output_option,
    add_store_options,
    add_unit_option,
    count,
    store_key,
)
from polydom.app.output import write_csv, write_json
from polydom.app.tables import (
    clip,
    cost_unit,
    evaluation_text,
    format_table,
    learner_text,
    sorted_names,
)
from polydom.curves.names import candidate_name
from polydom.curves.units import CostUnit, cost_unit_for
from polydom.errors import InvalidArgumentError

__all__ = ["add_inspect", "build_record", "chosen_build", "run_inspect"]

#: Ranges printed by default as text (JSON and CSV give all).
TEXT_RANGES = 20


def add_inspect(subparsers: argparse._SubParsersAction) -> None:
    """Register ``inspect``."""
    p = subparsers.add_parser(
        "inspect",
        help="print the builds, ranges and skylines of a stored index",
        description="Print every build in the store, then the ranges of sizes and the "
        "skyline of each range (candidates by rank: cheapest first, accuracy increasing) "
        "of one complete build, costs in the store's unit (or --unit).  Reads no model "
        "blobs.  --json prints builds and skylines as one document, --csv the skyline table.",
    )
    add_store_options(p)
    p.add_argument(
        "--ranges",
        type=count,
        default=None,
        metavar="K",
        help=f"print the skylines of the first K ranges only; 0 prints all (default "
        f"{TEXT_RANGES} as text, all with --json or --csv)",
    )
    add_unit_option(p)
    add_output_option(p)
    p.set_defaults(run=run_inspect)


def chosen_build(builds: Sequence[Any], build: int | None, url: str) -> Any:
    """The build record ``build`` names (the current one when None), checked before anything
    is printed: it must exist and be complete.  None when the store has no complete build.

    Raises
    ------
    ValueError
        Naming the build (and the builds the store holds) when it is unknown or incomplete.
    """
    if build is None:
        return next((b for b in builds if b.is_current), None)
    known = {b.build_id: b for b in builds}
    if build not in known:
        ids = ", ".join(str(i) for i in known) or "none"
        raise InvalidArgumentError(f"build {build} does not exist in {url} (builds: {ids})")
    if known[build].status != "complete":
        raise InvalidArgumentError(f"build {build} is {known[build].status}, not complete")
    return known[build]


def _skyline_entries(index: Any, formats: dict[int, Any], unit: CostUnit,
                     ranges: int) -> list[dict[str, Any]]:
    """One dict per skyline entry of the first ``ranges`` ranges (0: all), costs in
    ``unit``.  O(E * d) for E entries of degree d."""
    table = index.table
    stored_se = not index.info.get("no_standard_errors")  # None where a store keeps none
    out = []
    for range_id, ((n_lo, n_hi), positions) in enumerate(
            zip(table.ranges, table.skyline_positions, strict=True)):
        if ranges and range_id >= ranges:
            break
        for rank, position in enumerate(positions):
            cand = table.candidates[position]
            curve = cand.cost * unit.scale
            out.append({
                "range": range_id, "n_lo": n_lo, "n_hi": n_hi, "rank": rank,
                "candidate": candidate_name(cand.key), "learner": cand.learner,
                "features": sorted_names(cand.features), "accuracy": cand.accuracy,
                "accuracy_se": cand.accuracy_se if stored_se else None,
                "cost_curve": curve.text(),
                "cost_coefficients": curve.coefficients.tolist(),
                "cost_at_n_lo": curve(n_lo), "model": formats.get(position),
            })
    return out


def build_record(b: Any) -> dict[str, Any]:
    """A build's record (:class:`storage.build_records.BuildRecord`) as a dict for JSON and CSV: its
    ``learner`` is the learner's short name (its registry name), ``learner_description``
    what the build stored to decide which trainings it may reuse, ``publication`` its number
    in the store's publication log (for ``--min-publication``).  O(1)."""
    description = b.params.get("learner") if isinstance(b.params, dict) else None
    return {"build": b.build_id, "status": b.status, "current": bool(b.is_current),
            "alpha": b.alpha, "delta": b.delta, "learner": b.learner,
            "learner_description": None if description is None else str(description),
            "n_min": b.n_min,
            "n_max": b.n_max, "features": b.n_features, "expansions": b.n_expansions,
            "candidates": b.n_candidates, "ranges": b.n_ranges, "entries": b.n_entries,
            "completed": b.completed_at, "error": b.error,
            "publication": b.publication}


def run_inspect(args: argparse.Namespace) -> int:
    """Print builds, ranges and skylines (as text, JSON or CSV)."""
    from polydom.pipeline.open import list_builds, open_index
    from polydom.pipeline.stores import model_formats, shown_url

    index = None
    key = store_key(args)
    builds = list_builds(args.url, key=key)
    url = shown_url(args.url, key=key)
    chosen = chosen_build(builds, args.build, url)
    if chosen is not None:
        index = open_index(args.url, build=chosen.build_id, key=key, models=False)
        formats = model_formats(args.url, chosen.build_id, key=key)
    ranges = args.ranges if args.ranges is not None else (
        TEXT_RANGES if args.output == "text" else 0)
    unit = entries = None
    if index is not None:
        unit = cost_unit_for(cost_unit(index.info), args.unit)
        entries = _skyline_entries(index, formats, unit, ranges)
    if args.output == "json":
        write_json({"url": url, "builds": [build_record(b) for b in builds],
                    "build": None if chosen is None else chosen.build_id,
                    "unit": None if unit is None else unit.name,
                    "store_unit": None if unit is None else unit.store,
                    "ranges": None if index is None else len(index.table.ranges),
                    "evaluation": None if index is None else index.info.get("evaluation"),
                    "skyline": entries})
        return 0
    if args.output == "csv":
        if entries is None:
            raise InvalidArgumentError(f"{url} has no complete build: no skyline to write as CSV")
        write_csv(["range", "n_lo", "n_hi", "rank", "candidate", "learner", "features",
                   "accuracy", "accuracy_se", f"cost_curve_{unit.name}",
                   f"cost_at_n_lo_{unit.name}", "model"],
                  [[e["range"], e["n_lo"], e["n_hi"], e["rank"], e["candidate"], e["learner"],
                    "+".join(e["features"]), e["accuracy"], e["accuracy_se"], e["cost_curve"],
                    e["cost_at_n_lo"], e["model"]] for e in entries])
        return 0
    _print_text(url, builds, chosen, index, entries, unit, ranges)
    return 0


def _print_text(url: str, builds: Sequence[Any], chosen: Any, index: Any,
                entries: list[dict[str, Any]] | None, unit: CostUnit | None,
                ranges: int) -> None:
    print(f"builds in {clip(url, 200)}")
    print(format_table(
        ["build", "status", "current", "alpha", "delta", "learner", "n_min", "n_max",
         "features", "expansions", "candidates", "ranges", "entries", "completed"],
        [[b.build_id, b.status, "*" if b.is_current else "", b.alpha, b.delta,
          learner_text(b.learner), b.n_min, b.n_max, b.n_features, b.n_expansions,
          b.n_candidates, b.n_ranges, b.n_entries, b.completed_at or "-"] for b in builds]))
    for b in builds:
        if b.error:
            print(f"build {b.build_id} failed: {clip(b.error, 150)}")
    if chosen is None or index is None or entries is None or unit is None:
        print("\nno complete build yet")
        return
    n_ranges = len(index.table.ranges)
    print(f"\nevaluation of build {chosen.build_id}: {evaluation_text(index.info)}")
    if index.info.get("no_standard_errors"):
        print(f"standard errors: not stored (a store of schema version "
              f"{index.info.get('schema_version')}); lookups answer rule 'best' only")
    if index.info.get("sealed") and index.info.get("info_sealed") is False:
        print(f"info of build {chosen.build_id} (cost unit, evaluation): not covered by its "
              "seal (published before the info was sealed)")
    print(f"skylines of build {chosen.build_id}: {n_ranges} ranges, {index.table.entries} "
          f"entries; costs in {clip(unit.name, 40)}")
    print(format_table(
        ["range", "n_lo", "n_hi", "rank", "candidate", "learner", "features", "accuracy",
         "std. error", f"cost curve ({clip(unit.name, 20)})",
         f"cost(n_lo) ({clip(unit.name, 20)})", "model"],
        [[e["range"], e["n_lo"], e["n_hi"], e["rank"], clip(e["candidate"], 32),
          learner_text(e["learner"]), clip("+".join(e["features"]) or "{} (no features)", 60),
          e["accuracy"], "-" if e["accuracy_se"] is None else e["accuracy_se"],
          clip(e["cost_curve"], 60), e["cost_at_n_lo"], e["model"] or "-"]
         for e in entries]))
    if ranges and n_ranges > ranges:
        print(f"... {n_ranges - ranges} more ranges (--ranges 0 prints all)")
