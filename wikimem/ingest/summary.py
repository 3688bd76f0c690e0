"""With an LLM configured, a source page also gets a short summary and the entities and concepts
the source names. Names that match an existing page (title or alias, any case) become ``[[...]]``
links; the others are listed as candidates for new pages, never linked, so the model cannot invent
pages. Anything going wrong (server down, a reply that is not the JSON asked for) leaves the page
extractive, with a notice."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..llm import LLMError, complete

PROMPT = ("Read the source below. Reply with JSON only, no prose: {\"summary\": \"two or three sentences\", "
          "\"entities\": [\"people, organisations, products it names\"], \"concepts\": [\"ideas, methods, terms\"]}. "
          "Use names exactly as the source writes them.")
MAX_SOURCE = 12_000  # characters of the source sent to the model


@dataclass(frozen=True)
class Summary:
    text: str
    linked: tuple[str, ...]  # links to existing pages (``[[Page]]``, ``[[Page|Title]]``)
    candidates: tuple[str, ...]  # named, but no page yet


def _pages(ctx) -> dict[str, str]:
    """lower-case title or alias -> a link to the page (the pages a source may name, as for
    ``mentions.py``: any wiki page, not raw/, queries, memories, other sources or index.md/log.md)."""
    from collections import Counter

    from .mentions import _link, wiki_pages

    pages = wiki_pages(ctx)  # empty when there is no cache: every name is a candidate
    stems = Counter(p.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold() for p, _, _ in pages)
    names: dict[str, str] = {}
    for path, title, aliases in pages:
        link = _link(path, title, stems)
        for name in [title, *aliases]:
            if name.strip():
                names.setdefault(" ".join(name.split()).casefold(), link)
    return names


def summarise(ctx, markdown: str, *, kind: str, model: str, url: str = "", api_key: str = "",
              timeout: float = 60.0) -> Summary:
    messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": markdown[:MAX_SOURCE]}]
    reply = complete(kind, model, url, api_key, messages, timeout)
    m = re.search(r"\{.*\}", reply, re.S)
    try:
        data = json.loads(m.group(0)) if m else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), str):
        raise LLMError(f"{kind} did not reply with the JSON summary asked for")
    known = _pages(ctx)
    linked: dict[str, None] = {}
    candidates: dict[str, None] = {}
    for name in list(data.get("entities") or []) + list(data.get("concepts") or []):
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            continue
        name = " ".join(name.split())
        link = known.get(name.casefold())
        if link:
            linked[link] = None
        else:
            candidates[name] = None
    return Summary(" ".join(data["summary"].split()), tuple(linked), tuple(candidates))
