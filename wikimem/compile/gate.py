"""Compiling with a language model: the model proposes, mechanical gates decide.

The model is asked (``wikimem.llm``, structured output under ``SCHEMA``) for short claims about one
subject, each with a quote from a numbered source, and for contradictions between the page's
compiled section and a source. It sees only the subject's name, what the marked section holds now
and the source sentences about the subject: never the page's other text, and what it returns can
only become the marked section. The gates:

- a claim is kept only with a quote found in the source it cites: exactly, or as the same run of at
  least ``MIN_RUN_WORDS`` words once whitespace, case and Unicode form (NFC) are normalised; a claim
  with no quote, a quote the source does not hold, an unknown source number or a claim that is not
  short (a restated page) is dropped and reported;
- a contradiction is kept only when its page quote stands on the page and its source quote in the
  source (else dropped and counted); the source's claim on that point is not written;
- a reply that is not JSON of that shape, a timeout, a server error, or no claim left: the
  extractive section is written instead, with a notice.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import replace

from ..llm import LLMError, complete
from ..qa.answer import chunk_hash
from .contradict import Contradiction, quoted_in
from .extract import Plan
from .sources import Sentence, Source, _link, plain_links

MIN_RUN_WORDS = 6
MIN_EXACT_CHARS = 12
MAX_CLAIM_CHARS = 300
MAX_CLAIMS_PER_SOURCE = 10  # twice the extractive section's sentences per source (extract.MAX_PER_SOURCE)
MAX_DROPPED_SHOWN = 50
SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {"type": "array", "items": {
            "type": "object",
            "properties": {"claim": {"type": "string"}, "quote": {"type": "string"}, "source": {"type": "integer"}},
            "required": ["claim", "quote", "source"], "additionalProperties": False}},
        "contradictions": {"type": "array", "items": {
            "type": "object",
            "properties": {"page_quote": {"type": "string"}, "source_quote": {"type": "string"},
                           "source": {"type": "integer"}},
            "required": ["page_quote", "source_quote", "source"], "additionalProperties": False}},
    },
    "required": ["claims", "contradictions"],
    "additionalProperties": False,
}
SYSTEM = ("You compile a wiki page about one subject from numbered sources. Reply with JSON only: "
          '{"claims": [{"claim": "...", "quote": "...", "source": N}], "contradictions": '
          '[{"page_quote": "...", "source_quote": "...", "source": N}]}. Each claim is one short sentence '
          "about the subject, and its quote is copied word for word from source N. Use nothing that is not "
          "in the sources. List a contradiction when a source says something other than the current section "
          "on the same point, quoting both word for word.")


def normal_words(text: str) -> list[str]:
    return unicodedata.normalize("NFC", text).casefold().split()


def quote_found(quote: str, text: str) -> bool:
    """The gate: ``quote`` stands in ``text`` exactly (at least MIN_EXACT_CHARS), or as the same run
    of at least MIN_RUN_WORDS words after normalising whitespace, case and Unicode form."""
    quote = quote.strip()
    if len(quote) >= MIN_EXACT_CHARS and quote in text:
        return True
    words = normal_words(quote)
    if len(words) < MIN_RUN_WORDS:
        return False
    return re.search(r"(?<!\w)" + re.escape(" ".join(words)), " ".join(normal_words(text))) is not None


def messages(p: Plan, section: str) -> list[dict[str, str]]:
    blocks = []
    for i, (source, said) in enumerate(p.by_source, 1):
        blocks.append(f"[{i}] {source.title}\n" + "\n".join(s.text for s in said))
    user = (f"Subject: {p.subject.title}\n\nCurrent section:\n{section or '(empty)'}\n\nSources:\n\n"
            + "\n\n".join(blocks))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _locate(ctx, pages, source: Source, quote: str) -> Sentence:
    """The citation of a quote that passed the gate: the sentence holding it, else its chunk."""
    words = normal_words(quote)
    for s in source.sentences:
        if " ".join(words) in " ".join(normal_words(s.text)):
            return s
    page = pages[source.path]
    chunks = ctx.chunks(page)
    m = re.search(r"\s+".join(re.escape(w) for w in quote.split()), page.body, re.I)
    at = m.start() if m else 0
    chunk = next((c for c in chunks if c.start <= at < c.end), chunks[0] if chunks else None)
    heading = chunk.heading_path[-1] if chunk is not None and chunk.heading_path else None
    line = page.body_line + page.body.count("\n", 0, at) + 1
    return Sentence(source.path, quote, line, heading, _link(page, heading),
                    chunk_hash(chunk.text) if chunk is not None else "", -1)


def _section_text(pages, path: str) -> str:
    from ..parse import generated
    from .extract import SECTION
    page = pages.get(path)
    found = generated.find(page.body, SECTION) if page is not None else None
    return found.content if found is not None and not found.edited else ""


def llm_plan(ctx, p: Plan, llm: dict, pages) -> tuple[Plan, list[str], str | None, list[Contradiction], int]:
    """(the plan with the model's gated claims, or the extractive plan; the claims dropped and why;
    a notice when it fell back; the contradictions the model found that passed; how many did not)."""
    kind = llm["kind"]
    title = p.subject.path
    try:
        reply = complete(kind, llm.get("model") or "", llm.get("url") or "", llm.get("api_key") or "",
                         messages(p, _section_text(pages, p.subject.path)), float(llm.get("timeout") or 60.0),
                         schema=SCHEMA)
    except LLMError as exc:
        return p, [], f"{exc}; wrote the extractive section", [], 0
    try:
        data = json.loads(reply)
        claims, found = data["claims"], data.get("contradictions") or []
        if not isinstance(data, dict) or not isinstance(claims, list) or not isinstance(found, list):
            raise TypeError
    except (ValueError, TypeError, KeyError):
        return p, [], f"{kind} did not return the claims as JSON; wrote the extractive section", [], 0
    sources = [s for s, _ in p.by_source]
    texts = {s.path: pages[s.path].body for s in sources if s.path in pages}
    dropped: list[str] = []
    kept: list[tuple[str, str, Sentence]] = []
    contradictions: list[Contradiction] = []
    bad = 0
    page_text = ""
    if found:
        try:
            page_text = ctx.files.read_note(p.subject.path).text.replace("\r\n", "\n")
        except Exception:  # noqa: BLE001 - a new page: nothing on it to contradict
            page_text = ""
    held: set[str] = set()
    for c in found:
        n = c.get("source") if isinstance(c, dict) else None
        pq, sq = (c.get("page_quote"), c.get("source_quote")) if isinstance(c, dict) else (None, None)
        ok = isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(sources) \
            and isinstance(pq, str) and isinstance(sq, str)  # JSON's true is a Python int
        pl = quoted_in(plain_links(page_text), pq) if ok and pq.strip() else None
        if not ok or pl is None or not quote_found(sq, texts.get(sources[n - 1].path, "")):
            bad += 1
            continue
        at = _locate(ctx, pages, sources[n - 1], sq)
        contradictions.append(Contradiction(p.subject.path, pl, pq.strip(), at.source, at.line, sq.strip(), at.link,
                                            kind))
        held.add(" ".join(normal_words(sq)))
    said: set[str] = set()  # the claims kept, normalised: a model repeating one is not a page of copies
    per_source: dict[int, int] = {}
    for c in claims:
        claim = c.get("claim") if isinstance(c, dict) else None
        quote = c.get("quote") if isinstance(c, dict) else None
        n = c.get("source") if isinstance(c, dict) else None
        shown = str(claim)[:80] if claim else repr(c)[:80]
        if not isinstance(claim, str) or not claim.strip():
            dropped.append(f"{title}: a claim with no text")
        elif not isinstance(quote, str) or not quote.strip():
            dropped.append(f"{title}: {shown!r} has no quote")
        elif not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(sources):
            dropped.append(f"{title}: {shown!r} cites source {n!r}, which was not given")
        elif len(claim) > MAX_CLAIM_CHARS or "\n" in claim.strip() or "<!--" in claim or "[[" in claim:
            dropped.append(f"{title}: {shown!r} is not a short claim")
        elif not quote_found(quote, texts.get(sources[n - 1].path, "")):
            dropped.append(f"{title}: {shown!r}: its quote is not in {sources[n - 1].path}")
        elif " ".join(normal_words(quote)) in held:
            dropped.append(f"{title}: {shown!r} contradicts the page; held for review")
        elif " ".join(normal_words(claim)) in said:
            dropped.append(f"{title}: {shown!r} repeats a claim already kept")
        elif per_source.get(n, 0) >= MAX_CLAIMS_PER_SOURCE:
            dropped.append(f"{title}: {shown!r}: more than {MAX_CLAIMS_PER_SOURCE} claims from source {n}")
        else:
            said.add(" ".join(normal_words(claim)))
            per_source[n] = per_source.get(n, 0) + 1
            kept.append((" ".join(claim.split()), " ".join(quote.split()), _locate(ctx, pages, sources[n - 1], quote)))
    if len(dropped) > MAX_DROPPED_SHOWN:  # a reply of thousands of bad claims: the report stays readable
        dropped[MAX_DROPPED_SHOWN:] = [f"{title}: and {len(dropped) - MAX_DROPPED_SHOWN} more claims dropped"]
    if not kept:
        return p, dropped, f"no claim of {kind} passed the gates; wrote the extractive section", contradictions, bad
    return replace(p, claims=kept), dropped, None, contradictions, bad
