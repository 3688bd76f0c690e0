"""The incremental build: scan -> diff -> parse -> chunk -> manifest + lexical -> graph -> vectors.

Progressive: the lexical index, manifest and graph are committed first, so search works at once;
vectors fill in afterwards in batches that are committed as they go (an interrupted build resumes
where it stopped). A ``dirty`` flag is set while stages are being written; if a build dies midway
the next one sees the flag and rebuilds the derived artifacts from the manifest.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from ..errors import NoteReadError
from ..model import Chunk, Page
from ..parse import Resolver, parse_page
from .cache import CHUNK_COLUMNS, Cache, chunk_row, row_chunk
from .graph import page_edges
from . import lexical
from .embedding import update_vectors as _update_vectors
from .passages import passage_id, passages
from .vectors import vector_id

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


@dataclass
class BuildReport:
    pages: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded_now: int = 0
    vectors: int = 0  # vectors held: one per chunk plus one per passage (passages.py)
    vectors_wanted: int = 0
    coverage: float = 0.0
    embedder: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["coverage"] = round(self.coverage, 4)
        data["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        return data

    def summary(self) -> str:
        total = sum(self.seconds.values())
        parts = [f"{self.pages} pages, {self.chunks} chunks",
                 f"{self.added} added, {self.changed} changed, {self.removed} removed, {self.unchanged} unchanged"]
        if self.embedder:
            parts.append(f"vectors {self.vectors}/{self.vectors_wanted} ({self.coverage:.0%}), {self.embedded_now} embedded now")
        else:
            parts.append("lexical only")
        return "; ".join(parts) + f" in {total:.2f} s"


def embed_hash(embedder_key: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_key}\x00{text}".encode("utf-8")).hexdigest()


GRAPH_FRONTMATTER_KEYS = ("supersedes", "sources", "source", "related")


def _graph_links(page: Page) -> list:
    """The links that become graph edges: body links plus a few frontmatter keys."""
    return [l for l in page.links
            if l.target and (l.kind != "frontmatter" or l.key in GRAPH_FRONTMATTER_KEYS)]


def _kind(link) -> str:
    return "supersedes" if link.key == "supersedes" else link.kind


def _page_record(page: Page) -> dict[str, Any]:
    links = [[l.target, _kind(l)] for l in _graph_links(page)]
    return {"title": page.title, "type": page.type, "status": page.status, "aliases": list(page.aliases),
            "links": links, "tags": sorted({t.name for t in page.tags}), "errors": list(page.errors)}


def build(vault, rebuild: bool = False, embed: bool = True, progress: Progress | None = None,
          wait: float = 0.0) -> BuildReport:
    cache: Cache = vault.cache
    with cache.writer_lock(wait=wait):
        try:
            return _build(vault, cache, rebuild, embed, progress)
        finally:
            cache.close()  # readers re-open the newly committed state


def _build(vault, cache: Cache, rebuild: bool, embed: bool, progress: Progress | None) -> BuildReport:
    report = BuildReport()
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report.seconds[stage] = report.seconds.get(stage, 0.0) + now - clock
        clock = now

    embedder = cache.embedder() if vault.settings.embedder != "none" else None
    if embedder is None and cache.embedder_error and vault.settings.embedder != "none":
        report.notices.append(cache.embedder_error)
        report.degraded.append("vectors_unavailable")
    key = embedder.identity.key if embedder else None
    report.embedder = key

    # -- decide what can be trusted ----------------------------------------------------------
    problem = cache.manifest_problem()
    if rebuild:
        cache.reset(keep_vectors=True)
    elif problem and problem != "no cache yet":
        report.notices.append(f"rebuilding the cache: {problem}")
        cache.reset(keep_vectors=True)
    if cache.manifest_problem():
        cache.new_manifest(key)
    meta = cache.meta()
    full_lexical = False
    rebuild_graph = False
    rebuild_vectors = False
    if meta.get("dirty"):
        report.notices.append("the previous build was interrupted; repairing the cache")
        full_lexical = rebuild_graph = rebuild_vectors = True
    damaged = cache.artifact_problems(meta)
    if "faiss" in damaged:
        report.notices.append(f"vector index {damaged['faiss']}; rebuilding it from the vector cache")
        rebuild_vectors = True
    if key is not None and meta.get("embedder") not in (None, key):
        report.notices.append(f"embedder changed ({meta.get('embedder')} -> {key}); rebuilding vectors only")
        rebuild_vectors = True
    passage_mode = vault.settings.embed_passages
    with cache.transaction():
        cache.set_meta(dirty=True)
    lap("prepare")

    # -- scan and diff -----------------------------------------------------------------------
    scan = vault.files.scan()
    report.skipped = [{"path": s.path, "kind": s.kind, "reason": s.reason} for s in scan.skipped]
    old = {row[0]: row for row in cache.db.execute("SELECT path, size, mtime_ns, sha256, note FROM files")}
    seen: set[str] = set()
    parsed: dict[str, Page] = {}
    read_stats: dict[str, tuple[int, int]] = {}  # size, mtime as read (a file may change or vanish later)
    stat_only: list[tuple[int, int, str]] = []
    new_files: list[tuple] = []
    for i, info in enumerate(scan.files):
        prev = old.get(info.path)
        if prev and prev[1] == info.size and prev[2] == info.mtime_ns:
            seen.add(info.path)
            continue
        if not info.is_note:
            data_sha = _file_sha(vault, info.path)
            new_files.append((info.path, info.size, info.mtime_ns, data_sha, None, None, None, "[]", "[]", "[]", "[]", 0))
            seen.add(info.path)
            continue
        try:
            note = vault.files.read_note(info.path, trusted=True)
        except NoteReadError as exc:
            report.skipped.append({"path": exc.path, "kind": exc.kind, "reason": exc.reason})
            continue
        seen.add(info.path)
        if prev and prev[3] == note.sha256:
            stat_only.append((info.size, info.mtime_ns, info.path))
            continue
        parsed[info.path] = parse_page(info.path, note.text, note.sha256)
        read_stats[info.path] = (note.size, note.mtime_ns)
        if progress and len(parsed) % 200 == 0:
            progress("parsing", i, len(scan.files))
    removed = sorted(set(old) - seen)
    changed_notes = sorted(parsed)
    report.added = sum(1 for p in changed_notes if p not in old)
    report.changed = len(changed_notes) - report.added
    report.removed = sum(1 for p in removed if old[p][4])
    lap("scan+parse")

    # -- resolve, chunk ------------------------------------------------------------------------
    new_chunks: dict[str, list[Chunk]] = {}
    cached_aliases: dict[str, list[str]] = {}
    if changed_notes:
        cached_aliases = {p: json.loads(a or "[]") for p, a in cache.db.execute("SELECT path, aliases FROM files WHERE note=1")}
        resolver = Resolver([f.path for f in scan.files if f.path in seen], parsed,
                            aliases={p: a for p, a in cached_aliases.items() if p not in removed})
    for path in changed_notes:
        page = resolver.resolve_page(parsed[path])
        parsed[path] = page
        new_chunks[path] = vault.chunks(page)
    lap("chunk")

    # -- manifest and lexical index, in one transaction (search works before vectors) ------------
    touched = set(changed_notes) | set(removed)
    n_new = sum(len(new_chunks[p]) for p in changed_notes)
    with cache.transaction() as db:
        if full_lexical:
            lexical.clear(db)
        else:
            lexical.remove_paths(db, sorted(touched & set(old)))
        for path in removed:
            db.execute("DELETE FROM files WHERE path=?", (path,))
            _delete_chunks(db, path)
        db.executemany("UPDATE files SET size=?, mtime_ns=? WHERE path=?", stat_only)
        db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", new_files)
        rewrite_passages = meta.get("passages") != passage_mode  # the setting changed, or a new cache
        if full_lexical or rewrite_passages:  # redo what was kept (repair, or passages under the new setting)
            kept = [row_chunk(r) for r in db.execute(f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks")
                    if r[2] not in touched]
            if full_lexical:
                lexical.add(db, [lexical.row(vector_id(c.id), c) for c in kept])
            if rewrite_passages:
                db.execute("DELETE FROM passages")
                db.executemany(_INSERT_PASSAGE, [row for c in kept
                                                 for row in _passage_rows(vector_id(c.id), c, passage_mode, key)])
                cache.set_meta(db, passages=passage_mode)
        done = 0
        frequencies: Counter = Counter()
        for path in changed_notes:
            page = parsed[path]
            rec = _page_record(page)
            size, mtime_ns = read_stats[path]
            _delete_chunks(db, path)
            db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                       (path, size, mtime_ns, page.sha256, rec["title"], rec["type"], rec["status"],
                        json.dumps(rec["aliases"], ensure_ascii=False), json.dumps(rec["links"], ensure_ascii=False),
                        json.dumps(rec["tags"], ensure_ascii=False), json.dumps(rec["errors"], ensure_ascii=False), 1))
            rows, lex_rows, passage_rows = [], [], []
            for ordinal, chunk in enumerate(new_chunks[path]):
                vid = vector_id(chunk.id)
                rows.append(chunk_row(vid, ordinal, embed_hash(key or "", chunk.index_text()), chunk))
                lex_rows.append(lexical.row(vid, chunk))
                passage_rows.extend(_passage_rows(vid, chunk, passage_mode, key))
            db.executemany(f"INSERT OR REPLACE INTO chunks VALUES ({','.join('?' * len(CHUNK_COLUMNS))})", rows)
            db.executemany(_INSERT_PASSAGE, passage_rows)
            lexical.add(db, lex_rows, frequencies)
            done += len(rows)
            if progress and n_new > 2000:
                progress("indexing", done, n_new)
        lexical.flush(db, frequencies)
        if touched or "speakers" not in meta:  # transcript speakers for speaker-aware search (scanned here, not per query)
            speakers = sorted({s for (row,) in db.execute("SELECT DISTINCT speakers FROM chunks WHERE speakers != '[]'")
                               for s in json.loads(row)})
            cache.set_meta(db, speakers=speakers)
        lap("lexical+manifest")
        # graph edges: a plain edit rewrites only that page's edges; a new, removed or renamed
        # file or a changed alias can change how any link resolves, so then all are re-resolved
        added_or_removed = bool(removed) or any(p not in old for p in seen)
        aliases_changed = any(tuple(cached_aliases.get(p, ())) != parsed[p].aliases for p in changed_notes if p in old)
        empty = db.execute("SELECT NOT EXISTS (SELECT 1 FROM edges)").fetchone()[0]
        if added_or_removed or aliases_changed or rebuild_graph or (empty and changed_notes):
            _rewrite_edges(db)
        else:
            notes_now = {r[0] for r in db.execute("SELECT path FROM files WHERE note=1")}
            for path in changed_notes:
                page = parsed[path]
                db.execute("DELETE FROM edges WHERE src=?", (path,))
                resolved = [(l.resolved, _kind(l)) for l in _graph_links(page) if l.resolved in notes_now]
                db.executemany("INSERT INTO edges VALUES (?,?,?,?)",
                               page_edges(path, resolved, sorted({t.name for t in page.tags})))

    lap("graph")

    # -- vectors: from the vector cache first, then embed what is missing ---------------------
    report.unchanged = cache.db.execute("SELECT count(*) FROM files WHERE note=1").fetchone()[0] - len(changed_notes)
    if embedder is not None:
        report.vectors, report.vectors_wanted = _update_vectors(cache, embedder, rebuild_vectors, bool(touched), embed,
                                         vault.settings.embed_batch, progress, report, lap)
    else:
        with cache.transaction() as db:
            cache.set_meta(db, dirty=False, last_build=time.time())
    report.pages = cache.db.execute("SELECT count(*) FROM files WHERE note=1").fetchone()[0]
    report.chunks = cache.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    report.coverage = (report.vectors / report.vectors_wanted) if report.vectors_wanted else 1.0
    if embedder is not None and report.coverage < 1.0:
        report.degraded.append("vectors_partial")
    return report


_INSERT_PASSAGE = "INSERT OR REPLACE INTO passages VALUES (?,?,?,?,?)"


def _delete_chunks(db, path: str) -> None:
    db.execute("DELETE FROM passages WHERE vid IN (SELECT vid FROM chunks WHERE path=?)", (path,))
    db.execute("DELETE FROM chunks WHERE path=?", (path,))


def _passage_rows(vid: int, chunk: Chunk, mode: str, key: str | None) -> list[tuple]:
    return [(passage_id(chunk.id, i), vid, i, embed_hash(key or "", text), text)
            for i, text in enumerate(passages(chunk, mode))]


def _file_sha(vault, rel: str) -> str:
    h = hashlib.sha256()
    try:
        with open(vault.files.root.joinpath(*rel.split("/")), "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()


def _rewrite_edges(db) -> None:
    """Re-resolve every page's links against the whole vault and rewrite the edge list."""
    rows = db.execute("SELECT path, aliases, links, tags, note FROM files").fetchall()
    notes = {r[0] for r in rows if r[4]}
    resolver = Resolver([r[0] for r in rows], {}, aliases={r[0]: json.loads(r[1] or "[]") for r in rows if r[4]})
    db.execute("DELETE FROM edges")
    for path, _aliases, links, tags, note in rows:
        if not note:
            continue
        resolved = []
        for target, kind in json.loads(links or "[]"):
            hit, _ = resolver.lookup(target, path, relative=kind == "markdown")
            if hit in notes:
                resolved.append((hit, kind))
        db.executemany("INSERT INTO edges VALUES (?,?,?,?)", page_edges(path, resolved, json.loads(tags or "[]")))


