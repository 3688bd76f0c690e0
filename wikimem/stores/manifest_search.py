"""The manifest's named questions that search asks (wikimem/search/), beside the other readers'
in ``manifest_reads.py``.

Search's filters arrive typed (``filters.Filters``, None for none) and each engine turns them into
its own SQL (``where`` in ``local/manifest_sql.py`` and ``postgres/manifest_sql.py``: a fragment
over the ``chunks`` table aliased ``c``, appended to each question's own conditions). Rows come back as tuples in the order each docstring gives, with
JSON columns as the text the build stored (their readers decode and check them).

``ManifestSearch`` is a mixin of ``manifest.Manifest``; it only needs ``self.db``, the connection
of the search's snapshot (``Cache.snapshot``: every read of one search sees one committed state).
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable, Iterator

from .filters import Filters


def _body(body: Any, record: Any) -> Any:
    """The body, from the whole record when the engine gave it instead: SQLite's ``json_extract``
    cuts a string at a note's NUL (``\\u0000`` in the record), so that engine's statement hands
    over the record whenever it holds one, and it is decoded here."""
    if record is not None:
        return json.loads(record).get("body")
    return body


class ManifestSearch:
    db: sqlite3.Connection
    sql: Any

    # -- candidates under the search's filters ------------------------------------------------
    def superseded_vids(self) -> set[int]:
        """The vector ids of every superseded chunk (few: a search drops them after an over-fetch)."""
        return {r[0] for r in self.db.execute(self.sql.SUPERSEDED_VIDS)}

    def chunk_vids_where(self, filters: Filters | None) -> list[int]:
        """The vector ids of the chunks passing ``filters``, in table order."""
        return [r[0] for r in self._rows(self.sql.chunk_vids_where(filters))]

    def passage_ids_where(self, filters: Filters | None, held: bool) -> list[int]:
        """The ids of the held (or searched) passages whose chunk passes ``filters``, in table order.
        Which ids are held is the vector store's id bit (``vectors.HELD_BIT``): the vector store asks
        this (``FaissVectors.searchable_ids``), search does not."""
        return [r[0] for r in self._rows(self.sql.passage_ids_where(filters, held))]

    def chunk_ids_of_page(self, path: str, filters: Filters | None = None) -> list[str]:
        """The ids of ``path``'s chunks that pass ``filters``, in page order."""
        return [r[0] for r in self._rows(self.sql.chunk_ids_of_page(path, filters))]

    # -- the query's page conditions and a listing by recency -----------------------------------
    def note_facts(self, frontmatter: bool) -> list[tuple[str, Any, Any, Any]]:
        """(path, title, tags, frontmatter data as JSON text or None) of every note, in table order;
        the frontmatter is read only when ``frontmatter`` (it is the bulk of the page record)."""
        return self.db.execute(self.sql.note_facts(frontmatter)).fetchall()

    def validity_facts(self) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, ``created`` as the page record holds it, status, frontmatter ``superseded_on`` and
        ``asked``) of every note: what ``search.timeline`` dates versions from (with the supersedes
        edges)."""
        return self.db.execute(self.sql.VALIDITY_FACTS).fetchall()

    def page_recency(self, filters: Filters | None) -> list[tuple[str, Any, Any]]:
        """(path, latest of its chunks' ``updated``/``created``/``date`` ('' when none), its file's
        mtime_ns) of every page with a chunk passing ``filters``."""
        return self._rows(self.sql.page_recency(filters))

    def page_body(self, path: str) -> str | None:
        """The body of ``path`` as its page record holds it (None: no record, or no body text)."""
        row = self.db.execute(self.sql.PAGE_BODY, (path,)).fetchone()
        body = _body(row[0], row[1]) if row else None
        return body if isinstance(body, str) else None

    def page_bodies(self, paths: Iterable[str]) -> list[tuple[str, Any, Any]]:
        """(path, body_line, body) from the page records of ``paths`` (files without one left out)."""
        return [(path, line, _body(body, record)) for path, line, body, record in
                self._in(self.sql.PAGE_BODIES_IN, list(paths))]

    # -- chunk texts -------------------------------------------------------------------------
    def chunk_speakers(self, ids: Iterable[str]) -> dict[str, Any]:
        """chunk id -> its speakers as JSON text (``'[]'``: not a transcript turn), for the ids held."""
        return dict(self._in(self.sql.CHUNK_SPEAKERS_IN, list(ids)))

    def chunk_texts_by_id(self, ids: Iterable[str]) -> dict[str, Any]:
        """chunk id -> its text, for the ids held."""
        return dict(self._in(self.sql.CHUNK_TEXTS_BY_ID_IN, list(ids)))

    def first_chunk_texts(self, limit: int) -> Iterator[tuple[int, Any]]:
        """(vector id, text) of the first ``limit`` chunks by vector id, read as they are taken:
        ``close()`` the iterator when done early (an unfinished statement would hold its read
        snapshot open)."""
        cursor = self.db.execute(self.sql.FIRST_CHUNK_TEXTS, (limit,))
        try:
            yield from cursor
        finally:
            cursor.close()
