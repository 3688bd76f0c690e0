"""The watcher: file events -> debounced, coalesced builds through ``Vault.index``, vectors behind.

One worker thread does all cache writing, in this order of priority:

1. at start, a full incremental ``index(embed=False)``: whatever changed while nobody watched;
2. when the quiet period after a burst of events is over, one ``index(paths=..., embed=False)``
   for everything the burst touched (lexical index, manifest and graph committed: searchable);
3. otherwise, while vectors are missing, ``embed_pending`` in slices, the recently edited pages
   first. An event arriving during a slice stops it after the batch being embedded (that batch is
   committed), so an edit waits for at most one small batch, never for the backlog.

Why one thread and not an embedding thread beside a build thread: the cache's writer lock is
re-entrant per ``Cache`` object, not per thread, so two threads of one process could both enter
it. Pre-empting the slice between batches keeps the wait short instead.

Only folders the scan indexes are watched (``events.pruning_observer_class``): a ``.git/objects`` tree,
the cache or an ignored folder costs none of the user's inotify watches.

Size and mtime are a hint, never proof: a build given the paths of an event hashes them, and the
idle health pass (every ``HEALTH_EVERY_S``) hashes a rotating slice of the manifest's files
(``verify.py``).

The watcher holds on to what it watches: when the vault folder is moved, deleted or replaced (its
device and inode are not the ones it started with) it stops, writing nothing at the old path (its
last status goes to the cache folder it opened, wherever that is now; ``stopped_because`` says
why). When its own files in ``.wikimem/`` vanish (``rm -rf .wikimem``) it makes them again and
locks the new ``watch.lock``, so ``--status``, ``--stop`` and a second ``--daemon`` still find it,
and rebuilds the cache; if another watcher locked the new file first, this one stops (``holding.py``).

Falling behind is never silent: an inotify queue overflow (watchdog logs it; a log hook hears it)
means events were lost, so a full reconcile follows; when the OS watch limit is reached (at start,
or a watch thread dies later) the watcher switches to watchdog's polling observer. Each is logged
and listed under ``fallbacks`` in the status.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import DatabaseUnavailable, LockError, WikimemError
from ..stores.failures import driver_errors
from ..index.background import embed_pending
from ..index.update import update
from . import control
from .holding import Hold
from .verify import Verifier
from . import observing
from .events import Batch, Changes, EventHandler, PathFilter, expand

log = logging.getLogger(__name__)


DEFAULT_DEBOUNCE_MS = 300
SKIPPED_SAID = 5  # files a build could not index, named one per log line (the rest counted)
EMBED_SLICE_S = 5.0  # one embed_pending call; an edit arriving meanwhile stops it after the current batch
EMBED_AFTER_QUIET_S = 1.5  # the backlog resumes after this long without events
LOCK_WAIT_S = 2.0  # for another process's writer (a manual `wikimem index`); then retry
HEALTH_EVERY_S = 5.0  # idle wake-up to check the observer threads are alive and re-hash a slice of files
HOLD_EVERY_S = 1.0  # idle wake-up to check the vault folder and the watcher's own files are still there
POLL_INTERVAL_S = 2.0
MAX_BACKOFF_S = 30.0


class _Preempted(Exception):
    """Raised between two embedding batches when an edit (or a stop) is waiting."""


class Watcher:
    """Keeps one vault's cache following its files. ``start()``, ``wait_idle()``, ``status()``,
    ``stop()``; also a context manager. At most one per vault (``.wikimem/watch.lock``)."""

    def __init__(self, ctx, debounce_ms: int | None = None, polling: bool = False,
                 poll_interval: float = POLL_INTERVAL_S, status_file: bool = True):
        if debounce_ms is None:
            debounce_ms = getattr(ctx.settings, "watch_debounce_ms", DEFAULT_DEBOUNCE_MS)
        if debounce_ms < 0:
            raise WikimemError(f"debounce must be 0 ms or more, not {debounce_ms}")
        self.ctx = ctx
        self.root = Path(ctx.root)
        self.debounce_ms = int(debounce_ms)
        self.polling = polling
        self.poll_interval = poll_interval
        self.status_file = status_file
        self.changes = Changes(self.debounce_ms / 1000.0)
        self.paths = PathFilter(self.root)
        self._handler = EventHandler(self.paths, self.changes, rules_changed=self._rewatch,
                                     outside=self._wake)
        self._lock = control.WatchLock(self.root)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer = None
        self._hook: observing.WatchdogLogHook | None = None
        self._embedder_ok = False
        self._backlog = False
        self._recent: set[str] = set()
        self._busy = False
        self._reconciled = False
        self._failures = 0
        self._db_retries = 0
        self._hold = Hold(self.root, self._lock, self._stop, give_up=self._give_up, remade=self._remade)
        self._teardown_lock = threading.RLock()
        self._last_health = time.monotonic()
        # called (from the dying worker, after the lock is let go) when the worker died of an error
        # no one expected; None: the process decides (`wikimem watch` keeps the lock, doctor says it)
        self.on_died: Callable[["Watcher"], None] | None = None
        self._info: dict[str, Any] = {
            "vault": str(self.root), "pid": os.getpid(), "state": "stopped", "mode": None,
            "started_at": None, "debounce_ms": self.debounce_ms, "builds": 0, "last_build": None,
            "pages": None, "chunks": None, "vectors": None, "vectors_wanted": None, "coverage": None,
            "passage_coverage": None,
            "embedded": 0, "slice": None, "embedder": None, "fallbacks": [], "last_error": None,
            "verified": {"files": 0, "cycles": 0, "mismatches": 0}, "stopped_because": None,
        }
        self._verifier = Verifier(ctx, self.changes, self._info["verified"])

    # -- public ------------------------------------------------------------------------------
    def start(self) -> "Watcher":
        """Take the vault's watch lock, start observing, then reconcile in the background."""
        if self._thread is not None:
            return self
        self._hold.fix()
        self._lock.acquire()  # LockError names the pid of the watcher that holds it
        try:
            self._info.update(started_at=time.time(), state="starting")
            self._hook = observing.WatchdogLogHook(self._stop.is_set, self._events_lost)
            wd_log = logging.getLogger("watchdog")
            if not wd_log.isEnabledFor(logging.WARNING):
                wd_log.setLevel(logging.WARNING)
            wd_log.addHandler(self._hook)
            self._start_observer(polling=self.polling)  # before the reconcile: nothing slips between
            self._thread = threading.Thread(target=self._run, name="wikimem-watch", daemon=True)
            self._thread.start()
        except BaseException:
            self._teardown()
            raise
        return self

    def request_stop(self) -> None:
        """Ask the watcher to stop after the commit it is in (safe from a signal handler)."""
        self._stop.set()
        with self.changes.cond:
            self.changes.cond.notify_all()

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the current commit; changes not yet built are picked up by the next start."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
        self._teardown()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_idle(self, timeout: float | None = None, vectors: bool = True) -> bool:
        """Block until the start-up reconcile is done, no edit waits to be built and (``vectors``)
        no vector is left to embed. False on timeout or when the watcher stopped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.changes.cond:
            while True:
                if not self.running and self._thread is not None:
                    return False
                if (self._reconciled and not self._busy and self.changes.due() is None
                        and not (vectors and self._backlog)):
                    return True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.changes.cond.wait(0.5 if left is None else min(left, 0.5))

    def status(self) -> dict[str, Any]:
        info = dict(self._info)
        info["running"] = self.running
        info["pending"] = self.changes.pending()
        wanted, held = info.get("vectors_wanted"), info.get("vectors")
        info["backlog"] = (wanted - held) if wanted is not None and held is not None else None
        info["fallbacks"] = list(info["fallbacks"])
        return info

    def __enter__(self) -> "Watcher":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- observer ------------------------------------------------------------------------------
    def _start_observer(self, polling: bool) -> None:
        if not polling:
            try:
                self._observer, self._info["mode"] = observing.start_native(self._handler, str(self.root), self.paths)
                return
            except OSError as exc:
                self._fallback(f"the OS file-watch limit was reached ({exc.strerror or exc}); raise "
                               "fs.inotify.max_user_watches / max_user_instances to watch natively", "polling")
        self._observer = observing.start_polling(self._handler, str(self.root), self.paths, self.poll_interval)
        self._info["mode"] = "polling"

    def _rewatch(self) -> None:
        """The ignore rules changed: watch what they now index, unwatch what they now ignore."""
        refresh = getattr(self._observer, "refresh", None)
        if refresh is not None:
            refresh()

    def _check_observer(self) -> None:
        observer = self._observer
        if observer is None or self._info["mode"] == "polling" or self._stop.is_set():
            return
        if observing.native_healthy(observer):
            return
        self._fallback("the native file watcher stopped or could not watch a new folder (often the OS watch "
                       "limit)", "polling")
        observing.quietly_stop(observer)
        self._start_observer(polling=True)
        self.changes.need_full("switched to polling; events may have been missed")

    def _fallback(self, reason: str, action: str) -> None:
        log.warning("watch: %s; falling back to %s", reason, action)
        entry = {"at": time.time(), "reason": reason, "action": action}
        self._info["fallbacks"] = (self._info["fallbacks"] + [entry])[-20:]
        self._save()

    def _events_lost(self, reason: str) -> None:
        self._fallback(reason, "full reconcile")
        self.changes.need_full(reason)

    # -- the worker ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._embedder_ok = self.ctx.cache.embedder() is not None
            self._info["embedder"] = self.ctx.settings.embedder if self._embedder_ok else None
            self._busy = True
            try:
                self._build(Batch(full="start-up reconcile"))
            except DatabaseUnavailable as exc:
                self._database_away(exc)
            finally:
                self._busy = False
            while not self._stop.is_set():
                batch = None
                with self.changes.cond:
                    due = self.changes.due()
                    if due is None and not self._backlog:
                        idle = True
                    elif due is not None and due > 0:
                        self.changes.cond.wait(due)
                        continue
                    elif due is None and time.monotonic() - self.changes.last_event < EMBED_AFTER_QUIET_S:
                        # someone is editing: the next edit is likely soon, and starting a slice has a
                        # fixed cost before its first batch (when an edit cannot pre-empt it)
                        self.changes.cond.wait(EMBED_AFTER_QUIET_S - (time.monotonic() - self.changes.last_event))
                        continue
                    else:
                        idle = False
                        batch = self.changes.take() if due == 0 else None
                        self._busy = True  # under the lock, so wait_idle never sees a batch in flight as idle
                if idle:
                    self._set_state("idle")
                    with self.changes.cond:
                        if self.changes.due() is None and not self._stop.is_set():
                            self.changes.cond.wait(min(HOLD_EVERY_S, HEALTH_EVERY_S))
                    try:
                        self._health()
                    except DatabaseUnavailable as exc:
                        self._database_away(exc)
                else:
                    try:
                        self._build(batch) if batch is not None else self._embed_slice()
                    except DatabaseUnavailable as exc:
                        if batch is not None:
                            self.changes.put_back(batch)
                        self._database_away(exc)
                    finally:
                        with self.changes.cond:
                            self._busy = False
                            self.changes.cond.notify_all()
        except Exception as exc:  # noqa: BLE001 - reported in the status; the process decides what next
            log.exception("watcher stopped by an unexpected error")
            self._info["last_error"] = f"{type(exc).__name__}: {exc}"
            died = self.on_died is not None and not self._stop.is_set()
        else:
            died = False
        finally:
            self._set_state("stopped")
            if self._info["stopped_because"]:  # it gave up its vault: let go of it now, not at stop()
                self._teardown()
            with self.changes.cond:
                self.changes.cond.notify_all()
        if died:  # the role is let go so it can be taken again (by this process's standby, or another's)
            self._teardown()
            try:
                self.on_died(self)
            except Exception:  # noqa: BLE001 - the worker is ending anyway
                log.exception("could not stand by after the watcher stopped")

    def _cached_under(self, folder: str) -> list[str]:
        prefix = folder + "/"
        return self.ctx.cache.manifest.file_paths_under(prefix)

    def _build(self, batch: Batch) -> None:
        if not self._still_holding():
            return
        try:
            paths = expand(self.root, batch, self._cached_under)
        except (OSError, *driver_errors()) as exc:
            log.info("watch: cannot list the folders that changed (%s); scanning the vault", exc)
            paths = None
        if paths is not None and not paths:
            return
        self._set_state("building")
        started = time.monotonic()
        try:
            report = update(self.ctx, paths=None if paths is None else sorted(paths), embed=False, wait=LOCK_WAIT_S)
        except LockError as exc:
            self._retry(batch, str(exc), backoff=1.0)
            return
        except DatabaseUnavailable:
            batch.full = batch.full or "reconcile after the database came back"
            raise
        except Exception as exc:  # noqa: BLE001 - a long-running watcher retries rather than dies
            self._failures += 1
            log.warning("watch: build failed (%s: %s); retrying with a full scan", type(exc).__name__, exc,
                        exc_info=not isinstance(exc, (WikimemError, OSError, *driver_errors())))
            batch.full = batch.full or "retry after a failed build"
            self._retry(batch, f"{type(exc).__name__}: {exc}", backoff=min(MAX_BACKOFF_S, 2.0 ** self._failures))
            return
        seconds = time.monotonic() - started
        self._failures = 0
        self._database_back()
        self._reconciled = True
        if paths is not None:
            self._recent |= paths
        self._backlog = self._embedder_ok
        self._info.update(builds=self._info["builds"] + 1, pages=report.pages, chunks=report.chunks,
                          last_error=None)
        if self._embedder_ok:
            self._count_vectors()
        self._info["last_build"] = {
            "at": time.time(), "seconds": round(seconds, 4), "full": paths is None,
            "reason": batch.full, "files": None if paths is None else len(paths), "events": batch.events,
            "added": report.added, "changed": report.changed, "removed": report.removed,
            "stages": {k: round(v, 4) for k, v in report.seconds.items()}, "notices": list(report.notices),
            "skipped": report.skipped[:50], "skipped_count": len(report.skipped)}
        for notice in report.notices:
            log.info("watch: %s", notice)
        for skipped in report.skipped[:SKIPPED_SAID]:  # else the terminal says nothing, and search finds nothing
            log.warning("watch: not indexed: %s: %s", skipped["path"], skipped["reason"])
        if len(report.skipped) > SKIPPED_SAID:
            log.warning("watch: ... and %d more file(s) not indexed (`wikimem status` lists them)",
                        len(report.skipped) - SKIPPED_SAID)
        log.info("watch: built %s in %.3f s (%d added, %d changed, %d removed)",
                 "the whole vault" if paths is None else f"{len(paths)} path(s)", seconds,
                 report.added, report.changed, report.removed)
        self._save()

    def _count_vectors(self) -> None:
        """The vector counts as `wikimem status` reads them, after a lexical-first build: until the
        embedding slice behind it ends, ``--status`` (and watch.json, should the process die) would
        otherwise show the last slice's 100 % and no backlog for what the build just added."""
        from ..index.status import vector_coverage
        try:
            meta = self.ctx.cache.manifest.meta()
            chunks = self.ctx.cache.manifest.chunk_rows()
        except Exception:  # noqa: BLE001 - a count for the status line; the next slice sets it
            return
        coverage, passages = vector_coverage(meta, chunks)
        self._info.update(vectors=int(meta.get("vectors") or 0), vectors_wanted=int(meta.get("vectors_wanted") or chunks),
                          coverage=round(coverage, 4), passage_coverage=None if passages is None else round(passages, 4))

    def _retry(self, batch: Batch, error: str, backoff: float) -> None:
        self._info["last_error"] = error
        self.changes.put_back(batch)
        self._set_state("waiting")
        # a build that failed because the vault folder is going away (rm -rf: SQLite's "disk I/O
        # error" before the folder is gone) must not wait out its back-off: look while waiting
        if self._hold.gone_within(backoff):
            self._give_up(self._hold.moved_reason())

    def _database_away(self, exc: DatabaseUnavailable) -> None:
        """The database went away (restart, failover, network): wait with a capped back-off and
        then reconcile the whole vault, since edits made meanwhile were seen but not indexed (and
        events may have been dropped). The watcher never stops for this: a restart is routine."""
        self._db_retries += 1
        backoff = min(MAX_BACKOFF_S, 2.0 ** min(self._db_retries, 6) / 2)
        error = f"{type(exc).__name__}: {exc}"
        if self._db_retries == 1:
            log.warning("watch: the database is unavailable (%s); retrying with back-off up to %.0f s", exc,
                        MAX_BACKOFF_S)
        self._info.update(last_error=error, database={"ok": False, "error": error, "retries": self._db_retries,
                                                      "since": self._info.get("database", {}).get("since")
                                                      or time.time()})
        self.changes.need_full("reconcile after the database came back")
        self._set_state("waiting for the database")
        self._stop.wait(backoff)

    def _database_back(self) -> None:
        if self._db_retries:
            log.info("watch: the database is back after %d retr%s; reconciling the vault", self._db_retries,
                     "y" if self._db_retries == 1 else "ies")
            self._db_retries = 0
            self._info["database"] = {"ok": True, "error": None, "retries": 0, "since": None}

    def _embed_slice(self) -> None:
        if not self._still_holding():
            return
        self._set_state("embedding")
        done: dict[str, int] = {}  # stage -> embedded (the vectors search scans, a note's passages)
        totals: dict[str, int] = {}

        def between_batches(stage: str, n: int, total: int) -> None:
            done[stage], totals[stage] = n, total
            self._info["slice"] = {"embedded": sum(done.values()), "of": sum(totals.values())}
            if self._stop.is_set() or self.changes.pending():
                raise _Preempted  # the batch just embedded is committed on the way out

        try:
            report = embed_pending(self.ctx, max_seconds=EMBED_SLICE_S, first=set(self._recent),
                                   progress=between_batches, wait=LOCK_WAIT_S)
        except _Preempted:
            self._info["embedded"] += sum(done.values())
            return
        except LockError as exc:
            self._info["last_error"] = str(exc)
            self._stop.wait(1.0)
            return
        except Exception as exc:  # noqa: BLE001 - vectors wait; the lexical side keeps following edits
            log.warning("watch: embedding stopped (%s: %s); it resumes after the next edit", type(exc).__name__, exc,
                        exc_info=not isinstance(exc, (WikimemError, OSError, *driver_errors())))
            self._info["last_error"] = f"{type(exc).__name__}: {exc}"
            self._backlog = False
            return
        chunks, passages = report.split_coverage()
        self._info.update(vectors=report.vectors, vectors_wanted=report.vectors_wanted,
                          coverage=round(chunks, 4),  # as `wikimem status` counts it: what search can find
                          passage_coverage=None if passages is None else round(passages, 4),
                          embedded=self._info["embedded"] + report.embedded_now)
        if report.vectors_wanted and report.vectors >= report.vectors_wanted:
            self._backlog = False
            self._recent.clear()
        elif report.embedded_now == 0:  # no progress (embedder down, nothing to do): wait for the next edit
            for notice in report.notices:
                log.warning("watch: %s", notice)
            self._backlog = False
        elif not report.vectors_wanted:
            self._backlog = False
        self._save()
        with self.changes.cond:
            self.changes.cond.notify_all()

    # -- holding on to the vault --------------------------------------------------------------------
    def _wake(self) -> None:
        """An event about the vault folder itself or the cache folder: look at once."""
        with self.changes.cond:
            self.changes.cond.notify_all()

    def _health(self) -> None:
        if not self._still_holding():
            return
        if time.monotonic() - self._last_health >= HEALTH_EVERY_S:
            self._last_health = time.monotonic()
            self._check_observer()
            self._verify_slice()

    def _give_up(self, reason: str) -> None:
        log.warning("watch: %s; stopping", reason)
        self._info.update(stopped_because=reason, last_error=reason)
        self._stop.set()

    def _still_holding(self) -> bool:
        """The vault folder is the one this watcher started on, and its lock, pid and status files
        are in place (made again when ``.wikimem`` was deleted). False: it is stopping."""
        if self._stop.is_set():
            return False
        if self._hold.moved():
            self._give_up(self._hold.moved_reason())
            return False
        return self._check_own_files()

    def _check_own_files(self) -> bool:
        return self._hold.own_files()

    def _remade(self, what: str) -> None:
        """The watcher's own files were made again: the cache they were in is gone, rebuild it."""
        self._fallback(what, "full reconcile")
        self.changes.need_full("the cache folder was deleted")

    def _verify_slice(self) -> None:
        self._verifier.next_slice()

    # -- status ----------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        if self._info["state"] != state:
            self._info["state"] = state
            self._save()
            with self.changes.cond:
                self.changes.cond.notify_all()

    def _save(self) -> None:
        if self.status_file and self._lock.fd is not None:
            info = self.status()
            info["updated_at"] = time.time()
            control.write_status(self.root, info, lock=self._lock)

    def _teardown(self) -> None:
        with self._teardown_lock:  # the worker (giving up its vault) and stop() may both get here
            self._teardown_locked()

    def _teardown_locked(self) -> None:
        if self._observer is not None:
            observing.quietly_stop(self._observer)
            self._observer = None
        if self._hook is not None:
            logging.getLogger("watchdog").removeHandler(self._hook)
            self._hook = None
        self._set_state("stopped")
        self._lock.release()
