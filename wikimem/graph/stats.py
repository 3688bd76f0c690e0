"""``wikimem stats``: what the vault holds, counted from the cache (``files``, ``edges`` and
``chunks`` tables, the stored page records and the manifest's meta); nothing is re-parsed. The
table counts are kept in ``.wikimem/stats.json`` per committed cache state (see
``pagegraph.state_key``), so asking again before the next build reads them back.

Definitions, so the numbers can be checked by hand:
- links: the links that become graph edges (body links, plus ``supersedes``/``sources``/``source``/
  ``related`` in frontmatter) and that name another file; ``resolved`` point at a file of the vault
  as of the last build, ``broken`` at none.
- orphans: pages no other page links to (links from the structural pages ``index.md``, ``log.md``,
  ``SCHEMA.md``, ``communities.md`` do not count: the catalogue links to everything).
- hubs: the pages the most other pages link to (inbound: how many pages).
- communities: ``wikimem communities`` with default settings (its stored result when the graph has
  not changed since).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from .pagegraph import PAGE_EDGE_TYPES, STRUCTURAL_PAGES, db_of, read_stored, state_key, write_stored

RESULT_FILE = "stats.json"
STATS_VERSION = 1  # bump when a count's definition changes
TOP_TAGS = 25
TOP_HUBS = 10


def _folder(path: str) -> str:
    return path.split("/", 1)[0] + "/" if "/" in path else "."


def stats(vault, communities: bool = True) -> dict[str, Any]:
    db = db_of(vault)
    key = state_key(vault, [STATS_VERSION])
    counts = read_stored(vault, RESULT_FILE, build=key)
    if counts is None:
        counts = _counts(db)
        write_stored(vault, RESULT_FILE, counts, build=key)
    result: dict[str, Any] = {"vault": str(vault.root), **counts, **_embedding(vault)}
    if communities:
        from .communities import detect
        report = detect(vault)
        sizes = [c.size for c in report.communities]
        result["communities"] = {"count": len(sizes), "clustered": sum(1 for s in sizes if s >= 2),
                                 "largest": max(sizes, default=0),
                                 "top": [{"id": c.id, "size": c.size, "label": c.label} for c in report.communities[:10]]}
    return result


def _embedding(vault) -> dict[str, Any]:
    """Vector coverage as ``wikimem status`` counts it, from the manifest's meta alone (status also
    walks the vault for stale files, which is its job, not this one's)."""
    cache = vault.cache
    meta = cache.meta()
    chunks = cache.chunk_count()
    damaged = cache.artifact_problems(meta)
    vectors = int(meta.get("vectors") or 0) if meta.get("embedder") and "faiss" not in damaged else 0
    wanted = int(meta.get("vectors_wanted") or chunks)
    return {"chunks": chunks,
            "embedding": {"embedder": meta.get("embedder"), "vectors": vectors,
                          "coverage": round(vectors / wanted, 4) if wanted else 1.0},
            "cache_bytes": cache.size_bytes()}


def _counts(db) -> dict[str, Any]:
    """Everything that depends only on the manifest's tables (kept per committed cache state)."""
    rows = db.execute("SELECT path, type, status, tags FROM files WHERE note=1 ORDER BY path").fetchall()
    pages = [r[0] for r in rows]
    by_type = Counter(r[1] or "note" for r in rows)
    by_folder = Counter(_folder(r[0]) for r in rows)
    tags: Counter[str] = Counter()
    for r in rows:
        try:
            tags.update(json.loads(r[3] or "[]"))
        except ValueError:
            pass
    superseded = sorted(r[0] for r in rows if (r[2] or "") == "superseded")

    resolved, broken = db.execute(
        "SELECT coalesce(sum(json_extract(l.value, '$[7]') IS NOT NULL), 0), "
        "coalesce(sum(json_extract(l.value, '$[7]') IS NULL), 0) "
        "FROM files f, json_each(json_extract(f.page, '$.links')) l "
        "WHERE f.note=1 AND json_extract(l.value, '$[0]') != '' "
        "AND (json_extract(l.value, '$[1]') != 'frontmatter' "
        "     OR json_extract(l.value, '$[6]') IN ('supersedes', 'sources', 'source', 'related'))").fetchone()
    types = ",".join(f"'{t}'" for t in PAGE_EDGE_TYPES)  # constants, not input
    structural = ",".join("?" * len(STRUCTURAL_PAGES))
    # the build writes page edges between notes only (tag edges aside), so no join with files
    edge_count = db.execute(f"SELECT count(*) FROM edges WHERE type IN ({types}) AND src != dst").fetchone()[0]
    inbound = dict(db.execute(f"SELECT dst, count(DISTINCT src) FROM edges WHERE type IN ({types}) AND src != dst "
                              f"AND src NOT IN ({structural}) GROUP BY dst", sorted(STRUCTURAL_PAGES)).fetchall())
    orphans = sorted(p for p in pages if p not in STRUCTURAL_PAGES and not inbound.get(p))
    hubs = [{"path": p, "inbound": n} for p, n in sorted(inbound.items(), key=lambda pn: (-pn[1], pn[0]))[:TOP_HUBS]]

    memories = Counter(str(kind or "episodic").strip().lower() for (kind,) in db.execute(
        "SELECT json_extract(page, '$.frontmatter.data.kind') FROM files WHERE note=1 AND type='memory'"))
    raw_files, raw_bytes = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM files WHERE path LIKE 'raw/%'").fetchone()
    raw_notes = db.execute("SELECT count(*) FROM files WHERE note=1 AND path LIKE 'raw/%'").fetchone()[0]
    chunk_pages = db.execute("SELECT count(DISTINCT path) FROM chunks").fetchone()[0]

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
