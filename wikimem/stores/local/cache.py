"""Cache: one vault's stores in ``<vault>/.wikimem/`` (the local engine's ``protocol.Stores``).

Made of parts: the folder's lifecycle (connections, the flock between processes, swap, sweep,
integrity: ``cachedir.CacheDir``); the manifest on SQLite (``manifest.LocalManifest`` with its own
statements, ``manifest_sql.py``); the FTS5 lexical index in the same database (``lexical.Lexical``);
the FAISS vector store with its vector cache (``vectorstore.FaissVectors``); and what every engine's
bundle shares (``bundle.StoresBase``: the embedder loaded once, ``runtime``, ``usage``, side files,
the writer lock's frame). Search asks the parts itself (``cache.manifest``, ``cache.vector_store``,
``cache.runtime``).
"""
from __future__ import annotations

from ..bundle import shared_embeddings
from .cachedir import CacheDir
from .manifest import LocalManifest
from .vectorstore import FaissVectors


class Cache(CacheDir):
    """The local stores of the vault at ``root``; ``settings`` name the embedder to load."""

    manifest_class = LocalManifest

    def _vector_store(self) -> FaissVectors:
        return FaissVectors(self, shared_embeddings(self.settings))

    @property
    def location(self) -> str:
        """Where the stores are, for people: the cache folder."""
        return str(self.dir)

    def state_key(self) -> str:
        """The live manifest file (a rebuild's swap names another)."""
        return self.manifest_path.name
