"""Answers written by a language model from the retrieved chunks only.

The model is reached through ``wikimem.llm`` (Ollama or an OpenAI-compatible endpoint). The prompt holds
the question and the numbered chunks and nothing else; the model must end every sentence with the
number(s) of the chunk(s) it used, ``[2]``. Those markers become ``[[page#heading]]`` citations.
A sentence without one, or a marker or wikilink naming a chunk that was not retrieved, is flagged
(the query page shows the flags). Any failure (server down, model missing, timeout, a reply that
is not an answer) raises LLMError, and the caller falls back to the extractive answer.
"""
from __future__ import annotations

import logging
import re
from typing import Callable, Sequence

from ..llm import DEFAULT_URLS, LLMError, choose_llm, complete  # noqa: F401 (re-exported)
from ..model import Hit

log = logging.getLogger(__name__)

NO_ANSWER_MARK = "NO ANSWER"
SYSTEM = ("You answer questions using only the numbered sources given. End every sentence with the number of "
          "the source it comes from in square brackets, for example [2] or [1][3]. Do not use anything you know "
          "that is not in the sources. If the sources do not answer the question, reply exactly: " + NO_ANSWER_MARK)
_MARK = re.compile(r"\[(\d{1,3})\]")
_WIKI = re.compile(r"\[\[([^\]]+)\]\]")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[.!?。！？](?:\[\d\]))\s+|\n+")


def prompt(question: str, hits: Sequence[Hit]) -> list[dict[str, str]]:
    blocks = []
    for i, hit in enumerate(hits, 1):
        where = " > ".join((hit.title,) + tuple(h for h in hit.heading_path if h != hit.title))
        blocks.append(f"[{i}] {where}\n{hit.text.strip()}")
    user = "Sources:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def check_citations(reply: str, hits: Sequence[Hit], cite: Callable) -> tuple[str, tuple, tuple[str, ...]]:
    """Markers -> wikilinks; returns (answer text, citations used, flags)."""
    links = [cite(h) for h in hits]
    known = {c.link[2:-2].split("#")[0].casefold() for c in links} | {
        h.path.casefold() for h in hits} | {h.title.casefold() for h in hits}
    flags: list[str] = []
    used: dict[str, object] = {}
    out: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE.split(reply.strip())):
        if not sentence:
            continue
        marks = _MARK.findall(sentence)
        wikis = _WIKI.findall(sentence)
        for w in wikis:
            name = w.split("|")[0].split("#")[0].strip().casefold()
            if name not in known:
                flags.append(f"cites [[{w}]], which was not among the retrieved notes")
                continue
            for hit, c in zip(hits, links):  # a link the model wrote itself: record that chunk's hash too
                if name in (c.link[2:-2].split("#")[0].casefold(), hit.path.casefold(), hit.title.casefold()):
                    used.setdefault(c.link, c)
                    break
        if not marks and not wikis:
            flags.append(f"uncited: {sentence[:120]}")

        def swap(m: re.Match) -> str:
            n = int(m.group(1))
            if 1 <= n <= len(links):
                used.setdefault(links[n - 1].link, links[n - 1])
                return " " + links[n - 1].link
            flags.append(f"cites [{n}], which is not one of the {len(links)} retrieved chunks")
            return m.group(0)

        out.append(re.sub(r"\s+(?=\[\[)", " ", _MARK.sub(swap, sentence)).replace("  ", " "))
    return " ".join(out), tuple(used.values()), tuple(flags)


def answer(question: str, hits: Sequence[Hit], cite: Callable, *, kind: str, model: str, url: str = "",
           api_key: str = "", timeout: float = 60.0):
    """-> (text, citations, flags); text '' when the model says the sources do not answer."""
    if not hits:
        return "", (), ()
    reply = complete(kind, model, url, api_key, prompt(question, hits), timeout).strip()
    if not reply:
        raise LLMError(f"{kind} returned an empty answer")
    if reply.upper().startswith(NO_ANSWER_MARK):
        return "", (), ()
    return check_citations(reply, hits, cite)
