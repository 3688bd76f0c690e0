"""The manifest's SQL: schema, named columns and every statement that writes it.

The manifest (``manifest.sqlite``) holds per file its stat fields and hash, the parsed page (as
JSON, so readers such as lint never parse a note the cache already holds), the chunks, the FTS5
lexical index (``lexical.py``), term document frequencies, passages and the link graph's edges.
Everything is written through the statements here, so a column is named in one place.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable, Iterator, Sequence

from ..model import Chunk, Page, page_from_record, page_to_record

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
"""

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
    if paths is None:
        rows = db.execute("SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL ORDER BY path")
    else:
        rows = select_in(db, "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL AND path IN ({marks})",
                         list(paths))
    return {path: page_from_record(json.loads(record)) for path, record in rows}


def select_in(db: sqlite3.Connection, sql: str, values: Sequence, *args: Any) -> Iterator[tuple]:
    """Rows of ``sql`` (which holds one ``{marks}`` placeholder list) for ``values``, asked in
    batches of 500 so the statement stays under SQLite's variable limit; ``args`` come first."""
    values = list(values)
    for start in range(0, len(values), 500):
        part = values[start:start + 500]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), [*args, *part])
