"""Leiden communities over the page graph: clusters, labels, hubs and bridges.

Leiden (modularity with a resolution parameter, i.e. the RB-configuration quality) runs on the undirected
page graph of ``pagegraph``: an edge's weight is the sum of the stored weights of every link
between two pages in either direction (so type and count both count: a ``supersedes`` link weighs
2, each repeated wikilink adds 1). With ``semantic`` each page also gets weaker edges to its k
nearest pages by embedding. Results are deterministic: nodes are sorted by path, edges are built
in sorted order, Leiden is seeded, and communities are numbered by size (largest first, ties by
first member). A result is stored in ``.wikimem/communities.json`` under a key made of the graph's
fingerprint and the parameters, so ``stats`` and ``search --community`` reuse it until the graph
changes; the stored copy is only ever a shortcut to what a fresh run would give.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from .pagegraph import PageGraph, load_page_graph, manifest_of, merge_edges, read_stored, state_key, write_stored

log = logging.getLogger(__name__)

ALGORITHM = "igraph-leiden-modularity-v1"
ITERATIONS = 2  # passes of Leiden; measured in benchmarks/bench_graph.py
RESULT_FILE = "communities.json"
DEFAULT_RESOLUTION = 1.0
DEFAULT_SEED = 42
DEFAULT_K = 5
SEMANTIC_WEIGHT = 0.5  # a semantic edge weighs this x cosine; one wikilink weighs 1
HUBS = 3
LABEL_TAGS = 3
LABEL_TITLES = 2
MAX_BRIDGES = 10


@dataclass(frozen=True)
class Bridge:
    """Links between two communities: their summed weight, how many page pairs, the strongest pair."""

    community: int
    weight: float
    links: int
    strongest: tuple[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"community": self.community, "weight": self.weight, "links": self.links,
                "strongest": list(self.strongest)}


@dataclass(frozen=True)
class Community:
    id: int
    members: tuple[str, ...]
    label: str
    hubs: tuple[str, ...]
    tags: tuple[str, ...]
    bridges: tuple[Bridge, ...]

    @property
    def size(self) -> int:
        return len(self.members)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "size": self.size, "label": self.label, "hubs": list(self.hubs),
                "tags": list(self.tags), "bridges": [b.to_dict() for b in self.bridges],
                "members": list(self.members)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Community":
        return cls(int(d["id"]), tuple(d["members"]), d["label"], tuple(d["hubs"]), tuple(d.get("tags", ())),
                   tuple(Bridge(int(b["community"]), float(b["weight"]), int(b["links"]), tuple(b["strongest"]))
                         for b in d.get("bridges", ())))


@dataclass(frozen=True)
class CommunityReport:
    communities: tuple[Community, ...]
    pages: int
    edges: int
    resolution: float
    seed: int
    semantic: bool
    semantic_edges: int = 0
    quality: float = 0.0
    notices: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"pages": self.pages, "edges": self.edges, "resolution": self.resolution, "seed": self.seed,
                "semantic": self.semantic, "semantic_edges": self.semantic_edges, "quality": self.quality,
                "count": len(self.communities), "notices": list(self.notices),
                "communities": [c.to_dict() for c in self.communities]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CommunityReport":
        return cls(tuple(Community.from_dict(c) for c in d["communities"]), int(d["pages"]), int(d["edges"]),
                   float(d["resolution"]), int(d["seed"]), bool(d["semantic"]), int(d.get("semantic_edges", 0)),
                   float(d.get("quality", 0.0)), tuple(d.get("notices", ())))

    def community(self, n: int) -> Community:
        for c in self.communities:
            if c.id == n:
                return c
        raise UsageError(f"no community {n} (this vault has {len(self.communities)}: 1..{len(self.communities)})")

    def membership(self) -> dict[str, int]:
        return {p: c.id for c in self.communities for p in c.members}


# -- the computation ---------------------------------------------------------------------------
_RNG_LOCK = threading.Lock()


def _leiden(n: int, edges: list, weights: list, resolution: float, seed: int) -> tuple[list[int], float]:
    """Leiden with the RB-configuration (modularity with resolution) objective. igraph's C
    implementation of Leiden is used rather than the leidenalg package: on the 10k-page benchmark
    graph (73k edges) it took 0.31-0.35 s where leidenalg's RBConfiguration took 5.7 s for the
    same modularity (0.243; benchmarks/bench_graph.py measures both). Its random numbers come from a private ``random.Random(seed)`` installed for
    this call only, so the result depends on the seed alone."""
    import igraph

    g = igraph.Graph(n=n, edges=edges, directed=False)
    with _RNG_LOCK:
        igraph.set_random_number_generator(random.Random(seed))
        try:
            clusters = g.community_leiden(objective_function="modularity", weights=weights or None,
                                          resolution=resolution, n_iterations=ITERATIONS)
        finally:
            igraph.set_random_number_generator(random)
    quality = float(getattr(clusters, "quality", 0.0) or 0.0) if edges else 0.0
    return list(clusters.membership), round(quality, 6)


def _hub_scores(n: int, a, b, w, membership, damping: float = 0.85) -> list[float]:
    """PageRank of each page within its own community: one PageRank over the graph with every
    between-community edge removed. Teleport is uniform, so each component's scores are
    proportional to the PageRank of that community alone; the order within it is the same.
    Power iteration in numpy (igraph's PRPACK took 2 s at 10k pages; this takes milliseconds)."""
    import numpy as np

    keep = membership[a] == membership[b]
    src = np.concatenate([a[keep], b[keep]])
    dst = np.concatenate([b[keep], a[keep]])
    ww = np.concatenate([w[keep], w[keep]])
    if not len(src):
        return [0.0] * n
    strength = np.bincount(src, weights=ww, minlength=n)
    dangling = strength == 0
    share = np.divide(ww, strength[src], out=np.zeros_like(ww), where=strength[src] > 0)
    x = np.full(n, 1.0 / n)
    for _ in range(200):
        new = damping * np.bincount(dst, weights=x[src] * share, minlength=n)
        new += (1.0 - damping * (1.0 - x[dangling].sum())) / n
        if np.abs(new - x).sum() < 1e-12:
            x = new
            break
        x = new
    return [round(float(v), 9) for v in x]


def _label(tags: list[str], titles: list[str]) -> str:
    parts = [" ".join(f"#{t}" for t in tags), " / ".join(titles)]
    return " · ".join(p for p in parts if p)


def _label_tags(graph: PageGraph, membership) -> dict[int, list[tuple[int, int]]]:
    """community -> its tags as (tag code, pages) pairs, most pages first, ties by name (codes
    follow the sorted names): one pass over the (page, tag) arrays for all communities."""
    import numpy as np
    if not len(graph.tag_page):
        return {}
    width = len(graph.tag_names)
    keys, pages = np.unique(membership[graph.tag_page] * width + graph.tag_code, return_counts=True)
    community, code = keys // width, keys % width
    order = np.lexsort((code, -pages, community))
    out: dict[int, list[tuple[int, int]]] = {}
    for c, t, n in zip(community[order].tolist(), code[order].tolist(), pages[order].tolist()):
        out.setdefault(c, []).append((t, n))
    return out


def _bridges(paths, a, b, w, membership) -> dict[int, list[Bridge]]:
    """community -> its bridges (strongest first): link weight summed per pair of communities,
    the number of page pairs, and the strongest pair (ties: first by path order)."""
    import numpy as np
    ca, cb = membership[a], membership[b]
    cross = ca != cb
    # each cross edge seen from both ends: (community, other, page in community, page in other)
    c1 = np.concatenate([ca[cross], cb[cross]])
    c2 = np.concatenate([cb[cross], ca[cross]])
    p1 = np.concatenate([a[cross], b[cross]])
    p2 = np.concatenate([b[cross], a[cross]])
    ww = np.concatenate([w[cross], w[cross]])
    out: dict[int, list[Bridge]] = {}
    if not len(c1):
        return out
    order = np.lexsort((p2, p1, -ww, c2, c1))  # by community, other, strongest, then page order
    c1, c2, p1, p2, ww = c1[order], c2[order], p1[order], p2[order], ww[order]
    starts = np.flatnonzero(np.r_[True, (c1[1:] != c1[:-1]) | (c2[1:] != c2[:-1])])
    ends = np.r_[starts[1:], len(c1)]
    for s, e in zip(starts, ends):
        out.setdefault(int(c1[s]), []).append(
            Bridge(int(c2[s]), round(float(ww[s:e].sum()), 4), int(e - s), (paths[p1[s]], paths[p2[s]])))
    for key in out:
        out[key] = sorted(out[key], key=lambda br: (-br.weight, br.community))[:MAX_BRIDGES]
    return out


def compute(graph: PageGraph, resolution: float = DEFAULT_RESOLUTION, seed: int = DEFAULT_SEED,
            semantic_edges: dict[tuple[int, int], float] | None = None, notices: tuple[str, ...] = ()) -> CommunityReport:
    """Communities of ``graph`` (plus optional extra undirected edges between page indexes)."""
    import numpy as np

    if resolution <= 0:
        raise UsageError(f"resolution must be positive, got {resolution}")
    paths = graph.paths
    n = len(paths)
    semantic = semantic_edges is not None
    if n == 0:
        return CommunityReport((), 0, 0, resolution, seed, semantic, 0, 0.0, notices)
    la, lb, lw = graph.undirected()
    ga, gb, gw = la, lb, lw
    if semantic_edges:
        extra = sorted(semantic_edges.items())
        ga, gb, gw = merge_edges(np.concatenate([la, [k[0] for k, _ in extra]]),
                                 np.concatenate([lb, [k[1] for k, _ in extra]]),
                                 np.concatenate([lw, [v for _, v in extra]]), n)
    edges = list(zip(ga.tolist(), gb.tolist()))
    weights = gw.tolist()
    membership, quality = _leiden(n, edges, weights, resolution, seed)
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(membership):
        groups.setdefault(c, []).append(i)  # members in path order: nodes are sorted by path
    ordered = sorted(groups.values(), key=lambda members: (-len(members), paths[members[0]]))
    renumber = {membership[members[0]]: k + 1 for k, members in enumerate(ordered)}
    final = np.array([renumber[c] for c in membership], dtype=np.int64)
    scores = _hub_scores(n, ga, gb, gw, final)
    bridges = _bridges(paths, la, lb, lw, final)

    alone = n - len(set(ga.tolist()) | set(gb.tolist()))
    if alone * 2 > n:  # a folder of unlinked notes: hundreds of one-page "communities" say nothing
        hint = "" if semantic else "; --semantic also joins each page to the pages nearest it in meaning"
        notices = (*notices, f"{alone} of {n} pages link to no other page (each is a community of its own){hint}")
    labels = _label_tags(graph, final)
    communities = []
    for k, members in enumerate(ordered):
        cid = k + 1
        ranked = sorted(members, key=lambda i: (-scores[i], i))[:HUBS]
        floor = 2 if len(members) > 2 else 1
        tags = [graph.tag_names[t] for t, c in labels.get(cid, ()) if c >= floor][:LABEL_TAGS]
        label = _label(tags, [graph.titles[i] for i in ranked[:LABEL_TITLES]])
        communities.append(Community(cid, tuple(paths[i] for i in members), label, tuple(paths[i] for i in ranked),
                                     tuple(tags), tuple(bridges.get(cid, ()))))
    return CommunityReport(tuple(communities), n, len(la), resolution, seed, semantic, len(semantic_edges or {}),
                           quality, notices)


# -- with the vault: semantic edges, the stored result ------------------------------------------
def _key(graph: PageGraph, resolution: float, seed: int, semantic: bool, k: int, vectors: str | None) -> str:
    raw = json.dumps([ALGORITHM, graph.fingerprint(), resolution, seed, semantic, k if semantic else None, vectors])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def detect(ctx, resolution: float = DEFAULT_RESOLUTION, seed: int = DEFAULT_SEED, semantic: bool = False,
           k: int = DEFAULT_K, reuse: bool = True) -> CommunityReport:
    """Communities of the vault's page graph as the cache holds it (run ``index`` first)."""
    if resolution <= 0:
        raise UsageError(f"resolution must be positive, got {resolution}")
    if semantic and not 1 <= k <= 100:
        raise UsageError(f"k must be between 1 and 100, got {k}")
    manifest_of(ctx)  # no cache: IndexStaleError saying to run index
    params = [ALGORITHM, resolution, seed, semantic, k if semantic else None]
    build = state_key(ctx, params)
    if reuse:
        stored = read_stored(ctx, RESULT_FILE, build=build)
        if stored is not None:
            return CommunityReport.from_dict(stored)
    graph = load_page_graph(ctx)
    vectors_id = None
    if semantic:
        faiss_meta = ctx.cache.vector_store.committed(ctx.cache.meta()) or {}
        vectors_id = json.dumps(faiss_meta, sort_keys=True)
    key = _key(graph, resolution, seed, semantic, k, vectors_id)
    stored = read_stored(ctx, RESULT_FILE, key=key) if reuse else None
    if stored is not None:
        write_stored(ctx, RESULT_FILE, stored, key=key, build=build)  # same graph: next time without reading it
        return CommunityReport.from_dict(stored)
    extra = None
    notices: list[str] = []
    if semantic:
        from .semantic import knn_edges, page_vectors
        have, vectors, notice = page_vectors(ctx, graph.paths)
        if notice:
            notices.append(notice)
        extra = knn_edges(have, vectors, k, SEMANTIC_WEIGHT) if len(have) else {}
    report = compute(graph, resolution, seed, extra, tuple(notices))
    write_stored(ctx, RESULT_FILE, report.to_dict(), key=key, build=build)
    return report


def community_members(ctx, n: int) -> set[str]:
    """Paths of community ``n`` (as numbered by ``wikimem communities`` with default settings) for
    the search filter ``--community N``. Served from the stored result while the graph is
    unchanged; UsageError for an unknown number."""
    return set(detect(ctx).community(int(n)).members)
