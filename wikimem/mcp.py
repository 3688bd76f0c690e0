"""The MCP server: ``wikimem mcp VAULT`` over stdio, for Claude Code, Cursor, Codex and any client.

Thin by design: every tool is one call into ``wikimem.api.Vault`` and returns plain JSON. The
server keeps the vault open (warm cache, embedder loaded in the background), writes nothing to
stdout but protocol (logs go to stderr), turns every failure into an MCP tool error with a
readable message, serialises writes, and with ``read_only`` does not even list the write tools.
Tools whose API is not in this build (``Vault`` lacks the method) are simply not offered.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import threading
import time
from contextlib import contextmanager
from typing import Annotated, Any, Callable, Iterator, Literal, Optional

from pydantic import Field

from . import __version__
from .errors import LockError, UsageError, WikimemError
from .vault.files import rel_parts

log = logging.getLogger(__name__)

INSTRUCTIONS = """wikimem: an Obsidian vault as long-term memory.
Start a session with prime_context. Use search (compact hits; full_text=true for whole chunks) and
read_page before answering from memory. read_page returns sha256: pass it as expected_sha256 to
write_page so an edit made meanwhile is never overwritten. Link pages with the wikilinks results give.
raw/ holds immutable sources and cannot be written."""

Path_ = Annotated[str, Field(description="e.g. concepts/BM25.md")]
MAX_QUERY = 4000  # characters: a search or a question longer than this is a mistake, not a query
MAX_REASON = 500  # characters of a write's reason (log.md keeps 200 of them)
LOCK_WAIT_S = 30.0  # how long a tool waits for a build that holds the cache (the first one, mostly)
Limit = Annotated[int, Field(ge=1, le=50, description="How many results.")]


def _plain(value: Any) -> Any:
    """Results as JSON-ready data: dataclasses, to_dict(), tuples and sets become dicts and lists."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _when_unlocked(fn: Callable[..., Any], args, kwargs) -> Any:
    """Call ``fn``; while a first build holds the cache (LockError), wait for it a while."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return fn(*args, **kwargs)
        except LockError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class FirstBuildGate:
    """While the vault has no usable cache yet, a tool call waits (a while) for the background first
    build and calls go one at a time: concurrent calls would each try to bootstrap the cache."""

    def __init__(self, vault, ready: threading.Event | None = None):
        self.vault = vault
        self.ready = ready
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        try:
            problem = self.vault.cache.manifest_problem()
        except Exception:  # noqa: BLE001 - whatever it is, go the careful way
            problem = "unreadable"
        if problem is None:
            yield
            return
        if self.ready is not None:  # until the background start has committed a lexical index, not longer
            deadline = time.monotonic() + LOCK_WAIT_S
            while not self.ready.is_set() and time.monotonic() < deadline:
                if self.ready.wait(0.05):
                    break
                try:  # a first build's manifest exists before its first commit: wait for that commit
                    if self.vault.cache.manifest_problem() is None and not self.vault.cache.meta().get("dirty"):
                        break
                except Exception:  # noqa: BLE001 - keep waiting the careful way
                    pass
        with self._lock:
            yield


def _compact(data: Any) -> Any:
    """A result as the client gets it: the structured content, and as text the same JSON without
    indentation (the SDK's default indents it, 10-50 % more of an agent's context for nothing)."""
    from mcp.types import CallToolResult, TextContent
    if not isinstance(data, dict):
        return data
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def lean_schema(schema: Any) -> Any:
    """An input schema as an agent needs to read it: no generated titles ("Top K"), an optional
    argument as its own type (not anyOf with null and a null default), one-line descriptions."""
    if isinstance(schema, list):
        return [lean_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: lean_schema(v) for k, v in schema.items() if k != "title"}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options and out.get("default", 0) is None:
        (inner,) = [o for o in options if o != {"type": "null"}]
        out.pop("anyOf")
        out.pop("default")
        out = {**inner, **out}
    if isinstance(out.get("description"), str):
        out["description"] = " ".join(out["description"].split())
    return out


def _tool_error(fn: Callable[..., Any], wait_for_lock: bool, gate: FirstBuildGate) -> Callable[..., Any]:
    """Run a tool; any failure becomes a ToolError (an MCP error result), never a traceback.
    ``wait_for_lock``: retry while a build holds the cache (reads only: a write is never repeated)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with gate():
                return _compact(_plain(_when_unlocked(fn, args, kwargs) if wait_for_lock else fn(*args, **kwargs)))
        except WikimemError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("tool %s failed: %s", fn.__name__, exc)
            raise ToolError(f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the server must survive anything a tool does
            log.exception("tool %s crashed", fn.__name__)
            raise ToolError(f"internal error in {fn.__name__} ({type(exc).__name__}: {exc}); "
                            "the server is still running") from None
    return run


def _filters(folder: str | None, type: str | None, tags: list[str] | None) -> dict[str, Any]:
    return {k: v for k, v in (("folder", folder), ("type", type), ("tags", tags)) if v}


class Tools:
    """The tools, bound to one open vault. Each method is one tool (name = method name)."""

    def __init__(self, vault):
        self.vault = vault
        self._write = threading.Lock()  # one agent write at a time in this server

    # -- reading ------------------------------------------------------------------------------
    def search(self, query: Annotated[str, Field(max_length=MAX_QUERY, description="What to look for, any language.")],
               top_k: Limit = 8,
               mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
               folder: Optional[str] = None, type: Optional[str] = None,
               tags: Annotated[Optional[list[str]], Field(description="All these tags.")] = None,
               since: Annotated[Optional[str], Field(description="YYYY-MM-DD or later.")] = None,
               until: Annotated[Optional[str], Field(description="YYYY-MM-DD or earlier.")] = None,
               include_superseded: bool = False,
               include_meta: Annotated[bool, Field(description="Also index.md, log.md, communities.md.")] = False,
               full_text: Annotated[bool, Field(description="Whole chunk, passage and score parts.")] = False) -> dict[str, Any]:
        """Hybrid search of the vault. Hits: path, title, wikilink, score, type, heading, and an
        excerpt: the passage nearest the query, else the chunk's first ~300 characters."""
        from .agent.pages import excerpt, name_clashes, wikilink
        result = self.vault.search(query, limit=top_k, mode=mode, folder=folder, type=type, tags=tags,
                                   since=since, until=until, include_superseded=include_superseded,
                                   include_meta=include_meta)
        hits, clashes = [], name_clashes(self.vault)
        for h in result.hits:
            heading = " > ".join(h.heading_path)
            hit = {"path": h.path, "title": h.title, "wikilink": wikilink(h.path, clashes),
                   "score": round(h.score, 3), "type": h.type}
            if heading and heading != h.title:
                hit["heading"] = heading
            if h.status != "active":
                hit["status"] = h.status
            if full_text:
                hit.update(text=h.text, found_by=list(h.found_by), components=dict(h.components), uri=h.uri)
                if h.passage:
                    hit["passage"] = h.passage
            else:  # one excerpt, the best one: the passage already is the part of the chunk that matched
                hit["excerpt"] = excerpt(h.passage) if h.passage else excerpt(h.text)
            hits.append(hit)
        return {"query": query, "mode": result.mode, "hits": hits, "degraded": list(result.degraded),
                "notices": list(result.notices)}

    def read_page(self, path: Path_, heading: Annotated[Optional[str], Field(
            description="Only this section: a heading text or a path 'H1#H2'.")] = None,
                  backlinks: Annotated[bool, Field(description="List the pages linking here.")] = False,
                  frontmatter: Annotated[bool, Field(description="Also the parsed frontmatter.")] = False) -> dict[str, Any]:
        """A page or one section: content, sha256 (for writes), title, type, tags, headings, versions,
        backlinks_total."""
        page = self.vault.read_page(path, heading=heading)
        if not backlinks:
            page.pop("backlinks", None)
        if not frontmatter:
            page.pop("frontmatter", None)
        return page

    def list_pages(self, folder: Optional[str] = None, type: Optional[str] = None, tag: Optional[str] = None,
                   offset: Annotated[int, Field(ge=0, le=10**9)] = 0,
                   limit: Annotated[int, Field(ge=1, le=500, description="Pages per answer (next_offset for "
                                                                   "more).")] = 25) -> dict[str, Any]:
        """Notes by folder, page type or tag, sorted by path, one page of results (next_offset for more)."""
        return self.vault.list_pages(folder=folder, type=type, tag=tag, offset=offset, limit=limit)

    def taxonomy(self) -> dict[str, Any]:
        """Folders, page types, statuses and tags with note counts, and the SCHEMA.md summary."""
        return self.vault.taxonomy()

    def prime_context(self, prompt: Annotated[Optional[str], Field(max_length=20 * MAX_QUERY,
                                                                   description="The session's first prompt.")] = None,
                      cwd: Annotated[Optional[str], Field(description="The agent's working directory "
                                                                      "(its name is the project).")] = None,
                      budget_tokens: Annotated[int, Field(ge=50, le=20000)] = 1500) -> dict[str, Any]:
        """Session-start briefing within a token budget: the vault's domain, persona and instruction
        memories, the pages relevant to the project and prompt."""
        return self.vault.prime_context(cwd=cwd, prompt=prompt, budget_tokens=budget_tokens)

    def history(self, path: Path_) -> dict[str, Any]:
        """The version chain a page belongs to, oldest to newest, with what changed between versions."""
        return self.vault.history(path)

    def neighbors(self, path: Path_, depth: Annotated[int, Field(ge=1, le=3)] = 1,
                  fanout: Annotated[int, Field(ge=1, le=200, description="At most this many links per page.")] = 20,
                  types: Annotated[Optional[list[Literal["links_to", "embeds", "supersedes", "tagged"]]], Field(
                      description="Edge types to follow (default: all).")] = None) -> dict[str, Any]:
        """Pages linked to or from a page within `depth` links, with the link types and weights."""
        return self.vault.neighbors(path, depth=depth, fanout=fanout, types=types)

    def communities(self, resolution: Annotated[float, Field(gt=0, le=10)] = 1.0,
                    members: Annotated[int, Field(ge=0, le=1000, description="Member paths listed per "
                                                                             "community (members_total counts "
                                                                             "them all).")] = 5) -> dict[str, Any]:
        """Topic clusters of the link graph (Leiden, seeded): label, size, hubs, tags and members of each."""
        report = _plain(self.vault.communities(resolution=resolution))
        for community in report.get("communities", []):
            community["members_total"] = len(community.get("members", []))
            community["members"] = community.get("members", [])[:members]
        return report

    def lint(self, paths: Annotated[Optional[list[str]], Field(description="Files or folders to report on "
                                                                           "(default: the whole vault).")] = None,
             select: Optional[list[str]] = None, ignore: Optional[list[str]] = None,
             limit: Annotated[int, Field(ge=0, le=2000, description="Findings listed at most (the summary "
                                                                    "counts them all).")] = 20) -> dict[str, Any]:
        """Check pages (links, frontmatter, versions, orphans, secrets...): a summary and findings."""
        for rel in paths or ():
            if not self.vault.files.abspath(rel.rstrip("/") or ".").exists():  # a typo is not a clean report
                raise UsageError(f"no such file or folder in the vault: {rel}")
            if any(part.startswith(".") for part in rel_parts(rel)):  # .wikimem/manifest.sqlite is no page
                raise UsageError(f"{rel}: files under a dot folder are not part of the wiki; lint checks pages")
        report = _plain(self.vault.lint(paths or (), select=select or (), ignore=ignore or ()))
        report["findings_total"] = len(report.get("findings", []))
        report["findings"] = report.get("findings", [])[:limit]
        return report

    def stats(self) -> dict[str, Any]:
        """Vault counts from the cache: pages, links, orphans, hubs, communities, memories, vector coverage."""
        return self.vault.stats()

    def query_no_write(self, question: Annotated[str, Field(max_length=MAX_QUERY, description="Any language.")],
                       k: Annotated[int, Field(ge=1, le=20, description="Passages to answer from.")] = 6,
                       folder: Optional[str] = None, type: Optional[str] = None,
                       tags: Optional[list[str]] = None) -> dict[str, Any]:
        """Answer a question from the vault with [[page#heading]] citations (read-only server: the
        answer is not filed back)."""
        return self.vault.query(question, k=k, write=False, **_filters(folder, type, tags))

    # -- writing (absent with --read-only) ---------------------------------------------------------
    def query(self, question: Annotated[str, Field(max_length=MAX_QUERY, description="Any language.")],
              k: Annotated[int, Field(ge=1, le=20, description="Passages to answer from.")] = 6,
              write: Annotated[bool, Field(description="File the answer back as queries/<question>.md: say true "
                                                       "when the answer is worth keeping (default: answer only).")] = False,
              folder: Optional[str] = None, type: Optional[str] = None,
              tags: Optional[list[str]] = None,
              supersede: Annotated[bool, Field(description="The query page written replaces the most similar "
                                                           "active query page (listed in 'similar' either way).")] = False
              ) -> dict[str, Any]:
        """Answer from the vault with [[page#heading]] citations; write=true files it as a query page."""
        if not write:
            return self.query_no_write(question, k, folder, type, tags)
        with self._write:
            return self.vault.query(question, k=k, write=True, supersede=supersede, **_filters(folder, type, tags))

    def remember(self, fact: Annotated[str, Field(description="One atomic fact, in a sentence or two.")],
                 kind: Literal["persona", "episodic", "instruction", "decision"] = "episodic",
                 about: Annotated[Optional[str], Field(description="The page it is about, e.g. '[[BM25]]'.")] = None,
                 source: Annotated[Optional[str], Field(description="Where it came from, e.g. a wikilink.")] = None
                 ) -> dict[str, Any]:
        """Store a fact as a note under memories/ (kind persona and instruction ones are briefed by
        prime_context). A duplicate is not written again; a fact updating one about the same subject
        supersedes it. Secrets are refused."""
        from .agent.guards import check_size
        check_size("fact", fact)
        with self._write:
            return self.vault.remember(fact, kind=kind, about=about, source=source)

    def supersede(self, old: Annotated[str, Field(description="The page being replaced.")],
                  new: Annotated[str, Field(description="The page that replaces it.")],
                  old_sha256: Annotated[str, Field(description="From read_page.")],
                  new_sha256: Annotated[str, Field(description="From read_page.")]
                  ) -> dict[str, Any]:
        """Record that `new` replaces `old` (both frontmatters, logged); `old` leaves default search."""
        with self._write:
            return self.vault.supersede(old, new, old_sha256=old_sha256, new_sha256=new_sha256)

    def write_page(self, path: Path_,
                   content: Annotated[str, Field(description="The whole note: optional YAML frontmatter, then Markdown.")],
                   expected_sha256: Annotated[Optional[str], Field(
                       description="sha256 from read_page; required to replace an existing page.")] = None,
                   force: Annotated[bool, Field(description="Replace the page even if it changed since read.")] = False,
                   reason: Annotated[str, Field(max_length=MAX_REASON, description="One line for log.md.")] = "agent write") -> dict[str, Any]:
        """Create or replace a note (secret-scanned, atomic, logged). Replacing needs read_page's
        sha256 unless force; raw/ is read-only; 1 MiB at most."""
        from .agent.guards import check_content, check_note_path, expected_hash
        with self._write:
            rel = check_note_path(self.vault, path)
            check_content(rel, content)
            expected = expected_hash(self.vault, rel, expected_sha256, force)
            return self.vault.write_page(rel, content, expected_sha256=expected, reason=reason)

    def edit_page(self, path: Path_,
                  operation: Annotated[Literal["append", "prepend", "replace_section", "find_replace"], Field(
                      description="prepend goes after the frontmatter; replace_section: the text under `heading` "
                                  "becomes `content`; find_replace: `find` becomes `content`.")],
                  expected_sha256: Annotated[str, Field(description="From read_page.")],
                  content: str = "",
                  heading: Optional[str] = None,
                  find: Optional[str] = None,
                  expected_count: Annotated[int, Field(ge=1, le=10000, description="find_replace refuses "
                                                                                   "another count.")] = 1,
                  reason: Annotated[str, Field(max_length=MAX_REASON, description="One line for log.md.")] = "agent edit") -> dict[str, Any]:
        """Change part of a page without re-sending it (compare-and-swap, logged)."""
        from .agent.guards import check_size
        check_size("content", content)
        with self._write:
            return self.vault.edit_page(path, operation, expected_sha256=expected_sha256, content=content,
                                        heading=heading, find=find, expected_count=expected_count, reason=reason)

    def move_page(self, path: Path_,
                  new_path: Annotated[str, Field(description="The new vault-relative path (.md); must not exist.")],
                  expected_sha256: Annotated[str, Field(description="sha256 from read_page.")],
                  reason: Annotated[str, Field(max_length=MAX_REASON, description="One line for log.md.")] = "agent move") -> dict[str, Any]:
        """Rename a page and update the links to it."""
        with self._write:
            return self.vault.move_page(path, new_path, expected_sha256=expected_sha256, reason=reason)

    def delete_page(self, path: Path_,
                    expected_sha256: Annotated[str, Field(description="sha256 from read_page.")],
                    reason: Annotated[str, Field(max_length=MAX_REASON, description="One line for log.md.")] = "agent delete") -> dict[str, Any]:
        """Move a page to the vault's .trash/ (as Obsidian does); logged."""
        with self._write:
            return self.vault.delete_page(path, expected_sha256=expected_sha256, reason=reason)


# (tool name, Tools method, the Vault method it wraps, when offered: "read" always, "write" only
# without --read-only, "read-only" only with it). A tool whose Vault method is missing is not offered.
SPECS = (
    ("search", "search", "search", "read"),
    ("read_page", "read_page", "read_page", "read"),
    ("list_pages", "list_pages", "list_pages", "read"),
    ("taxonomy", "taxonomy", "taxonomy", "read"),
    ("prime_context", "prime_context", "prime_context", "read"),
    ("history", "history", "history", "read"),
    ("query", "query", "query", "write"),
    ("query", "query_no_write", "query", "read-only"),
    ("neighbors", "neighbors", "neighbors", "read"),
    ("communities", "communities", "communities", "read"),
    ("lint", "lint", "lint", "read"),
    ("stats", "stats", "stats", "read"),
    ("write_page", "write_page", "write_page", "write"),
    ("edit_page", "edit_page", "edit_page", "write"),
    ("move_page", "move_page", "move_page", "write"),
    ("delete_page", "delete_page", "delete_page", "write"),
    ("remember", "remember", "remember", "write"),
    ("supersede", "supersede", "supersede", "write"),
)


def available(vault, read_only: bool) -> list[tuple[str, str, bool]]:
    """(tool name, Tools method, writes?) this build offers, in SPECS order."""
    wanted = ("read", "read-only") if read_only else ("read", "write")
    return [(name, method, when == "write") for name, method, api, when in SPECS
            if when in wanted and hasattr(vault, api)]


class RejectUnknownArguments:
    """Middleware: a tools/call with an argument the tool does not take is an error, not ignored
    (an agent misspelling ``expected_sha256`` must not silently lose its conflict check)."""

    def __init__(self, allowed: dict[str, set[str]]):
        self.allowed = allowed

    async def __call__(self, ctx, call_next):
        if ctx.method == "tools/call" and ctx.params:
            name = ctx.params.get("name")
            args = ctx.params.get("arguments") or {}
            if name in self.allowed and isinstance(args, dict):
                unknown = sorted(set(args) - self.allowed[name])
                if unknown:
                    from mcp.types import CallToolResult, TextContent
                    takes = ", ".join(sorted(self.allowed[name])) or "no arguments"
                    text = f"{name}: unknown argument(s) {', '.join(unknown)} (it takes: {takes})"
                    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)


