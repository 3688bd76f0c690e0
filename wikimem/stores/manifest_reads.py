"""The manifest's named questions about files, pages, edges and chunk texts.

Callers above the index (graph tools, agent reads, lint, stats, qa, ingest, the watcher) ask these
instead of writing SQL, so the manifest's tables can change, or move to another engine (design.md
§9), without touching them. Rows come back as tuples in the order each docstring gives; list-valued
columns (``tags``, ``aliases``, ``links``) are the JSON text the build stored, because their readers
decode them in bulk (``graph.pagegraph.json_lists``: one parse for 10k pages) and tolerate a damaged
value where a per-row decode here would either raise or hide it.

``ManifestReads`` is a mixin of ``manifest.Manifest`` (which adds the build's writes and the index's
own reads); it needs ``self.db``, the connection the caller's snapshot or transaction uses, and the
engine's statements (``self.sql``, ``self._in``: see ``manifest.Manifest``).
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Iterator, Sequence


def select_in(db: sqlite3.Connection, sql: str, values: Sequence, *args: Any) -> Iterator[tuple]:
    """Rows of ``sql`` (which holds one ``{marks}`` placeholder list) for ``values``, asked in
    batches of 500 so the statement stays under SQLite's variable limit; ``args`` come first."""
    values = list(values)
    for start in range(0, len(values), 500):
        part = values[start:start + 500]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), [*args, *part])


