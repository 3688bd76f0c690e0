"""FAISS IndexIDMap2(IndexFlatIP) over normalised vectors: exact cosine search, removable ids.

Two kinds of vector share one id space. *Searched* vectors (chunks, transcript passages) are in
the flat index that every query scans. *Held* vectors (a note's passages: ids with ``HELD_BIT``
set, index/passages.py) are only read back, for the few candidates a search found: scanning them
too would multiply the cost of every query by the number of passages a chunk has (~5 on
documentation), so they sit beside it in a ``HeldStore``: float16 rows by id, never searched
(half the memory; the cosines they give differ by ~1e-4), from which a removal costs nothing
like FAISS's compaction.

Saved with temp file + rename, so a reader never sees half an index. ``VectorIndex`` is the FAISS
implementation of ``vectorstore.VectorStore`` (add / remove / search / get by vector id), so that
another backend can replace it; ``vectorstore.FaissVectors`` loads, commits and shares it.
"""
from __future__ import annotations

import itertools
import os
import shutil
import threading
import zlib
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..vectors import HELD_BIT, inner_products, id_difference, is_held, rows_in_order, sorted_ids


def checksum(parts: Iterable) -> str:
    """CRC-32 of a file's bytes, given in consecutive parts (bytes-like): finds damage (not
    tampering) at memory speed; a SHA-256 of a 60 MB index cost ~0.1 s of every save."""
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return f"crc32:{crc:08x}"


_SERIALS = itertools.count(1)
# file: magic, the searched index's length (8 bytes), the searched FAISS index serialised, then the
# held store (HeldStore.parts); WMVI2 files (the held vectors in a FAISS index) are rebuilt from the
# vector cache like any index that cannot be read
_MAGIC = b"WMVI3\n"
FILE_FORMAT = 3  # recorded with the file in the manifest: a build finds an older file without reading it


class HeldStore:
    """Held vectors (a note's passages): read back by id, never searched, so they need no FAISS
    index. float16 rows in one array with an id -> row map; removing a vector moves the last row
    into its place. FAISS's flat storage compacts every row after a removed one and rebuilds its
    id map: ~40 ms of each one-note edit at 10k notes (131k passages), growing with the vault.
    Adding an id already held replaces its vector (an id names its text, so it is the same one)."""

    def __init__(self, dim: int):
        self.d = dim
        self.ntotal = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._vecs = np.zeros((0, dim), dtype=np.float16)
        self._row: dict[int, int] = {}

    def _reserve(self, n: int) -> None:
        if n > len(self._ids):
            size = max(n, 2 * len(self._ids), 1024)
            ids, vecs = np.zeros(size, dtype=np.int64), np.zeros((size, self.d), dtype=np.float16)
            ids[:self.ntotal], vecs[:self.ntotal] = self._ids[:self.ntotal], self._vecs[:self.ntotal]
            self._ids, self._vecs = ids, vecs

    def add_with_ids(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.d)
        last = {vid: i for i, vid in enumerate(ids.tolist())}  # an id given twice: its last vector
        take = np.fromiter(last.values(), dtype=np.int64, count=len(last))
        rows = np.empty(len(last), dtype=np.int64)
        n, known = self.ntotal, self._row
        for j, vid in enumerate(last):
            row = known.get(vid)
            if row is None:
                row = known[vid] = n
                n += 1
            rows[j] = row
        self._reserve(n)
        self._ids[rows] = ids[take]
        self._vecs[rows] = vectors[take]
        self.ntotal = n

    def remove_ids(self, ids) -> int:
        removed = 0
        for vid in np.asarray(ids, dtype=np.int64).tolist():
            row = self._row.pop(vid, None)
            if row is None:
                continue
            last = self.ntotal - 1
            if row != last:
                moved = int(self._ids[last])
                self._ids[row], self._vecs[row] = moved, self._vecs[last]
                self._row[moved] = row
            self.ntotal = last
            removed += 1
        return removed

    def ids(self) -> np.ndarray:
        return self._ids[:self.ntotal].copy()

    def reconstruct(self, vid: int) -> np.ndarray:
        row = self._row.get(int(vid))
        if row is None:
            raise RuntimeError(f"held vector {vid} not found")
        return self._vecs[row].astype(np.float32)

    def reconstruct_batch(self, ids) -> np.ndarray:
        wanted = np.asarray(ids, dtype=np.int64).tolist()
        try:
            rows = np.fromiter(map(self._row.__getitem__, wanted), dtype=np.int64, count=len(wanted))
        except KeyError as exc:
            raise RuntimeError(f"held vector {exc.args[0]} not found") from None
        return self._vecs[rows].astype(np.float32)

    def parts(self) -> list[bytes]:
        """The store as bytes: its count (8 bytes), its ids, its float16 rows."""
        n = self.ntotal
        return [n.to_bytes(8, "little"), self._ids[:n].tobytes(), np.ascontiguousarray(self._vecs[:n]).tobytes()]

    @classmethod
    def from_bytes(cls, data, dim: int) -> "HeldStore":
        if len(data) < 8:
            raise ValueError("vector index file is truncated (held vectors)")
        n = int.from_bytes(bytes(data[:8]), "little")
        if len(data) != 8 + n * 8 + n * dim * 2:
            raise ValueError(f"held vectors do not fit the file ({len(data)} bytes for {n} of dimension {dim})")
        store = cls(dim)
        ids = np.frombuffer(data, dtype=np.int64, count=n, offset=8)
        store._ids = ids.copy()
        store._vecs = np.frombuffer(data, dtype=np.float16, offset=8 + n * 8).reshape(n, dim).copy()
        store._row = {vid: row for row, vid in enumerate(ids.tolist())}
        if len(store._row) != n:
            raise ValueError("held vectors repeat an id")
        store.ntotal = n
        return store


