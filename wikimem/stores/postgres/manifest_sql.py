"""The manifest's statements in PostgreSQL's dialect: what ``postgres.manifest.PgManifest`` asks.

The same names as ``local/manifest_sql.py``, each written for PostgreSQL (psycopg's ``%s``
placeholders; upserts as ``ON CONFLICT … DO UPDATE``; the page record read with the ``json`` path
operator ``#>``; ``string_agg`` for SQLite's ``group_concat``; ILIKE where SQLite's LIKE ignores
ASCII case). A list of values is one array parameter (``= ANY(%s::text[])``, always last), so
a question about 10,000 ids is one round trip, not twenty batches.

The page record is read as ``json``, not ``jsonb``: jsonb refuses a note's ``\\u0000``, and psycopg
decodes the json scalar it returns (str, int, None) as SQLite's ``json_extract`` does; an object is
asked as its JSON text (``::text``), as ``json_extract`` gives it.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..filters import Filters
from ..manifest import CHUNK_COLUMNS, FILE_COLUMNS
from ..vectors import HELD_BIT


def _marks(n: int) -> str:
    return ",".join(["%s"] * n)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _upsert(table: str, columns: Sequence[str], keys: Sequence[str]) -> str:
    update = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_marks(len(columns))}) "
            f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {update}")


def held(column: str, is_held: bool) -> str:
    """Held ids (a note's passages) have HELD_BIT set: they are at least HELD_BIT (ids < 2**62)."""
    return f"{column} {'>=' if is_held else '<'} {HELD_BIT}"


def where(filters: Filters | None) -> tuple[str, list[Any]]:
    """``filters`` as ``AND`` terms over ``chunks`` aliased ``c``. ILIKE where SQLite's LIKE is
    case-insensitive (ASCII letters only there: a folder named in another case with non-ASCII
    letters matches here alone)."""
    if filters is None:
        return "", []
    sql: list[str] = []
    args: list[Any] = []
    if not filters.include_superseded:
        sql.append("AND c.status != 'superseded'")
    if filters.folder:
        sql.append("AND c.path ILIKE %s ESCAPE '\\'")
        args.append(_like(filters.folder.strip("/")) + "/%")
    if filters.type:
        sql.append("AND c.type = %s")
        args.append(filters.type)
    for tag in filters.tags:  # the tag or one nested below it (tag:a matches a/b, as Obsidian's search)
        sql.append("AND (c.tags ILIKE %s ESCAPE '\\' OR c.tags ILIKE %s ESCAPE '\\')")
        tag = tag.lstrip("#").lower()
        args += ["%" + _like(f'"{tag}"') + "%", "%" + _like(f'"{tag}/') + "%"]
    day = "substr(coalesce(c.updated, c.date, c.created, ''), 1, 10)"
    if filters.since:
        sql.append(f"AND {day} >= %s")
        args.append(filters.since)
    if filters.until:
        sql.append(f"AND {day} != '' AND {day} <= %s")
        args.append(filters.until)
    for chosen in (filters.paths, filters.pages):
        if chosen is not None:
            sql.append("AND c.path = ANY(%s::text[])")
            args.append(sorted(chosen))
    if filters.not_pages:
        sql.append("AND NOT (c.path = ANY(%s::text[]))")
        args.append(sorted(filters.not_pages))
    return " ".join(sql), args


# -- meta ----------------------------------------------------------------------------------
META = "SELECT key, value FROM meta"
SET_META = _upsert("meta", ("key", "value"), ("key",))
TABLES = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
          "WHERE n.nspname = coalesce(%s, current_schema()) AND c.relkind IN ('r', 'p')")

# -- files ---------------------------------------------------------------------------------
STORED_PAGES = "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL ORDER BY path"
STORED_PAGES_IN = "SELECT path, page FROM files WHERE note=1 AND page IS NOT NULL AND path = ANY(%s::text[])"
FILE_STATES = "SELECT path, size, mtime_ns, sha256, note FROM files"
FILE_STATES_IN = "SELECT path, size, mtime_ns, sha256, note FROM files WHERE path = ANY(%s::text[])"
FILE_STATS = "SELECT path, size, mtime_ns FROM files"
ALIASES = "SELECT path, aliases FROM files WHERE note=1"
ALIASES_IN = "SELECT path, aliases FROM files WHERE note=1 AND path = ANY(%s::text[])"
NOTES_AMONG = "SELECT path FROM files WHERE note=1 AND path = ANY(%s::text[])"
LINK_ROWS = "SELECT path, aliases, links, tags, note FROM files"
PUT_FILE = _upsert("files", FILE_COLUMNS, ("path",))
UPDATE_STAT = "UPDATE files SET size=%s, mtime_ns=%s WHERE path=%s"
REMOVE_FILE = "DELETE FROM files WHERE path=%s"

