"""Shared pieces of the storage tests: database URLs (SQLite, PostgreSQL) and real models.

:func:`fresh_url` (behind each module's ``store_url`` fixture) yields a fresh, empty
database URL per test: a SQLite file, and a new PostgreSQL database when
``POLYDOM_TEST_PG_URL`` is set (``source .ci/postgres.sh``); without it the PostgreSQL
cases skip with a message.
"""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import textwrap
import time
import uuid
import zipfile
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import lattice.expansion
import polydom

ROOT = Path(__file__).resolve().parents[1]
PG_ENV = "POLYDOM_TEST_PG_URL"
BACKENDS = [
    "sqlite",
    pytest.param(
        "postgresql",
        # a string condition is evaluated at each test's setup, after tests/conftest.py may
        # have started a throwaway server (tests/throwaway_postgres.py)
        marks=pytest.mark.skipif(
            f"not os.environ.get({PG_ENV!r})",
            reason=f"PostgreSQL not configured: set {PG_ENV} (source .ci/postgres.sh) "
                   "or install the test extra's pgserver",
        ),
    ),
]

#: Five feature groups of six columns of the breast-cancer data, with their cost curves.
GROUPS = {f"g{i}": list(range(6 * i, 6 * i + 6)) for i in range(5)}
COSTS = {
    "g0": polydom.CostCurve([1.0, 0.5]),
    "g1": polydom.CostCurve([2.0, 0.4, 0.001]),
    "g2": polydom.CostCurve([3.0, 0.3, 0.002]),
    "g3": polydom.CostCurve([4.0, 0.2, 0.003]),
    "g4": polydom.CostCurve([5.0, 0.1, 0.004]),
}
N_MAX = 1000.0