class HandshakeDone:
    """Middleware: sets ``event`` when the client has started using the server (its tools listed or
    a tool called), so the background warm-up starts after the handshake instead of competing with
    it for the interpreter (start-to-ready)."""

    def __init__(self, event: threading.Event):
        self.event = event

    async def __call__(self, ctx, call_next):
        if ctx.method == "tools/call":
            self.event.set()  # a call may wait for the warm-up: never make it wait for this too
        try:
            return await call_next(ctx)
        finally:
            if ctx.method.startswith("tools/"):
                self.event.set()


DESTRUCTIVE = frozenset({"supersede", "write_page", "edit_page", "move_page", "delete_page"})  # they change or replace pages an agent did not create


def build_server(vault, read_only: bool = False, lifespan=None, ready: threading.Event | None = None,
                 started: threading.Event | None = None):
    """An MCPServer whose tools call into ``vault``; ``ready`` is set when the background start-up
    has brought the cache up to date (calls wait for it only while there is no cache at all)."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    tools = Tools(vault)
    gate = FirstBuildGate(vault, ready)
    offered = available(vault, read_only)
    allowed = {name: set(inspect.signature(getattr(tools, method)).parameters) for name, method, _ in offered}
    middleware: list[Any] = [RejectUnknownArguments(allowed)]
    if started is not None:
        middleware.insert(0, HandshakeDone(started))
    server = MCPServer("wikimem", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
                       middleware=middleware)
    for name, method, writes in offered:
        server.add_tool(_tool_error(getattr(tools, method), wait_for_lock=not writes, gate=gate), name=name,
                        description=" ".join((getattr(tools, method).__doc__ or "").split()),
                        structured_output=False,  # results are dicts: an output schema of {"type": "object"} says nothing
                        annotations=ToolAnnotations(read_only_hint=not writes, destructive_hint=name in DESTRUCTIVE,
                                                    open_world_hint=False))
        tool = server._tool_manager.get_tool(name)  # the SDK has no hook for the advertised schema
        if tool is not None:
            tool.parameters = lean_schema(tool.parameters)
    add_resources_and_prompts(server, vault)
    return server


def page_resource_text(vault, path: str, lines: str = "") -> str:
    """A page's text, or lines ``a-b`` of it (1-based, inclusive), for ``wikimem://page/...``."""
    from .agent.pages import note_path
    rel = note_path(vault, path)
    if any(part.startswith(".") for part in rel_parts(rel)):
        raise UsageError(f"{rel}: files under a dot folder are not part of the wiki")
    text = vault.files.read_note(rel).text.replace("\r\n", "\n")
    if not lines:
        return text
    try:
        first, _, last = lines.partition("-")
        start, end = int(first), int(last or first)
    except ValueError:
        raise UsageError(f"lines={lines!r}: give a range such as 10-40") from None
    if start < 1 or end < start:
        raise UsageError(f"lines={lines!r}: give a range such as 10-40")
    return "\n".join(text.split("\n")[start - 1:end]) + "\n"


