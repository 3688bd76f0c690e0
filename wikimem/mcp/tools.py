"""The tools, bound to one open vault: each method is one tool (name = method name), one call into
``wikimem.api.Vault``, its arguments described for the agent and its result typed in schemas.py."""
from __future__ import annotations

import dataclasses
import threading
from typing import Annotated, Any, Literal, Optional

from pydantic import Field

from ..errors import UsageError
from ..vault.files import rel_parts
from .schemas import (
    MAX_QUERY,
    AsOf,
    Codes,
    D,
    EditResult,
    Folder,
    Limit,
    ListResult,
    PageResult,
    Passages,
    Path_,
    QueryResult,
    RecallResult,
    Question,
    Reason,
    RememberResult,
    SearchResult,
    Sha,
    Tags,
    Type_,
    WriteResult,
)


def plain(value: Any) -> Any:
    """Results as JSON-ready data: dataclasses, to_dict(), tuples and sets become dicts and lists."""
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _reason(given: str | None, default: str) -> str:
    """The log line's reason: the agent's, or what the tool did when it gave none (or only blanks)."""
    return (given or "").strip() or default


def _filters(folder: str | None, type: str | None, tags: list[str] | None) -> dict[str, Any]:
    return {k: v for k, v in (("folder", folder), ("type", type), ("tags", tags)) if v}


