"""``polydom browse URL``: Datasette over a SQLite store, read-only, with canned queries and plots.

The store is opened by Datasette as *immutable* (SQLite ``immutable=1``: no lock, no
journal, nothing written; a WAL file is ignored, so browse a store no build is writing).
:func:`browse_metadata` writes the metadata (titles, descriptions of the tables and views,
canned queries: the skyline at a size, the model for (size, budget), builds newest first,
candidates by learner) with the plots of the current build embedded; the plots are served
from ``/plots/``.  Every connection Datasette opens to the store is guarded
(:mod:`polydom.app.browse_guard`: no pointer functions, bounded answers), a store with
virtual tables or oversize texts is refused before anything is drawn, and the store's texts
are escaped in the page.  Registration only at import (argparse); Datasette loads when the
command runs.
"""

from __future__ import annotations

import argparse
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from polydom.app.arguments import add_store_options, port, store_key
from polydom.app.browse_guard import MAX_RESPONSE_BYTES, MAX_RESULT_BYTES, MAX_VALUE_BYTES
from polydom.app.tables import DEFAULT_COST_UNIT, clip, printable
from polydom.errors import InvalidArgumentError

__all__ = ["CANNED_QUERIES", "MAX_NAME_BYTES", "MAX_UNIT_BYTES", "SETTINGS", "add_browse",
           "browse_metadata", "canned_queries", "check_store_text", "datasette_name",
           "run_browse", "sqlite_file",
           "write_plots"]

_COST_AT_N = """(SELECT SUM(cc.coefficient * power(CAST(:n AS REAL), cc.degree))
          FROM candidate_costs cc
         WHERE cc.build_id = s.build_id AND cc.candidate_id = s.candidate_id)"""

#: The cost unit of build ``b`` (``builds.info`` ``cost_unit``, as ``unit_name`` reads it:
#: the default where it is missing, blank, not text or the info is not JSON).
_UNIT = f"""CASE WHEN TRIM(CASE WHEN json_valid(b.info) THEN
            CASE WHEN json_type(b.info, '$.cost_unit') = 'text'
                 THEN json_extract(b.info, '$.cost_unit') END END,
            ' ' || char(9, 10, 11, 12, 13)) <> ''
       THEN json_extract(b.info, '$.cost_unit') ELSE '{DEFAULT_COST_UNIT}' END"""


def _skyline_at_n(se: str) -> str:
    return f"""SELECT s.build_id AS build, s.range_id, s.n_lo, s.n_hi, s.rank, s.candidate,
       s.learner, s.features, s.accuracy, {se} AS accuracy_se,
       {_COST_AT_N} AS cost,
       s.cost AS cost_curve, {_UNIT} AS unit
  FROM skyline s JOIN builds b ON b.id = s.build_id
 WHERE s.range_id = (SELECT r.range_id FROM ranges r
                      WHERE r.build_id = s.build_id AND r.n_lo <= CAST(:n AS REAL)
                      ORDER BY r.n_lo DESC LIMIT 1)"""