def add_resources_and_prompts(server, vault) -> None:
    """Pages as resources (``wikimem://page/<path>``, ``?lines=a-b``; SCHEMA.md and index.md as
    ``wikimem://schema`` and ``wikimem://index``) and the wiki's workflows as prompts, read from
    AGENTS.md (agent/workflows.py), so an agent new to wikimem maintains the wiki as it describes."""
    from .agent.workflows import WORKFLOWS, workflow

    @server.resource("wikimem://page/{+path}{?lines}", name="page", mime_type="text/markdown",
                     description="A note of the vault by its path; ?lines=10-40 for part of it.")
    def page(path: str, lines: str = "") -> str:
        return page_resource_text(vault, path, lines)

    @server.resource("wikimem://schema", name="schema", mime_type="text/markdown",
                     description="SCHEMA.md: the wiki's domain, tags, naming and page thresholds.")
    def schema() -> str:
        return page_resource_text(vault, "SCHEMA.md")

    @server.resource("wikimem://index", name="index", mime_type="text/markdown",
                     description="index.md: one line per page, by type.")
    def index() -> str:
        return page_resource_text(vault, "index.md")

    @server.prompt(name="ingest_source", description="Ingest a source from raw/ and update the pages it touches.")
    def ingest_source(path: str = "") -> str:
        return workflow(vault, "ingest_source", f"the source {path}." if path else "")

    @server.prompt(name="answer_and_file", description="Answer a question from the wiki with citations and file it.")
    def answer_and_file(question: str = "") -> str:
        return workflow(vault, "answer_and_file", f"the question: {question}" if question else "")

    @server.prompt(name="lint_and_fix", description="Lint the wiki and fix what it reports.")
    def lint_and_fix(paths: str = "") -> str:
        return workflow(vault, "lint_and_fix", f"these pages: {paths}" if paths else "")

    assert set(WORKFLOWS) == {"ingest_source", "answer_and_file", "lint_and_fix"}