class Tools:
    """The tools, bound to one open vault. Each method is one tool (name = method name)."""

    def __init__(self, vault):
        self.vault = vault
        self._write = threading.Lock()  # one agent write at a time in this server

    # -- reading ------------------------------------------------------------------------------
    def search(self, query: Annotated[str, Field(max_length=MAX_QUERY, description=(
                   'Any language. Operators: tag:a/b path:dir file:name "phrase" -word x OR y '
                   '[type:concept] [updated:>2026-01-01]'))],
               top_k: Limit = 8,
               mode: Annotated[Literal["hybrid", "lexical", "vector"], D("Rankers to use.")] = "hybrid",
               include_superseded: Annotated[bool, D("Also pages a newer version replaced.")] = False,
               include_meta: Annotated[bool, D("Also index.md, log.md, communities.md.")] = False,
               full_text: Annotated[bool, D("Also text, passage, found_by, components, uri.")] = False,
               folder: Folder = None, type: Type_ = None, tags: Tags = None,
               since: Annotated[Optional[str], D("Updated on or after YYYY-MM-DD.")] = None,
               until: Annotated[Optional[str], D("Updated on or before YYYY-MM-DD.")] = None,
               as_of: AsOf = None
               ) -> SearchResult:
        """Hybrid search: one hit per page, best first. Memories (notes under memories/) are searched
        too; a memory hit has its created date and conflicts_with (active memories it may
        contradict). Superseded pages and memories are hidden unless include_superseded."""
        from ..agent.pages import excerpt, name_clashes, wikilink
        dates = {k: v for k, v in (("since", since), ("until", until), ("as_of", as_of)) if v}
        result = self.vault.search(query, limit=top_k, mode=mode, include_superseded=include_superseded,
                                   include_meta=include_meta, **_filters(folder, type, tags), **dates)
        hits, clashes = [], name_clashes(self.vault.ctx)
        for h in result.hits:
            heading = " > ".join(h.heading_path)
            hit = {"path": h.path, "title": h.title, "wikilink": wikilink(h.path, clashes),
                   "score": round(h.score, 3), "type": h.type}
            if heading and heading != h.title:
                hit["heading"] = heading
            if h.status != "active":
                hit["status"] = h.status
            if h.line:
                hit["line"] = h.line  # where the shown text starts in the file (path:line)
            if h.version:
                hit["version"] = {k: v for k, v in h.version.items() if k != "chain"}
            if h.created:
                hit["created"] = h.created
            if h.conflicts_with:
                hit["conflicts_with"] = list(h.conflicts_with)
            if full_text:
                hit.update(text=h.text, found_by=list(h.found_by), components=dict(h.components), uri=h.uri)
                if h.passage:
                    hit["passage"] = h.passage
            else:  # one excerpt, the best one: the passage already is the part of the chunk that matched
                hit["excerpt"] = excerpt(h.passage) if h.passage else excerpt(h.text)
            hits.append(hit)
        return {"query": query, "mode": result.mode, "hits": hits, "degraded": list(result.degraded),
                "notices": list(result.notices)}

    def read_page(self, path: Path_,
                  heading: Annotated[Optional[str], D("Only this section: 'Heading' or 'H1#H2'.")] = None,
                  backlinks: Annotated[bool, D("List the pages linking here.")] = False,
                  frontmatter: Annotated[bool, D("Also the parsed frontmatter.")] = False) -> PageResult:
        """A page or one section, with its sha256 for writes."""
        page = self.vault.read_page(path, heading=heading)
        if not backlinks:
            page.pop("backlinks", None)
        if not frontmatter:
            page.pop("frontmatter", None)
        return page

    def list_pages(self, folder: Folder = None, type: Type_ = None,
                   tag: Annotated[Optional[str], D("Only notes with this tag or one under it.")] = None,
                   offset: Annotated[int, Field(ge=0, description="Skip this many.")] = 0,
                   limit: Annotated[int, Field(ge=1, le=500, description="Pages per answer.")] = 25) -> ListResult:
        """Notes by folder, type or tag, sorted by path; next_offset pages on."""
        return self.vault.list_pages(folder=folder, type=type, tag=tag, offset=offset, limit=limit)

    def taxonomy(self) -> dict[str, Any]:
        """Folders, page types, statuses and tags with counts; the SCHEMA.md summary."""
        return self.vault.taxonomy()

    def prime_context(self, prompt: Annotated[Optional[str], Field(max_length=20 * MAX_QUERY,
                                                                   description="The session's first prompt.")] = None,
                      cwd: Annotated[Optional[str], D("Working directory (names the project).")] = None,
                      budget_tokens: Annotated[int, Field(ge=50, le=20000, description="Briefing size.")] = 1500,
                      as_of: AsOf = None) -> dict[str, Any]:
        """Session-start briefing in a token budget: persona, instructions, recent facts, pages
        relevant to the project and prompt."""
        return self.vault.prime_context(cwd=cwd, prompt=prompt, budget_tokens=budget_tokens, as_of=as_of)

    def history(self, path: Path_, as_of: AsOf = None) -> dict[str, Any]:
        """A page's version chain, oldest first: when each version was valid (which one as_of a
        date), each one's changes and, in a git repository, its commits."""
        return self.vault.history(path, as_of=as_of)

    def neighbors(self, path: Path_, depth: Annotated[int, Field(ge=1, le=3, description="Links away.")] = 1,
                  fanout: Annotated[int, Field(ge=1, le=200, description="Max links per page.")] = 20,
                  types: Annotated[Optional[list[Literal["links_to", "embeds", "supersedes", "tagged"]]],
                                   D("Edge types (default: all).")] = None) -> dict[str, Any]:
        """Pages linked to or from a page within `depth` links, with link types."""
        return self.vault.neighbors(path, depth=depth, fanout=fanout, types=types)

    def related(self, path: Path_,
                limit: Annotated[int, Field(ge=1, le=50, description="Pages listed.")] = 10,
                unlinked: Annotated[bool, D("Only pages not yet linked with it.")] = False) -> dict[str, Any]:
        """Pages nearest a page by meaning (unlinked first), each with `linked` and the terms they share."""
        return plain(self.vault.related(path, limit=limit, include_linked=not unlinked))

    def recent(self, since: Annotated[str, D("How far back: 30m, 12h, 7d, 2w, or a date.")] = "7d",
               type: Type_ = None,
               limit: Annotated[int, Field(ge=1, le=200, description="Changes listed.")] = 20) -> dict[str, Any]:
        """Pages created, edited, superseded or written by wikimem lately, newest first, one line each."""
        return plain(self.vault.recent(since, types=[type] if type else None, limit=limit))

    def communities(self, resolution: Annotated[float, Field(gt=0, le=10, description="Higher: smaller clusters.")] = 1.0,
                    members: Annotated[int, Field(ge=0, le=1000, description="Members listed per community.")] = 5
                    ) -> dict[str, Any]:
        """Topic clusters of the link graph: label, size, hubs, tags, members."""
        report = plain(self.vault.communities(resolution=resolution))
        for community in report.get("communities", []):
            community["members_total"] = len(community.get("members", []))
            community["members"] = community.get("members", [])[:members]
        return report

    def review(self, paths: Annotated[Optional[list[str]], D("Only these pages (default: all).")] = None
               ) -> dict[str, Any]:
        """Stale compiled pages: a cited text or file changed since the page was written (with the
        quoted sentences that changed and what the source says now), a cited page went or was
        superseded. refresh_stale re-answers a query page."""
        return plain(self.vault.review(paths))

    def refresh_stale(self, paths: Annotated[Optional[list[str]], D("The stale query pages to re-answer.")] = None,
                      all: Annotated[bool, D("Every stale query page.")] = False) -> dict[str, Any]:
        """Ask stale query pages' questions again: only the marked answer section is rewritten (a
        person's lines kept); says which answer sentences went and came."""
        with self._write:
            return plain(self.vault.refresh_stale(paths or (), every=all))

    def compile(self, sources: Annotated[Optional[list[str]], D("Only the pages these sources (raw/ files or "
                                                                 "their sources/ pages) speak about.")] = None,
                dry_run: Annotated[bool, D("Say what would be written; write nothing.")] = False) -> dict[str, Any]:
        """Write what the sources under raw/ say into entity and concept pages (one marked section per
        page, each sentence cited; new pages past SCHEMA.md's threshold). Sentences that contradict a
        page are held back and listed (review lists them too). Run it after ingesting sources."""
        with self._write:
            return plain(self.vault.compile(sources or (), dry_run=dry_run))

    def lint(self, paths: Annotated[Optional[list[str]], D("Files or folders (default: all).")] = None,
             select: Codes = None, ignore: Annotated[Optional[list[str]], D("Rule codes to skip.")] = None,
             limit: Annotated[int, Field(ge=0, le=2000, description="Findings listed.")] = 20) -> dict[str, Any]:
        """Check pages (links, frontmatter, versions, orphans, secrets...): summary and findings."""
        for rel in paths or ():
            if not self.vault.files.abspath(rel.rstrip("/") or ".").exists():  # a typo is not a clean report
                raise UsageError(f"no such file or folder in the vault: {rel}")
            if any(part.startswith(".") for part in rel_parts(rel)):  # .wikimem/manifest.sqlite is no page
                raise UsageError(f"{rel}: files under a dot folder are not part of the wiki; lint checks pages")
        report = plain(self.vault.lint(paths or (), select=select or (), ignore=ignore or ()))
        report["findings_total"] = len(report.get("findings", []))
        report["findings"] = report.get("findings", [])[:limit]
        return report

    def path(self, source: Annotated[str, D("From this page.")], target: Annotated[str, D("To this page.")],
             directed: Annotated[bool, D("Follow links only in their direction.")] = False) -> dict[str, Any]:
        """The shortest link path between two pages."""
        return plain(self.vault.path(source, target, directed=directed))

    def status(self) -> dict[str, Any]:
        """What the cache holds: pages, chunks, vector coverage, embedder, stale files."""
        return plain(self.vault.status())

    def stats(self) -> dict[str, Any]:
        """Vault counts: pages, links, orphans, hubs, communities, memories, vector coverage."""
        return self.vault.stats()

    def query_no_write(self, question: Question, k: Passages = 6, folder: Folder = None, type: Type_ = None,
                       tags: Tags = None, as_of: AsOf = None) -> QueryResult:
        """Answer a question from the vault with [[page#heading]] citations (read-only server: the
        answer is not filed back)."""
        when = {"as_of": as_of} if as_of else {}
        return plain(self.vault.query(question, k=k, write=False, **_filters(folder, type, tags), **when))

    # -- writing (absent with --read-only) ---------------------------------------------------------
    def query(self, question: Question, k: Passages = 6,
              write: Annotated[bool, D("File the answer under queries/ (when worth keeping).")] = False,
              folder: Folder = None, type: Type_ = None, tags: Tags = None,
              supersede: Annotated[bool, D("Replace the most similar query page.")] = False,
              as_of: AsOf = None
              ) -> QueryResult:
        """Answer from the vault with [[page#heading]] citations."""
        if not write or as_of:  # an answer about the past is given, never filed (qa/query.py)
            return self.query_no_write(question, k, folder, type, tags, as_of)
        with self._write:
            return plain(self.vault.query(question, k=k, write=True, supersede=supersede,
                                          **_filters(folder, type, tags)))

    def remember(self, fact: Annotated[str, D("One fact, a sentence or two.")],
                 kind: Annotated[Literal["persona", "episodic", "instruction", "decision"], D(
                     "persona and instruction: briefed by prime_context.")] = "episodic",
                 about: Annotated[Optional[str], D("The page it is about, e.g. '[[BM25]]'.")] = None,
                 source: Annotated[Optional[str], D("Its origin, e.g. a wikilink.")] = None,
                 keep_old: Annotated[bool, D("Keep an earlier fact this one updates (no supersede).")] = False
                 ) -> RememberResult:
        """Store a fact under memories/ (<= 2,000 characters): the same words in the same order are a
        duplicate (skipped); the same subject and attribute with a new value supersedes the earlier
        fact; unsure, both are kept and possible_update names the earlier one (settle it with
        supersede). The memory_llm setting makes a model judge. Secrets are refused."""
        from ..agent.guards import check_size
        check_size("fact", fact)
        with self._write:
            return plain(self.vault.remember(fact, kind=kind, about=about, source=source, supersede=not keep_old))

    def recall(self, kind: Annotated[Optional[Literal["persona", "episodic", "instruction", "decision"]],
                                     D("Only this kind.")] = None,
               about: Annotated[Optional[str], D("Only memories about this page or naming this word.")] = None,
               as_of: AsOf = None,
               all: Annotated[bool, D("Also superseded memories.")] = False) -> RecallResult:
        """The memories current now (or valid at as_of), newest first, with created dates, what each
        replaced and conflicts_with; no query needed."""
        found = self.vault.memories(kind=kind, about=about, as_of=as_of, include_all=all)
        return {"memories": found, "count": len(found)}

    def restore(self, path: Annotated[str, D("The superseded page (e.g. a memory replaced by mistake).")]
                ) -> dict[str, Any]:
        """Undo a supersede: the page is active again (logged)."""
        with self._write:
            return self.vault.restore(path).to_dict()

    def supersede(self, old: Annotated[str, D("The page being replaced.")],
                  new: Annotated[str, D("The page that replaces it.")],
                  old_sha256: Sha, new_sha256: Sha) -> dict[str, Any]:
        """Record that `new` replaces `old` (logged); `old` leaves default search."""
        with self._write:
            return self.vault.supersede(old, new, old_sha256=old_sha256, new_sha256=new_sha256)

    def write_page(self, path: Path_,
                   content: Annotated[str, D("The whole note: optional frontmatter, then Markdown.")],
                   expected_sha256: Annotated[Optional[str], D("From read_page; needed to replace a page.")] = None,
                   force: Annotated[bool, D("Replace the page even if it changed since read.")] = False,
                   reason: Reason = None) -> WriteResult:
        """Create or replace a note (atomic, logged, secrets refused); raw/ is read-only."""
        from ..agent.guards import check_content, check_note_path, expected_hash
        with self._write:
            rel = check_note_path(self.vault.ctx, path)
            check_content(rel, content)
            expected = expected_hash(self.vault.ctx, rel, expected_sha256, force)
            return plain(self.vault.write_page(rel, content, expected_sha256=expected,
                                              reason=_reason(reason, "agent write")))

    def edit_page(self, path: Path_,
                  operation: Annotated[Literal["append", "prepend", "replace_section", "find_replace"], D(
                      "prepend: after the frontmatter; replace_section: `heading`'s text becomes `content`; "
                      "find_replace: `find` becomes `content`.")],
                  expected_sha256: Sha,
                  content: Annotated[str, D("The new text.")] = "",
                  heading: Annotated[Optional[str], D("replace_section: the heading.")] = None,
                  find: Annotated[Optional[str], D("find_replace: the exact text.")] = None,
                  expected_count: Annotated[int, Field(ge=1, le=10000,
                                                       description="find_replace: matches required.")] = 1,
                  reason: Reason = None) -> EditResult:
        """Change part of a page (compare-and-swap, logged)."""
        from ..agent.guards import check_size
        check_size("content", content)
        with self._write:
            return plain(self.vault.edit_page(path, operation, expected_sha256=expected_sha256, content=content,
                                              heading=heading, find=find, expected_count=expected_count,
                                              reason=_reason(reason, "agent edit")))

    def move_page(self, path: Path_, new_path: Annotated[str, D("New path (.md); must not exist.")],
                  expected_sha256: Sha, reason: Reason = None) -> EditResult:
        """Rename a page and update the links to it."""
        with self._write:
            return plain(self.vault.move_page(path, new_path, expected_sha256=expected_sha256,
                                              reason=_reason(reason, "agent move")))

    def delete_page(self, path: Path_, expected_sha256: Sha, reason: Reason = None) -> EditResult:
        """Move a page to .trash/ (as Obsidian does); logged."""
        with self._write:
            return plain(self.vault.delete_page(path, expected_sha256=expected_sha256,
                                                reason=_reason(reason, "agent delete")))
