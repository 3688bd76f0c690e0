"""The shared vocabulary: plain frozen dataclasses passed between pipeline stages.

Everything here is parsed once at the boundary (the vault layer and the parser) and then only read.
Mappings inside frozen dataclasses are treated as read-only by convention.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Mapping

_BLOCK_ID_MARK = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$", re.M)
_BOLD = re.compile(r"\*\*|__")


# the markers around a section wikimem generated (parse/generated.py): not words of the note
_LEADING_HEADINGS = re.compile(r"^(?:#{1,6}[ \t][^\n]*(?:\n\s*|$))+")  # a snippet's own heading lines
_GENERATED_MARK = re.compile(r"^<!-- wikimem:(?:begin|end) [^\n]*?-->[ \t]*\r?$\n?", re.MULTILINE)


def index_clean(text: str) -> str:
    """Markup that carries no meaning for ranking: block ids (``^D3-7``), bold markers and the
    markers of a section wikimem generated."""
    if "<!-- wikimem:" in text:
        text = _GENERATED_MARK.sub("", text)
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


# Pages wikimem itself keeps at the vault's root: its catalogue, its log, the communities page and
# the agents' instructions (AGENTS.md).
# They repeat what other pages say (an index line, a "Members:" list), so default search, answers
# and prime leave them out (a flag brings them back).
META_PAGES = frozenset({"index.md", "log.md", "communities.md", "AGENTS.md"})

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


# What a chunk gives the embedder, at most (ten chunks of the default size). A chunk is cut at
# chunk_max characters, but a code block, table or quote is never cut, so one can be huge: a note's
# 395,000-character code block was one chunk, embedded as ~200 windows averaged (33 s, 233 times an
# ordinary chunk; a watcher's next edit waited 83 s for it). Its start says what it is as well; its
# every word stays searchable by the lexical index. Part of parse.PARSE_VERSION (it changes vector ids).
EMBED_MAX_CHARS = 8000


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
    links: tuple[str, ...] = ()  # link targets in the chunk (as written when chunked from an unresolved page)
    tags: tuple[str, ...] = ()
    type: str = "note"
    status: str = "active"
    created: str | None = None
    updated: str | None = None
    blocks: tuple[str, ...] = ()  # block ids inside the chunk (transcript turn ids)
    speakers: tuple[str, ...] = ()
    date: str | None = None  # a transcript session's date
    context: str = ""  # text around the chunk that is indexed and embedded with it, not shown
    aliases: tuple[str, ...] = ()  # the page's aliases (and its frontmatter description), indexed with the title

    def index_title(self) -> str:
        return " / ".join((self.title, *self.aliases)) if self.aliases else self.title

    def index_body(self) -> str:
        """The chunk's text as ranked: the context first, markup without meaning removed."""
        body = index_clean(self.text)
        return f"{index_clean(self.context)}\n{body}" if self.context else body

    def index_text(self) -> str:
        """Text given to the embedder: title and heading path first, so a chunk knows which page
        and section it belongs to, then the body as ranked, its first ``EMBED_MAX_CHARS`` (the
        lexical index keeps it all)."""
        where = " > ".join((self.index_title(), *self.heading_path)) if self.heading_path else self.index_title()
        return f"{where}\n{self.index_body()}"[:EMBED_MAX_CHARS]


def coverage_split(vectors: int, wanted: int, passages: int, passages_wanted: int) -> tuple[float, float | None]:
    """(searched coverage, passage coverage) from vector counts (``vectors`` of ``wanted`` held,
    ``passages`` of ``passages_wanted`` of them a note's held passages): the share of what a search
    scans (chunks, transcript turns' passages) that is stored, which says what search can find, and
    of the held passages (None when none are wanted), which says only how well it ranks them."""
    searched = wanted - passages_wanted
    chunks = min(1.0, (vectors - passages) / searched) if searched > 0 else 1.0
    return chunks, (min(1.0, passages / passages_wanted) if passages_wanted else None)


def coverage_degraded(coverage: float, passage_coverage: float | None, vectors_pending: bool = False,
                      passages_pending: bool = False) -> str | None:
    """What missing vectors degrade: ``vectors_partial`` while something search scans has none (or
    a build left vectors to follow), ``passages_partial`` while only held passages are missing."""
    if coverage < 1.0 or vectors_pending:
        return "vectors_partial"
    if passages_pending or (passage_coverage is not None and passage_coverage < 1.0):
        return "passages_partial"
    return None


