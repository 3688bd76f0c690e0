"""What ``wikimem parse`` shows: a whole vault's parse summary, or one page with its chunks.

Functions over what was loaded (the pages and the skipped files) and the chunker in use, so the
report needs nothing but the parse results.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..model import Chunk, Page, Skipped
from .names import find_page
from .page import page_to_dict

Chunker = Callable[[Page], list[Chunk]]


def vault_summary(root: str, pages: Mapping[str, Page], skipped: Sequence[Skipped], chunks_of: Chunker) -> dict[str, Any]:
    links = [link for p in pages.values() for link in p.links]
    by_type: dict[str, int] = {}
    for p in pages.values():
        by_type[p.type] = by_type.get(p.type, 0) + 1
    return {
        "vault": root,
        "pages": len(pages),
        "by_type": dict(sorted(by_type.items())),
        "chunks": sum(len(chunks_of(p)) for p in pages.values()),
        "links": len(links),
        "unresolved_links": sum(1 for link in links if link.resolved is None),
        "tags": len({t.name for p in pages.values() for t in p.tags}),
        "pages_with_errors": sorted(p.path for p in pages.values() if p.errors),
        "skipped": [{"path": s.path, "kind": s.kind, "reason": s.reason} for s in skipped],
    }


def page_report(pages: Mapping[str, Page], name: str, chunks_of: Chunker) -> dict[str, Any]:
    """One page (named by path, file name, title or alias) with its chunks, as a dict."""
    page = pages[find_page(name, {p: (pg.title, pg.aliases) for p, pg in pages.items()})]
    data = page_to_dict(page)
    data["chunks"] = [{"id": c.id, "heading_path": list(c.heading_path), "chars": len(c.text)}
                      for c in chunks_of(page)]
    return data
