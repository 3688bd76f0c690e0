"""The file-event observer under the watcher: native (inotify, pruned to the folders the scan
indexes) when the OS allows it, watchdog's polling observer when it does not.

Falling behind is never silent: an inotify queue overflow (watchdog says it only in its log: a log
hook hears it) means events were lost; a watch limit reached at start, or a native watch thread
that died later, means switching to polling. The watcher turns each into a full reconcile.
"""
from __future__ import annotations

import errno
import logging
import os
from typing import Callable

from watchdog.observers.polling import PollingObserverVFS

from .events import EVENT_TYPES, PLAIN_OBSERVER, EventHandler, PathFilter, pruning_observer_class

log = logging.getLogger(__name__)

Observer = pruning_observer_class() or PLAIN_OBSERVER  # watchdog's, pruned when this watchdog allows it


def unwatchable(observer) -> int:
    """Folders the native observer could not watch (only the pruning observer can tell)."""
    count = getattr(observer, "unwatchable", None)
    return count() if count is not None else 0


class WatchdogLogHook(logging.Handler):
    """watchdog reports an inotify queue overflow only in its log; this turns it into an action:
    ``events_lost(reason)``, unless ``stopping()`` (watchdog complains about its own shutdown)."""

    def __init__(self, stopping: Callable[[], bool], events_lost: Callable[[str], None]):
        super().__init__(logging.WARNING)
        self.stopping = stopping
        self.events_lost = events_lost

    def emit(self, record: logging.LogRecord) -> None:
        if self.stopping():
            return
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken log record must not break the observer
            return
        if "overflow" in message.lower():
            self.events_lost("the inotify event queue overflowed; events were lost")
        elif record.name.startswith("watchdog.observers.inotify"):
            self.events_lost(f"inotify reported a problem: {message}")


def start_native(handler: EventHandler, root: str, paths: PathFilter):
    """A started native observer and its mode's name; OSError when the OS cannot watch the vault
    (EMFILE at max_user_instances, ENOSPC at max_user_watches), nothing of it left running."""
    observer = None
    try:
        observer = Observer()  # opens the inotify instance: EMFILE at max_user_instances
        if hasattr(observer, "skip_folders"):  # no watch in .git/, .wikimem/, ignored folders
            observer.skip_folders(paths.unwatched)
        else:
            log.info("watch: this watchdog's observer watches ignored folders too (their events are dropped)")
        observer.schedule(handler, root, recursive=True, event_filter=EVENT_TYPES)
        observer.start()
        if unwatchable(observer):
            raise OSError(errno.ENOSPC, f"{unwatchable(observer)} folder(s) could not be watched")
    except OSError:
        if observer is not None:
            quietly_stop(observer)
        raise
    return observer, type(observer).__name__.replace("Observer", "").lower() or "native"


def start_polling(handler: EventHandler, root: str, paths: PathFilter, interval: float):
    observer = PollingObserverVFS(os.stat, paths.listdir, polling_interval=interval)
    observer.schedule(handler, root, recursive=True, event_filter=EVENT_TYPES)
    observer.start()
    return observer


def native_healthy(observer) -> bool:
    """Its threads alive and every folder watched (a new folder past the watch limit is not)."""
    return observer.is_alive() and all(e.is_alive() for e in observer.emitters) and not unwatchable(observer)


def quietly_stop(observer) -> None:
    try:
        observer.stop()
        if observer.is_alive():
            observer.join(5)
    except Exception:  # noqa: BLE001 - it failed to start; nothing of it must survive
        log.debug("observer did not stop cleanly", exc_info=True)
