"""What search may narrow the chunks to, as a typed value the stores turn into their own query.

``Filters`` is the vocabulary between search and the stores: search builds one from the user's
arguments and conditions (``search/filters.py``), every store question that narrows takes one, and
each engine translates it where its SQL lives (``where_sql`` for SQLite; another engine writes its
own), so no SQL crosses the boundary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import META_PAGES

__all__ = ["Filters", "where_sql"]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class Filters:
    folder: str | None = None
    type: str | None = None
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    include_superseded: bool = False
    paths: frozenset[str] | None = None  # only these pages (e.g. one community's members)
    include_meta: bool = False  # index.md, log.md, communities.md (model.META_PAGES): see hidden()
    # the pages the query's page conditions (tag:, path:, file:, [property]) admit, or those they
    # rule out (whichever list is shorter); unlike ``paths`` they leave wikimem's own pages hidden
    pages: frozenset[str] | None = None
    not_pages: frozenset[str] | None = None
    as_of: str | None = None  # a moment (timeline.moment): only the pages valid then, superseded or not

    @property
    def narrowing(self) -> bool:
        """Filters that select a subset (the superseded filter alone is handled by exclusion)."""
        return bool(self.folder or self.type or self.tags or self.since or self.until or self.paths is not None
                    or self.pages is not None or self.not_pages or self.as_of)

    def hidden(self) -> frozenset[str]:
        """Pages ranked as candidates but never returned: wikimem's own pages unless asked for.
        Dropped after ranking, not before, so every other page scores exactly as with them (the
        scores are normalised over the candidates: leaving index.md out of them moved others)."""
        return frozenset() if self.include_meta or self.paths is not None else META_PAGES


def where_sql(filters: "Filters | None", dialect: str = "sqlite", mark: str | None = None) -> tuple[str, list[Any]]:
    """``filters`` as SQL over ``chunks`` aliased ``c``: a fragment of ``AND`` terms and its
    arguments ("" and none for no filters). ``dialect`` "postgres": psycopg's ``%s`` placeholders,
    and ILIKE where SQLite's LIKE is case-insensitive (ASCII letters only there: a folder named in
    another case with non-ASCII letters matches on PostgreSQL alone). ``mark``: the placeholder, when
    not the dialect's own (the manifest writes ``?`` on both engines: ``pg_manifest.translate``)."""
    if filters is None:
        return "", []
    own, like, none = ("%s", "ILIKE", "AND false") if dialect == "postgres" else ("?", "LIKE", "AND 0")
    mark = mark or own
    sql: list[str] = []
    args: list[Any] = []
    if not filters.include_superseded:
        sql.append("AND c.status != 'superseded'")
    if filters.folder:
        sql.append(f"AND c.path {like} {mark} ESCAPE '\\'")
        args.append(_like_escape(filters.folder.strip("/")) + "/%")
    if filters.type:
        sql.append(f"AND c.type = {mark}")
        args.append(filters.type)
    for tag in filters.tags:
        sql.append(f"AND c.tags {like} {mark} ESCAPE '\\'")
        args.append('%' + _like_escape(f'"{tag.lstrip("#").lower()}"') + '%')
    day = "substr(coalesce(c.updated, c.date, c.created, ''), 1, 10)"
    if filters.since:
        sql.append(f"AND {day} >= {mark}")
        args.append(filters.since)
    if filters.until:
        sql.append(f"AND {day} != '' AND {day} <= {mark}")
        args.append(filters.until)
    if filters.paths is not None:
        paths = sorted(filters.paths)
        sql.append(f"AND c.path IN ({','.join([mark] * len(paths))})" if paths else none)
        args.extend(paths)
    if filters.pages is not None:
        pages = sorted(filters.pages)
        sql.append(f"AND c.path IN ({','.join([mark] * len(pages))})" if pages else none)
        args.extend(pages)
    if filters.not_pages:
        pages = sorted(filters.not_pages)
        sql.append(f"AND c.path NOT IN ({','.join([mark] * len(pages))})")
        args.extend(pages)
    return " ".join(sql), args