@dataclass(frozen=True)
class Hit:
    """One search result, self-contained for CLI, JSON and MCP."""

    chunk_id: str
    path: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    score: float
    components: Mapping[str, float | int | str | None]
    found_by: tuple[str, ...]
    uri: str
    type: str = "note"
    status: str = "active"
    blocks: tuple[str, ...] = ()
    # the chunk's passage nearest the query by meaning (a paragraph or list item of a note, a
    # sentence pair of a transcript turn: index/passages.py), None when the vector side gave none
    passage: str | None = None
    # 1-based lines in the file of the text shown (blank lines at either end left out), and the
    # line to open: the passage's when it can be placed, else the first; None when not known
    start_line: int | None = None
    end_line: int | None = None
    line: int | None = None
    steps: tuple[str, ...] = ()  # the re-rank steps that changed the score (search/steps.py)
    # where the page stands in its version chain (search/timeline.py ``version_of``), given by
    # searches that may return old versions (--as-of, include_superseded); None otherwise
    version: Mapping[str, Any] | None = None
    # a memory's date, and the active memories it may contradict (a possible_update pair):
    # knowledge/memory_view.py ``annotate``; None / () for other pages
    created: str | None = None
    conflicts_with: tuple[str, ...] = ()

    def snippet(self, limit: int = 240) -> str:
        """The text a listing shows: the passage nearest the query (else the chunk), on one line,
        without the heading lines it starts with (the hit's heading path already names them)."""
        text = _LEADING_HEADINGS.sub("", (self.passage or self.text).lstrip()) or (self.passage or self.text)
        one = " ".join(text.split())
        return one if len(one) <= limit else one[:limit] + "…"

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
            "passage": self.passage,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "line": self.line,
            "steps": list(self.steps),
            **({"version": dict(self.version)} if self.version else {}),
            **({"created": self.created} if self.created else {}),
            **({"conflicts_with": list(self.conflicts_with)} if self.conflicts_with else {}),
        }


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    degraded: tuple[str, ...] = ()
    coverage: float = 1.0
    took_ms: float = 0.0
    notices: tuple[str, ...] = ()
    # how the query was read (query_syntax.ParsedQuery.explain()): the ranked text, each condition,
    # notes on odd input; empty for a query without operators, which is ranked as typed
    query_read: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "degraded": list(self.degraded),
                "vector_coverage": round(self.coverage, 4), "took_ms": round(self.took_ms, 2),
                "notices": list(self.notices), "hits": [h.to_dict() for h in self.hits],
                **({"query_read": list(self.query_read)} if self.query_read else {})}


