"""Storage tests dump and load models through storage directly: storage gets the learners'
blob codecs (LightGBM's text, :mod:`learners.codecs`) as ``polydom.open_index`` and
``polydom.build_index`` give them.  The fixtures ``store_url`` (a fresh database per test,
SQLite and PostgreSQL) and ``pg_url`` (PostgreSQL only) are :func:`tests.storage_support.
fresh_url`'s; PostgreSQL cases skip without ``POLYDOM_TEST_PG_URL``."""

import pytest

from polydom.pipeline.open import register_learner_models
from tests.storage_support import BACKENDS, fresh_url

register_learner_models()


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path):
    yield from fresh_url(request.param, tmp_path)


@pytest.fixture(params=[p for p in BACKENDS if getattr(p, "values", (p,))[0] == "postgresql"])
def pg_url(request, tmp_path):
    yield from fresh_url(request.param, tmp_path)