def make_url(backend: str, tmp_path) -> tuple[str, object]:
    """A fresh database URL and a cleanup callable."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'index.db'}", lambda: None
    base = sa.engine.make_url(os.environ[PG_ENV])
    name = "polydom_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()

    return base.set(database=name).render_as_string(hide_password=False), drop


def fresh_url(backend: str, tmp_path):
    """Generator for a ``store_url`` fixture: yields a fresh URL, then drops the database."""
    url, drop = make_url(backend, tmp_path)
    yield url
    drop()


def data() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


def columns_of(features: frozenset) -> list[int]:
    return [c for name in GROUPS if name in features for c in GROUPS[name]]


def feature_sets(max_size: int = 5) -> list[frozenset]:
    """Non-empty subsets of the groups, smallest first, in a fixed order."""
    names = list(GROUPS)
    return [
        frozenset(combo)
        for r in range(1, max_size + 1)
        for combo in itertools.combinations(names, r)
    ]


def train(features: frozenset, X: np.ndarray, y: np.ndarray) -> lattice.Expansion:
    """A real fit: standardised logistic regression, held-out accuracy (seeded split)."""
    cols = columns_of(features)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train_rows, test_rows = order[:400], order[400:]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    with threadpool_limits(1):  # small fits: BLAS threads only add contention
        model.fit(X[np.ix_(train_rows, cols)], y[train_rows])
    accuracy = float(model.score(X[np.ix_(test_rows, cols)], y[test_rows]))
    return lattice.Expansion(features, accuracy, model, 0.0)


def candidate_of(exp: lattice.Expansion) -> polydom.Candidate:
    key = "+".join(name for name in GROUPS if name in exp.features)
    cost = polydom.CostCurve.total([COSTS[name] for name in exp.features])
    return polydom.Candidate(key, exp.accuracy, cost, exp.features, exp.model)


def index_of(candidates, info=None) -> polydom.Index:
    table = polydom.PolyDomIndex.build(candidates, 0.0, N_MAX)
    return polydom.Index(table, COSTS, GROUPS, info or {"alpha": 1.0})


def random_candidates(n: int, seed: int, prefix: str = "c") -> list[polydom.Candidate]:
    """Model-less candidates with random non-negative quadratic curves (no training)."""
    rng = np.random.default_rng(seed)
    names = list(GROUPS)
    out = []
    for i in range(n):
        coefs = [rng.uniform(0, 50), rng.uniform(0, 2), rng.uniform(0, 0.01)]
        feats = frozenset(rng.choice(names, size=rng.integers(1, 4), replace=False).tolist())
        out.append(polydom.Candidate(f"{prefix}{i}", rng.uniform(0.5, 1.0), coefs, feats))
    return out


BUILD_PARAMS = {
    "alpha": 1.0,
    "delta": 0.0,
    "learner": "StandardScaler+LogisticRegression(max_iter=500)",
    "domain": [0.0, N_MAX],
    "data": "sklearn.datasets.load_breast_cancer",
}


def run_build(url: str, fit_log: str, fail_at: int = 0, pace: float = 0.0,
              info: dict | None = None) -> int:
    """Train every feature set not stored yet through the expansion cache, then publish
    (the index's ``info``: ``info``, default ``{"alpha": 1.0}``, no cost unit).

    Each fit appends the set's names to ``fit_log`` (flushed and fsynced) before it starts;
    ``fail_at=K`` raises at the K-th fit of this call, like a crashing learner.  Returns the
    number of fits made.
    """
    from storage import IndexStore

    X, y = data()
    with IndexStore(url) as store:
        build_id = store.begin_build(BUILD_PARAMS, COSTS, GROUPS)
        cache = store.expansion_cache(build_id)
        fits = 0
        for features in feature_sets():
            if features in cache:
                continue
            fits += 1
            with open(fit_log, "a") as log:
                log.write(",".join(sorted(features)) + "\n")
                log.flush()
                os.fsync(log.fileno())
            if fits == fail_at:
                raise RuntimeError(f"learner failed on {sorted(features)}")
            cache[features] = train(features, X, y)
            time.sleep(pace)
        index = index_of([candidate_of(cache[fs]) for fs in feature_sets()], info)
        store.publish(build_id, index)
    return fits


def read_fit_log(path) -> list[frozenset]:
    """The feature sets a run logged as fitted, in order."""
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [frozenset(line.strip().split(",")) for line in log if line.strip()]


def load_models(index: polydom.Index) -> polydom.Index:
    """Build every stored model of ``index`` (opening builds none: they load on first use,
    and a model that fails its checks raises there)."""
    from polydom.index import resolve_payload

    for cand in index.candidates:
        resolve_payload(cand.payload)
    return index


def reseal_expansions(url: str) -> None:
    """Recompute every expansion's seal as a writer without the store key can (sha256):
    what an attacker does after editing an expansion of an unsigned store."""
    from storage import schema as S
    from storage.database import Database
    from storage.expansion_seals import expansion_digest, expansion_select

    db = Database(url, create=False)
    try:
        with db.write() as conn:
            for row in conn.execute(expansion_select(db)).all():
                conn.execute(S.expansion_seals.update()
                             .where(S.expansion_seals.c.expansion_id == row.id)
                             .values(digest=expansion_digest(db, row)))
    finally:
        db.close()


def execute_sql(url: str, *statements: str) -> None:
    """Run SQL ``statements`` in one transaction on the database at ``url`` (SQLite or
    PostgreSQL), as a writer of the database outside polydom would."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def unseal(url: str) -> None:
    """What a writer without the store key can do to an *unsigned* store so that its edits
    open: delete the builds' seals and index arrays and the expansions' seals (its builds
    then open unverified, as those of stores made before seals existed; a signed store
    refuses them)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in ("build_arrays", "build_seals", "expansion_seals"):
                conn.exec_driver_sql(f"DELETE FROM {table}")
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------- hostile blobs
def archive_members(blob: bytes) -> dict[str, bytes]:
    """The members of a zip archive (a skops blob), by name."""
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def zip_archive(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    """A zip archive of ``members`` (what a crafted skops blob is rebuilt with)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def run_isolated(code: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run ``code`` (dedented) in a fresh interpreter with the repository on its path: a
    crash, abort or hang of what it loads fails the test instead of killing the suite."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, errors="replace", timeout=timeout,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def load_isolated(
    path: Path, fmt: str, rows: str | None = None, codecs: bool = False,
    address_space: int | None = None,
) -> subprocess.CompletedProcess:
    """Load the blob at ``path`` with :func:`storage.blobs.load_model` (format ``fmt``,
    named ``model m``) in a fresh interpreter (:func:`run_isolated`) and predict ``rows`` (a
    Python expression, numpy as ``np``; None: load only).  It prints one line: the error's
    type and text, or ``LOADED AND RAN``.  ``codecs`` registers the learners' blob codecs
    first; ``address_space`` caps the process's memory (bytes), so that an allocation the
    checks should have refused fails the test.
    """
    limit = ("import resource\n"
             f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n"
             if address_space is not None else "")
    register = ("from polydom.pipeline.open import register_learner_models\n"
                "register_learner_models()\n" if codecs else "")
    run = f"    model.predict({rows})\n" if rows is not None else ""
    return run_isolated(
        limit + register
        + "import numpy as np\n"
        "from storage.blobs import load_model, sha256_hex\n"
        f"blob = open({str(path)!r}, 'rb').read()\n"
        "try:\n"
        f"    model = load_model(blob, {fmt!r}, sha256_hex(blob), what='model m')\n"
        + run
        + "    print('LOADED AND RAN')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n")


def refusal(done: subprocess.CompletedProcess) -> str:
    """The one line a :func:`load_isolated` run printed, checked to have exited cleanly."""
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout[-2000:]
    return lines[0]
