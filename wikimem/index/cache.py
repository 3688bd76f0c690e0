"""Cache: the manifest plus lazily opened readers (lexical, vectors, graph, embedder).

Readers open the last committed state and re-open it when a writer has committed since
(fingerprints changed), so one long-lived process (MCP server, watch mode) stays current.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Iterable, Sequence

from ..errors import EmbedderError
from ..model import Chunk
from .store import CacheDir, select_in

log = logging.getLogger(__name__)

CHUNK_COLUMNS = ("vid", "id", "path", "ord", "embed_hash", "title", "heading_path", "text", "start", '"end"',
                 "links", "tags", "type", "status", "created", "updated", "blocks", "speakers", "date", "context",
                 "aliases")


def chunk_row(vid: int, ordinal: int, embed_hash: str, c: Chunk) -> tuple:
    return (vid, c.id, c.path, ordinal, embed_hash, c.title, json.dumps(c.heading_path, ensure_ascii=False),
            c.text, c.start, c.end, json.dumps(c.links, ensure_ascii=False), json.dumps(c.tags, ensure_ascii=False),
            c.type, c.status, c.created, c.updated, json.dumps(c.blocks), json.dumps(c.speakers, ensure_ascii=False),
            c.date, c.context, json.dumps(c.aliases, ensure_ascii=False))


def row_chunk(row: Sequence[Any]) -> Chunk:
    (_vid, cid, path, _ord, _h, title, heading_path, text, start, end, links, tags, type_, status, created,
     updated, blocks, speakers, date, context, aliases) = row
    return Chunk(cid, path, title, tuple(json.loads(heading_path)), text, start, end, tuple(json.loads(links)),
                 tuple(json.loads(tags)), type_, status, created, updated, tuple(json.loads(blocks)),
                 tuple(json.loads(speakers)), date, context or "", tuple(json.loads(aliases or "[]")))


class Cache(CacheDir):
    def __init__(self, vault):
        super().__init__(vault.root)
        self.vault = vault
        self._vectors = None
        self._vectors_fp = None
        self._embedder = None
        self._embedder_error: str | None = None

    # -- embedder --------------------------------------------------------------------------
    def embedder(self):
        """The configured embedder, or None (with ``embedder_error`` saying why)."""
        if self._embedder is None and self._embedder_error is None:
            from ..embed import get_embedder
            try:
                self._embedder = get_embedder(self.vault.settings)
                if self._embedder is None:
                    self._embedder_error = "no embedder configured (embedder = none)"
            except EmbedderError as exc:
                self._embedder_error = str(exc)
        return self._embedder

    @property
    def embedder_error(self) -> str | None:
        return self._embedder_error

    # -- readers ---------------------------------------------------------------------------
    def vectors(self, dim: int):
        """The FAISS index as last committed, or None when there is none yet."""
        from .store import fingerprint
        from .vectors import VectorIndex
        fp = self.meta().get("artifacts", {}).get("faiss")
        if fp is None or fp != fingerprint(self.faiss_path):
            self._vectors = None
            self._vectors_fp = None
            return None
        if self._vectors is None or fp != self._vectors_fp:
            self._vectors = VectorIndex.load(self.faiss_path, dim)
            self._vectors_fp = fp
        return self._vectors

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

    def reader(self):
        """A second, read-only connection for work done in another thread (the lexical side of
        a hybrid search), so the two never queue on one connection."""
        import threading
        local = self.__dict__.setdefault("_local", threading.local())
        if getattr(local, "db", None) is None:
            import sqlite3
            self.db  # make sure the schema exists
            local.db = sqlite3.connect(f"file:{self.manifest_path}?mode=ro", uri=True, check_same_thread=False)
            self.__dict__.setdefault("_readers", []).append(local.db)
        return local.db

    def chunk_ids_by_vid(self, vids: Iterable[int]) -> dict[int, str]:
        return dict(select_in(self.db, "SELECT vid, id FROM chunks WHERE vid IN ({marks})", vids))

    def passage_owners(self, ids: Iterable[int]) -> dict[int, int]:
        """Which of these vector ids are passages, and of which chunk (passage id -> chunk vid)."""
        return dict(select_in(self.db, "SELECT pid, vid FROM passages WHERE pid IN ({marks})", ids))

    def chunks_with_passages(self, vids: Iterable[int]) -> set[int]:
        return {v for (v,) in select_in(self.db, "SELECT DISTINCT vid FROM passages WHERE vid IN ({marks})", vids)}

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
        for db in self.__dict__.pop("_readers", []):
            db.close()
        self.__dict__.pop("_local", None)
        super().close()
