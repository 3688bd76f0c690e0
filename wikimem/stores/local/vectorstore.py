"""The FAISS backend of the vector store, in the cache folder (``stores/vectorstore.py`` holds the
``VectorStore`` protocol and the part both engines share).

``FaissVectors`` is the vector side of one vault's cache: it opens the committed ``VectorIndex``
(the file plus the delta the manifest records beside it), starts a fresh one, commits one (a
delta or a whole file), keeps the index this process's readers share, and owns the vector cache
(``vectors.sqlite``: (embedder key, text hash) -> vector, so re-chunking re-embeds only changed
text). Which passages are *held* (a note's passages, read back for the chunks a search found,
never scanned: their ids carry ``vectors.HELD_BIT``) is this store's business too: callers ask
``held_passages`` / ``chunks_with_passages``, and never build SQL about the id bit.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..manifest_reads import select_in
from ..sidefiles import raise_if_not_damage
from ..vectorstore import VectorsBase, id_signature

if TYPE_CHECKING:
    from .cachedir import CacheDir
    from .vectors import VectorIndex

log = logging.getLogger(__name__)

DELTA_MAX = 0.02  # a delta past this share of the index (or 2,000 ids) is compacted into a full save


class FaissVectors(VectorsBase):
    """The FAISS backend of one vault's cache (see the module docstring)."""

    def __init__(self, cache: "CacheDir", shared=None):
        super().__init__(cache, shared)
        self._index: VectorIndex | None = None
        self._sig = None

    # -- the committed index ------------------------------------------------------------------
    def committed(self, meta: dict) -> dict | None:
        """What names the committed vectors (the FAISS file's record), or None before any: search
        skips the vector side then, and a community memo is keyed by it."""
        record = (meta.get("artifacts") or {}).get("faiss") if isinstance(meta.get("artifacts"), dict) else None
        return record if isinstance(record, dict) and record else None

    def committed_current(self, meta: dict) -> bool:
        """Whether the committed vectors are in this version's format (an older file is rebuilt)."""
        from .vectors import FILE_FORMAT
        record = self.committed(meta)
        return record is not None and record.get("format") == FILE_FORMAT

    def load(self, dim: int, meta: dict | None = None) -> "VectorIndex | None":
        """The index as last committed (the file plus the delta recorded beside it), or None when
        there is none (or it is damaged: its size, mtime or checksum differ from what the build
        recorded, or the delta's vectors are not in the vector cache)."""
        from .cachedir import fingerprint, recorded_fingerprint
        from .vectors import FILE_FORMAT, VectorIndex
        cache = self.cache
        meta = meta if meta is not None else cache.meta()
        recorded = meta.get("artifacts", {}).get("faiss")
        current = fingerprint(cache.faiss_path)
        if recorded is None or recorded.get("format") != FILE_FORMAT or current != recorded_fingerprint(recorded):
            self.forget()
            return None
        version = (recorded.get("checksum"), meta.get("vectors_sig"))
        if self._index is not None and version == self._sig and self._index.path == cache.faiss_path:
            return self._index  # (a rebuild of the same vectors elsewhere gives the same version, in another file)
        try:
            index = VectorIndex.load(cache.faiss_path, dim, recorded.get("checksum"))
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
            self.forget()
            return None
        self._index, self._sig = index, version
        return index

    def fresh(self, dim: int) -> "VectorIndex":
        """An empty index that saves to the file of the manifest this thread writes."""
        from .vectors import VectorIndex
        return VectorIndex(self.cache.faiss_path, dim)

    def adopted(self) -> "VectorIndex | None":
        """The in-memory index readers of this process use (None until loaded or adopted)."""
        return self._index

    def adopt(self, index: "VectorIndex", meta: dict) -> None:
        """The writer's in-memory index becomes this process's readers' index (no reload)."""
        self._index = index
        self._sig = (meta.get("artifacts", {}).get("faiss", {}).get("checksum"), meta.get("vectors_sig"))

    def forget(self) -> None:
        self._index = None
        self._sig = None

    def save(self, index: "VectorIndex", key: str, wanted: int, held: int, dirty: bool | None = None) -> None:
        """Commit ``index``: as a small delta (ids added and removed since the file on disk, recorded
        in the manifest; readers take the added vectors from the vector cache) or, when there is no
        file yet or the delta has grown, a full write of the file. A one-chunk edit at 10k notes so
        writes a few ids instead of a 60 MB file.

        ``wanted``: vectors the index should hold, ``held`` of them held passages. The manifest says
        apart whether searched vectors are missing (``vectors_pending``: some chunks cannot be found
        by meaning yet) or only held passages (``passages_pending``: found, but ranked without their
        best passage)."""
        from .vectors import FILE_FORMAT
        cache = self.cache
        if index.path != cache.faiss_path:  # loaded from a file a swap has since replaced: a delta
            index.path, index.base_ids = cache.faiss_path, None  # would be against the wrong file; write it whole
        delta = index.delta()
        small = delta is not None and len(delta[0]) + len(delta[1]) <= max(50, min(2000, DELTA_MAX * index.ntotal))
        checksum = None if small else index.save()
        with cache.transaction() as db:
            if checksum is not None:
                cache.record_artifact("faiss", cache.faiss_path, db, checksum=checksum, format=FILE_FORMAT)
            values = {"vectors": index.ntotal, "vectors_wanted": wanted, "vectors_sig": id_signature(index.ids()),
                      "embedder": key, "vectors_delta": {"add": delta[0], "remove": delta[1]} if small else None}
            if dirty is not None:
                values.update(dirty=dirty, last_build=time.time())
            values.update(passages_held=index.held_total, passages_wanted=held,
                          vectors_pending=index.ntotal - index.held_total != wanted - held,
                          passages_pending=index.held_total != held)
            cache.set_meta(db, **values)
            meta = cache.meta(db)
        self.adopt(index, meta)

    # -- the vector cache: (embedder key, text hash) -> vector -----------------------------------
    def cached(self, key: str, dim: int, hashes: list[str]) -> dict[str, np.ndarray]:
        """Cached vectors by text hash. A vector cache damaged in the middle (found only when read)
        is started afresh: it holds nothing that cannot be embedded again."""
        sql = "SELECT hash, vec FROM vecs WHERE embedder=? AND hash IN ({marks})"
        size = 4 * dim  # a row of another length (damage, or written by something else): missing
        try:
            found = {h: np.frombuffer(blob, dtype=np.float32) for h, blob in select_in(self.cache.vdb, sql, hashes, key)
                     if isinstance(blob, bytes) and len(blob) == size}
        except sqlite3.DatabaseError as exc:
            raise_if_not_damage(exc)
            log.warning("the vector cache is damaged (%s); starting a new one", exc)
            self.cache.reset_vector_cache()
            found = {}
        self.taken_local += len(found)
        if self.shared is not None and len(found) < len(hashes):  # the team's cache for the rest
            wanted = [h for h in hashes if h not in found]
            shared = self.shared.get(key, dim, wanted)
            if shared:
                self.taken_shared += len(shared)
                self._keep(key, list(shared), np.stack(list(shared.values())))  # local next time
                found.update(shared)
        return found

    def remember(self, key: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Put freshly embedded vectors (row i for ``hashes[i]``) in the vector cache, committed, and
        in the shared embedding cache when one is set."""
        self._keep(key, hashes, vectors)
        if self.shared is not None:
            self.shared.put(key, hashes, vectors)

    def _keep(self, key: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        with self.cache.transaction(self.cache.vdb) as vdb:
            vdb.executemany("INSERT OR REPLACE INTO vecs VALUES (?,?,?)",
                            [(key, h, vectors[i].astype(np.float32).tobytes()) for i, h in enumerate(hashes)])

    def delta_vectors(self, key: str, dim: int, ids: list[int]) -> tuple[dict[int, np.ndarray], set[int]]:
        """Vectors of chunk or passage ids from the vector cache (to apply a recorded delta), and
        the ids no chunk or passage has any more (a build removed them since: skipped, as search
        would drop them anyway)."""
        hashes = self.cache.manifest.embed_hashes(ids)
        cached = self.cached(key, dim, sorted(set(hashes.values())))
        return {i: cached[h] for i, h in hashes.items() if h in cached}, set(ids) - set(hashes)
