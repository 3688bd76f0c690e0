"""The page graph the graph tools work on, read from the cache's ``files`` and ``edges`` tables.

Nothing is re-parsed: titles, types, statuses and tags come from the ``files`` rows the last build
wrote, edges from the ``edges`` table (already weighted by type and summed over repeated links, see
``wikimem.index.graph``). Two kinds of node are left out of the page graph on purpose:

* tag nodes (``#tag``): a tag joins every page that carries it, so one popular tag would pull
  unrelated pages into one cluster and star-shaped tag hubs would dominate PageRank. Tags are used
  for community *labels* instead, where they describe a cluster without shaping it.
* the vault's structural pages (``index.md``, ``log.md``, ``SCHEMA.md`` and the compiled
  ``communities.md``): they link to (nearly) everything by design, so they would bridge every
  cluster, and ``communities --write`` would change the next run's result by writing one of them.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import IndexStaleError, WikimemError

log = logging.getLogger(__name__)

STRUCTURAL_PAGES = frozenset({"index.md", "log.md", "SCHEMA.md", "communities.md"})
PAGE_EDGE_TYPES = ("links_to", "embeds", "supersedes")
EDGE_TYPES = PAGE_EDGE_TYPES + ("tagged",)


@dataclass(frozen=True)
class PageInfo:
    path: str
    title: str
    type: str
    status: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class PageGraph:
    """Pages (sorted by path) and the page-to-page edges between them, as stored: directed rows
    ``(src, dst, type, weight)`` sorted by (src, dst, type)."""

    paths: tuple[str, ...]
    info: dict[str, PageInfo]
    edges: tuple[tuple[str, str, str, float], ...]

    def fingerprint(self) -> str:
        """sha256 over the nodes and edges: equal graphs (e.g. before and after a rebuild) give
        equal fingerprints, so a stored community result can be reused exactly when it is valid."""
        h = hashlib.sha256()
        for p in self.paths:
            h.update(p.encode("utf-8") + b"\0")
        h.update(b"\1")
        for s, d, t, w in self.edges:
            h.update(f"{s}\0{d}\0{t}\0{w:.6g}\n".encode("utf-8"))
        return h.hexdigest()

    def undirected(self):
        """Undirected page edges as numpy arrays ``(a, b, weight)`` with a < b, sorted by (a, b):
        the summed weight of every edge between pages a and b in either direction (indexes into
        ``paths``)."""
        import numpy as np
        index = {p: i for i, p in enumerate(self.paths)}
        src = np.fromiter((index[e[0]] for e in self.edges), np.int64, len(self.edges))
        dst = np.fromiter((index[e[1]] for e in self.edges), np.int64, len(self.edges))
        weight = np.fromiter((e[3] for e in self.edges), np.float64, len(self.edges))
        return merge_edges(np.minimum(src, dst), np.maximum(src, dst), weight, len(self.paths))


def merge_edges(a, b, weight, n: int):
    """Sum the weights of repeated (a, b) pairs; the result is sorted by (a, b)."""
    import numpy as np
    keys, inverse = np.unique(a * max(n, 1) + b, return_inverse=True)
    return keys // max(n, 1), keys % max(n, 1), np.bincount(inverse, weights=weight, minlength=len(keys))


def state_key(vault, params: list) -> str:
    """Which committed cache state a derived result was computed from: the live manifest file and
    the time of its last commit (every build, per-path build and vector commit sets it), plus the
    parameters. Equal keys mean equal tables, so a result stored under the key can be reused."""
    cache = vault.cache
    meta = cache.meta()
    raw = json.dumps([params, cache.manifest_path.name, meta.get("last_build"), meta.get("created")])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def read_stored(vault, name: str, **match: str | None) -> Any:
    """The ``data`` of ``.wikimem/<name>`` when one of ``match``'s fields equals the stored one."""
    try:
        stored = json.loads((vault.cache.dir / name).read_text(encoding="utf-8"))
        if any(value is not None and stored.get(field) == value for field, value in match.items()):
            return stored["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def write_stored(vault, name: str, data: Any, **keys: str) -> None:
    """Keep a derived result in ``.wikimem/<name>`` (atomic; skipped on a read-only cache): a
    shortcut only, so failing to keep it changes nothing."""
    from ..vault.files import atomic_write_bytes
    cache = vault.cache
    if not cache.dir.is_dir() or not cache.writable():
        return
    text = json.dumps({**keys, "data": data}, ensure_ascii=False, sort_keys=True)
    try:
        atomic_write_bytes(cache.dir / name, text.encode("utf-8"))
    except OSError as exc:
        log.info("could not keep %s: %s", name, exc)


def db_of(vault) -> sqlite3.Connection:
    """The manifest connection, or IndexStaleError (exit 1) saying how to build one."""
    problem = vault.cache.manifest_problem()
    if problem:
        raise IndexStaleError(f"{problem}: run `wikimem index {vault.root}` first")
    return vault.cache.db


def _tags(text: str | None) -> tuple[str, ...]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return ()
    return tuple(sorted(str(t) for t in value)) if isinstance(value, list) else ()


def page_infos(db: sqlite3.Connection, paths: Iterable[str] | None = None) -> dict[str, PageInfo]:
    """Pages (all, or just ``paths``) by path, sorted."""
    from ..index.cache import select_in
    columns = "SELECT path, title, type, status, tags FROM files WHERE note=1"
    rows = (db.execute(columns + " ORDER BY path") if paths is None
            else sorted(select_in(db, columns + " AND path IN ({marks})", sorted(set(paths)))))
    return {p: PageInfo(p, title or p.rsplit("/", 1)[-1].removesuffix(".md"), type_ or "note", status or "active",
                        _tags(tags)) for p, title, type_, status, tags in rows}


def load_page_graph(vault, include_structural: bool = False) -> PageGraph:
    db = db_of(vault)
    info = page_infos(db)
    if not include_structural:
        info = {p: i for p, i in info.items() if p not in STRUCTURAL_PAGES}
    marks = ",".join("?" * len(PAGE_EDGE_TYPES))
    rows = db.execute(f"SELECT src, dst, type, weight FROM edges WHERE type IN ({marks}) ORDER BY src, dst, type",
                      PAGE_EDGE_TYPES).fetchall()
    edges = tuple((s, d, t, float(w)) for s, d, t, w in rows if s in info and d in info and s != d)
    return PageGraph(tuple(info), info, edges)


def resolve_page(vault, name: str, db: sqlite3.Connection | None = None) -> str:
    """A page the user named: a vault-relative path (``.md`` optional), a file name or a title
    (case-insensitive). Unknown -> WikimemError; several matches -> WikimemError listing them.
    An exact path is one indexed lookup; only other names read the list of pages."""
    db = db if db is not None else db_of(vault)
    wanted = name.strip().replace("\\", "/").removeprefix("./")
    if wanted.startswith("[[") and wanted.endswith("]]"):
        wanted = wanted[2:-2].split("|", 1)[0].split("#", 1)[0]
    exact = page_infos(db, (wanted, wanted + ".md"))
    for candidate in (wanted, wanted + ".md"):
        if candidate in exact:
            return candidate
    low = wanted.lower().removesuffix(".md")
    matches = sorted(p for p, title in db.execute("SELECT path, title FROM files WHERE note=1")
                     if p.lower().removesuffix(".md") == low or p.rsplit("/", 1)[-1].lower().removesuffix(".md") == low
                     or (title or "").lower() == low)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise WikimemError(f"{name!r} names several pages: {', '.join(matches[:10])}; give the path")
    raise WikimemError(f"no such page in the index: {name!r} (give a vault-relative path; "
                       f"run `wikimem index` if the page is new)")


def parse_types(types: Iterable[str] | str | None) -> tuple[str, ...] | None:
    """``links_to,supersedes`` -> ("links_to", "supersedes"); None -> None (all page edge types)."""
    from ..errors import UsageError
    if types is None:
        return None
    items = types.split(",") if isinstance(types, str) else [t for part in types for t in str(part).split(",")]
    items = [t.strip() for t in items if t.strip()]
    unknown = sorted(set(items) - set(EDGE_TYPES))
    if unknown:
        raise UsageError(f"unknown edge type {', '.join(unknown)} (choose from {', '.join(EDGE_TYPES)})")
    return tuple(dict.fromkeys(items)) or None
