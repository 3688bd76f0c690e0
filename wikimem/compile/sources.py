"""The sources a compile reads: the text notes under raw/ (articles, papers, and the Markdown text
``ingest`` writes beside an HTML or PDF file), each split into the sentences a page may quote.

A sentence is kept only where its words stand verbatim in the source (the same words in the same
order, whatever the line breaks between them): what the extractive answer code cleans for reading
(a link shown as its text) is not what the source says, so it is never quoted. Each sentence carries
its file line, its heading, the link that cites it (``[[raw/articles/x#Heading]]``) and the sha256 of
the chunk that holds it (what ``review`` checks later). A source is tracked by the sha256 of its file.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterable

from ..model import Chunk, Page
from ..parse import frontmatter as fm
from ..qa.answer import chunk_hash
from ..qa.extractive import sentences as split_sentences

SKIPPED_RAW = ("raw/transcripts/", "raw/assets/")  # conversations and files are not compiled
MAX_SENTENCE_CHARS = 400
MIN_WORDS = 3  # words outside code a quotable sentence needs
_UNLINKABLE = re.compile(r"[#|\[\]^]")


@dataclass(frozen=True)
class Sentence:
    source: str  # the raw/ file
    text: str  # the words as the source writes them (whitespace collapsed)
    line: int  # 1-based file line where it starts
    heading: str | None
    link: str  # "[[raw/articles/x#Heading]]"
    chunk_sha256: str  # of the chunk it stands in ("" when no chunk holds it)
    order: int  # position in the source


@dataclass(frozen=True)
class Source:
    path: str  # raw/...
    sha256: str  # of the file: what tells a changed source
    title: str
    date: str  # what "newest first" sorts by: the source page's date, else its created, else ""
    page: str | None  # its sources/ page, when ingest wrote one
    sentences: tuple[Sentence, ...]
    chunk_hashes: frozenset[str] = frozenset()  # of its text now: what a page's citations are checked against
    status: str = ""  # new (no page cites it) | changed (a page cites text it no longer holds) | compiled

    def to_dict(self) -> dict:
        return {"path": self.path, "sha256": self.sha256, "title": self.title, "date": self.date,
                "page": self.page, "sentences": len(self.sentences), "status": self.status}


def is_source(path: str) -> bool:
    return path.startswith("raw/") and path.lower().endswith(".md") and not path.startswith(SKIPPED_RAW)


def words_pattern(text: str) -> re.Pattern[str]:
    """``text``'s words in order with any whitespace between them."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()))


def _link(page: Page, heading: str | None) -> str:
    target = page.path[:-3] if page.path.lower().endswith(".md") else page.path
    if heading and heading.strip() != page.title.strip() and not _UNLINKABLE.search(heading):
        return f"[[{target}#{heading.strip()}]]"
    return f"[[{target}]]"


def _window(body: str, pos: int, text: str) -> int:
    """Where to stop looking for a sentence the splitter gave next: not far past ``pos`` (sentences
    come in order; a search to the end for each one that is not verbatim was quadratic in a long source)."""
    return min(len(body), pos + 4 * len(text) + 4000)


