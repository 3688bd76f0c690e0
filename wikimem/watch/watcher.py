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
(``VERIFY_FILES``, at most ``VERIFY_BYTES``), so an edit that kept both and reached no event (made
while nobody watched) is found within one cycle over the vault (at 10k notes: ~8 minutes).

The watcher holds on to what it watches: when the vault folder is moved, deleted or replaced (its
device and inode are not the ones it started with) it stops, writing nothing at the old path (its
last status goes to the cache folder it opened, wherever that is now; ``stopped_because`` says
why). When its own files in ``.wikimem/`` vanish (``rm -rf .wikimem``) it makes them again and
locks the new ``watch.lock``, so ``--status``, ``--stop`` and a second ``--daemon`` still find it,
and rebuilds the cache; if another watcher locked the new file first, this one stops.

Falling behind is never silent: an inotify queue overflow (watchdog logs it; a log hook hears it)
means events were lost, so a full reconcile follows; when the OS watch limit is reached (at start,
or a watch thread dies later) the watcher switches to watchdog's polling observer. Each is logged
and listed under ``fallbacks`` in the status.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from watchdog.observers.polling import PollingObserverVFS

from ..errors import DatabaseUnavailable, LockError, WikimemError
from ..stores.failures import driver_errors
from ..index.background import embed_pending
from ..index.update import update
from . import control
from .events import (CACHE_DIR, EVENT_TYPES, PLAIN_OBSERVER, Batch, Changes, EventHandler, PathFilter, expand,
                     pruning_observer_class)

log = logging.getLogger(__name__)

Observer = pruning_observer_class() or PLAIN_OBSERVER  # watchdog's, pruned when this watchdog allows it

DEFAULT_DEBOUNCE_MS = 300
EMBED_SLICE_S = 5.0  # one embed_pending call; an edit arriving meanwhile stops it after the current batch
EMBED_AFTER_QUIET_S = 1.5  # the backlog resumes after this long without events
LOCK_WAIT_S = 2.0  # for another process's writer (a manual `wikimem index`); then retry
HEALTH_EVERY_S = 5.0  # idle wake-up to check the observer threads are alive and re-hash a slice of files
RETAKE_GRACE_S = 2.0  # how long a failed lock retake waits to see whether the vault folder is going
MOVED = "the vault folder {root} was moved or deleted (or replaced by another folder)"
QUIET_MAX_S = 30.0  # the longest a lock retake waits for a vault folder whose entries keep vanishing
HOLD_EVERY_S = 1.0  # idle wake-up to check the vault folder and the watcher's own files are still there
VERIFY_FILES = 100  # files hashed per health pass (a 10k-note vault is re-hashed every ~8 minutes)
VERIFY_BYTES = 8 * 1024 * 1024  # and at most this much read per pass
POLL_INTERVAL_S = 2.0
MAX_BACKOFF_S = 30.0


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a folder, None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _entry_count(root: Path) -> int | None:
    """Entries of the vault folder and of its subfolders one level down, the cache folder left out:
    a cheap pulse of ``rm -rf vault`` (it empties folders depth first). None when the folder is gone."""
    try:
        top = [e for e in os.scandir(root) if e.name != CACHE_DIR]
    except OSError:
        return None
    count = len(top)
    for entry in top:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                count += sum(1 for _ in os.scandir(entry.path))
    return count


def _unwatchable(observer) -> int:
    """Folders the native observer could not watch (only the pruning observer can tell)."""
    count = getattr(observer, "unwatchable", None)
    return count() if count is not None else 0


class _Preempted(Exception):
    """Raised between two embedding batches when an edit (or a stop) is waiting."""


