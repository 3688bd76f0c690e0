"""An LLM judge for ``remember`` (issue 53), the way mem0 decides: the new fact and its nearest
active memories of the same kind go to the model, which answers in JSON what to do with it:

    {"event": "ADD"}                  a fact of its own
    {"event": "UPDATE", "id": "2"}    it replaces memory 2
    {"event": "DUPLICATE", "id": "0"} memory 0 already says it
    {"event": "NONE"}                 no decision (the rule decides)

Memories are shown under short ids ("0", "1", ...) rather than paths, so the model copies a token
it was given instead of inventing a path. The answer is checked before anything is written: the
id must be one shown, still active and of the same kind (a page another process superseded or
changed meanwhile is re-read). A failing model, a reply that is not that JSON, or an id that does
not pass falls back to the structural rule, with a warning that says why.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

from ..errors import WikimemError
from ..parse import parse_page

log = logging.getLogger(__name__)

SYSTEM = ("You manage an agent's memory of small facts. You get a NEW fact and the existing memories of the same "
          "kind, each with an id. Decide one event: ADD when the new fact is about something none of them says "
          "(another subject, or another attribute of the same subject); UPDATE with the id of the memory whose "
          "value it changes (the same subject and the same attribute, a new value: that memory is then out of "
          "date); DUPLICATE with the id of the memory that already says the same thing; NONE when unsure. "
          "Facts about different things that merely look alike are ADD. Word order matters: 'A over B' is not "
          "'B over A'. Reply with one JSON object and nothing else, e.g. {\"event\": \"UPDATE\", \"id\": \"1\"}.")
EVENTS = ("ADD", "UPDATE", "DUPLICATE", "NONE")
_OBJECT = re.compile(r"\{.*?\}", re.S)


@dataclass(frozen=True)
class Verdict:
    event: str  # ADD | UPDATE | DUPLICATE
    path: str | None = None  # the memory UPDATE or DUPLICATE names


def messages(fact: str, memories: list[tuple[str, str, str]]) -> list[dict]:
    """``memories``: (id, text, created) of the candidates, nearest first."""
    body = {"new_fact": fact, "memories": [{"id": i, "text": t, "created": c} for i, t, c in memories]}
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": json.dumps(body, ensure_ascii=False, indent=1)}]


def parse_reply(reply: str) -> tuple[str, str | None]:
    """(EVENT, id or None) from the model's reply; ValueError when it is not that JSON."""
    text = reply.strip()
    candidates = [text] + _OBJECT.findall(text)  # the whole reply, or an object inside ```json fences
    for chunk in candidates:
        try:
            data = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(data, dict):
            event = str(data.get("event") or data.get("action") or "").strip().upper()
            if event not in EVENTS:
                raise ValueError(f"unknown event {event or '(none)'!r}")
            ident = data.get("id")
            return event, None if ident is None else str(ident).strip()
    raise ValueError("not a JSON object")


def not_a_duplicate(fact: str, other: str, rule_label: str | None) -> str | None:
    """Why a DUPLICATE verdict cannot stand, or None. The verdict leaves the new fact unwritten, so
    it must not hide a changed value: the structural rule reading the pair as an update, or a value
    (a number, a time, a day, a version) in one fact and not the other, outweighs it. A model said
    "The deploy window is Friday mornings" duplicated "... Thursday mornings", and Friday was lost."""
    from .factslots import _is_value, tokens
    if rule_label == "update":
        return "the rule reads it as a new value of that memory"
    mine, theirs = ({t for t in tokens(x)[0] if _is_value(t)} for x in (fact, other))
    if mine != theirs:
        return f"they state different values ({', '.join(sorted(mine ^ theirs))})"
    return None


def judge(ctx, fact: str, kind: str, candidates: list[str], *, llm: str, model: str, url: str = "",
          api_key: str = "", timeout: float = 60.0) -> tuple[Verdict | None, str | None]:
    """(verdict, warning): None and a warning when the rule must decide instead."""
    from ..llm import LLMError, complete
    from .memory import DEFAULT_KIND
    shown: dict[str, str] = {}
    rows = []
    for n, rel in enumerate(candidates):
        try:
            page = parse_page(rel, ctx.files.read_note(rel).text)
        except WikimemError:
            continue
        shown[str(n)] = rel
        rows.append((str(n), page.body.strip(), str(page.frontmatter.get("created") or "")))
    try:
        reply = complete(llm, model, url, api_key, messages(fact, rows), timeout)
    except LLMError as exc:
        return None, f"{exc}; the rule decided instead"
    try:
        event, ident = parse_reply(reply)
    except ValueError as exc:
        log.info("memory judge reply not understood: %r", reply[:300])
        return None, f"the memory judge's reply was not understood ({exc}); the rule decided instead"
    if event == "NONE":
        return None, None
    if event == "ADD":
        return Verdict("ADD"), None
    rel = shown.get(ident or "")
    if rel is None:
        return None, f"the memory judge named memory {ident!r}, which it was not shown; the rule decided instead"
    try:  # still there, active and of this kind (read again: the check is made when writing)
        page = parse_page(rel, ctx.files.read_note(rel).text)
    except WikimemError:
        return None, f"the memory judge named {rel}, which is gone; the rule decided instead"
    if page.status == "superseded" or page.type != "memory" \
            or str(page.frontmatter.get("kind") or DEFAULT_KIND).strip().lower() != kind:
        return None, (f"the memory judge named {rel}, which is not an active {kind} memory; "
                      "the rule decided instead")
    return Verdict(event, rel), None
