"""The derived stores: what ``.wikimem/`` holds, below the ``Context`` and above nothing but parsing.

Everything here is a cache the vault can rebuild. ``open_stores`` is the one place a ``Context``
gets them from, as a ``protocol.Stores`` (the bundle's narrow parts: the manifest's questions split
by who asks, the lexical index, the vectors, the writer lock, side files, the embedding cache), so
another engine is one more package chosen by settings, not a change to the stages that ask them.

Two engines, each a package that does not import the other, each with its own SQL:

- ``local/``: SQLite (``manifest*.sqlite`` with FTS5), FAISS and files in ``.wikimem/``
  (``cache.Cache``, ``cachedir.CacheDir``: connections, the flock, swaps, integrity);
- ``postgres/``: psycopg + pgvector, one schema per vault (``cache.PgCache``, ``tables``: the
  schema, ``lexical.PgLexical``: BM25 as FTS5 computes it, ``vectors.PgVectorIndex``).

Above both, once: the manifest's logic (``manifest.py``, ``manifest_reads.py``,
``manifest_search.py``: rows shaped from each engine's statements), search's typed ``Filters``,
the bundle's shared parts (``bundle.StoresBase``: embedder, runtime, usage, the writer lock's
frame), vector ids and the held bit (``vectors.py``), the vector store's protocol and shared part
(``vectorstore.py``), lexical rows and BM25 term choice (``lexical.py``, ``analysis.py``), side files
(``sidefiles.py``), PostgreSQL connections (``pg.py``) and the team's embedding cache
(``shared_embeddings.py``), which the local engine may use too.

The build pipeline that fills them (``wikimem/index``) stands above the ``Context``.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from .protocol import Stores

__all__ = ["open_stores"]


def open_stores(root: Path, settings: "Settings") -> "Stores":
    """The stores of the vault at ``root`` as ``settings`` choose them: the local folder, or the
    vault's schema on PostgreSQL (``store = "postgres"``, ``database_url``; ``postgres.cache``)."""
    if getattr(settings, "store", "local") == "postgres":
        from ..errors import ConfigError
        if not settings.database_url:
            raise ConfigError('store = "postgres" needs database_url (or WIKIMEM_DATABASE_URL): the PostgreSQL '
                              "with pgvector that holds the vault's stores")
        from . import pg
        pg.psycopg()  # the team extra missing: one clear error now
        from .postgres.cache import PgCache
        return PgCache(root, settings)
    from .local.cache import Cache
    return Cache(root, settings)