def status(vault) -> dict[str, Any]:
    cache: Cache = vault.cache
    problem = cache.manifest_problem()
    info: dict[str, Any] = {"vault": str(vault.root), "cache": str(cache.dir)}
    if problem:
        info.update({"state": problem, "hint": "run `wikimem index`"})
        return info
    meta = cache.meta()
    pages = cache.db.execute("SELECT count(*) FROM files WHERE note=1").fetchone()[0]
    chunks = cache.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    damaged = cache.artifact_problems(meta)
    vectors = int(meta.get("vectors") or 0) if meta.get("embedder") and "faiss" not in damaged else 0
    wanted = int(meta.get("vectors_wanted") or chunks)
    scan = vault.files.scan()
    known = {r[0]: (r[1], r[2]) for r in cache.db.execute("SELECT path, size, mtime_ns FROM files")}
    current = {f.path: (f.size, f.mtime_ns) for f in scan.files}
    stale = sorted(p for p, st in current.items() if known.get(p) != st)
    gone = sorted(set(known) - set(current))
    degraded = []
    embedder_name = vault.settings.embedder
    if embedder_name == "none":
        degraded.append("vectors_disabled")
    elif meta.get("embedder") is None:
        degraded.append("vectors_unavailable")
    elif vectors < wanted:
        degraded.append("vectors_partial")
    info.update({
        "state": "interrupted build (next index repairs it)" if meta.get("dirty") else "ok",
        "pages": pages,
        "chunks": chunks,
        "passages": cache.db.execute("SELECT count(*) FROM passages").fetchone()[0],
        "vectors": vectors,  # one per chunk and one per passage
        "vector_coverage": round(vectors / wanted, 4) if wanted else 1.0,
        "embedder": meta.get("embedder"),
        "configured_embedder": embedder_name,
        "cache_bytes": cache.size_bytes(),
        "last_build": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta["last_build"])) if meta.get("last_build") else None,
        "stale_files": stale + gone,
        "damaged": damaged,
        "degraded": degraded,
        "schema_version": meta.get("schema_version"),
        "wikimem_version": meta.get("wikimem_version"),
    })
    return info
