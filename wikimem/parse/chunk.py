"""Heading-aware chunking (design.md §4).

A page body is cut only at block boundaries (line starts) or, inside an over-long paragraph, at
sentence ends outside ``[[links]]`` and code spans. Fenced code, tables, callouts and other quotes
are never cut. Chunks tile the body: chunk i spans [start_i, start_{i+1}), so their texts
concatenate back to the body exactly. Tiny sections merge forward within the same parent heading.

Conversation transcripts (turns marked ``**Speaker** (time):``) chunk by turn instead: one turn
per chunk by default, ranked together with the turn before it (``chunk_transcript``).
"""
from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass

from ..model import Chunk, Page
from .page import chunk_turns

MIN_CHARS = 300
MAX_CHARS = 800

_SENTENCE_END = re.compile(r"(?:[.!?;](?=\s)|[。！？；…](?!\s*[」』”’）)]))\s*")
# never cut inside these (links, code spans); _protected_spans() finds them without this regex,
# which rescanned a whole line from every "[" that was not closed
_PROTECTED = re.compile(r"!?\[\[[^\]\n]*\]\]|`[^`\n]*`|\[[^\]\n]*\]\([^)\n]*\)")
_OPENERS = re.compile(r"[!`\[]")
_TURN = re.compile(r"^\*\*(?P<speaker>[^*\n]{1,80})\*\*(?:\s*\((?P<time>[^)\n]*)\))?\s*:", re.M)
_BLOCK_ID = re.compile(r"(?:^|\s)\^([A-Za-z0-9-]+)[ \t]*$", re.M)
_ATOMIC = {"fence", "code", "table", "callout", "blockquote", "html"}


@dataclass
class _Unit:
    start: int
    end: int
    kind: str
    section: int  # index into the section list


def chunk_id(path: str, heading_path: tuple[str, ...], text: str) -> str:
    content = hashlib.sha1(text.encode("utf-8")).hexdigest()
    key = f"{path}\x00{' > '.join(heading_path)}\x00{content}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def _unique_id(seen: dict[str, int], path: str, heading_path: tuple[str, ...], text: str) -> str:
    """The chunk id, made unique within the page: the same text twice under one heading (a
    repeated "**Bob**: Yes." in a chat log, a repeated boilerplate paragraph) gets a counter."""
    cid = chunk_id(path, heading_path, text)
    if cid in seen:
        seen[cid] += 1
        cid = chunk_id(path, heading_path, f"{text}\x00{seen[cid]}")
    seen.setdefault(cid, 0)
    return cid


def is_transcript(page: Page) -> bool:
    kind = str(page.frontmatter.get("kind") or page.frontmatter.get("source_type") or "").lower()
    return kind == "transcript" or page.path.startswith("raw/transcripts/")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


def _stops(segment: str, chars: str) -> list[int]:
    return [m.start() for m in re.finditer(f"[{re.escape(chars)}]", segment)]


def _protected_spans(segment: str) -> list[tuple[int, int]]:
    """What ``_PROTECTED.finditer(segment)`` finds, in linear time: the regex tried every ``[`` and
    scanned to the end of its line for a ``]`` that never came (a 1 MB line of ``[[``: minutes).
    Here the first stop character after a position is looked up in sorted lists instead."""
    n = len(segment)
    closers, ticks, parens = _stops(segment, "]\n"), _stops(segment, "`\n"), _stops(segment, ")\n")

    def first(stops: list[int], i: int) -> int:  # the first stop at or after i, or n
        k = bisect.bisect_left(stops, i)
        return stops[k] if k < len(stops) else n

    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _OPENERS.finditer(segment):
        p = m.start()
        if p < pos:  # inside the last span
            continue
        ch, end = segment[p], -1
        if ch == "!":
            if segment.startswith("[[", p + 1):
                q = first(closers, p + 3)
                if segment.startswith("]]", q):
                    end = q + 2
        elif ch == "`":
            q = first(ticks, p + 1)
            if q < n and segment[q] == "`":
                end = q + 1
        else:
            if segment.startswith("[", p + 1):
                q = first(closers, p + 2)
                if segment.startswith("]]", q):
                    end = q + 2
            if end < 0:
                q = first(closers, p + 1)
                if segment.startswith("](", q):
                    r = first(parens, q + 2)
                    if r < n and segment[r] == ")":
                        end = r + 1
        if end > 0:
            spans.append((p, end))
            pos = end
    return spans


