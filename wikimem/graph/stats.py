"""``wikimem stats``: what the vault holds, counted from the cache (``files``, ``edges`` and
``chunks`` tables, the manifest's meta, and the stored page records for memory kinds); nothing
is re-parsed. The
table counts are kept in ``.wikimem/stats.json`` per committed cache state (see
``pagegraph.state_key``), so asking again before the next build reads them back.

Definitions, so the numbers can be checked by hand:
- links: the links that become graph edges (body links, plus ``supersedes``/``sources``/``source``/
  ``related`` in frontmatter) and that name another file; ``resolved`` point at a file of the vault
  as of the last build (looked up as the build resolves edges, so a link to a page created after
  the linking page was parsed counts as resolved), ``broken`` at none.
- orphans: ``orphan_pages``, the one definition lint's WM401 uses too: current wiki pages (not
  raw/, not the structural pages, not superseded, not memories) that no other page links to and
  index.md does not list (links from ``log.md``, ``SCHEMA.md`` and ``communities.md`` do not count:
  they name everything; a page the catalogue lists can be found by browsing).
- hubs: the pages the most other pages link to (inbound: how many pages).
- communities: ``wikimem communities`` with default settings (its stored result when the graph has
  not changed since).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..index.status import vector_coverage
from .pagegraph import (PAGE_EDGE_TYPES, STRUCTURAL_PAGES, json_list, json_lists, manifest_of, read_stored,
                        state_key, write_stored)

RESULT_FILE = "stats.json"
STATS_VERSION = 3  # bump when a count's definition changes (2: links re-resolved, not read from page records;
# 3: orphans as lint counts them, orphan_pages)
TOP_TAGS = 25
TOP_HUBS = 10


def _folder(path: str) -> str:
    return path.split("/", 1)[0] + "/" if "/" in path else "."


def stats(ctx, communities: bool = True) -> dict[str, Any]:
    manifest_of(ctx)  # no cache: IndexStaleError saying to run index
    counts = _stored_counts(ctx)
    result: dict[str, Any] = {"vault": str(ctx.root), **counts, **_embedding(ctx)}
    if communities:
        from .communities import detect
        report = detect(ctx)
        sizes = [c.size for c in report.communities]
        result["communities"] = {"count": len(sizes), "clustered": sum(1 for s in sizes if s >= 2),
                                 "largest": max(sizes, default=0),
                                 "top": [{"id": c.id, "size": c.size, "label": c.label} for c in report.communities[:10]]}
    return result


def _stored_counts(ctx) -> dict[str, Any]:
    """The counts of the committed cache state, computed and kept, or read back. One read
    snapshot, so the key they are kept under names the state they were counted from even if a
    build commits meanwhile."""
    with ctx.cache.reading() as manifest:
        key = state_key(ctx, [STATS_VERSION])
        counts = read_stored(ctx, RESULT_FILE, build=key)
        if counts is None:
            counts = _counts(manifest)
            write_stored(ctx, RESULT_FILE, counts, build=key)
    return counts


def _embedding(ctx) -> dict[str, Any]:
    """Vector coverage as ``wikimem status`` counts it, from the manifest's meta alone (status also
    walks the vault for stale files, which is its job, not this one's)."""
    cache = ctx.cache
    meta = cache.meta()
    chunks = cache.chunk_count()
    damaged = cache.artifact_problems(meta)
    vectors = int(meta.get("vectors") or 0) if meta.get("embedder") and "faiss" not in damaged else 0
    coverage, passage_coverage = vector_coverage(meta, chunks, vectors, None if vectors else 0)
    return {"chunks": chunks,
            "embedding": {"embedder": meta.get("embedder"), "vectors": vectors, "coverage": round(coverage, 4),
                          "passage_coverage": None if passage_coverage is None else round(passage_coverage, 4)},
            "cache_bytes": cache.size_bytes()}


