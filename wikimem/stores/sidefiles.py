"""This machine's side files in ``<vault>/.wikimem/``, kept whatever engine holds the stores.

Both engines keep a few small files of this machine beside the vault (usage counts, memos, the
colour groups wikimem added to Obsidian's graph, the watcher's lock and pid): the ``SideFiles``
part of ``protocol.Stores``. The lock helpers are here because a watcher, a server and a writer ask
them whichever engine the vault uses; so is the one test of a database or OS error that tells a full
or failing disk from damage (before anything is deleted or rebuilt).
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import DiskFullError, VaultError, disk_trouble
from ..vault.files import atomic_write_bytes, ensure_cache_folder


class SideFiles:
    """The folder ``<vault>/.wikimem/`` and its door for small files (a part of ``Stores``)."""

    def __init__(self, root: Path):
        self.dir = Path(root) / ".wikimem"

    def writable(self) -> bool:
        return os.access(self.dir if self.dir.is_dir() else self.dir.parent, os.W_OK)

    def ensure_dir(self) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise VaultError(f"{self.dir} is a file, but wikimem keeps its cache folder there; "
                             "move or delete that file")
        try:
            ensure_cache_folder(self.dir, parents=False)
        except FileNotFoundError:  # a cache write must not bring back a vault folder that was deleted
            raise VaultError(f"the vault folder {self.dir.parent} is gone (moved or deleted)") from None

    def write_side_file(self, name: str, data: bytes) -> None:
        """The cache's door for a small file of its own (``.wikimem/<name>``: a derived result kept
        as a shortcut, the colour groups wikimem added to Obsidian's graph): atomic, inside the
        cache folder only."""
        if "/" in name or "\\" in name or name.startswith(".") or not name:
            raise ValueError(f"not a cache file name: {name!r}")
        self.ensure_dir()
        atomic_write_bytes(self.dir / name, data)


def not_damage(exc: BaseException) -> bool:
    """A database or OS error that says the disk is full or failing, not that the file is damaged:
    SQLITE_FULL, SQLITE_IOERR, ENOSPC, EDQUOT, EIO."""
    return disk_trouble(exc) is not None


def raise_if_not_damage(exc: BaseException) -> None:
    """Before treating a database error as damage (and deleting or rebuilding anything): a full or
    failing disk is a DiskFullError instead, with the cache left as it is."""
    if not_damage(exc):
        raise DiskFullError(f"the cache cannot be written now ({exc}); it is not damaged, and nothing was "
                            "deleted or rebuilt: free some space (or fix the disk) and run again") from None


def pid_alive(pid: int | str) -> bool:
    """Whether ``pid`` names a live process (a pid we may not signal is someone's: live)."""
    text = str(pid).strip()
    if not text.isdigit() or int(text) <= 0:
        return False
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


WATCH_LOCK = "watch.lock"  # the one-watcher-per-vault lock file inside .wikimem/ (watch.control holds it)


def watcher_pid(root: Path) -> int | None:
    """The pid of the watcher following the vault at ``root``, or None when none holds its lock."""
    return flock_holder(Path(root) / ".wikimem" / WATCH_LOCK)


def flock_holder(path: Path) -> int | None:
    """The pid written in a lock file whose ``flock`` someone holds (-1: held, pid unreadable), or
    None when nobody holds it (a dead holder's lock is free whatever pid the file still says)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
