"""The extractive answer: the retrieved sentences that best cover the question, each cited.

The relevance bar is per chunk: a retrieved chunk is used only when it (its text, page title
and headings) holds at least ``MIN_COVER`` of the question's term weight; when none does, the
vault "has no answer" and nothing is cited. Term weights are inverse document frequencies from
the lexical index, so a rare word ("rjieba") matters more than a common one ("search"). Words
that no note holds at all ("value", "use" in "what value of b does BM25 use?") are left out of
the weighing, but when they are most of the question, the vault has no answer. Within
the chunks that pass, a sentence is scored by how much of that weight it holds itself (its page
title and heading count half: "b is usually 0.75" answers a BM25 question on the BM25 page),
times a share of its chunk's search score. Chosen sentences are de-duplicated and read in source order, grouped by page.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ..stores.analysis import stem, terms, tokens
from ..model import Hit

MIN_COVER = 0.5  # share of the question's term weight a sentence must hold to be cited
KEEP_RATIO = 0.6  # sentences scoring below this share of the best one are left out
MAX_SENTENCES = 4
DUPLICATE = 0.6  # term overlap (Jaccard) above which two sentences say the same thing

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"“(\[*_`A-Z0-9\u4e00-\u9fff])|(?<=[。！？；])")
_LINK = re.compile(r"!?\[\[([^\]|]+?)(?:\|([^\]]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_BLOCK_ID = re.compile(r"\s+\^[A-Za-z0-9-]+\s*$")
# the chunks answers are built from: not earlier answers, not the vault's index, log and schema
# (a question filed back would otherwise make its own words look known to the vault)
_NOT_ANSWERS = ("queries/", ("index.md", "log.md", "SCHEMA.md"))  # what term weights are counted without
_TURN = re.compile(r"^\*\*(?P<speaker>[^*\n]{1,80})\*\*(?:\s*\([^)\n]*\))?\s*:\s*")


@dataclass(frozen=True)
class Candidate:
    text: str  # the sentence as shown (inline Markdown kept readable)
    heading: str | None  # the heading it stands under inside the chunk (None: the chunk's own)
    block: str | None  # the block id of its paragraph (a transcript turn's id), if any
    hit: Hit
    rank: int  # the hit's rank (0 = best)
    position: int  # order within the chunk
    cover: float
    score: float
    terms: frozenset[str]
    run: int | None = None  # a step of this numbered list of the chunk: the answer quotes the whole list


_EMBED_FILE = re.compile(r"!\[\[[^\]|]+?\.(?:png|jpe?g|gif|svg|webp|bmp|ico|avif|pdf|mp4|webm|mp3|wav|ogg)"
                         r"(?:[#|][^\]]*)?\]\]|!\[[^\]]*\]\([^)]*\)", re.I)
_HTML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
# a compiled section's citation after its sentence ("- It runs on Linux. [[raw/articles/x#Usage]]"):
# not words of the sentence (an answer quoted it as "... on Linux. x")
_CITED = re.compile(r"(?<=[.:!?。：！？)”])[ \t]+\[\[raw/[^\]\n]+\]\][ \t]*$")


def _clean(line: str) -> str:
    """A line as an answer quotes it: links as their text, embedded images and icons and HTML tags
    dropped (an answer read "Click settings.svg Settings"), inline code and emphasis kept."""
    line = _EMBED_FILE.sub("", line)
    line = _HTML_TAG.sub("", line)
    line = _CITED.sub("", line)
    line = _LINK.sub(lambda m: m.group(2) or m.group(1).split("#")[0].rsplit("/", 1)[-1], line)
    line = _MDLINK.sub(lambda m: m.group(1), line)
    line = _BLOCK_ID.sub("", line)
    return " ".join(line.split())


@dataclass(frozen=True)
class Piece:
    """A sentence of a chunk and where it stands: the last heading above it inside the chunk (a
    chunk can span a short section merged into the next) and the block id of its paragraph."""

    heading: str | None
    block: str | None
    text: str
    context: str = ""  # words that describe it without being in it (a table row's column names)
    run: int | None = None  # the numbered list it is a step of (its number within the chunk), if any


def sentences(text: str) -> list[Piece]:
    """Chunk text -> sentences. Code is skipped; list items are sentences of their own; a table
    row reads "first cell: column = cell; ..."; a transcript turn keeps its speaker ("Ana: ...")."""
    out: list[Piece] = []
    paragraph: list[str] = []
    state: dict = {"fence": False, "heading": None, "block": None, "header": None, "speaker": None,
                   "run": None, "runs": 0, "item": None}

    def flush() -> None:
        if paragraph:
            joined = " ".join(paragraph)
            if state["item"] is not None:  # a numbered step stays one piece: an answer quotes steps whole
                out.append(Piece(state["heading"], state["block"], joined, run=state["item"]))
            else:
                for i, s in enumerate(p.strip() for p in _SPLIT.split(joined) if p and p.strip()):
                    if state["speaker"] and i:  # every sentence of a turn says who spoke it
                        s = f"{state['speaker']}: {s}"
                    out.append(Piece(state["heading"], state["block"], s))
            paragraph.clear()
        state["item"] = None
        state["block"] = None
        state["speaker"] = None

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            flush()
            state["fence"] = not state["fence"]
            continue
        if state["fence"]:
            continue
        h = re.match(r"^#{1,6}\s+(.*?)\s*#*$", line)
        if h:
            flush()
            state["heading"] = _BLOCK_ID.sub("", h.group(1)).strip()
            state["run"] = None
            continue
        if not line.startswith("|"):
            state["header"] = None
        if not line or re.fullmatch(r"\|?[\s:|-]+\|?", line):
            if not line:
                flush()
            continue
        block = _BLOCK_ID.search(line)
        line = re.sub(r"^>\s*(\[![^\]]+\][+-]?\s*)?", "", line)
        turn = _TURN.match(line)
        if turn:
            flush()
            state["speaker"] = turn.group("speaker").strip()
            line = f"{state['speaker']}: {line[turn.end():]}"
        if line.startswith("|"):
            flush()
            cells = [_clean(c) for c in line.strip("|").replace("\\|", "/").split("|")]
            if state["header"] is None:
                state["header"] = cells
                continue
            header = state["header"]
            pairs = [f"{header[i]} = {c}" if i < len(header) and header[i] else c
                     for i, c in enumerate(cells[1:], 1) if c]
            shown = f"{cells[0]}: " + "; ".join(pairs) if cells[0] else "; ".join(pairs)
            out.append(Piece(state["heading"], None, shown, " ".join(header)))
            continue
        item = re.match(r"^(?:[-*+]|(\d+)[.)])\s+", line)
        if item:
            flush()
            numbered = item.group(1) is not None and raw[:1] not in (" ", "\t")  # a top-level step
            if numbered and (state["run"] is None or item.group(1) == "1"):
                state["runs"] += 1
                state["run"] = state["runs"]
            elif not numbered and raw[:1] not in (" ", "\t"):
                state["run"] = None
            state["block"] = block.group(0).strip()[1:] if block else None
            state["item"] = state["run"] if numbered else None
            paragraph.append(_clean(line[item.end():]))
            flush()
            continue
        if raw[:1] not in (" ", "\t"):
            state["run"] = None  # a paragraph at the margin ends the numbered list
        if block:
            state["block"] = block.group(0).strip()[1:]
        paragraph.append(_clean(line))
    flush()
    return [p for p in out if len(p.text) >= 12 and re.search(r"\w", p.text)]


def term_weights(cache, query_terms: list[str]) -> dict[str, float]:
    """IDF of each query term over the lexical index (1.0 each when the index cannot tell);
    0 for a term no note holds, which no sentence could match (see ``choose``)."""
    try:
        total, frequencies = cache.manifest.lexical.frequencies_outside(query_terms, *_NOT_ANSWERS)
        total = total or 1
        weights = {}
        for term in query_terms:
            df = frequencies[term]
            weights[term] = math.log(1 + (total - df + 0.5) / (df + 0.5)) if df else 0.0
        return weights
    except Exception:  # noqa: BLE001 - no lexical index: every term counts the same
        return {t: 1.0 for t in query_terms}


def candidates(question: str, hits: list[Hit], weights: dict[str, float],
               min_cover: float = MIN_COVER) -> list[Candidate]:
    """Sentences of the chunks that, taken whole (text, title and headings), hold at least
    ``min_cover`` of the question's term weight; each sentence must hold a question term itself."""
    q_terms = list(weights)
    total = sum(weights.values()) or 1.0
    top = max((h.score for h in hits), default=0.0) or 1.0
    out = []
    for rank, hit in enumerate(hits):
        context = set(tokens(hit.title + " " + " ".join(hit.heading_path)))
        share = max(0.0, hit.score) / top
        found = sentences(hit.text)
        in_chunk = context | set(tokens(hit.text))
        chunk_cover = sum(weights[t] for t in q_terms if t in in_chunk) / total
        if chunk_cover < min_cover:  # the chunk as a whole does not speak to the question
            continue
        for position, piece in enumerate(found):
            text = piece.text
            own = frozenset(tokens(text)) - (frozenset(tokens(piece.context)) if piece.context else frozenset())
            context_here = context | set(tokens(piece.context)) if piece.context else context
            if not own & set(q_terms):
                continue
            cover = sum(weights[t] * (1.0 if t in own else 0.5 if t in context_here else 0.0) for t in q_terms) / total
            score = cover * (0.5 + 0.5 * share)
            out.append(Candidate(text, piece.heading, piece.block, hit, rank, position, cover, score, own, piece.run))
    return out


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


