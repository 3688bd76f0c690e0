"""The manifest store: its schema, row codecs and ``Manifest``, which holds every statement over it.

The manifest (``manifest.sqlite``) holds per file its stat fields and hash, the parsed page (as
JSON, so readers such as lint never parse a note the cache already holds), the chunks, the FTS5
lexical index (``lexical.Lexical``), term document frequencies, passages and the link graph's edges.

Nothing outside ``wikimem/stores`` writes SQL: callers ask ``Manifest`` named questions (the build's
writes and the index's own reads here, search's in ``manifest_search.py``, everyone else's in
``manifest_reads.py``), so a column is
named in one place and another engine (Postgres, design.md §9) is a new ``Manifest``, not a hunt
through the code base. A ``Manifest`` is a thin object over one connection: the caller picks it
(``Cache.manifest`` for this thread's, ``Cache.reading()`` for a snapshot, ``Cache.writing()``
for a transaction), because a snapshot's reads must all go through the connection that holds it.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from ..model import Chunk, Page, page_from_record, page_to_record
from .filters import Filters, where_sql
from .manifest_reads import ManifestReads, _marks, select_in
from .manifest_search import ManifestSearch

if TYPE_CHECKING:
    from .lexical import Lexical

__all__ = ["Manifest", "ManifestReads", "ManifestSearch", "select_in", "stored_pages", "SCHEMA_SQL", "SCHEMA_VERSION", "VECTORS_SQL"]

SCHEMA_VERSION = 11

FILE_COLUMNS = ("path", "size", "mtime_ns", "sha256", "title", "type", "status", "aliases", "links", "tags",
                "errors", "note", "page")
CHUNK_COLUMNS = ("vid", "id", "path", "ord", "embed_hash", "title", "heading_path", "text", "start", '"end"',
                 "links", "tags", "type", "status", "created", "updated", "blocks", "speakers", "date", "context",
                 "aliases")

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL,
    title TEXT, type TEXT, status TEXT, aliases TEXT, links TEXT, tags TEXT, errors TEXT, note INTEGER NOT NULL,
    page TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    vid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, ord INTEGER NOT NULL,
    embed_hash TEXT NOT NULL, title TEXT, heading_path TEXT, text TEXT, start INTEGER, "end" INTEGER,
    links TEXT, tags TEXT, type TEXT, status TEXT, created TEXT, updated TEXT, blocks TEXT,
    speakers TEXT, date TEXT, context TEXT, aliases TEXT
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(embed_hash);
CREATE INDEX IF NOT EXISTS chunks_status ON chunks(status);
CREATE TABLE IF NOT EXISTS passages (pid INTEGER PRIMARY KEY, vid INTEGER NOT NULL, ord INTEGER NOT NULL,
                                     embed_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_vid ON passages(vid);
CREATE TABLE IF NOT EXISTS edges (src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, weight REAL NOT NULL,
                                  PRIMARY KEY (src, dst, type)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE TABLE IF NOT EXISTS terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""

VECTORS_SQL = """
CREATE TABLE IF NOT EXISTS vecs (embedder TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL,
                                 PRIMARY KEY (embedder, hash)) WITHOUT ROWID;
