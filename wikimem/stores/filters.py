"""What search may narrow the chunks to, as a typed value the stores turn into their own query.

``Filters`` is the vocabulary between search and the stores: search builds one from the user's
arguments and conditions (``search/filters.py``), every store question that narrows takes one, and
each engine writes its own SQL for it (``where`` in ``local/manifest_sql.py`` and in
``postgres/manifest_sql.py``), so no SQL crosses the boundary, nor from one engine to the other.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model import META_PAGES

__all__ = ["Filters"]


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