def _sentence_cuts(text: str, start: int, end: int) -> list[int]:
    """Offsets (absolute) where a paragraph may be cut: after sentence ends, then at line breaks."""
    segment = text[start:end]
    protected = _protected_spans(segment)
    starts = [s for s, _ in protected]

    def free(pos: int) -> bool:  # not strictly inside a protected span (they do not overlap)
        k = bisect.bisect_left(starts, pos) - 1
        return k < 0 or not pos < protected[k][1]

    cuts = [start + m.end() for m in _SENTENCE_END.finditer(segment) if 0 < m.end() < len(segment) and free(m.end())]
    if not cuts:  # no sentence punctuation: fall back to line breaks inside the paragraph
        cuts = [start + m.end() for m in re.finditer("\n", segment[:-1]) if free(m.end())]
    return cuts


def _split_long(units: list[_Unit], text: str, page: Page, lines: list[int], max_chars: int) -> list[_Unit]:
    """Break units over the bound at list items, then sentence ends; atomic blocks stay whole."""
    out: list[_Unit] = []
    spans = {(lines[s.start_line] if s.start_line < len(lines) else len(text)): s for s in page.spans}
    for u in units:
        if u.end - u.start <= max_chars or u.kind in _ATOMIC or u.kind == "heading":
            out.append(u)
            continue
        if u.kind == "list":
            span = spans.get(u.start)
            points = [lines[i] for i in (span.items if span else ()) if i < len(lines) and lines[i] > u.start]
        else:
            points = _sentence_cuts(text, u.start, u.end)
        bounds = [u.start] + [p for p in points if u.start < p < u.end] + [u.end]
        piece_start = u.start
        for a, b in zip(bounds, bounds[1:]):
            if b - piece_start > max_chars and a > piece_start:
                out.append(_Unit(piece_start, a, u.kind, u.section))
                piece_start = a
        out.append(_Unit(piece_start, u.end, u.kind, u.section))
    return out


DESCRIPTION_KEY = "description"  # frontmatter that says in a line what the page is for
MAX_DESCRIPTION = 300


def page_description(page: Page) -> str | None:
    """The page's one-line description from its frontmatter (``description``, as Obsidian Publish
    and most documentation sites write it), when it is short text: it is what the page is for in
    the words a question uses ("npm-pack": "Create a tarball from a package"), and neither its
    title nor its body may say it that way (issue 52: on npm's manual, indexed with the title,
    tune-half MRR@10 0.693 -> 0.710; benchmarks/README.md "Documentation vault"). Not ``summary``:
    a Claude Code session's summary is rewritten as the session goes on, and every turn would be
    embedded again each time."""
    value = page.frontmatter.get(DESCRIPTION_KEY)
    if isinstance(value, str):
        text = " ".join(value.split())
        if text and len(text) <= MAX_DESCRIPTION:
            return text
    return None


def _facts(page: Page, described: bool = True):
    """What every chunk of ``page`` carries. Its ``aliases`` (indexed and embedded with the title,
    never used to resolve links: those come from the page) get the page's description after its
    own aliases (not a transcript's turns: ``described`` False)."""
    described = page_description(page) if described else None
    aliases = page.aliases + (described,) if described and described not in page.aliases else page.aliases
    return dict(type=page.type, status=page.status, created=page.created, updated=page.updated, aliases=aliases)


