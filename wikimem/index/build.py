"""The incremental build, one stage per function over one ``BuildPlan``::

    prepare -> scan -> diff + parse -> resolve + chunk -> manifest + lexical + graph (one commit)
            -> vectors from the cache -> [swap in a rebuilt manifest] -> embed what is missing

Progressive: the lexical index, manifest and graph are committed first, so search works at once;
vectors fill in afterwards in batches committed as they go (an interrupted build resumes where it
stopped). A ``dirty`` flag is set while stages are being written; if a build dies midway the next
one sees it and repairs the derived artifacts. A full rebuild (asked for, or because the cache is
corrupt or from another version) is written beside the live manifest and swapped in when
committed, so readers keep the old results meanwhile.

``paths``: a watcher or a write-back that knows which files changed passes them, and only those
are stat'ed, hashed (even when size and mtime match) and re-indexed (a folder among them, or a path
that is no longer a plain file, falls back to the full scan, which stays the default and the
reconcile path; it trusts size+mtime, and a watcher's idle health pass re-hashes a rotating slice).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import stat as stat_mod
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import NoteReadError
from ..model import BuildReport, Chunk, Page
from ..parse import PARSE_VERSION, Resolver
from ..vault.files import ALWAYS_SKIPPED_DIRS, FileInfo, IgnoreRules
from .background import keep_pending
from .passages_job import embed_after_build
from ..stores.sidefiles import raise_if_not_damage
from .embedding import record_coverage, sync_vectors
from ..stores.graph import page_edges
from ..stores.lexical import row as lexical_row
from ..stores.protocol import Stores
from ..stores.manifest import (
    Manifest,
    attachment_row,
    chunk_row,
    graph_links,
    link_kind,
    note_row,
)
from ..embed.held import held_key, held_tag
from .passages import VERSION as PASSAGES_VERSION
from .passages import passage_id, passages
from ..stores.vectors import HELD_BIT, vector_id

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]

__all__ = ["BuildReport", "build", "embed_hash"]


ID_CHANGE_PAGES = 1000  # a build touching more pages records no id change (a kept state re-syncs)


def chunk_vid(chunk: Chunk) -> int:
    """A chunk's vector id, which names the text embedded: the chunk id hashes the path, heading
    path and body, but the embedded text also carries the page title (and aliases), so a page
    retitled in its frontmatter keeps its chunk ids yet must get new vectors. The vector index
    only compares ids, so an id that named the chunk alone kept the old title's vectors."""
    return vector_id(hashlib.sha1(f"{chunk.id}\x00{chunk.index_text()}".encode("utf-8")).hexdigest())


def embed_hash(embedder_key: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_key}\x00{text}".encode("utf-8")).hexdigest()


