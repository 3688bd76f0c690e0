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
  never scanned (index/vectors.py), because a page has ~5 of them and scanning them all would
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
from .vectors import HELD_BIT, vector_id

WINDOW = 2  # sentences per passage
_HEADING_LINE = re.compile(r"^#{1,6}[ \t].*$", re.M)  # the heading path is in the chunk vector already
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；…])\s*")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CODE_ONLY = re.compile(r"^\s*`[^`]*`\s*$")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _windows(items: list[str]) -> list[str]:
    if len(items) <= WINDOW:
        return [" ".join(items)] if items else []
    return [" ".join(items[i:i + WINDOW]) for i in range(len(items) - WINDOW + 1)]


def blocks(text: str) -> list[str]:
    """A note's paragraphs and list items, each on one line; a block that is only code (an inline
    code line or a fenced block) joins the block before it, which usually says what it does."""
    out: list[str] = []
    for paragraph in _BLANK_LINE.split(_HEADING_LINE.sub("", text)):
        current: list[str] = []
        for line in paragraph.split("\n"):
            if not line.strip():
                continue
            if _LIST_ITEM.match(line) and current:
                out.append(" ".join(current))
                current = []
            current.append(line.strip())
        if current:
            block = " ".join(current)
            if out and (_CODE_ONLY.match(block) or block.startswith("```")):
                out[-1] += " " + block
            else:
                out.append(block)
    return out


def passages(chunk: Chunk, mode: str) -> list[str]:
    """The passage texts to embed for ``chunk`` under ``mode`` (see the module docstring)."""
    if mode == "none" or (mode == "transcripts" and not chunk.speakers):
        return []
    out: list[str] = []
    if chunk.speakers:
        for turn in transcript_turns(chunk.text):
            body = " ".join(index_clean(chunk.text[turn.said:turn.end]).split())
            out.extend(f"{turn.speaker}: {w}" for w in _windows(sentences(body)))
    if not out:
        for block in blocks(index_clean(chunk.text)):
            block = " ".join(block.split())
            said = sentences(block)
            out.extend(f"{chunk.title}: {w}" for w in (_windows(said) if len(said) > WINDOW else [block]))
        if len(out) < 2:  # one block: the chunk's own vector already is that passage
            return []
    return list(dict.fromkeys(out))


def passage_id(chunk_id: str, ordinal: int, held: bool = False) -> int:
    """A FAISS id for a chunk's passage, from the same 60-bit space as chunk ids; ``held`` (a
    note's passage, read back for re-ranking, never searched) sets ``HELD_BIT`` (vectors.py)."""
    vid = vector_id(hashlib.sha1(f"{chunk_id}\x00{ordinal}".encode("utf-8")).hexdigest())
    return vid | HELD_BIT if held else vid
