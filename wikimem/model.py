"""The shared vocabulary: plain frozen dataclasses passed between pipeline stages.

Everything here is parsed once at the boundary (the vault layer and the parser) and then only read.
Mappings inside frozen dataclasses are treated as read-only by convention.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

_BLOCK_ID_MARK = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$", re.M)
_BOLD = re.compile(r"\*\*|__")


def index_clean(text: str) -> str:
    """Markup that carries no meaning for ranking: block ids (``^D3-7``) and bold markers."""
    return _BOLD.sub("", _BLOCK_ID_MARK.sub("", text))

PAGE_TYPES = ("entity", "concept", "comparison", "query", "source", "memory", "note")

FOLDER_TYPES = {
    "entities": "entity",
    "concepts": "concept",
    "comparisons": "comparison",
    "queries": "query",
    "raw": "source",
    "memories": "memory",
}


@dataclass(frozen=True)
class Frontmatter:
    """The YAML block at the top of a note.

    ``raw`` is the exact text between the fences (so an unchanged note is written back byte for
    byte); ``data`` is the parsed mapping in file order with dates normalised to ISO strings.
    """

    raw: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    end_line: int = 0  # first body line (0-based) in the file

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 0-based line in the file


@dataclass(frozen=True)
class Tag:
    name: str  # normalised: lower case, no leading '#'
    line: int | None  # None for frontmatter tags
    source: str  # "inline" | "frontmatter"


@dataclass(frozen=True)
class Block:
    """An Obsidian block id (``^id`` at the end of a paragraph or list item)."""

    id: str
    line: int


@dataclass(frozen=True)
class BlockSpan:
    """A top-level Markdown block as a line range of the body: the chunker's unit."""

    kind: str  # heading | paragraph | fence | code | table | blockquote | callout | list | hr | html
    start_line: int  # 0-based body line
    end_line: int  # exclusive
    level: int = 0  # heading level
    text: str = ""  # heading text
    items: tuple[int, ...] = ()  # list blocks: first line of each top-level item (split points)


@dataclass(frozen=True)
class Link:
    """One outgoing link exactly as written, plus (after resolution) where it points.

    kind: "wikilink" | "embed" | "markdown" | "frontmatter".
    ``heading`` is the heading path for ``[[Page#H1#H2]]``; ``block`` the id for ``[[Page#^id]]``.
    An empty ``target`` means the page itself (``[[#Heading]]``).
    """

    target: str
    kind: str
    line: int | None
    display: str | None = None
    heading: tuple[str, ...] = ()
    block: str | None = None
    key: str | None = None  # frontmatter key the link came from
    resolved: str | None = None  # vault-relative path, set by resolve
    candidates: tuple[str, ...] = ()  # >1 when the basename was ambiguous
    anchor_ok: bool | None = None  # heading/block anchor exists in the target (None: not checked)


@dataclass(frozen=True)
class Page:
    """A parsed note. ``body`` is the text after the frontmatter with line endings normalised to LF;
    chunk spans index into it."""

    path: str  # vault-relative, POSIX separators
    title: str
    type: str
    frontmatter: Frontmatter
    body: str
    body_line: int  # file line (0-based) where the body starts
    headings: tuple[Heading, ...] = ()
    links: tuple[Link, ...] = ()
    tags: tuple[Tag, ...] = ()
    blocks: tuple[Block, ...] = ()
    spans: tuple[BlockSpan, ...] = ()
    aliases: tuple[str, ...] = ()
    status: str = "active"
    supersedes: tuple[str, ...] = ()  # link targets as written
    created: str | None = None
    updated: str | None = None
    errors: tuple[str, ...] = ()
    sha256: str = ""

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    @property
    def tag_names(self) -> tuple[str, ...]:
        return tuple(sorted({t.name for t in self.tags}))


@dataclass(frozen=True)
class Chunk:
    """A searchable piece of a page: the verbatim text plus what filters and scoring need."""

    id: str  # stable: page path + heading path + content hash
    path: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    start: int  # char span in Page.body
    end: int
    links: tuple[str, ...] = ()  # resolved paths (or raw targets when unresolved)
    tags: tuple[str, ...] = ()
    type: str = "note"
    status: str = "active"
    created: str | None = None
    updated: str | None = None
    blocks: tuple[str, ...] = ()  # block ids inside the chunk (transcript turn ids)
    speakers: tuple[str, ...] = ()
    date: str | None = None  # a transcript session's date
    context: str = ""  # text around the chunk that is indexed and embedded with it, not shown
    aliases: tuple[str, ...] = ()  # the page's aliases: alternative titles, indexed with the title

    def index_title(self) -> str:
        return " / ".join((self.title, *self.aliases)) if self.aliases else self.title

    def index_body(self) -> str:
        """The chunk's text as ranked: the context first, markup without meaning removed."""
        body = index_clean(self.text)
        return f"{index_clean(self.context)}\n{body}" if self.context else body

    def index_text(self) -> str:
        """Text given to the embedder: title and heading path first, so a chunk knows which page
        and section it belongs to, then the body as ranked."""
        where = " > ".join((self.index_title(), *self.heading_path)) if self.heading_path else self.index_title()
        return f"{where}\n{self.index_body()}"


@dataclass(frozen=True)
class Hit:
    """One search result, self-contained for CLI, JSON and MCP."""

    chunk_id: str
    path: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    score: float
    components: Mapping[str, float | int | None]
    found_by: tuple[str, ...]
    uri: str
    type: str = "note"
    status: str = "active"
    blocks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "path": self.path,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "text": self.text,
            "score": round(self.score, 6),
            "components": dict(self.components),
            "found_by": list(self.found_by),
            "uri": self.uri,
            "type": self.type,
            "status": self.status,
            "blocks": list(self.blocks),
        }


@dataclass(frozen=True)
class Skipped:
    """A file the scan passed over, and why (reported, never fatal)."""

    path: str
    kind: str  # binary | too_large | not_utf8 | unreadable | symlink_loop | outside
    reason: str