@dataclass
class BuildPlan:
    """Everything one build decides and carries from stage to stage."""

    ctx: Context
    cache: Stores
    rebuild: bool
    embed: bool
    paths: set[str] | None
    progress: Progress | None
    report: BuildReport = field(default_factory=BuildReport)
    embedder: Any = None
    key: str | None = None
    replacing: bool = False  # writing a new manifest beside the live one
    full_lexical: bool = False
    rebuild_graph: bool = False
    rebuild_vectors: bool = False
    reparse: bool = False  # the cache was parsed by another PARSE_VERSION: every note is read again
    passages_rewritten: bool = False  # every passage row was written again (the passage setting changed)
    # the manifest (its creation stamp) and the generations this build moved it from and to, and how
    # it changed the vector ids wanted (ids retired, {path: ids added}; None when it rewrote more
    # than its own pages' rows): a background embedder advances its kept state by it
    generations: tuple | None = None
    id_change: tuple | None = None
    files: list[FileInfo] = field(default_factory=list)  # what the scan found (all, or the given paths)
    old: dict[str, tuple] = field(default_factory=dict)  # manifest rows: path -> (path, size, mtime, sha, note)
    seen: set[str] = field(default_factory=set)
    parsed: dict[str, Page] = field(default_factory=dict)
    read_stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    stat_only: list[tuple[int, int, str]] = field(default_factory=list)
    attachments: list[tuple] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks: dict[str, list[Chunk]] = field(default_factory=dict)
    cached_aliases: dict[str, list[str]] = field(default_factory=dict)  # of the changed pages, before
    resolver: Resolver | None = None
    links_token: str | None = None  # the manifest state link resolution was built for (see _resolver)
    clock: float = field(default_factory=time.perf_counter)
    embed_after: bool = False  # vectors are missing: embed them once the writer lock is released
    passages: str = "all"  # a note's held passages: all | wait | background (passages_job.embed_after_build)
    held_missing: int = 0  # held passages the vector cache lacked
    scan_started_ns: int = 0  # when this build's full scan began (kept in the manifest for the next one)
    changed_since_ns: int = 0  # the last full scan's start: a file whose ctime is later is hashed

    @property
    def changed(self) -> list[str]:
        return sorted(self.parsed)

    @property
    def files_added_or_removed(self) -> bool:
        return bool(self.removed) or any(p not in self.old for p in self.seen)

    @property
    def aliases_changed(self) -> bool:
        return any(tuple(self.cached_aliases.get(p, ())) != self.parsed[p].aliases
                   for p in self.parsed if p in self.old)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.report.seconds[stage] = self.report.seconds.get(stage, 0.0) + now - self.clock
        self.clock = now


def build(ctx, rebuild: bool = False, embed: bool = True, progress: Progress | None = None,
          wait: float = 0.0, paths: Iterable[str] | None = None, passages: str = "all") -> BuildReport:
    """Bring the cache up to date. The writer lock is held for the lexical index, the graph and
    the vectors the vector cache already has; the model runs after it is released (as a watcher's
    background step does), so a watcher's edit never waits for a long first embedding: it was
    blocked for 17 minutes by one `wikimem index`."""
    cache: Stores = ctx.cache
    taken = (cache.vector_store.taken_local, cache.vector_store.taken_shared)
    with cache.writer_lock(wait=wait):
        plan = BuildPlan(ctx, cache, rebuild, embed, None if paths is None else set(paths), progress,
                         passages=passages)
        try:
            report = _run(plan)
        except cache.damage_errors as exc:  # damage found mid-build: start over beside it, once
            raise_if_not_damage(exc)
            if plan.replacing:
                raise
            cache.abandon_replacement()
            log.warning("the cache is damaged (%s); rebuilding it", exc)
            plan = BuildPlan(ctx, cache, True, embed, None, progress, passages=passages)
            plan.report.notices.append(f"rebuilding the cache: manifest is corrupt ({exc})")
            report = _run(plan)
        finally:
            cache.abandon_replacement()  # a no-op after a successful swap
    if plan.embed_after:
        _embed_unlocked(plan, report, wait=max(wait, LOCK_WAIT_S))
    store = cache.vector_store
    report.vectors_from_shared = store.taken_shared - taken[1]
    report.vectors_from_cache = store.taken_local - taken[0] + report.vectors_from_shared
    if store.shared is not None and store.shared.problem:
        report.notices.append(f"{store.shared.problem}; what it lacked was embedded here")
    if plan.paths is None:  # a full scan: is the same vault in the database under another id?
        twin = cache.twin_notice()
        if twin:
            report.notices.append(twin)
    return report


LOCK_WAIT_S = 30.0  # how long the embedding step waits for another writer's commit (a watcher's edit)