def canned_queries(standard_errors: bool = True) -> dict[str, dict[str, str]]:
    """The canned queries (Datasette metadata ``queries``), all over the current build;
    ``standard_errors`` False (a store that keeps none) gives null ``accuracy_se``.
    Costs are in the store's unit, named in each row's ``unit``.  O(1)."""
    skyline = _skyline_at_n("s.accuracy_se" if standard_errors else "NULL")
    return {
        "skyline_at_size": {
            "title": "Skyline at a size",
            "description": "The skyline of the current build at item size n (the range "
            "holding n), cheapest first, with each model's cost at n and its unit.",
            "sql": skyline + "\n ORDER BY s.rank",
        },
        "model_for_size_and_budget": {
            "title": "The model for (size, budget)",
            "description": "What a lookup returns: the most accurate skyline entry at size "
            "n whose cost at n fits the budget (in the store's unit; no row: nothing fits), "
            "with its accuracy, standard error, learner, build, cost at n and unit.  Give n "
            "inside the build's domain.",
            "sql": "SELECT build, CAST(:n AS REAL) AS size, CAST(:budget AS REAL) AS budget, "
            "candidate, learner, features, accuracy, accuracy_se, cost, cost_curve, unit"
            f"\n  FROM ({skyline})\n WHERE cost <= CAST(:budget AS REAL)"
            "\n ORDER BY rank DESC LIMIT 1",
        },
        "builds_newest_first": {
            "title": "Builds, newest first",
            "description": "Every build, newest first: status, whether current, parameters, "
            "counts and cost unit (the table itself is at builds).",
            "sql": f"SELECT s.*, {_UNIT} AS unit\n  FROM build_summary s "
            "JOIN builds b ON b.id = s.build_id\n ORDER BY s.build_id DESC",
        },
        "candidates_by_learner": {
            "title": "Candidates by learner",
            "description": "The candidates of the current build, by learner then accuracy "
            "(leave learner empty for all).",
            "sql": f"""SELECT c.learner, c.key AS candidate, c.features, c.accuracy,
       c.cost AS cost_curve, {_UNIT} AS unit
  FROM candidates c JOIN builds b ON b.id = c.build_id
 WHERE b.is_current AND (:learner = '' OR c.learner = :learner)
 ORDER BY c.learner, c.accuracy DESC""",
        },
        "learners": {
            "title": "Learners of the current build",
            "description": "How many candidates and skyline entries each learner "
            "contributed.",
            "sql": """SELECT c.learner, COUNT(*) AS candidates,
       (SELECT COUNT(*) FROM skyline s WHERE s.learner IS c.learner) AS skyline_entries,
       MAX(c.accuracy) AS best_accuracy
  FROM candidates c JOIN builds b ON b.id = c.build_id
 WHERE b.is_current
 GROUP BY c.learner ORDER BY best_accuracy DESC""",
        },
    }


#: The canned queries of a store that keeps standard errors (schema version 3).
CANNED_QUERIES = canned_queries()

_TABLES = {
    "skyline": "The skylines of the current build: one row per (range of sizes, rank), with "
    "each entry's accuracy, its standard error and fold scores (stores of schema version 3).",
    "skyline_all": "The skylines of every complete build (filter on build_id).",
    "build_summary": "One row per build with its counts.",
    "builds": "Builds: parameters (JSON), status, current flag, domain, times.",
    "candidates": "Every candidate of every build: key, accuracy (with accuracy_se and "
    "fold_scores in stores of schema version 3), cost expression, learner.",
    "candidate_costs": "Cost coefficients of each candidate by degree (cost(n) = sum "
    "coefficient * n^degree).",
    "features": "The atomic features of each build with their columns and cost curve.",
    "ranges": "Ranges of sizes [n_lo, n_hi) of each build.",
    "skyline_entries": "(range, rank) -> candidate, per build.",
    "expansions": "Trained feature sets (shared by builds with the same training key).",
}

#: Datasette settings of ``browse``: no download of the file, no CSV streaming of a whole
#: table, and every query bounded in time and rows (a page of a table, a query's answer).
SETTINGS = {"allow_download": False, "allow_csv_stream": False, "sql_time_limit_ms": 1000,
            "max_returned_rows": 1000, "truncate_cells_html": 2048}

#: Plot files written for the current build, with their captions.
PLOTS = {
    "serving_map.png": "Which model serves each (size, budget)",
    "accuracy_at_sizes.png": "Accuracy vs budget at chosen sizes",
    "skylines.png": "Skylines per range of sizes",
    "cost_curves.png": "Cost curves of the features",
}


