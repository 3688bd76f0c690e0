"""A team's embedding cache on PostgreSQL: (embedder identity, sha256 of the embedded text) -> vector.

A second machine, or a second vault, holding the same text embeds nothing: the build asks its own
vector cache (``vectors.sqlite``) first and this one for what is missing, and writes what it embeds
to both (``local.vectorstore.FaissVectors.cached`` / ``remember``). Set ``embedding_cache_url`` (or
``WIKIMEM_EMBEDDING_CACHE_URL``) to a database any PostgreSQL will do for (no extension needed:
vectors are float32 bytes, looked up by key, never searched here); a laptop keeps its local stores
and reads vectors from the team's cache.

A cache, never a requirement: when the server cannot be reached the build embeds locally and says
so once (``problem``), and tries the server again after a while. Rows whose length does not match
the embedder's dimension are ignored, as in the local cache. The table's schema is versioned
(``pg.ensure_schema``): an older version is migrated when it can be, else dropped and made again
(the vectors are embedded again); a newer one (a teammate's newer wikimem) is left alone and this
process embeds locally, saying why once.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from . import pg

log = logging.getLogger(__name__)

COMPONENT = "embedding_cache"
SCHEMA_VERSION = 1
BATCH = 1000


def _create(db) -> None:
    """The table, or the one there adopted when its version row is gone (a hand reset of
    wikimem_schema, a restore of the table alone) and it has this version's columns: what was
    embedded is the expensive part of a database, not dropped for a missing row."""
    if pg.table_exists(db, "wikimem_embeddings"):
        if pg.columns_problem(db, "wikimem_embeddings", "embedder, hash, vec") is None:
            return
        db.execute("DROP TABLE wikimem_embeddings")
    db.execute("CREATE TABLE wikimem_embeddings (embedder text NOT NULL, hash text NOT NULL, vec bytea NOT NULL, "
               "PRIMARY KEY (embedder, hash))")


def _drop(db) -> None:
    db.execute("DROP TABLE IF EXISTS wikimem_embeddings")


class SharedEmbeddings:
    """The embedding cache at ``url`` (see the module docstring)."""

    def __init__(self, url: str):
        self.url = url
        self._held = pg.Held(url, "the shared embedding cache",
                             lambda db: pg.ensure_schema(db, COMPONENT, SCHEMA_VERSION, _create, _drop,
                                                                   what="the shared embedding cache"))

    @property
    def where(self) -> str:
        return pg.server_name(self.url)

    @property
    def problem(self) -> str | None:
        """Why the last call could not reach the server (None: it could)."""
        return self._held.problem

    def get(self, key: str, dim: int, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors by text hash, for those the cache holds at this dimension ({} when it is down)."""
        if not hashes:
            return {}
        size = 4 * dim
        out: dict[str, np.ndarray] = {}

        def read(db) -> None:
            for start in range(0, len(hashes), BATCH):
                part = list(hashes[start:start + BATCH])
                for h, blob in db.execute("SELECT hash, vec FROM wikimem_embeddings WHERE embedder = %s AND "
                                          "hash = ANY(%s)", (key, part)):
                    if len(blob) == size:
                        out[h] = np.frombuffer(bytes(blob), dtype=np.float32)
        try:
            self._held.run(read)
        except pg.DatabaseUnavailable as exc:
            log.info("%s", exc)
            return {}
        return out

    def put(self, key: str, hashes: Sequence[str], vectors: np.ndarray) -> bool:
        """Store freshly embedded vectors (row i for ``hashes[i]``); False when the server is down."""
        if not len(hashes):
            return True
        rows = [(key, h, vectors[i].astype(np.float32).tobytes()) for i, h in enumerate(hashes)]

        def write(db) -> None:
            with db.cursor() as cur:
                cur.executemany("INSERT INTO wikimem_embeddings (embedder, hash, vec) VALUES (%s, %s, %s) "
                                "ON CONFLICT (embedder, hash) DO NOTHING", rows)
        try:
            self._held.run(write)
        except pg.DatabaseUnavailable as exc:
            log.info("%s", exc)
            return False
        return True

    def count(self, key: str | None = None) -> int:
        """Vectors held (for ``key`` only, when given)."""
        def read(db) -> int:
            if key is None:
                return db.execute("SELECT count(*) FROM wikimem_embeddings").fetchone()[0]
            return db.execute("SELECT count(*) FROM wikimem_embeddings WHERE embedder = %s", (key,)).fetchone()[0]
        return self._held.run(read)

    def close(self) -> None:
        self._held.close()