def _embed_unlocked(plan: BuildPlan, report: BuildReport, wait: float) -> None:
    """Embed what the build left missing, in batches, holding the writer lock only to commit."""
    started = time.perf_counter()
    more, report.passages_job = embed_after_build(plan.ctx, plan.passages, plan.held_missing,
                                                  plan.ctx.settings.embed_batch, plan.progress, wait)
    report.embedded_now += more.embedded_now
    for name in ("vectors", "vectors_wanted", "coverage", "passages_held", "passages_wanted"):
        setattr(report, name, getattr(more, name))
    report.notices.extend(n for n in more.notices if n not in report.notices)
    report.degraded = [d for d in report.degraded if d not in ("vectors_partial", "passages_partial")]
    report.degraded.extend(d for d in more.degraded if d not in report.degraded)
    report.seconds["embedding"] = report.seconds.get("embedding", 0.0) + time.perf_counter() - started
    report.searched_ready_s = more.searched_ready_s


def _run(plan: BuildPlan) -> BuildReport:
    _prepare(plan)
    _scan(plan)
    _diff_and_parse(plan)
    _resolve_and_chunk(plan)
    with plan.cache.writing() as manifest:
        _write_manifest(plan, manifest)
        _write_graph(plan, manifest)
    if plan.generations is not None:  # committed: a kept embedding state may follow it
        plan.cache.note_ids_changed(*plan.generations, plan.id_change)
    if plan.resolver is not None:
        plan.cache.runtime.keep("resolver", plan.links_token, plan.resolver)
    plan.lap("graph")
    return _write_vectors(plan)


# -- stage 1: decide what can be trusted --------------------------------------------------------
def _prepare(plan: BuildPlan) -> None:
    cache, settings, report = plan.cache, plan.ctx.settings, plan.report
    cache.sweep_orphans()  # what a rebuild killed before its swap left behind (we hold the writer lock)
    if settings.embedder != "none":
        plan.embedder = cache.embedder()
        if plan.embedder is None and cache.embedder_error:
            report.notices.append(cache.embedder_error)
            report.degraded.append("vectors_unavailable")
    plan.key = report.embedder = plan.embedder.identity.key if plan.embedder else None
    problem = cache.manifest_problem(thorough=plan.paths is None and not plan.rebuild)
    if plan.rebuild or problem:
        if problem and problem != "no cache yet" and not plan.rebuild:
            report.notices.append(f"rebuilding the cache: {problem}")
        plan.paths = None
        if problem != "no cache yet":
            cache.begin_replacement()
            plan.replacing = True
            plan.rebuild_vectors = True
        cache.new_manifest(plan.key)
    meta = cache.meta()
    if meta.get("dirty"):
        report.notices.append("the previous build was interrupted; repairing the cache")
        plan.full_lexical = plan.rebuild_graph = plan.rebuild_vectors = True
        plan.paths = None
    if meta.get("parse_version") != PARSE_VERSION and not plan.rebuild and problem is None:
        if meta.get("parse_version") is not None:  # an older cache than the first version: said once, quietly
            report.notices.append(f"notes are parsed differently since this cache was written (parse version "
                                  f"{meta.get('parse_version')} -> {PARSE_VERSION}): every note is read again once")
        plan.reparse = True
        plan.paths = None
    damaged = cache.artifact_problems(meta, thorough=plan.paths is None)
    if "faiss" in damaged:
        report.notices.append(f"vector index {damaged['faiss']}; rebuilding it from the vector cache")
        plan.rebuild_vectors = True
    if plan.key is not None and meta.get("embedder") not in (None, plan.key):
        report.notices.append(f"embedder changed ({meta.get('embedder')} -> {plan.key}); rebuilding vectors only")
        plan.rebuild_vectors = True
    with cache.writing() as manifest:
        manifest.set_meta(dirty=True)
    plan.lap("prepare")


