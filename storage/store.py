"""IndexStore: builds, expansions and published indexes in any SQLAlchemy database.

A build goes through three steps::

    store = IndexStore("sqlite:///index.db")
    build_id = store.begin_build(params, costs, columns)     # or the id of the unfinished one
    cache = store.expansion_cache(build_id)                  # each assignment commits at once
    ...  explorer: `if fs in cache: ...` / `cache[fs] = Expansion(...)`  ...
    store.publish(build_id, index)                           # one transaction; becomes current

and a reader calls :meth:`IndexStore.load_index` (or ``polydom.open_index``).  Publishing
writes every row of the index and flips the ``is_current`` flag in one transaction, and the
rows of a published build are never changed afterwards, so a reader sees the old index or
the new one, never a mix.

This class is the facade: the database and its transactions are :mod:`storage.database`,
the write path :mod:`storage.builds`, the read path :mod:`storage.reader`, listings and
SQL :mod:`storage.build_records`, the expansions :mod:`storage.expansion_cache`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.index.built import Index
from storage import build_records, builds, reader, served_sets, telemetry
from storage.build_records import BuildRecord
from storage.builds import KnownModels
from storage.database import Database
from storage.telemetry import StoredTiming

__all__ = ["IndexStore"]


class IndexStore:
    """Persistence of builds, expansions and indexes in a SQL database.

    Parameters
    ----------
    url : str or path
        Any SQLAlchemy URL (``"sqlite:///index.db"``, ``"postgresql+psycopg://..."``) or a
        plain file path (a SQLite file).
    create : bool, default True
        Create the schema in an empty database.  With False, a database without a polydom
        store raises :class:`storage.StoreNotFoundError` (and a missing SQLite file is not
        created).
    read_only : bool, default False
        Never write (SQLite opened with ``mode=ro``); implies ``create=False``.
    key : bytes or str, optional
        Store key for HMAC-signed blobs and seals (default ``POLYDOM_STORE_KEY``).
    allow_foreign : bool, default False
        Create the store in a non-empty database of another program.

    Raises
    ------
    storage.SchemaVersionError
        If the database holds a store of another schema version.
    polydom.errors.ForeignDatabaseError
        If ``create`` meets a non-empty database of another program.
    """

    def __init__(
        self,
        url: str | os.PathLike,
        create: bool = True,
        read_only: bool = False,
        key: bytes | str | None = None,
        allow_foreign: bool = False,
    ) -> None:
        self.database = Database(url, create=create, read_only=read_only, key=key,
                                 allow_foreign=allow_foreign)
        self.url = self.database.url
        self.display_url = self.database.display_url
        self.dialect = self.database.dialect
        self.engine = self.database.engine
        self._known_models: KnownModels = {}
        #: build id -> its cost model as begin_build stored it (publish reads no rows back)
        self._cost_models: dict[int, CostModel] = {}

    def __repr__(self) -> str:
        return f"IndexStore({self.display_url!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.database.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def begin_build(
        self,
        params: Mapping[str, Any],
        costs: CostModel | Mapping[str, CostCurve | str],
        columns: Mapping[str, Sequence[int]] | None = None,
        learner: str | None = None,
    ) -> int:
        """Register a build (or find the unfinished one with identical arguments).

        ``params`` (alpha, delta, a learner description, the domain, ...) must be
        JSON-serialisable; ``alpha`` and ``delta`` also get their own columns.
        ``learner`` is the learner's short name (its registry name, one line), kept in
        ``builds.learner`` and shown by ``build_summary``, ``builds list`` and ``inspect``
        (default: ``params["learner"]``).  It is not part of the build's identity: the
        description in ``params`` decides which stored trainings a build reuses.
        ``costs`` is a :class:`polydom.CostModel` (atoms with curves and columns, bundles)
        or a plain mapping (atoms only); ``columns`` (atom -> columns) replaces the model's
        columns (default: one column per atom).  If a build with the same ``params``,
        cost model and columns exists and is not complete, its id is returned so that the
        build resumes from its expansions.

        Expansions are shared by every build whose params agree apart from
        :data:`TRAINING_NEUTRAL_PARAMS` and whose atoms, columns and bundles agree.

        Runtime complexity: O(F * d + B) rows written for F atoms of degree d and B bundle
        members.

        Raises
        ------
        storage.SchemaVersionError
            If the store has an older schema version (read, never written).
        ValueError
            If ``learner`` is not a one-line name.

        Returns
        -------
        int
            The build id.
        """
        return builds.begin_build(self.database, params, costs, columns, learner,
                                  self._cost_models)

    def expansion_cache(self, build_id: int, trusted: bool = False) -> Any:
        """The expansions of a build as a mapping ``frozenset(names) -> Expansion``.

        Assigning commits the expansion (with its model) in its own transaction; reading
        returns stored ones, models included (loaded as :meth:`load_index` does, with
        ``trusted``).  Returns a :class:`storage.expansion_cache.ExpansionCache`.
        """
        # imported here: it loads lattice (Expansion), which readers of a store never need
        from storage.expansion_cache import ExpansionCache

        return ExpansionCache(self.database, self._known_models, build_id, trusted)

    def publish(self, build_id: int, index: Index, replaces: int | None = None) -> None:
        """Write ``index`` as the result of the build and make it current, atomically.

        With ``replaces`` (a build id), only while that build is still current, checked in
        the publishing transaction: a build published meanwhile is never replaced
        (:class:`polydom.errors.CurrentBuildChangedError`, nothing written).

        Candidates whose model came from this build's expansion cache (or that have no
        model and a stored expansion on the same feature set) are linked to that expansion;
        others (budgeted learners, ...) get their own model blob.  Models are serialised
        before the transaction opens; the transaction writes candidates, their cost
        coefficients, needs, ranges and skyline entries, the build's seal and its index
        arrays (one blob, what readers open), marks the build complete and moves the current
        flag to it.  A store made before ``build_seals`` / ``build_arrays`` existed gets those
        tables first (:meth:`storage.database.Database.add_tables`).  On PostgreSQL the
        tables are then analysed, so that queries over the views are planned with
        statistics of the new rows.

        Runtime complexity: O(K * d + E) rows for K candidates and E skyline entries.

        Raises
        ------
        ValueError
            If the build does not exist or is already complete, or ``index`` is not a
            :class:`polydom.Index` over the build's features.
        """
        builds.publish(self.database, self._known_models, build_id, index,
                       self._cost_models.get(build_id), replaces)

    def fail_build(self, build_id: int, error: BaseException | str) -> None:
        """Mark an unfinished build ``failed`` with its error (see
        :func:`storage.builds.fail_build`); the next start resumes or deletes it.

        Runtime complexity: one row updated.
        """
        builds.fail_build(self.database, build_id, error)

    def delete_builds(
        self, build_ids: Sequence[int] | None = None, vacuum: bool = True
    ) -> dict[str, Any]:
        """Delete builds (default: every complete or failed build but the current one),
        keeping the expansions the remaining builds use, then ``VACUUM``.

        Returns the deleted ids, the number of expansions deleted and the SQLite file size
        before and after.  See :func:`storage.builds.delete_builds`.

        Runtime complexity: O(rows of the deleted builds) plus the VACUUM.
        """
        return builds.delete_builds(self.database, build_ids, vacuum)

    def load_index(
        self,
        build: int | None = None,
        trusted: bool = False,
        models: bool = True,
        rebuild: bool = False,
        min_publication: int | None = None,
    ) -> Index:
        """Rebuild a published index (no sweep): the current build by default.

        Built from the build's index arrays (one blob, :mod:`storage.index_arrays`) when it
        has them, else from its rows; either way checked against the build's seal (the rows
        are compared with the arrays column by column).  The candidates' payloads are the
        stored models (checked against their digest and decoded safely, see
        :mod:`storage.blobs`); ``models=False`` leaves them None.  ``info`` is the stored
        build info plus ``build_id``, ``sealed`` and ``read_from`` (``"arrays"`` or
        ``"rows"``).  ``rebuild=True`` reads the rows and sweeps the skylines again from the
        stored candidates instead of refusing a build whose rows were edited.  The current
        build must be the latest publication and the one the store's head record names
        (:mod:`storage.publications`); ``min_publication`` refuses a current build of a
        lower publication number (a rollback the store alone cannot show).

        Runtime complexity: O(K * d + N + E) for K candidates of degree d, N needs and E
        skyline entries (numpy work and one Python object per candidate from the arrays;
        rows from the rows), plus decoding the K models.

        Raises
        ------
        ValueError
            If there is no complete build, or ``build`` is unknown or not complete.
        storage.ModelIntegrityError, storage.UntrustedModelError
            For a tampered blob, or one that needs ``trusted=True``.
        storage.IndexIntegrityError
            If the rows do not match the build's seal or arrays (and ``rebuild`` is false),
            or the arrays fail their digest, name another build or do not decode.
            Also if the current build is not the latest publication, or older than
            ``min_publication``.
        polydom.errors.MinPublicationError
            If ``min_publication`` is not an integer >= 1 or is given with ``build``.
        storage.StoreKeyError
            If the store is signed with a key this process does not hold.
        """
        return reader.load_index(self.database, build, trusted, models, rebuild,
                                 min_publication)

    def current_build_id(self) -> int | None:
        """Id of the current build (the latest published); None before the first publish.

        Runtime complexity: one indexed query.
        """
        return build_records.current_build_id(self.database)

    def list_builds(self) -> list[BuildRecord]:
        """Every build, oldest first, with its status and row counts.

        Runtime complexity: one query over the ``build_summary`` view.
        """
        return build_records.list_builds(self.database)

    def skyline_rows(self, build: int | None = None) -> list[dict[str, Any]]:
        """Rows of the ``skyline_all`` view for one complete build (current by default).

        Reads no model blobs.  Each row: ``range_id, n_lo, n_hi, rank, candidate_id,
        candidate, features, accuracy, cost, cost_at_n_lo, model_format``.
        """
        return build_records.skyline_rows(self.database, build)

    def sql_lookup(self, size: float, budget: float, build: int | None = None) -> int:
        """:meth:`polydom.PolyDomIndex.lookup_position` answered by SQL over the views.

        Runs :data:`storage.schema.LOOKUP_SQL`; returns the candidate position (-1: none
        fits).  Costs are summed as ``coefficient * power(n, degree)``, so answers may differ
        from the index only at floating ties.

        Runtime complexity: one query (index range scan over the build's skyline rows).
        """
        return build_records.sql_lookup(self.database, size, budget, build)

    def record_timings(
        self, records: Iterable[Sequence[Any]], build_id: int | None = None,
        seal: str | None = None,
    ) -> tuple[int, int]:
        """Store served ``(feature, size, seconds)`` records against a build, all or none,
        and the served sets ``records.sets`` carries (a
        :class:`polydom.serving.telemetry.TimingBatch`; :mod:`storage.served_sets`).

        Each is checked first, the served sets before any timing is written (an atomic
        feature of the build, a size in its domain, finite seconds > 0 and bounded; with
        ``seal``, the build's seal must be it); see
        :func:`storage.telemetry.append_timings`.  Returns the ids of the
        first and last row written (``(0, -1)`` for no records).

        Runtime complexity: O(R) checks and one transaction of R rows.

        Raises
        ------
        polydom.errors.TelemetryError
            A ``ValueError`` naming the first bad record; nothing is stored.
        """
        sets = list(getattr(records, "sets", ()))
        if not sets:
            return telemetry.append_timings(self.database, records, build_id, seal)
        self.database.check_writable()
        with self.database.read() as conn:
            build, rows = served_sets.check_served_sets(self.database, conn, sets, build_id,
                                                        seal)
        out = telemetry.append_timings(self.database, records, build, seal)
        served_sets.append_served_sets(self.database, (), build, rows=rows)
        return out

    def served_sets(self, since_id: int = 0, build_id: int | None = None,
                    last: int | None = None) -> list[served_sets.StoredServedSet]:
        """Stored served sets (:func:`storage.served_sets.read_served_sets`: each row checked
        when read), oldest first.  Runtime complexity: one query."""
        return served_sets.read_served_sets(self.database, since_id, build_id, last)

    def timings(
        self, since_id: int = 0, features: Iterable[str] | None = None, last: int | None = None,
        until_id: int | None = None, build_id: int | None = None,
    ) -> list[StoredTiming]:
        """Stored timings ``(id, build_id, feature, size, seconds)`` with ``id > since_id``
        (and ``id <= until_id``, of build ``build_id``, when given), oldest first; with
        ``last``, only the newest ``last`` of each feature.

        Runtime complexity: one query.
        """
        return telemetry.read_timings(self.database, since_id, features, last, until_id,
                                      build_id)
