"""The derived stores: what ``.wikimem/`` holds, below the ``Context`` and above nothing but parsing.

Everything here is a cache the vault can rebuild. ``open_stores`` is the one place a ``Context``
gets them from, so another engine is a second implementation chosen by settings, not a change to
the stages that ask them. The stores and their narrow questions:

- ``Manifest`` (``manifest.py``, ``manifest_reads.py``, ``manifest_search.py``): files, parsed pages,
  chunks, passages, links and meta, as named reads and writes; search's filters arrive typed
  (``filters.Filters``) and each engine writes its own SQL for them (``local/manifest_sql.py``,
  ``postgres/manifest_sql.py``: no statement is rewritten from one dialect into the other);
- ``Lexical`` (``lexical.py``, ``analysis.py``): BM25 over wikimem's own tokens;
- ``FaissVectors`` (``vectorstore.py``, ``vectors.py``): the vector index, the vector cache, held
  passages; an optional team cache of embeddings on PostgreSQL (``shared_embeddings.py``, ``pg.py``);
- ``CacheDir`` (``cachedir.py``): the folder's lifecycle: connections, the writer lock, swaps, integrity;
- ``Runtime`` and ``Usage``: per-process kept values, and how often pages are used;
- ``Cache`` (``cache.py``): one vault's bundle of the above, plus the embedder it loads once.

On PostgreSQL (``store = "postgres"``): ``PgCache`` (``pg_cache.py``) is the same bundle over the
vault's schema (``pg_tables.py``): the same ``Manifest`` questions in its own SQL (``postgres/manifest.py``),
``PgLexical`` (BM25 as FTS5 computes it), ``PgVectors`` (pgvector), an advisory writer lock.

The build pipeline that fills them (``wikimem/index``) stands above the ``Context``.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from .cache import Cache

__all__ = ["open_stores"]


def open_stores(root: Path, settings: "Settings") -> "Cache":
    """The stores of the vault at ``root`` as ``settings`` choose them: the local folder, or the
    vault's schema on PostgreSQL (``store = "postgres"``, ``database_url``; ``pg_cache``)."""
    if getattr(settings, "store", "local") == "postgres":
        from ..errors import ConfigError
        if not settings.database_url:
            raise ConfigError('store = "postgres" needs database_url (or WIKIMEM_DATABASE_URL): the PostgreSQL '
                              "with pgvector that holds the vault's stores")
        from . import pg
        pg.psycopg()  # the team extra missing: one clear error now
        from .pg_cache import PgCache
        return PgCache(root, settings)
    from .cache import Cache
    return Cache(root, settings)