# -- stage 2: which files exist ---------------------------------------------------------------------
CTIME_SLACK_NS = 2_000_000_000  # file systems whose timestamps are coarse, clocks that step back a little
def _scan(plan: BuildPlan) -> None:
    files = plan.ctx.files
    if plan.paths is not None:
        found = _scan_paths(files, plan.paths)
        if found is not None:
            plan.files = found
            plan.old = plan.cache.manifest.file_states(sorted(plan.paths))
            return
        plan.paths = None  # a folder was named, or something other than a plain file: scan it all
    plan.scan_started_ns = time.time_ns()
    plan.changed_since_ns = int(plan.cache.meta().get("scan_started_ns") or 0) - CTIME_SLACK_NS
    scan = files.scan()
    plan.files = list(scan.files)
    plan.report.skipped = [{"path": s.path, "kind": s.kind, "reason": s.reason} for s in scan.skipped]
    removed = files.sweep_leftovers(scan.leftovers)  # we hold the writer lock: no write of ours is under way
    if removed:
        plan.report.notices.append(f"removed {len(removed)} temp file(s) that killed writes left behind "
                                   f"(.wikimem-*.tmp: {', '.join(removed[:3])}{' ...' if len(removed) > 3 else ''})")
    plan.old = plan.cache.manifest.file_states()


def _scan_paths(files, paths: set[str]) -> list[FileInfo] | None:
    """Stat only the given vault-relative paths, with the full scan's rules (dot-names, ignored
    paths, symlinks out of the vault, plain files only). None: the full scan must decide."""
    rules = IgnoreRules.load(files.root)
    found = []
    for rel in sorted(paths):
        parts = rel.split("/")
        if not rel or rel.startswith("/") or ".." in parts or not _utf8(rel):
            return None
        if any(p.startswith(".") or p in ALWAYS_SKIPPED_DIRS for p in parts):
            continue
        if any(rules.ignored("/".join(parts[:i]), True) for i in range(1, len(parts))) or rules.ignored(rel, False):
            continue
        full = files.root.joinpath(*parts)
        try:
            lst = os.lstat(full)
        except FileNotFoundError:
            continue  # gone: removed below because it is not among the files found
        except OSError:
            return None
        if stat_mod.S_ISLNK(lst.st_mode) or not stat_mod.S_ISREG(lst.st_mode):
            return None  # symlinks, folders, FIFOs...: the full scan knows how to judge them
        if any(os.path.islink(files.root.joinpath(*parts[:i])) for i in range(1, len(parts))):
            return None
        found.append(FileInfo(rel, lst.st_size, lst.st_mtime_ns, lst.st_ctime_ns))
    return found


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (surrogate escapes): the scan reports it
        return False
    return True


# -- stage 3: what changed, parsed --------------------------------------------------------------------
def _diff_and_parse(plan: BuildPlan) -> None:
    ctx, report = plan.ctx, plan.report
    named = plan.paths is not None  # a watcher's event or a write-back: hash them, whatever their stat says
    for i, info in enumerate(plan.files):
        prev = plan.old.get(info.path)
        # unchanged, unless it is an attachment recorded with no hash (unreadable then): hashed again.
        # Size and mtime are a hint, never proof: an edit can keep both (same length, mtime put back
        # by a sync tool or `touch -r`), so a path named to the build is hashed when its stat matches,
        # and read and parsed only when its bytes differ (issue 27 item 7).
        # A full scan hashes too what changed since the last full scan began, by ctime: an edit that
        # put size and mtime back still moved ctime (git's "racily clean" entries, and its trustctime).
        if prev and prev[1] == info.size and prev[2] == info.mtime_ns and (prev[3] or info.is_note) \
                and not (plan.reparse and info.is_note):
            racy = plan.changed_since_ns > 0 and info.ctime_ns >= plan.changed_since_ns
            if not (named or racy) or ctx.files.file_sha256(info.path) in ("", prev[3]):
                plan.seen.add(info.path)
                continue
        if not info.is_note:
            # "" when it cannot be read now (permissions, an online-only file): still recorded, so
            # links to it resolve
            plan.attachments.append(attachment_row(info.path, info.size, info.mtime_ns, ctx.files.file_sha256(info.path)))
            plan.seen.add(info.path)
            continue
        try:
            page, note = ctx.parse_note(info.path, trusted=True)  # the same step as Context.load
        except NoteReadError as exc:
            report.skipped.append({"path": exc.path, "kind": exc.kind, "reason": exc.reason})
            continue
        plan.seen.add(info.path)
        if prev and prev[3] == note.sha256 and not plan.reparse:
            plan.stat_only.append((info.size, info.mtime_ns, info.path))
            continue
        plan.parsed[info.path] = page
        plan.read_stats[info.path] = (note.size, note.mtime_ns)
        if plan.progress and len(plan.parsed) % 200 == 0:
            plan.progress("parsing", i, len(plan.files))
    plan.removed = sorted(set(plan.old) - plan.seen)
    report.added = sum(1 for p in plan.parsed if p not in plan.old)
    report.changed = len(plan.parsed) - report.added
    report.removed = sum(1 for p in plan.removed if plan.old[p][4])
    plan.lap("scan+parse")


