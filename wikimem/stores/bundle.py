"""What both engines' store bundles share: ``StoresBase``, above ``local.cache.Cache`` and
``postgres.cache.PgCache``.

A bundle is one vault's stores as the stages see them (``protocol.Stores``), made of parts:

- the manifest (``manifest``, ``reading()``, ``writing()``: a ``Manifest`` of the engine's own
  statements on this thread's connection, a snapshot's, or a transaction's);
- the lexical index on the manifest's connection (``manifest.lexical``);
- the vector store (``vector_store``: the engine's ``_vector_store()``);
- the writer lock's frame (``writer_lock``: this process's thread lock around the engine's lock
  between processes, ``_process_lock``);
- this machine's side files (``sidefiles.SideFiles``: ``.wikimem/`` holds them for both engines);
- per-vault process state (``runtime``), page usage counts (``usage``), the embedder loaded once.

What differs by engine (connections, snapshots, transactions, the lock between processes, a
rebuild's swap, integrity) is each engine's own class; nothing here knows a file layout or a
dialect. Readers open the last committed state and re-open it when a writer has committed since,
so one long-lived process (MCP server, watch mode) stays current.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ..errors import EmbedderError, LockError
from ..model import Chunk, Page
from .gcpause import paused_gc
from .manifest import Manifest
from .runtime import Runtime
from .sidefiles import SideFiles
from .usage import Usage

if TYPE_CHECKING:
    from ..config import Settings


def shared_embeddings(settings: "Settings"):
    """The team's embedding cache the settings name (``embedding_cache_url``), or None."""
    url = getattr(settings, "embedding_cache_url", "")
    if not url:
        return None
    from . import pg
    from .shared_embeddings import SharedEmbeddings
    pg.psycopg()  # the team extra missing: one clear error now, not at the first embedding
    return SharedEmbeddings(url)



def with_this_thread(conns: list[tuple[threading.Thread, Any]], conn: Any) -> tuple[list[tuple[threading.Thread, Any]], list[Any]]:
    """``conns`` (each thread's connection, with its thread) less those of threads that ended, plus
    ``conn`` for this one; and the ended threads' connections, for the caller to close (a pool thread
    that ended, as serve's idle ones do after 10 s, otherwise kept its descriptors or its session)."""
    live = [(t, c) for t, c in conns if t.is_alive()]
    return live + [(threading.current_thread(), conn)], [c for t, c in conns if not t.is_alive()]

class StoresBase(SideFiles):
    """The parts every engine's bundle has (see the module docstring); an engine supplies ``db``,
    ``transaction``, ``snapshot``, ``_vector_store``, ``_process_lock`` and its lifecycle."""

    def __init__(self, root: Path, settings: "Settings"):
        super().__init__(root)
        self.settings = settings
        self._local = threading.local()
        self._conns_lock = threading.Lock()
        self._thread_lock = threading.Lock()
        self.vector_store = self._vector_store()
        self.runtime = Runtime(Path(root).name)
        self.usage = Usage(self.dir / "usage.sqlite", self.writable)
        self._embedder = None
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()

    # -- what each engine supplies ---------------------------------------------------------------
    # the engine's errors that mean its stored state is damaged (a build then rebuilds beside it, a
    # status says so); none by default: a database server's errors propagate (its tables' integrity
    # is what ``manifest_problem`` checks before anything is read)
    damage_errors: tuple[type[BaseException], ...] = ()

    def _vector_store(self):
        raise NotImplementedError

    @property
    def db(self):
        """This thread's connection (the engine's)."""
        raise NotImplementedError

    def transaction(self, db=None):
        raise NotImplementedError

    def snapshot(self):
        raise NotImplementedError

    @contextlib.contextmanager
    def sound_snapshot(self) -> Iterator[bool]:
        """One committed state for a reader when the manifest is sound (yields True), else no
        snapshot (False: the reader's own checks say what is wrong). Here the check comes first (a
        snapshot of a cache file that is not there cannot be opened); PostgreSQL checks inside the
        snapshot, so the check and the reads are of one state and the check is asked once."""
        if self.manifest_problem() is None:
            with self.snapshot():
                yield True
        else:
            yield False

    @property
    def location(self) -> str:
        """Where the stores are, for people."""
        raise NotImplementedError

    def state_key(self) -> str:
        """What names the committed state readers see; a rebuild's swap changes it (with the meta's
        ``created``, what a result derived from the stores is kept under)."""
        raise NotImplementedError

    # -- the manifest ------------------------------------------------------------------------------
    manifest_class: type[Manifest]  # the engine's (``LocalManifest``, ``PgManifest``)

    def manifest_on(self, db) -> Manifest:
        """The manifest over ``db`` (this thread's connection, a snapshot's or a transaction's)."""
        return self.manifest_class(db)

    @property
    def manifest(self) -> Manifest:
        """The manifest on this thread's connection (a writer's creates the schema)."""
        return self.manifest_on(self.db)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Manifest]:
        """The manifest in one committed state for every read made through it (``snapshot``)."""
        with self.snapshot() as db:
            yield self.manifest_on(db)

    @contextlib.contextmanager
    def writing(self) -> Iterator[Manifest]:
        """The manifest in a write transaction, committed at the end (rolled back on error)."""
        with self.transaction() as db:
            yield self.manifest_on(db)

    def meta(self, db=None) -> dict[str, Any]:
        return self.manifest_on(db or self.db).meta()

    def set_meta(self, db=None, **values: Any) -> None:
        self.manifest_on(db or self.db).set_meta(**values)

    # -- the writer lock ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def writer_lock(self, wait: float = 0.0) -> Iterator[None]:
        """One writer at a time, across processes and threads: the store's lock between processes
        (``_process_lock``), held for the writer's lifetime, plus a thread lock for the other threads
        of this process. Re-entrant within one thread (a write-back inside a build). Waits up to
        ``wait`` seconds."""
        if getattr(self._local, "lock_depth", 0):
            self._local.lock_depth += 1
            try:
                yield
            finally:
                self._local.lock_depth -= 1
            return
        deadline = time.monotonic() + max(wait, 0.0)
        got = self._thread_lock.acquire(timeout=wait) if wait > 0 else self._thread_lock.acquire(blocking=False)
        if not got:
            raise LockError(f"another thread of this process (pid {os.getpid()}) is updating {self._lock_subject}; "
                            "try again when it finishes")
        try:
            self.ensure_dir()
            with self._process_lock(deadline):
                self._local.lock_depth = 1
                self._local.in_build = True
                try:
                    self._writer_started()
                    yield
                finally:
                    self._local.in_build = False
                    self._local.lock_depth = 0
        finally:
            self._thread_lock.release()

    @property
    def _lock_subject(self) -> str:
        """What a busy writer is said to be updating."""
        return str(self.dir)

    def _writer_started(self) -> None:
        """What a writer does first, once it holds the locks (a database store makes its tables)."""

    def _process_lock(self, deadline: float):
        raise NotImplementedError

    def stale_lock(self) -> str | None:
        """The pid a writer that died holding the lock left behind, if the engine can tell (None)."""
        return None

    # -- embedder ----------------------------------------------------------------------------------
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

    # -- readers -----------------------------------------------------------------------------------
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
        """The parts' own resources (an engine closes its connections too)."""
        self.usage.flush()
        self.vector_store.forget()
        if self.vector_store.shared is not None:
            self.vector_store.shared.close()
        self.runtime.close()

    # -- delegations (callers outside search still ask the bundle) ----------------------------------
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
