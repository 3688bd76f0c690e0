"""``neighbors PAGE`` and ``path A B``: walks over the ``edges`` table, one indexed query per page
visited (no graph is loaded, so a walk costs milliseconds at any vault size).

``neighbors`` is a breadth-first search to ``depth`` (1..3) in both directions: each neighbour is
listed once, at the depth it was first reached, with every edge between it and the page it was
reached from (direction, type, weight). The fan-out cap keeps the strongest neighbours of each page
expanded (by summed weight, then path), so a hub does not flood the answer. Tag nodes are listed
only when ``tagged`` is asked for, and are never walked through (a tag joins unrelated pages).
The structural pages (``index.md``, ``log.md``, ``communities.md``...) link to everything by design
and are left out of both walks.
``path`` is a breadth-first shortest path (fewest links, ties broken by path order).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import UsageError
from .pagegraph import PAGE_EDGE_TYPES, STRUCTURAL_PAGES, manifest_of, page_infos, parse_types, resolve_page

DEFAULT_FANOUT = 20


@dataclass(frozen=True)
class Edge:
    direction: str  # "out": the nearer page links to this one; "in": this one links to it
    type: str
    weight: float

    def to_dict(self) -> dict[str, Any]:
        return {"direction": self.direction, "type": self.type, "weight": self.weight}


@dataclass(frozen=True)
class Neighbor:
    path: str
    title: str
    kind: str  # page | tag | file
    depth: int
    via: str  # the page it was reached from
    edges: tuple[Edge, ...]

    @property
    def weight(self) -> float:
        return round(sum(e.weight for e in self.edges), 6)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "kind": self.kind, "depth": self.depth, "via": self.via,
                "weight": self.weight, "edges": [e.to_dict() for e in self.edges]}


@dataclass(frozen=True)
class NeighborReport:
    page: str
    title: str
    depth: int
    types: tuple[str, ...]
    min_weight: float
    fanout: int
    neighbors: tuple[Neighbor, ...]
    truncated: tuple[str, ...] = field(default=())  # pages whose neighbours were cut by the fan-out cap

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.page, "title": self.title, "depth": self.depth, "types": list(self.types),
                "min_weight": self.min_weight, "fanout": self.fanout, "count": len(self.neighbors),
                "truncated": list(self.truncated), "neighbors": [n.to_dict() for n in self.neighbors]}


def _edges_of(manifest, path: str, types: tuple[str, ...]) -> dict[str, list[Edge]]:
    rows = manifest.edges_of(path, types)
    found: dict[str, list[Edge]] = {}
    for other, direction, etype, weight in rows:
        if other != path:
            found.setdefault(other, []).append(Edge(direction, etype, round(float(weight), 6)))
    for edges in found.values():
        edges.sort(key=lambda e: (e.direction != "out", e.type))
    return found


def _check(depth: int, min_weight: float, fanout: int) -> None:
    if not 1 <= depth <= 3:
        raise UsageError(f"depth must be 1, 2 or 3, got {depth}")
    if min_weight < 0:
        raise UsageError(f"min-weight must not be negative, got {min_weight}")
    if fanout < 1:
        raise UsageError(f"fan-out must be at least 1, got {fanout}")


def neighbors(ctx, page: str, depth: int = 1, types: Iterable[str] | str | None = None, min_weight: float = 0.0,
              fanout: int = DEFAULT_FANOUT) -> NeighborReport:
    _check(depth, min_weight, fanout)
    wanted = parse_types(types) or PAGE_EDGE_TYPES
    manifest = manifest_of(ctx)
    start = resolve_page(ctx, page, manifest)
    seen = {start}
    reached: list[tuple[str, int, str, tuple[Edge, ...]]] = []
    truncated: list[str] = []
    frontier = [start]
    for level in range(1, depth + 1):
        following: list[str] = []
        for here in frontier:
            candidates = [(other, edges) for other, edges in _edges_of(manifest, here, wanted).items()
                          if other not in seen and other not in STRUCTURAL_PAGES
                          and sum(e.weight for e in edges) >= min_weight]
            candidates.sort(key=lambda oe: (-sum(e.weight for e in oe[1]), oe[0]))
            if len(candidates) > fanout:
                truncated.append(here)
                candidates = candidates[:fanout]
            for other, edges in candidates:
                seen.add(other)
                reached.append((other, level, here, tuple(edges)))
                if not other.startswith("#"):  # page edges join notes only; tags are not walked through
                    following.append(other)
        frontier = following
    info = page_infos(manifest, [start, *(r[0] for r in reached)])
    found = [Neighbor(other, info[other].title if other in info else other,
                      "tag" if other.startswith("#") else ("page" if other in info else "file"), level, via, edges)
             for other, level, via, edges in reached]
    found.sort(key=lambda n: (n.depth, -n.weight, n.path))
    return NeighborReport(start, info[start].title, depth, tuple(wanted), min_weight, fanout, tuple(found),
                          tuple(sorted(truncated)))


@dataclass(frozen=True)
class PathStep:
    path: str
    title: str
    edges: tuple[Edge, ...]  # between the previous step and this one (empty for the first)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "edges": [e.to_dict() for e in self.edges]}


@dataclass(frozen=True)
class PathReport:
    source: str
    target: str
    found: bool
    steps: tuple[PathStep, ...]
    directed: bool

    @property
    def length(self) -> int | None:
        return len(self.steps) - 1 if self.found else None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "found": self.found, "length": self.length,
                "directed": self.directed, "steps": [s.to_dict() for s in self.steps]}


def _flip(edges: tuple[Edge, ...]) -> tuple[Edge, ...]:
    return tuple(sorted((Edge("in" if e.direction == "out" else "out", e.type, e.weight) for e in edges),
                        key=lambda e: (e.direction != "out", e.type)))


def path(ctx, source: str, target: str, types: Iterable[str] | str | None = None,
         directed: bool = False) -> PathReport:
    """Fewest-links path from ``source`` to ``target`` over page edges (either direction unless
    ``directed``: then only following links as written). No path: ``found`` is False.
    Bidirectional breadth-first search, expanding whichever side has the smaller frontier a whole
    level at a time, so a path across a 10k-page vault visits a few hundred pages, not all."""
    wanted = tuple(t for t in (parse_types(types) or PAGE_EDGE_TYPES) if t != "tagged")
    if not wanted:
        raise UsageError("a path follows links between pages; the tagged edge type alone gives none")
    manifest = manifest_of(ctx)
    a, b = resolve_page(ctx, source, manifest), resolve_page(ctx, target, manifest)
    # node -> (depth, the node it was reached from, edges as seen from that node)
    sides: tuple[dict, dict] = ({a: (0, None, ())}, {b: (0, None, ())})
    fronts = ([a], [b])
    meet = a if a == b else None
    while meet is None and fronts[0] and fronts[1]:
        side = 0 if len(fronts[0]) <= len(fronts[1]) else 1
        mine, other = sides[side], sides[1 - side]
        following, meets = [], []
        for here in fronts[side]:
            if here in STRUCTURAL_PAGES and here not in (a, b):
                continue  # index.md would join everything to everything in two steps
            for nxt, edges in sorted(_edges_of(manifest, here, wanted).items()):
                if directed:
                    edges = [e for e in edges if e.direction == ("out" if side == 0 else "in")]
                if not edges or nxt in mine or (nxt in STRUCTURAL_PAGES and nxt not in (a, b)):
                    continue
                mine[nxt] = (mine[here][0] + 1, here, tuple(edges))
                following.append(nxt)
                if nxt in other:
                    meets.append((mine[nxt][0] + other[nxt][0], nxt))
        if meets:
            meet = min(meets)[1]
        fronts = (following, fronts[1]) if side == 0 else (fronts[0], following)
    if meet is None:
        return PathReport(a, b, False, (), directed)
    chain: list[tuple[str, tuple[Edge, ...]]] = []
    node: str | None = meet
    while node is not None:  # meet back to a
        _, parent, edges = sides[0][node]
        chain.append((node, edges))
        node = parent
    chain.reverse()
    node = meet
    while sides[1][node][1] is not None:  # meet on to b: edges seen from the step before
        _, nxt, edges = sides[1][node]
        chain.append((nxt, _flip(edges)))
        node = nxt
    info = page_infos(manifest, [p for p, _ in chain])
    steps = tuple(PathStep(p, info[p].title if p in info else p, e) for p, e in chain)
    return PathReport(a, b, True, steps, directed)
