"""Two re-rank steps against biases a new user met on a real documentation vault (issue 52).

``ShortTextPrior``: a chunk with almost no text of its own (a heading and "Keyboard shortcuts:", a
lone list item) is embedded with its page title and heading path in front, so its vector is
little more than its headings, and a question that shares their words finds it nearer than the
page that answers it ("How do I change keyboard shortcuts?" put a style guide's section "Key
names and keyboard shortcuts", whose text is "Keyboard shortcuts:", above the Hotkeys page). Its
vector share is scaled by how much text it has, up to ``SHORT_CHARS`` letters (a Han character
counts as ``LETTERS_PER_HAN``): the evidence of meaning grows with the text that carries it. The
lexical side is left alone (BM25 already normalises by length, and a word the chunk holds is
evidence however short the chunk).

``QueryPagesBelowCited``: a filed answer (``queries/<question>.md``) repeats the sentences of the
notes it cites, so it matches the same question as well as they do, and often better (its title
is a question). The notes are the source; the answer page is a pointer to them. A query page
that ranks above a page it cites (a link in either direction), both candidates of this search,
is placed just below that page (``query_below`` in its components names it); wikimem's own
catalogue pages (index.md, which lists every query page) are not cited pages, nor is a page only
the graph step pulled in (it has links, not the same evidence). It runs after every other step, so
the opt-in recency prior (a query page is newer than the notes it cites) cannot lift it back. A query page whose
cited pages were not found keeps its place: then it is the best evidence there is.
"""
from __future__ import annotations

import re

from ..model import META_PAGES
from .candidates import Candidate
from .tuning import LETTERS_PER_HAN, SHORT_CHARS, SHORT_TOP

Candidates = dict[str, Candidate]

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[^\W\d_]", re.UNICODE)
QUERY_FOLDER = "queries/"


def content_chars(text: str) -> int:
    """The letters of a chunk's own text: heading lines, markup, digits and punctuation left out;
    a Han character counts as ``LETTERS_PER_HAN`` letters."""
    body = "\n".join(line for line in text.splitlines() if not _HEADING.match(line))
    han = len(_HAN.findall(body))
    return han * LETTERS_PER_HAN + len(_LATIN.findall(body)) - han


_KNOWN: dict = {}  # chunk id or passage id -> its content_chars: both ids name their text (build.chunk_vid,
# passages.passage_id), so a count once made stays true; a bound, not a working set


def known_chars(ids, read) -> dict:
    """``content_chars`` of the texts ``read(ids)`` returns (id -> text), remembered for this process:
    a warm search reads no text it has counted before."""
    missing = [i for i in ids if i not in _KNOWN]
    if missing:
        if len(_KNOWN) > 500_000:
            _KNOWN.clear()
        for i, text in read(missing).items():
            _KNOWN[i] = content_chars(text or "")
    return {i: _KNOWN[i] for i in ids if i in _KNOWN}


def short_factor(chars: int) -> float:
    """The share of its vector score a chunk with ``chars`` letters of text keeps (1 from
    ``SHORT_CHARS`` up)."""
    if SHORT_CHARS <= 0 or chars >= SHORT_CHARS:
        return 1.0
    return max(chars, 0) / SHORT_CHARS


class ShortTextPrior:
    name = "short_text"

    def applies(self, facts) -> bool:
        return facts.mode == "hybrid" and SHORT_CHARS > 0

    def apply(self, candidates: Candidates, facts) -> Candidates:
        noted = [c for c in candidates.values() if c.vector_share > 0 and not c.turn]
        noted.sort(key=lambda c: (-c.fused, c.id))
        top = noted[:SHORT_TOP]  # only these can reach the hits; beyond them a scaled share moves nothing shown
        if not top:
            return candidates
        chars = known_chars([c.id for c in top], facts.cache.manifest.chunk_texts_by_id)
        weight = facts.settings.weight_vector
        for c in top:
            if c.id not in chars:
                continue
            keep = short_factor(chars[c.id])
            if keep < 1.0:
                c.fused -= weight * c.vector_share * (1.0 - keep)
                if "vector" in c.shares:  # what ImputeLexical reads for a chunk in another script
                    c.shares["vector"] *= keep
                c.short = round(keep, 4)
                c.changed_by(self.name)
        return candidates


class QueryPagesBelowCited:
    name = "query_below"

    def applies(self, facts) -> bool:
        return facts.mode == "hybrid"

    def apply(self, candidates: Candidates, facts) -> Candidates:
        queries = {c.path for c in candidates.values() if c.path.startswith(QUERY_FOLDER)}
        if not queries:
            return candidates
        best: dict[str, float] = {}  # a page's best score among the chunks the rankers found
        for c in candidates.values():
            if c.bm25_rank is not None or c.vector_rank is not None:
                best[c.path] = max(best.get(c.path, float("-inf")), c.score)
        linked = facts.cache.manifest.neighbour_weights(sorted(queries))
        for c in candidates.values():
            if c.path not in queries:
                continue
            cited = [(best[p], p) for p, _ in linked.get(c.path, ())
                     if p in best and p not in queries and p not in META_PAGES]
            if not cited:
                continue
            score, page = max(cited, key=lambda sp: (sp[0], sp[1]))
            if c.score >= score:  # the step runs last: every other part of the score is known
                c.fused -= c.score - score + 1e-6
                c.query_below = page
                c.changed_by(self.name)
        return candidates
