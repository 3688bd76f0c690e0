"""The vector stage of a build: bring FAISS in line with the chunk table, using cached vectors
first (no model calls) and the embedder for what is missing, committing as it goes."""
from __future__ import annotations

import hashlib
import logging
import time

import numpy as np

from ..errors import EmbedderError
from .cache import CHUNK_COLUMNS, Cache, row_chunk
from .store import select_in
from .vectors import VectorIndex

log = logging.getLogger(__name__)


def _load_cached_vectors(cache: Cache, key: str, hashes: list[str]) -> dict[str, np.ndarray]:
    sql = "SELECT hash, vec FROM vecs WHERE embedder=? AND hash IN ({marks})"
    return {h: np.frombuffer(blob, dtype=np.float32) for h, blob in select_in(cache.vdb, sql, hashes, key)}


def update_vectors(cache: Cache, embedder, rebuild: bool, touched: bool, embed: bool, batch: int,
                    progress, report, lap) -> tuple[int, int]:
    """Bring the FAISS index in line with the chunk and passage tables — cached vectors first (no
    model calls), then the embedder for what is missing. Returns (vectors held, vectors wanted).

    When nothing changed and the index is complete, FAISS is not even opened: at 40k chunks
    loading and saving it is most of a no-change re-index."""
    key, dim = embedder.identity.key, embedder.identity.dim
    meta = cache.meta()
    want = wanted_vectors(cache.db)
    complete = meta.get("vectors_sig") == _id_signature(want) and "faiss" in meta.get("artifacts", {})
    if not rebuild and complete and meta.get("embedder") == key:
        with cache.transaction() as db:
            cache.set_meta(db, dirty=False, last_build=time.time())
        lap("vectors")
        return len(want), len(want)

    index = None
    if not rebuild and cache.faiss_path.exists() and "faiss" in meta.get("artifacts", {}):
        try:
            index = VectorIndex.load(cache.faiss_path, dim)
        except Exception as exc:  # faiss raises RuntimeError on garbage; any failure means rebuild
            log.warning("vector index unreadable (%s); rebuilding it", exc)
    if index is None:
        index = VectorIndex(cache.faiss_path, dim)
        have: set[int] = set()
    else:
        have = set(index.ids().tolist())
        stale = sorted(have - set(want))
        index.remove(stale)
        have -= set(stale)
    missing = sorted(set(want) - have)
    cached = _load_cached_vectors(cache, key, sorted({want[v] for v in missing}))
    from_cache = [v for v in missing if want[v] in cached]
    if from_cache:
        index.add(from_cache, np.stack([cached[want[v]] for v in from_cache]))
    todo = [v for v in missing if want[v] not in cached] if embed else []
    if todo:  # the index is saved once, when embedding ends (or every 20 s while it runs)
        with cache.transaction() as db:
            cache.set_meta(db, dirty=False, last_build=time.time())
    else:
        _save_index(cache, index, key, len(want), dirty=False)
    lap("vectors")
    report.embedded_now = _embed(cache, embedder, index, todo, want, batch, progress, report)
    lap("embedding")
    return index.ntotal, len(want)


def _embed(cache: Cache, embedder, index: VectorIndex, todo: list[int], want: dict[int, str], batch: int,
           progress, report) -> int:
    """Embed the chunks ``todo`` (vector ids), de-duplicated by text, committing as it goes."""
    if not todo:
        return 0
    key = embedder.identity.key
    pending: dict[str, list[int]] = {}
    for vid in todo:
        pending.setdefault(want[vid], []).append(vid)
    texts: dict[str, str] = {}
    sql = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks WHERE vid IN ({{marks}})"
    for row in select_in(cache.db, sql, todo):
        texts.setdefault(row[4], row_chunk(row).index_text())
    for h, text in select_in(cache.db, "SELECT embed_hash, text FROM passages WHERE pid IN ({marks})", todo):
        texts.setdefault(h, text)
    hashes = sorted(pending, key=lambda h: min(pending[h]))
    done = 0
    last_save = time.monotonic()
    try:
        for start in range(0, len(hashes), batch):
            part = hashes[start:start + batch]
            try:
                vectors = embedder.embed_passages([texts[h] for h in part])
            except EmbedderError as exc:
                report.notices.append(f"embedding stopped: {exc}")
                break
            with cache.transaction(cache.vdb) as vdb:
                vdb.executemany("INSERT OR REPLACE INTO vecs VALUES (?,?,?)",
                                [(key, h, vectors[i].astype(np.float32).tobytes()) for i, h in enumerate(part)])
            ids = [v for h in part for v in pending[h]]
            index.add(ids, np.stack([vectors[i] for i, h in enumerate(part) for _ in pending[h]]))
            done += len(part)
            if progress:
                progress("embedding", done, len(hashes))
            if time.monotonic() - last_save > 20:  # commit progress so search sees it and a kill loses little
                _save_index(cache, index, key, len(want))
                last_save = time.monotonic()
    finally:
        _save_index(cache, index, key, len(want))
    return done


def wanted_vectors(db) -> dict[int, str]:
    """Every vector the index should hold, id -> embed hash: one per chunk, one per passage."""
    want = dict(db.execute("SELECT vid, embed_hash FROM chunks").fetchall())
    want.update(db.execute("SELECT pid, embed_hash FROM passages").fetchall())
    return want


def _id_signature(ids) -> str:
    """A digest of a set of vector ids: the index is complete when it holds exactly these."""
    return hashlib.sha1(np.asarray(sorted(ids), dtype=np.int64).tobytes()).hexdigest()


def _save_index(cache: Cache, index: VectorIndex, key: str, wanted: int, dirty: bool | None = None) -> None:
    index.save()
    with cache.transaction() as db:
        cache.record_artifact("faiss", cache.faiss_path, db)
        values = {"vectors": index.ntotal, "vectors_wanted": wanted, "vectors_sig": _id_signature(index.ids().tolist()),
                  "embedder": key}
        if dirty is not None:
            values.update(dirty=dirty, last_build=time.time())
        cache.set_meta(db, **values)