"""  # the vector cache (vectors.sqlite), read and written by vectorstore.FaissVectors only

INSERT_FILE = f"INSERT OR REPLACE INTO files ({','.join(FILE_COLUMNS)}) VALUES ({','.join('?' * len(FILE_COLUMNS))})"
INSERT_CHUNK = (f"INSERT OR REPLACE INTO chunks ({','.join(CHUNK_COLUMNS)}) "
                f"VALUES ({','.join('?' * len(CHUNK_COLUMNS))})")
INSERT_PASSAGE = "INSERT OR REPLACE INTO passages (pid, vid, ord, embed_hash, text) VALUES (?,?,?,?,?)"
INSERT_EDGE = "INSERT INTO edges (src, dst, type, weight) VALUES (?,?,?,?)"
UPDATE_STAT = "UPDATE files SET size=?, mtime_ns=? WHERE path=?"
SELECT_CHUNKS = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks"

GRAPH_FRONTMATTER_KEYS = ("supersedes", "sources", "source", "related")


def _dumps(value: Any) -> str:
    # default=str: YAML can hold values JSON cannot (binary, sets); the page record keeps their text
    return json.dumps(value, ensure_ascii=False, default=str)


def link_kind(link) -> str:
    return "supersedes" if link.key == "supersedes" else link.kind


def graph_links(page: Page) -> list:
    """The links that become graph edges: body links plus a few frontmatter keys."""
    return [l for l in page.links
            if l.target and (l.kind != "frontmatter" or l.key in GRAPH_FRONTMATTER_KEYS)]


def note_row(page: Page, size: int, mtime_ns: int) -> tuple:
    links = [[l.target, link_kind(l)] for l in graph_links(page)]
    return (page.path, size, mtime_ns, page.sha256, page.title, page.type, page.status, _dumps(list(page.aliases)),
            _dumps(links), _dumps(sorted({t.name for t in page.tags})), _dumps(list(page.errors)), 1,
            _dumps(page_to_record(page)))


def attachment_row(path: str, size: int, mtime_ns: int, sha256: str) -> tuple:
    return (path, size, mtime_ns, sha256, None, None, None, "[]", "[]", "[]", "[]", 0, None)


def chunk_row(vid: int, ordinal: int, embed_hash: str, c: Chunk) -> tuple:
    return (vid, c.id, c.path, ordinal, embed_hash, c.title, _dumps(c.heading_path),
            c.text, c.start, c.end, _dumps(c.links), _dumps(c.tags),
            c.type, c.status, c.created, c.updated, json.dumps(c.blocks), _dumps(c.speakers),
            c.date, c.context, _dumps(c.aliases))


def row_chunk(row: Sequence[Any]) -> Chunk:
    (_vid, cid, path, _ord, _h, title, heading_path, text, start, end, links, tags, type_, status, created,
     updated, blocks, speakers, date, context, aliases) = row
    return Chunk(cid, path, title, tuple(json.loads(heading_path)), text, start, end, tuple(json.loads(links)),
                 tuple(json.loads(tags)), type_, status, created, updated, tuple(json.loads(blocks)),
                 tuple(json.loads(speakers)), date, context or "", tuple(json.loads(aliases or "[]")))


def stored_pages(db: sqlite3.Connection, paths: Iterable[str] | None = None) -> dict[str, Page]:
    """Parsed pages as the last build stored them (links resolved as of that build)."""
    return Manifest(db).stored_pages(paths)


def _passages_where(column: str, held: bool) -> str:
    """Held (a note's, read back) or searched passages: the id bit belongs to the vector store."""
    from .vectors import held_sql
    return held_sql(column, held=held)


_KEPT: dict[tuple[int, str], tuple[sqlite3.Connection, tuple[int, int, int], Any]] = {}
_KEPT_LOCK = threading.Lock()


def _unchanged_since(db: sqlite3.Connection, what: str, read: Callable[[], Any]) -> Any:
    """``read()``, or what it gave last time on this connection when the database has not changed
    since: no other connection committed (``data_version``), this one changed no row
    (``total_changes``) and no schema (``schema_version``). A warm server asked for the manifest's
    meta several times a search read it from SQLite each time (a fifth of a search's time)."""
    try:
        stamp = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes,
                 db.execute("PRAGMA schema_version").fetchone()[0])
    except sqlite3.Error:
        return read()
    key = (id(db), what)
    kept = _KEPT.get(key)
    if kept is not None and kept[0] is db and kept[1] == stamp:
        return kept[2]
    value = read()
    with _KEPT_LOCK:
        if len(_KEPT) > 256:  # connections of finished threads: keep this small
            _KEPT.clear()
        _KEPT[key] = (db, stamp, value)
    return value