# -- chunks --------------------------------------------------------------------------------
PUT_CHUNK = _upsert("chunks", CHUNK_COLUMNS, ("vid",))
REMOVE_CHUNK_PASSAGES = "DELETE FROM passages WHERE vid IN (SELECT vid FROM chunks WHERE path=%s)"
REMOVE_CHUNKS = "DELETE FROM chunks WHERE path=%s"
SELECT_CHUNKS = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks"
ALL_CHUNKS = SELECT_CHUNKS + " ORDER BY path, ord"
CHUNKS_BY_ID_IN = SELECT_CHUNKS + " WHERE id = ANY(%s::text[])"
CHUNKS_BY_VID_IN = SELECT_CHUNKS + " WHERE vid = ANY(%s::bigint[])"
PATHS_BY_ID_IN = "SELECT id, path, speakers, ord FROM chunks WHERE id = ANY(%s::text[])"
CHUNK_IDS_BY_VID_IN = "SELECT vid, id FROM chunks WHERE vid = ANY(%s::bigint[])"
VIDS_BY_ID_IN = "SELECT id, vid FROM chunks WHERE id = ANY(%s::text[])"
TRANSCRIPT_VIDS_IN = "SELECT vid FROM chunks WHERE speakers != '[]' AND vid = ANY(%s::bigint[])"
CHUNK_COUNT = "SELECT df FROM terms WHERE term=''"
CHUNK_ROWS = "SELECT count(*) FROM chunks"
PASSAGE_ROWS = "SELECT count(*) FROM passages"
SPEAKER_COUNTS_IN = ("SELECT (speakers != '[]')::int, count(*) FROM chunks WHERE path = ANY(%s::text[]) "
                     "GROUP BY (speakers != '[]')::int")
SPEAKERS = "SELECT DISTINCT speakers FROM chunks WHERE speakers != '[]'"
PROSE_CHUNK_COUNT = "SELECT count(*) FROM chunks WHERE speakers = '[]'"


