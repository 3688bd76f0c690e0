"""Moving a note (a rename, or into ``.trash/``) through the same descriptor-relative door as a
write (safe_write.py), so that neither a symlink swapped in nor a person's save landing mid-move
sends a note outside the vault or loses it (issue 35 items 3, 4 and 6).

The move is link, verify, retire:
1. both folders are opened along the real path with ``O_NOFOLLOW`` (a folder swapped for a symlink
   out of the vault is never followed), ``.trash`` itself must be a real folder;
2. the note is hard-linked under its new name (``link(2)`` refuses to replace anything: a name
   taken is a ConflictError, and in the trash the next free name is tried, so nothing is replaced);
3. the new name is read back: it must hold what the caller read (else the new link is removed);
4. the old name is renamed aside (atomic) and the inode that went aside is compared with the one
   linked: the same inode means the note moved whole; another one means a person's editor saved
   the note in between (a temp file renamed over it), and that save is put back under the old
   name, the new link removed, and the move refused.
A person's save is never unlinked: at worst the move is refused. Where hard links are not possible
(FAT, some network shares) the move falls back to a check then ``rename(2)`` without replace
semantics beyond that check: the window is the one of the path-based code before this.
"""
from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import os
import secrets as _random
import stat as stat_mod
import unicodedata

from ..errors import ConflictError, PathEscapeError
from .safe_write import _read_at, _Walk

TRASH = ".trash"
_NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK)


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _lstat(fd: int, name: str):
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _fsync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass


def _twin(fd: int, name: str) -> str | None:
    """A name in folder ``fd`` that is ``name`` in another case or Unicode form (one file on macOS
    and Windows), or None."""
    key = unicodedata.normalize("NFC", name).casefold()
    for other in os.listdir(fd):
        if other != name and unicodedata.normalize("NFC", other).casefold() == key:
            return other
    return None


def _source(walk: _Walk, parts: list[str], rel: str, expected_sha256: str) -> tuple[int, str, os.stat_result]:
    """The folder descriptor and name of the note to move, checked to be a regular file holding
    ``expected_sha256``."""
    fd, _ = walk.open_folder(list(parts[:-1]), rel)
    name = parts[-1]
    try:
        st = _lstat(fd, name)
        if st is None:
            raise ConflictError(f"{rel}: the page was deleted since it was read")
        if not stat_mod.S_ISREG(st.st_mode):
            raise ConflictError(f"{rel}: not a regular file (a symlink or a folder); move the note itself")
        if _sha(_read_at(fd, name)) != expected_sha256:
            raise ConflictError(f"{rel}: the page changed since it was read (sha256 differs); read it again")
    except BaseException:
        os.close(fd)
        raise
    return fd, name, st


def _retire(sfd: int, name: str, dfd: int, new_name: str, linked: os.stat_result, rel: str) -> None:
    """Step 4: rename the old name aside, keep it only when it is not the inode that was linked."""
    aside = f".wikimem-{_random.token_hex(6)}.tmp"
    try:
        os.rename(name, aside, src_dir_fd=sfd, dst_dir_fd=sfd)
    except FileNotFoundError:  # the old name was removed meanwhile: the note lives on under its new name
        _fsync(sfd)
        _fsync(dfd)
        return
    went = _lstat(sfd, aside)
    if went is not None and (went.st_ino, went.st_dev) == (linked.st_ino, linked.st_dev):
        os.unlink(aside, dir_fd=sfd)
        _fsync(sfd)
        _fsync(dfd)
        return
    # a save landed under the old name after the link: it goes back, the move is undone
    try:
        os.link(aside, name, src_dir_fd=sfd, dst_dir_fd=sfd, follow_symlinks=False)
    except FileExistsError:
        pass  # an even newer save is there already; the one aside is older than it
    else:
        os.unlink(aside, dir_fd=sfd)
    if _lstat(sfd, aside) is not None:
        os.unlink(aside, dir_fd=sfd)
    now = _lstat(dfd, new_name)
    if now is not None and (now.st_ino, now.st_dev) == (linked.st_ino, linked.st_dev):
        os.unlink(new_name, dir_fd=dfd)
    raise ConflictError(f"{rel}: the page was saved while it was being moved; it stays where it was (read it again)")


