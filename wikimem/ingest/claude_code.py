"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``) -> sessions.

One JSON object per line. ``user`` and ``assistant`` lines carry a ``message`` whose ``content`` is
a string or a list of blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``); ``summary``
lines (written and rewritten by Claude Code as a session goes on) are kept as ``summary`` in the
frontmatter; the title is the first user message, which does not change, so a re-import finds
the note. Every user, assistant and tool turn is kept verbatim (tool calls as their
JSON input, tool results as returned); private ``thinking`` blocks and ``isMeta`` bookkeeping lines
are left out. A line that is not valid JSON (a log cut off mid-write) is reported and skipped;
the session's other lines still import. A session with no turn at all is reported, not written.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conversations import Parsed, Problem, clip
from .transcript import Session, Turn

SPEAKERS = {"user": "User", "assistant": "Assistant"}


def _when(stamp: Any) -> str | None:
    """``2025-07-14T09:12:03.123Z`` -> ``2025-07-14 09:12:03`` (UTC, as the log wrote it)."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return None
    return stamp[:10] + " " + stamp[11:19]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(json.dumps(block, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _turns(entry: dict, counter: list[int]) -> list[Turn]:
    """The turns one log line holds (a line can hold text and several tool calls)."""
    message = entry.get("message") or {}
    role = message.get("role") or entry.get("type")
    speaker = SPEAKERS.get(role, str(role).title())
    when = _when(entry.get("timestamp"))
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return []
    turns = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text, who = str(block.get("text", "")), speaker
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False, sort_keys=True)
            text, who = f"[tool call: {block.get('name', '?')}] {args}", speaker
        elif kind == "tool_result":
            flag = ", error" if block.get("is_error") else ""
            text, who = f"[tool result{flag}]\n{_result_text(block.get('content'))}", "Tool"
        else:  # thinking, redacted_thinking, images sent by the user
            if kind == "image":
                text, who = "[image]", speaker
            else:
                continue
        if not text.strip():
            continue
        counter[0] += 1
        turns.append(Turn(who, text, f"t{counter[0]}", when))
    return turns


def read(path: Path) -> Parsed:
    name = path.name
    problems: list[Problem] = []
    sessions: dict[str, dict[str, Any]] = {}
    summaries: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return Parsed((), (Problem(name, exc.strerror or str(exc)),), "claude-code")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"{name}:{number}", f"not valid JSON ({exc.msg}; a truncated line?); line skipped"))
            continue
        except RecursionError:
            problems.append(Problem(f"{name}:{number}", "JSON nested too deeply to read; line skipped"))
            continue
        if not isinstance(entry, dict):
            problems.append(Problem(f"{name}:{number}", "not a JSON object; line skipped"))
            continue
        if entry.get("type") == "summary":
            if entry.get("summary"):
                summaries.append(str(entry["summary"]))
            continue
        if entry.get("type") not in ("user", "assistant") or entry.get("isMeta"):
            continue
        sid = str(entry.get("sessionId") or path.stem)
        state = sessions.setdefault(sid, {"turns": [], "counter": [0], "started": None, "cwd": entry.get("cwd")})
        counter = list(state["counter"])
        try:
            turns = _turns(entry, counter)
        except (TypeError, AttributeError, KeyError, ValueError, RecursionError) as exc:  # a field of another shape
            problems.append(Problem(f"{name}:{number}", f"not the shape of a Claude Code message "
                                                        f"({type(exc).__name__}); line skipped"))
            continue
        state["counter"][:] = counter
        state["started"] = state["started"] or entry.get("timestamp")
        state["turns"].extend(turns)
    result = []
    for sid, state in sessions.items():
        turns = state["turns"]
        if not turns:
            problems.append(Problem(f"{name}#{sid}", "session has no user or assistant turns; not imported"))
            continue
        first_user = next((t.text for t in turns if t.speaker == "User"), turns[0].text)
        title = clip(first_user)  # not the summary line: Claude Code adds and rewrites those later
        started = _when(state["started"])
        extra: dict[str, Any] = {"session_id": sid}
        if summaries and len(sessions) == 1:
            extra["summary"] = summaries[-1]
        if started:
            extra["started"] = started.replace(" ", "T")
        if state["cwd"]:
            extra["cwd"] = state["cwd"]
        result.append(Session(title=title, turns=turns, date=started.replace(" ", "T") if started else None,
                              participants=tuple(dict.fromkeys(t.speaker for t in turns)),
                              source=f"claude-code:{name}", extra=extra))
    if not result and not problems:
        problems.append(Problem(name, "no Claude Code session lines found (empty file?)"))
    return Parsed(tuple(result), tuple(problems), "claude-code")