def sqlite_file(url: str) -> Path:
    """The file of a SQLite store URL or path (Datasette reads SQLite files only).

    Raises
    ------
    ValueError
        Naming the URL when it is not a SQLite file that exists.
    """
    import sqlalchemy as sa

    text = str(url)
    if "://" not in text:
        path = Path(text)
    else:
        parsed = sa.engine.make_url(text)
        if parsed.get_backend_name() != "sqlite" or not parsed.database or \
                parsed.database == ":memory:":
            raise InvalidArgumentError(
                f"polydom browse needs a SQLite store file (Datasette reads "
                f"SQLite), got {parsed.render_as_string(hide_password=True)!r}")
        path = Path(parsed.database.removeprefix("file:").split("?", 1)[0])
    if not path.is_file():
        raise InvalidArgumentError(f"no SQLite store file at {str(path)!r}")
    return path


#: The longest cost unit, and feature or learner name, that browse draws and shows, in bytes
#: of UTF-8 (an emoji is 4).
MAX_UNIT_BYTES = 64
MAX_NAME_BYTES = 256


def check_store_text(index: Any, unit: str) -> None:
    """Refuse, before any drawing, a store whose texts would make the plots' work unbounded:
    a cost unit over :data:`MAX_UNIT_BYTES` bytes of UTF-8, a feature or learner name over
    :data:`MAX_NAME_BYTES`.  O(features + candidates).

    Raises
    ------
    InvalidArgumentError
        One line naming the text (cut) and its length in bytes.
    """
    build = index.info.get("build_id") if isinstance(index.info, dict) else None
    texts = [(f"the cost unit (info cost_unit of build {printable(build)})", unit,
              MAX_UNIT_BYTES)]
    names = {str(f) for f in index.costs} | {str(c.learner or "") for c in index.candidates}
    names.update(str(f) for c in index.candidates for f in c.features)
    texts += [("a feature or learner name", name, MAX_NAME_BYTES) for name in names]
    for what, text, most in texts:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > most:
            raise InvalidArgumentError(
                f"polydom browse does not draw {what} of {size} bytes (at most "
                f"{most}): {clip(text, 40)!r}")


