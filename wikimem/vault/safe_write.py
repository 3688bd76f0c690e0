"""Writing a file inside the vault so that no symlink swapped in after the check can send it out.

Checking a path and then writing it by name leaves a window: a folder inside the vault replaced by
a symlink to an outside folder between the two put files outside the vault (3 in 600 agent writes,
each answered ``created: true``). Here the vault root is opened once and every folder below it is
opened relative to its parent's descriptor with ``O_NOFOLLOW``: a component that is a symlink is
never followed by the kernel. A symlink met on the way is resolved by us, checked to stay inside
the vault (and outside raw/), and the walk starts again along the real path, still with
``O_NOFOLLOW``, so what is checked is what is written. The file itself is written as a temp file
in that folder and renamed over the name (or hard-linked to it, which refuses to replace, for a
new note), all relative to the folder's descriptor. A note that is itself a symlink (inside the
vault) is written where it points, not replaced by a regular file.

Where the platform has no ``dir_fd`` support (Windows), ``supported()`` is False and callers use
the path-based write.
"""
from __future__ import annotations

import errno
import hashlib
import os
import secrets as _random
import stat as stat_mod
from pathlib import Path
from typing import Callable

from ..errors import ConflictError, PathEscapeError, ReadOnlyError

MAX_HOPS = 40  # symlinks followed for one write, as the kernel's own limit
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def supported() -> bool:
    # os.replace takes the same dir_fd arguments as os.rename (supports_dir_fd lists only the latter)
    return os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and os.rename in os.supports_dir_fd


def _inside(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


class _Walk:
    def __init__(self, root: Path, allow_raw: bool):
        self.root = root
        self.real_root = os.path.realpath(root)
        self.raw = os.path.join(self.real_root, "raw")
        self.allow_raw = allow_raw
        self.hops = 0

    def check(self, real: str, rel: str) -> None:
        if not _inside(real, self.real_root):
            raise PathEscapeError(f"path escapes the vault through a symlink: {rel}")
        if not self.allow_raw and _inside(real, self.raw):
            raise ReadOnlyError(f"{rel}: raw/ sources are immutable; wikimem never modifies them")

    def open_folder(self, parts: list[str], rel: str) -> tuple[int, str]:
        """A descriptor of the folder ``parts`` (made when missing) and its real path."""
        while True:
            fd = os.open(self.real_root, _DIR_FLAGS)
            here = self.real_root
            try:
                for i, name in enumerate(parts):
                    try:
                        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        try:
                            os.mkdir(name, 0o777, dir_fd=fd)
                        except FileExistsError:
                            pass
                        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                            raise
                        target = self._resolve(fd, here, name, rel)
                        if target is None:
                            if exc.errno == errno.ENOTDIR:  # a file where a folder of the path should be
                                raise ConflictError(f"{rel}: {'/'.join(self._relative(here) + [name])} is a file, "
                                                    "not a folder; choose another path") from None
                            raise
                        parts = self._relative(target) + parts[i + 1:]
                        break  # start again from the root along the real path
                    os.close(fd)
                    fd, here = child, os.path.join(here, name)
                else:
                    self.check(here, rel)
                    return fd, here
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def _resolve(self, fd: int, here: str, name: str, rel: str) -> str | None:
        """Where the symlink ``name`` in folder ``fd`` (real path ``here``) leads, checked."""
        try:
            link = os.readlink(name, dir_fd=fd)
        except OSError:
            return None
        self.hops += 1
        if self.hops > MAX_HOPS:
            raise PathEscapeError(f"cannot resolve {rel}: too many symlinks (a loop?)")
        target = os.path.realpath(os.path.join(here, link))
        self.check(target, rel)
        return target

    def _relative(self, real: str) -> list[str]:
        return [p for p in os.path.relpath(real, self.real_root).split(os.sep) if p not in ("", ".")]


def _read_at(fd: int, name: str) -> bytes | None:
    try:
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while True:
            block = os.read(file_fd, 1 << 20)
            if not block:
                return b"".join(chunks)
            chunks.append(block)
    finally:
        os.close(file_fd)


def write_in_vault(root: Path, parts: list[str], data: bytes, *, expected_sha256: str | None, mode_for_new: int,
                   allow_raw: bool = False, before_replace: Callable[[], None] | None = None, rel: str = "") -> list[str]:
    """Write ``data`` to the vault-relative path ``parts`` (atomically; ``expected_sha256`` None:
    the file must not exist, else it must still have that hash). Returns the parts of the path
    really written (a symlinked note is written where it points)."""
    rel = rel or "/".join(parts)
    walk = _Walk(root, allow_raw)
    folder, name = list(parts[:-1]), parts[-1]
    while True:
        fd, here = walk.open_folder(folder, rel)
        try:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat_mod.S_ISLNK(st.st_mode):
                target = walk._resolve(fd, here, name, rel)
                if target is None:
                    raise PathEscapeError(f"cannot resolve {rel}")
                pieces = walk._relative(target)
                if not pieces:
                    raise PathEscapeError(f"{rel} points at the vault itself")
                folder, name = pieces[:-1], pieces[-1]
                continue  # write the note it points at
            _write(fd, name, data, expected_sha256, st, mode_for_new, before_replace, rel)
            return walk._relative(here) + [name]
        finally:
            os.close(fd)


def _check(fd: int, name: str, expected_sha256: str | None, rel: str) -> None:
    current = _read_at(fd, name)
    if expected_sha256 is None:
        if current is not None:
            raise ConflictError(f"{rel}: file already exists; refusing to overwrite it")
        return
    if current is None:
        raise ConflictError(f"{rel}: file was deleted since it was read; not writing")
    if hashlib.sha256(current).hexdigest() != expected_sha256:
        raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting "
                            "(re-read it and apply the change again)")


