"""The one public API. The CLI, the MCP server and watch mode only call into this module.

    from wikimem.api import open_vault
    vault = open_vault("~/notes")
    vault.index()
    for hit in vault.search("leiden communities"):
        print(hit.path, hit.score)
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .config import Settings, load_settings
from .errors import ConflictError, NoteReadError, UsageError, VaultError, WikimemError
from .model import BuildReport, Chunk, Hit, Page, SearchResult, Skipped  # noqa: F401 (SearchResult re-exported)
from .parse import Resolver, VaultSchema, chunk_page, parse_page, parse_schema
from .parse import frontmatter as fm
from .vault import FileInfo, VaultFiles
from .vault.files import bad_name, shown_name

log = logging.getLogger(__name__)

VAULT_FOLDERS = ("raw/articles", "raw/papers", "raw/transcripts", "raw/assets", "entities", "concepts",
                 "comparisons", "queries", "memories")
TEMPLATE_FILES = ("SCHEMA.md", "index.md", "log.md", "AGENTS.md")


@dataclass(frozen=True)
class InitReport:
    root: str
    created: tuple[str, ...]
    existing: tuple[str, ...]


@dataclass
class LoadedVault:
    """Every note parsed and its links resolved; what a build or lint pass starts from."""

    pages: dict[str, Page]
    files: tuple[FileInfo, ...]
    skipped: list[Skipped] = field(default_factory=list)


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


VAULT_MARKERS = (".wikimem", "SCHEMA.md", ".obsidian")


def default_vault_path(path: str | os.PathLike[str] | None) -> Path:
    """``path``, else ``$WIKIMEM_VAULT``, else the current folder, but only when that folder looks
    like a vault (``.wikimem/``, ``SCHEMA.md`` or ``.obsidian/``): a search typed in the wrong
    folder must not silently index it and leave a cache behind."""
    chosen = path or os.environ.get("WIKIMEM_VAULT") or None
    root = Path(chosen).expanduser() if chosen else Path.cwd()
    if bad_name(str(root)):  # it would end up in URIs, JSON and SQLite, none of which take such bytes
        raise UsageError(f"the vault folder's path is not valid UTF-8 ({shown_name(str(root))}); rename it")
    if chosen:
        return root
    cwd = root
    if not any((cwd / marker).exists() for marker in VAULT_MARKERS):
        raise UsageError(f"{cwd} is not a vault (it has no .wikimem/, SCHEMA.md or .obsidian/); name the vault "
                         "(--vault PATH or the vault argument) or set WIKIMEM_VAULT, or run `wikimem init .` "
                         "to make this folder one")
    return cwd


def open_vault(path: str | os.PathLike[str] | None = None, **overrides: Any) -> "Vault":
    """Open a vault (``path``, else ``$WIKIMEM_VAULT``, else the current folder if it is a vault)."""
    return Vault(default_vault_path(path), overrides)


class Vault:
    def __init__(self, root: Path, overrides: Mapping[str, Any] | None = None):
        self.files = VaultFiles(root)
        self.root = self.files.root
        self.settings: Settings = load_settings(self.root, overrides)
        self.files.max_bytes = self.settings.max_bytes
        self._index = None

    # -- reading and parsing ---------------------------------------------------------------
    def parse_note(self, rel: str, trusted: bool = False):
        """Read and parse one note -> (Page, NoteFile). The one read-and-parse step: ``load``,
        ``parse_file`` and every build go through it. Raises NoteReadError for unreadable files."""
        note = self.files.read_note(rel, trusted=trusted)
        return parse_page(rel, note.text, note.sha256), note

    def parse_file(self, rel: str, trusted: bool = False) -> Page:
        return self.parse_note(rel, trusted=trusted)[0]

    def load(self, progress: Callable[[int, int], None] | None = None) -> LoadedVault:
        """Scan and parse every note, then resolve links against all files."""
        scan = self.files.scan()
        skipped = list(scan.skipped)
        pages: dict[str, Page] = {}
        notes = scan.notes
        for i, info in enumerate(notes):
            try:
                pages[info.path] = self.parse_file(info.path, trusted=True)
            except NoteReadError as exc:
                skipped.append(Skipped(exc.path, exc.kind, exc.reason))
            if progress:
                progress(i + 1, len(notes))
        resolver = Resolver((f.path for f in scan.files), pages)
        pages = {p: resolver.resolve_page(page) for p, page in pages.items()}
        for s in skipped:
            log.warning("skipped %s: %s", s.path, s.reason)
        return LoadedVault(pages, scan.files, skipped)

    def chunks(self, page: Page) -> list[Chunk]:
        s = self.settings
        return chunk_page(page, s.chunk_min, s.chunk_max, s.transcript_window, s.transcript_stride,
                          s.transcript_context)

    def schema(self) -> VaultSchema:
        path = self.root / "SCHEMA.md"
        if not path.exists():
            return VaultSchema()
        return parse_schema(self.files.read_note("SCHEMA.md").text)

    def parse_summary(self) -> dict[str, Any]:
        loaded = self.load()
        pages = loaded.pages.values()
        links = [l for p in pages for l in p.links]
        by_type: dict[str, int] = {}
        for p in pages:
            by_type[p.type] = by_type.get(p.type, 0) + 1
        return {
            "vault": str(self.root),
            "pages": len(loaded.pages),
            "by_type": dict(sorted(by_type.items())),
            "chunks": sum(len(self.chunks(p)) for p in pages),
            "links": len(links),
            "unresolved_links": sum(1 for l in links if l.resolved is None),
            "tags": len({t.name for p in pages for t in p.tags}),
            "pages_with_errors": sorted(p.path for p in pages if p.errors),
            "skipped": [{"path": s.path, "kind": s.kind, "reason": s.reason} for s in loaded.skipped],
        }

    def parse_page(self, name: str) -> dict[str, Any]:
        """One page parsed (named by path, file name, title or alias) with its chunks, as a dict."""
        from .parse import page_to_dict
        from .parse.names import find_page
        loaded = self.load()
        page = loaded.pages[find_page(name, {p: (pg.title, pg.aliases) for p, pg in loaded.pages.items()})]
        data = page_to_dict(page)
        data["chunks"] = [{"id": c.id, "heading_path": list(c.heading_path), "chars": len(c.text)}
                          for c in self.chunks(page)]
        return data

    # -- writing ---------------------------------------------------------------------------
    def update_frontmatter(self, rel: str, changes: Mapping[str, Any], expected_sha256: str | None = None) -> Page:
        """Change frontmatter keys of one note atomically; everything else stays byte for byte.

        ``expected_sha256``: the hash the caller saw (default: the hash read now). A file changed
        meanwhile raises ConflictError.
        """
        note = self.files.read_note(rel)
        if expected_sha256 is not None and expected_sha256 != note.sha256:
            raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting")
        if note.text.startswith("---\r") and not note.text.startswith("---\r\n"):
            raise WikimemError(f"{rel}: written with old Mac line endings (CR only); convert it to LF or CRLF "
                               "before wikimem edits its frontmatter")
        front, _body = fm.parse(note.text.replace("\r\n", "\n"))
        if front.error:
            raise WikimemError(f"{rel}: {front.error}; fix the frontmatter before wikimem edits it")
        new_raw = fm.update(front.raw, front.data, changes)
        if new_raw == (front.raw or ""):
            return self.parse_file(rel)  # nothing changes: nothing is written
        new_text = fm.replace_raw(note.text, front.end_line if front.raw is not None else 0, new_raw, note.newline)
        self.files.write_note(rel, new_text, expected_sha256=note.sha256, newline=note.newline, bom=note.bom,
                              as_is=True)
        return self.parse_file(rel)

    def write_note(self, rel: str, text: str, expected_sha256: str | None = None) -> Page:
        """Create (expected_sha256=None) or replace a note atomically."""
        newline, bom = "\n", False
        if expected_sha256 is not None:
            note = self.files.read_note(rel)
            newline, bom = note.newline, note.bom
        self.files.write_note(rel, text, expected_sha256=expected_sha256, newline=newline, bom=bom)
        return self.parse_file(rel)

    # -- the one writer path and knowledge operations (wikimem.knowledge) --------------------
    def write_page(self, rel: str, text: str, *, expected_sha256: str | None = None, reason: str = "write",
                   check_similar: bool = True):
        """Secret-scanned, atomic, conflict-checked, logged write that updates the cache -> WriteResult."""
        from .knowledge.writer import write_page
        return write_page(self, rel, text, expected_sha256=expected_sha256, reason=reason,
                          check_similar=check_similar)

    def edit_page(self, rel: str, operation: str, *, expected_sha256: str | None, content: str = "",
                  heading: str | None = None, find: str | None = None, expected_count: int = 1,
                  reason: str = "agent edit"):
        """Append, prepend, replace a section by heading, or find-and-replace with an expected count,
        compare-and-swap checked -> EditResult."""
        from .agent.edits import edit_page
        return edit_page(self, rel, operation, expected_sha256=expected_sha256, content=content, heading=heading,
                         find=find, expected_count=expected_count, reason=reason)

    def move_page(self, old: str, new: str, *, expected_sha256: str | None, reason: str = "agent move"):
        """Rename a page and update the links that point at it -> EditResult."""
        from .agent.edits import move_page
        return move_page(self, old, new, expected_sha256=expected_sha256, reason=reason)

    def delete_page(self, rel: str, *, expected_sha256: str | None, reason: str = "agent delete"):
        """Move a page to the vault's .trash/ -> EditResult."""
        from .agent.edits import delete_page
        return delete_page(self, rel, expected_sha256=expected_sha256, reason=reason)

    def append_log(self, operation: str, detail: str) -> str:
        """Append one dated line to log.md; returns the line."""
        from .knowledge.writer import append_log
        return append_log(self, operation, detail)

    def add_to_index(self, rel: str, summary: str = "") -> bool:
        """Link ``rel`` under its type's section of index.md (idempotent); returns whether added."""
        from .knowledge.writer import add_to_index
        return add_to_index(self, rel, summary)

    def supersede(self, old: str, new: str, *, old_sha256: str | None = None, new_sha256: str | None = None):
        """Record that ``new`` replaces ``old`` (both frontmatters, logged, cache refreshed).
        ``old_sha256``/``new_sha256``: what the caller read; a page changed since is a ConflictError."""
        from .knowledge.versions import supersede
        for name, expected in ((old, old_sha256), (new, new_sha256)):
            if expected is not None:
                from .parse.names import clean_name
                rel = clean_name(name)
                rel = rel if rel.lower().endswith(".md") or not self.files.abspath(rel + ".md").exists() else rel + ".md"
                if self.files.read_note(rel).sha256 != expected:
                    from .errors import ConflictError
                    raise ConflictError(f"{rel} changed since it was read (sha256 differs); read it again, then "
                                        "supersede")
        return supersede(self, old, new)

    def history(self, page: str):
        """The version chain ``page`` belongs to, oldest to newest, with what changed."""
        from .knowledge.versions import history
        return history(self, page)

    def remember(self, fact: str, *, kind: str = "episodic", about: str | None = None, source: str | None = None,
                 dry_run: bool = False):
        """Store one fact under memories/ unless a memory of the same kind already says it;
        a fact that updates one about the same subject supersedes it -> RememberResult."""
        from .knowledge.memory import remember
        return remember(self, fact, kind=kind, about=about, source=source, dry_run=dry_run)

    def remember_from(self, transcript: str, *, dry_run: bool = False, llm: str | None = None, llm_model: str = "",
                      llm_url: str = "", llm_api_key: str = ""):
        """Memories proposed from an imported conversation (extractively, or by ``llm``: ollama |
        openai), each through ``remember``."""
        from .knowledge.memory import remember_from_transcript
        return remember_from_transcript(self, transcript, dry_run=dry_run, llm=llm, llm_model=llm_model,
                                        llm_url=llm_url, llm_api_key=llm_api_key)

    def apply_supersede(self, result):
        """Apply a write's best supersede candidate (``WriteResult.similar[0]``): the `--supersede`
        of commands that write pages. Returns the SupersedeResult, or None when there is none."""
        from .knowledge.versions import apply_supersede
        return apply_supersede(self, result)

    # -- index and search (wikimem.index) --------------------------------------------------
    @property
    def cache(self):
        if self._index is None:
            from .index.cache import Cache
            self._index = Cache(self)
        return self._index

    def index(self, rebuild: bool = False, embed: bool = True, progress=None, *,
              paths: Iterable[str] | None = None, wait: float = 0.0) -> BuildReport:
        """Bring the cache up to date. ``paths``: only these vault-relative files changed (a
        watcher or a write-back knows); default: a full incremental scan. ``embed=False`` commits
        the lexical index and graph and leaves new vectors to ``embed_pending``. ``wait``: seconds
        to wait for another writer before LockError."""
        from .index.build import LOCK_WAIT_S, build
        from .watch.control import holder
        watcher = holder(self.root) if paths is None else None
        if watcher is not None and watcher != os.getpid():  # its commits are short: wait for one, do not fail
            wait = max(wait, LOCK_WAIT_S)
        report = build(self, rebuild=rebuild, embed=embed, progress=progress, wait=wait, paths=paths)
        if watcher is not None and watcher != os.getpid():
            report.notices.append(f"a watcher (pid {watcher}) follows this vault: this build committed beside it "
                                  "and never held it up (`wikimem watch --status` shows its state)")
        return report

    def embed_pending(self, max_seconds: float | None = None, first: Iterable[str] = (), batch: int | None = None,
                      progress=None, wait: float = 0.0) -> BuildReport:
        """Embed vectors the cache still lacks, in batches, for at most ``max_seconds``; vectors of
        the pages in ``first`` go before the rest. Pauses between batches while a search runs and
        holds the writer lock only while it commits, so lexical commits never wait long."""
        from .index.background import embed_pending
        return embed_pending(self, max_seconds=max_seconds, first=set(first), batch=batch, progress=progress,
                             wait=wait)

    def pages(self, paths: Iterable[str] | None = None, refresh: bool = True) -> dict[str, Page]:
        """Every note parsed and resolved, served from the cache (nothing is re-parsed that the
        cache holds). ``refresh``: bring the cache's lexical side up to date first, when this
        process may write it; otherwise the last committed state is used."""
        if refresh and self.cache.writable():
            from .errors import LockError
            try:
                self.index(embed=False, wait=5.0)
            except LockError:
                log.info("another process is updating the cache; using its last committed state")
        return self.cache.pages(paths)

    def search(self, query: str, *, limit: int = 10, mode: str = "hybrid", **filters: Any) -> "SearchResult":
        """Hybrid search. Filters: folder, type, tags, since, until, include_superseded, include_meta, paths,
        community (a community number from ``communities``);
        ``per_page`` (default 1) caps hits per page (0: no cap, e.g. for transcripts)."""
        from .search import search
        community = filters.pop("community", None)
        if community is not None:  # one Leiden community's pages (numbered as `wikimem communities` shows)
            from .graph import community_members
            filters["paths"] = community_members(self, community)
        return search(self, query, limit=limit, mode=mode, **filters)

    # -- agents: page reads, listings, briefing (wikimem.agent) ------------------------------
    def read_page(self, rel: str, heading: str | None = None) -> dict[str, Any]:
        """One page (or one heading's section) with frontmatter, sha256, backlinks, versions."""
        from .agent.pages import read_page
        return read_page(self, rel, heading)

    def list_pages(self, folder: str | None = None, type: str | None = None, tag: str | None = None,
                   offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """Notes by folder / type / tag, sorted by path, ``limit`` from ``offset``."""
        from .agent.pages import list_pages
        return list_pages(self, folder, type, tag, offset, limit)

    def taxonomy(self) -> dict[str, Any]:
        """Folders, types, statuses and tags with note counts, plus the SCHEMA.md summary."""
        from .agent.pages import taxonomy
        return taxonomy(self)

    def prime_context(self, cwd: str | None = None, prompt: str | None = None, budget_tokens: int = 1500):
        """Session-start briefing (domain, persona/instruction memories, relevant pages) -> Briefing.
        Never raises."""
        from .agent.prime import prime_context
        return prime_context(self, cwd, prompt, budget_tokens)

    def import_transcripts(self, sessions, folder: str = "raw/transcripts") -> list[str]:
        """Write conversation sessions as transcript notes (see wikimem.ingest.transcript)."""
        from .ingest import import_sessions
        return import_sessions(self, sessions, folder)

    def ingest(self, paths: Iterable[str | os.PathLike[str]], kind: str | None = None, *, llm: str | None = None,
               llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
               llm_timeout: float | None = None, supersede: bool = False):
        """Copy sources into raw/<kind>/ (content-addressed: the same bytes twice is a no-op) and
        write a source page for each (with ``llm``: also a summary and the pages it names);
        conversation exports become one note per session -> IngestReport (see wikimem.ingest.sources)."""
        from .ingest.sources import ingest
        model = self._llm(llm, llm_model, llm_url, llm_api_key, llm_timeout)
        return ingest(self, [paths] if isinstance(paths, (str, os.PathLike)) else paths, kind,
                      llm=model if model["kind"] else None, supersede=supersede)

    def query(self, question: str, *, k: int = 6, write: bool = True, llm: str | None = None,
              llm_model: str | None = None, llm_url: str | None = None, llm_api_key: str | None = None,
              llm_timeout: float | None = None, supersede: bool = False, **filters: Any):
        """Answer from the vault with [[page#heading]] citations and file the answer back as
        queries/<question>.md -> Answer (see wikimem.qa). LLM settings default to the settings
        ``llm``, ``llm_model``, ``llm_url``, ``llm_api_key``, ``llm_timeout``."""
        from .qa import ask
        m = self._llm(llm, llm_model, llm_url, llm_api_key, llm_timeout)
        return ask(self, question, k=k, write=write, llm=m["kind"], llm_model=m["model"], llm_url=m["url"],
                   llm_api_key=m["api_key"], llm_timeout=float(m["timeout"]), supersede=supersede, **filters)

    def _llm(self, kind, model, url, api_key, timeout) -> dict[str, Any]:
        """The LLM to use: arguments (flags) win over settings (config.toml, WIKIMEM_LLM*)."""
        s = self.settings
        chosen = kind or (s.llm if s.llm != "none" else None)
        return {"kind": None if chosen == "none" else chosen, "model": model or s.llm_model, "url": url or s.llm_url,
                "api_key": api_key or s.llm_api_key, "timeout": timeout or s.llm_timeout}

    def status(self) -> dict[str, Any]:
        from .index.status import status
        return status(self)

    # -- lint (wikimem.lint) ---------------------------------------------------------------------
    def lint(self, paths: Iterable[str] = (), *, select: Iterable[str] = (), ignore: Iterable[str] = (),
             fix: bool = False, fail_on: str | None = None, show_infos: bool | None = None):
        """Run the lint rules (docs/rules/) over the cache, brought up to date first -> LintReport.
        ``paths``: vault-relative files or folders to report on; ``select``/``ignore``: code
        prefixes; ``fix``: apply safe fixes through the writer path, logged in log.md;
        ``show_infos``: report info findings too (None: only when selected or failed on)."""
        from .lint import lint
        return lint(self, paths, select=select, ignore=ignore, fix=fix, fail_on=fail_on, show_infos=show_infos)

    # -- the knowledge graph (wikimem.graph) -------------------------------------------------
    def communities(self, *, resolution: float = 1.0, seed: int = 42, semantic: bool = False, k: int = 5,
                    write: bool = False, obsidian_graph: bool = False):
        """Leiden communities of the page graph -> CommunityReport. With ``write`` (compile
        communities.md) or ``obsidian_graph`` (colour Obsidian's graph view): (report, {"page":
        CompileResult, "obsidian_graph": ObsidianResult}) with the ones asked for (see wikimem.graph)."""
        from .graph.communities import detect
        report = detect(self, resolution=resolution, seed=seed, semantic=semantic, k=k)
        written = {}
        if write:
            from .graph.compile import write_page
            written["page"] = write_page(self, report)
        if obsidian_graph:
            from .graph.obsidian import write_graph_settings
            written["obsidian_graph"] = write_graph_settings(self, report)
        return (report, written) if (write or obsidian_graph) else report

    def neighbors(self, page: str, *, depth: int = 1, types=None, min_weight: float = 0.0, fanout: int = 20):
        """Pages linked to ``page`` within ``depth`` links, both directions -> NeighborReport."""
        from .graph.neighbors import neighbors
        return neighbors(self, page, depth=depth, types=types, min_weight=min_weight, fanout=fanout)

    def path(self, source: str, target: str, *, types=None, directed: bool = False):
        """The shortest link path between two pages -> PathReport."""
        from .graph.neighbors import path
        return path(self, source, target, types=types, directed=directed)

    def stats(self, communities: bool = True) -> dict[str, Any]:
        """Counts from the cache: pages, links, orphans, hubs, communities, memories, coverage."""
        from .graph.stats import stats
        return stats(self, communities=communities)

    def doctor(self):
        """Check the install and this vault end to end -> DoctorReport."""
        from .graph.doctor import diagnose
        return diagnose(self.root, vault=self)

    # -- watch mode (wikimem.watch) ---------------------------------------------------------
    def watch(self, *, debounce_ms: int | None = None, polling: bool = False):
        """A ``Watcher`` that keeps this vault's cache following its files (``start()``, ``stop()``,
        ``wait_idle(timeout)``, ``status()``); one per vault, refused with LockError otherwise."""
        from .watch import Watcher
        return Watcher(self, debounce_ms=debounce_ms, polling=polling)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