# -- stage 4: links resolved, pages chunked ---------------------------------------------------------
def _resolve_and_chunk(plan: BuildPlan) -> None:
    if not plan.parsed:
        plan.lap("chunk")
        return
    resolver = plan.resolver = _resolver(plan)
    for path in plan.changed:
        # chunks keep link targets as written: a resolved path would go stale when its target is
        # renamed while this page is unchanged (readers resolve through Cache.pages())
        plan.chunks[path] = plan.ctx.chunks(plan.parsed[path])
        plan.parsed[path] = resolver.resolve_page(plan.parsed[path])
    plan.lap("chunk")


def _resolver(plan: BuildPlan) -> Resolver:
    """The link resolver for this build's pages. Building one reads every path and alias in the
    manifest (~0.1 s at 10k notes, most of a one-note edit); an edit that adds, removes or renames
    no file and changes no alias reuses the one this process kept from its last build, when the
    manifest is still in the state that resolver was built for (``links_token``, renewed by every
    commit that changes a file, so another process's build or a rebuild makes it stale)."""
    cache = plan.cache
    manifest = cache.manifest
    plan.cached_aliases = manifest.aliases(plan.changed)
    kept = cache.runtime.kept("resolver", manifest.meta().get("links_token"))
    if kept is not None and not plan.files_added_or_removed and not plan.aliases_changed:
        return kept.with_pages(plan.parsed)
    if plan.paths is None:
        every = [f.path for f in plan.files if f.path in plan.seen]
    else:
        every = sorted((set(manifest.file_paths()) - set(plan.removed)) | plan.seen)
    removed = set(plan.removed)
    aliases = {p: a for p, a in manifest.aliases().items() if p not in removed}
    return Resolver(every, plan.parsed, aliases=aliases)


