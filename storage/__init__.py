"""storage: persistence of builds, expansions, models and indexes (SQLAlchemy Core).

Knows the data classes of :mod:`polydom` and nothing of learning.  The default database is
a SQLite file; any SQLAlchemy URL works (PostgreSQL through ``psycopg``).

Modules: :mod:`storage.store` (the :class:`IndexStore` facade), :mod:`storage.database`
(engine, transactions, schema version, errors), :mod:`storage.builds` (the write path),
:mod:`storage.reader` (the read path), :mod:`storage.index_arrays` (a build's index as one
array blob, what readers open), :mod:`storage.seal` (the digests over a
build's rows and over an expansion), :mod:`storage.publications` (the publication log and its
head record: which build is current),
:mod:`storage.candidate_fields` (the one definition of a stored candidate),
:mod:`storage.expansion_cache`, :mod:`storage.blobs` (models and predictions without
pickle), :mod:`storage.codec` (text forms of keys and curves), :mod:`storage.schema` (tables
and views).
"""

from polydom.lazy_exports import lazy_exports

# names load on first use (the write path, the expansion cache and its lattice never load
# for a reader); everything else is imported from its module
__getattr__ = lazy_exports(__name__, {
    "IndexIntegrityError": "storage.reader",
    "IndexStore": "storage.store",
    "LOOKUP_SQL": "storage.schema",
    "ModelIntegrityError": "storage.blobs",
    "SCHEMA_VERSION": "storage.schema",
    "SchemaVersionError": "storage.database",
    "StoreKeyError": "storage.database",
    "StoreNotFoundError": "storage.database",
    "UntrustedModelError": "storage.blobs",
    "register_array_model": "storage.model_registry",
    "register_blob_codec": "storage.model_registry",
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