# words that frame a question rather than say what it is about ("how much", "what value", "does
# X use"); in a small vault they are rare, so their IDF is high and they would set the bar
FRAMING = frozenset(stem(w) for w in """much many use used uses using value values way ways kind kinds
thing things mean means meaning happen happens work works need needs get gets make makes usual usually
typical typically exactly actually really explain describe tell know please
create created creates invent invented develop developed write wrote written design designed found founded
introduce introduced propose proposed made big""".split())
# ("who created X", "who wrote X": the notes say "introduced by", "proposed by"; "how big": "77 MB")


def asks_what_no_note_says(question: str, q_terms: list[str], weights: dict[str, float], hits: list[Hit]) -> bool:
    """The question names pages the vault has and asks something about them that no note says:
    every word of it besides those pages' names is in no note at all ("How tall is Vincent Traag?",
    "the population of Leiden", "how many employees does Meta AI Research have"). The notes about
    the names match well, and answering from them filed junk (issue 36). Only when the question
    and the notes share a script: a Chinese question's words are absent from English notes without
    that meaning anything."""
    if not hits or _has_han(question) != _has_han(hits[0].title + " " + hits[0].text):
        return False
    named: set[str] = set()
    for hit in hits:
        named |= set(terms(hit.title))
    asked = [t for t in q_terms if t not in named]
    if asked and len(asked) < len(q_terms) and all(weights.get(t, 0.0) == 0.0 for t in asked):
        return True
    # a name the question asks about ("the capital of France") that no note has: the notes that
    # match its other words ("the capitalize filter") are about something else
    words = re.findall(r"[^\W\d_][\w'-]*", question)
    for word in words[1:]:
        if word[0].isupper() and any(weights.get(t, 1.0) == 0.0 for t in terms(word)):
            return True
    return False


