"""Cache: one vault's ``.wikimem/`` as the stages see it, made of separate parts.

- the folder's lifecycle (connections, writer lock, swap, sweep, integrity): ``cachedir.CacheDir``,
  which this class extends;
- the manifest store (every SQL statement): ``manifest``, ``reading()``, ``writing()``;
- the lexical store (FTS5): ``manifest.lexical``;
- the vector store (FAISS, the vector cache, held passages): ``vector_store``;
- the embedder, loaded once per open vault;
- per-vault process state (kept values, build id changes, worker threads): ``runtime``;
- how often each page is returned, opened and cited (``usage.sqlite``, kept across rebuilds): ``usage``.

Readers open the last committed state and re-open it when a writer has committed since
(fingerprints changed), so one long-lived process (MCP server, watch mode) stays current.

Search asks the stores itself (``cache.manifest``, ``cache.vector_store``, ``cache.runtime``). The
few methods below ``# -- delegations`` answer as the stores do for callers that have not moved yet
(each names them); a caller that moves lets its delegation go.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from ..errors import EmbedderError
from ..model import Chunk, Page
from .gcpause import paused_gc
from .manifest import (  # noqa: F401 (re-exported)
    CHUNK_COLUMNS,
    Manifest,
    chunk_row,
    row_chunk,
    select_in,
    stored_pages,
)
from .runtime import Runtime
from .cachedir import CacheDir
from .usage import Usage
from .vectorstore import FaissVectors

if TYPE_CHECKING:
    from ..config import Settings

log = logging.getLogger(__name__)


def shared_embeddings(settings: "Settings"):
    """The team's embedding cache the settings name (``embedding_cache_url``), or None."""
    url = getattr(settings, "embedding_cache_url", "")
    if not url:
        return None
    from . import pg
    from .shared_embeddings import SharedEmbeddings
    pg.psycopg()  # the team extra missing: one clear error now, not at the first embedding
    return SharedEmbeddings(url)


class Cache(CacheDir):
    def __init__(self, root: Path, settings: "Settings"):
        """The stores of the vault at ``root``; ``settings`` name the embedder to load."""
        super().__init__(root)
        self.settings = settings
        self.vector_store = self._vector_store()
        self.runtime = Runtime(Path(root).name)
        self.usage = Usage(self.dir / "usage.sqlite", self.writable)
        self._embedder = None
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()

    def _vector_store(self):
        """The vector store of this kind of cache (FAISS here; pgvector in ``pg_cache.PgCache``)."""
        return FaissVectors(self, shared_embeddings(self.settings))

    @property
    def location(self) -> str:
        """Where the stores are, for people: the cache folder (a PostgreSQL store names its server)."""
        return str(self.dir)

    # -- the manifest store ------------------------------------------------------------------
    @property
    def manifest(self) -> Manifest:
        """The manifest on this thread's connection (a writer's creates the schema)."""
        return Manifest(self.db)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Manifest]:
        """The manifest in one committed state for every read made through it (``snapshot``)."""
        with self.snapshot() as db:
            yield Manifest(db)

    @contextlib.contextmanager
    def writing(self) -> Iterator[Manifest]:
        """The manifest in a write transaction, committed at the end (rolled back on error)."""
        with self.transaction() as db:
            yield Manifest(db)

    # -- embedder --------------------------------------------------------------------------
    def embedder(self):
        """The configured embedder, or None (with ``embedder_error`` saying why). Loaded once per
        open vault: a watcher, an MCP server and their searches share the Context and so the model;
        calls into any model in the process are scheduled by ``embedding.GATE``."""
        if self._embedder is None and self._embedder_error is None:
            from ..embed import get_embedder
            with self._embedder_lock:
                if self._embedder is None and self._embedder_error is None:
                    try:
                        self._embedder = get_embedder(self.settings)
                        if self._embedder is None:
                            self._embedder_error = "no embedder configured (embedder = none)"
                    except EmbedderError as exc:
                        self._embedder_error = str(exc)
        return self._embedder

    def embedder_loaded(self) -> bool:
        """Whether ``embedder()`` would answer at once (loaded, or known not to load)."""
        return self._embedder is not None or self._embedder_error is not None

    @property
    def embedder_error(self) -> str | None:
        return self._embedder_error

    # -- readers ---------------------------------------------------------------------------
    def pages(self, paths: Iterable[str] | None = None) -> dict[str, Page]:
        """Parsed pages as the cache holds them, with every link resolved against the vault as it
        is now (so a page whose link target was renamed since it was parsed is still right)."""
        from ..parse import Resolver
        manifest = self.manifest
        with paused_gc():  # ~1M small objects, none cyclic: collections would cost more than the decoding
            stored = manifest.stored_pages()
            resolver = Resolver(manifest.file_paths(), stored)
            wanted = stored if paths is None else {p: stored[p] for p in paths if p in stored}
            return {path: resolver.resolve_page(page) for path, page in wanted.items()}

    def graph(self):
        """The page graph as an igraph Graph (built from the manifest's edge list)."""
        from .graph import build_graph
        return build_graph(self.manifest)

    def close(self) -> None:
        self.usage.flush()
        self.vector_store.forget()
        if self.vector_store.shared is not None:
            self.vector_store.shared.close()
        self.runtime.close()
        super().close()

    # -- delegations (callers outside search still ask the cache) ---------------------------------
    def vectors(self, dim: int, meta: dict | None = None):
        """``vector_store.load``: graph/semantic.py, graph/related.py, lint's near_duplicates, tests."""
        return self.vector_store.load(dim, meta)

    def keep(self, slot: str, key, value) -> None:
        """``runtime.keep``: graph/related.py."""
        self.runtime.keep(slot, key, value)

    def kept(self, slot: str, key):
        """``runtime.kept``: graph/related.py."""
        return self.runtime.kept(slot, key)

    def note_ids_changed(self, manifest, before: int, after: int, change: tuple | None) -> None:
        """``runtime.note_ids_changed``: index/build.py."""
        self.runtime.note_ids_changed(manifest, before, after, change)

    def chunk_count(self) -> int:
        """``manifest.chunk_count``: graph/stats.py, index/background.py, benchmarks."""
        return self.manifest.chunk_count()

    def all_chunks(self) -> list[Chunk]:
        """``manifest.all_chunks``: benchmarks/bench_index.py."""
        return self.manifest.all_chunks()
