"""Holding on to the watched vault: the watcher stops rather than write anywhere but the folder it
started on, and makes its own files in ``.wikimem/`` again when only they were deleted.

The folder is known by its device and inode: moved, deleted or replaced by another folder of the
same name, it is not the one being watched any more. ``rm -rf vault`` deletes the cache folder
before the vault folder, so a lock file that vanished is first given the time to show whether the
whole vault is going (its entries keep vanishing) before the watcher's files are made again.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from . import control
from .events import CACHE_DIR

log = logging.getLogger(__name__)

MOVED = "the vault folder {root} was moved or deleted (or replaced by another folder)"
RETAKE_GRACE_S = 2.0  # how long a failed lock retake waits to see whether the vault folder is going
QUIET_MAX_S = 30.0  # the longest a lock retake waits for a vault folder whose entries keep vanishing


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a folder, None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def entry_count(root: Path) -> int | None:
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


class Hold:
    """One watcher's hold on its vault folder and on its own files there.

    ``give_up(reason)`` is called when the hold is lost (the watcher stops); ``remade(what)`` when
    the watcher's files were made again after ``.wikimem`` was deleted (the cache must be rebuilt).
    ``stop`` is the watcher's stop event: every wait here ends early when it is set."""

    def __init__(self, root: Path, lock: control.WatchLock, stop: threading.Event,
                 give_up: Callable[[str], None], remade: Callable[[str], None]):
        self.root = root
        self.lock = lock
        self.stop = stop
        self.give_up = give_up
        self.remade = remade
        self.root_id: tuple[int, int] | None = None

    def fix(self) -> None:
        """The folder as it is now is the one held (at start)."""
        self.root_id = identity(self.root)

    def moved(self) -> bool:
        return identity(self.root) != self.root_id

    def moved_reason(self) -> str:
        return MOVED.format(root=self.root)

    def gone_within(self, seconds: float) -> bool:
        """Whether the vault folder is gone (or replaced) now or within ``seconds``."""
        deadline = time.monotonic() + seconds
        while identity(self.root) == self.root_id:
            if time.monotonic() >= deadline or self.stop.wait(0.05):
                return False
        return True

    def going(self) -> bool:
        """Whether the vault folder is being deleted: it goes, or its entries keep vanishing, within
        the grace. A deletion slowed by a loaded machine can outlast any fixed grace (the race seen
        under load: the watcher made its files again inside a vault ``rm -rf`` was still emptying), so
        the wait goes on while the folder shrinks, and only a folder that holds still is taken for
        "the cache folder alone was deleted" (at most ``QUIET_MAX_S``)."""
        give_up_at = time.monotonic() + QUIET_MAX_S
        before = entry_count(self.root)
        while True:
            if before is None or self.gone_within(RETAKE_GRACE_S / 4):
                return True
            if self.stop.is_set():
                return False
            now = entry_count(self.root)
            if now is None:
                return True
            if now >= before or time.monotonic() >= give_up_at:
                return False
            before = now

    def own_files(self) -> bool:
        """The lock, pid and status files are in place, made again if ``.wikimem`` was deleted.
        False: the hold is lost (``give_up`` was called) or the watcher is stopping."""
        if not self.lock.intact():
            # ``rm -rf vault`` deletes the cache folder before the vault folder: making the lock
            # file again at once would race the rest of that deletion (rm then fails with "directory
            # not empty"; a FileNotFoundError killed this thread, seen under load). Give the
            # deletion a moment first, and a failed retake the time to show it was one.
            if self.going():
                self.give_up(self.moved_reason())
                return False
            if self.stop.is_set():  # stopped meanwhile: make nothing again
                return False
            try:
                other = self.lock.retake()
            except OSError as exc:
                self.give_up(self.moved_reason() if self.gone_within(RETAKE_GRACE_S) else
                             f"its lock file was deleted and could not be made again ({exc})")
                return False
            if other is not None:
                self.give_up(f"its lock file was deleted, and another watcher (pid {other}) now watches {self.root}")
                return False
            log.warning("watch: %s was deleted; made the watcher's files again and rebuilding the cache",
                        self.lock.dir)
            self.remade(f"{self.lock.dir} was deleted")
            return True
        if control.read_pid(control.PIDFILE, dir_fd=self.lock.dir_fd) != os.getpid():
            with contextlib.suppress(OSError):
                self.lock.write(control.PIDFILE, f"{os.getpid()}\n")
        return True