class VectorIndex:
    def __init__(self, path: Path, dim: int):
        import faiss

        self.faiss = faiss
        self.path = path
        self.dim = dim
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.held = HeldStore(dim)
        # one process may search this index in several threads while its writer adds to it;
        # FAISS does not allow a search during an add, so each takes this lock
        self.lock = threading.RLock()
        # the ids in the file on disk, sorted (None: never written or read)
        self.base_ids: np.ndarray | None = None
        # what is derived from the vectors is keyed by (serial, version): serial names this object
        # for the life of the process (an id() can be reused once it is freed), version counts
        # its adds and removes (``searched_version`` those that change the searched vectors: what
        # is derived from chunk vectors alone is kept while a backlog of held passages is embedded)
        self.serial = next(_SERIALS)
        self.version = 0
        self.searched_version = 0

    @classmethod
    def load(cls, path: Path, dim: int, expected: str | None = None) -> "VectorIndex":
        """Read the index; with ``expected`` (the checksum recorded when it was saved) a file whose
        bytes changed although its size and mtime did not is refused (ValueError), not trusted."""
        vi = cls(path, dim)
        data = path.read_bytes()
        if expected is not None and checksum((data,)) != expected:
            raise ValueError("vector index checksum does not match what was written")
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 8:
            raise ValueError("not a wikimem vector index file (or one from an older version)")
        start = len(_MAGIC) + 8
        size = int.from_bytes(data[len(_MAGIC):start], "little")
        if start + size > len(data):
            raise ValueError("vector index file is truncated")
        view = memoryview(data)  # slices of a memoryview are not copies
        index = vi.faiss.deserialize_index(np.frombuffer(view[start:start + size], dtype=np.uint8))
        if index.d != dim:
            raise ValueError(f"vector index has dimension {index.d}, expected {dim}")
        vi.index = index
        vi.held = HeldStore.from_bytes(view[start + size:], dim)
        vi.base_ids = sorted_ids(vi.ids())
        return vi

    def delta(self) -> tuple[list[int], list[int]] | None:
        """(added, removed) ids since the file on disk was written or read; None if there is none."""
        if self.base_ids is None:
            return None
        now = sorted_ids(self.ids())  # array set operations: ~500k ids at 100k chunks with passages
        return id_difference(now, self.base_ids).tolist(), id_difference(self.base_ids, now).tolist()

    @property
    def ntotal(self) -> int:
        """Vectors of both kinds."""
        return int(self.index.ntotal) + int(self.held.ntotal)

    @property
    def held_total(self) -> int:
        """Held vectors (a note's passages)."""
        return int(self.held.ntotal)

    def ids(self) -> np.ndarray:
        """The ids of both kinds: searched first, in their index's row order, then held."""
        return np.concatenate([self.faiss.vector_to_array(self.index.id_map).astype(np.int64), self.held.ids()])

    def searched(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors as rows) of every searched vector, in one C call."""
        with self.lock:
            ids = self.faiss.vector_to_array(self.index.id_map).astype(np.int64)
            return ids, self.index.index.reconstruct_n(0, self.index.ntotal)

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        if len(ids):
            ids = np.asarray(ids, dtype=np.int64)
            vectors = np.ascontiguousarray(vectors, dtype=np.float32)
            held = (ids & HELD_BIT) != 0
            with self.lock:
                for index, rows in ((self.index, ~held), (self.held, held)):
                    if rows.any():
                        index.add_with_ids(np.ascontiguousarray(vectors[rows]), ids[rows])
                self.version += 1
                self.searched_version += bool((~held).any())

    def remove(self, ids: Sequence[int]) -> None:
        if len(ids):
            ids = np.asarray(ids, dtype=np.int64)
            held = (ids & HELD_BIT) != 0
            with self.lock:
                for index, rows in ((self.index, ~held), (self.held, held)):
                    if rows.any():
                        index.remove_ids(ids[rows])
                self.version += 1
                self.searched_version += bool((~held).any())

    def save(self) -> str:
        """Write to a temp file and rename; returns the checksum of the bytes written. No fsync: this
        file is derived, its fingerprint and checksum are checked on open, and it is rebuilt from
        the durable vector cache if a crash damaged it."""
        with self.lock:
            parts = [self.faiss.serialize_index(self.index), *self.held.parts()]
            self.base_ids = sorted_ids(self.ids())
        parts.insert(0, _MAGIC + len(parts[0]).to_bytes(8, "little"))
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:  # part by part: no copy of the whole file in memory
            for part in parts:
                f.write(part)
        if self.path.is_dir() and not self.path.is_symlink():  # a folder where the file belongs: derived
            shutil.rmtree(self.path, ignore_errors=True)  # data only, inside .wikimem; it would block every save
        os.replace(tmp, self.path)
        return checksum(parts)

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of ``ids`` (those present)."""
        out = {}
        with self.lock:
            for i in ids:
                try:
                    out[int(i)] = (self.held if is_held(i) else self.index).reconstruct(int(i))
                except RuntimeError:  # not in the index (yet)
                    continue
        return out

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """``VectorStore.get``: the stored vectors of ``ids`` (those present)."""
        return self.vectors(ids)

    def vector_rows(self, ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of ``ids`` as rows, in order, in one call (ids all of one kind); a
        row of zeros for an id not in the index (removed since it was found)."""
        if not len(ids):
            return np.zeros((0, self.dim), dtype=np.float32)
        wanted = np.asarray(ids, dtype=np.int64)
        held = (wanted & HELD_BIT) != 0
        with self.lock:
            try:
                if held.all() or not held.any():
                    return (self.held if held[0] else self.index).reconstruct_batch(wanted)
            except RuntimeError:
                pass
        return rows_in_order(self.vectors(ids), ids, self.dim)

    def similarity(self, ids: Sequence[int], query: np.ndarray) -> dict[int, float]:
        """Exact inner products of the query with the stored vectors of ``ids`` (those present)."""
        return inner_products(self.vectors(ids), query)

    def search(self, query: np.ndarray, k: int, allowed: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """The top ``k`` searched vectors by inner product (held vectors are never returned)."""
        if self.index.ntotal == 0 or k <= 0:
            return []
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        params = None
        if allowed is not None:
            if not len(allowed):
                return []
            params = self.faiss.SearchParameters(sel=self.faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64)))
        # One query is one thread's work: FAISS's OpenMP split of a single flat-index query costs
        # more than it saves on two cores, and it would fight the BM25 thread that runs alongside
        # (97.7k vectors: 15 ms on one thread, 23 ms on two; benchmarks/README.md). The setting is
        # the calling thread's own, so embedding and bulk adds keep every core.
        threads = self.faiss.omp_get_max_threads()
        self.faiss.omp_set_num_threads(1)
        try:
            with self.lock:
                scores, ids = self.index.search(q, min(k, int(self.index.ntotal)), params=params)
        finally:
            self.faiss.omp_set_num_threads(threads)
        hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        hits.sort(key=lambda h: (-round(h[1], 6), h[0]))
        return hits
