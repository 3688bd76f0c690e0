"""ChatGPT data export (``conversations.json``) -> sessions.

Each conversation stores its messages as a tree (``mapping``: node id -> message, parent,
children) because an edited question or a regenerated answer starts a new branch. What the user
last saw is the branch ending at ``current_node``: walk its ``parent`` links up to the root and
reverse. Hidden system messages and empty nodes are left out; everything else (user, assistant,
tool output, code) is kept verbatim, images as ``[image]`` markers. A conversation whose tree is
broken (no mapping, a current node that is missing, a cycle) is reported, the others still import.
A truncated file keeps the conversations that were complete before the cut.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .conversations import Parsed, Problem, clip
from .transcript import Session, Turn

SPEAKERS = {"user": "User", "assistant": "ChatGPT", "system": "System"}


def _when(stamp: Any) -> str | None:
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        return None
    try:
        return datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return None


def _load(path: Path) -> tuple[list[Any], list[Problem]]:
    """The list of conversations; a file cut off mid-way keeps every complete conversation."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
    except RecursionError:
        return [], [Problem(path.name, "not a ChatGPT export: JSON nested too deeply to read")]
    except json.JSONDecodeError as exc:
        decoder = json.JSONDecoder()
        start = text.lstrip()
        if not start.startswith("["):
            return [], [Problem(path.name, f"not a ChatGPT export: invalid JSON ({exc.msg} at line {exc.lineno})")]
        items, pos = [], len(text) - len(start) + 1
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text) or text[pos] == "]":
                break
            try:
                item, pos = decoder.raw_decode(text, pos)
            except (json.JSONDecodeError, RecursionError):
                return items, [Problem(path.name, f"file is truncated or malformed after conversation {len(items)}; "
                                                  "the conversations before that were read")]
            items.append(item)
        return items, []
    if isinstance(data, dict) and "mapping" in data:
        data = [data]  # a single conversation
    if not isinstance(data, list):
        return [], [Problem(path.name, "not a ChatGPT export: expected a list of conversations")]
    return data, []


def _text(message: dict) -> tuple[str, tuple[str, ...]]:
    content = message.get("content") or {}
    kind = content.get("content_type")
    attachments: list[str] = []
    parts_out: list[str] = []
    if kind == "code":
        lang = content.get("language") or ""
        parts_out.append(f"```{'' if lang == 'unknown' else lang}\n{content.get('text', '')}\n```")
    elif "parts" in content:
        for part in content.get("parts") or []:
            if isinstance(part, str):
                parts_out.append(part)
            elif isinstance(part, dict):
                if "image" in str(part.get("content_type", "")):
                    pointer = str(part.get("asset_pointer", "")).rsplit("/", 1)[-1]
                    attachments.append(f"image {pointer}".strip())
                elif part.get("text"):
                    parts_out.append(str(part["text"]))
    elif "text" in content:
        parts_out.append(str(content.get("text") or ""))
    elif "result" in content:
        parts_out.append(str(content.get("result") or ""))
    return "\n".join(p for p in parts_out if p).strip(), tuple(attachments)


def _branch(conv: dict) -> list[dict]:
    """Messages on the current branch, root first. Raises ValueError when the tree is broken."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise ValueError("no message tree ('mapping')")
    node = conv.get("current_node")
    if node is None:  # older exports: follow the last child from the root
        roots = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")]
        if not roots:
            raise ValueError("no root node and no current_node")
        node = roots[0]
        while mapping.get(node, {}).get("children"):
            node = mapping[node]["children"][-1]
    if node not in mapping:
        raise ValueError(f"current_node {node!r} is not in the message tree")
    chain: list[dict] = []
    seen: set[str] = set()
    while node is not None:
        if node in seen:
            raise ValueError("the message tree has a cycle")
        seen.add(node)
        entry = mapping.get(node)
        if not isinstance(entry, dict):
            raise ValueError(f"node {node!r} is missing from the message tree")
        if isinstance(entry.get("message"), dict):
            chain.append(entry["message"])
        node = entry.get("parent")
    return chain[::-1]


def _session(conv: dict, source: str) -> Session:
    turns = []
    for message in _branch(conv):
        author = message.get("author") or {}
        role = author.get("role", "unknown")
        meta = message.get("metadata") or {}
        if meta.get("is_visually_hidden_from_conversation"):
            continue
        text, attachments = _text(message)
        if not text and not attachments:
            continue
        if role == "system" and not text:
            continue
        speaker = SPEAKERS.get(role, str(role).title())
        if role == "tool" and author.get("name"):
            speaker = f"Tool {author['name']}"
        when = (_when(message.get("create_time")) or "").replace("T", " ") or None
        turns.append(Turn(speaker, text, f"t{len(turns) + 1}", when, attachments))
    sid = str(conv.get("conversation_id") or conv.get("id") or "")
    if not turns:
        raise ValueError("conversation has no messages on its current branch")
    started = _when(conv.get("create_time"))
    extra: dict[str, Any] = {"session_id": sid} if sid else {}
    if started:
        extra["started"] = started
    title = str(conv.get("title") or "").strip() or clip(turns[0].text)
    return Session(title=title, turns=turns, date=started, participants=tuple(dict.fromkeys(t.speaker for t in turns)),
                   source=f"chatgpt:{source}", extra=extra)


def read(path: Path) -> Parsed:
    try:
        conversations, problems = _load(path)
    except OSError as exc:
        return Parsed((), (Problem(path.name, exc.strerror or str(exc)),), "chatgpt")
    sessions = []
    for i, conv in enumerate(conversations, 1):
        label = f"{path.name}#{i}"
        if not isinstance(conv, dict):
            problems.append(Problem(label, "not a conversation object; skipped"))
            continue
        if conv.get("title"):
            label += f" ({clip(str(conv['title']), 40)})"
        try:
            sessions.append(_session(conv, path.name))
        except ValueError as exc:
            problems.append(Problem(label, f"{exc}; not imported"))
        except (TypeError, AttributeError, KeyError, RecursionError) as exc:  # a field of another shape
            problems.append(Problem(label, f"not the shape of a ChatGPT conversation ({type(exc).__name__}: "
                                           f"{clip(str(exc), 80)}); not imported"))
    if not conversations and not problems:
        problems.append(Problem(path.name, "the export holds no conversations"))
    return Parsed(tuple(sessions), tuple(problems), "chatgpt")
