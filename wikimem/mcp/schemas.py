"""What goes in and out of the tools: argument types, and the results agents parse most as
TypedDicts, from which the SDK publishes each tool's output schema and validates every result.

Field descriptions are few and short on purpose: the tool list is part of every agent's context,
so a field whose name says what it is carries no description. ``typing_extensions.TypedDict``:
pydantic needs it below Python 3.12. A result key missing here is still sent (results are not
trimmed to the schema, which leaves ``additionalProperties`` open); a listed key with the wrong
type, or a required one missing, is an error result instead of a silently wrong answer.
"""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

MAX_QUERY = 4000  # characters: a search or a question longer than this is a mistake, not a query
MAX_REASON = 500  # characters of a write's reason (log.md keeps 200 of them)


def D(text: str) -> Any:  # noqa: N802 - reads as a type annotation's metadata
    """A field's description."""
    return Field(description=text)


# -- arguments ----------------------------------------------------------------------------------
Path_ = Annotated[str, D("e.g. concepts/BM25.md")]
Limit = Annotated[int, Field(ge=1, le=50, description="How many results.")]
Folder = Annotated[Optional[str], D("Only notes under this folder.")]
Type_ = Annotated[Optional[str], D("Only this page type.")]
Tags = Annotated[Optional[list[str]], D("Only notes with all these tags.")]
AsOf = Annotated[Optional[str], D("What the vault held then: pages valid on YYYY-MM-DD (to its end) or at "
                                  "YYYY-MM-DDTHH:MM, old versions included when current then.")]
Reason = Annotated[Optional[str], Field(max_length=MAX_REASON, description="One line for log.md.")]
Sha = Annotated[str, D("From read_page.")]
Question = Annotated[str, Field(max_length=MAX_QUERY, description="Any language.")]
Passages = Annotated[int, Field(ge=1, le=20, description="Passages to answer from.")]
Codes = Annotated[Optional[list[str]], D("Rule code prefixes, e.g. WM1.")]


# -- results ------------------------------------------------------------------------------------
class Similar(TypedDict):
    path: str
    similarity: float


class Hit(TypedDict):
    path: str
    title: str
    wikilink: str
    score: float
    type: str
    heading: NotRequired[Annotated[str, D("When not the title.")]]
    status: NotRequired[Annotated[str, D("When not active.")]]
    line: NotRequired[int]
    excerpt: NotRequired[Annotated[str, D("The passage nearest the query, else the chunk's start.")]]
    text: NotRequired[str]
    passage: NotRequired[str]
    found_by: NotRequired[list[str]]
    components: NotRequired[dict[str, Any]]
    uri: NotRequired[str]
    version: NotRequired[Annotated[dict[str, Any], D(
        "In a version chain (as_of, include_superseded): version, of, current, valid_from, valid_until.")]]
    created: NotRequired[Annotated[str, D("A memory's date: the newer of two conflicting facts is the later one.")]]
    conflicts_with: NotRequired[Annotated[list[str], D(
        "Active memories this one may contradict (a possible_update pair): settle with supersede.")]]


class SearchResult(TypedDict):
    query: str
    mode: str
    hits: list[Hit]
    degraded: list[str]
    notices: list[str]


class Heading(TypedDict):
    level: int
    text: str


class Link(TypedDict):
    path: str
    title: str
    wikilink: str


class Versions(TypedDict):
    supersedes: list[str]
    superseded_by: list[str]
    current: str


class PageResult(TypedDict):
    path: str
    title: str
    type: str
    status: str
    wikilink: str
    sha256: Annotated[str, D("Pass as expected_sha256 to write.")]
    content: str
    heading: Annotated[Optional[list[str]], D("The section's heading path.")]
    headings: list[Heading]
    tags: list[str]
    frontmatter: NotRequired[dict[str, Any]]
    frontmatter_error: Optional[str]
    backlinks: NotRequired[Optional[list[Link]]]
    backlinks_total: Optional[int]
    versions: Optional[Versions]
    notice: NotRequired[str]


class Listed(TypedDict):
    path: str
    title: str
    type: str
    status: str
    tags: list[str]
    wikilink: str


class ListResult(TypedDict):
    total: int
    offset: int
    limit: int
    next_offset: Optional[int]
    pages: list[Listed]


class WriteResult(TypedDict):
    path: str
    sha256: str
    created: bool
    warnings: list[str]
    similar: Annotated[list[Similar], D("Pages it may supersede.")]


class EditResult(TypedDict):
    path: str
    sha256: str
    operation: str
    replaced: int
    links_updated: list[str]
    moved_to: Optional[str]
    warnings: list[str]


class RememberResult(TypedDict):
    action: Annotated[str, D("written | duplicate | superseded (this fact was replaced before)")]
    path: str
    fact: str
    kind: str
    supersedes: Optional[str]
    possible_update: Annotated[list[str], D(
        "Earlier memories this fact may replace (unsure: both kept). supersede(old, path) if it does.")]
    judge: Annotated[str, D("rule | llm: what decided.")]
    source: Optional[str]
    similar: list[Similar]
    warnings: list[str]


class Memory(TypedDict):
    path: str
    fact: str
    kind: str
    created: Optional[str]
    replaced: Annotated[list[str], D("The memories this one superseded.")]
    conflicts_with: Annotated[list[str], D("Active memories it may contradict (possible_update).")]
    about: NotRequired[str]
    status: NotRequired[Annotated[str, D("superseded (with all=true or as_of).")]]
    superseded_by: NotRequired[Optional[str]]
    superseded_on: NotRequired[Optional[str]]


class RecallResult(TypedDict):
    memories: list[Memory]
    count: int


class Citation(TypedDict):
    link: str
    path: str
    heading: Optional[str]
    block: Optional[str]
    chunk_sha256: str
    title: str


class Retrieved(TypedDict):
    path: str
    heading_path: list[str]
    score: float


class QueryResult(TypedDict):
    question: str
    mode: str
    answered: bool
    answer: str
    citations: list[Citation]
    notices: list[str]
    flags: list[str]
    page: Annotated[Optional[str], D("The query page written.")]
    page_status: str
    similar: list[Similar]
    matched: Optional[str]
    retrieved: list[Retrieved]
