"""The page graph the graph tools work on, read from the cache's ``files`` and ``edges`` tables
through the manifest's named questions (``wikimem.stores.manifest_reads``).

Nothing is re-parsed: titles, types, statuses and tags come from the ``files`` rows the last build
wrote, edges from the ``edges`` table (already weighted by type and summed over repeated links, see
``wikimem.stores.graph``). Two kinds of node are left out of the page graph on purpose:

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
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import IndexStaleError
from ..stores.manifest import Manifest
from ..parse.names import clean_name, find_page

log = logging.getLogger(__name__)

STRUCTURAL_PAGES = frozenset({"index.md", "log.md", "SCHEMA.md", "communities.md", "AGENTS.md"})
PAGE_EDGE_TYPES = ("links_to", "embeds", "supersedes")
EDGE_TYPES = PAGE_EDGE_TYPES + ("tagged",)


@dataclass(frozen=True)
class PageInfo:
    path: str
    title: str
    type: str
    status: str
    tags: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class PageGraph:
    """Pages (sorted by path) with their titles and tags, and the page-to-page edges between them,
    as numpy arrays: one entry per stored edge row ``(src, dst, type, weight)``, sorted by (src,
    dst, type), ``src``/``dst`` indexing ``paths`` and ``types`` indexing ``PAGE_EDGE_TYPES``;
    one entry per (page, tag) in ``tag_page``/``tag_code``, ``tag_code`` indexing ``tag_names``
    (sorted, so comparing codes compares names). Arrays rather than Python rows and per-page
    records because every consumer (fingerprint, Leiden, PageRank, bridges, labels) works on
    indexes: at 10k pages and 73k edges the per-row objects cost more than Leiden itself."""

    paths: tuple[str, ...]
    titles: tuple[str, ...]
    src: Any
    dst: Any
    types: Any
    weight: Any
    tag_names: tuple[str, ...]
    tag_page: Any
    tag_code: Any

    @property
    def edge_count(self) -> int:
        return len(self.src)

    def edges(self) -> list[tuple[str, str, str, float]]:
        """The edges as ``(src, dst, type, weight)`` rows (for reading and tests; slow at scale)."""
        return [(self.paths[s], self.paths[d], PAGE_EDGE_TYPES[t], float(w))
                for s, d, t, w in zip(self.src.tolist(), self.dst.tolist(), self.types.tolist(), self.weight.tolist())]

    def fingerprint(self) -> str:
        """sha256 over everything a community result is made of (pages, titles, tags, edges):
        equal graphs (e.g. before and after a rebuild) give equal fingerprints, so a stored result
        can be reused exactly when it is valid; a changed title or tag changes the labels, so it
        changes the fingerprint too. Arrays are hashed as fixed-width little-endian bytes, so the
        value does not depend on the platform."""
        import numpy as np
        h = hashlib.sha256()
        for strings in (self.paths, self.titles, self.tag_names):
            h.update(json.dumps(strings, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\1")
        for array, dtype in ((self.src, "<i8"), (self.dst, "<i8"), (self.types, "<i1"), (self.weight, "<f8"),
                             (self.tag_page, "<i8"), (self.tag_code, "<i8")):
            h.update(np.ascontiguousarray(array, dtype=dtype).tobytes() + b"\1")
        return h.hexdigest()

    def undirected(self):
        """Undirected page edges as numpy arrays ``(a, b, weight)`` with a < b, sorted by (a, b):
        the summed weight of every edge between pages a and b in either direction (indexes into
        ``paths``)."""
        import numpy as np
        return merge_edges(np.minimum(self.src, self.dst), np.maximum(self.src, self.dst), self.weight, len(self.paths))


def merge_edges(a, b, weight, n: int):
    """Sum the weights of repeated (a, b) pairs; the result is sorted by (a, b)."""
    import numpy as np
    keys, inverse = np.unique(a * max(n, 1) + b, return_inverse=True)
    return keys // max(n, 1), keys % max(n, 1), np.bincount(inverse, weights=weight, minlength=len(keys))


def state_key(ctx, params: list) -> str:
    """Which committed cache state a derived result was computed from: the live state (the stores'
    ``state_key``: the manifest file, or the database schema) and the time of its last commit
    (every build, per-path build and vector commit sets it), plus the parameters. Equal keys mean equal tables, so a result stored under the key can be reused."""
    cache = ctx.cache
    meta = cache.meta()
    raw = json.dumps([params, cache.state_key(), meta.get("last_build"), meta.get("created")])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def read_stored(ctx, name: str, **match: str | None) -> Any:
    """The ``data`` of ``.wikimem/<name>`` when one of ``match``'s fields equals the stored one."""
    try:
        stored = json.loads((ctx.cache.dir / name).read_text(encoding="utf-8"))
        if any(value is not None and stored.get(field) == value for field, value in match.items()):
            return stored["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def write_stored(ctx, name: str, data: Any, **keys: str) -> None:
    """Keep a derived result in ``.wikimem/<name>`` (atomic; skipped on a read-only cache): a
    shortcut only, so failing to keep it changes nothing."""
    cache = ctx.cache
    if not cache.dir.is_dir() or not cache.writable():
        return
    text = json.dumps({**keys, "data": data}, ensure_ascii=False, sort_keys=True)
    try:
        cache.write_side_file(name, text.encode("utf-8"))
    except OSError as exc:
        log.info("could not keep %s: %s", name, exc)


def manifest_of(ctx) -> Manifest:
    """The manifest (this thread's connection), or IndexStaleError (exit 1) saying how to build one."""
    problem = ctx.cache.manifest_problem()
    if problem:
        raise IndexStaleError(f"{problem}: run `wikimem index {ctx.root}` first")
    return ctx.cache.manifest


def json_list(text: str | None) -> list:
    """``text`` parsed as a JSON list; [] for none or a damaged one."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def json_lists(texts: list[str | None]) -> list[list]:
    """Each text parsed as a JSON list ([] for none or a damaged one). One parse for all of them
    when they are all valid: at 10k pages the separate json.loads calls cost more than what is
    done with their results."""
    texts = [t or "[]" for t in texts]
    try:
        parsed = json.loads("[" + ",".join(texts) + "]")
    except ValueError:
        parsed = None
    if parsed is None or len(parsed) != len(texts):
        return [json_list(t) for t in texts]
    return [v if isinstance(v, list) else [] for v in parsed]


def _tags(text: str | None) -> tuple[str, ...]:
    return tuple(sorted(str(t) for t in json_list(text)))


def page_infos(manifest: Manifest, paths: Iterable[str] | None = None) -> dict[str, PageInfo]:
    """Pages (all, or just ``paths``) by path, sorted."""
    rows = manifest.pages_by_path(paths)
    return {p: PageInfo(p, title or p.rsplit("/", 1)[-1].removesuffix(".md"), type_ or "note", status or "active",
                        _tags(tags)) for p, title, type_, status, tags in rows}


def load_page_graph(ctx, include_structural: bool = False) -> PageGraph:
    """The page graph as the cache holds it, read in one snapshot. Edge rows are mapped to page
    indexes on the way in (rows whose ends are not pages of the graph, and self-links, are left
    out), then sorted by (src, dst, type) in numpy, so the result does not depend on the order
    SQLite returns them."""
    import numpy as np
    manifest_of(ctx)  # no cache: IndexStaleError saying to run index
    with ctx.cache.reading() as manifest:
        pages = manifest.page_titles_and_tags()
        rows = manifest.typed_edges(PAGE_EDGE_TYPES)  # (src, dst, index into PAGE_EDGE_TYPES, weight)
    if not include_structural:
        pages = [row for row in pages if row[0] not in STRUCTURAL_PAGES]
    paths = tuple(row[0] for row in pages)
    titles = tuple(title or p.rsplit("/", 1)[-1].removesuffix(".md") for p, title, _ in pages)
    index = {p: i for i, p in enumerate(paths)}.get
    count = len(rows)
    src = np.fromiter((index(r[0], -1) for r in rows), np.int64, count)
    dst = np.fromiter((index(r[1], -1) for r in rows), np.int64, count)
    types = np.fromiter((r[2] for r in rows), np.int8, count)
    weight = np.fromiter((r[3] for r in rows), np.float64, count)
    keep = (src >= 0) & (dst >= 0) & (src != dst)
    src, dst, types, weight = src[keep], dst[keep], types[keep], weight[keep]
    order = np.lexsort((types, dst, src))
    tags = [[str(t) for t in page_tags] for page_tags in json_lists([text for _, _, text in pages])]
    tag_names = tuple(sorted({t for page_tags in tags for t in page_tags}))
    code = {t: k for k, t in enumerate(tag_names)}
    tag_page = np.array([i for i, page_tags in enumerate(tags) for _ in page_tags], np.int64)
    tag_code = np.array([code[t] for page_tags in tags for t in page_tags], np.int64)
    return PageGraph(paths, titles, src[order], dst[order], types[order], weight[order], tag_names, tag_page, tag_code)


def resolve_page(ctx, name: str, manifest: Manifest | None = None) -> str:
    """A page the user named: a vault-relative path (``.md`` optional), a file name, a title or an
    alias, found as parse/names.py finds it. Unknown -> PageNotFoundError; several matches ->
    AmbiguousPageError listing them. An exact path is one indexed lookup; only other names read
    the list of pages."""
    manifest = manifest if manifest is not None else manifest_of(ctx)
    wanted = clean_name(name)
    forms = list(dict.fromkeys(f for w in (wanted, *(unicodedata.normalize(n, wanted) for n in ("NFC", "NFD")))
                               for f in (w, w + ".md")))  # either Unicode form typed finds the file
    exact = page_infos(manifest, forms)
    for candidate in forms:
        if candidate in exact:
            return candidate
    rows = manifest.page_names()
    aliases = json_lists([text or "[]" for _, _, text in rows])
    return find_page(name, {path: (title or "", tuple(str(a) for a in names))
                            for (path, title, _), names in zip(rows, aliases)})


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
