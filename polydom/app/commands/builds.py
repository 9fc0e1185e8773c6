"""``polydom builds``: list the builds of a store, or delete old ones (and shrink the file)."""

from __future__ import annotations

import argparse

from polydom.app.arguments import add_output_option, add_store_options, build_id, store_key
from polydom.app.commands.inspect import build_record
from polydom.app.output import write_csv, write_json
from polydom.app.tables import format_table, learner_text
from polydom.errors import InvalidArgumentError

__all__ = ["add_builds", "run_builds"]

_COLUMNS = ["build", "status", "current", "alpha", "delta", "learner", "n_min", "n_max",
            "features", "expansions", "candidates", "ranges", "entries", "completed", "error",
            "learner_description", "publication"]
#: The columns of the text table (errors, descriptions and publication numbers are for
#: --json / --csv).
_TEXT = _COLUMNS[:-3]


def add_builds(subparsers: argparse._SubParsersAction) -> None:
    """Register ``builds``."""
    p = subparsers.add_parser(
        "builds",
        help="list the builds of a store, or delete old builds (and shrink the file)",
        description="polydom builds list URL: every build with its status and counts "
        "(--json, --csv for machines).  polydom builds delete URL [ID ...]: delete the given "
        "builds, or every complete or failed build except the current one.  Expansions "
        "(trained models) that the remaining builds use or can reuse are kept; a SQLite file "
        "is compacted with VACUUM and the command says how it shrank.",
    )
    p.add_argument("action", choices=("list", "delete"), help="what to do with builds")
    add_store_options(p, build=False)
    p.add_argument("ids", metavar="ID", type=build_id, nargs="*",
                   help="delete: build ids (default: every build but the current one)")
    add_output_option(p)
    p.set_defaults(run=run_builds)


def run_builds(args: argparse.Namespace) -> int:
    """List builds, or delete builds and report how the store shrank."""
    from polydom.pipeline.open import list_builds
    from polydom.pipeline.stores import delete_builds

    if args.action == "list":
        if args.ids:
            raise InvalidArgumentError("builds list takes no build ids")
        records = [build_record(b) for b in list_builds(args.url, key=store_key(args))]
        if args.output == "json":
            write_json(records)
        elif args.output == "csv":
            write_csv(_COLUMNS, [[r[c] for c in _COLUMNS] for r in records])
        else:
            print(format_table(_TEXT, [
                [*(r[c] for c in _TEXT[:2]), "*" if r["current"] else "",
                 *(r[c] for c in _TEXT[3:5]), learner_text(r["learner"]),
                 *(r[c] for c in _TEXT[6:13]), r["completed"] or "-"] for r in records]))
        return 0
    if args.output == "csv":
        raise InvalidArgumentError("builds delete prints no table: --csv is for builds list")
    done = delete_builds(args.url, args.ids or None, key=store_key(args))
    if args.output == "json":
        write_json(done)
        return 0
    if not done["deleted"]:
        print("no build to delete (the current build and running builds are kept)")
        return 0
    size = ""
    if done["bytes_before"] is not None and done["bytes_after"] is not None:
        size = (f"; file {_megabytes(done['bytes_before'])} -> "
                f"{_megabytes(done['bytes_after'])} (VACUUM)")
    print(f"deleted builds {', '.join(map(str, done['deleted']))} and "
          f"{done['expansions_deleted']} expansions no remaining build uses{size}")
    return 0


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB"