class ManifestReads:
    db: sqlite3.Connection
    sql: Any

    # -- files -----------------------------------------------------------------------------
    def file_paths(self) -> list[str]:
        """Every file the manifest records (notes and attachments), in table order."""
        return [r[0] for r in self.db.execute(self.sql.FILE_PATHS)]

    def file_hashes(self) -> dict[str, tuple[str, int, int]]:
        """path -> (sha256, size, mtime_ns) of every file, as the last build recorded it."""
        return {path: (sha, size, mtime) for path, sha, size, mtime in self.db.execute(self.sql.FILE_HASHES)}

    def file_stats_after(self, after: str, limit: int) -> list[tuple[str, int, int, str]]:
        """(path, size, mtime_ns, sha256) of the ``limit`` files after ``after`` in path order (a
        watcher re-hashes the vault a slice at a time)."""
        return self.db.execute(self.sql.FILE_STATS_AFTER, (after, limit)).fetchall()

    def file_paths_under(self, prefix: str) -> list[str]:
        """Files whose path starts with ``prefix`` exactly (case-sensitive, any file kind)."""
        return [r[0] for r in self.db.execute(self.sql.FILE_PATHS_UNDER, (len(prefix), prefix))]

    def paths_like(self, prefix: str, notes_only: bool = False) -> list[str]:
        """Paths starting with ``prefix`` ignoring ASCII case (a ``Memories/`` folder counts as
        ``memories/``), sorted; ``notes_only``: notes, not attachments."""
        return [r[0] for r in self._rows(self.sql.paths_like(prefix, notes_only))]

    def file_rows(self) -> list[tuple]:
        """(path, note, type, status, size, aliases, links, tags) of every file, by path."""
        return self.db.execute(self.sql.FILE_ROWS).fetchall()

    # -- pages -----------------------------------------------------------------------------
    def note_paths(self) -> list[str]:
        """Every note's path (no attachments), in table order."""
        return [r[0] for r in self.db.execute(self.sql.NOTE_PATHS)]

    def page_count(self) -> int:
        return self.db.execute(self.sql.PAGE_COUNT).fetchone()[0]

    def pages_by_path(self, paths: Iterable[str] | None = None) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, title, type, status, tags) of every note (or of those among ``paths``), by path."""
        if paths is None:
            return self.db.execute(self.sql.PAGES).fetchall()
        return sorted(tuple(r) for r in self._in(self.sql.PAGES_IN, sorted(set(paths))))

    def page_titles_and_tags(self) -> list[tuple[str, Any, Any]]:
        """(path, title, tags) of every note, by path."""
        return self.db.execute(self.sql.PAGE_TITLES_AND_TAGS).fetchall()

    def page_names(self) -> list[tuple[str, Any, Any]]:
        """(path, title, aliases) of every note: what a name typed by a user can match."""
        return self.db.execute(self.sql.PAGE_NAMES).fetchall()

    def page_names_and_kinds(self) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, title, aliases, type, status) of every note, by path."""
        return self.db.execute(self.sql.PAGE_NAMES_AND_KINDS).fetchall()

    def titles_with_aliases(self) -> list[tuple[Any, str]]:
        """(title, aliases) of the files that have aliases."""
        return self.db.execute(self.sql.TITLES_WITH_ALIASES).fetchall()

    def title_and_status(self, path: str) -> tuple[Any, Any] | None:
        """(title, status) of the note ``path``, or None when there is no such note."""
        row = self.db.execute(self.sql.TITLE_AND_STATUS, (path,)).fetchone()
        return None if row is None else tuple(row)

    def page_kinds(self) -> list[tuple[str, Any, Any]]:
        """(path, type, status) of every note."""
        return self.db.execute(self.sql.PAGE_KINDS).fetchall()

    def page_mtimes(self) -> list[tuple[str, Any, Any, Any, int]]:
        """(path, title, type, status, mtime_ns) of every note."""
        return self.db.execute(self.sql.PAGE_MTIMES).fetchall()

    def page_dates(self, paths: Iterable[str] | None = None) -> dict[str, tuple[Any, Any]]:
        """path -> (latest ``created``, latest ``updated``) over its chunks' frontmatter dates, for
        every page or only ``paths``."""
        rows = self.db.execute(self.sql.PAGE_DATES) if paths is None else self._in(self.sql.PAGE_DATES_IN, list(paths))
        return {path: (created, updated) for path, created, updated in rows}

    def page_problems(self) -> list[tuple[str, str]]:
        """(path, errors as JSON text) of the notes the parser found problems in."""
        return self.db.execute(self.sql.PAGE_PROBLEMS).fetchall()

    def memory_kinds(self) -> list[Any]:
        """The ``kind`` frontmatter value of every memory note (None where it has none)."""
        return [kind for (kind,) in self.db.execute(self.sql.MEMORY_KINDS)]

    def page_listing(self, prefix: str, type: str | None, tag: str | None, offset: int,
                     limit: int) -> tuple[int, list[tuple]]:
        """(how many notes match, (path, title, type, status, tags) of ``limit`` of them from
        ``offset`` by path): notes under ``prefix`` (ignoring ASCII case), of ``type``, carrying
        ``tag`` or a tag nested under it (each filter optional). ``_`` and ``%`` in a name are literal."""
        where, args = self.sql.page_listing(prefix, type, tag)
        total = self.db.execute(self.sql.PAGE_LISTING_COUNT.format(where=where), args).fetchone()[0]
        rows = self.db.execute(self.sql.PAGE_LISTING.format(where=where), (*args, limit, offset)).fetchall()
        return total, rows

    # -- edges -----------------------------------------------------------------------------
    def edges_of(self, path: str, types: Sequence[str]) -> list[tuple[str, str, str, float]]:
        """(other end, "out" | "in", type, weight) of every edge of ``types`` at ``path``."""
        return self._rows(self.sql.edges_of(path, types))

    def linked_pages(self, path: str) -> tuple[set[str], set[str]]:
        """(what ``path`` links to, what links to it), over every edge type."""
        out = {dst for (dst,) in self.db.execute(self.sql.LINKED_OUT, (path,))}
        inc = {src for (src,) in self.db.execute(self.sql.LINKED_IN, (path,))}
        return out, inc

    def backlinks(self, path: str, types: Sequence[str]) -> list[tuple[str, Any]]:
        """(source path, its title or None) of the other pages linking to ``path`` by ``types``, by path."""
        return self._rows(self.sql.backlinks(path, types))

    def supersede_step(self, path: str, newer: bool) -> str | None:
        """The page ``path`` supersedes (or, ``newer``, the page superseding it); the first by path."""
        row = self.db.execute(self.sql.SUPERSEDED_BY if newer else self.sql.SUPERSEDES, (path,)).fetchone()
        return None if row is None else row[0]

    def page_edges(self, types: Sequence[str]) -> list[tuple[str, str, str]]:
        """(src, dst, type) of every edge of ``types`` between two different ends."""
        return self._rows(self.sql.page_edges(types))

    def typed_edges(self, types: Sequence[str]) -> list[tuple[str, str, int, float]]:
        """(src, dst, position of its type in ``types``, weight) of every edge of ``types``."""
        return self._rows(self.sql.typed_edges(types))

    def edge_count(self, types: Sequence[str]) -> int:
        """Edges of ``types`` between two different ends."""
        return self._rows(self.sql.edge_count(types))[0][0]

    def inbound_counts(self, types: Sequence[str], ignoring: Sequence[str]) -> dict[str, int]:
        """page -> how many other pages link to it by ``types`` (links from ``ignoring`` not counted)."""
        return dict(self._rows(self.sql.inbound_counts(types, ignoring)))

    def all_edges(self) -> list[tuple[str, str, str, float]]:
        """(src, dst, type, weight) of every edge, sorted."""
        return self.db.execute(self.sql.ALL_EDGES).fetchall()

    # -- chunks, as pages read them ---------------------------------------------------------
    def chunk_pages(self, by: str = "page") -> list[tuple[int, str]]:
        """(vector id, page path) of every chunk, in page order (``by="page"``: path, then position)
        or in vector id order (``by="vid"``)."""
        return self.db.execute(self.sql.CHUNK_PAGES[by]).fetchall()

    def chunk_texts(self, path: str) -> list[str]:
        """The stored text of each chunk of ``path``."""
        return [text for (text,) in self.db.execute(self.sql.CHUNK_TEXTS, (path,))]

    def pages_with_chunks(self) -> int:
        return self.db.execute(self.sql.PAGES_WITH_CHUNKS).fetchone()[0]