@dataclass
class BuildReport:
    """What one build did (mutable: the build's stages fill it in)."""

    pages: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded_now: int = 0
    # texts whose vector came from a cache instead of the model: the local vector cache or, of
    # them, the team's shared one (stores/shared_embeddings.py)
    vectors_from_cache: int = 0
    vectors_from_shared: int = 0
    vectors: int = 0  # vectors held: one per chunk plus one per passage (index/passages.py)
    vectors_wanted: int = 0
    coverage: float = 0.0  # vectors / vectors_wanted
    passages_held: int = 0  # of those vectors: a note's (held) passages, and how many it should have
    passages_wanted: int = 0
    embedder: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    # seconds into the embedding stage when every vector a search scans was in (a note's held
    # passages, which only re-rank, follow): search found everything by meaning from then on
    searched_ready_s: float | None = None
    # the detached job a build left a note's held passages to (index/passages_job.py): {"pid",
    # "started" (by this build, or one already running), "passages" (left to it), "log"}; None: none
    passages_job: dict[str, Any] | None = None

    def split_coverage(self) -> tuple[float, float | None]:
        """(searched coverage, passage coverage), see ``coverage_split``."""
        return coverage_split(self.vectors, self.vectors_wanted, self.passages_held, self.passages_wanted)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["coverage"] = round(self.coverage, 4)
        data["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        if self.searched_ready_s is not None:
            data["searched_ready_s"] = round(self.searched_ready_s, 3)
        return data

    def summary(self) -> str:
        total = sum(self.seconds.values())
        parts = [f"{self.pages} pages, {self.chunks} chunks",
                 f"{self.added} added, {self.changed} changed, {self.removed} removed, {self.unchanged} unchanged"]
        if self.embedder and not self.vectors_wanted and self.chunks:  # `index --no-embed`: nothing counted yet
            parts.append(f"vectors not computed ({self.vectors} in the cache; `wikimem index` without --no-embed, "
                         "or the watcher, embeds them)")
        elif self.embedder:
            passages = f", note passages {self.passages_held}/{self.passages_wanted}" if self.passages_wanted else ""
            shared = f" ({self.vectors_from_shared} from the shared cache)" if self.vectors_from_shared else ""
            cached = f", {self.vectors_from_cache} from the cache{shared}" if self.vectors_from_cache else ""
            share = f"{self.coverage:.0%}" if not self.passages_job else f"chunks {self.split_coverage()[0]:.0%}"
            parts.append(f"vectors {self.vectors}/{self.vectors_wanted} ({share}{passages}), "
                         f"{self.embedded_now} embedded now{cached}")
        else:
            parts.append("lexical only")
        ready = ""
        if self.searched_ready_s is not None and self.passages_wanted:  # the note passages came after
            ready = f" (every chunk searchable by meaning after {self.searched_ready_s:.1f} s of embedding)"
        line = "; ".join(parts) + f" in {total:.2f} s{ready}"
        job = self.passages_job
        if job:  # one more line: what still runs after this command returns
            how = "started in the background" if job.get("started") else "left to the background job already running"
            line += (f"\n{job['passages']:,} note passages (re-ranking only) {how} (pid {job['pid']}): "
                     "`wikimem status` shows their progress, `wikimem index --wait` waits for them")
        return line


@dataclass(frozen=True)
class Skipped:
    """A file the scan passed over, and why (reported, never fatal)."""

    path: str
    kind: str  # binary | too_large | not_utf8 | unreadable | symlink_loop | outside
    reason: str


# -- a Page as plain JSON-ready data (the manifest stores parsed pages; see stores/manifest.py) -----
_PAGE_PARTS = {"headings": Heading, "links": Link, "tags": Tag, "blocks": Block, "spans": BlockSpan}


def page_to_record(page: Page) -> dict[str, Any]:
    """Page -> nested lists/dicts (tuples become lists); ``page_from_record`` inverts it exactly."""
    record: dict[str, Any] = {}
    for name, value in page.__dict__.items():
        if name == "frontmatter":
            value = {"raw": value.raw, "data": dict(value.data), "error": value.error, "end_line": value.end_line}
        elif name in _PAGE_PARTS:
            value = [list(part.__dict__.values()) for part in value]
        elif isinstance(value, tuple):
            value = list(value)
        record[name] = value
    return record


def _part_maker(cls: type) -> Any:
    """A fast constructor for one part class from its record row: 10k pages hold ~300k parts, and a
    frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) would dominate loading.
    Rows shorter than the class (an older record) go through ``__init__`` so defaults apply."""
    names = tuple(cls.__dataclass_fields__)
    tuples = tuple(n for n, f in cls.__dataclass_fields__.items() if str(f.type).startswith("tuple"))
    new = object.__new__

    def make(row: list) -> Any:
        if len(row) != len(names):
            return cls(*(tuple(v) if isinstance(v, list) else v for v in row))
        values = dict(zip(names, row))
        for name in tuples:
            values[name] = tuple(values[name])
        obj = new(cls)
        obj.__dict__.update(values)
        return obj
    return make


_PART_MAKERS = {name: _part_maker(cls) for name, cls in _PAGE_PARTS.items()}
_PAGE_TUPLES = ("aliases", "supersedes", "errors")


def page_from_record(record: Mapping[str, Any]) -> Page:
    values = {k: v for k, v in record.items() if k in Page.__dataclass_fields__}
    front = values.get("frontmatter") or {}
    values["frontmatter"] = Frontmatter(front.get("raw"), front.get("data") or {}, front.get("error"),
                                        front.get("end_line", 0))
    for name, make in _PART_MAKERS.items():
        values[name] = tuple(map(make, values.get(name, ())))
    for name in _PAGE_TUPLES:
        values[name] = tuple(values.get(name, ()))
    if len(values) != len(Page.__dataclass_fields__):
        return Page(**values)  # an older record without some field: the defaults apply
    page = object.__new__(Page)
    page.__dict__.update(values)
    return page


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as null (they are not JSON): what ``--json`` output and the
    MCP stdio server send, so both always parse."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
