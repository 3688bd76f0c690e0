"""The vector store on PostgreSQL + pgvector: ``vectorstore.VectorStore`` over a table of the vault's schema.

One row per vector id (a chunk's or a passage's), with ``held`` set for a note's held passages
(read back, never searched), as ``vectors.HELD_BIT`` says locally; the table is partitioned by it,
so a search's scan reads only the searched rows (``create_table``). The column is ``vector``
(float32) by default, so scores are FAISS's to the last digits and every ranking the local store
gives; ``halfvec`` (setting ``pg_vector_type``) takes half the table and 57 % of the HNSW index at
1M rows with the same exact top-10 there (benchmarks/bench_pg_scale.py), but scores move in the
4th decimal.

Search is exact (a scan) while the table is small, which is what the local FAISS flat index does
too, so rankings agree; past ``HNSW_FROM`` rows ``ensure_index`` builds an HNSW index (inner
product) on the searched partition and searches use it, with ``ef_search`` raised so recall@10 stays >= 0.95 (measured
there). A filtered search (``allowed``) scans the allowed rows exactly: an HNSW scan with a
filter returns fewer than k rows when the filter is selective.
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from ..vectors import HELD_BIT, inner_products, rows_in_order

HNSW_FROM = 100_000  # rows: below, an exact scan is as fast as FAISS's flat index here (60 ms at 100k)
EF_SEARCH = 100  # recall@10 >= 0.95 at 100k (bench_pg_scale: ef 60 for vector, 100 for halfvec)
KINDS = ("halfvec", "vector")
PACKED_BATCH = 20_000  # rows per packed read (``vectors``): ~31 MB at 384-d, far below bytea's 1 GB


_SERIALS = itertools.count(1)


class ContentCache:
    """Vectors already read, by what names their content: a vector id hashes the text embedded
    (``index.build.chunk_vid``, ``passage_id``), so in one vault under one embedder (and column type
    and width) an id's vector never changes, whichever process wrote it; another is another key.
    A hybrid search reads ~1,300 vectors by id (candidates' chunks and held passages): ~12 ms a
    search on a 500-page vault, the largest part of PostgreSQL's time over the local store's,
    which holds them in memory. Least recently used ids go first past ``limit`` (float16 kept:
    ~50 MB at 64k 384-d vectors, what a local store holds for a ~10k-chunk vault)."""

    def __init__(self, limit: int = 65_536):
        import collections
        import threading
        self.limit = limit
        self._rows: "collections.OrderedDict[tuple, np.ndarray]" = collections.OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: tuple, ids: list[int]) -> tuple[dict[int, np.ndarray], list[int]]:
        """(the vectors held for ``ids``, the ids not held)."""
        found: dict[int, np.ndarray] = {}
        missing: list[int] = []
        with self._lock:
            for i in ids:
                vec = self._rows.get((key, i))
                if vec is None:
                    missing.append(i)
                else:
                    self._rows.move_to_end((key, i))
                    found[i] = vec
        return found, missing

    def keep(self, key: tuple, rows: dict[int, np.ndarray]) -> None:
        with self._lock:
            for i, vec in rows.items():
                self._rows[(key, i)] = vec
            while len(self._rows) > self.limit:
                self._rows.popitem(last=False)


CONTENT_CACHE = ContentCache()


def create_table(db, dim: int, kind: str) -> None:
    """``vecs``, partitioned by ``held``: a search scans only ``vecs_searched`` (a tldr vault holds
    five held passages for each searched row, and an exact scan read them all: 20 ms of a 9k-chunk
    search). Whether an id is held is a bit of the id (``HELD_BIT``), so (vid, held) is as unique
    as vid."""
    db.execute(f"CREATE TABLE IF NOT EXISTS vecs (vid bigint NOT NULL, held boolean NOT NULL, "
               f"vec {column_type(kind, dim)} NOT NULL, PRIMARY KEY (vid, held)) PARTITION BY LIST (held)")
    db.execute("CREATE TABLE IF NOT EXISTS vecs_searched PARTITION OF vecs FOR VALUES IN (false)")
    db.execute("CREATE TABLE IF NOT EXISTS vecs_held PARTITION OF vecs FOR VALUES IN (true)")


def column_type(kind: str, dim: int) -> str:
    return f"{kind}({int(dim)})"


def partition_vecs(db) -> None:
    """Schema step 1 -> 2 (``pg_tables.MIGRATIONS``): an unpartitioned ``vecs`` of version 1 into
    the two partitions, rows kept (no re-embedding, no rebuild)."""
    row = db.execute("SELECT format_type(a.atttypid, a.atttypmod), c.relkind FROM pg_attribute a "
                     "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'vecs' "
                     "AND c.relnamespace = current_schema()::regnamespace AND a.attname = 'vec'").fetchone()
    if row is None or row[1] == "p":
        return  # no vectors yet (made when the first are saved), or partitioned already
    db.execute("DROP INDEX IF EXISTS vecs_hnsw")
    db.execute("ALTER TABLE vecs RENAME TO vecs_v1")
    kind, _, dim = row[0].partition("(")
    create_table(db, int(dim.rstrip(")")), kind)
    db.execute("INSERT INTO vecs (vid, held, vec) SELECT vid, held, vec FROM vecs_v1")
    db.execute("DROP TABLE vecs_v1")


def _array(value) -> np.ndarray:
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


class PgVectorIndex:
    """``VectorStore`` on PostgreSQL (see the module docstring). ``db``: a psycopg connection on the
    vault's schema, or a function giving the calling thread's (a cache's readers and its writer
    each use their own, in their own transaction); ``kind``: the column type, "halfvec" or "vector".
    ``serial``/``searched_version`` key what is derived from the vectors (graph/semantic.py):
    ``version_of`` names the committed state (the manifest's ``vectors_sig``) when given."""

    def __init__(self, db, dim: int, kind: str = "halfvec", version_of=None, create: bool = True, memo=None,
                 recorded=None, content_key=None):
        if kind not in KINDS:
            raise ValueError(f"vector column type {kind!r}: choose {', '.join(KINDS)}")
        self._db = db
        self.dim, self.kind = int(dim), kind
        self._version_of = version_of
        # memo(key, compute): the cache's per-snapshot answers (``PgCache.memo``), for whether
        # the HNSW index exists; outside a snapshot it is asked every time
        self._memo = memo or (lambda key, compute: compute())
        # recorded(): (rows, held rows) as the last committed build recorded them, for a reader
        # (None for a writer, who counts): what a local reader's loaded index holds, without a
        # count(*) over every row (~10 ms each at 54k rows)
        self._recorded = recorded or (lambda: None)
        # content_key(): the database, vault and embedder the vectors belong to, under which an
        # id's vector is fixed (``ContentCache``); None: every read goes to the server
        self._content_key = content_key or (lambda: None)
        self.serial = next(_SERIALS)
        self.version = 0
        if create:
            create_table(self.db, self.dim, kind)

    @property
    def db(self):
        conn = self._db() if callable(self._db) else self._db
        if not getattr(conn, "_wikimem_vector_types", False):
            from pgvector.psycopg import register_vector
            register_vector(conn)
            conn._wikimem_vector_types = True
        return conn

    @property
    def searched_version(self):
        return self._version_of() if self._version_of is not None else self.version

    def _as_param(self, rows: np.ndarray):
        from pgvector import HalfVector, Vector
        make = HalfVector if self.kind == "halfvec" else Vector
        return [make(np.asarray(r, dtype=np.float32)) for r in rows]

    # -- writes --------------------------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        if not len(ids):
            return
        ids = np.asarray(ids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        held = (ids & HELD_BIT) != 0
        if held.any():  # held passages are kept at float16 locally (vectors.HeldStore): the same values here
            vectors = vectors.copy()
            vectors[held] = vectors[held].astype(np.float16).astype(np.float32)
        with self.db.cursor() as cur:
            cur.executemany("INSERT INTO vecs (vid, held, vec) VALUES (%s, %s, %s) ON CONFLICT (vid, held) "
                            "DO UPDATE SET vec = excluded.vec",
                            list(zip(ids.tolist(), held.tolist(), self._as_param(vectors))))
        self.version += 1

    def remove(self, ids: Sequence[int]) -> None:
        if len(ids):
            self.db.execute("DELETE FROM vecs WHERE vid = ANY(%s)", ([int(i) for i in ids],))
            self.version += 1

    def ensure_index(self, rows_from: int = HNSW_FROM, total: int | None = None) -> bool:
        """Build the HNSW index once the table holds ``rows_from`` rows; returns whether one exists.
        ``total``: the rows, when the caller has just counted them (one round trip fewer)."""
        if (self.ntotal if total is None else total) < rows_from:
            return self._has_index()
        ops = "halfvec_ip_ops" if self.kind == "halfvec" else "vector_ip_ops"
        self.db.execute(f"CREATE INDEX IF NOT EXISTS vecs_hnsw ON vecs_searched USING hnsw (vec {ops})")
        return True

    def _large(self) -> bool:
        """Whether the last build recorded ``HNSW_FROM`` rows or more (True when unknown: a writer). Below
        it no index was built, or one outlived rows since deleted: an exact scan is right either way, and
        a search of a small vault does not ask the catalogue (a round trip of ~0.6 ms in a ~20 ms search)."""
        recorded = self._recorded()
        return recorded is None or recorded[0] >= HNSW_FROM

    def _has_index(self) -> bool:
        return self._memo((self.serial, "hnsw"), lambda: bool(self.db.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'vecs_hnsw'").fetchone()))

    # -- reads ---------------------------------------------------------------------------------
    @property
    def ntotal(self) -> int:
        recorded = self._recorded()
        if recorded is not None:
            return recorded[0]
        return int(self.db.execute("SELECT count(*) FROM vecs").fetchone()[0])

    @property
    def held_total(self) -> int:
        recorded = self._recorded()
        if recorded is not None:
            return recorded[1]
        return int(self.db.execute("SELECT count(*) FROM vecs WHERE held").fetchone()[0])

    def ids(self) -> np.ndarray:
        rows = self.db.execute("SELECT vid FROM vecs ORDER BY held, vid").fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.int64)

    def census(self) -> tuple[np.ndarray, int]:
        """``(ids(), held_total)`` in one round trip: what a save records (the ids' signature, the
        rows, the held rows) asked ``count(*)`` five times and the ids once."""
        rows = self.db.execute("SELECT vid, held FROM vecs ORDER BY held, vid").fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.int64), sum(1 for r in rows if r[1])

    def searched(self) -> tuple[np.ndarray, np.ndarray]:
        rows = self.db.execute("SELECT vid, vec FROM vecs WHERE NOT held ORDER BY vid", binary=True).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray([r[0] for r in rows], dtype=np.int64), np.stack([_array(r[1]) for r in rows])

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The rows of ``ids`` (those that exist). Asked as one packed value per batch: each row's
        id and vector in binary (``int8send``, pgvector's ``*_send``: a 4-byte header, then
        big-endian floats) joined by the server, fetched in binary and cut by numpy. Row by row,
        pgvector's loader cost ~4 µs a row in Python; the packed value in text form (hex) or
        sorted by the server cost 3x this; a hybrid search reads ~1,500 held passages."""
        ids = [int(i) for i in ids]
        owner = self._content_key()
        key = (owner, self.kind, self.dim)
        if owner:
            held, ids = CONTENT_CACHE.take(key, ids)
            if not ids:
                return held
        out: dict[int, np.ndarray] = {}
        record = np.dtype([("vid", ">i8"), ("header", "V4"),
                           ("vec", ">f2" if self.kind == "halfvec" else ">f4", (self.dim,))])
        for start in range(0, len(ids), PACKED_BATCH):
            blob = self.db.execute(
                f"SELECT string_agg(int8send(vid) || {self.kind}_send(vec), ''::bytea) FROM vecs WHERE vid = ANY(%s)",
                (ids[start:start + PACKED_BATCH],), binary=True).fetchone()[0]
            if blob:
                rows = np.frombuffer(blob, dtype=record)
                out.update(zip(rows["vid"].tolist(), rows["vec"].astype(np.float32)))
        if owner:
            CONTENT_CACHE.keep(key, out)
            out.update(held)
        return out

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        return self.vectors(ids)

    def vector_rows(self, ids: Sequence[int]) -> np.ndarray:
        if not len(ids):
            return np.zeros((0, self.dim), dtype=np.float32)
        return rows_in_order(self.vectors(ids), ids, self.dim)

    def similarity(self, ids: Sequence[int], query: np.ndarray) -> dict[int, float]:
        return inner_products(self.vectors(ids), query)

    def search(self, query: np.ndarray, k: int, allowed: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """The top ``k`` searched vectors by inner product, best first, ties by id (as FAISS's
        flat index orders them: scores compared to 6 decimals)."""
        if k <= 0 or (allowed is not None and not len(allowed)):
            return []
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        q = self._as_param(query.reshape(1, -1))[0]
        cast = f"%s::{self.kind}"
        # the server ranks; the scores are computed here in float32 from the stored rows, as FAISS
        # computes them (pgvector's own sum runs in another order: ~1e-6 off, which min-max
        # normalisation over close candidates can make 1e-5)
        if allowed is not None:
            sql = ("WITH c AS MATERIALIZED (SELECT vid, vec FROM vecs WHERE NOT held AND vid = ANY(%s)) "
                   f"SELECT vid, vec FROM c ORDER BY vec <#> {cast}, vid LIMIT %s")
            rows = self.db.execute(sql, ([int(i) for i in allowed], q, k), binary=True).fetchall()
        elif self._large() and self._has_index():
            with self.db.transaction():
                self.db.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, k)}")
                rows = self.db.execute(f"SELECT vid, vec FROM vecs WHERE NOT held "
                                       f"ORDER BY vec <#> {cast} LIMIT %s", (q, k), binary=True).fetchall()
        else:
            rows = self.db.execute(f"SELECT vid, vec FROM vecs WHERE NOT held "
                                   f"ORDER BY vec <#> {cast}, vid LIMIT %s", (q, k), binary=True).fetchall()
        if not rows:
            return []
        scores = np.stack([_array(vec) for _, vec in rows]) @ query
        hits = [(int(v), float(s)) for (v, _), s in zip(rows, scores)]
        hits.sort(key=lambda h: (-round(h[1], 6), h[0]))
        return hits