class Manifest(ManifestReads, ManifestSearch):
    """Every statement over the manifest, as named reads and writes over one connection ``db``."""

    def __new__(cls, db=None):
        """A connection may name the manifest that speaks its dialect (``pg_manifest.PgDB``: a
        ``PgManifest``), so callers that make a manifest from a connection need not know the engine."""
        own = getattr(db, "manifest_class", None)
        return object.__new__(own if cls is Manifest and own is not None else cls)

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    @property
    def lexical(self) -> "Lexical":
        """The FTS5 lexical index in this manifest, on the same connection (same transaction)."""
        from .lexical import Lexical
        return Lexical(self.db)

    # -- meta ------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(_unchanged_since(self.db, "meta", lambda: {k: json.loads(v) for k, v in
                                                                self.db.execute("SELECT key, value FROM meta")}))

    def set_meta(self, **values: Any) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in values.items()])

    def table_names(self) -> set[str]:
        return set(_unchanged_since(self.db, "tables", lambda: {r[0] for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}))

    # -- files, as the build and the cache read them ------------------------------------------
    def stored_pages(self, paths: Iterable[str] | None = None) -> dict[str, Page]:
        """Parsed pages as the last build stored them (links resolved as of that build)."""
        if paths is None:
            rows = self.db.execute("SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL ORDER BY path")
        else:
            rows = select_in(self.db, "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL "
                                      "AND path IN ({marks})", list(paths))
        return {path: page_from_record(json.loads(record)) for path, record in rows}

    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, tuple]:
        """path -> (path, size, mtime_ns, sha256, note) of every file (or of those among ``paths``)."""
        if paths is None:
            rows = self.db.execute("SELECT path, size, mtime_ns, sha256, note FROM files")
        else:
            rows = select_in(self.db, "SELECT path, size, mtime_ns, sha256, note FROM files WHERE path IN ({marks})",
                             paths)
        return {r[0]: r for r in rows}

    def file_stats(self) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime_ns) of every file."""
        return {r[0]: (r[1], r[2]) for r in self.db.execute("SELECT path, size, mtime_ns FROM files")}

    def aliases(self, paths: Sequence[str] | None = None) -> dict[str, list[str]]:
        """path -> aliases of every note (or of the notes among ``paths``)."""
        if paths is None:
            rows = self.db.execute("SELECT path, aliases FROM files WHERE note=1")
        else:
            rows = select_in(self.db, "SELECT path, aliases FROM files WHERE note=1 AND path IN ({marks})", paths)
        return {p: json.loads(a or "[]") for p, a in rows}

    def notes_among(self, paths: Sequence[str]) -> set[str]:
        return {r[0] for r in select_in(self.db, "SELECT path FROM files WHERE note=1 AND path IN ({marks})", paths)}

    def link_rows(self) -> list[tuple]:
        """(path, aliases, links, tags, note) of every file: what re-resolving every edge needs."""
        return self.db.execute("SELECT path, aliases, links, tags, note FROM files").fetchall()

    # -- files, written by the build ---------------------------------------------------------
    def put_file(self, row: tuple) -> None:
        self.db.execute(INSERT_FILE, row)

    def put_files(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(INSERT_FILE, rows)

    def update_stats(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """(size, mtime_ns, path) rows: a file whose bytes are unchanged got a new stat."""
        self.db.executemany(UPDATE_STAT, rows)

    def remove_file(self, path: str) -> None:
        """A file gone from the vault: its row, chunks and passages (its lexical rows go first)."""
        self.db.execute("DELETE FROM files WHERE path=?", (path,))
        self.remove_chunks(path)

    # -- chunks ------------------------------------------------------------------------------
    def put_chunks(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(INSERT_CHUNK, rows)

    def remove_chunks(self, path: str) -> None:
        """A page's chunks and their passages."""
        self.db.execute("DELETE FROM passages WHERE vid IN (SELECT vid FROM chunks WHERE path=?)", (path,))
        self.db.execute("DELETE FROM chunks WHERE path=?", (path,))

    def chunks_except(self, paths: set[str]) -> list[Chunk]:
        """Every chunk not of ``paths``, in table order (a repair re-indexes what it keeps)."""
        return [row_chunk(r) for r in self.db.execute(SELECT_CHUNKS) if r[2] not in paths]

    def all_chunks(self) -> list[Chunk]:
        return [row_chunk(r) for r in self.db.execute(SELECT_CHUNKS + " ORDER BY path, ord")]

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, Chunk]:
        return {row[1]: row_chunk(row) for row in select_in(self.db, SELECT_CHUNKS + " WHERE id IN ({marks})",
                                                            dict.fromkeys(ids))}

    def first_chunk(self, path: str, filters: Filters | None = None) -> Chunk | None:
        """A page's first chunk, if it passes ``filters`` (search's, see ``manifest_search``)."""
        where, args = where_sql(filters, self.dialect, "?")
        columns = ",".join(f"c.{name}" for name in CHUNK_COLUMNS)
        row = self.db.execute(f"SELECT {columns} FROM chunks c WHERE c.path=? AND c.ord = "
                              f"(SELECT min(ord) FROM chunks WHERE path=?) {where}", (path, path, *args)).fetchone()
        return row_chunk(row) if row else None

    def paths_by_id(self, ids: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...], int]]:
        """chunk id -> (page path, speakers, ordinal in the page)."""
        return {cid: (path, tuple(json.loads(speakers or "[]")), ordinal) for cid, path, speakers, ordinal in
                select_in(self.db, "SELECT id, path, speakers, ord FROM chunks WHERE id IN ({marks})", ids)}

    def chunk_ids_by_vid(self, vids: Iterable[int]) -> dict[int, str]:
        return dict(select_in(self.db, "SELECT vid, id FROM chunks WHERE vid IN ({marks})", vids))

    def vids_by_id(self, ids: Iterable[str]) -> dict[str, int]:
        return dict(select_in(self.db, "SELECT id, vid FROM chunks WHERE id IN ({marks})", ids))

    def transcript_vids(self, vids: Iterable[int]) -> set[int]:
        """Which of these chunk vids are transcript turns (they carry speakers)."""
        return {v for (v,) in select_in(self.db, "SELECT vid FROM chunks WHERE speakers != '[]' AND vid IN ({marks})",
                                        vids)}

    def chunk_count(self) -> int:
        """Exact, without a table scan: the lexical index's row count is kept in ``terms``."""
        row = self.db.execute("SELECT df FROM terms WHERE term=''").fetchone()
        return int(row[0]) if row else 0

    def chunk_rows(self) -> int:
        """``count(*)`` of the chunk table (a scan; ``chunk_count`` reads the kept count)."""
        return self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def passage_rows(self) -> int:
        return self.db.execute("SELECT count(*) FROM passages").fetchone()[0]

    # -- transcript speakers -----------------------------------------------------------------
    def speaker_counts(self, paths: Iterable[str]) -> tuple[int, int]:
        """(chunks with speakers, chunks without) among the chunks of ``paths``."""
        counts: Counter = Counter()
        for with_speakers, n in select_in(self.db, "SELECT speakers != '[]', count(*) FROM chunks "
                                          "WHERE path IN ({marks}) GROUP BY 1", sorted(paths)):
            counts[with_speakers] += n  # one row per group per batch of paths
        return counts[1], counts[0]

    def speakers(self) -> list[str]:
        """Every transcript speaker, sorted."""
        return sorted({s for (row,) in self.db.execute("SELECT DISTINCT speakers FROM chunks WHERE speakers != '[]'")
                       for s in json.loads(row)})

    def prose_chunk_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM chunks WHERE speakers = '[]'").fetchone()[0]

    # -- passages (which ones are held is the vector store's id bit: vectors.held_sql) ----------
    def put_passages(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(INSERT_PASSAGE, rows)

    def clear_passages(self) -> None:
        self.db.execute("DELETE FROM passages")

    def passage_owners(self, ids: Iterable[int]) -> dict[int, int]:
        """Which of these vector ids are passages, and of which chunk (passage id -> chunk vid)."""
        return dict(select_in(self.db, "SELECT pid, vid FROM passages WHERE pid IN ({marks})", ids))

    def passage_texts(self, pids: Iterable[int]) -> dict[int, str]:
        return dict(select_in(self.db, "SELECT pid, text FROM passages WHERE pid IN ({marks})", pids))

    def passages_of(self, vids: Iterable[int], held: bool) -> dict[int, int]:
        """The held (or searched) passages of these chunk vids: passage id -> chunk vid."""
        return dict(select_in(self.db, f"SELECT pid, vid FROM passages WHERE {_passages_where('pid', held)} "
                                       "AND vid IN ({marks})", vids))

    def chunks_with_passages(self, vids: Iterable[int], held: bool) -> set[int]:
        """Which of these chunk vids have held (or searched) passages."""
        return {v for (v,) in select_in(self.db, "SELECT DISTINCT vid FROM passages WHERE vid IN ({marks}) "
                                        f"AND {_passages_where('pid', held)}", vids)}

    def passage_count(self, held: bool) -> int:
        return self.db.execute(f"SELECT count(*) FROM passages WHERE {_passages_where('pid', held)}").fetchone()[0]

    # -- vector ids: one per chunk, one per passage -----------------------------------------------
    def wanted_ids(self) -> np.ndarray:
        """Every vector id the index should hold, sorted: one per chunk, one per passage. Read as one
        string per table and parsed in C: a row at a time is five times slower at ~500k ids."""
        from .vectors import sorted_ids
        text = ",".join(part for (part,) in self.db.execute("SELECT group_concat(vid) FROM chunks UNION ALL "
                                                            "SELECT group_concat(pid) FROM passages") if part)
        return sorted_ids(np.fromstring(text, dtype=np.int64, sep=",") if text else ())

    def wanted_count(self) -> int:
        """``len(wanted_ids())`` without reading them."""
        return self.db.execute("SELECT (SELECT count(*) FROM chunks) + (SELECT count(*) FROM passages)").fetchone()[0]

    def vector_ids_of(self, paths: Sequence[str]) -> list[int]:
        """The vector ids of ``paths``' chunks and passages as the manifest holds them now."""
        ids = [vid for (vid,) in select_in(self.db, "SELECT vid FROM chunks WHERE path IN ({marks})", paths)]
        ids += [pid for (pid,) in select_in(self.db, "SELECT pid FROM passages WHERE vid IN ({marks})", ids)]
        return ids

    def embed_hashes(self, ids: Sequence[int]) -> dict[int, str]:
        """The embed hash of these chunk and passage ids (ids of neither are left out)."""
        out = dict(select_in(self.db, "SELECT vid, embed_hash FROM chunks WHERE vid IN ({marks})", ids))
        out.update(select_in(self.db, "SELECT pid, embed_hash FROM passages WHERE pid IN ({marks})", ids))
        return out

    def id_pages(self, ids: Sequence[int]) -> dict[int, str]:
        """chunk or passage id -> the page it belongs to (ids of neither are left out)."""
        owner = dict(select_in(self.db, "SELECT vid, path FROM chunks WHERE vid IN ({marks})", ids))
        owner.update(select_in(self.db, "SELECT p.pid, c.path FROM passages p JOIN chunks c ON c.vid = p.vid "
                                        "WHERE p.pid IN ({marks})", ids))
        return owner

    def embed_texts(self, ids: list[int]) -> dict[str, str]:
        """Embed hash -> the text embedded, for chunk and passage ids."""
        texts = {row[4]: row_chunk(row).index_text()
                 for row in select_in(self.db, SELECT_CHUNKS + " WHERE vid IN ({marks})", ids)}
        texts.update(select_in(self.db, "SELECT embed_hash, text FROM passages WHERE pid IN ({marks})", ids))
        return texts

    # -- edges -------------------------------------------------------------------------------
    def has_edges(self) -> bool:
        return not self.db.execute("SELECT NOT EXISTS (SELECT 1 FROM edges)").fetchone()[0]

    def put_edges(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        self.db.executemany(INSERT_EDGE, rows)

    def remove_edges_from(self, path: str) -> None:
        self.db.execute("DELETE FROM edges WHERE src=?", (path,))

    def clear_edges(self) -> None:
        self.db.execute("DELETE FROM edges")

    def neighbour_weights(self, paths: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """For each of ``paths``: (other page, summed weight) of every page edge at it, either
        direction (no tags); one question for them all (on a database server, one round trip)."""
        paths = list(dict.fromkeys(paths))
        out: dict[str, list[tuple[str, float]]] = {p: [] for p in paths}
        marks = _marks(paths)
        if paths:
            for me, other, weight in self.db.execute(
                    "SELECT me, other, sum(weight) FROM ("
                    f" SELECT src AS me, dst AS other, weight FROM edges WHERE src IN ({marks}) AND type != 'tagged'"
                    f" UNION ALL SELECT dst AS me, src AS other, weight FROM edges WHERE dst IN ({marks})"
                    " AND type != 'tagged') AS e GROUP BY me, other", (*paths, *paths)):
                out[me].append((other, weight))
        return out

    def graph_rows(self) -> tuple[list[str], list[tuple[str, str, str, float]]]:
        """(every note's path, sorted; every edge, sorted): what an igraph Graph is built from."""
        pages = [r[0] for r in self.db.execute("SELECT path FROM files WHERE note=1 ORDER BY path")]
        return pages, self.all_edges()
