"""Cache: the manifest plus lazily opened readers (lexical, vectors, graph, embedder).

Readers open the last committed state and re-open it when a writer has committed since
(fingerprints changed), so one long-lived process (MCP server, watch mode) stays current.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Iterable

import numpy as np

from ..errors import EmbedderError
from ..model import Chunk, Page
from .manifest import CHUNK_COLUMNS, chunk_row, row_chunk, select_in, stored_pages  # noqa: F401 (re-exported)
from .gcpause import paused_gc
from .store import CacheDir
from .vectors import held_sql

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)

ID_CHANGES_KEPT = 64  # builds whose id changes are remembered (a watcher's edits between two embeds)


class Cache(CacheDir):
    def __init__(self, ctx: "Context"):
        super().__init__(ctx.root)
        self.settings = ctx.settings
        self._vectors = None
        self._vectors_sig = None
        self._kept: dict[str, tuple] = {}  # slot -> (cache state key, value): see keep()
        self._id_changes: list[tuple[int, int, tuple]] = []  # see note_ids_changed()
        self._embedder = None
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()

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
    def vectors(self, dim: int, meta: dict | None = None):
        """The FAISS index as last committed (the file plus the delta recorded beside it), or None
        when there is none (or it is damaged: its size, mtime or checksum differ from what the
        build recorded, or the delta's vectors are not in the vector cache)."""
        from .store import fingerprint, recorded_fingerprint
        from .vectors import FILE_FORMAT, VectorIndex
        meta = meta if meta is not None else self.meta()
        recorded = meta.get("artifacts", {}).get("faiss")
        current = fingerprint(self.faiss_path)
        if recorded is None or recorded.get("format") != FILE_FORMAT or current != recorded_fingerprint(recorded):
            self._vectors = None
            self._vectors_sig = None
            return None
        version = (recorded.get("checksum"), meta.get("vectors_sig"))
        if self._vectors is not None and version == self._vectors_sig and self._vectors.path == self.faiss_path:
            return self._vectors  # (a rebuild of the same vectors elsewhere gives the same version, in another file)
        try:
            index = VectorIndex.load(self.faiss_path, dim, recorded.get("checksum"))
            base = index.base_ids  # the file's ids: the next delta is counted from them
            delta = meta.get("vectors_delta")
            if delta:
                index.remove(delta["remove"])
                found, unknown = self.delta_vectors(meta.get("embedder") or "", dim, delta["add"])
                if len(found) + len(unknown) != len(delta["add"]):  # ids of chunks a later build removed are
                    raise ValueError("vectors recorded in the delta are missing from the vector cache")
                ids = sorted(found)
                if ids:
                    index.add(ids, np.stack([found[i] for i in ids]))
                index.base_ids = base
        except Exception as exc:  # faiss raises RuntimeError on garbage; any failure: not trusted
            log.warning("vector index not usable (%s); the next build rebuilds it", exc)
            self._vectors = None
            self._vectors_sig = None
            return None
        self._vectors, self._vectors_sig = index, version
        return index

    def cached_vectors(self, key: str, dim: int, hashes: list[str]) -> dict[str, np.ndarray]:
        """Cached vectors by text hash. A vector cache damaged in the middle (found only when read)
        is started afresh: it holds nothing that cannot be embedded again."""
        sql = "SELECT hash, vec FROM vecs WHERE embedder=? AND hash IN ({marks})"
        size = 4 * dim  # a row of another length (damage, or written by something else): missing
        try:
            return {h: np.frombuffer(blob, dtype=np.float32) for h, blob in select_in(self.vdb, sql, hashes, key)
                    if isinstance(blob, bytes) and len(blob) == size}
        except sqlite3.DatabaseError as exc:
            log.warning("the vector cache is damaged (%s); starting a new one", exc)
            self.reset_vector_cache()
            return {}

    def delta_vectors(self, key: str, dim: int, ids: list[int]) -> tuple[dict[int, np.ndarray], set[int]]:
        """Vectors of chunk or passage ids from the vector cache (to apply a recorded delta), and
        the ids no chunk or passage has any more (a build removed them since: skipped, as search
        would drop them anyway)."""
        hashes = dict(select_in(self.db, "SELECT vid, embed_hash FROM chunks WHERE vid IN ({marks})", ids))
        hashes.update(select_in(self.db, "SELECT pid, embed_hash FROM passages WHERE pid IN ({marks})", ids))
        cached = self.cached_vectors(key, dim, sorted(set(hashes.values())))
        return {i: cached[h] for i, h in hashes.items() if h in cached}, set(ids) - set(hashes)

    def keep(self, slot: str, key, value) -> None:
        """Keep ``value`` for this process while the cache is in the state named by ``key`` (a key
        or value of None forgets it). Slots: "resolver" (build._resolver, keyed by the manifest's
        links_token), "pending" (background.embed_pending's queue, keyed by generation and vector
        signature) and "language_axis" (search/language.py, keyed by the vector index's serial and
        version)."""
        self._kept[slot] = (key, value) if key is not None and value is not None else None

    def kept(self, slot: str, key):
        """The value kept in ``slot`` if the cache is still in the state ``key`` names, else None."""
        entry = self._kept.get(slot)
        return entry[1] if entry is not None and key is not None and entry[0] == key else None

    def kept_entry(self, slot: str):
        """(key, value) kept in ``slot`` whatever state the key names, or None."""
        return self._kept.get(slot)

    def note_ids_changed(self, manifest, before: int, after: int, change: tuple | None) -> None:
        """Record, for this process, how a build that took the manifest ``manifest`` (its creation
        stamp: a replacement manifest counts generations afresh) from generation ``before`` to
        ``after`` changed the vector ids wanted: ``change`` is (ids retired, {page path: ids
        added}), or None when the build rewrote more than its own pages' rows (a chain of changes
        never crosses it). Builds take the writer lock, so entries arrive in commit order."""
        if change is None:
            self._id_changes = []
        else:
            self._id_changes = [*self._id_changes[-(ID_CHANGES_KEPT - 1):], (manifest, before, after, change)]

    def ids_changed(self, manifest, since: int, now: int) -> list[tuple] | None:
        """The id changes of the builds from generation ``since`` to ``now`` of ``manifest``, in
        commit order, or None when this process did not see every one of them (another process
        built meanwhile)."""
        chain, at = [], since
        for made, before, after, change in self._id_changes:
            if made == manifest and before == at:
                chain.append(change)
                at = after
        return chain if at == now else None

    def forget_ids_changed(self, manifest, through: int) -> None:
        """Drop the records up to generation ``through`` (a kept state has taken them in)."""
        self._id_changes = [r for r in self._id_changes if r[0] == manifest and r[2] > through]

    def adopted_vectors(self):
        """The in-memory index readers of this process use (None until loaded or adopted)."""
        return self._vectors

    def adopt_vectors(self, index, meta: dict) -> None:
        """The writer's in-memory index becomes this process's readers' index (no reload)."""
        self._vectors = index
        self._vectors_sig = (meta.get("artifacts", {}).get("faiss", {}).get("checksum"), meta.get("vectors_sig"))

    def pages(self, paths: Iterable[str] | None = None) -> dict[str, Page]:
        """Parsed pages as the cache holds them, with every link resolved against the vault as it
        is now (so a page whose link target was renamed since it was parsed is still right)."""
        from ..parse import Resolver
        with paused_gc():  # ~1M small objects, none cyclic: collections would cost more than the decoding
            stored = stored_pages(self.db)
            files = [r[0] for r in self.db.execute("SELECT path FROM files")]
            resolver = Resolver(files, stored)
            wanted = stored if paths is None else {p: stored[p] for p in paths if p in stored}
            return {path: resolver.resolve_page(page) for path, page in wanted.items()}

    def graph(self):
        """The page graph as an igraph Graph (built from the manifest's edge list)."""
        from .graph import build_graph
        return build_graph(self.db)

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, Chunk]:
        sql = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks WHERE id IN ({{marks}})"
        return {row[1]: row_chunk(row) for row in select_in(self.db, sql, dict.fromkeys(ids))}

    def paths_by_id(self, ids: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...], int]]:
        """chunk id -> (page path, speakers, ordinal in the page): the light row fusion needs for
        every candidate."""
        return {cid: (path, tuple(json.loads(speakers or "[]")), ordinal) for cid, path, speakers, ordinal in
                select_in(self.db, "SELECT id, path, speakers, ord FROM chunks WHERE id IN ({marks})", ids)}

    def chunk_count(self) -> int:
        """Exact, without a table scan: the lexical index's row count is kept in ``terms``."""
        row = self.db.execute("SELECT df FROM terms WHERE term=''").fetchone()
        return int(row[0]) if row else 0

    def chunk_ids_by_vid(self, vids: Iterable[int]) -> dict[int, str]:
        return dict(select_in(self.db, "SELECT vid, id FROM chunks WHERE vid IN ({marks})", vids))

    def vids_by_id(self, ids: Iterable[str]) -> dict[str, int]:
        return dict(select_in(self.db, "SELECT id, vid FROM chunks WHERE id IN ({marks})", ids))

    def passage_owners(self, ids: Iterable[int]) -> dict[int, int]:
        """Which of these vector ids are passages, and of which chunk (passage id -> chunk vid)."""
        return dict(select_in(self.db, "SELECT pid, vid FROM passages WHERE pid IN ({marks})", ids))

    def transcript_vids(self, vids: Iterable[int]) -> set[int]:
        """Which of these chunk vids are transcript turns (they carry speakers)."""
        return {v for (v,) in select_in(self.db, "SELECT vid FROM chunks WHERE speakers != '[]' AND vid IN ({marks})",
                                        vids)}

    def chunks_with_passages(self, vids: Iterable[int]) -> set[int]:
        """Which of these chunk vids have searched passages (transcript turns)."""
        return {v for (v,) in select_in(self.db, "SELECT DISTINCT vid FROM passages WHERE vid IN ({marks}) "
                                        f"AND {held_sql('pid', held=False)}", vids)}

    def passage_texts(self, pids: Iterable[int]) -> dict[int, str]:
        """The embedded text of these passages (passage id -> text)."""
        return dict(select_in(self.db, "SELECT pid, text FROM passages WHERE pid IN ({marks})", pids))

    def held_passages(self, vids: Iterable[int]) -> dict[int, int]:
        """The held passages (a note's, never searched) of these chunk vids: passage id -> chunk vid."""
        return dict(select_in(self.db, f"SELECT pid, vid FROM passages WHERE {held_sql('pid')} AND vid IN ({{marks}})",
                              vids))

    def first_chunk(self, path: str, where: str = "", args: Iterable = ()) -> Chunk | None:
        """A page's first chunk, if it passes ``where`` (SQL over the ``chunks`` table aliased ``c``)."""
        columns = ",".join(f"c.{name}" for name in CHUNK_COLUMNS)
        row = self.db.execute(f"SELECT {columns} FROM chunks c WHERE c.path=? AND c.ord = "
                              f"(SELECT min(ord) FROM chunks WHERE path=?) {where}", (path, path, *args)).fetchone()
        return row_chunk(row) if row else None

    def all_chunks(self) -> list[Chunk]:
        return [row_chunk(r) for r in self.db.execute(
            f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks ORDER BY path, ord")]

    def close(self) -> None:
        self._vectors = None
        self._vectors_sig = None
        super().close()
