"""Per-vault process state: what one open vault keeps in memory between calls.

Before this, such state lived in module globals (a thread pool, locks keyed by cache in a weak
dictionary), so two vaults open in one process (an MCP server serving several, a test run) shared
it: one vault's backlog could hold the other's lexical searches behind its thread pool's queue.
``Cache.runtime`` owns one ``Runtime`` per open vault, closed with it.

What stays process-wide, on purpose: ``embedding.GATE`` (one model and two cores shared by every
open vault: see ``EmbedGate``), and memos keyed by content alone (a chunk's script by its text's
hash in search/evidence.py: equal text, equal answer, whatever the vault).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

ID_CHANGES_KEPT = 64  # builds whose id changes are remembered (a watcher's edits between two embeds)
LEXICAL_WORKERS = 4  # hybrid searches of one vault run their BM25 side here while FAISS runs in the caller


class Runtime:
    """Kept values (``keep``/``kept``), the id changes of this process's builds, the lock that lets
    one thread at a time embed a backlog, and the vault's worker threads (``pool``)."""

    def __init__(self, name: str = "vault"):
        self.name = name
        self._kept: dict[str, tuple | None] = {}
        self._id_changes: list[tuple[int, int, int, tuple]] = []
        self.embedding_lock = threading.RLock()  # background._embedding: one embed_pending at a time
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- values kept while the cache is in one state -----------------------------------------
    def keep(self, slot: str, key, value) -> None:
        """Keep ``value`` for this process while the cache is in the state named by ``key`` (a key
        or value of None forgets it). Slots in use: "resolver" (build._resolver, keyed by the
        manifest's links_token), "pending" (background.embed_pending's queue, keyed by generation and
        vector signature), "language_axis" (search/language.py), "name_clashes" (agent/pages.py) and
        "page_matrix" (graph/related.py), the last three keyed by the cache state they derive from."""
        self._kept[slot] = (key, value) if key is not None and value is not None else None

    def kept(self, slot: str, key):
        """The value kept in ``slot`` if the cache is still in the state ``key`` names, else None."""
        entry = self._kept.get(slot)
        return entry[1] if entry is not None and key is not None and entry[0] == key else None

    def kept_entry(self, slot: str):
        """(key, value) kept in ``slot`` whatever state the key names, or None."""
        return self._kept.get(slot)

    def forget_kept(self) -> None:
        """Drop every kept value (what a new process would start from)."""
        self._kept.clear()

    # -- how this process's builds changed the vector ids -------------------------------------
    def note_ids_changed(self, manifest, before: int, after: int, change: tuple | None) -> None:
        """Record how a build that took the manifest ``manifest`` (its creation stamp: a replacement
        manifest counts generations afresh) from generation ``before`` to ``after`` changed the
        vector ids wanted: ``change`` is (ids retired, {page path: ids added}), or None when the
        build rewrote more than its own pages' rows (a chain of changes never crosses it). Builds
        take the writer lock, so entries arrive in commit order."""
        if change is None:
            self._id_changes = []
        else:
            self._id_changes = [*self._id_changes[-(ID_CHANGES_KEPT - 1):], (manifest, before, after, change)]

    def ids_changed(self, manifest, since: int, now: int) -> list[tuple] | None:
        """The id changes of the builds from generation ``since`` to ``now`` of ``manifest``, in
        commit order, or None when this process did not see every one of them."""
        chain, at = [], since
        for made, before, after, change in self._id_changes:
            if made == manifest and before == at:
                chain.append(change)
                at = after
        return chain if at == now else None

    def forget_ids_changed(self, manifest, through: int) -> None:
        """Drop the records up to generation ``through`` (a kept state has taken them in)."""
        self._id_changes = [r for r in self._id_changes if r[0] == manifest and r[2] > through]

    # -- worker threads ------------------------------------------------------------------------
    def pool(self) -> ThreadPoolExecutor:
        """This vault's worker threads (the lexical side of hybrid searches), started on first use
        and shut down by ``close``."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=LEXICAL_WORKERS,
                                                thread_name_prefix=f"wikimem-lexical-{self.name}")
            return self._pool

    def close(self) -> None:
        """Stop the worker threads once their queued work is done (a new pool starts on next use)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