# -- stage 5: manifest and lexical index (search works before vectors) -------------------------------
def _write_manifest(plan: BuildPlan, m: Manifest) -> None:
    key, mode = plan.key, plan.ctx.settings.embed_passages
    held = held_key(plan.embedder, key or "")
    tag = held_tag(plan.embedder)
    lexical = m.lexical
    touched = set(plan.changed) | set(plan.removed)
    speakers_before = m.speaker_counts(touched) if plan.paths is not None and not plan.full_lexical else None
    meta = m.meta()
    # the held passages' variant is part of the record: switching it rewrites every passage row
    # under its new hash (embed/held.py), so no row keeps a hash taken for another variant
    held_variant = getattr(plan.embedder, "held_variant", None)
    passages_key = f"{mode}/{PASSAGES_VERSION}" + (f"/held-{held_variant}" if held_variant else "")
    rewrite_passages = meta.get("passages") != passages_key  # the setting or the cutting changed, or a new cache
    exact = bool(touched) and len(touched) <= ID_CHANGE_PAGES and not (plan.full_lexical or rewrite_passages or plan.replacing)
    retired = m.vector_ids_of(sorted(touched)) if exact else None
    added: dict[str, list[int]] = {}
    if plan.full_lexical:
        lexical.clear()
    else:
        lexical.remove_paths(sorted(touched & set(plan.old)))
    for path in plan.removed:
        m.remove_file(path)
    m.update_stats(plan.stat_only)
    m.put_files(plan.attachments)
    if plan.full_lexical or rewrite_passages:  # redo what was kept (repair, or passages under the new setting)
        kept = m.chunks_except(touched)
        if plan.full_lexical:
            lexical.add([lexical_row(chunk_vid(c), c) for c in kept])
        if rewrite_passages:
            m.clear_passages()
            m.put_passages([row for c in kept for row in _passage_rows(chunk_vid(c), c, mode, key, held, tag)])
            m.set_meta(passages=passages_key)
            plan.passages_rewritten = True
    n_new = sum(len(c) for c in plan.chunks.values())
    done = 0
    frequencies: Counter = Counter()
    for path in plan.changed:
        page = plan.parsed[path]
        m.remove_chunks(path)
        m.put_file(note_row(page, *plan.read_stats[path]))
        rows, lex_rows, passage_rows = [], [], []
        for ordinal, chunk in enumerate(plan.chunks[path]):
            vid = chunk_vid(chunk)
            rows.append(chunk_row(vid, ordinal, embed_hash(key or "", chunk.index_text()), chunk))
            lex_rows.append(lexical_row(vid, chunk))
            passage_rows.extend(_passage_rows(vid, chunk, mode, key, held, tag))
        m.put_chunks(rows)
        m.put_passages(passage_rows)
        if exact:
            added[path] = [row[0] for row in rows] + [row[0] for row in passage_rows]
        lexical.add(lex_rows, frequencies)
        done += len(rows)
        if plan.progress and n_new > 2000:
            plan.progress("indexing", done, n_new)
    lexical.flush(frequencies)
    if touched or rewrite_passages or plan.full_lexical:
        # which commit this is: a background embedder notices the chunk or passage set changed
        before = int(meta.get("generation") or 0)
        m.set_meta(generation=before + 1)
        plan.generations = (meta.get("created"), before, before + 1)
        plan.id_change = (retired, added) if exact else None
    if plan.scan_started_ns:
        m.set_meta(scan_started_ns=plan.scan_started_ns)
    if plan.paths is None and meta.get("parse_version") != PARSE_VERSION:  # every note was parsed by this version
        m.set_meta(parse_version=PARSE_VERSION)
    if touched or plan.attachments:  # the file set or a page changed: a kept link resolver is stale
        plan.links_token = uuid.uuid4().hex
        m.set_meta(links_token=plan.links_token)
    else:
        plan.links_token = meta.get("links_token")
    if touched or "prose_chunks" not in meta:  # transcript speakers, for speaker-aware search
        _write_speakers(plan, m, meta, speakers_before)
    plan.lap("lexical+manifest")


def _write_speakers(plan: BuildPlan, m: Manifest, meta: dict, before: tuple[int, int] | None) -> None:
    """Transcript speakers and the count of prose chunks, for speaker-aware search. An edit among
    prose notes only (the usual case) adjusts the count; anything touching a transcript re-reads
    every chunk's speakers (two scans of the chunk table, ~45 ms at 10k notes)."""
    new = [c for chunks in plan.chunks.values() for c in chunks]
    if before is not None and "prose_chunks" in meta and before[0] == 0 and not any(c.speakers for c in new):
        m.set_meta(prose_chunks=int(meta["prose_chunks"]) - before[1] + len(new))
        return
    m.set_meta(speakers=m.speakers(), prose_chunks=m.prose_chunk_count())


