"""Plain text or Markdown chats (``Speaker: text`` lines) -> one session per file.

Accepted turn lines: ``Alice: hi``, ``**Alice**: hi``, ``Alice (10:32): hi``, ``[10:32] Alice: hi``
and ``[2025-01-02 10:32] Alice: hi``. A line that does not start a turn continues the one before
(multi-line messages, code). A leading ``# Heading`` names the session; YAML frontmatter may give
``title`` and ``date``. Text before the first turn that is not a heading is reported, not lost:
the file is refused, since it is probably not a chat.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from .conversations import Parsed, Problem, short_id
from .transcript import Session, Turn

_TURN = re.compile(
    r"^(?:\[(?P<stamp>[^\]\n]{1,30})\]\s*)?"
    r"(?P<star>\*\*)?(?P<speaker>[^\W\d_][\w .'’-]{0,38}?)(?(star)\*\*)"
    r"(?:\s*\((?P<time>[^)\n]{1,30})\))?\s*:(?:\s+(?P<text>.*)|$)")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def _parse(text: str):
    turns: list[list] = []  # [speaker, time, lines]
    preamble: list[str] = []
    title = None
    for line in text.splitlines():
        m = _TURN.match(line)
        if m and len(m.group("speaker").split()) <= 4:
            turns.append([m.group("speaker").strip(), m.group("time") or m.group("stamp"), [m.group("text") or ""]])
        elif turns:
            turns[-1][2].append(line)
        elif line.startswith("# ") and title is None:
            title = line[2:].strip()
        elif line.strip():
            preamble.append(line)
    return title, preamble, turns


def read(path: Path) -> Parsed:
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return Parsed((), (Problem(name, "not UTF-8 text; convert it first"),), "text")
    except OSError as exc:
        return Parsed((), (Problem(name, exc.strerror or str(exc)),), "text")
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    front: dict = {}
    m = _FRONT.match(text)
    if m:
        try:
            loaded = yaml.safe_load(m.group(1))
            front = loaded if isinstance(loaded, dict) else {}
        except yaml.YAMLError:
            front = {}
        text = text[m.end():]
    heading, preamble, raw_turns = _parse(text)
    if not raw_turns:
        reason = "no `Speaker: text` lines found; not a chat (ingest it as an article?)"
        return Parsed((), (Problem(name, reason),), "text")
    if preamble:
        return Parsed((), (Problem(name, f"text before the first turn ({preamble[0][:60]!r}); "
                                         "not a plain chat, nothing imported"),), "text")
    turns = [Turn(speaker, "\n".join(lines).strip(), f"t{i}", time)
             for i, (speaker, time, lines) in enumerate(raw_turns, 1)]
    turns = [t for t in turns if t.text]
    if not turns:
        return Parsed((), (Problem(name, "every turn is empty; nothing to import"),), "text")
    date = front.get("date")
    date = str(date).replace(" ", "T") if date else None
    extra = {"session_id": short_id(name + "\n" + turns[0].text)}  # stable while the chat grows
    if date:
        extra["started"] = date
    title = str(front.get("title") or heading or path.stem)
    session = Session(title=title, turns=turns, date=date, participants=tuple(dict.fromkeys(t.speaker for t in turns)),
                      source=f"chat:{name}", extra=extra)
    return Parsed((session,), (), "text")