def _find(body: str, text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of ``text``'s words in ``body`` from ``pos`` on, within ``_window``: as written
    (most sentences stand on one line), else with any whitespace between the words."""
    stop = _window(body, pos, text)
    at = body.find(text, pos, stop)
    if at >= 0:
        return at, at + len(text)
    m = words_pattern(text).search(body, pos, stop) if any(c.isspace() for c in body[pos:stop]) else None
    return (m.start(), m.end()) if m else None


def sentences_of(page: Page, chunks: Iterable[Chunk] = ()) -> tuple[Sentence, ...]:
    """The quotable sentences of ``page`` in order (see the module docstring)."""
    from .names import prose
    from .names_zh import words
    body = page.body
    spans = sorted((c.start, c.end, c.text) for c in chunks)
    starts = [s for s, _, _ in spans]
    hashes: dict[int, str] = {}
    out: list[Sentence] = []
    pos = counted = lines = 0  # lines: newlines before ``counted``, counted once (a count from 0 was quadratic)
    for piece in split_sentences(body):
        text = " ".join(piece.text.split())
        if len(text) > MAX_SENTENCE_CHARS or "<!--" in text or "[[" in text or "]]" in text:
            continue
        if words(prose(text)) < MIN_WORDS:
            continue  # a code line, an address: nothing a page can say in words
        found = _find(body, text, pos)
        if found is None:
            continue  # cleaned for reading (a link shown as its text): not the source's own words
        start, end = found
        lines += body.count("\n", counted, start)
        counted, pos = start, end
        i = bisect.bisect_right(starts, start) - 1  # the chunk holding it (chunks are in order)
        sha = ""
        if i >= 0 and spans[i][0] <= start < spans[i][1]:
            sha = hashes.get(i) or hashes.setdefault(i, chunk_hash(spans[i][2]))
        out.append(Sentence(page.path, text, page.body_line + lines + 1, piece.heading, _link(page, piece.heading),
                            sha, len(out)))
    return tuple(out)


def source_pages(pages: dict[str, Page]) -> dict[str, tuple[str, str]]:
    """raw/ path -> (its sources/ page, that page's date or created) from the pages ingest wrote."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(pages):
        page = pages[path]
        if page.type != "source" or path.startswith("raw/"):
            continue
        data = page.frontmatter.data if not page.frontmatter.error else {}
        date = str(data.get("date") or data.get("created") or "")
        for entry in data.get("sources") or []:
            m = re.match(r"\s*\[\[([^\]|#]+)", str(entry))
            if m and m.group(1).startswith("raw/"):
                out.setdefault(m.group(1).strip(), (path, date))
                out.setdefault(m.group(1).strip().removesuffix(".md"), (path, date))
    return out


def read_sources(pages: dict[str, Page], chunks_of, wanted: set[str] | None = None) -> list[Source]:
    """Every source of the vault (``wanted``: only these raw/ paths), newest first, then by path."""
    pages_of = source_pages(pages)
    out = []
    for path in sorted(pages):
        if not is_source(path) or (wanted is not None and path not in wanted):
            continue
        page = pages[path]
        entry = pages_of.get(path) or pages_of.get(path[:-3])
        date = entry[1] if entry else ""
        if not date and not page.frontmatter.error:
            date = str(page.frontmatter.data.get("date") or page.frontmatter.data.get("created") or "")
        chunks = list(chunks_of(page))
        out.append(Source(path, page.sha256, page.title, date, entry[0] if entry else None,
                          sentences_of(page, chunks), frozenset(chunk_hash(c.text) for c in chunks)))
    out.sort(key=lambda s: s.path)
    out.sort(key=lambda s: s.date, reverse=True)
    return out


def plain_links(text: str) -> str:
    """``text`` with links shown as their text, as the sentence splitter reads them ("developed by
    [[Stephen Robertson]]" -> "developed by Stephen Robertson"); lines stay where they are."""
    from ..qa.extractive import _LINK, _MDLINK
    text = _LINK.sub(lambda m: m.group(2) or m.group(1).split("#")[0].rsplit("/", 1)[-1], text)
    return _MDLINK.sub(lambda m: m.group(1), text)


_CITATION = re.compile(r"^\s*\[\[(raw/[^\]#|]+)[^\]]*\]\]\s+sha256:([0-9a-f]{8,64})\s*$")


def with_status(sources: list[Source], pages: dict[str, Page]) -> list[Source]:
    """Each source with its status, from the hashes the wiki pages' ``sources`` record for it."""
    from dataclasses import replace
    recorded: dict[str, set[str]] = {}
    for path, page in pages.items():
        if path.startswith("raw/") or page.type == "source" or page.frontmatter.error:
            continue
        entries = page.frontmatter.data.get("sources")
        for entry in entries if isinstance(entries, list) else []:
            m = _CITATION.match(str(entry))
            if m:
                target = m.group(1).strip()
                recorded.setdefault(target if target.endswith(".md") else target + ".md", set()).add(m.group(2))
    out = []
    for s in sources:
        hashes = recorded.get(s.path)
        status = "new" if not hashes else "changed" if any(
            not any(h.startswith(d) for h in s.chunk_hashes) for d in hashes) else "compiled"
        out.append(replace(s, status=status))
    return out


def page_sentences(page: Page, skip: tuple[int, int] | None = None) -> list[tuple[str, int]]:
    """(sentence, 1-based file line) of a wiki page's own text, leaving out the body range ``skip``
    (its compiled section): what contradictions are checked against. Links read as their text."""
    body = page.body
    if skip:
        body = body[:skip[0]] + "\n" * body.count("\n", skip[0], skip[1]) + body[skip[1]:]
        skip = None
    body = plain_links(body)
    out = []
    pos = counted = lines = 0
    for piece in split_sentences(body):
        text = " ".join(piece.text.split())
        found = _find(body, text, pos)
        if found is None:
            continue
        lines += body.count("\n", counted, found[0])
        counted, pos = found
        out.append((text, page.body_line + lines + 1))
    return out


def frontmatter_data(text: str) -> dict:
    front, _ = fm.parse(text.replace("\r\n", "\n"))
    return dict(front.data) if not front.error else {}
