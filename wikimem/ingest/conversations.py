"""Conversation exports -> one verbatim transcript note per session under ``raw/transcripts/``.

The readers (``claude_code``, ``chatgpt``, ``chat_text``) turn a file into ``Session`` objects plus
``Problem``s for what they could not read; this module names the notes and writes the new ones.
A session's note name is derived from its date, title and id, so importing the same export again
finds the notes it wrote last time and adds only the sessions that are new. raw/ is immutable:
a session whose note exists is never rewritten, even when the export has grown since.
"""
from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConflictError, WikimemError
from ..knowledge import secrets
from .transcript import Session, session_note

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
TRANSCRIPT_FOLDER = "raw/transcripts"


@dataclass(frozen=True)
class Problem:
    """Something in an export that was not imported, and why (shown to the user)."""

    where: str  # file, file:line or file#conversation
    reason: str


@dataclass(frozen=True)
class Parsed:
    sessions: tuple[Session, ...]
    problems: tuple[Problem, ...]
    format: str


@dataclass(frozen=True)
class Imported:
    """What happened to one session: ``added`` (a new note), ``unchanged`` (imported before),
    ``kept`` (imported before and the export differs now; the note is left as it was) or
    ``refused`` (``reason``: it holds a secret)."""

    status: str
    path: str
    session_id: str
    turns: int
    reason: str = ""


def short_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def clip(text: str, limit: int = 60) -> str:
    """First line of ``text``, at most ``limit`` characters, cut at a word boundary."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut.rstrip(" ,.;:") + "…"


def note_path(session: Session, folder: str = TRANSCRIPT_FOLDER) -> str:
    sid = str(session.extra.get("session_id") or short_id(session_note(session)))
    stem = _UNSAFE.sub(" ", session.title)
    stem = " ".join(stem.split())[:80].strip(" .") or "session"
    day = (session.date or "")[:10]
    name = f"{day} {stem} {sid[:8]}" if day else f"{stem} {sid[:8]}"
    return f"{folder.strip('/')}/{name}.md"


def read_export(path: Path, fmt: str | None = None) -> Parsed:
    """Pick the reader by ``fmt`` (claude-code | chatgpt | text) or by the file."""
    from . import chat_text, chatgpt, claude_code

    fmt = fmt or guess_format(path)
    readers = {"claude-code": claude_code.read, "chatgpt": chatgpt.read, "text": chat_text.read}
    if fmt not in readers:
        raise WikimemError(f"{path.name}: unknown conversation format {fmt!r} (known: {', '.join(readers)})")
    return readers[fmt](path)


def guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "claude-code"
    if suffix == ".json":
        return "chatgpt"
    return "text"


def write_sessions(vault, sessions, folder: str = TRANSCRIPT_FOLDER) -> list[Imported]:
    """Create a note for each session that has none yet; never touch an existing one."""
    results: list[Imported] = []
    for session in sessions:
        rel = note_path(session, folder)
        text = session_note(session)
        sid = str(session.extra.get("session_id", ""))
        target = vault.files.abspath(rel)
        if target.exists():
            same = target.read_bytes() == text.encode("utf-8")
            results.append(Imported("unchanged" if same else "kept", rel, sid, len(session.turns)))
            continue
        try:
            secrets.check(text, rel)  # raw/ is forever: a session holding a secret is not imported
        except WikimemError as exc:
            results.append(Imported("refused", rel, sid, len(session.turns), str(exc)))
            continue
        try:
            vault.files.create_note(rel, text)
        except ConflictError:  # appeared meanwhile (another import): leave it alone
            results.append(Imported("kept", rel, sid, len(session.turns)))
            continue
        log.info("imported %s (%d turns)", rel, len(session.turns))
        results.append(Imported("added", rel, sid, len(session.turns)))
    return results
