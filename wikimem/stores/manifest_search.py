"""The manifest's named questions that search asks (wikimem/search/), beside the other readers'
in ``manifest_reads.py``.

Search's filters arrive typed (``filters.Filters``, None for none) and become SQL here
(``filters.where_sql``: a fragment over the ``chunks`` table aliased ``c``, appended to each
question's own conditions). Rows come back as tuples in the order each docstring gives, with
JSON columns as the text the build stored (their readers decode and check them).

``ManifestSearch`` is a mixin of ``manifest.Manifest``; it only needs ``self.db``, the connection
of the search's snapshot (``Cache.snapshot``: every read of one search sees one committed state).
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Iterator

from .filters import Filters, where_sql
from .manifest_reads import select_in
from .vectors import held_sql


class ManifestSearch:
    db: sqlite3.Connection

    @property
    def dialect(self) -> str:
        """The engine the connection speaks ("sqlite", or "postgres" for ``pg_manifest.PgDB``)."""
        return getattr(self.db, "dialect", "sqlite")

    # -- candidates under the search's filters ------------------------------------------------
    def superseded_vids(self) -> set[int]:
        """The vector ids of every superseded chunk (few: a search drops them after an over-fetch)."""
        return {r[0] for r in self.db.execute("SELECT vid FROM chunks WHERE status='superseded'")}

    def chunk_vids_where(self, filters: Filters | None) -> list[int]:
        """The vector ids of the chunks passing ``filters``, in table order."""
        where, args = where_sql(filters, self.dialect, "?")
        return [r[0] for r in self.db.execute(f"SELECT c.vid FROM chunks c WHERE 1=1 {where}", args)]

    def passage_ids_where(self, filters: Filters | None, held: bool) -> list[int]:
        """The ids of the held (or searched) passages whose chunk passes ``filters``, in table order.
        Which ids are held is the vector store's id bit (``vectors.held_sql``): the vector store asks
        this (``FaissVectors.searchable_ids``), search does not."""
        where, args = where_sql(filters, self.dialect, "?")
        return [r[0] for r in self.db.execute(
            f"SELECT p.pid FROM passages p JOIN chunks c ON c.vid = p.vid WHERE {held_sql('p.pid', held=held)} {where}",
            args)]

    def chunk_ids_of_page(self, path: str, filters: Filters | None = None) -> list[str]:
        """The ids of ``path``'s chunks that pass ``filters``, in page order."""
        where, args = where_sql(filters, self.dialect, "?")
        return [r[0] for r in self.db.execute(f"SELECT c.id FROM chunks c WHERE c.path = ? {where} ORDER BY c.ord",
                                              [path, *args])]

    # -- the query's page conditions and a listing by recency -----------------------------------
    def note_facts(self, frontmatter: bool) -> list[tuple[str, Any, Any, Any]]:
        """(path, title, tags, frontmatter data as JSON text or None) of every note, in table order;
        the frontmatter is read only when ``frontmatter`` (it is the bulk of the page record)."""
        front = "json_extract(page, '$.frontmatter.data')" if frontmatter else "NULL"
        return self.db.execute(f"SELECT path, title, tags, {front} FROM files WHERE note=1").fetchall()

    def validity_facts(self) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, ``created`` as the page record holds it, status, frontmatter ``superseded_on`` and
        ``asked``) of every note: what ``search.timeline`` dates versions from (with the supersedes
        edges)."""
        return self.db.execute("SELECT path, json_extract(page, '$.created'), status, "
                               "json_extract(page, '$.frontmatter.data.superseded_on'), "
                               "json_extract(page, '$.frontmatter.data.asked') FROM files "
                               "WHERE note=1 AND page IS NOT NULL").fetchall()

    def page_recency(self, filters: Filters | None) -> list[tuple[str, Any, Any]]:
        """(path, latest of its chunks' ``updated``/``created``/``date`` ('' when none), its file's
        mtime_ns) of every page with a chunk passing ``filters``."""
        where, args = where_sql(filters, self.dialect, "?")
        return self.db.execute(
            "SELECT c.path, max(coalesce(c.updated, c.created, c.date, '')), f.mtime_ns FROM chunks c "
            f"JOIN files f ON f.path = c.path WHERE 1=1 {where} GROUP BY c.path, f.mtime_ns", list(args)).fetchall()

    def page_body(self, path: str) -> str | None:
        """The body of ``path`` as its page record holds it (None: no record, or no body text)."""
        row = self.db.execute("SELECT json_extract(page, '$.body') FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row and isinstance(row[0], str) else None

    def page_bodies(self, paths: Iterable[str]) -> list[tuple[str, Any, Any]]:
        """(path, body_line, body) from the page records of ``paths`` (files without one left out)."""
        return list(select_in(self.db, "SELECT path, json_extract(page, '$.body_line'), json_extract(page, '$.body') "
                                       "FROM files WHERE path IN ({marks}) AND page IS NOT NULL", list(paths)))

    # -- chunk texts -------------------------------------------------------------------------
    def chunk_speakers(self, ids: Iterable[str]) -> dict[str, Any]:
        """chunk id -> its speakers as JSON text (``'[]'``: not a transcript turn), for the ids held."""
        return dict(select_in(self.db, "SELECT id, speakers FROM chunks WHERE id IN ({marks})", list(ids)))

    def chunk_texts_by_id(self, ids: Iterable[str]) -> dict[str, Any]:
        """chunk id -> its text, for the ids held."""
        return dict(select_in(self.db, "SELECT id, text FROM chunks WHERE id IN ({marks})", list(ids)))

    def first_chunk_texts(self, limit: int) -> Iterator[tuple[int, Any]]:
        """(vector id, text) of the first ``limit`` chunks by vector id, read as they are taken:
        ``close()`` the iterator when done early (an unfinished statement would hold its read
        snapshot open)."""
        cursor = self.db.execute("SELECT vid, text FROM chunks ORDER BY vid LIMIT ?", (limit,))
        try:
            yield from cursor
        finally:
            cursor.close()
