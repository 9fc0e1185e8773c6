"""storage: persistence of builds, expansions, models and indexes (SQLAlchemy Core).

Knows the data classes of :mod:`polydom` and nothing of learning.  The default database is
a SQLite file; any SQLAlchemy URL works (PostgreSQL through ``psycopg``).
"""

from storage.blobs import (
    ModelIntegrityError,
    UntrustedModelError,
    dump_model,
    load_model,
    register_array_model,
)
from storage.schema import LOOKUP_SQL, SCHEMA_VERSION
from storage.store import (
    TRAINING_NEUTRAL_PARAMS,
    BuildRecord,
    ExpansionCache,
    IndexStore,
    SchemaVersionError,
    StoreNotFoundError,
    normalize_url,
)

__all__ = [
    "BuildRecord",
    "ExpansionCache",
    "IndexStore",
    "LOOKUP_SQL",
    "ModelIntegrityError",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "StoreNotFoundError",
    "TRAINING_NEUTRAL_PARAMS",
    "UntrustedModelError",
    "dump_model",
    "load_model",
    "normalize_url",
    "register_array_model",
]
