"""Passage vectors: a chunk is also embedded piece by piece.

Why: one vector for a whole chunk averages its topics. A conversation turn such as "That's
amazing! Music brings people together. Take a look at my new vintage camera I bought" is about
three things, and "what did Dave buy?" matches the last sentence far better than the average.
A documentation page is the same: "which folders are eating up my disk space" is one list item
of the ``du`` page, among seven others about units and depths. Vector search scores a chunk by the
mean of its whole-chunk similarity and its best passage's.

- A transcript turn's passages are sentence pairs (overlapping by one), prefixed with the speaker.
  They are *searched* with the chunks: a turn is found by its best sentence. Measured on LoCoMo
  (vector side alone, dialog recall@10): whole-turn vectors 0.663, best passage alone 0.679,
  their mean 0.730.
- A note's passages are its paragraphs and list items (a code-only line or block joins the item
  before it, which says what it does; a paragraph longer than two sentences is cut into sentence
  pairs), prefixed with the page title. They are *held*: read back for the chunks a search found,
  never scanned (stores/vectors.py), because a page has ~5 of them and scanning them all would
  multiply the cost of every query. A chunk of one block gets none: its own vector is that block.

``embed_passages``: ``"transcripts"`` (turns only), ``"all"`` (turns and notes), ``"none"``.
Passages cost a second embedding pass of about as much text again as the chunks; a note's
passage ids sort after every chunk's, so a build embeds the chunks first and search has them
while the passages follow.
"""
from __future__ import annotations

import hashlib
import re

from ..model import Chunk, index_clean
from ..parse.chunk import transcript_turns
from ..stores.vectors import HELD_BIT, vector_id

WINDOW = 2  # sentences per passage
# Raise when the passages a chunk gets change (how blocks or sentences are cut): the next build
# rewrites every passage row (the vectors follow, from the vector cache where the text is the same)
# instead of keeping the old cut for unchanged pages. 2: wordless blocks dropped, CJK sentences
# end after their closing quotes. 3: a passage is at most MAX_CHARS.
VERSION = 3
# A passage's text, at most: a paragraph or list item is far shorter, but a code block joins the
# block before it whole (a 395,000-character one was one passage, embedded as ~200 windows); its
# start says what it does, as the chunk's does (model.EMBED_MAX_CHARS).
MAX_CHARS = 2000
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")  # the heading path is in the chunk vector already
_LATIN_END = re.compile(r"(?<=[.!?;])\s+")
# a CJK sentence runs to a run of sentence marks and the closing quotes or brackets after it
_CJK_SENTENCE = re.compile(r"[^。！？；…]*[。！？；…]+[”」』）’】》]*\s*|[^。！？；…]+$")
_WORDY = re.compile(r"[^\W_]")  # a block without a letter or digit ("---", "***", an empty item) says nothing
_BULLET = re.compile(r"^\s*[-*+]\s+")
_NUMBERED = re.compile(r"^\s*(\d{1,9})[.)]\s+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")  # at any depth: a fence inside a nested list item is indented
_CODE_ONLY = re.compile(r"^\s*`[^`]*`\s*$")


def sentences(text: str) -> list[str]:
    out = [m.group(0).strip() for piece in _LATIN_END.split(text) for m in _CJK_SENTENCE.finditer(piece)]
    return [s for s in out if s]


def _windows(items: list[str]) -> list[str]:
    if len(items) <= WINDOW:
        return [" ".join(items)] if items else []
    return [" ".join(items[i:i + WINDOW]) for i in range(len(items) - WINDOW + 1)]


def _starts_item(line: str, current: list[str]) -> bool:
    """Whether ``line`` starts a list item that ends the block under way (``current``). As in
    CommonMark, a numbered line interrupts a paragraph only when it is numbered 1 ("released in
    2024.\n2. ..." is not a list); inside a list any number does."""
    if _BULLET.match(line):
        return True
    numbered = _NUMBERED.match(line)
    if not numbered:
        return False
    return int(numbered.group(1)) == 1 or bool(_BULLET.match(current[0]) or _NUMBERED.match(current[0]))


def blocks(text: str) -> list[str]:
    """A note's paragraphs and list items, each on one line; heading lines are left out. Code that
    stands alone (an inline code line, a fenced block) joins the block before it, which usually
    says what it does. A fenced block is read verbatim: its ``# comment`` lines are not headings
    and its blank lines do not end it."""
    out: list[list[str]] = []  # each block's pieces, joined at the end (code may join a block many times)
    current: list[str] = []
    fence: str | None = None  # the opening marker of the fenced block under way
    code: list[str] = []

    def attach(block: str) -> None:  # standalone code: joins the block before it
        if not _WORDY.search(block):
            return
        if current:
            current.append(block)
        elif out:
            out[-1].append(block)
        else:
            out.append([block])

    def close() -> None:
        if current:
            block = " ".join(current)
            current.clear()
            if not _WORDY.search(block):
                return
            if out and _CODE_ONLY.match(block):
                out[-1].append(block)
            else:
                out.append([block])

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = line.strip()
        if fence is not None:
            if stripped:
                code.append(stripped)
            if stripped.startswith(fence) and not stripped.strip(fence[0]):  # the closing fence
                fence = None
                attach(" ".join(code))
                close()  # what follows the fence starts a new block
            continue
        opening = _FENCE.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end():]):  # ```x``` is inline code
            fence, code = opening.group(1), [stripped]
            continue
        if not stripped or _HEADING_LINE.match(line):
            close()
            continue
        if current and _starts_item(line, current):
            close()
        current.append(stripped)
    if fence is not None:  # a fence never closed runs to the end of the text
        attach(" ".join(code))
    close()
    return [" ".join(pieces) for pieces in out]


def passages(chunk: Chunk, mode: str) -> list[str]:
    """The passage texts to embed for ``chunk`` under ``mode`` (see the module docstring)."""
    if mode == "none" or (mode == "transcripts" and not chunk.speakers):
        return []
    out: list[str] = []
    if chunk.speakers:
        for turn in transcript_turns(chunk.text):
            body = " ".join(index_clean(chunk.text[turn.said:turn.end]).split())
            out.extend(f"{turn.speaker}: {w}"[:MAX_CHARS] for w in _windows(sentences(body)))
    if out:
        return list(dict.fromkeys(out))
    for block in blocks(index_clean(chunk.text)):
        block = " ".join(block.split())
        said = sentences(block)
        out.extend(f"{chunk.title}: {w}"[:MAX_CHARS] for w in (_windows(said) if len(said) > WINDOW else [block]))
    out = list(dict.fromkeys(out))
    return out if len(out) >= 2 else []  # one block: the chunk's own vector already is that passage


def passage_id(key: str, ordinal: int, held: bool = False) -> int:
    """A FAISS id for a chunk's passage, from the same 60-bit space as chunk vector ids. ``key``
    names the chunk and the passage's text (build._passage_rows: a changed text is a new id, as
    for chunks, see build.chunk_vid); ``held`` (a note's passage, read back for re-ranking, never
    searched) sets ``HELD_BIT`` (vectors.py)."""
    vid = vector_id(hashlib.sha1(f"{key}\x00{ordinal}".encode("utf-8")).hexdigest())
    return vid | HELD_BIT if held else vid
