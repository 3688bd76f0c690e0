"""Deleting and renaming notes the way Obsidian does: a deleted note goes to the vault's
``.trash/`` (recoverable, never indexed: a dot folder), and a rename is one atomic ``rename(2)``
that refuses to replace anything. Both check that the note is still what the caller read."""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from ..errors import ConflictError
from .files import VaultFiles, sha256_bytes

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
    """Move ``rel`` into ``.trash/`` (keeping its folders); a name already there gets a time stamp.
    Returns the vault-relative path it went to."""
    path = _check(files, rel, expected_sha256)
    target_rel = f"{TRASH}/{rel}"
    target = files.root / target_rel
    if target.exists():
        stem, dot, ext = target.name.rpartition(".")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        target = target.with_name(f"{stem} {stamp}.{ext}" if dot else f"{target.name} {stamp}")
        target_rel = target.relative_to(files.root).as_posix()
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    return target_rel


def rename_note(files: VaultFiles, old: str, new: str, expected_sha256: str) -> None:
    """Rename ``old`` to ``new`` atomically; refuses when ``new`` exists (link(2) + unlink: the
    rename never replaces a file that appeared in between)."""
    source = _check(files, old, expected_sha256)
    target = files.abspath(new)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # fails with EEXIST instead of replacing
    except FileExistsError:
        raise ConflictError(f"{new}: a file of that name already exists; not replacing it") from None
    except OSError:  # a file system without hard links: check, then rename
        if target.exists():
            raise ConflictError(f"{new}: a file of that name already exists; not replacing it") from None
        os.replace(source, target)
        return
    os.unlink(source)