def write_plots(index: Any, folder: Path, unit: str) -> list[str]:
    """Write :data:`PLOTS` for ``index`` into ``folder``; returns the file names.  Texts are
    drawn as they are (no ``$...$`` mathematics): a store's names cannot steer the drawing."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        return _write_plots(index, folder, unit)


def _write_plots(index: Any, folder: Path, unit: str) -> list[str]:
    from polydom.app import plots

    n_min, n_max = (float(v) for v in index.table.domain)
    hi = n_max if n_max < float("inf") else max(2.0 * n_min, n_min + 100.0)
    sizes = [n_min + f * (hi - n_min) for f in (0.1, 0.5, 0.9)]
    plots.plot_serving_map(index, folder / "serving_map.png", unit=unit)
    plots.plot_accuracy_at_sizes(index, sizes, folder / "accuracy_at_sizes.png", unit=unit)
    plots.plot_skylines(index, folder / "skylines.png", unit=f"cost at n ({unit})")
    plots.plot_cost_curves(index.costs, n_min, n_max, folder / "cost_curves.png",
                           unit=f"cost ({unit})")
    return list(PLOTS)


def browse_metadata(database: str, index: Any, unit: str, plots: list[str]) -> dict:
    """Datasette metadata for store ``database`` (its name in Datasette): title, the plots
    of the current build (embedded images linking to ``/plots/``), canned queries and
    descriptions of the tables and views.  Every text from the store is HTML-escaped."""
    images = "".join(
        f'<figure style="display:inline-block;margin:4px"><a href="/plots/{name}">'
        f'<img src="/plots/{name}" alt="{PLOTS[name]}" style="max-width:460px"></a>'
        f"<figcaption>{PLOTS[name]}</figcaption></figure>"
        for name in plots
    )
    lo, hi = (float(v) for v in index.table.domain)
    build = escape(str(index.info.get("build_id")))
    about = (f"<p>Current build {build}: {len(index.candidates)} candidates, "
             f"{len(index.table.ranges)} ranges of sizes over [{lo:g}, {hi:g}], costs in "
             f"{escape(unit)}.  Read-only (opened immutable).</p>")
    return {
        "title": "polydom index store",
        "description_html": about + images,
        "databases": {
            database: {
                "description_html": about + images,
                "queries": canned_queries(not index.info.get("no_standard_errors")),
                "tables": {name: {"description": text} for name, text in _TABLES.items()},
            }
        },
    }


def add_browse(subparsers: argparse._SubParsersAction) -> None:
    """Register ``browse``."""
    p = subparsers.add_parser(
        "browse",
        help="browse a SQLite store in a web browser (Datasette, read-only)",
        description="Start Datasette over a SQLite store, opened immutable (nothing is "
        "written), with canned queries (skyline at a size, the model for (size, budget), "
        "builds newest first, candidates by learner) and plots of the current build.  SQL "
        "is read-only and bounded (no pointer or file functions, no recursive queries, 1 s "
        f"and {SETTINGS['max_returned_rows']} rows per statement); budgets in bytes: a value "
        f"at most {MAX_VALUE_BYTES // 2**20} MiB of UTF-8, the rows of one statement at most "
        f"{MAX_RESULT_BYTES // 2**20} MiB once encoded (JSON escapes: an emoji is 12 bytes, a "
        f"control character 6), one response at most {MAX_RESPONSE_BYTES // 2**20} MiB "
        "sent.  A store whose schema is not polydom's is refused.  Needs the 'serve' extra "
        "(datasette, uvicorn, matplotlib).",
    )
    add_store_options(p, build=False)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=8001,
                   help="port (default 8001; 0 picks a free one, printed at start)")
    p.add_argument("--plots", metavar="DIR",
                   help="folder for the plots (default: a temporary folder)")
    p.set_defaults(run=run_browse)


def datasette_name(path: Path) -> str:
    """The name Datasette gives the database of file ``path`` (its stem; ``_internal`` and
    ``_memory`` are Datasette's own, so a store named so becomes ``_internal_2``), which
    keys its metadata and its connections' guard.  Any file name works: spaces, dots and
    other characters are Datasette's to encode in its URLs.  O(1).

    >>> datasette_name(Path("/data/_internal.db")), datasette_name(Path("my store.v2.db"))
    ('_internal_2', 'my store.v2')
    """
    from datasette.app import Datasette

    probe = Datasette(immutables=[str(path)])
    return next(name for name, db in probe.databases.items() if db.path == str(path))


def run_browse(args: argparse.Namespace) -> int:
    """Check the store, write plots and metadata, serve Datasette until interrupted."""
    import uvicorn
    from datasette.app import Datasette

    from polydom.app.browse_guard import ResponseBudget, read_schema, register_guard
    from polydom.app.commands.serve import bind
    from polydom.app.tables import cost_unit
    from polydom.pipeline.open import open_index

    path = sqlite_file(args.url)
    tables, virtual = read_schema(path)
    if virtual:
        raise InvalidArgumentError(
            f"polydom browse does not serve a store with virtual tables (a polydom store has "
            f"none): {printable(path)} holds {', '.join(map(printable, virtual))}")
    index = open_index(str(path), key=store_key(args), models=False)  # or refused
    unit = cost_unit(index.info)
    check_store_text(index, unit)
    with tempfile.TemporaryDirectory(prefix="polydom-browse-") as scratch:
        folder = Path(args.plots) if args.plots else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        names = write_plots(index, folder, unit)
        database = datasette_name(path)
        metadata = browse_metadata(database, index, unit, names)
        register_guard(database, tables)
        ds = Datasette(immutables=[str(path)], metadata=metadata,
                       static_mounts=[("plots", str(folder))], settings=SETTINGS)
        if database not in ds.databases or ds.databases[database].path != str(path):
            raise InvalidArgumentError(  # Datasette named it otherwise: nothing would be guarded
                f"polydom browse: Datasette did not name {printable(path)} {database!r}")
        sock = bind(args.host, args.port)
        host, port = sock.getsockname()[:2]
        print(f"browsing {printable(path)} (build {index.info.get('build_id')}, read-only) "
              f"on http://{host}:{port}{ds.urls.database(database)}", flush=True)
        app = ResponseBudget(ds.app())
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
    return 0
