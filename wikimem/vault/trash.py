"""Deleting and renaming notes the way Obsidian does: a deleted note goes to the vault's
``.trash/`` (recoverable, never indexed: a dot folder), and a rename never replaces anything. Both
check that the note is still what the caller read, and both go through the descriptor-relative door
(vault/moves.py) where the platform has one, so a symlink swapped in cannot take a note out of the
vault and a person's save that races the move is never lost."""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from ..errors import ConflictError, PathEscapeError
from . import safe_write
from .files import VaultFiles, rel_parts, sha256_bytes

TRASH = ".trash"


def _check(files: VaultFiles, rel: str, expected_sha256: str) -> Path:
    path = files.abspath(rel)
    try:
        current = sha256_bytes(path.read_bytes())
    except FileNotFoundError:
        raise ConflictError(f"{rel}: the page was deleted since it was read") from None
    if current != expected_sha256:
        raise ConflictError(f"{rel}: the page changed since it was read (sha256 differs); read it again")
    return path


def move_to_trash(files: VaultFiles, rel: str, expected_sha256: str) -> str:
    """Move ``rel`` into ``.trash/`` (keeping its folders); a name already there gets a time stamp
    (and a counter): nothing in the trash is replaced. Returns the vault-relative path it went to."""
    files.abspath(rel)  # PathEscapeError for .. and absolute paths, with the usual message
    if safe_write.supported():
        from .moves import trash_in_vault
        return trash_in_vault(files.root, rel_parts(rel), expected_sha256, rel=rel)
    path = _check(files, rel, expected_sha256)
    trash = files.root / TRASH
    if trash.is_symlink() or (trash.exists() and not trash.is_dir()):
        raise PathEscapeError(f"{TRASH} is not a folder (a symlink?); wikimem will not move notes through it")
    target_rel = f"{TRASH}/{rel}"
    target = files.root / target_rel
    n = 0
    while target.exists():
        n += 1
        stem, dot, ext = Path(rel).name.rpartition(".")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S") + ("" if n == 1 else f" {n}")
        target = target.with_name(f"{stem} {stamp}.{ext}" if dot else f"{Path(rel).name} {stamp}")
    target_rel = target.relative_to(files.root).as_posix()
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(path, target)
    return target_rel


def rename_note(files: VaultFiles, old: str, new: str, expected_sha256: str) -> None:
    """Rename ``old`` to ``new``; refuses when ``new`` exists, or a case or Unicode twin of it."""
    files.abspath(old)
    files.abspath(new)
    if safe_write.supported():
        from .moves import rename_in_vault
        rename_in_vault(files.root, rel_parts(old), rel_parts(new), expected_sha256, old_rel=old, new_rel=new)
        return
    source = _check(files, old, expected_sha256)
    target = files.abspath(new)
    files._check_twin(new, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # fails with EEXIST instead of replacing
    except FileExistsError:
        raise ConflictError(f"{new}: a file of that name already exists; not replacing it") from None
    except OSError:  # a file system without hard links: check, then rename
        if target.exists():
            raise ConflictError(f"{new}: a file of that name already exists; not replacing it") from None
        os.rename(source, target)
        return
    os.unlink(source)
