"""``wikimem query``: retrieve with the hybrid search, answer with citations, file the answer back.

Every sentence of an answer is followed by the ``[[page#heading]]`` citation of the chunk it came
from; a query page records each cited chunk's content hash, so a later change to that chunk can be
detected (the linter does). Extractive by default (``extractive.py``); with ``llm`` set, a model
writes the answer from the retrieved chunks only and every sentence must cite one of them
(``llm.py``); when the model cannot be reached the extractive answer is given with a notice.
"""
from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..model import Hit
from ..search import search
from . import extractive
from .answer import QUERY_FOLDER, VAULT_FILES, Answer, Citation, chunk_hash

log = logging.getLogger(__name__)

_UNLINKABLE = re.compile(r"[\[\]|#^]")


def citation(hit: Hit, heading: str | None = None, block: str | None = None) -> Citation:
    """``[[path-without-.md#heading]]``: the path form resolves even when two pages share a name;
    a paragraph with a block id (a transcript turn) is cited by it (``#^id``), a page's lead
    section by the page alone."""
    target = hit.path[:-3] if hit.path.lower().endswith(".md") else hit.path
    heading = heading or (hit.heading_path[-1] if hit.heading_path else None)
    if heading is not None and heading.strip() == hit.title.strip():
        heading = None
    if block is None and len(hit.blocks) == 1 and hit.text.rstrip().endswith("^" + hit.blocks[0]):
        block = hit.blocks[0]  # a chunk that is one block (a transcript turn)
    if heading is not None:  # Obsidian matches a heading with its punctuation as spaces (parse/resolve.py)
        heading = " ".join(_UNLINKABLE.sub(" ", heading).split()) or None  # "### [[raw/x|x]]" (a compiled
        # section's source heading) made [[entities/X#[[raw/x/x]]]]: a link inside a link, broken
    anchor = f"#^{block}" if block else (f"#{heading}" if heading else "")
    link = f"[[{target}{anchor}]]".replace("|", "/")
    return Citation(link, hit.path, heading, block, chunk_hash(hit.text), hit.title)


def retrieve(ctx, question: str, k: int, filters: dict[str, Any]) -> tuple[list[Hit], tuple[str, ...]]:
    """The top ``k`` chunks (at most two per page), leaving out earlier answers (queries/), so an
    answer is built from notes, never from a previous answer, and the vault's own index, log and
    schema. A question is text, never search syntax: "What does the -force flag do?" must not leave
    out every note that says "force", nor "path:" filter anything (``literal``)."""
    result = search(ctx, question, limit=k + 6, per_page=2, literal=True, **filters)
    hits = [h for h in result.hits if not h.path.startswith(QUERY_FOLDER + "/") and h.type != "query"
            and h.path not in VAULT_FILES]
    return hits[:k], tuple(result.notices) + tuple(f"search degraded: {d}" for d in result.degraded)


def extractive_answer(ctx, question: str, hits: list[Hit]) -> tuple[str, tuple[Citation, ...]]:
    chosen = extractive.choose(question, hits, ctx.cache)
    if not chosen:
        return "", ()
    cites: dict[str, Citation] = {}
    paragraphs: list[list[str]] = []
    last_page = None
    for c in chosen:
        cite = citation(c.hit, c.heading, c.block if c.run is None else None)
        cite = cites.setdefault(cite.link, cite)
        if c.hit.path != last_page or c.run is not None:
            paragraphs.append([])
            last_page = c.hit.path
        paragraphs[-1].append(f"{c.text} {cite.link}")
        if c.run is not None:  # a quoted list stands as its own block; what follows starts a new one
            last_page = None
    return "\n\n".join(" ".join(p) for p in paragraphs), tuple(dict.fromkeys(cites.values()))


def ask(ctx, question: str, *, k: int = 6, write: bool = True, llm: str | None = None,
        llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
        llm_timeout: float = 60.0, supersede: bool = False, **filters: Any) -> Answer:
    """``supersede``: the query page written replaces the most similar active query page (the
    writer's conflict check reports them in ``Answer.similar`` either way)."""
    question = " ".join((question or "").split())
    if not question:
        raise UsageError("empty question")
    if k < 1:
        raise UsageError("-k must be at least 1")
    if filters.get("as_of") and write:  # a page says what the vault holds now; the past is asked, not filed
        raise UsageError("an answer as of a date is not filed as a query page: add --no-write (MCP: write=false)")
    if write:  # an answer filed records the cited texts' hashes: they must be the vault's, not a stale cache's
        from ..index.update import refresh_lexical
        refresh_lexical(ctx, unless_watched=True)
    hits, notices = retrieve(ctx, question, k, filters)
    notices = list(notices)
    flags: tuple[str, ...] = ()
    mode = "extractive"
    text, cites = "", ()
    llm = llm or None
    if llm and llm != "none":
        from . import llm as llm_mod

        try:
            text, cites, flags = llm_mod.answer(question, hits, citation, kind=llm, model=llm_model or "",
                                                url=llm_url or "", api_key=llm_api_key or "", timeout=llm_timeout)
            mode = llm
        except llm_mod.LLMError as exc:
            notices.append(f"{exc}; answered extractively instead")
            text, cites, flags = "", (), ()
            mode = "extractive"
        else:
            if not text:  # the model found no answer in the chunks
                cites = ()
    if mode == "extractive":
        text, cites = extractive_answer(ctx, question, hits)
    answer = Answer(question, mode, text, bool(text), cites, tuple(notices), flags, retrieved=tuple(hits))
    if not write:
        return answer
    if not answer.answered:
        return replace(answer, notices=answer.notices + ("no answer, so no query page was written",))
    from .writeback import write_back

    return write_back(ctx, answer, supersede=supersede)
