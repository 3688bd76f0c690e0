"""The manifest's logic, once for every engine: its row codecs and ``Manifest``, which asks each
question with the engine's own statements.

The manifest holds per file its stat fields and hash, the parsed page (as JSON, so readers such as
lint never parse a note the cache already holds), the chunks, the lexical index, term document
frequencies, passages and the link graph's edges (SQLite: ``local/manifest_sql.py``'s tables;
PostgreSQL: ``postgres/tables.py``'s, one schema per vault).

Nothing outside ``wikimem/stores`` writes SQL: callers ask ``Manifest`` named questions (the build's
writes and the index's own reads here, search's in ``manifest_search.py``, everyone else's in
``manifest_reads.py``; ``protocol.py`` splits them by who asks). The statements are each engine's
(``local/manifest_sql.py``, ``postgres/manifest_sql.py``): nothing rewrites one dialect into the
other, and tests/test_store_contract.py asks every question of both. A ``Manifest`` is a thin
object over one connection: the caller picks it (``stores.manifest`` for this thread's,
``stores.reading()`` for a snapshot, ``stores.writing()`` for a transaction), because a snapshot's
reads must all go through the connection that holds it.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import numpy as np

from ..model import Chunk, Page, page_from_record, page_to_record
from .filters import Filters
from .manifest_reads import ManifestReads, select_in
from .manifest_search import ManifestSearch

if TYPE_CHECKING:
    from .protocol import LexicalIndex as Lexical

__all__ = ["Manifest", "ManifestReads", "ManifestSearch", "select_in", "SCHEMA_VERSION"]

# 12: a page's frontmatter description is indexed and embedded with its title (issue 52): a cache
# chunked before it is rebuilt, so it gives what a new build would (its unchanged pages are never re-chunked)
SCHEMA_VERSION = 12

FILE_COLUMNS = ("path", "size", "mtime_ns", "sha256", "title", "type", "status", "aliases", "links", "tags",
                "errors", "note", "page")
CHUNK_COLUMNS = ("vid", "id", "path", "ord", "embed_hash", "title", "heading_path", "text", "start", '"end"',
                 "links", "tags", "type", "status", "created", "updated", "blocks", "speakers", "date", "context",
                 "aliases")

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


class Manifest(ManifestReads, ManifestSearch):
    """Every question over the manifest, as named reads and writes over one connection ``db``.

    The logic that shapes rows is here, once; the statements are the engine's own (``sql``: a
    module of named statements in its dialect, ``local/manifest_sql.py`` or
    ``postgres/manifest_sql.py``), as are ``_in`` (a question about a list of values), ``meta``,
    ``table_names`` and ``lexical``: ``local.manifest.LocalManifest`` and
    ``postgres.manifest.PgManifest``. A bundle makes the one of its engine (``manifest_on(db)``)."""

    sql: Any  # the engine's statements (a module)
    dialect = ""

    def __init__(self, db):
        self.db = db

    # -- what each engine answers in its own way ------------------------------------------------
    def _in(self, statement: str, values: Iterable, *args: Any) -> Iterator[tuple]:
        """Rows of ``statement`` (a question about the list ``values``, which it takes last)."""
        raise NotImplementedError

    def _rows(self, question: tuple[str, list]) -> list[tuple]:
        statement, args = question
        return self.db.execute(statement, args).fetchall()

    @property
    def lexical(self) -> "Lexical":
        raise NotImplementedError

    def meta(self) -> dict[str, Any]:
        raise NotImplementedError

    def table_names(self) -> set[str]:
        raise NotImplementedError

    def set_meta(self, **values: Any) -> None:
        self.db.executemany(self.sql.SET_META, [(k, json.dumps(v)) for k, v in values.items()])

    # -- files, as the build and the cache read them ------------------------------------------
    def stored_pages(self, paths: Iterable[str] | None = None) -> dict[str, Page]:
        """Parsed pages as the last build stored them (links resolved as of that build)."""
        rows = (self.db.execute(self.sql.STORED_PAGES) if paths is None else
                self._in(self.sql.STORED_PAGES_IN, list(paths)))
        return {path: page_from_record(json.loads(record)) for path, record in rows}

    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, tuple]:
        """path -> (path, size, mtime_ns, sha256, note) of every file (or of those among ``paths``)."""
        rows = self.db.execute(self.sql.FILE_STATES) if paths is None else self._in(self.sql.FILE_STATES_IN, paths)
        return {r[0]: tuple(r) for r in rows}

    def file_stats(self) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime_ns) of every file."""
        return {r[0]: (r[1], r[2]) for r in self.db.execute(self.sql.FILE_STATS)}

    def aliases(self, paths: Sequence[str] | None = None) -> dict[str, list[str]]:
        """path -> aliases of every note (or of the notes among ``paths``)."""
        rows = self.db.execute(self.sql.ALIASES) if paths is None else self._in(self.sql.ALIASES_IN, paths)
        return {p: json.loads(a or "[]") for p, a in rows}

    def notes_among(self, paths: Sequence[str]) -> set[str]:
        return {r[0] for r in self._in(self.sql.NOTES_AMONG, paths)}

    def link_rows(self) -> list[tuple]:
        """(path, aliases, links, tags, note) of every file: what re-resolving every edge needs."""
        return self.db.execute(self.sql.LINK_ROWS).fetchall()

    # -- files, written by the build ---------------------------------------------------------
    def put_file(self, row: tuple) -> None:
        self.db.execute(self.sql.PUT_FILE, row)

    def put_files(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(self.sql.PUT_FILE, rows)

    def update_stats(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """(size, mtime_ns, path) rows: a file whose bytes are unchanged got a new stat."""
        self.db.executemany(self.sql.UPDATE_STAT, rows)

    def remove_file(self, path: str) -> None:
        """A file gone from the vault: its row, chunks and passages (its lexical rows go first)."""
        self.db.execute(self.sql.REMOVE_FILE, (path,))
        self.remove_chunks(path)

    # -- chunks ------------------------------------------------------------------------------
    def put_chunks(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(self.sql.PUT_CHUNK, rows)

    def remove_chunks(self, path: str) -> None:
        """A page's chunks and their passages."""
        self.db.execute(self.sql.REMOVE_CHUNK_PASSAGES, (path,))
        self.db.execute(self.sql.REMOVE_CHUNKS, (path,))

    def chunks_except(self, paths: set[str]) -> list[Chunk]:
        """Every chunk not of ``paths``, in table order (a repair re-indexes what it keeps)."""
        return [row_chunk(r) for r in self.db.execute(self.sql.SELECT_CHUNKS) if r[2] not in paths]

    def all_chunks(self) -> list[Chunk]:
        return [row_chunk(r) for r in self.db.execute(self.sql.ALL_CHUNKS)]

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, Chunk]:
        return {row[1]: row_chunk(row) for row in self._in(self.sql.CHUNKS_BY_ID_IN, list(dict.fromkeys(ids)))}

    def first_chunk(self, path: str, filters: Filters | None = None) -> Chunk | None:
        """A page's first chunk, if it passes ``filters`` (search's, see ``manifest_search``)."""
        rows = self._rows(self.sql.first_chunk(path, filters))
        return row_chunk(rows[0]) if rows else None

    def paths_by_id(self, ids: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...], int]]:
        """chunk id -> (page path, speakers, ordinal in the page)."""
        return {cid: (path, tuple(json.loads(speakers or "[]")), ordinal) for cid, path, speakers, ordinal in
                self._in(self.sql.PATHS_BY_ID_IN, list(ids))}

    def chunk_ids_by_vid(self, vids: Iterable[int]) -> dict[int, str]:
        return dict(self._in(self.sql.CHUNK_IDS_BY_VID_IN, list(vids)))

    def vids_by_id(self, ids: Iterable[str]) -> dict[str, int]:
        return dict(self._in(self.sql.VIDS_BY_ID_IN, list(ids)))

    def transcript_vids(self, vids: Iterable[int]) -> set[int]:
        """Which of these chunk vids are transcript turns (they carry speakers)."""
        return {v for (v,) in self._in(self.sql.TRANSCRIPT_VIDS_IN, list(vids))}

    def chunk_count(self) -> int:
        """Exact, without a table scan: the lexical index's row count is kept in ``terms``."""
        row = self.db.execute(self.sql.CHUNK_COUNT).fetchone()
        return int(row[0]) if row else 0

    def chunk_rows(self) -> int:
        """``count(*)`` of the chunk table (a scan; ``chunk_count`` reads the kept count)."""
        return self.db.execute(self.sql.CHUNK_ROWS).fetchone()[0]

    def passage_rows(self) -> int:
        return self.db.execute(self.sql.PASSAGE_ROWS).fetchone()[0]

    # -- transcript speakers -----------------------------------------------------------------
    def speaker_counts(self, paths: Iterable[str]) -> tuple[int, int]:
        """(chunks with speakers, chunks without) among the chunks of ``paths``."""
        counts: Counter = Counter()
        for with_speakers, n in self._in(self.sql.SPEAKER_COUNTS_IN, sorted(paths)):
            counts[int(with_speakers)] += n  # one row per group per batch of paths
        return counts[1], counts[0]

    def speakers(self) -> list[str]:
        """Every transcript speaker, sorted."""
        return sorted({s for (row,) in self.db.execute(self.sql.SPEAKERS) for s in json.loads(row)})

    def prose_chunk_count(self) -> int:
        return self.db.execute(self.sql.PROSE_CHUNK_COUNT).fetchone()[0]

    # -- passages (which ones are held is the vector store's id bit: vectors.HELD_BIT) ----------
    def put_passages(self, rows: Iterable[tuple]) -> None:
        self.db.executemany(self.sql.PUT_PASSAGE, rows)

    def clear_passages(self) -> None:
        self.db.execute(self.sql.CLEAR_PASSAGES)

    def passage_owners(self, ids: Iterable[int]) -> dict[int, int]:
        """Which of these vector ids are passages, and of which chunk (passage id -> chunk vid)."""
        return dict(self._in(self.sql.PASSAGE_OWNERS_IN, list(ids)))

    def passage_texts(self, pids: Iterable[int]) -> dict[int, str]:
        return dict(self._in(self.sql.PASSAGE_TEXTS_IN, list(pids)))

    def passages_of(self, vids: Iterable[int], held: bool) -> dict[int, int]:
        """The held (or searched) passages of these chunk vids: passage id -> chunk vid."""
        return dict(self._in(self.sql.passages_of(held), list(vids)))

    def chunks_with_passages(self, vids: Iterable[int], held: bool) -> set[int]:
        """Which of these chunk vids have held (or searched) passages."""
        return {v for (v,) in self._in(self.sql.chunks_with_passages(held), list(vids))}

    def passage_count(self, held: bool) -> int:
        return self.db.execute(self.sql.passage_count(held)).fetchone()[0]

    # -- vector ids: one per chunk, one per passage -----------------------------------------------
    def wanted_ids(self) -> np.ndarray:
        """Every vector id the index should hold, sorted: one per chunk, one per passage. Read as one
        string per table and parsed in C: a row at a time is five times slower at ~500k ids."""
        from .vectors import sorted_ids
        text = ",".join(part for (part,) in self.db.execute(self.sql.WANTED_IDS) if part)
        return sorted_ids(np.fromstring(text, dtype=np.int64, sep=",") if text else ())

    def wanted_count(self) -> int:
        """``len(wanted_ids())`` without reading them."""
        return self.db.execute(self.sql.WANTED_COUNT).fetchone()[0]

    def vector_ids_of(self, paths: Sequence[str]) -> list[int]:
        """The vector ids of ``paths``' chunks and passages as the manifest holds them now."""
        ids = [vid for (vid,) in self._in(self.sql.CHUNK_VIDS_OF_PATHS_IN, paths)]
        ids += [pid for (pid,) in self._in(self.sql.PASSAGE_IDS_OF_VIDS_IN, ids)]
        return ids

    def embed_hashes(self, ids: Sequence[int]) -> dict[int, str]:
        """The embed hash of these chunk and passage ids (ids of neither are left out)."""
        out = dict(self._in(self.sql.CHUNK_HASHES_IN, ids))
        out.update(self._in(self.sql.PASSAGE_HASHES_IN, ids))
        return out

    def id_pages(self, ids: Sequence[int]) -> dict[int, str]:
        """chunk or passage id -> the page it belongs to (ids of neither are left out)."""
        owner = dict(self._in(self.sql.CHUNK_PAGES_IN, ids))
        owner.update(self._in(self.sql.PASSAGE_PAGES_IN, ids))
        return owner

    def embed_texts(self, ids: list[int]) -> dict[str, str]:
        """Embed hash -> the text embedded, for chunk and passage ids."""
        texts = {row[4]: row_chunk(row).index_text() for row in self._in(self.sql.CHUNKS_BY_VID_IN, ids)}
        texts.update(self._in(self.sql.PASSAGE_EMBED_TEXTS_IN, ids))
        return texts

    # -- edges -------------------------------------------------------------------------------
    def has_edges(self) -> bool:
        return bool(self.db.execute(self.sql.HAS_EDGES).fetchone()[0])

    def put_edges(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        self.db.executemany(self.sql.PUT_EDGE, rows)

    def remove_edges_from(self, path: str) -> None:
        self.db.execute(self.sql.REMOVE_EDGES_FROM, (path,))

    def clear_edges(self) -> None:
        self.db.execute(self.sql.CLEAR_EDGES)

    def neighbour_weights(self, paths: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """For each of ``paths``: (other page, summed weight) of every page edge at it, either
        direction (no tags); one question for them all (on a database server, one round trip)."""
        paths = list(dict.fromkeys(paths))
        out: dict[str, list[tuple[str, float]]] = {p: [] for p in paths}
        if paths:
            for me, other, weight in self._rows(self.sql.neighbour_weights(paths)):
                out[me].append((other, weight))
        return out

    def graph_rows(self) -> tuple[list[str], list[tuple[str, str, str, float]]]:
        """(every note's path, sorted; every edge, sorted): what an igraph Graph is built from."""
        pages = [r[0] for r in self.db.execute(self.sql.GRAPH_PAGES)]
        return pages, self.all_edges()