def _passage_rows(vid: int, chunk: Chunk, mode: str, key: str | None, held: str | None = None,
                  tag: str = "") -> list[tuple]:
    """A passage's id names its text too (see chunk_vid). A note's passages are held: hashed under
    ``held`` (the key held passages are embedded under) and their ids name ``tag`` (their variant),
    embed/held.py; a transcript's are searched, and hashed and named as chunks are."""
    kept = not chunk.speakers
    hash_key = (held or key or "") if kept else (key or "")
    name = tag if kept else ""
    return [(passage_id(f"{chunk.id}\x00{text}{name}", i, held=kept), vid, i, embed_hash(hash_key, text), text)
            for i, text in enumerate(passages(chunk, mode))]


# -- stage 6: graph edges -----------------------------------------------------------------------------
def _write_graph(plan: BuildPlan, m: Manifest) -> None:
    """A plain edit rewrites only that page's edges; a new, removed or renamed file or a changed
    alias can change how any link resolves, so then every page's links are re-resolved."""
    empty = not m.has_edges()
    if plan.files_added_or_removed or plan.aliases_changed or plan.rebuild_graph or (empty and plan.parsed):
        _rewrite_edges(m)
        return
    targets = {l.resolved for path in plan.changed for l in graph_links(plan.parsed[path]) if l.resolved}
    notes_now = m.notes_among(sorted(targets))
    for path in plan.changed:
        page = plan.parsed[path]
        m.remove_edges_from(path)
        resolved = [(l.resolved, link_kind(l)) for l in graph_links(page) if l.resolved in notes_now]
        m.put_edges(page_edges(path, resolved, sorted({t.name for t in page.tags})))


def _rewrite_edges(m: Manifest) -> None:
    """Re-resolve every page's links against the whole vault and rewrite the edge list."""
    rows = m.link_rows()
    notes = {r[0] for r in rows if r[4]}
    resolver = Resolver([r[0] for r in rows], {}, aliases={r[0]: json.loads(r[1] or "[]") for r in rows if r[4]})
    m.clear_edges()
    for path, _aliases, links, tags, note in rows:
        if not note:
            continue
        resolved = []
        for target, kind in json.loads(links or "[]"):
            hit, _ = resolver.lookup(target, path, relative=kind == "markdown")
            if hit in notes:
                resolved.append((hit, kind))
        m.put_edges(page_edges(path, resolved, json.loads(tags or "[]")))


# -- stage 7: vectors (from the vector cache first, then the embedder) -------------------------------
def _write_vectors(plan: BuildPlan) -> BuildReport:
    cache, report = plan.cache, plan.report
    pages = cache.manifest.page_count()
    report.unchanged = pages - len(plan.parsed)
    state = None
    if plan.embedder is not None and (plan.embed or plan.replacing or plan.rebuild_vectors):
        state = sync_vectors(cache, plan.embedder, plan.rebuild_vectors)
    else:  # lexical first: vectors follow in embed_pending (a watcher's background step)
        with cache.writing() as tx:
            meta = tx.meta()
            changed = bool(plan.parsed or plan.removed or plan.passages_rewritten) and plan.embedder is not None
            values = {"vectors_pending": changed or bool(meta.get("vectors_pending")),
                      "passages_pending": changed or bool(meta.get("passages_pending"))}
            if changed:  # what is wanted now, for coverage until the vectors follow (save_index)
                held = cache.vector_store.held_wanted(tx)
                values.update(vectors_wanted=tx.wanted_count(), passages_wanted=held)
            tx.set_meta(dirty=False, last_build=time.time(), **values)
    if plan.replacing:
        cache.commit_replacement()  # readers switch to the rebuilt manifest from here on
    plan.lap("vectors")
    if state is not None:
        if plan.embed and state.missing:
            plan.embed_after = True  # by build(), once the writer lock is released
            plan.held_missing = sum(1 for v in state.missing if v & HELD_BIT)
            keep_pending(cache, plan.embedder, state)
        record_coverage(report, state)
        plan.lap("embedding")
    else:
        report.coverage = 1.0  # no vectors were wanted of this build (lexical only, or lexical first)
    report.pages = pages
    report.chunks = cache.manifest.chunk_rows()
    return report
