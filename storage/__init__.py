"""storage: persistence of builds, expansions, models and indexes (SQLAlchemy Core).

Knows the data classes of :mod:`polydom` and nothing of learning.  The default database is
a SQLite file; any SQLAlchemy URL works (PostgreSQL through ``psycopg``).

Modules: :mod:`storage.store` (the :class:`IndexStore` facade), :mod:`storage.database`
(engine, transactions, schema version, errors), :mod:`storage.builds` (the write path),
:mod:`storage.reader` (opening a build, the read path's entry) with
:mod:`storage.open_arrays` and :mod:`storage.open_rows` (its two ways in) and
:mod:`storage.lazy_models` (models decoded on first use), :mod:`storage.build_records`
(builds as rows: listings, the current build, skyline rows, the lookup in SQL),
:mod:`storage.cost_model_rows` (a build's cost model as rows, written, read and digested),
:mod:`storage.expansion_seals` (an expansion's seal), :mod:`storage.index_arrays` (a build's
index as one array blob, what readers open), :mod:`storage.seal` (the digests over a
build's rows and over an expansion), :mod:`storage.publications` (the publication log and its
head record: which build is current),
:mod:`storage.candidate_fields` (the one definition of a stored candidate: written, read,
sealed and shown),
:mod:`storage.expansion_cache`, :mod:`storage.blobs` (models and predictions without
pickle), :mod:`storage.codec` (text forms of keys and curves), :mod:`storage.schema` (tables
and views).
"""

from storage.blobs import (
    BlobDigest,
    ModelIntegrityError,
    UntrustedModelError,
    dump_model,
    load_model,
    register_array_model,
    register_blob_codec,
    register_model_class,
)
from storage.build_records import BuildRecord
from storage.builds import TRAINING_NEUTRAL_PARAMS, BuildPublishedError
from storage.database import (
    ForeignDatabaseError,
    SchemaVersionError,
    StoreKeyError,
    StoreLocationError,
    StoreNotFoundError,
    normalize_url,
)
from storage.publications import MinPublicationError
from storage.schema import LOOKUP_SQL, SCHEMA_VERSION
from storage.seal import IndexIntegrityError
from storage.store import IndexStore

__all__ = [
    "BlobDigest",
    "BuildPublishedError",
    "BuildRecord",
    "ExpansionCache",
    "ForeignDatabaseError",
    "IndexIntegrityError",
    "IndexStore",
    "LOOKUP_SQL",
    "MinPublicationError",
    "ModelIntegrityError",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "StoreKeyError",
    "StoreLocationError",
    "StoreNotFoundError",
    "TRAINING_NEUTRAL_PARAMS",
    "UntrustedModelError",
    "dump_model",
    "load_model",
    "normalize_url",
    "register_array_model",
    "register_blob_codec",
    "register_model_class",
]


def __getattr__(name: str):
    """``ExpansionCache`` on first use (PEP 562): it imports :mod:`lattice` (its
    ``Expansion``), which a reader of stores never needs."""
    if name == "ExpansionCache":
        from storage.expansion_cache import ExpansionCache

        globals()[name] = ExpansionCache
        return ExpansionCache
    raise AttributeError(f"module 'storage' has no attribute {name!r}")
