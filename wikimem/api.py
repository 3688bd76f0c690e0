"""The one public API: ``Vault`` (from ``open_vault``) and ``init_vault``. Its callers today: the CLI
(``wikimem/cli/``), the MCP servers (stdio in ``mcp/stdio.py``, the SDK's in ``mcp/server.py``, both
through ``mcp/tools.py``), ``wikimem serve`` (its JSON API, MCP over HTTP and web page, through the same
tools), the forwarded one-shot commands a warm process answers, watch mode (``Vault.watch``) and
Python users. Nothing below this module imports it: the stages take the ``Context`` it holds.

    from wikimem.api import open_vault
    vault = open_vault("~/notes")
    vault.index()
    for hit in vault.search("leiden communities"):
        print(hit.path, hit.score)
"""
from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .config import Settings
from .core import FORWARDED_CLIENT, VAULT_MARKERS, Context, LoadedVault, default_vault_path  # noqa: F401 (re-exported)
from .errors import VaultError
from .model import BuildReport, Chunk, Hit, Page, SearchResult  # noqa: F401 (Hit re-exported)
from .parse import VaultSchema

log = logging.getLogger(__name__)

VAULT_FOLDERS = ("raw/articles", "raw/papers", "raw/transcripts", "raw/assets", "entities", "concepts",
                 "comparisons", "queries", "memories")
TEMPLATE_FILES = ("SCHEMA.md", "index.md", "log.md", "AGENTS.md")


@dataclass(frozen=True)
class InitReport:
    root: str
    created: tuple[str, ...]
    existing: tuple[str, ...]


def init_vault(path: str | os.PathLike[str]) -> InitReport:
    """Create a vault skeleton from the bundled template. Existing files are never overwritten."""
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise VaultError(f"not a folder: {root}")
    created: list[str] = []
    existing: list[str] = []
    if not root.exists():
        root.mkdir(parents=True)
    template = resources.files("wikimem.vault_template")
    for name in TEMPLATE_FILES:
        target = root / name
        if target.exists():
            existing.append(name)
            continue
        data = template.joinpath(name).read_bytes()
        with open(target, "xb") as fh:  # "x": fail rather than overwrite, even in a race
            fh.write(data)
        created.append(name)
    from .ingest.sources import SOURCE_FOLDER  # where ingest writes source pages

    for folder in (*VAULT_FOLDERS, SOURCE_FOLDER):
        target = root / folder
        if target.is_dir():
            existing.append(folder + "/")
        else:
            target.mkdir(parents=True, exist_ok=True)
            created.append(folder + "/")
    return InitReport(str(root.resolve()), tuple(created), tuple(existing))


def open_vault(path: str | os.PathLike[str] | None = None, **overrides: Any) -> "Vault":
    """Open a vault (``path``, else ``$WIKIMEM_VAULT``, else the current folder if it is a vault).
    A command forwarded to a warm process gets that process's open vault (same root, no overrides)."""
    root = default_vault_path(path)
    if FORWARDED_CLIENT.get() is not None and not overrides:
        with contextlib.suppress(OSError):
            hosted = _HOSTED.get(str(root.resolve()))
            if hosted is not None:
                return hosted
    return Vault(root, overrides)


# the vaults this process holds open for forwarded commands (forward.ForwardServer registers them)
_HOSTED: dict[str, "Vault"] = {}


def host_vault(vault: "Vault") -> None:
    _HOSTED[str(Path(vault.root).resolve())] = vault


def unhost_vault(vault: "Vault") -> None:
    with contextlib.suppress(OSError):
        key = str(Path(vault.root).resolve())
        if _HOSTED.get(key) is vault:
            del _HOSTED[key]