def _counts(manifest) -> dict[str, Any]:
    """Everything that depends only on the manifest's tables (kept per committed cache state)."""
    files = manifest.file_rows()
    notes = [r for r in files if r[1]]
    pages = [r[0] for r in notes]
    by_type = Counter(r[2] or "note" for r in notes)
    by_folder = Counter(_folder(r[0]) for r in notes)
    tags = Counter(t for page_tags in json_lists([r[7] for r in notes]) for t in page_tags if isinstance(t, str))
    superseded = [r[0] for r in notes if (r[3] or "") == "superseded"]
    raw = [r for r in files if r[0][:4].lower() == "raw/"]  # as SQL's LIKE 'raw/%' matched
    raw_files, raw_bytes, raw_notes = len(raw), sum(r[4] or 0 for r in raw), sum(1 for r in raw if r[1])

    resolved, broken = _link_counts([(r[0], r[1], r[5], r[6]) for r in files])
    # the build writes page edges between notes only (tag edges aside), so no join with files
    edge_count = manifest.edge_count(PAGE_EDGE_TYPES)
    inbound = manifest.inbound_counts(PAGE_EDGE_TYPES, sorted(STRUCTURAL_PAGES))
    orphans = orphan_pages(manifest)
    hubs = [{"path": p, "inbound": n} for p, n in sorted(inbound.items(), key=lambda pn: (-pn[1], pn[0]))[:TOP_HUBS]]

    memories = Counter(str(kind or "episodic").strip().lower() for kind in manifest.memory_kinds())
    chunk_pages = manifest.pages_with_chunks()

    return {
        "pages": len(pages),
        "by_type": dict(sorted(by_type.items())),
        "by_folder": dict(sorted(by_folder.items())),
        "tags": len(tags),
        "top_tags": [{"tag": t, "pages": n} for t, n in sorted(tags.items(), key=lambda tn: (-tn[1], tn[0]))[:TOP_TAGS]],
        "links": {"total": int(resolved) + int(broken), "resolved": int(resolved), "broken": int(broken),
                  "page_edges": edge_count},
        "orphans": {"count": len(orphans), "pages": orphans},
        "superseded": {"count": len(superseded), "pages": superseded},
        "hubs": hubs,
        "raw_sources": {"files": raw_files, "bytes": raw_bytes, "notes": raw_notes},
        "query_pages": by_type.get("query", 0),
        "memories": {"count": sum(memories.values()), "by_kind": dict(sorted(memories.items()))},
        "pages_with_chunks": chunk_pages,
    }


ORPHAN_TYPES = ("entity", "concept", "comparison", "query", "source", "note")  # memories are not linked to
NOT_COUNTED_LINKERS = STRUCTURAL_PAGES - {"index.md"}


def orphan_pages(manifest, types: tuple[str, ...] = ORPHAN_TYPES) -> list[str]:
    """The vault's orphan pages (see the module docstring), sorted, from the manifest's ``files``
    and ``edges`` tables: ``wikimem stats`` counts them and lint's WM401 reports them."""
    rows = manifest.page_kinds()
    edges = manifest.page_edges(PAGE_EDGE_TYPES)
    status = {path: (kind or "note", st or "") for path, kind, st in rows}
    superseded = {p for p, (_, st) in status.items() if st == "superseded"}
    superseded |= {dst for src, dst, kind in edges if kind == "supersedes" and src not in superseded}
    linked = {dst for src, dst, _ in edges if src not in NOT_COUNTED_LINKERS}
    return sorted(p for p, (kind, _) in status.items()
                  if kind in types and p not in STRUCTURAL_PAGES and p[:4].lower() != "raw/"
                  and p not in superseded and p not in linked)


def _link_counts(rows: list[tuple]) -> tuple[int, int]:
    """(resolved, broken) over every page's graph links (the ``links`` column: what the build
    turns into edges), each target looked up against the files the manifest holds now, the way
    the build re-resolves edges. Not the page records' own resolution: a record keeps what its
    page resolved to when it was parsed, so a link to a page created later would stay broken
    there. ``rows``: (path, note, aliases, links) of every file."""
    from ..parse import Resolver
    aliases = {path: json_list(names) for path, note, names, _ in rows if note and names and names != "[]"}
    resolver = Resolver([r[0] for r in rows], {}, aliases=aliases)  # its lookups are memoised per target
    linking = [(path, links) for path, note, _, links in rows if note and links and links != "[]"]
    resolved = broken = 0
    for (path, _), links in zip(linking, json_lists([links for _, links in linking])):
        for target, kind in links:  # [target, kind], as the build writes and reads them
            if resolver.lookup(target, path, relative=kind == "markdown")[0] is None:
                broken += 1
            else:  # a blank target names the linking page itself
                resolved += 1
    return resolved, broken