def _link(sfd: int, name: str, dfd: int, new_name: str, expected_sha256: str, new_rel: str) -> os.stat_result | None:
    """Steps 2-3; None when this file system has no hard links (the caller renames instead)."""
    try:
        os.link(name, new_name, src_dir_fd=sfd, dst_dir_fd=dfd, follow_symlinks=False)
    except FileExistsError:
        raise
    except FileNotFoundError:  # replaced by a save at that instant (Linux refuses to link an inode unlinked)
        raise ConflictError(f"{new_rel}: the page was saved while it was being moved; not moved (read it again)") from None
    except OSError as exc:
        if exc.errno in _NO_LINKS:
            return None
        raise
    linked = _lstat(dfd, new_name)
    if linked is None or _sha(_read_at(dfd, new_name)) != expected_sha256:
        if linked is not None:
            os.unlink(new_name, dir_fd=dfd)
        raise ConflictError(f"{new_rel}: the page changed while it was being moved; not moved (read it again)")
    return linked


def _rename_without_links(sfd: int, name: str, dfd: int, new_name: str, new_rel: str) -> None:
    if _lstat(dfd, new_name) is not None:
        raise FileExistsError(errno.EEXIST, "exists")
    os.rename(name, new_name, src_dir_fd=sfd, dst_dir_fd=dfd)
    _fsync(sfd)
    _fsync(dfd)


def rename_in_vault(root, old_parts: list[str], new_parts: list[str], expected_sha256: str, *,
                    old_rel: str = "", new_rel: str = "") -> None:
    """Rename a note inside the vault; never replaces a file, never lands outside, never loses a
    save that races it (see the module docstring)."""
    old_rel, new_rel = old_rel or "/".join(old_parts), new_rel or "/".join(new_parts)
    walk = _Walk(root, allow_raw=False)
    sfd, name, _ = _source(walk, old_parts, old_rel, expected_sha256)
    try:
        dfd, _ = walk.open_folder(list(new_parts[:-1]), new_rel)
        try:
            new_name = new_parts[-1]
            twin = _twin(dfd, new_name)
            if twin is not None and not (dfd_is_sfd(sfd, dfd) and twin == name):
                raise ConflictError(f"{new_rel}: a file named {twin} is already there, the same name in another case "
                                    "or Unicode form (macOS and Windows would take them for one file); not moving")
            try:
                linked = _link(sfd, name, dfd, new_name, expected_sha256, new_rel)
                if linked is None:
                    _rename_without_links(sfd, name, dfd, new_name, new_rel)
                    return
            except FileExistsError:
                raise ConflictError(f"{new_rel}: a file of that name already exists; not replacing it") from None
            _retire(sfd, name, dfd, new_name, linked, old_rel)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)


def dfd_is_sfd(a: int, b: int) -> bool:
    """Whether two folder descriptors are the same folder (a case-only rename in one folder)."""
    x, y = os.fstat(a), os.fstat(b)
    return (x.st_ino, x.st_dev) == (y.st_ino, y.st_dev)


def trash_in_vault(root, parts: list[str], expected_sha256: str, *, rel: str = "") -> str:
    """Move a note into ``.trash/`` (its folders kept). A name already taken there gets a time
    stamp and, when that is taken too, a counter: nothing in the trash is ever replaced. Returns the
    vault-relative path it went to."""
    rel = rel or "/".join(parts)
    walk = _Walk(root, allow_raw=False)
    rfd = os.open(walk.real_root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = _lstat(rfd, TRASH)
        if st is not None and not stat_mod.S_ISDIR(st.st_mode):
            raise PathEscapeError(f"{TRASH} is not a folder (a symlink?); wikimem will not move notes through it. "
                                  f"Make {TRASH} a real folder inside the vault")
    finally:
        os.close(rfd)
    sfd, name, _ = _source(walk, parts, rel, expected_sha256)
    try:
        folders = [TRASH, *parts[:-1]]
        dfd, _ = walk.open_folder(folders, f"{TRASH}/{rel}")
        try:
            stem, dot, ext = name.rpartition(".")
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            candidates = [name] + [(f"{stem} {stamp}{'' if n == 1 else f' {n}'}.{ext}" if dot
                                    else f"{name} {stamp}{'' if n == 1 else f' {n}'}") for n in range(1, 1000)]
            for candidate in candidates:
                target_rel = "/".join(folders[:] + [candidate])
                try:
                    linked = _link(sfd, name, dfd, candidate, expected_sha256, target_rel)
                    if linked is None:
                        _rename_without_links(sfd, name, dfd, candidate, target_rel)
                        return target_rel
                except FileExistsError:
                    continue
                _retire(sfd, name, dfd, candidate, linked, rel)
                return target_rel
            raise ConflictError(f"{rel}: no free name left in {TRASH}/ for it")
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
