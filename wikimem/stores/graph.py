"""The page graph: typed, weighted edges kept in the manifest, igraph built from them on demand.

Edge types: links_to (wikilinks, Markdown links, frontmatter sources), embeds, supersedes
(new -> old) and tagged (page -> ``#tag``). The edge list lives in the manifest database, in the
same transaction as the chunks, so it is never out of step with them and an edit updates only
that page's edges. Search's graph step reads neighbours straight from it; graph algorithms
(communities) get an igraph Graph built from it, which takes well under a second for 10k pages.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from .manifest import Manifest

EDGE_WEIGHTS = {"links_to": 1.0, "embeds": 1.0, "supersedes": 2.0, "tagged": 0.5}


def edge_type(kind: str) -> str:
    return "supersedes" if kind == "supersedes" else ("embeds" if kind == "embed" else "links_to")


def page_edges(source: str, resolved: Iterable[tuple[str, str]], tags: Iterable[str]) -> list[tuple[str, str, str, float]]:
    """(src, dst, type, weight) rows for one page; repeated links add up."""
    weights: dict[tuple[str, str], float] = {}
    for target, kind in resolved:
        if target and target != source:
            etype = edge_type(kind)
            weights[(target, etype)] = weights.get((target, etype), 0.0) + EDGE_WEIGHTS[etype]
    for tag in tags:
        weights[(f"#{tag}", "tagged")] = EDGE_WEIGHTS["tagged"]
    return [(source, dst, etype, w) for (dst, etype), w in sorted(weights.items())]


def neighbours(manifest: Manifest, paths: Sequence[str], fanout: int) -> dict[str, list[tuple[str, float]]]:
    """For each of ``paths``: the ``fanout`` strongest page neighbours (either direction) with
    their share of its link strength, so a hub that links to everything passes on little to each."""
    out = {}
    for path, rows in manifest.neighbour_weights(paths).items():
        strength = sum(w for _, w in rows) or 1.0
        rows.sort(key=lambda r: (-r[1], r[0]))
        out[path] = [(other, w / strength) for other, w in rows[:fanout]]
    return out


def build_graph(manifest: Manifest):
    """An igraph Graph of pages and tags from the edge list (vertex attribute ``name``, ``kind``;
    edge attributes ``type``, ``weight``)."""
    import igraph

    pages, edges = manifest.graph_rows()
    tags = sorted({dst for _, dst, t, _ in edges if t == "tagged"})
    names = pages + tags
    index = {n: i for i, n in enumerate(names)}
    kept = [e for e in edges if e[0] in index and e[1] in index]
    g = igraph.Graph(n=len(names), edges=[(index[s], index[d]) for s, d, _, _ in kept], directed=True)
    g.vs["name"] = names
    g.vs["kind"] = ["page"] * len(pages) + ["tag"] * len(tags)
    g.es["type"] = [t for _, _, t, _ in kept]
    g.es["weight"] = [w for _, _, _, w in kept]
    return g
