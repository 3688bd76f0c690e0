"""Passage vectors: a chunk is also embedded sentence pair by sentence pair.

Why: one vector for a whole chunk averages its topics. A conversation turn such as "That's
amazing! Music brings people together. Take a look at my new vintage camera I bought" is about
three things, and "what did Dave buy?" matches the last sentence far better than the average.
Vector search scores a chunk by its whole-chunk similarity plus its best passage's similarity.
Measured on LoCoMo (vector side alone, dialog recall@10): whole-turn vectors 0.663, best passage
alone 0.679, their sum 0.730. It costs a second embedding pass (about as many tokens again as
the chunks), so by default only transcripts get passages (``embed_passages = "transcripts"``);
``"all"`` extends it to every chunk, ``"none"`` turns it off.

A passage is two consecutive sentences (overlapping by one), prefixed with the speaker for a
transcript turn or the page title otherwise, so it stands on its own.
"""
from __future__ import annotations

import hashlib
import re

from ..model import Chunk, index_clean
from ..parse.chunk import transcript_turns
from .vectors import vector_id

WINDOW = 2  # sentences per passage
_HEADING_LINE = re.compile(r"^#{1,6}[ \t].*$", re.M)  # the heading path is in the chunk vector already
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；…])\s*")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _windows(items: list[str]) -> list[str]:
    if len(items) <= WINDOW:
        return [" ".join(items)] if items else []
    return [" ".join(items[i:i + WINDOW]) for i in range(len(items) - WINDOW + 1)]


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
        body = " ".join(index_clean(_HEADING_LINE.sub("", chunk.text)).split())
        out = [f"{chunk.title}: {w}" for w in _windows(sentences(body))]
    return list(dict.fromkeys(out))


def passage_id(chunk_id: str, ordinal: int) -> int:
    """A FAISS id for a chunk's passage, from the same 60-bit space as chunk ids."""
    return vector_id(hashlib.sha1(f"{chunk_id}\x00{ordinal}".encode("utf-8")).hexdigest())
