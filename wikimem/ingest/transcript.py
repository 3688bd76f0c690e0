"""Conversation transcripts -> one Markdown note per session under ``raw/transcripts/``.

A note keeps every turn verbatim, tagged with its speaker (and time when known), and ends each
turn with an Obsidian block id derived from the turn's id (``D3:7`` -> ``^D3-7``), so a search
hit — a chunk of one or more turns — can say exactly which turns it covers. The format is what the
chunker's transcript mode reads (one chunk per turn, ranked with the turn before it)::

    ---
    title: Caroline and Melanie, session 3
    type: source
    kind: transcript
    date: 2023-05-08T13:56:00
    participants: [Caroline, Melanie]
    ---
    # Session 3 · 8 May 2023, 1:56 pm

    **Caroline** (1:56 pm): Hey Mel! ^D3-1

Sources are immutable: importing never overwrites an existing note.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import yaml

from ..vault.files import clean_text, fit_name
from .raw import add_raw

_ID_CHARS = re.compile(r"[^A-Za-z0-9-]+")
_UNSAFE_NAME = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    id: str | None = None  # e.g. "D3:7"; becomes the block id ^D3-7
    time: str | None = None  # shown after the speaker when known
    attachments: tuple[str, ...] = ()  # descriptions of shared images/files, kept beside the text


@dataclass(frozen=True)
class Session:
    title: str
    turns: Sequence[Turn]
    date: str | None = None  # ISO 8601
    label: str | None = None  # human date/time as the source wrote it
    number: int | None = None
    participants: tuple[str, ...] = ()
    source: str | None = None  # where it came from (file, export, benchmark id)
    extra: dict = field(default_factory=dict)  # more frontmatter keys, kept verbatim


def block_id(turn_id: str) -> str:
    """``D3:7`` -> ``D3-7`` (Obsidian block ids allow letters, digits and dashes only)."""
    return _ID_CHARS.sub("-", turn_id).strip("-")


def turn_markdown(turn: Turn) -> str:
    speaker = turn.speaker.replace("*", "").strip() or "Unknown"
    head = f"**{speaker}**" + (f" ({turn.time})" if turn.time else "") + ":"
    text = turn.text.replace("\r\n", "\n").strip()
    # a line that looks like a new turn would split this one: escape its leading asterisks
    text = re.sub(r"(?m)^\*\*", r"\\*\\*", text)
    for note in turn.attachments:
        text += f" [image: {note.strip()}]"
    tail = f" ^{block_id(turn.id)}" if turn.id else ""
    if tail and text.rsplit("\n", 1)[-1].lstrip().startswith(("```", "~~~")):
        tail = "\n" + tail[1:]  # a closing fence must stand alone; the block id follows on its own line
    if text.startswith(("```", "~~~", "|", "- ", "* ", "> ", "#")):  # block syntax only works on a line of its own
        return f"{head}\n{text}{tail}"
    return f"{head} {text}{tail}"


def session_note(session: Session) -> str:
    front = {"title": session.title, "type": "source", "kind": "transcript"}
    if session.number is not None:
        front["session"] = session.number
    if session.date:
        front["date"] = session.date
    participants = session.participants or tuple(dict.fromkeys(t.speaker for t in session.turns))
    front["participants"] = list(participants)
    if session.source:
        front["source"] = session.source
    front.update(session.extra)
    heading = session.title
    if session.label:
        heading = f"{session.title} · {session.label}"
    body = "\n\n".join(turn_markdown(t) for t in session.turns)
    yaml_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return clean_text(f"---\n{yaml_text}---\n# {heading}\n\n{body}\n")  # exports carry NULs, lone surrogates


def note_name(session: Session) -> str:
    stem = fit_name(_UNSAFE_NAME.sub(" ", session.title).strip()).strip() or "session"
    prefix = (session.date or "")[:10]
    return f"{prefix} {stem}.md".strip() if prefix else f"{stem}.md"


def import_sessions(ctx, sessions: Iterable[Session], folder: str = "raw/transcripts") -> list[str]:
    """Write each session as a new note under ``folder``; returns the vault-relative paths.
    An existing note of the same name is left alone (sources are immutable) and reported by an
    error, so nothing is ever overwritten."""
    written = []
    for session in sessions:
        rel = f"{folder.strip('/')}/{note_name(session)}"
        add_raw(ctx, rel, session_note(session).encode("utf-8"))  # name checked, text scanned for secrets
        written.append(rel)
    return written
