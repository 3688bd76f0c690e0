"""Keeping a vault warm for a long-lived agent server: once the client's handshake is done (or
after a few seconds), in a background thread, load the embedder, bring the cache up to date with
the vault, then follow edits (an in-process watcher) or fill in missing vectors.

The server answers at once: a search before the catch-up finishes answers from the last committed
cache state. Only a vault with no cache at all makes tool calls wait for this thread's first build.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ..errors import LockError, WikimemError
from ..index.background import embed_pending
from ..index.update import update

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)

EMBED_SLICE_S = 5.0  # one embed_pending call; the stop flag is checked between slices
HANDSHAKE_GRACE_S = 3.0  # longest the warm-up waits for a client to finish its handshake


class WarmSession:
    def __init__(self, ctx: "Context", watch: bool = True):
        self.ctx = ctx
        self.watch = watch
        self.watcher = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set when the catch-up finished (tests and benchmarks wait on it)
        self.go = threading.Event()  # set by the server once the client's handshake is done

    def start(self) -> "WarmSession":
        self._thread = threading.Thread(target=self._run, name="wikimem-warm", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.go.wait(HANDSHAKE_GRACE_S)  # let the handshake have the interpreter first
            if not self._stop.is_set():
                self._warm()
        except Exception:  # noqa: BLE001 - a background failure is logged, the server keeps serving
            log.exception("background start-up failed; the server keeps answering from the cache as it is")
        finally:
            self.ready.set()

    def _warm(self) -> None:
        ctx = self.ctx
        if ctx.cache.writable() and ctx.cache.manifest_problem() is not None:
            # a vault never indexed: its lexical index first (seconds), so the first search answers
            # from it at once (degraded, saying so) instead of waiting for the model and the vectors
            try:
                update(ctx, embed=False, wait=5.0)
            except LockError:
                log.info("another process is building the cache; serving what it commits")
        embedder = ctx.cache.embedder()  # load the model once, off the request path
        if embedder is not None:
            embedder.embed_query("warm up")
        if self.watch:
            from ..watch import Watcher
            try:
                self.watcher = Watcher(ctx)
                self.watcher.start()
                log.info("watching %s for edits", ctx.root)
                self.watcher.wait_idle(vectors=False)  # the start-up reconcile; vectors keep filling in behind
                return
            except WikimemError as exc:  # e.g. a `wikimem watch` daemon already follows this vault
                self.watcher = None
                log.info("not watching in-process: %s", exc)
        if not ctx.cache.writable():
            return
        try:
            report = update(ctx, embed=False, wait=5.0)
            log.info("cache up to date: %s", report.summary())
        except LockError:
            log.info("another process is updating the cache; serving its last committed state")
            return
        if embedder is None:
            return
        while not self._stop.is_set():
            try:
                report = embed_pending(ctx, max_seconds=EMBED_SLICE_S, wait=1.0)
            except (LockError, WikimemError) as exc:
                log.info("embedding paused: %s", exc)
                return
            if report.embedded_now == 0 or report.vectors >= report.vectors_wanted:
                return

    def stop(self) -> None:
        self._stop.set()
        self.go.set()
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception:  # noqa: BLE001
                log.exception("watcher did not stop cleanly")
        if self._thread is not None:
            self._thread.join(timeout=EMBED_SLICE_S + 5)
