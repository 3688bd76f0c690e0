"""This machine's side files in ``<vault>/.wikimem/``, kept whatever engine holds the stores.

Both engines keep a few small files of this machine beside the vault (usage counts, memos, the
colour groups wikimem added to Obsidian's graph, the watcher's lock and pid): the ``SideFiles``
part of ``protocol.Stores``. The lock helpers are here because a watcher, a server and a writer ask
them whichever engine the vault uses; so is the one test of a database or OS error that tells a full
or failing disk from damage (before anything is deleted or rebuilt).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
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


# A file of the cache folder (a lock, a state, a log) is opened as a regular file of that folder:
# never through a symlink (a `.wikimem/lock` linked to a note had a writer's pid written over the note:
# truncated), never a FIFO or a device (`open` of a FIFO blocks: `wikimem status` hung), never a hard
# link (a note's other name).
SAFE_OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOT_OURS = (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENOTDIR, errno.EMLINK)


def clear_cache_entry(path: Path) -> None:
    """Remove what is at ``path`` in the cache folder (a symlink, a folder, a FIFO put where a file of
    wikimem goes): the cache is wikimem's, and what was there is no file of its own. A symlink is
    removed, never what it points to."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            os.unlink(path)


def open_cache_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """``path`` opened with ``flags`` as a regular file of one name (``SAFE_OPEN``); with ``O_CREAT``,
    what was there instead (a symlink, a folder, a FIFO, a hard link to a note) is removed first.
    OSError when it cannot be (without ``O_CREAT``: whatever is there is left alone)."""
    for attempt in (0, 1):
        try:
            fd = os.open(path, flags | SAFE_OPEN, mode)
        except OSError as exc:
            if attempt or exc.errno not in _NOT_OURS or not flags & os.O_CREAT:
                raise
        else:
            found = os.fstat(fd)
            if stat.S_ISREG(found.st_mode) and found.st_nlink <= 1:  # a hard link is a file of somewhere else too
                return fd
            os.close(fd)
            if attempt or not flags & os.O_CREAT:
                raise OSError(errno.EINVAL, "not a regular file", str(path))
        clear_cache_entry(path)
    raise AssertionError("unreachable")


def flock_holder(path: Path) -> int | None:
    """The pid written in a lock file whose ``flock`` someone holds (-1: held, pid unreadable), or
    None when nobody holds it (a dead holder's lock is free whatever pid the file still says)."""
    try:
        fd = open_cache_file(path, os.O_RDONLY)
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