class Vault:
    """One open vault: every operation a caller (CLI, MCP server, watch entry, Python user) needs,
    each a short delegation to the stage that does it, handed this vault's ``Context``."""

    def __init__(self, root: Path, overrides: Mapping[str, Any] | None = None):
        self.overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self.ctx = Context(root, overrides)
        self.files = self.ctx.files
        self.root = self.ctx.root
        self.settings: Settings = self.ctx.settings

    @property
    def cache(self):
        """The ``.wikimem/`` stores (manifest, lexical, vectors), opened on first use."""
        return self.ctx.cache

    # -- reading and parsing ---------------------------------------------------------------
    def parse_file(self, rel: str) -> Page:
        """Read and parse one note (links not resolved); NoteReadError for unreadable files."""
        return self.ctx.parse_file(rel)

    def load(self, progress: Callable[[int, int], None] | None = None) -> LoadedVault:
        """Scan and parse every note, then resolve links against all files."""
        return self.ctx.load(progress)

    def chunks(self, page: Page) -> list[Chunk]:
        return self.ctx.chunks(page)

    def schema(self) -> VaultSchema:
        return self.ctx.schema()

    def parse_summary(self) -> dict[str, Any]:
        from .parse.report import vault_summary
        loaded = self.ctx.load()
        return vault_summary(str(self.root), loaded.pages, loaded.skipped, self.ctx.chunks)

    def parse_page(self, name: str) -> dict[str, Any]:
        """One page parsed (named by path, file name, title or alias) with its chunks, as a dict."""
        from .parse.report import page_report
        return page_report(self.ctx.load().pages, name, self.ctx.chunks)

    # -- writing: every write goes through the one writer door (wikimem.knowledge.writer) ------
    def write_page(self, rel: str, text: str, *, expected_sha256: str | None = None, reason: str = "write",
                   check_similar: bool = True):
        """Secret-scanned, atomic, conflict-checked, logged write that updates the cache -> WriteResult."""
        from .knowledge.writer import write_page
        return write_page(self.ctx, rel, text, expected_sha256=expected_sha256, reason=reason,
                          check_similar=check_similar)

    def update_frontmatter(self, rel: str, changes: Mapping[str, Any], expected_sha256: str | None = None,
                           reason: str = "frontmatter") -> Page:
        """Change frontmatter keys of one note through the writer door; every other byte stays.
        ``expected_sha256``: the hash the caller saw; a file changed meanwhile raises ConflictError."""
        from .knowledge.writer import update_frontmatter
        return update_frontmatter(self.ctx, rel, changes, expected_sha256=expected_sha256, reason=reason)

    def edit_page(self, rel: str, operation: str, *, expected_sha256: str | None, content: str = "",
                  heading: str | None = None, find: str | None = None, expected_count: int = 1,
                  reason: str = "agent edit"):
        """Append, prepend, replace a section by heading, or find-and-replace with an expected count,
        compare-and-swap checked -> EditResult."""
        from .agent.edits import edit_page
        return edit_page(self.ctx, rel, operation, expected_sha256=expected_sha256, content=content,
                         heading=heading, find=find, expected_count=expected_count, reason=reason)

    def move_page(self, old: str, new: str, *, expected_sha256: str | None, reason: str = "agent move"):
        """Rename a page and update the links that point at it -> EditResult."""
        from .agent.edits import move_page
        return move_page(self.ctx, old, new, expected_sha256=expected_sha256, reason=reason)

    def delete_page(self, rel: str, *, expected_sha256: str | None, reason: str = "agent delete"):
        """Move a page to the vault's .trash/ -> EditResult."""
        from .agent.edits import delete_page
        return delete_page(self.ctx, rel, expected_sha256=expected_sha256, reason=reason)

    def append_log(self, operation: str, detail: str) -> str:
        """Append one dated line to log.md; returns the line."""
        from .knowledge.writer import append_log
        return append_log(self.ctx, operation, detail)

    def add_to_index(self, rel: str, summary: str = "") -> bool:
        """Link ``rel`` under its type's section of index.md (idempotent); returns whether added."""
        from .knowledge.writer import add_to_index
        return add_to_index(self.ctx, rel, summary)

    def supersede(self, old: str, new: str, *, old_sha256: str | None = None, new_sha256: str | None = None):
        """Record that ``new`` replaces ``old`` (both frontmatters, logged, cache refreshed).
        ``old_sha256``/``new_sha256``: what the caller read; a page changed since is a ConflictError."""
        from .knowledge.versions import supersede
        return supersede(self.ctx, old, new, old_sha256=old_sha256, new_sha256=new_sha256)

    def history(self, page: str, *, as_of: str | None = None, commits: bool = True):
        """The version chain ``page`` belongs to, oldest to newest, with what changed, when each
        version was valid (which one ``as_of`` a date) and, in a git repository, its commits."""
        from .knowledge.versions import history
        return history(self.ctx, page, as_of=as_of, commits=commits)

    def remember(self, fact: str, *, kind: str = "episodic", about: str | None = None, source: str | None = None,
                 dry_run: bool = False, supersede: bool = True, llm: str | None = None, llm_model: str | None = None,
                 llm_url: str | None = None, llm_api_key: str | None = None, llm_timeout: float | None = None):
        """Store one fact under memories/ unless a memory of the same kind already says it (the same
        words in the same order); a fact naming the same subject and attribute with another value
        supersedes it (``supersede=False``: it is written beside it); an unsure one is written and
        the earlier named in ``possible_update`` -> RememberResult. ``llm`` (or the ``memory_llm``
        setting): a model judges instead, checked, the rule as fallback."""
        from .knowledge.memory import remember
        from .llm import choose_llm
        kind_llm = llm or (self.settings.memory_llm if self.settings.memory_llm != "none" else None)
        judge = choose_llm(self.settings, kind_llm, llm_model, llm_url, llm_api_key, llm_timeout) if kind_llm else None
        return remember(self.ctx, fact, kind=kind, about=about, source=source, dry_run=dry_run,
                        supersede_old=supersede, llm=judge)

    def restore(self, page: str):
        """Undo a supersede: ``page`` is active again, the newer page no longer supersedes it; logged
        -> SupersedeResult (``new``: the page(s) that had superseded it)."""
        from .knowledge.versions import restore
        return restore(self.ctx, page)

    def remember_from(self, transcript: str, *, dry_run: bool = False, llm: str | None = None, llm_model: str = "",
                      llm_url: str = "", llm_api_key: str = "", timeout: float | None = None):
        """Memories proposed from an imported conversation (extractively, or by ``llm``: ollama |
        openai; default the ``llm`` setting, with its model, URL, key and ``llm_timeout``), each
        through ``remember``."""
        from .knowledge.memory import remember_from_transcript
        from .llm import choose_llm
        chosen = choose_llm(self.settings, llm, llm_model or None, llm_url or None, llm_api_key or None, timeout)
        return remember_from_transcript(self.ctx, transcript, dry_run=dry_run, llm=chosen["kind"],
                                        llm_model=chosen["model"] or "", llm_url=chosen["url"] or "",
                                        llm_api_key=chosen["api_key"] or "", timeout=float(chosen["timeout"] or 60.0))

    def apply_supersede(self, result):
        """Apply a write's best supersede candidate (``WriteResult.similar[0]``): the `--supersede`
        of commands that write pages. Returns the SupersedeResult, or None when there is none."""
        from .knowledge.versions import apply_supersede
        return apply_supersede(self.ctx, result)

    # -- index and search (wikimem.index, wikimem.search) -----------------------------------
    def index(self, rebuild: bool = False, embed: bool = True, progress=None, *,
              paths: Iterable[str] | None = None, wait: float = 0.0, passages: str | None = "all") -> BuildReport:
        """Bring the cache up to date. ``paths``: only these vault-relative files changed (a
        watcher or a write-back knows); default: a full incremental scan. ``embed=False`` commits
        the lexical index and graph and leaves new vectors to ``embed_pending``. ``wait``: seconds
        to wait for another writer before LockError. ``passages``: a note's held passages (they
        only re-rank): "all" embeds them before returning, but those a running background job holds
        (left to it: ``report.passages_job``); "wait" waits for that job too; "background" returns
        once every chunk is searchable and leaves them to one detached process when at least
        ``index_passages_min`` are missing (index/passages_job.py); None: the ``index_passages``
        setting, background or wait (what ``wikimem index`` does)."""
        from .index.update import update
        chosen = self.settings.index_passages if passages is None else passages
        if chosen not in ("all", "wait", "background"):
            raise ValueError(f"passages must be 'all', 'wait', 'background' or None, got {passages!r}")
        return update(self.ctx, rebuild=rebuild, embed=embed, progress=progress, paths=paths, wait=wait,
                      passages=chosen)

    def embed_pending(self, max_seconds: float | None = None, first: Iterable[str] = (), batch: int | None = None,
                      progress=None, wait: float = 0.0, passages: str = "all") -> BuildReport:
        """Embed vectors the cache still lacks, in batches, for at most ``max_seconds``; vectors of
        the pages in ``first`` go before the rest. Pauses between batches while a search runs and
        holds the writer lock only while it commits, so lexical commits never wait long.
        ``passages``: all | searched (not a note's held passages) | held (only those); while a
        detached passages job runs, ``all`` leaves the held passages to it."""
        from .index.background import embed_pending
        return embed_pending(self.ctx, max_seconds=max_seconds, first=set(first), batch=batch, progress=progress,
                             wait=wait, passages=passages)

    def passages_job(self) -> dict[str, Any] | None:
        """The detached job embedding a note's held passages (``index(passages="background")``):
        whether it runs, its pid, last state and log; None when none ever ran here."""
        from .index.passages_job import read_state
        return read_state(self.root)

    def pages(self, paths: Iterable[str] | None = None, refresh: bool = True) -> dict[str, Page]:
        """Every note parsed and resolved, served from the cache; ``refresh``: bring its lexical
        side up to date first, when this process may write it."""
        from .index.update import current_pages
        return current_pages(self.ctx, paths, refresh)

    def search(self, query: str, *, limit: int = 10, mode: str = "hybrid", **filters: Any) -> SearchResult:
        """Hybrid search. Filters: folder, type, tags, since, until, include_superseded, include_meta, paths,
        community (a community number from ``communities``);
        ``per_page`` (default 1) caps hits per page (0: no cap, e.g. for transcripts)."""
        from .search import search
        community = filters.pop("community", None)
        if community is not None:  # one Leiden community's pages (numbered as `wikimem communities` shows)
            from .graph import community_members
            filters["paths"] = community_members(self.ctx, community)
        from .knowledge.memory_view import annotate
        result = annotate(self.ctx, search(self.ctx, query, limit=limit, mode=mode, **filters))
        self.ctx.cache.usage.count("returned", (h.path for h in result.hits))  # a person's or an agent's search
        return result

    def memories(self, kind: str | None = None, about: str | None = None, as_of: str | None = None,
                 include_all: bool = False) -> list[dict[str, Any]]:
        """The memories current now (or valid at ``as_of``; ``include_all``: superseded ones too),
        newest first, with dates, what each replaced and open conflicts: ``recall`` / ``wikimem memories``."""
        from .knowledge.memory_view import recall
        return recall(self.ctx, kind=kind, about=about, as_of=as_of, include_all=include_all)

    def status(self) -> dict[str, Any]:
        from .index.status import status
        from .qa.review import time_status
        info = status(self.ctx)
        info.update(time_status(self.ctx))
        return info

    # -- agents: page reads, listings, briefing (wikimem.agent) ------------------------------
    def read_page(self, rel: str, heading: str | None = None) -> dict[str, Any]:
        """One page (or one heading's section) with frontmatter, sha256, backlinks, versions."""
        from .agent.pages import read_page
        page = read_page(self.ctx, rel, heading)
        self.ctx.cache.usage.count("opened", [page["path"]])
        return page

    def list_pages(self, folder: str | None = None, type: str | None = None, tag: str | None = None,
                   offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """Notes by folder / type / tag, sorted by path, ``limit`` from ``offset``."""
        from .agent.pages import list_pages
        return list_pages(self.ctx, folder, type, tag, offset, limit)

    def taxonomy(self) -> dict[str, Any]:
        """Folders, types, statuses and tags with note counts, plus the SCHEMA.md summary."""
        from .agent.pages import taxonomy
        return taxonomy(self.ctx)

    def prime_context(self, cwd: str | None = None, prompt: str | None = None, budget_tokens: int = 1500,
                      as_of: str | None = None):
        """Session-start briefing (domain, persona/instruction memories, relevant pages) -> Briefing.
        Never raises, but for a malformed ``as_of`` (the vault as it was on that date)."""
        from .agent.prime import prime_context
        return prime_context(self.ctx, cwd, prompt, budget_tokens, as_of)

    def warm_session(self, watch: bool = True):
        """A ``WarmSession`` that keeps this vault warm for a long-lived server (``start()``, ``stop()``)."""
        from .agent.session import WarmSession
        return WarmSession(self.ctx, watch=watch)

    # -- sources and questions (wikimem.ingest, wikimem.qa) ---------------------------------
    def import_transcripts(self, sessions, folder: str = "raw/transcripts") -> list[str]:
        """Write conversation sessions as transcript notes (see wikimem.ingest.transcript)."""
        from .ingest import import_sessions
        return import_sessions(self.ctx, sessions, folder)

    def ingest(self, paths: Iterable[str | os.PathLike[str]], kind: str | None = None, *, llm: str | None = None,
               llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
               llm_timeout: float | None = None, supersede: bool = False, compile: bool = False):
        """Copy sources into raw/<kind>/ (content-addressed: the same bytes twice is a no-op) and
        write a source page for each (with ``llm``: also a summary and the pages it names);
        conversation exports become one note per session -> IngestReport (see wikimem.ingest.sources).
        ``compile``: then compile the sources added into entity and concept pages (``report.compiled``)."""
        from dataclasses import replace
        from .ingest.sources import ingest
        from .llm import choose_llm
        model = choose_llm(self.settings, llm, llm_model, llm_url, llm_api_key, llm_timeout)
        report = ingest(self.ctx, [paths] if isinstance(paths, (str, os.PathLike)) else paths, kind,
                        llm=model if model["kind"] else None, supersede=supersede)
        if compile:
            from .compile import compile_vault
            from .compile.sources import is_source
            added = sorted({r for i in report.items if i.status == "added" for r in i.raw if is_source(r)})
            report = replace(report, compiled=compile_vault(self.ctx, added, llm=model if model["kind"] else None)
                             if added else None)
        return report

    def compile(self, sources: Iterable[str] = (), *, dry_run: bool = False, llm: str | None = None,
                llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
                llm_timeout: float | None = None, pages: Iterable[str] | None = None):
        """Write what the sources under raw/ say into entity and concept pages, each sentence cited,
        in one marked ``compiled`` section per page (new pages past SCHEMA.md's threshold); a
        sentence contradicting a page is held back for review -> CompileReport (see wikimem.compile).
        ``sources``: only the pages these sources speak about; ``pages``: only these pages."""
        from .compile import compile_vault
        from .llm import choose_llm
        m = choose_llm(self.settings, llm, llm_model, llm_url, llm_api_key, llm_timeout)
        return compile_vault(self.ctx, sources, dry_run=dry_run, llm=m if m["kind"] else None,
                             only_pages=None if pages is None else list(pages))

    def query(self, question: str, *, k: int = 6, write: bool = True, llm: str | None = None,
              llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
              llm_timeout: float | None = None, supersede: bool = False, **filters: Any):
        """Answer from the vault with [[page#heading]] citations and file the answer back as
        queries/<question>.md -> Answer (see wikimem.qa). LLM settings default to the settings
        ``llm``, ``llm_model``, ``llm_url``, ``llm_api_key``, ``llm_timeout``."""
        from .qa import ask
        from .llm import choose_llm
        m = choose_llm(self.settings, llm, llm_model, llm_url, llm_api_key, llm_timeout)
        answer = ask(self.ctx, question, k=k, write=write, llm=m["kind"], llm_model=m["model"], llm_url=m["url"],
                     llm_api_key=m["api_key"], llm_timeout=float(m["timeout"]), supersede=supersede, **filters)
        self.ctx.cache.usage.count("cited", (c.path for c in answer.citations))
        return answer

    def review(self, paths: Iterable[str] | None = None):
        """The stale compiled pages (a cited text or file changed, a cited page went or was
        superseded), with the changed sentences -> Review (see wikimem.qa.review)."""
        from .compile import contradictions
        from .qa.review import review
        return review(self.ctx, paths, contradictions=contradictions)

    def refresh_stale(self, pages: Iterable[str] = (), *, every: bool = False, llm: str | None = None,
                      llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
                      llm_timeout: float | None = None):
        """Ask stale query pages' questions again (``pages``, or ``every`` stale one) through the
        write-back, which rewrites only the marked answer section -> Review with ``refreshed``."""
        from .compile.refresh import recompile
        from .qa.review import refresh
        from .llm import choose_llm
        m = choose_llm(self.settings, llm, llm_model, llm_url, llm_api_key, llm_timeout)
        return refresh(self.ctx, pages, every, recompile=recompile, llm=m["kind"], llm_model=m["model"], llm_url=m["url"],
                       llm_api_key=m["api_key"], llm_timeout=float(m["timeout"]))

    # -- lint (wikimem.lint) ---------------------------------------------------------------------
    def lint(self, paths: Iterable[str] = (), *, select: Iterable[str] = (), ignore: Iterable[str] = (),
             fix: bool = False, fail_on: str | None = None, show_infos: bool | None = None):
        """Run the lint rules (docs/rules/) over the cache, brought up to date first -> LintReport.
        ``paths``: vault-relative files or folders to report on; ``select``/``ignore``: code
        prefixes; ``fix``: apply safe fixes through the writer path, logged in log.md;
        ``show_infos``: report info findings too (None: only when selected or failed on)."""
        from .lint import lint
        return lint(self.ctx, paths, select=select, ignore=ignore, fix=fix, fail_on=fail_on, show_infos=show_infos)

    # -- the knowledge graph (wikimem.graph) -------------------------------------------------
    def communities(self, *, resolution: float = 1.0, seed: int = 42, semantic: bool = False, k: int = 5,
                    write: bool = False, obsidian_graph: bool = False):
        """Leiden communities of the page graph -> CommunityReport. With ``write`` (compile
        communities.md) or ``obsidian_graph`` (colour Obsidian's graph view): (report, {"page":
        CompileResult, "obsidian_graph": ObsidianResult}) with the ones asked for (see wikimem.graph)."""
        from .graph.communities import detect
        report = detect(self.ctx, resolution=resolution, seed=seed, semantic=semantic, k=k)
        written = {}
        if write:
            from .graph.compile import write_page
            written["page"] = write_page(self.ctx, report)
        if obsidian_graph:
            from .graph.obsidian import write_graph_settings
            written["obsidian_graph"] = write_graph_settings(self.ctx, report)
        return (report, written) if (write or obsidian_graph) else report

    def neighbors(self, page: str, *, depth: int = 1, types=None, min_weight: float = 0.0, fanout: int = 20):
        """Pages linked to ``page`` within ``depth`` links, both directions -> NeighborReport."""
        from .graph.neighbors import neighbors
        return neighbors(self.ctx, page, depth=depth, types=types, min_weight=min_weight, fanout=fanout)

    def related(self, page: str, *, limit: int = 10, include_linked: bool = True, include_superseded: bool = False):
        """The pages nearest ``page`` by meaning (from its chunks' vectors), unlinked ones first, each
        with whether it is linked and the key terms they share -> RelatedReport."""
        from .graph.related import related
        return related(self.ctx, page, limit=limit, include_linked=include_linked,
                       include_superseded=include_superseded)

    def recent(self, since: str | None = None, *, types: Iterable[str] | None = None, limit: int = 50):
        """Pages created, edited, superseded or written by wikimem since ``since`` (7d, 12h, a date),
        newest first, each with a one-line summary -> RecentReport."""
        from .agent.recent import recent
        return recent(self.ctx, since, types=types, limit=limit)

    def path(self, source: str, target: str, *, types=None, directed: bool = False):
        """The shortest link path between two pages -> PathReport."""
        from .graph.neighbors import path
        return path(self.ctx, source, target, types=types, directed=directed)

    def stats(self, communities: bool = True) -> dict[str, Any]:
        """Counts from the cache: pages, links, orphans, hubs, communities, memories, coverage."""
        from .graph.stats import stats
        return stats(self.ctx, communities=communities)

    def doctor(self):
        """Check the install and this vault end to end -> DoctorReport."""
        from .doctor import diagnose
        return diagnose(ctx=self.ctx)

    # -- watch mode (wikimem.watch) ---------------------------------------------------------
    def watch(self, *, debounce_ms: int | None = None, polling: bool = False):
        """A ``Watcher`` that keeps this vault's cache following its files (``start()``, ``stop()``,
        ``wait_idle(timeout)``, ``status()``); one per vault, refused with LockError otherwise."""
        from .watch import Watcher
        return Watcher(self.ctx, debounce_ms=debounce_ms, polling=polling)

    def close(self) -> None:
        self.ctx.close()
