"""The page graph (igraph): pages and tags as vertices; typed, weighted edges.

Edge types: links_to (wikilinks and Markdown links), embeds, supersedes (new -> old), tagged
(page -> #tag). Built from the manifest's per-page link lists, re-resolved against the whole
vault on every build, so a new page that makes an old link resolve is picked up.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Iterable, Mapping

EDGE_WEIGHTS = {"links_to": 1.0, "embeds": 1.0, "supersedes": 2.0, "tagged": 0.5}


def build_graph(pages: Mapping[str, dict], resolved_links: Mapping[str, Iterable[tuple[str, str]]]):
    """pages: path -> {"title", "type", "status", "tags"}; resolved_links: path -> [(target, kind)]."""
    import igraph

    names = sorted(pages)
    tags = sorted({t for info in pages.values() for t in info.get("tags", ())})
    vertices = names + [f"#{t}" for t in tags]
    index = {name: i for i, name in enumerate(vertices)}
    edges: dict[tuple[int, int, str], float] = {}
    for source in names:
        for target, kind in resolved_links.get(source, ()):
            if target not in index or target == source:
                continue
            etype = "supersedes" if kind == "supersedes" else ("embeds" if kind == "embed" else "links_to")
            key = (index[source], index[target], etype)
            edges[key] = edges.get(key, 0.0) + EDGE_WEIGHTS[etype]
        for tag in pages[source].get("tags", ()):
            edges[(index[source], index[f"#{tag}"], "tagged")] = EDGE_WEIGHTS["tagged"]
    ordered = sorted(edges)
    g = igraph.Graph(n=len(vertices), edges=[(a, b) for a, b, _ in ordered], directed=True)
    g.vs["name"] = vertices
    g.vs["kind"] = ["page"] * len(names) + ["tag"] * len(tags)
    g.vs["title"] = [pages[n].get("title", n) for n in names] + vertices[len(names):]
    g.vs["status"] = [pages[n].get("status", "active") for n in names] + [""] * len(tags)
    g.es["type"] = [t for _, _, t in ordered]
    g.es["weight"] = [edges[k] for k in ordered]
    return g


def save_graph(g, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        pickle.dump(g, fh, protocol=pickle.HIGHEST_PROTOCOL)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_graph(path: Path):
    with open(path, "rb") as fh:
        return pickle.load(fh)


class Neighbours:
    """Fast page -> [(neighbour page, weight)] lookups for the search graph step (both directions,
    page-to-page edges only)."""

    def __init__(self, g):
        self.index = {name: i for i, name in enumerate(g.vs["name"])}
        self.names = g.vs["name"]
        kinds = g.vs["kind"]
        weights = g.es["weight"] if g.ecount() else []
        self.adj: dict[int, dict[int, float]] = {}
        for e, (a, b) in enumerate(g.get_edgelist()):
            if kinds[a] != "page" or kinds[b] != "page":
                continue
            w = weights[e]
            self.adj.setdefault(a, {})[b] = self.adj.get(a, {}).get(b, 0.0) + w
            self.adj.setdefault(b, {})[a] = self.adj.get(b, {}).get(a, 0.0) + w

    def of(self, path: str, fanout: int) -> list[tuple[str, float]]:
        """The ``fanout`` strongest neighbours with their share of this page's link strength
        (so a hub that links to everything passes on little to each)."""
        i = self.index.get(path)
        if i is None:
            return []
        links = self.adj.get(i, {})
        strength = sum(links.values()) or 1.0
        items = sorted(links.items(), key=lambda kv: (-kv[1], self.names[kv[0]]))[:fanout]
        return [(self.names[j], w / strength) for j, w in items]