def import_server_sdk() -> None:
    """Import the SDK's server side the fast way, for a process that only serves (start-to-ready).

    Why: the SDK's import is most of a server's start-up (~1.2 s of CPU, mostly pydantic building
    ~550 protocol models), and two parts of it are not needed to answer the handshake:
    - ``mcp/__init__.py`` imports the whole client as well; the package is registered without
      running it, so ``mcp.server`` and what it imports load alone (nothing on the server side
      imports from the top-level ``mcp`` package);
    - each model's validator is built when the class is defined; with pydantic's ``defer_build``
      default on during the import, a model is built the first time it is used instead (a server
      uses a few dozen of them). The default is restored at once: it only covers the SDK's classes.
      A late build is not thread-safe in pydantic 2.13, and it need not be here: the SDK uses its
      protocol models on the event-loop thread only (a tool runs in a worker thread but returns a
      plain dict or raises ToolError; both are turned into protocol messages back on the loop).
    Each step is skipped when it cannot apply (``mcp`` already imported, another pydantic), and any
    failure falls back to the ordinary import: the server is the same either way, only slower to start.
    """
    import importlib.util
    import sys

    if "mcp" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec("mcp")
        if spec is not None and spec.submodule_search_locations:
            sys.modules["mcp"] = importlib.util.module_from_spec(spec)
        from pydantic._internal import _config
        defaults = _config.config_defaults
        before = defaults.get("defer_build", False)
        defaults["defer_build"] = True
        try:
            import mcp.server  # noqa: F401
        finally:
            defaults["defer_build"] = before
    except Exception:  # noqa: BLE001 - an SDK or pydantic that differs: take the ordinary path
        log.debug("fast SDK import unavailable; importing mcp the ordinary way", exc_info=True)
        for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
            del sys.modules[name]  # half-imported under the stub: import all of it again
        import mcp.server  # noqa: F401


def serve(path: str | None, read_only: bool = False, watch: bool = True, **overrides: Any) -> None:
    """Run the stdio server until the client disconnects."""
    from contextlib import asynccontextmanager

    from .agent.session import WarmSession
    from .api import open_vault

    vault = open_vault(path, **{k: v for k, v in overrides.items() if v is not None})
    import_server_sdk()
    session = WarmSession(vault, watch=watch)

    @asynccontextmanager
    async def lifespan(_server):
        session.start()  # here, after the transport has claimed stdout
        try:
            yield {}
        finally:
            session.stop()

    server = build_server(vault, read_only=read_only, lifespan=lifespan, ready=session.ready, started=session.go)
    log.info("wikimem MCP server on %s (%s)", vault.root, "read-only" if read_only else "read-write")
    try:
        server.run("stdio")
    finally:
        vault.close()