def chunk_page(page: Page, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS,
               window: int | None = None, stride: int | None = None, context_turns: int = 1) -> list[Chunk]:
    if is_transcript(page):
        chunks = chunk_transcript(page, window, stride, context_turns)
        if chunks:
            return chunks
    text = page.body
    if not text.strip():
        return []
    lines = _line_starts(text)
    n_lines = len(lines)

    def off(line: int) -> int:
        return lines[line] if line < n_lines else len(text)

    # sections: (heading path, parent path)
    sections: list[tuple[str, ...]] = [()]
    stack: list[tuple[int, str]] = []
    units: list[_Unit] = []
    for span in page.spans:
        start = off(span.start_line)
        if span.kind == "heading":
            while stack and stack[-1][0] >= span.level:
                stack.pop()
            stack.append((span.level, span.text))
            sections.append(tuple(t for _, t in stack))
        units.append(_Unit(start, off(span.end_line), span.kind, len(sections) - 1))
    if not units:
        return []
    units[0].start = 0  # leading blank lines belong to the first unit
    for a, b in zip(units, units[1:]):
        a.end = b.start  # trailing blank lines belong to the unit before
    units[-1].end = len(text)
    units = _split_long(units, text, page, lines, max_chars)

    # pack units into pieces within a section
    pieces: list[list[int]] = []  # [start, end, section]
    for u in units:
        if pieces:
            last = pieces[-1]
            same = last[2] == u.section
            heading_only = last[1] - last[0] <= 0 or _only_heading(text, last[0], last[1])
            if same and (u.end - last[0] <= max_chars or heading_only):
                last[1] = u.end
                continue
        pieces.append([u.start, u.end, u.section])

    # merge tiny pieces forward within the same parent heading; a merged chunk is labelled with
    # what its sections share (a parent and its first child: the parent; two siblings: their
    # parent), never with the last one's heading, which the text before it does not sit under
    merged: list[list] = []  # [start, end, the section merging continues from, label]
    for piece in pieces:
        if merged:
            prev = merged[-1]
            prev_path, cur_path = sections[prev[2]], sections[piece[2]]
            related = prev_path == cur_path or cur_path[: len(prev_path)] == prev_path or \
                (len(prev_path) == len(cur_path) and prev_path[:-1] == cur_path[:-1])
            if prev[1] - prev[0] < min_chars and related and piece[1] - prev[0] <= max_chars:
                prev[1] = piece[1]
                if len(cur_path) >= len(prev_path):
                    prev[2] = piece[2]
                prev[3] = _shared(prev[3], cur_path)
                continue
        merged.append([piece[0], piece[1], piece[2], sections[piece[2]]])

    tag_lines = sorted((t.line - page.body_line, t.name) for t in page.tags if t.line is not None)
    link_lines = sorted((l.line - page.body_line, l.resolved or l.target) for l in page.links if l.line is not None)
    page_tags = tuple(sorted({t.name for t in page.tags if t.line is None}))
    link_keys = [ln for ln, _ in link_lines]
    tag_keys = [ln for ln, _ in tag_lines]
    facts = _facts(page)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    by_lines: dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for start, end, _, heading_path in merged:
        body = text[start:end]
        if not body.strip():
            if chunks:  # whitespace tail: attach to the previous chunk so the tiling holds
                last = chunks[-1]
                chunks[-1] = _replace_text(last, text[last.start:end], end)
            continue
        first_line = bisect.bisect_right(lines, start) - 1
        last_line = bisect.bisect_right(lines, max(start, end - 1)) - 1
        # chunks cut from one long line share its links and tags: worked out once per line span
        # (a 1 MB paragraph on one line: every chunk re-deduplicated all of its 30k links)
        found = by_lines.get((first_line, last_line))
        if found is None:
            lo, hi = bisect.bisect_left(link_keys, first_line), bisect.bisect_right(link_keys, last_line)
            links = tuple(dict.fromkeys(t for _, t in link_lines[lo:hi]))
            lo, hi = bisect.bisect_left(tag_keys, first_line), bisect.bisect_right(tag_keys, last_line)
            tags = tuple(sorted(set(page_tags).union(t for _, t in tag_lines[lo:hi])))
            found = by_lines[(first_line, last_line)] = (links, tags)
        links, tags = found
        blocks = tuple(m.group(1) for m in _BLOCK_ID.finditer(body)) if "^" in body else ()
        cid = _unique_id(seen, page.path, heading_path, body)
        chunks.append(Chunk(cid, page.path, page.title, heading_path, body, start, end,
                            links=links, tags=tags, blocks=blocks, **facts))
    return chunks


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The heading path two merged sections share; the first one's when they share none (two
    top-level sections: the chunk's text begins under the first)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n] if n else a


_HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


def shown_heading(text: str, heading_path: tuple[str, ...], shown: str) -> tuple[str, ...]:
    """The heading path of ``shown`` (a passage: whitespace collapsed, bold marks gone), a part of
    chunk ``text`` labelled ``heading_path``: a chunk merged from small sections holds headings of
    its own, and a passage under one of them is shown under it, not under the chunk's label."""
    if "#" not in text:
        return heading_path
    from ..model import index_clean
    marks = list(_HEADING_LINE.finditer(text))
    if not marks:
        return heading_path
    probe = " ".join(shown.split())[:60]
    bounds = [0] + [m.start() for m in marks] + [len(text)]
    found = None
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        if probe and probe in " ".join(index_clean(text[a:b]).split()):
            found = i  # segment i lies after i headings of the chunk
            break
    if not found:
        return heading_path
    stack: list[tuple[int, str]] = []
    for m in marks[:found]:
        level, name = len(m.group(1)), m.group(2).strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
    inner = [name for _, name in stack]
    while inner and heading_path and inner[0] in heading_path:  # the chunk's own heading line
        inner.pop(0)
    return tuple(heading_path) + tuple(inner)


def _only_heading(text: str, start: int, end: int) -> bool:
    stripped = text[start:end].strip()
    return bool(stripped) and "\n" not in stripped and stripped.startswith("#")


def _replace_text(chunk: Chunk, body: str, end: int) -> Chunk:
    from dataclasses import replace
    return replace(chunk, text=body, end=end)


# -- transcripts --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    speaker: str
    time: str | None
    start: int  # where the "**Speaker** (time):" header begins
    end: int
    block: str | None
    said: int  # where the spoken text begins, after the header


def transcript_turns(body: str) -> list[Turn]:
    marks = list(_TURN.finditer(body))
    turns: list[Turn] = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        segment = body[m.start():end]
        block = _BLOCK_ID.search(segment)
        turns.append(Turn(m.group("speaker").strip(), m.group("time"), m.start(), end,
                          block.group(1) if block else None, m.end()))
    return turns


def chunk_transcript(page: Page, window: int | None = None, stride: int | None = None,
                     context_turns: int = 1) -> list[Chunk]:
    """``window`` consecutive turns per chunk, advancing by ``stride`` (frontmatter
    ``chunk_window``/``chunk_stride`` win over the arguments; default 1/1). ``context_turns``
    earlier turns are indexed and embedded with a chunk (so a reply like "Yes, last week!" is
    ranked together with its question) but not shown or claimed by it: by default every chunk is
    ranked as an exchange and points at exactly one turn."""
    body = page.body
    turns = transcript_turns(body)
    if not turns:
        return []
    # a bad frontmatter value is reported by parse_page (Page.errors); here it just does not count
    window = chunk_turns(page.frontmatter.get("chunk_window")) or window or 1
    stride = chunk_turns(page.frontmatter.get("chunk_stride")) or stride or window
    window, stride = max(1, window), max(1, min(stride, window))
    date = page.frontmatter.get("date")
    heading = next((h.text for h in page.headings), page.title)
    facts = _facts(page, described=False)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    i = 0
    while i < len(turns):
        group = turns[i:i + window]
        start = 0 if i == 0 else group[0].start
        end = group[-1].end
        text = body[start:end]
        blocks = tuple(t.block for t in group if t.block)
        speakers = tuple(dict.fromkeys(t.speaker for t in group))
        cid = _unique_id(seen, page.path, (heading,), text)
        context = body[turns[max(0, i - context_turns)].start:group[0].start].strip() if context_turns and i else ""
        chunks.append(Chunk(cid, page.path, page.title, (heading,), text, start, end,
                            tags=tuple(sorted({t.name for t in page.tags})), blocks=blocks,
                            speakers=speakers, date=str(date) if date else None, context=context, **facts))
        if i + window >= len(turns):
            break
        i += stride
    return chunks
