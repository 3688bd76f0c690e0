"""A page's revisions when the vault is in a git repository, read with the git binary.

Read-only and local (``git log``: no network). No git on the PATH, a vault outside any repository,
a page git does not track, or git failing: no commits, never an error, since history without git
is the supersede chain alone.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 10.0
_SEP = "\x1e"  # between commits
_FIELD = "\x1f"  # between a commit's fields


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # author date, ISO 8601 with its offset
    author: str
    message: str  # the subject line
    added: int
    removed: int
    path: str  # the page's path in that commit (a rename is followed)

    def to_dict(self) -> dict[str, Any]:
        return {"sha": self.sha, "date": self.date, "author": self.author, "message": self.message,
                "lines_added": self.added, "lines_removed": self.removed, "path": self.path}


def _git(root: Path, *args: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run([git, "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("git %s failed: %s", args[:1], exc)
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace")


def repository_prefix(root: Path) -> str | None:
    """The vault's folder inside its git repository ("" at its top), or None when the vault is in
    none (or there is no git): one ``git rev-parse`` answers both."""
    lines = (_git(root, "rev-parse", "--is-inside-work-tree", "--show-prefix") or "").splitlines()
    if not lines or lines[0].strip() != "true":
        return None
    return lines[1].strip() if len(lines) > 1 else ""


def page_commits(root: Path, rel: str, limit: int = 100, prefix: str | None = None) -> list[Commit]:
    """The commits that changed ``rel`` (vault-relative), newest first, following renames.
    ``prefix``: ``repository_prefix(root)`` when the caller has it (asked here otherwise)."""
    prefix = repository_prefix(root) if prefix is None else prefix
    if prefix is None:
        return []
    out = _git(root, "log", "--follow", f"--max-count={limit}", "--numstat", "--no-color", "-z",
               f"--format={_SEP}%H{_FIELD}%aI{_FIELD}%an{_FIELD}%s{_FIELD}", "--", rel)
    if not out:
        return []
    commits = []
    for block in out.split(_SEP)[1:]:
        head, stats = _split(block)
        parts = head.split(_FIELD)
        if len(parts) < 4:
            continue
        sha, date, author, message = parts[:4]
        added, removed, path = _numstat(stats, rel)
        commits.append(Commit(sha, date, author, message, added, removed, path.removeprefix(prefix)))
    return commits


def _split(block: str) -> tuple[str, str]:
    """A commit's block: header fields, then (after the last field separator) its numstat."""
    at = block.rfind(_FIELD)
    return block[:at], block[at + 1:]


def _numstat(stats: str, rel: str) -> tuple[int, int, str]:
    """Lines added and removed, and the path, from ``--numstat -z`` output (a rename's path is
    given as two NUL-ended names after an empty one)."""
    fields = [f for f in stats.strip("\n").split("\0")]
    added = removed = 0
    path = rel
    i = 0
    while i < len(fields):
        field = fields[i].strip("\n")
        if not field:
            i += 1
            continue
        bits = field.split("\t")
        if len(bits) >= 3 and bits[2]:
            a, r, path = bits[0], bits[1], bits[2]
            i += 1
        elif len(bits) >= 2:  # a rename: "a\tr\t" then the old and the new name
            a, r = bits[0], bits[1]
            path = fields[i + 2] if i + 2 < len(fields) else rel
            i += 3
        else:
            i += 1
            continue
        added += int(a) if a.isdigit() else 0
        removed += int(r) if r.isdigit() else 0
    return added, removed, path


def first_added(root: Path, prefix: str | None = None) -> dict[str, str]:
    """Vault-relative path -> the author date of the commit that first added it (renames not
    followed: a renamed file is dated from its rename), for every file git added under the vault.
    One ``git log`` for the whole vault; {} without git or a repository."""
    prefix = repository_prefix(root) if prefix is None else prefix
    if prefix is None:
        return {}
    out = _git(root, "log", "--diff-filter=A", "--no-renames", "--name-only", "--no-color", "-z", "--relative",
               f"--format={_SEP}%aI", "--", ".")
    if not out:
        return {}
    first: dict[str, str] = {}
    for block in out.split(_SEP)[1:]:  # newest first: the oldest commit that added a path wins
        date, _, names = block.partition("\n")
        for name in names.split("\0"):
            name = name.strip("\n")
            if name:
                first[name] = date.strip()
    return first
