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
from .errors import ConflictError, NoteReadError, VaultError, WikimemError
from .model import Chunk, Hit, Page, Skipped
from .parse import Resolver, VaultSchema, chunk_page, parse_page, parse_schema
from .parse import frontmatter as fm
from .vault import FileInfo, VaultFiles

log = logging.getLogger(__name__)

VAULT_FOLDERS = ("raw/articles", "raw/papers", "raw/transcripts", "raw/assets", "entities", "concepts",
                 "comparisons", "queries", "memories")
TEMPLATE_FILES = ("SCHEMA.md", "index.md", "log.md")


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
    for folder in VAULT_FOLDERS:
        target = root / folder
        if target.is_dir():
            existing.append(folder + "/")
        else:
            target.mkdir(parents=True, exist_ok=True)
            created.append(folder + "/")
    return InitReport(str(root.resolve()), tuple(created), tuple(existing))


def default_vault_path(path: str | os.PathLike[str] | None) -> Path:
    if path:
        return Path(path).expanduser()
    env = os.environ.get("WIKIMEM_VAULT")
    return Path(env).expanduser() if env else Path.cwd()


def open_vault(path: str | os.PathLike[str] | None = None, **overrides: Any) -> "Vault":
    """Open a vault (``path``, else ``$WIKIMEM_VAULT``, else the current folder)."""
    return Vault(default_vault_path(path), overrides)


class Vault:
    def __init__(self, root: Path, overrides: Mapping[str, Any] | None = None):
        self.files = VaultFiles(root)
        self.root = self.files.root
        self.settings: Settings = load_settings(self.root, overrides)
        self.files.max_bytes = self.settings.max_bytes
        self._index = None

    # -- reading and parsing ---------------------------------------------------------------
    def parse_file(self, rel: str, trusted: bool = False) -> Page:
        note = self.files.read_note(rel, trusted=trusted)
        return parse_page(rel, note.text, note.sha256)

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

    # -- writing ---------------------------------------------------------------------------
    def update_frontmatter(self, rel: str, changes: Mapping[str, Any], expected_sha256: str | None = None) -> Page:
        """Change frontmatter keys of one note atomically; everything else stays byte for byte.

        ``expected_sha256``: the hash the caller saw (default: the hash read now). A file changed
        meanwhile raises ConflictError.
        """
        note = self.files.read_note(rel)
        if expected_sha256 is not None and expected_sha256 != note.sha256:
            raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting")
        text = note.text.replace("\r\n", "\n")
        front, body = fm.parse(text)
        if front.error:
            raise WikimemError(f"{rel}: {front.error}; fix the frontmatter before wikimem edits it")
        new_raw = fm.update(front.raw, front.data, changes)
        new_text = fm.compose(new_raw, body)
        self.files.write_note(rel, new_text, expected_sha256=note.sha256, newline=note.newline, bom=note.bom)
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

    def append_log(self, operation: str, detail: str) -> str:
        """Append one dated line to log.md; returns the line."""
        from .knowledge.writer import append_log
        return append_log(self, operation, detail)

    def add_to_index(self, rel: str, summary: str = "") -> bool:
        """Link ``rel`` under its type's section of index.md (idempotent); returns whether added."""
        from .knowledge.writer import add_to_index
        return add_to_index(self, rel, summary)

    # -- index and search (wikimem.index) --------------------------------------------------
    @property
    def cache(self):
        if self._index is None:
            from .index.cache import Cache
            self._index = Cache(self)
        return self._index

    def index(self, rebuild: bool = False, embed: bool = True, progress=None):
        from .index.build import build
        return build(self, rebuild=rebuild, embed=embed, progress=progress)

    def search(self, query: str, *, limit: int = 10, mode: str = "hybrid", **filters: Any) -> "SearchResult":
        """Hybrid search. Filters: folder, type, tags, since, until, include_superseded;
        ``per_page`` (default 1) caps hits per page (0: no cap, e.g. for transcripts)."""
        from .search import search
        return search(self, query, limit=limit, mode=mode, **filters)

    def import_transcripts(self, sessions, folder: str = "raw/transcripts") -> list[str]:
        """Write conversation sessions as transcript notes (see wikimem.ingest.transcript)."""
        from .ingest import import_sessions
        return import_sessions(self, sessions, folder)

    def status(self) -> dict[str, Any]:
        from .index.build import status
        return status(self)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    degraded: tuple[str, ...] = ()
    coverage: float = 1.0
    took_ms: float = 0.0
    notices: tuple[str, ...] = ()

    def __iter__(self) -> Iterable[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "degraded": list(self.degraded),
                "vector_coverage": round(self.coverage, 4), "took_ms": round(self.took_ms, 2),
                "notices": list(self.notices), "hits": [h.to_dict() for h in self.hits]}
