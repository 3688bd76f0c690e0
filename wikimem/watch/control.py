"""The watcher's files in ``.wikimem/`` and the controls that read them from another process.

    watch.lock   flock(2) held for the watcher's lifetime; holds its pid (for messages only).
                 The kernel releases it when the holder dies, so a killed watcher never blocks
                 the next one and a stale pid can never keep a vault "watched".
    watch.pid    the running watcher's pid (for tools that expect a pid file; the lock decides)
    watch.json   the watcher's status, rewritten atomically at each state change
    watch.log    a daemon's stdout and stderr

``wikimem watch --status``/``--stop`` and ``wikimem doctor`` use ``read_status``/``stop``; they
never need the watcher's process to answer.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import LockError, WikimemError
from ..vault.files import ensure_cache_folder

from ..stores.sidefiles import WATCH_LOCK as LOCK
from ..stores.sidefiles import SAFE_OPEN, open_cache_file
PIDFILE = "watch.pid"
STATUS = "watch.json"
LOG = "watch.log"
LOG_KEEP_BYTES = 5 * 1024 * 1024


def cache_dir(root: Path) -> Path:
    return Path(root) / ".wikimem"


def holder_text(pid: str, root: Path) -> str:
    """Who holds a vault's watch lock, as a person can act on it: a `wikimem watch` (stopped with
    --stop), or a `wikimem serve` / `wikimem mcp` that follows the vault itself."""
    role = None
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
            words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0")]
        role = next((w for w in words if w in ("serve", "mcp", "watch")), None)
    except (OSError, ValueError):
        pass
    shown = pid or "unknown"
    if role in ("serve", "mcp"):
        return (f"`wikimem {role}` (pid {shown}) holds {root} and keeps its cache following it: nothing else needs "
                f"to watch it (stop that process to free it)")
    return f"a watcher (pid {shown}) is already watching {root}; stop it with 'wikimem watch --stop'"


class WatchLock:
    """The one-watcher-per-vault lock, and a handle on the folder that holds it.

    ``dir_fd`` is the cache folder opened at ``acquire``: the watcher's files are written through
    it, so a vault moved away under a watcher gets its last status in its new place and nothing is
    ever created at the old path, and a deleted cache folder takes no write at all."""

    def __init__(self, root: Path):
        self.dir = cache_dir(root)
        self.path = self.dir / LOCK
        self.fd: int | None = None
        self.dir_fd: int | None = None

    def acquire(self) -> None:
        ensure_cache_folder(self.dir)
        from ..stores.sidefiles import pid_alive

        fd = open_cache_file(self.path, os.O_RDWR | os.O_CREAT)
        deadline = time.monotonic() + 1.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise
                # A status probe (``holder``) holds the lock shared for a moment; the pid left in the
                # file by a killed watcher is then not running, and must not be named as the holder.
                if not pid_alive(holder) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                os.close(fd)
                raise LockError(holder_text(holder, self.dir.parent)) from None
        self._took(fd)

    def _took(self, fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self.fd = fd
        self._close_dir()
        self.dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        self.write(PIDFILE, f"{os.getpid()}\n")

    def write(self, name: str, text: str) -> None:
        """Write ``name`` in the cache folder this lock was taken in (wherever it is now)."""
        if self.dir_fd is None:
            raise OSError(errno.EBADF, "the watch lock is not held")
        write_atomic(Path(name), text, dir_fd=self.dir_fd)

    def intact(self) -> bool:
        """Whether ``watch.lock`` at its path is still the file this lock holds (not deleted with
        the cache folder, nor replaced)."""
        if self.fd is None:
            return False
        try:
            here, held = os.stat(self.path), os.fstat(self.fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    def retake(self) -> int | None:
        """The lock file went (``rm -rf .wikimem``): make it again and lock it, so ``--status``,
        ``--stop`` and a second ``--daemon`` find this watcher. Returns None when done, or the pid
        of another watcher that locked the new file first (this lock is then let go, and nothing
        of the other's is touched)."""
        ensure_cache_folder(self.dir, parents=False)
        fd = open_cache_file(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            self.abandon()
            return int(holder) if holder.isdigit() else -1
        old = self.fd
        self._took(fd)
        if old is not None:
            with contextlib.suppress(OSError):
                os.close(old)
        return None

    def abandon(self) -> None:
        """Let go without touching any file (another watcher owns them now)."""
        for fd in (self.fd, self.dir_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = self.dir_fd = None

    def _close_dir(self) -> None:
        if self.dir_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.dir_fd)
            self.dir_fd = None

    def release(self) -> None:
        if self.fd is None:
            return
        if self.dir_fd is not None:
            with contextlib.suppress(OSError):
                if read_pid(PIDFILE, dir_fd=self.dir_fd) == os.getpid():
                    os.unlink(PIDFILE, dir_fd=self.dir_fd)
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        os.close(self.fd)  # closing releases the flock
        self.fd = None
        self._close_dir()


def holder(root: Path) -> int | None:
    """The pid of the running watcher, or None when no watcher holds the lock."""
    from ..stores.sidefiles import watcher_pid
    return watcher_pid(root)


def read_pid(path: Path | str, dir_fd: int | None = None) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | SAFE_OPEN, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            text = fh.read(64).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def write_atomic(path: Path, text: str, dir_fd: int | None = None) -> None:
    """Readers see the old file or the new one, never half of one. No fsync: this is status, and a
    crash loses nothing the next watcher does not rewrite. The temporary name is per thread: the
    worker and watchdog's thread (reporting lost events) may both write the status at once.
    ``dir_fd``: ``path`` is a name in that open folder (nothing is created if it was deleted)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | SAFE_OPEN, 0o644, dir_fd=dir_fd)  # never through a link
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def write_status(root: Path, status: dict[str, Any], lock: WatchLock | None = None) -> None:
    """``lock``: write through the folder the watcher took its lock in (see ``WatchLock``)."""
    text = json.dumps(status, ensure_ascii=False, indent=1, default=str)
    with contextlib.suppress(OSError):  # a read-only or vanished cache folder must not stop the watcher
        if lock is not None:
            lock.write(STATUS, text)
        else:
            write_atomic(cache_dir(root) / STATUS, text)


def read_status(root: Path) -> dict[str, Any]:
    """What ``watch --status`` shows: whether a watcher runs (by the lock, not by the pid file) and
    the last status it wrote (``last_*`` fields stay from a watcher that has stopped)."""
    root = Path(root)
    pid = holder(root)
    try:
        saved = json.loads((cache_dir(root) / STATUS).read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError):
        saved = {}
    info: dict[str, Any] = {"vault": str(root), "running": pid is not None, "pid": pid}
    if pid is None:
        stale = read_pid(cache_dir(root) / PIDFILE)
        if stale is not None:
            info["stale_pid_file"] = stale
        saved.pop("pid", None)
        if saved.get("state") not in (None, "stopped"):
            saved["state"] = "dead"  # it wrote no final status: killed or crashed
    for key, value in saved.items():
        info.setdefault(key, value)
    info["log"] = str(cache_dir(root) / LOG)
    return info


def stop(root: Path, timeout: float = 30.0) -> dict[str, Any]:
    """SIGTERM the running watcher and wait until it has let go of its lock (it finishes the
    commit it is in first). Returns {"stopped": bool, "pid": ..., "was_running": bool}."""
    pid = holder(root)
    if pid is None:
        return {"stopped": True, "pid": None, "was_running": False}
    if pid <= 0:
        raise WikimemError(f"a watcher holds {cache_dir(root) / LOCK} but wrote no pid; stop it by hand")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        raise WikimemError(f"cannot signal watcher pid {pid}: {exc.strerror}") from None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if holder(root) is None:
            return {"stopped": True, "pid": pid, "was_running": True}
        time.sleep(0.05)
    return {"stopped": False, "pid": pid, "was_running": True}


# The daemon's entry point. Not `python -m wikimem.cli`: that puts the current folder first on
# sys.path, and a folder named `wikimem` there (a fresh clone's parent) shadowed the installed
# package ("cannot import name '__version__'"). The current folder is dropped before the import.
DAEMON_MAIN = ("import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
               "sys.argv[0] = 'wikimem'; from wikimem.cli import main; main()")


def spawn_daemon(root: Path, args: list[str], ready_timeout: float = 60.0) -> dict[str, Any]:
    """Start ``wikimem watch ROOT ARGS`` detached (own session, output to watch.log) and wait until
    it has reconciled the vault and is watching, so an edit made right after this returns is seen.
    Refuses when a watcher already runs."""
    root = Path(root)
    running = holder(root)
    if running is not None:
        raise LockError(f"a watcher (pid {running}) is already watching {root}; stop it with 'wikimem watch --stop'")
    folder = cache_dir(root)
    ensure_cache_folder(folder)
    log_path = folder / LOG
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > LOG_KEEP_BYTES:  # keep one old log, never let it grow without bound
            os.replace(log_path, log_path.with_name(LOG + ".1"))
    started = time.time()
    with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
        # -v: one INFO line per build in the log
        proc = subprocess.Popen([sys.executable, "-c", DAEMON_MAIN, "-v", "watch", str(root.resolve()), *args],
                                stdin=devnull, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            tail = _tail(log_path)
            raise WikimemError(f"the watcher exited at start (code {code}); {log_path}:\n{tail}")
        info = read_status(root)
        if info.get("running") and info.get("pid") == proc.pid and info.get("builds", 0) >= 1 \
                and (info.get("started_at") or 0) >= started - 1:  # the start-up reconcile is committed
            return {"pid": proc.pid, "ready": True, "log": str(log_path)}
        time.sleep(0.05)
    return {"pid": proc.pid, "ready": False, "log": str(log_path)}


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
