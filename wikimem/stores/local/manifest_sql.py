"""The manifest's statements in SQLite's dialect: what ``local.manifest.LocalManifest`` asks.

Each name is one question of ``stores.manifest.Manifest`` (the logic that shapes the rows is shared,
above both engines); ``postgres/manifest_sql.py`` holds the same names in PostgreSQL's own dialect.
Nothing rewrites one file's text into the other's: a statement added here and not there fails the
contract suite (tests/test_store_contract.py) on the engine that lacks it, not in production.

Conventions: ``?`` placeholders; a ``{marks}`` list is filled by ``select_in`` (batches of 500,
under SQLite's variable limit) and its values come last; the functions return (sql, args) for the
questions whose text depends on their arguments.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..filters import Filters
from ..manifest import CHUNK_COLUMNS, FILE_COLUMNS
from ..vectors import HELD_BIT


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def held(column: str, is_held: bool) -> str:
    """Held ids (a note's passages) have HELD_BIT set: they are at least HELD_BIT (ids < 2**62)."""
    return f"{column} {'>=' if is_held else '<'} {HELD_BIT}"


def where(filters: Filters | None) -> tuple[str, list[Any]]:
    """``filters`` as ``AND`` terms over ``chunks`` aliased ``c`` (SQLite's LIKE is ASCII
    case-insensitive: a folder typed in another case matches)."""
    if filters is None:
        return "", []
    sql: list[str] = []
    args: list[Any] = []
    if not filters.include_superseded:
        sql.append("AND c.status != 'superseded'")
    if filters.folder:
        sql.append("AND c.path LIKE ? ESCAPE '\\'")
        args.append(_like(filters.folder.strip("/")) + "/%")
    if filters.type:
        sql.append("AND c.type = ?")
        args.append(filters.type)
    for tag in filters.tags:  # the tag or one nested below it (tag:a matches a/b, as Obsidian's search)
        sql.append("AND (c.tags LIKE ? ESCAPE '\\' OR c.tags LIKE ? ESCAPE '\\')")
        tag = tag.lstrip("#").lower()
        args += ["%" + _like(f'"{tag}"') + "%", "%" + _like(f'"{tag}/') + "%"]
    day = "substr(coalesce(c.updated, c.date, c.created, ''), 1, 10)"
    if filters.since:
        sql.append(f"AND {day} >= ?")
        args.append(filters.since)
    if filters.until:
        sql.append(f"AND {day} != '' AND {day} <= ?")
        args.append(filters.until)
    for chosen in (filters.paths, filters.pages):
        if chosen is not None:
            paths = sorted(chosen)
            sql.append(f"AND c.path IN ({_marks(len(paths))})" if paths else "AND 0")
            args.extend(paths)
    if filters.not_pages:
        paths = sorted(filters.not_pages)
        sql.append(f"AND c.path NOT IN ({_marks(len(paths))})")
        args.extend(paths)
    return " ".join(sql), args


# -- the tables (manifest*.sqlite; vectors.sqlite for the vector cache) ----------------------
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
"""  # the vector cache (vectors.sqlite), read and written by local.vectorstore.FaissVectors only


# -- meta ----------------------------------------------------------------------------------
META = "SELECT key, value FROM meta"
SET_META = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
TABLES = "SELECT name FROM sqlite_master WHERE type='table'"

# -- files ---------------------------------------------------------------------------------
STORED_PAGES = "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL ORDER BY path"
STORED_PAGES_IN = "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL AND path IN ({marks})"
FILE_STATES = "SELECT path, size, mtime_ns, sha256, note FROM files"
FILE_STATES_IN = "SELECT path, size, mtime_ns, sha256, note FROM files WHERE path IN ({marks})"
FILE_STATS = "SELECT path, size, mtime_ns FROM files"
ALIASES = "SELECT path, aliases FROM files WHERE note=1"
ALIASES_IN = "SELECT path, aliases FROM files WHERE note=1 AND path IN ({marks})"
NOTES_AMONG = "SELECT path FROM files WHERE note=1 AND path IN ({marks})"
LINK_ROWS = "SELECT path, aliases, links, tags, note FROM files"
PUT_FILE = f"INSERT OR REPLACE INTO files ({','.join(FILE_COLUMNS)}) VALUES ({_marks(len(FILE_COLUMNS))})"
UPDATE_STAT = "UPDATE files SET size=?, mtime_ns=? WHERE path=?"
REMOVE_FILE = "DELETE FROM files WHERE path=?"

# -- chunks --------------------------------------------------------------------------------
PUT_CHUNK = f"INSERT OR REPLACE INTO chunks ({','.join(CHUNK_COLUMNS)}) VALUES ({_marks(len(CHUNK_COLUMNS))})"
REMOVE_CHUNK_PASSAGES = "DELETE FROM passages WHERE vid IN (SELECT vid FROM chunks WHERE path=?)"
REMOVE_CHUNKS = "DELETE FROM chunks WHERE path=?"
SELECT_CHUNKS = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks"
ALL_CHUNKS = SELECT_CHUNKS + " ORDER BY path, ord"
CHUNKS_BY_ID_IN = SELECT_CHUNKS + " WHERE id IN ({marks})"
CHUNKS_BY_VID_IN = SELECT_CHUNKS + " WHERE vid IN ({marks})"
PATHS_BY_ID_IN = "SELECT id, path, speakers, ord FROM chunks WHERE id IN ({marks})"
CHUNK_IDS_BY_VID_IN = "SELECT vid, id FROM chunks WHERE vid IN ({marks})"
VIDS_BY_ID_IN = "SELECT id, vid FROM chunks WHERE id IN ({marks})"
TRANSCRIPT_VIDS_IN = "SELECT vid FROM chunks WHERE speakers != '[]' AND vid IN ({marks})"
CHUNK_COUNT = "SELECT df FROM terms WHERE term=''"
CHUNK_ROWS = "SELECT count(*) FROM chunks"
PASSAGE_ROWS = "SELECT count(*) FROM passages"
SPEAKER_COUNTS_IN = "SELECT speakers != '[]', count(*) FROM chunks WHERE path IN ({marks}) GROUP BY 1"
SPEAKERS = "SELECT DISTINCT speakers FROM chunks WHERE speakers != '[]'"
PROSE_CHUNK_COUNT = "SELECT count(*) FROM chunks WHERE speakers = '[]'"


def first_chunk(path: str, filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    columns = ",".join(f"c.{name}" for name in CHUNK_COLUMNS)
    return (f"SELECT {columns} FROM chunks c WHERE c.path=? AND c.ord = (SELECT min(ord) FROM chunks WHERE path=?) "
            f"{fragment}", [path, path, *args])


# -- passages ------------------------------------------------------------------------------
PUT_PASSAGE = "INSERT OR REPLACE INTO passages (pid, vid, ord, embed_hash, text) VALUES (?,?,?,?,?)"
CLEAR_PASSAGES = "DELETE FROM passages"
PASSAGE_OWNERS_IN = "SELECT pid, vid FROM passages WHERE pid IN ({marks})"
PASSAGE_TEXTS_IN = "SELECT pid, text FROM passages WHERE pid IN ({marks})"
PASSAGE_ROWS_IN = "SELECT pid, vid, text FROM passages WHERE pid IN ({marks})"


def passages_of(is_held: bool) -> str:
    return f"SELECT pid, vid FROM passages WHERE {held('pid', is_held)} AND vid IN ({{marks}})"


def passage_rows_of(is_held: bool) -> str:
    return f"SELECT pid, vid, text FROM passages WHERE {held('pid', is_held)} AND vid IN ({{marks}})"


def chunks_with_passages(is_held: bool) -> str:
    return f"SELECT DISTINCT vid FROM passages WHERE {held('pid', is_held)} AND vid IN ({{marks}})"


def passage_count(is_held: bool) -> str:
    return f"SELECT count(*) FROM passages WHERE {held('pid', is_held)}"


# -- vector ids ----------------------------------------------------------------------------
WANTED_IDS = "SELECT group_concat(vid) FROM chunks UNION ALL SELECT group_concat(pid) FROM passages"
WANTED_COUNT = "SELECT (SELECT count(*) FROM chunks) + (SELECT count(*) FROM passages)"
CHUNK_VIDS_OF_PATHS_IN = "SELECT vid FROM chunks WHERE path IN ({marks})"
PASSAGE_IDS_OF_VIDS_IN = "SELECT pid FROM passages WHERE vid IN ({marks})"
CHUNK_HASHES_IN = "SELECT vid, embed_hash FROM chunks WHERE vid IN ({marks})"
PASSAGE_HASHES_IN = "SELECT pid, embed_hash FROM passages WHERE pid IN ({marks})"
CHUNK_PAGES_IN = "SELECT vid, path FROM chunks WHERE vid IN ({marks})"
PASSAGE_PAGES_IN = "SELECT p.pid, c.path FROM passages p JOIN chunks c ON c.vid = p.vid WHERE p.pid IN ({marks})"
PASSAGE_EMBED_TEXTS_IN = "SELECT embed_hash, text FROM passages WHERE pid IN ({marks})"

# -- edges ---------------------------------------------------------------------------------
HAS_EDGES = "SELECT EXISTS (SELECT 1 FROM edges)"
PUT_EDGE = "INSERT INTO edges (src, dst, type, weight) VALUES (?,?,?,?)"
REMOVE_EDGES_FROM = "DELETE FROM edges WHERE src=?"
CLEAR_EDGES = "DELETE FROM edges"
GRAPH_PAGES = "SELECT path FROM files WHERE note=1 ORDER BY path"


def neighbour_weights(paths: Sequence[str]) -> tuple[str, list]:
    marks = _marks(len(paths))
    return ("SELECT me, other, sum(weight) FROM ("
            f" SELECT src AS me, dst AS other, weight FROM edges WHERE src IN ({marks}) AND type != 'tagged'"
            f" UNION ALL SELECT dst AS me, src AS other, weight FROM edges WHERE dst IN ({marks})"
            " AND type != 'tagged') AS e GROUP BY me, other", [*paths, *paths])


# -- other readers' questions (manifest_reads) -----------------------------------------------
FILE_PATHS = "SELECT path FROM files"
FILE_HASHES = "SELECT path, sha256, size, mtime_ns FROM files"
FILE_STATS_AFTER = "SELECT path, size, mtime_ns, sha256 FROM files WHERE path > ? ORDER BY path LIMIT ?"
FILE_PATHS_UNDER = "SELECT path FROM files WHERE substr(path, 1, ?) = ?"
FILE_ROWS = "SELECT path, note, type, status, size, aliases, links, tags FROM files ORDER BY path"
NOTE_PATHS = "SELECT path FROM files WHERE note=1"
PAGE_COUNT = "SELECT count(*) FROM files WHERE note=1"
PAGES = "SELECT path, title, type, status, tags FROM files WHERE note=1 ORDER BY path"
PAGES_IN = "SELECT path, title, type, status, tags FROM files WHERE note=1 AND path IN ({marks})"
PAGE_TITLES_AND_TAGS = "SELECT path, title, tags FROM files WHERE note=1 ORDER BY path"
PAGE_NAMES = "SELECT path, title, aliases FROM files WHERE note=1"
PAGE_NAMES_AND_KINDS = "SELECT path, title, aliases, type, status FROM files WHERE note=1 ORDER BY path"
TITLES_WITH_ALIASES = "SELECT title, aliases FROM files WHERE aliases IS NOT NULL AND aliases NOT IN ('', '[]')"
TITLE_AND_STATUS = "SELECT title, status FROM files WHERE note=1 AND path=?"
PAGE_KINDS = "SELECT path, type, status FROM files WHERE note=1"
PAGE_MTIMES = "SELECT path, title, type, status, mtime_ns FROM files WHERE note=1"
PAGE_DATES = "SELECT path, max(created), max(updated) FROM chunks GROUP BY path"
PAGE_DATES_IN = "SELECT path, max(created), max(updated) FROM chunks WHERE path IN ({marks}) GROUP BY path"
PAGE_PROBLEMS = "SELECT path, errors FROM files WHERE note=1 AND errors NOT IN ('[]', '')"
MEMORY_KINDS = "SELECT json_extract(page, '$.frontmatter.data.kind') FROM files WHERE note=1 AND type='memory'"
LINKED_OUT = "SELECT DISTINCT dst FROM edges WHERE src = ?"
LINKED_IN = "SELECT DISTINCT src FROM edges WHERE dst = ?"
SUPERSEDED_BY = "SELECT src FROM edges WHERE dst=? AND type='supersedes' ORDER BY src LIMIT 1"
SUPERSEDES = "SELECT dst FROM edges WHERE src=? AND type='supersedes' ORDER BY dst LIMIT 1"
ALL_EDGES = "SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type"
CHUNK_PAGES = {"page": "SELECT vid, path FROM chunks ORDER BY path, ord", "vid": "SELECT vid, path FROM chunks ORDER BY vid"}
CHUNK_TEXTS = "SELECT text FROM chunks WHERE path=?"
PAGES_WITH_CHUNKS = "SELECT count(DISTINCT path) FROM chunks"


def paths_like(prefix: str, notes_only: bool) -> tuple[str, list]:
    note = "note=1 AND " if notes_only else ""
    return f"SELECT path FROM files WHERE {note}path LIKE ? ORDER BY path", [prefix + "%"]


def page_listing(prefix: str, type: str | None, tag: str | None) -> tuple[str, list]:
    """The ``WHERE`` of a listing and its arguments (``_`` and ``%`` in a name are literal)."""
    sql, args = ["note=1"], []
    if prefix:
        sql.append("path LIKE ? ESCAPE '\\'")
        args.append(_like(prefix) + "%")
    if type:
        sql.append("type = ?")
        args.append(type)
    if tag:
        sql.append("(tags LIKE ? ESCAPE '\\' OR tags LIKE ? ESCAPE '\\')")
        args += [f'%"{_like(tag)}"%', f'%"{_like(tag)}/%']
    return " AND ".join(sql), args


PAGE_LISTING_COUNT = "SELECT count(*) FROM files WHERE {where}"
PAGE_LISTING = "SELECT path, title, type, status, tags FROM files WHERE {where} ORDER BY path LIMIT ? OFFSET ?"


def edges_of(path: str, types: Sequence[str]) -> tuple[str, list]:
    marks = _marks(len(types))
    return (f"SELECT dst, 'out', type, weight FROM edges WHERE src=? AND type IN ({marks}) "
            f"UNION ALL SELECT src, 'in', type, weight FROM edges WHERE dst=? AND type IN ({marks})",
            [path, *types, path, *types])


def backlinks(path: str, types: Sequence[str]) -> tuple[str, list]:
    return ("SELECT DISTINCT e.src, f.title FROM edges e LEFT JOIN files f ON f.path = e.src "
            f"WHERE e.dst=? AND e.src != ? AND e.type IN ({_marks(len(types))}) ORDER BY e.src", [path, path, *types])


def page_edges(types: Sequence[str]) -> tuple[str, list]:
    return f"SELECT src, dst, type FROM edges WHERE type IN ({_marks(len(types))}) AND src != dst", list(types)


def typed_edges(types: Sequence[str]) -> tuple[str, list]:
    case = " ".join(f"WHEN ? THEN {i}" for i in range(len(types)))
    return (f"SELECT src, dst, CASE type {case} END, weight FROM edges WHERE type IN ({_marks(len(types))})",
            [*types, *types])


def edge_count(types: Sequence[str]) -> tuple[str, list]:
    return f"SELECT count(*) FROM edges WHERE type IN ({_marks(len(types))}) AND src != dst", list(types)


def inbound_counts(types: Sequence[str], ignoring: Sequence[str]) -> tuple[str, list]:
    return (f"SELECT dst, count(DISTINCT src) FROM edges WHERE type IN ({_marks(len(types))}) AND src != dst "
            f"AND src NOT IN ({_marks(len(ignoring))}) GROUP BY dst", [*types, *ignoring])


# -- search's questions (manifest_search) ----------------------------------------------------
SUPERSEDED_VIDS = "SELECT vid FROM chunks WHERE status='superseded'"
VALIDITY_FACTS = ("SELECT path, json_extract(page, '$.created'), status, "
                  "json_extract(page, '$.frontmatter.data.superseded_on'), "
                  "json_extract(page, '$.frontmatter.data.asked') FROM files WHERE note=1 AND page IS NOT NULL")
PAGE_BODY = "SELECT json_extract(page, '$.body'), CASE WHEN instr(page, '\\u0000') THEN page END FROM files WHERE path = ?"
PAGE_BODIES_IN = ("SELECT path, json_extract(page, '$.body_line'), json_extract(page, '$.body'), "
                  "CASE WHEN instr(page, '\\u0000') THEN page END FROM files WHERE path IN ({marks}) AND page IS NOT NULL")
CHUNK_SPEAKERS_IN = "SELECT id, speakers FROM chunks WHERE id IN ({marks})"
CHUNK_TEXTS_BY_ID_IN = "SELECT id, text FROM chunks WHERE id IN ({marks})"
FIRST_CHUNK_TEXTS = "SELECT vid, text FROM chunks ORDER BY vid LIMIT ?"


def note_facts(frontmatter: bool) -> str:
    front = "json_extract(page, '$.frontmatter.data')" if frontmatter else "NULL"
    return f"SELECT path, title, tags, {front} FROM files WHERE note=1"


def chunk_vids_where(filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return f"SELECT c.vid FROM chunks c WHERE 1=1 {fragment}", args


def passage_ids_where(filters: Filters | None, is_held: bool) -> tuple[str, list]:
    fragment, args = where(filters)
    return (f"SELECT p.pid FROM passages p JOIN chunks c ON c.vid = p.vid WHERE {held('p.pid', is_held)} {fragment}",
            args)


def chunk_ids_of_page(path: str, filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return f"SELECT c.id FROM chunks c WHERE c.path = ? {fragment} ORDER BY c.ord", [path, *args]


def page_recency(filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return ("SELECT c.path, max(coalesce(c.updated, c.created, c.date, '')), f.mtime_ns FROM chunks c "
            f"JOIN files f ON f.path = c.path WHERE 1=1 {fragment} GROUP BY c.path, f.mtime_ns", args)