def _has_han(text: str) -> bool:
    return re.search(r"[\u3400-\u9fff]", text) is not None


def choose(question: str, hits: list[Hit], cache, max_sentences: int = MAX_SENTENCES,
           min_cover: float = MIN_COVER) -> list[Candidate]:
    """The sentences of the answer in reading order, or [] when nothing clears the bar."""
    q_terms = [t for t in terms(question) if t not in FRAMING] or terms(question)
    if not q_terms or not hits:
        return []
    weights = term_weights(cache, q_terms)
    known = [t for t in q_terms if weights[t] > 0]
    if len(known) < min_cover * len(q_terms):  # most of the question's words are in no note at all
        return []
    if asks_what_no_note_says(question, q_terms, weights, hits):
        return []
    pool = candidates(question, hits, {t: weights[t] for t in known}, min_cover)
    if not pool:
        return []
    best = max(c.score for c in pool)
    chosen: list[Candidate] = []
    for c in sorted(pool, key=lambda c: (-c.score, c.rank, c.position)):
        if c.score < KEEP_RATIO * best or len(chosen) >= max_sentences:
            break
        if any(_jaccard(c.terms, o.terms) >= DUPLICATE or c.text == o.text for o in chosen):
            continue
        chosen.append(c)
    chosen = _whole_lists(chosen)
    page_order: dict[str, int] = {}
    for c in sorted(chosen, key=lambda c: c.rank):
        page_order.setdefault(c.hit.path, len(page_order))
    return sorted(chosen, key=lambda c: (page_order[c.hit.path], c.rank, c.position))


MAX_LIST_ITEMS = 12
MAX_LIST_CHARS = 1200


def _whole_lists(chosen: list[Candidate]) -> list[Candidate]:
    """A chosen step of a numbered list becomes the whole list, in order ("4. Click Restore" alone,
    without steps 1-3, answers nothing); other chosen steps of the same list are folded into it.
    Bounded: a list longer than MAX_LIST_ITEMS items or MAX_LIST_CHARS characters is quoted up to
    there, with "…"."""
    out: list[Candidate] = []
    done: set[tuple[str, str, int]] = set()
    for c in chosen:
        if c.run is None:
            out.append(c)
            continue
        key = (c.hit.path, c.hit.chunk_id, c.run)
        if key in done:
            continue
        done.add(key)
        steps = [p for p in sentences(c.hit.text) if p.run == c.run]
        lines, size = [], 0
        for i, step in enumerate(steps, 1):
            if i > MAX_LIST_ITEMS or size + len(step.text) > MAX_LIST_CHARS:
                lines.append("…")
                break
            lines.append(f"{i}. {step.text}")
            size += len(step.text)
        position = min((k for k, p in enumerate(sentences(c.hit.text)) if p.run == c.run), default=c.position)
        out.append(replace(c, text="\n".join(lines), position=position,
                           heading=steps[0].heading if steps else c.heading))
    return out
