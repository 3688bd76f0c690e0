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
from .raw import add_raw
from ..vault.files import fit_name
from .transcript import Session, session_note, turn_markdown

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]`\x00-\x1f]+')
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
    """What happened to one session: ``added`` (a new note), ``continued`` (new turns of a
    session imported before, as a new part), ``unchanged`` (imported before), ``kept`` (imported
    before and the export differs in a way that cannot be continued; ``reason`` says how) or
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
    stem = fit_name(" ".join(stem.split())[:80], 180).strip(" .") or "session"  # bytes: a name holds 255
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


_TURN_ID = re.compile(r"\^t(\d+)[ \t]*$", re.M)


def _parts(ctx, folder: str, base_rel: str) -> list[str]:
    """The notes already holding this session: found by the id at the end of the name (so a
    changed title still finds them), the first note and then its ``(part N)`` continuations."""
    sid8 = base_rel[:-3].rsplit(" ", 1)[-1]
    root = ctx.files.abspath(folder) if (ctx.root / folder).exists() else None
    if root is None:
        return []
    found = []
    for path in root.glob("*.md"):
        m = re.search(rf" {re.escape(sid8)}(?: \(part (\d+)\))?\.md$", path.name)
        if m:
            found.append((int(m.group(1) or 1), f"{folder.strip('/')}/{path.name}"))
    return [rel for _, rel in sorted(found)]


def _create(ctx, rel: str, session: Session, status: str) -> Imported:
    text = session_note(session)
    sid = str(session.extra.get("session_id", ""))
    try:
        secrets.check(text, rel)  # raw/ is forever: a session holding a secret is not imported
    except WikimemError as exc:
        return Imported("refused", rel, sid, len(session.turns), str(exc))
    try:
        add_raw(ctx, rel, text.encode("utf-8"), scanned=True)
    except ConflictError:  # appeared meanwhile (another import): leave it alone
        return Imported("kept", rel, sid, len(session.turns), "written meanwhile by another import")
    except WikimemError as exc:  # one session the writer refuses: the others still import
        return Imported("refused", rel, sid, len(session.turns), str(exc))
    log.info("imported %s (%d turns)", rel, len(session.turns))
    return Imported(status, rel, sid, len(session.turns))


def write_sessions(ctx, sessions, folder: str = TRANSCRIPT_FOLDER) -> list[Imported]:
    """Create a note for each session that has none yet; never touch an existing one. A session
    that has grown since it was imported (a Claude Code log still in use, a ChatGPT conversation
    taken up again) gets its new turns as a continuation note ``<name> (part N).md`` that links the
    part before it; the turn ids go on counting (``^t9``, ``^t10``...)."""
    results: list[Imported] = []
    for session in sessions:
        rel = note_path(session, folder)
        sid = str(session.extra.get("session_id", ""))
        parts = _parts(ctx, folder, rel)
        if not parts:
            results.append(_create(ctx, rel, session, "added"))
            continue
        texts = [ctx.files.read_note(p).text for p in parts]
        covered = max((int(n) for t in texts for n in _TURN_ID.findall(t)), default=0)
        turns = list(session.turns)
        if len(turns) <= covered:
            same = len(turns) == covered
            results.append(Imported("unchanged" if same else "kept", parts[-1], sid, len(turns),
                                    "" if same else "the export has fewer turns than the imported notes"))
            continue
        if covered and turn_markdown(turns[covered - 1]) not in texts[-1]:
            results.append(Imported("kept", parts[-1], sid, len(turns),
                                    "the conversation changed before its last imported turn; not continued"))
            continue
        number = len(parts) + 1
        part_rel = f"{parts[0][:-3]} (part {number}).md"
        extra = {**session.extra, "continues": f"[[{parts[-1][:-3]}]]"}
        when = turns[covered].time or ""
        part = Session(title=f"{session.title} (part {number})", turns=turns[covered:],
                       date=when.replace(" ", "T") if len(when) >= 16 else session.date,
                       participants=session.participants, source=session.source, extra=extra)
        results.append(_create(ctx, part_rel, part, "continued"))
    return results
