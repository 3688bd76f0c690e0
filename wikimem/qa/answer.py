"""What an answer is, shared by asking (query.py), filing it back (writeback.py) and the linter's
stale-citation rule: the answer, its citations and the content hash a citation records."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..model import Hit

NO_ANSWER = "The vault has no answer to this question: no note says enough about it to cite."
QUERY_FOLDER = "queries"
VAULT_FILES = ("index.md", "log.md", "SCHEMA.md")  # about the vault, not knowledge: never cited


@dataclass(frozen=True)
class Citation:
    link: str  # "[[concepts/BM25#Formula]]"
    path: str
    heading: str | None
    block: str | None
    chunk_sha256: str  # of the chunk's text when it was cited
    title: str

    def to_dict(self) -> dict[str, Any]:
        return {"link": self.link, "path": self.path, "heading": self.heading, "block": self.block,
                "chunk_sha256": self.chunk_sha256, "title": self.title}


@dataclass(frozen=True)
class Answer:
    question: str
    mode: str  # extractive | ollama | openai
    text: str  # Markdown; each sentence followed by its citation ('' when no answer)
    answered: bool
    citations: tuple[Citation, ...]
    notices: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # LLM answers: uncited sentences, citations of chunks not retrieved
    page: str | None = None  # the query page written (None with --no-write or no answer)
    page_status: str = "not written"  # created | updated | not written
    retrieved: tuple[Hit, ...] = field(default=(), repr=False)
    similar: tuple[tuple[str, float], ...] = ()  # active query pages the written page duplicates or updates
    matched: str | None = None  # why an existing page was taken for this question (page_status updated)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "mode": self.mode, "answered": self.answered,
                "answer": self.text if self.answered else NO_ANSWER,
                "citations": [c.to_dict() for c in self.citations], "notices": list(self.notices),
                "flags": list(self.flags), "page": self.page, "page_status": self.page_status,
                "similar": [{"path": p, "similarity": s} for p, s in self.similar], "matched": self.matched,
                "retrieved": [{"path": h.path, "heading_path": list(h.heading_path), "score": round(h.score, 6)}
                              for h in self.retrieved]}


def chunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
