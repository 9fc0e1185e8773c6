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

from polydom.lazy_exports import lazy_exports

# names load on first use (the write path, the expansion cache and its lattice never load
# for a reader); everything else is imported from its module
__getattr__ = lazy_exports(__name__, {
    "IndexIntegrityError": "polydom.errors",
    "IndexStore": "storage.store",
    "LOOKUP_SQL": "storage.schema",
    "ModelIntegrityError": "polydom.errors",
    "SCHEMA_VERSION": "storage.schema",
    "SchemaVersionError": "polydom.errors",
    "StoreKeyError": "polydom.errors",
    "StoreNotFoundError": "polydom.errors",
    "UntrustedModelError": "polydom.errors",
    "register_array_model": "polydom.blobs.model_registry",
    "register_blob_codec": "polydom.blobs.model_registry",
    "register_model_class": "polydom.blobs.allowlist",
})

__all__ = [
    "IndexIntegrityError",
    "IndexStore",
    "LOOKUP_SQL",
    "ModelIntegrityError",
    "SCHEMA_VERSION",
    "SchemaVersionError",
    "StoreKeyError",
    "StoreNotFoundError",
    "UntrustedModelError",
    "register_array_model",
    "register_blob_codec",
    "register_model_class",
]