class _WatchdogLogHook(logging.Handler):
    """watchdog reports an inotify queue overflow only in its log; this turns it into an action."""

    def __init__(self, watcher: "Watcher"):
        super().__init__(logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if self.watcher._stop.is_set():
            return  # watchdog complains about its own shutdown
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken log record must not break the observer
            return
        if "overflow" in message.lower():
            self.watcher._events_lost("the inotify event queue overflowed; events were lost")
        elif record.name.startswith("watchdog.observers.inotify"):
            self.watcher._events_lost(f"inotify reported a problem: {message}")


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
        self._hook: _WatchdogLogHook | None = None
        self._embedder_ok = False
        self._backlog = False
        self._recent: set[str] = set()
        self._busy = False
        self._reconciled = False
        self._failures = 0
        self._db_retries = 0
        self._root_id: tuple[int, int] | None = None
        self._teardown_lock = threading.RLock()
        self._last_health = time.monotonic()
        self._verify_after = ""  # the rotating hash check's place in the manifest (path order)
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

    # -- public ------------------------------------------------------------------------------
    def start(self) -> "Watcher":
        """Take the vault's watch lock, start observing, then reconcile in the background."""
        if self._thread is not None:
            return self
        self._root_id = _identity(self.root)
        self._lock.acquire()  # LockError names the pid of the watcher that holds it
        try:
            self._info.update(started_at=time.time(), state="starting")
            self._hook = _WatchdogLogHook(self)
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
            observer = None
            try:
                observer = Observer()  # opens the inotify instance: EMFILE at max_user_instances
                if hasattr(observer, "skip_folders"):  # no watch in .git/, .wikimem/, ignored folders
                    observer.skip_folders(self.paths.unwatched)
                else:
                    log.info("watch: this watchdog's observer watches ignored folders too (their events are dropped)")
                observer.schedule(self._handler, str(self.root), recursive=True, event_filter=EVENT_TYPES)
                observer.start()
                if _unwatchable(observer):
                    raise OSError(errno.ENOSPC, f"{_unwatchable(observer)} folder(s) could not be watched")
                self._observer = observer
                self._info["mode"] = type(observer).__name__.replace("Observer", "").lower() or "native"
                return
            except OSError as exc:
                self._fallback(f"the OS file-watch limit was reached ({exc.strerror or exc}); raise "
                               "fs.inotify.max_user_watches / max_user_instances to watch natively", "polling")
                if observer is not None:
                    self._quietly_stop(observer)
        observer = PollingObserverVFS(os.stat, self.paths.listdir, polling_interval=self.poll_interval)
        observer.schedule(self._handler, str(self.root), recursive=True, event_filter=EVENT_TYPES)
        observer.start()
        self._observer = observer
        self._info["mode"] = "polling"

    def _rewatch(self) -> None:
        """The ignore rules changed: watch what they now index, unwatch what they now ignore."""
        refresh = getattr(self._observer, "refresh", None)
        if refresh is not None:
            refresh()

    @staticmethod
    def _quietly_stop(observer) -> None:
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(5)
        except Exception:  # noqa: BLE001 - it failed to start; nothing of it must survive
            log.debug("observer did not stop cleanly", exc_info=True)

    def _check_observer(self) -> None:
        observer = self._observer
        if observer is None or self._info["mode"] == "polling" or self._stop.is_set():
            return
        if observer.is_alive() and all(e.is_alive() for e in observer.emitters) and not _unwatchable(observer):
            return
        self._fallback("the native file watcher stopped or could not watch a new folder (often the OS watch "
                       "limit)", "polling")
        self._quietly_stop(observer)
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
        self._info["last_build"] = {
            "at": time.time(), "seconds": round(seconds, 4), "full": paths is None,
            "reason": batch.full, "files": None if paths is None else len(paths), "events": batch.events,
            "added": report.added, "changed": report.changed, "removed": report.removed,
            "stages": {k: round(v, 4) for k, v in report.seconds.items()}, "notices": list(report.notices)}
        for notice in report.notices:
            log.info("watch: %s", notice)
        log.info("watch: built %s in %.3f s (%d added, %d changed, %d removed)",
                 "the whole vault" if paths is None else f"{len(paths)} path(s)", seconds,
                 report.added, report.changed, report.removed)
        self._save()

    def _retry(self, batch: Batch, error: str, backoff: float) -> None:
        self._info["last_error"] = error
        self.changes.put_back(batch)
        self._set_state("waiting")
        # a build that failed because the vault folder is going away (rm -rf: SQLite's "disk I/O
        # error" before the folder is gone) must not wait out its back-off: look while waiting
        if self._vault_gone_within(backoff):
            self._give_up(MOVED.format(root=self.root))

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
        if _identity(self.root) != self._root_id:
            self._give_up(MOVED.format(root=self.root))
            return False
        return self._check_own_files()

    def _vault_gone_within(self, seconds: float) -> bool:
        """Whether the vault folder is gone (or replaced) now or within ``seconds``."""
        deadline = time.monotonic() + seconds
        while _identity(self.root) == self._root_id:
            if time.monotonic() >= deadline or self._stop.wait(0.05):
                return False
        return True

    def _vault_going(self) -> bool:
        """Whether the vault folder is being deleted: it goes, or its entries keep vanishing, within
        the grace. A deletion slowed by a loaded machine can outlast any fixed grace (the race seen
        under load: the watcher made its files again inside a vault ``rm -rf`` was still emptying), so
        the wait goes on while the folder shrinks, and only a folder that holds still is taken for
        "the cache folder alone was deleted" (at most ``QUIET_MAX_S``)."""
        give_up_at = time.monotonic() + QUIET_MAX_S
        before = _entry_count(self.root)
        while True:
            if before is None or self._vault_gone_within(RETAKE_GRACE_S / 4):
                return True
            if self._stop.is_set():
                return False
            now = _entry_count(self.root)
            if now is None:
                return True
            if now >= before or time.monotonic() >= give_up_at:
                return False
            before = now

    def _check_own_files(self) -> bool:
        if not self._lock.intact():
            # ``rm -rf vault`` deletes the cache folder before the vault folder: making the lock
            # file again at once would race the rest of that deletion (rm then fails with "directory
            # not empty"; a FileNotFoundError killed this thread, seen under load). Give the
            # deletion a moment first, and a failed retake the time to show it was one.
            if self._vault_going():
                self._give_up(MOVED.format(root=self.root))
                return False
            if self._stop.is_set():  # stopped meanwhile: make nothing again
                return False
            try:
                other = self._lock.retake()
            except OSError as exc:
                self._give_up(MOVED.format(root=self.root) if self._vault_gone_within(RETAKE_GRACE_S) else
                              f"its lock file was deleted and could not be made again ({exc})")
                return False
            if other is not None:
                self._give_up(f"its lock file was deleted, and another watcher (pid {other}) now watches "
                              f"{self.root}")
                return False
            log.warning("watch: %s was deleted; made the watcher's files again and rebuilding the cache",
                        self._lock.dir)
            self._fallback(f"{self._lock.dir} was deleted", "full reconcile")
            self.changes.need_full("the cache folder was deleted")
            return True
        if control.read_pid(control.PIDFILE, dir_fd=self._lock.dir_fd) != os.getpid():
            with contextlib.suppress(OSError):
                self._lock.write(control.PIDFILE, f"{os.getpid()}\n")
        return True

    def _verify_slice(self) -> None:
        """Hash the next ``VERIFY_FILES`` files of the manifest (path order, wrapping around) and
        queue those whose bytes (or stat) differ from what it recorded: mtime+size can both be kept
        by an edit (a sync tool, ``touch -r``, a same-length rewrite within the clock's grain)."""
        try:
            rows = self.ctx.cache.manifest.file_stats_after(self._verify_after, VERIFY_FILES)
        except driver_errors():
            return
        verified = self._info["verified"]
        if len(rows) < VERIFY_FILES:
            self._verify_after = ""
            verified["cycles"] += 1
        read = 0
        for path, size, mtime_ns, sha in rows:
            self._verify_after = path
            try:
                st = os.stat(self.root.joinpath(*path.split("/")))
            except OSError:
                continue  # gone: its delete event (or the next reconcile) removes it
            if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
                found = True
            else:
                digest = self.ctx.files.file_sha256(path)
                found = bool(digest and sha and digest != sha)
                read += st.st_size
                verified["files"] += 1
            if found:
                verified["mismatches"] += 1
                log.info("watch: %s changed without an event this watcher saw; indexing it", path)
                self.changes.add_file(path)
            if read >= VERIFY_BYTES:
                break
        verified["at"] = time.time()

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
            self._quietly_stop(self._observer)
            self._observer = None
        if self._hook is not None:
            logging.getLogger("watchdog").removeHandler(self._hook)
            self._hook = None
        self._set_state("stopped")
        self._lock.release()
