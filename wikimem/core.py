"""The typed context every stage below the facade is handed.

``api.Vault`` is the facade for callers (CLI, MCP, watch entry, Python users). Below it, build,
search, knowledge, lint, graph, qa, agent and watch receive a ``Context``: the vault's files, its
settings and its cache (manifest, lexical and vector stores, embedder), plus the one
read-and-parse step. Stages call each other's functions with it; nothing below the facade imports
``wikimem.api`` or calls a ``Vault`` method (``tests/test_structure.py`` checks this), so the
facade stays a list of short delegations and a store can be replaced without touching its callers.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .config import Settings, load_settings
from .errors import NoteReadError, UsageError
from .caller import FORWARDED_CLIENT
from .model import Chunk, Page, Skipped
from .parse import Resolver, VaultSchema, chunk_page, parse_page, parse_schema
from .vault import FileInfo, NoteFile, VaultFiles
from .vault.files import bad_name, shown_name

if TYPE_CHECKING:
    from .stores.protocol import Stores

log = logging.getLogger(__name__)

VAULT_MARKERS = (".wikimem", "SCHEMA.md", ".obsidian")


@dataclass
class LoadedVault:
    """Every note parsed and its links resolved; what a build or lint pass starts from."""

    pages: dict[str, Page]
    files: tuple[FileInfo, ...]
    skipped: list[Skipped] = field(default_factory=list)


def default_vault_path(path: str | os.PathLike[str] | None) -> Path:
    """``path``, else ``$WIKIMEM_VAULT``, else the nearest folder from the current one upwards that
    looks like a vault (``.wikimem/``, ``SCHEMA.md`` or ``.obsidian/``), as git finds its repository
    from a subfolder; none: an error, since a search typed in the wrong folder must not silently
    index it and leave a cache behind."""
    chosen = path or os.environ.get("WIKIMEM_VAULT") or None
    root = Path(chosen).expanduser() if chosen else client_cwd()
    if not root.is_absolute() and client_cwd() != Path.cwd():  # a forwarded command: the client's folder
        root = client_cwd() / root
    if bad_name(str(root)):  # it would end up in URIs, JSON and SQLite, none of which take such bytes
        raise UsageError(f"the vault folder's path is not valid UTF-8 ({shown_name(str(root))}); rename it")
    if chosen:
        return root
    for folder in (root, *root.parents):
        try:
            if any((folder / marker).exists() for marker in VAULT_MARKERS):
                return folder
        except OSError:  # a parent we may not look into: stop there
            break
    raise UsageError(f"{root} is not in a vault (neither it nor a folder above it has .wikimem/, SCHEMA.md or "
                     ".obsidian/); name the vault (--vault PATH or the vault argument) or set WIKIMEM_VAULT, "
                     f"or {_first_step(root)}")


def vault_from_words(words: list[str], named: str | None) -> tuple[list[str], str | None]:
    """``wikimem search tar archive ~/notes`` as ripgrep takes ``rg PATTERN PATH``: when no
    ``--vault`` was given and the last of two or more query words is a folder that is a vault root
    (it holds .wikimem/, SCHEMA.md or .obsidian/), that word names the vault instead of being
    searched for. A vault's subfolder (``concepts``) holds no marker, so a word that happens to
    name one stays a word."""
    if named is not None or len(words) < 2:
        return words, named
    last = words[-1]
    folder = Path(last).expanduser()
    if not folder.is_absolute():
        folder = client_cwd() / folder
    try:
        is_root = folder.is_dir() and any((folder / marker).exists() for marker in VAULT_MARKERS)
    except (OSError, ValueError):  # a word no path can be (NUL, too long): it is a word
        is_root = False
    return (words[:-1], last) if is_root else (words, named)


def _first_step(root: Path) -> str:
    """A folder that already holds notes is someone's vault (a team's, a synced one) that has never
    been indexed: ``index`` uses it as it is. ``init`` would scaffold SCHEMA.md, index.md, log.md
    and the wiki's folders into it, so it is only suggested for a folder without notes."""
    try:
        with os.scandir(root) as entries:
            holds_notes = any(e.name.lower().endswith(".md") or (e.is_dir() and not e.name.startswith("."))
                              for e in entries)
    except OSError:
        holds_notes = False
    if holds_notes:
        return "run `wikimem index .` to index the notes here as a vault (nothing in them is changed)"
    return "run `wikimem init .` to make this folder a new vault"


def client_cwd() -> Path:
    """The folder the command was typed in: this process's, or a forwarded command's client's."""
    client = FORWARDED_CLIENT.get()
    return Path(client["cwd"]) if client else Path.cwd()


class Context:
    """One open vault as the stages see it: ``files`` (the only reader and writer of the vault's
    bytes), ``settings`` (validated, defaults < .wikimem.toml < env < overrides) and ``cache`` (the
    ``.wikimem/`` stores, opened on first use), with parsing and chunking by those settings."""

    def __init__(self, root: Path, overrides: Mapping[str, Any] | None = None):
        self.files = VaultFiles(root)
        self.root: Path = self.files.root
        self.settings: Settings = load_settings(self.root, overrides)
        # what the caller set over the file and environment (a flag): a detached job started for this
        # vault (index/passages_job.py) is given them, so it embeds with the same settings
        self.overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self.files.max_bytes = self.settings.max_bytes
        self._cache: Stores | None = None

    @property
    def cache(self) -> "Stores":
        if self._cache is None:
            from .stores import open_stores
            self._cache = open_stores(self.root, self.settings)
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # -- reading and parsing ---------------------------------------------------------------
    def parse_note(self, rel: str, trusted: bool = False) -> tuple[Page, NoteFile]:
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
        if not (self.root / "SCHEMA.md").exists():
            return VaultSchema()
        return parse_schema(self.files.read_note("SCHEMA.md").text)
