"""Search arguments checked at the boundary, and filters as SQL over the ``chunks`` table."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Collection, Sequence

from ..errors import UsageError
from ..model import META_PAGES

MODES = ("hybrid", "lexical", "vector")


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

    def sql(self) -> tuple[str, list[Any]]:
        """As SQL over ``chunks`` aliased ``c`` (both rankers and graph pull-ins use it)."""
        sql: list[str] = []
        args: list[Any] = []
        if not self.include_superseded:
            sql.append("AND c.status != 'superseded'")
        if self.folder:
            sql.append("AND c.path LIKE ? ESCAPE '\\'")
            args.append(_like_escape(self.folder.strip("/")) + "/%")
        if self.type:
            sql.append("AND c.type = ?")
            args.append(self.type)
        for tag in self.tags:
            sql.append("AND c.tags LIKE ? ESCAPE '\\'")
            args.append('%' + _like_escape(f'"{tag.lstrip("#").lower()}"') + '%')
        day = "substr(coalesce(c.updated, c.date, c.created, ''), 1, 10)"
        if self.since:
            sql.append(f"AND {day} >= ?")
            args.append(self.since)
        if self.until:
            sql.append(f"AND {day} != '' AND {day} <= ?")
            args.append(self.until)
        if self.paths is not None:
            paths = sorted(self.paths)
            sql.append(f"AND c.path IN ({','.join('?' * len(paths))})" if paths else "AND 0")
            args.extend(paths)
        if self.pages is not None:
            pages = sorted(self.pages)
            sql.append(f"AND c.path IN ({','.join('?' * len(pages))})" if pages else "AND 0")
            args.extend(pages)
        if self.not_pages:
            pages = sorted(self.not_pages)
            sql.append(f"AND c.path NOT IN ({','.join('?' * len(pages))})")
            args.extend(pages)
        return " ".join(sql), args


def check_args(query: str, mode: str, limit: int, since: str | None, until: str | None) -> None:
    if not query or not query.strip():
        raise UsageError("empty query: say what to look for")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # bytes a terminal sent in another encoding, or "\ud800" from JSON
        raise UsageError("the query is not valid Unicode text (is the terminal set to UTF-8?)") from None
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (choose {', '.join(MODES)})")
    for name, value in (("since", since), ("until", until)):
        if value:
            try:
                if len(value) != 10:
                    raise ValueError
                dt.date.fromisoformat(value)
            except ValueError:
                raise UsageError(f"--{name} wants a real date as YYYY-MM-DD, got {value!r}") from None
    if limit < 1:
        raise UsageError("limit must be at least 1")


def make_filters(folder=None, type=None, tags: Sequence[str] | None = None, since=None, until=None,
                 include_superseded: bool = False, paths: Collection[str] | None = None,
                 include_meta: bool = False, as_of: str | None = None) -> Filters:
    """``as_of``: YYYY-MM-DD[THH:MM[:SS]] as a person typed it (checked here); a page superseded
    since counts as current then, so superseded pages are not hidden by default."""
    when = None
    if as_of:
        from .timeline import as_of_moment
        when = as_of_moment(as_of)
    return Filters(folder, type, tuple(t for t in (tags or ()) if t), since, until, include_superseded or bool(when),
                   None if paths is None else frozenset(paths), include_meta, as_of=when)
