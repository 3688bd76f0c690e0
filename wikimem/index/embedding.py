"""The vector stage of a build: bring FAISS in line with the chunk table, using cached vectors
first (no model calls) and the embedder for what is missing, committing as it goes.

Embedding shares the process's cores with searches, so it goes through one gate: a query
embedding waits for no backlog (the backlog pauses between batches while a search is running),
and two threads never run the model at once (on two cores that made both several times slower).

The vector side is reached through ``cache.vector_store`` (``protocol.VectorsPart``, e.g. ``local.vectorstore.FaissVectors``: load,
fresh, save, the vector cache) and the manifest's named questions; no SQL is written here.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..embed.held import earlier_held_key, embed_mixed
from ..errors import EmbedderError
from ..model import coverage_degraded
from ..stores.protocol import Stores
from ..stores.vectors import HELD_BIT, id_difference, id_intersection, sorted_ids
from ..stores.vectorstore import VectorStore, id_signature

log = logging.getLogger(__name__)

SAVE_EVERY_S = 20.0  # while embedding a backlog, commit progress this often
EMBED_STAGE = "embedding"  # progress stages: the vectors search scans,
PASSAGES_STAGE = "passages"  # then a note's held passages (re-ranking only)
SYNC_BATCH = 20_000  # vectors read from the vector cache at a time


class EmbedGate:
    """Queries first: ``query()`` marks a search in progress; embedding batches wait while one is.
    A *background* backlog (a watcher's vectors behind the lexical index, which nobody waits for)
    also starts a batch only when no search has embedded its query for ``QUIET_S`` (so the rest of
    that search, and the next one of a burst, run on idle cores), waiting at most ``max_wait`` so it
    is never starved, and while searches keep coming (``interactive``) it embeds one text a batch,
    so a query that arrives mid-batch waits for one text, not four. A foreground build (``index``,
    a write's cache update: someone waits for it) only waits out running queries. Model calls are
    serialised.

    One gate per process, not per vault, on purpose: what it schedules is the machine's cores and
    the model, and both are shared by every vault open in the process (the default e5 model is
    loaded once and shared: embed/; a vault's backlog on two cores slows another vault's search
    exactly as much as its own). Per-vault gates would let vault B's backlog run the model while
    vault A embeds a query, the contention the gate exists to prevent. Per-vault state lives in
    ``Cache.runtime`` (runtime.py)."""

    INTERACTIVE_S = 10.0  # a search this recent means more may follow
    QUIET_S = 0.5  # measured: p95 search 429 ms during a 5,000-chunk backlog without this gap

    def __init__(self) -> None:
        self._model = threading.Lock()
        self._queries = 0
        self._last_query = float("-inf")
        self._cond = threading.Condition()

    def interactive(self) -> bool:
        return time.monotonic() - self._last_query < self.INTERACTIVE_S

    @contextlib.contextmanager
    def query(self):
        with self._cond:
            self._queries += 1
        try:
            with self._model:
                yield
        finally:
            with self._cond:
                self._queries -= 1
                self._last_query = time.monotonic()
                self._cond.notify_all()

    @contextlib.contextmanager
    def backlog_batch(self, max_wait: float = 5.0, background: bool = True):
        deadline = time.monotonic() + max_wait
        gap = self.QUIET_S if background else 0.0
        with self._cond:
            while True:
                now = time.monotonic()
                quiet_for = now - self._last_query
                if (self._queries == 0 and quiet_for >= gap) or now >= deadline:
                    break
                self._cond.wait(min(deadline - now, max(gap - quiet_for, 0.01)))
        with self._model:
            yield


GATE = EmbedGate()


@dataclass
class VectorState:
    """The FAISS index being brought up to date and what it still lacks."""

    want: np.ndarray  # the vector ids wanted, sorted: one per chunk, one per passage
    held_wanted: int = 0  # how many of them are held (a note's passages: stores/vectors.py)
    index: VectorStore | None = None
    missing: list[int] = field(default_factory=list)
    hashes: dict[int, str] = field(default_factory=dict)  # embed hash of each missing id
    held: int = 0
    # The embedding queue, derived from ``missing`` on first use and kept while the state is (a
    # watcher embeds a backlog in slices; deriving it costs ~0.5 s at 40k missing chunks):
    pending: dict[str, list[int]] | None = None  # embed hash -> the ids waiting for it, in id order
    by_path: dict[str, list[str]] | None = None  # page path -> its waiting hashes (recent edits go first)

    def reset_queue(self) -> None:
        self.pending = self.by_path = None


def _load_cached_vectors(cache: Stores, key: str, dim: int, hashes: list[str]) -> dict[str, np.ndarray]:
    return cache.vector_store.cached(key, dim, hashes)


def sync_vectors(cache: Stores, embedder, rebuild: bool) -> VectorState:
    """Bring the FAISS index in line with the chunk and passage tables from cached vectors (no
    model calls) and save it; what is still missing is returned for ``embed_missing``.

    When nothing changed and the index is complete, FAISS is not even opened: at 40k chunks
    loading and saving it is most of a no-change re-index."""
    key, dim = embedder.identity.key, embedder.identity.dim
    meta = cache.meta()
    want = cache.manifest.wanted_ids()
    state = VectorState(want, int(np.count_nonzero(want & HELD_BIT)))
    # (the held count too: the index may hold every wanted id while the meta still counts held passages
    # no longer wanted, embed_passages turned to "none" before any was embedded, and status said partial)
    complete = meta.get("vectors_sig") == _id_signature(want) and cache.vector_store.committed_current(meta) \
        and int(meta.get("passages_wanted") or 0) == state.held_wanted
    if not rebuild and complete and meta.get("embedder") == key:
        with cache.transaction() as db:  # complete: whatever a lexical-first build left pending is not
            cache.set_meta(db, dirty=False, last_build=time.time(), vectors_pending=False, passages_pending=False)
        state.held = len(want)
        return state
    index = None
    if not rebuild and meta.get("embedder") == key:
        index = cache.vector_store.load(dim, meta)  # held in memory, or loaded (file checksum checked, delta applied)
    if index is None:
        index = cache.vector_store.fresh(dim)
        missing = want.tolist()
    else:
        have = sorted_ids(index.ids())  # array set operations: ~500k ids at 100k chunks with passages
        index.remove(id_difference(have, want).tolist())
        missing = id_difference(want, have).tolist()
    state.missing = []
    earlier = earlier_held_key(embedder, meta.get("embedder"), meta.get("passages"))
    for start in range(0, len(missing), SYNC_BATCH):  # a slice at a time: 400k float32 vectors are 600 MB
        part = missing[start:start + SYNC_BATCH]
        hashes = cache.manifest.embed_hashes(part)
        cached = _load_cached_vectors(cache, key, dim, sorted(set(hashes.values())))
        if earlier is not None:
            cached.update(_carry_held(cache, key, earlier, dim, part, hashes, cached))
        from_cache = [v for v in part if hashes.get(v) in cached]
        if from_cache:
            index.add(from_cache, np.stack([cached[hashes[v]] for v in from_cache]))
        left = [v for v in part if v in hashes and hashes[v] not in cached]
        state.missing += left
        state.hashes.update((v, hashes[v]) for v in left)
    state.index = index
    save_index(cache, index, key, len(want), state.held_wanted, dirty=False)
    state.held = index.ntotal
    return state


def _carry_held(cache: Stores, key: str, earlier: str, dim: int, part: list[int], hashes: dict[int, str],
                cached: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Held passages' vectors the build before kept under ``earlier`` (embed/held.py
    ``earlier_held_key``: only the chunks' variant changed, the held model is the same), copied under
    ``key`` so the index and its deltas find them where they find every other vector."""
    wanted = sorted({hashes[v] for v in part if v & HELD_BIT and v in hashes and hashes[v] not in cached})
    found = _load_cached_vectors(cache, earlier, dim, wanted) if wanted else {}
    if found:
        cache.vector_store.remember(key, list(found), np.stack(list(found.values())))
    return found


def advance(cache: Stores, embedder, state: VectorState, changes: list[tuple]) -> bool:
    """Bring a kept ``state`` up to date with the builds committed since it was derived, from the
    ids each retired and added (``Runtime.ids_changed``, in commit order), instead of re-deriving it
    with ``sync_vectors``, which reads every wanted id and compares it with every indexed one (~0.1 s
    of a watcher's one-note edit at 10k notes). The state it leaves is the one ``sync_vectors``
    would (tested); the index is not saved here. Returns whether the index changed."""
    before = want = state.want
    paths: dict[int, str] = {}  # id added -> its page
    retired_any: list[int] = []
    for retired, added in changes:
        want = id_difference(want, sorted_ids(retired))
        fresh = id_difference(sorted_ids([i for ids in added.values() for i in ids]), want)
        want = np.insert(want, np.searchsorted(want, fresh), fresh)
        retired_any += retired
        paths.update((i, path) for path, ids in added.items() for i in ids)
    gone = id_intersection(id_difference(sorted_ids(retired_any), want), before)  # wanted before, not now
    new = id_difference(id_intersection(sorted_ids(list(paths)), want), before)  # wanted now, not before
    missing = sorted_ids(state.missing)
    dropped = id_intersection(gone, missing)  # gone before its vector was embedded
    removed = id_difference(gone, dropped)  # gone from the index
    index = state.index
    index.remove(removed.tolist())
    hashes = cache.manifest.embed_hashes(new.tolist())
    identity = embedder.identity
    cached = _load_cached_vectors(cache, identity.key, identity.dim, sorted(set(hashes.values()))) if hashes else {}
    from_cache = [v for v in new.tolist() if hashes.get(v) in cached]
    if from_cache:
        index.add(from_cache, np.stack([cached[hashes[v]] for v in from_cache]))
    left = [v for v in new.tolist() if v in hashes and hashes[v] not in cached]
    state.want = want
    state.held_wanted = int(np.count_nonzero(want & HELD_BIT))
    state.missing = sorted(id_difference(missing, dropped).tolist() + left)
    for vid in dropped.tolist():
        state.hashes.pop(vid, None)
    state.hashes.update((v, hashes[v]) for v in left)
    if state.pending is not None:  # the queue follows: what is gone leaves it, what is new joins it
        out = set(dropped.tolist())
        if out:
            for h in [h for h, ids in state.pending.items() if any(v in out for v in ids)]:
                state.pending[h] = [v for v in state.pending[h] if v not in out]
                if not state.pending[h]:
                    del state.pending[h]
            for path in list(state.by_path):
                state.by_path[path] = [h for h in state.by_path[path] if h in state.pending]
        for v in left:
            h = hashes[v]
            if h not in state.pending:
                state.pending[h] = []
                state.by_path.setdefault(paths[v], []).append(h)
            state.pending[h].append(v)
    state.held = index.ntotal
    return bool(len(removed) or from_cache)


def embed_missing(cache: Stores, embedder, state: VectorState, batch: int, progress, report,
                  max_seconds: float | None = None, first: set[str] | None = None, save=None,
                  save_every: float = SAVE_EVERY_S, background: bool = False, only_first: bool = False,
                  passages: str = "all") -> int:
    """Embed the vectors ``state.missing``, de-duplicated by text, committing as it goes.

    ``first``: page paths whose vectors go before the rest (recent edits before an old backlog).
    ``max_seconds``: stop after that long (what is left stays in ``state.missing``).
    ``save``: how progress is committed (default: save the index and record it).
    ``background``: nobody waits for these vectors; searches go first by a wider margin (EmbedGate).
    ``only_first``: the ``first`` pages' vectors and no others (a write waits for its own page only).
    ``passages``: ``all``, ``searched`` (not a note's held passages) or ``held`` (only those)."""
    if not state.missing:
        return 0
    key, index = embedder.identity.key, state.index
    save = save or (lambda: save_index(cache, state.index, key, len(state.want), state.held_wanted))
    if state.pending is None:
        _queue(cache, state)
    pending, by_path = state.pending, state.by_path
    early = list(dict.fromkeys(h for path in sorted(first or ()) for h in by_path.get(path, ()) if h in pending))
    chosen = set(early)
    hashes = early if only_first else early + [h for h in pending if h not in chosen]
    # Two stages on the display: the vectors a search scans (chunks, a transcript's passages) and
    # a note's held passages, which only re-rank (their ids sort last, so they come last, but for
    # the pages in ``first``): when the first stage ends, search finds everything by meaning.
    held = {h for h in hashes if all(v & HELD_BIT for v in pending[h])}
    if passages != "all":  # the held passages left to a detached job, or only they (that job)
        hashes = [h for h in hashes if (h in held) == (passages == "held")]
        held &= set(hashes)
    totals = {PASSAGES_STAGE: len(held), EMBED_STAGE: len(hashes) - len(held)}
    counts = dict.fromkeys(totals, 0)
    done = 0
    started = last_save = time.monotonic()
    position = 0
    if progress and hashes:  # the display starts with the stage, not after its first batch (and a watcher
        opening = EMBED_STAGE if totals[EMBED_STAGE] else PASSAGES_STAGE  # may pre-empt before it)
        progress(opening, 0, totals[opening])
    try:
        while position < len(hashes):
            size = 1 if background and GATE.interactive() else batch
            chosen_now = hashes[position:position + size]
            position += size
            # embed hash -> text, read one batch at a time, so a backlog of 40k chunks costs no
            # up-front read of every text (~3 s that an edit had to wait for)
            texts = cache.manifest.embed_texts([v for h in chosen_now for v in pending[h]])
            part = [h for h in chosen_now if h in texts]  # a row gone since: skipped
            if not part:
                continue
            try:
                with GATE.backlog_batch(background=background):
                    vectors = embed_mixed(embedder, [texts[h] for h in part], [h in held for h in part])
            except EmbedderError as exc:
                report.notices.append(f"embedding stopped: {exc}")
                break
            cache.vector_store.remember(key, part, vectors)
            ids = [v for h in part for v in pending[h]]
            index.add(ids, np.stack([vectors[i] for i, h in enumerate(part) for _ in pending[h]]))
            for h in part:
                del pending[h]
            done += len(part)
            passages_now = sum(h in held for h in part)
            batch_counts = ((EMBED_STAGE, len(part) - passages_now), (PASSAGES_STAGE, passages_now))
            for stage, n in batch_counts:
                counts[stage] += n
            searched_complete = len(part) > passages_now and counts[EMBED_STAGE] == totals[EMBED_STAGE]
            now = time.monotonic()
            # commit progress so search sees it and a kill loses little; at once when the last vector
            # a search scans is in (the display then says search has every chunk, and it is true)
            if now - last_save > save_every or searched_complete:
                save()
                last_save = now
                if state.index is not index:  # the save found a newer build and took its state: start over
                    break
            if progress:
                for stage, n in batch_counts:
                    if n:
                        progress(stage, counts[stage], totals[stage])
                if searched_complete and totals[PASSAGES_STAGE] and not counts[PASSAGES_STAGE]:
                    progress(PASSAGES_STAGE, 0, totals[PASSAGES_STAGE])
            if max_seconds is not None and now - started > max_seconds:
                break
    finally:
        if state.index is not None:  # None: a save in the loop adopted vectors another process completed
            save()
        if state.index is None:
            # the save found vectors another process saved, and they were complete (sync_vectors
            # then opens no index): nothing is missing. This read ``None.ids()`` and the watcher's
            # slice died with the backlog flagged for good (issue 28 item 15).
            state.missing = []
        else:
            state.missing = id_difference(sorted_ids(state.missing), sorted_ids(state.index.ids())).tolist()
            state.held = state.index.ntotal
    return done


def record_coverage(report, state: VectorState) -> None:
    """A build report's vector counts from ``state``, and what its missing vectors degrade:
    ``vectors_partial`` while a chunk (or a transcript's searched passage) has none, so it cannot
    be found by meaning; ``passages_partial`` while only held passages are missing, so some found
    chunks are ranked without their best passage."""
    report.vectors, report.vectors_wanted = state.held, len(state.want)
    report.passages_held = state.index.held_total if state.index is not None else state.held_wanted
    report.passages_wanted = state.held_wanted
    report.coverage = state.held / len(state.want) if len(state.want) else 1.0
    partial = coverage_degraded(*report.split_coverage())
    if partial:
        report.degraded.append(partial)


def _queue(cache: Stores, state: VectorState) -> None:
    """Which hashes wait to be embedded (in id order, each with the ids that take its vector) and
    which pages they belong to. Ids no chunk or passage has any more are left out."""
    owner = cache.manifest.id_pages(state.missing)
    pending: dict[str, list[int]] = {}
    by_path: dict[str, list[str]] = {}
    for vid in sorted(state.missing):
        path = owner.get(vid)
        if path is None:
            continue
        h = state.hashes[vid]
        if h not in pending:
            pending[h] = []
            by_path.setdefault(path, []).append(h)
        pending[h].append(vid)
    state.pending, state.by_path = pending, by_path


_id_signature = id_signature


def save_index(cache: Stores, index: VectorStore, key: str, wanted: int, held: int,
               dirty: bool | None = None) -> None:
    """Commit the index (``FaissVectors.save``: a small delta or the whole file)."""
    cache.vector_store.save(index, key, wanted, held, dirty)