def first_chunk(path: str, filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    columns = ",".join(f"c.{name}" for name in CHUNK_COLUMNS)
    return (f"SELECT {columns} FROM chunks c WHERE c.path=%s AND c.ord = "
            f"(SELECT min(ord) FROM chunks WHERE path=%s) {fragment}", [path, path, *args])


# -- passages ------------------------------------------------------------------------------
PUT_PASSAGE = _upsert("passages", ("pid", "vid", "ord", "embed_hash", "text"), ("pid",))
CLEAR_PASSAGES = "DELETE FROM passages"
PASSAGE_OWNERS_IN = "SELECT pid, vid FROM passages WHERE pid = ANY(%s::bigint[])"
PASSAGE_TEXTS_IN = "SELECT pid, text FROM passages WHERE pid = ANY(%s::bigint[])"
PASSAGE_ROWS_IN = "SELECT pid, vid, text FROM passages WHERE pid = ANY(%s::bigint[])"


def passages_of(is_held: bool) -> str:
    return f"SELECT pid, vid FROM passages WHERE {held('pid', is_held)} AND vid = ANY(%s::bigint[])"


def passage_rows_of(is_held: bool) -> str:
    return f"SELECT pid, vid, text FROM passages WHERE {held('pid', is_held)} AND vid = ANY(%s::bigint[])"


def chunks_with_passages(is_held: bool) -> str:
    return f"SELECT DISTINCT vid FROM passages WHERE {held('pid', is_held)} AND vid = ANY(%s::bigint[])"


def passage_count(is_held: bool) -> str:
    return f"SELECT count(*) FROM passages WHERE {held('pid', is_held)}"


# -- vector ids ----------------------------------------------------------------------------
WANTED_IDS = ("SELECT string_agg(vid::text, ',') FROM chunks UNION ALL "
              "SELECT string_agg(pid::text, ',') FROM passages")
WANTED_COUNT = "SELECT (SELECT count(*) FROM chunks) + (SELECT count(*) FROM passages)"
CHUNK_VIDS_OF_PATHS_IN = "SELECT vid FROM chunks WHERE path = ANY(%s::text[])"
PASSAGE_IDS_OF_VIDS_IN = "SELECT pid FROM passages WHERE vid = ANY(%s::bigint[])"
CHUNK_HASHES_IN = "SELECT vid, embed_hash FROM chunks WHERE vid = ANY(%s::bigint[])"
PASSAGE_HASHES_IN = "SELECT pid, embed_hash FROM passages WHERE pid = ANY(%s::bigint[])"
CHUNK_PAGES_IN = "SELECT vid, path FROM chunks WHERE vid = ANY(%s::bigint[])"
PASSAGE_PAGES_IN = ("SELECT p.pid, c.path FROM passages p JOIN chunks c ON c.vid = p.vid "
                    "WHERE p.pid = ANY(%s::bigint[])")
PASSAGE_EMBED_TEXTS_IN = "SELECT embed_hash, text FROM passages WHERE pid = ANY(%s::bigint[])"

# -- edges ---------------------------------------------------------------------------------
HAS_EDGES = "SELECT EXISTS (SELECT 1 FROM edges)"
PUT_EDGE = "INSERT INTO edges (src, dst, type, weight) VALUES (%s, %s, %s, %s)"
REMOVE_EDGES_FROM = "DELETE FROM edges WHERE src=%s"
CLEAR_EDGES = "DELETE FROM edges"
GRAPH_PAGES = "SELECT path FROM files WHERE note=1 ORDER BY path"


def neighbour_weights(paths: Sequence[str]) -> tuple[str, list]:
    return ("SELECT me, other, sum(weight) FROM ("
            " SELECT src AS me, dst AS other, weight FROM edges WHERE src = ANY(%s::text[]) AND type != 'tagged'"
            " UNION ALL SELECT dst AS me, src AS other, weight FROM edges WHERE dst = ANY(%s::text[])"
            " AND type != 'tagged') AS e GROUP BY me, other", [list(paths), list(paths)])


# -- other readers' questions (manifest_reads) -----------------------------------------------
FILE_PATHS = "SELECT path FROM files"
FILE_HASHES = "SELECT path, sha256, size, mtime_ns FROM files"
FILE_STATS_AFTER = "SELECT path, size, mtime_ns, sha256 FROM files WHERE path > %s ORDER BY path LIMIT %s"
FILE_PATHS_UNDER = "SELECT path FROM files WHERE substr(path, 1, %s) = %s"
FILE_ROWS = "SELECT path, note, type, status, size, aliases, links, tags FROM files ORDER BY path"
NOTE_PATHS = "SELECT path FROM files WHERE note=1"
PAGE_COUNT = "SELECT count(*) FROM files WHERE note=1"
PAGES = "SELECT path, title, type, status, tags FROM files WHERE note=1 ORDER BY path"
PAGES_IN = "SELECT path, title, type, status, tags FROM files WHERE note=1 AND path = ANY(%s::text[])"
PAGE_TITLES_AND_TAGS = "SELECT path, title, tags FROM files WHERE note=1 ORDER BY path"
PAGE_NAMES = "SELECT path, title, aliases FROM files WHERE note=1"
PAGE_NAMES_AND_KINDS = "SELECT path, title, aliases, type, status FROM files WHERE note=1 ORDER BY path"
TITLES_WITH_ALIASES = "SELECT title, aliases FROM files WHERE aliases IS NOT NULL AND aliases NOT IN ('', '[]')"
TITLE_AND_STATUS = "SELECT title, status FROM files WHERE note=1 AND path=%s"
PAGE_KINDS = "SELECT path, type, status FROM files WHERE note=1"
PAGE_MTIMES = "SELECT path, title, type, status, mtime_ns FROM files WHERE note=1"
PAGE_DATES = "SELECT path, max(created), max(updated) FROM chunks GROUP BY path"
PAGE_DATES_IN = "SELECT path, max(created), max(updated) FROM chunks WHERE path = ANY(%s::text[]) GROUP BY path"
PAGE_PROBLEMS = "SELECT path, errors FROM files WHERE note=1 AND errors NOT IN ('[]', '')"
MEMORY_KINDS = "SELECT page::json #> '{frontmatter,data,kind}' FROM files WHERE note=1 AND type='memory'"
LINKED_OUT = "SELECT DISTINCT dst FROM edges WHERE src = %s"
LINKED_IN = "SELECT DISTINCT src FROM edges WHERE dst = %s"
SUPERSEDED_BY = "SELECT src FROM edges WHERE dst=%s AND type='supersedes' ORDER BY src LIMIT 1"
SUPERSEDES = "SELECT dst FROM edges WHERE src=%s AND type='supersedes' ORDER BY dst LIMIT 1"
ALL_EDGES = "SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type"
CHUNK_PAGES = {"page": "SELECT vid, path FROM chunks ORDER BY path, ord", "vid": "SELECT vid, path FROM chunks ORDER BY vid"}
CHUNK_TEXTS = "SELECT text FROM chunks WHERE path=%s"
PAGES_WITH_CHUNKS = "SELECT count(DISTINCT path) FROM chunks"


def paths_like(prefix: str, notes_only: bool) -> tuple[str, list]:
    """ILIKE: SQLite's LIKE, which the local store asks, ignores ASCII case (``Memories/``)."""
    note = "note=1 AND " if notes_only else ""
    return f"SELECT path FROM files WHERE {note}path ILIKE %s ORDER BY path", [prefix + "%"]


def page_listing(prefix: str, type: str | None, tag: str | None) -> tuple[str, list]:
    """The ``WHERE`` of a listing and its arguments (``_`` and ``%`` in a name are literal)."""
    sql, args = ["note=1"], []
    if prefix:
        sql.append("path ILIKE %s ESCAPE '\\'")
        args.append(_like(prefix) + "%")
    if type:
        sql.append("type = %s")
        args.append(type)
    if tag:
        sql.append("(tags ILIKE %s ESCAPE '\\' OR tags ILIKE %s ESCAPE '\\')")
        args += [f'%"{_like(tag)}"%', f'%"{_like(tag)}/%']
    return " AND ".join(sql), args


PAGE_LISTING_COUNT = "SELECT count(*) FROM files WHERE {where}"
PAGE_LISTING = "SELECT path, title, type, status, tags FROM files WHERE {where} ORDER BY path LIMIT %s OFFSET %s"


def edges_of(path: str, types: Sequence[str]) -> tuple[str, list]:
    return ("SELECT dst, 'out', type, weight FROM edges WHERE src=%s AND type = ANY(%s::text[]) "
            "UNION ALL SELECT src, 'in', type, weight FROM edges WHERE dst=%s AND type = ANY(%s::text[])",
            [path, list(types), path, list(types)])


def backlinks(path: str, types: Sequence[str]) -> tuple[str, list]:
    return ("SELECT DISTINCT e.src, f.title FROM edges e LEFT JOIN files f ON f.path = e.src "
            "WHERE e.dst=%s AND e.src != %s AND e.type = ANY(%s::text[]) ORDER BY e.src", [path, path, list(types)])


def page_edges(types: Sequence[str]) -> tuple[str, list]:
    return "SELECT src, dst, type FROM edges WHERE type = ANY(%s::text[]) AND src != dst", [list(types)]


def typed_edges(types: Sequence[str]) -> tuple[str, list]:
    return ("SELECT src, dst, array_position(%s::text[], type) - 1, weight FROM edges WHERE type = ANY(%s::text[])",
            [list(types), list(types)])


def edge_count(types: Sequence[str]) -> tuple[str, list]:
    return "SELECT count(*) FROM edges WHERE type = ANY(%s::text[]) AND src != dst", [list(types)]


def inbound_counts(types: Sequence[str], ignoring: Sequence[str]) -> tuple[str, list]:
    return ("SELECT dst, count(DISTINCT src) FROM edges WHERE type = ANY(%s::text[]) AND src != dst "
            "AND NOT (src = ANY(%s::text[])) GROUP BY dst", [list(types), list(ignoring)])


# -- search's questions (manifest_search) ----------------------------------------------------
SUPERSEDED_VIDS = "SELECT vid FROM chunks WHERE status='superseded'"
VALIDITY_FACTS = ("SELECT path, page::json #> '{created}', status, page::json #> '{frontmatter,data,superseded_on}', "
                  "page::json #> '{frontmatter,data,asked}' FROM files WHERE note=1 AND page IS NOT NULL")
PAGE_BODY = "SELECT page::json #> '{body}', NULL FROM files WHERE path = %s"
PAGE_BODIES_IN = ("SELECT path, page::json #> '{body_line}', page::json #> '{body}', NULL FROM files "
                  "WHERE path = ANY(%s::text[]) AND page IS NOT NULL")
CHUNK_SPEAKERS_IN = "SELECT id, speakers FROM chunks WHERE id = ANY(%s::text[])"
CHUNK_TEXTS_BY_ID_IN = "SELECT id, text FROM chunks WHERE id = ANY(%s::text[])"
FIRST_CHUNK_TEXTS = "SELECT vid, text FROM chunks ORDER BY vid LIMIT %s"


def note_facts(frontmatter: bool) -> str:
    front = "(page::json #> '{frontmatter,data}')::text" if frontmatter else "NULL"
    return f"SELECT path, title, tags, {front} FROM files WHERE note=1"


def chunk_vids_where(filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return f"SELECT c.vid FROM chunks c WHERE true {fragment}", args


def passage_ids_where(filters: Filters | None, is_held: bool) -> tuple[str, list]:
    fragment, args = where(filters)
    return (f"SELECT p.pid FROM passages p JOIN chunks c ON c.vid = p.vid WHERE {held('p.pid', is_held)} {fragment}",
            args)


def chunk_ids_of_page(path: str, filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return f"SELECT c.id FROM chunks c WHERE c.path = %s {fragment} ORDER BY c.ord", [path, *args]


def page_recency(filters: Filters | None) -> tuple[str, list]:
    fragment, args = where(filters)
    return ("SELECT c.path, max(coalesce(c.updated, c.created, c.date, '')), f.mtime_ns FROM chunks c "
            f"JOIN files f ON f.path = c.path WHERE true {fragment} GROUP BY c.path, f.mtime_ns", args)