_RENAME_EXCHANGE = 2  # linux/fs.h


def _load_renameat2():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, ImportError):
        return None, None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn, ctypes


_renameat2, _ctypes = _load_renameat2()
_exchange_works = _renameat2 is not None


def exchange(fd: int, a: str, b: str) -> bool:
    """Swap the names ``a`` and ``b`` in folder ``fd`` in one step (Linux renameat2
    RENAME_EXCHANGE); False where the kernel or file system cannot (the caller falls back)."""
    global _exchange_works
    if not _exchange_works:
        return False
    if _renameat2(fd, os.fsencode(a), fd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = _ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
        if err == errno.ENOSYS:
            _exchange_works = False
        return False
    raise OSError(err, os.strerror(err), b)


def _settle(fd: int, tmp: str, name: str, data: bytes, expected_sha256: str, rel: str) -> None:
    """After exchanging the new text in: ``tmp`` holds what ``name`` held. When that is what the
    caller read, the write is done. When it is not, a person's editor saved in the microseconds
    between the last check and the exchange (a temp file renamed over the note): their save is put
    back, the newest of the saves kept under the name, and the write refused. Each round of the
    loop only ever exchanges or unlinks what is provably ours or older than what stays."""
    ours = hashlib.sha256(data).hexdigest()
    if hashlib.sha256(_read_at(fd, tmp) or b"").hexdigest() == expected_sha256:
        os.unlink(tmp, dir_fd=fd)
        return
    for _ in range(8):
        aside, here = _read_at(fd, tmp), _read_at(fd, name)
        if aside is not None and hashlib.sha256(aside).hexdigest() == ours:
            os.unlink(tmp, dir_fd=fd)  # our text, displaced by theirs: gone, theirs stays
            break
        if aside is None:
            break
        if here is None:  # the note was removed meanwhile: theirs goes back under the name, never replacing
            try:
                os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                continue  # something arrived under the name: look again
            os.unlink(tmp, dir_fd=fd)
            break
        at_tmp = os.stat(tmp, dir_fd=fd, follow_symlinks=False)
        at_name = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if hashlib.sha256(here).hexdigest() == ours or at_tmp.st_mtime_ns >= at_name.st_mtime_ns:
            if not exchange(fd, tmp, name):  # put theirs back
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
                break
            continue
        os.unlink(tmp, dir_fd=fd)  # an older save than the one under the name now: superseded by it
        break
    else:  # saves kept racing every round: keep the one aside as a note of its own, never drop it
        stem = name[:-3] if name.lower().endswith(".md") else name
        os.rename(tmp, f"{stem} (conflict {_random.token_hex(3)}).md", src_dir_fd=fd, dst_dir_fd=fd)
    raise ConflictError(f"{rel}: file changed on disk while it was being written; their save is kept, "
                        "this write was not made (re-read it and apply the change again)")


def _write(fd: int, name: str, data: bytes, expected_sha256: str | None, st, mode_for_new: int,
           before_replace, rel: str) -> None:
    if st is not None and not stat_mod.S_ISREG(st.st_mode):
        raise ConflictError(f"{rel}: not a regular file; not writing")
    _check(fd, name, expected_sha256, rel)
    tmp = f".wikimem-{_random.token_hex(6)}.tmp"
    tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                     dir_fd=fd)
    try:
        try:
            view, done = memoryview(data), 0
            while done < len(data):  # os.write may write less than asked
                done += os.write(tmp_fd, view[done:])
            os.fchmod(tmp_fd, (st.st_mode & 0o7777) if st is not None else mode_for_new)
            os.fsync(tmp_fd)
        finally:
            os.close(tmp_fd)
        if before_replace is not None:
            before_replace()
        _check(fd, name, expected_sha256, rel)  # again, right before the rename
        if expected_sha256 is None:
            try:
                os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                raise ConflictError(f"{rel}: file already exists; refusing to overwrite it") from None
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
                    raise
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)  # no hard links here (FAT): checked above
            else:
                os.unlink(tmp, dir_fd=fd)
        elif exchange(fd, tmp, name):
            _settle(fd, tmp, name, data, expected_sha256, rel)
        else:  # no atomic exchange here: checked right above, a save in the microseconds between is lost
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise
    try:
        os.fsync(fd)
    except OSError:
        pass
