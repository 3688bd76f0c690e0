"""What every rule reads: the vault's parsed pages (from the cache), file hashes, SCHEMA.md and the
lint options, plus a few derived maps (inbound links, index.md listing, supersede claims) built
once on first use and shared by the rules that need them."""
from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import Link, Page
from ..parse.schema import VaultSchema
from ..vault.files import is_raw_path
from .options import LintOptions
from .registry import Finding, Fix
from .text import WORD, strip_markup

if TYPE_CHECKING:
    from ..stores.protocol import Stores

SPECIAL_PAGES = ("SCHEMA.md", "index.md", "log.md")
NOTE_SUFFIXES = (".md", ".markdown")


def is_note_target(target: str) -> bool:
    """A link target that names a note (no extension, or .md), not an attachment."""
    name = target.rsplit("/", 1)[-1]
    if name.lower().endswith(NOTE_SUFFIXES):
        return True
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    # ``[[BM25 (early notes)]]``, ``[[v1.2 release]]``: a "suffix" with spaces or > 5 chars is part of the name
    return not (ext and ext.isalnum() and len(ext) <= 5 and " " not in ext)


class LintContext:
    def __init__(self, cache: "Stores", pages: Mapping[str, Page], files: Mapping[str, tuple[str, int, int]],
                 schema: VaultSchema, options: LintOptions):
        self.cache = cache  # the manifest and vectors a rule may read (never written by a rule)
        self.pages = pages
        self.files = files  # every scanned file: path -> (sha256, size, mtime_ns)
        self.schema = schema
        self.options = options
        self.code = ""  # the rule running now (set by the runner)
        self.notices: list[str] = []
        self._prose: dict[str, str] = {}
        self._words: dict[str, list[str]] = {}
        from .memo import PageMemo
        self.memo = PageMemo(cache.dir, cache.writable())

    # -- findings -------------------------------------------------------------------------------
    def finding(self, path: str, line: int | None, message: str, *, column: int = 1, severity: str | None = None,
                fix: Fix | None = None) -> Finding:
        return Finding(path, max(1, line or 1), max(1, column), self.code, severity or "", message, fix)

    def rule_options(self) -> Mapping[str, Any]:
        return self.options.rule_options(self.code)

    def notice(self, message: str) -> None:
        self.notices.append(f"{self.code}: {message}")

    # -- lines ----------------------------------------------------------------------------------
    @staticmethod
    def key_line(page: Page, key: str | None) -> int:
        """1-based file line of a frontmatter key (line 1 when it cannot be found)."""
        raw = page.frontmatter.raw
        if raw and key:
            m = re.search(rf"^{re.escape(key)}\s*:", raw, re.M)
            if m:
                return raw.count("\n", 0, m.start()) + 2  # +1: 1-based, +1: the opening ---
        return 1

    def link_line(self, page: Page, link: Link) -> int:
        return link.line + 1 if link.line is not None else self.key_line(page, link.key)

    # -- page sets ------------------------------------------------------------------------------
    def wiki_pages(self) -> Iterator[Page]:
        """Notes that are wiki pages: not raw/ sources, not SCHEMA.md / index.md / log.md."""
        for path in sorted(self.pages):
            if path not in SPECIAL_PAGES and not is_raw_path(path):
                yield self.pages[path]

    def is_superseded(self, path: str) -> bool:
        return path in self.superseded

    @cached_property
    def superseded(self) -> frozenset[str]:
        """Pages marked ``status: superseded`` or superseded by a current page."""
        return frozenset([p for p, page in self.pages.items() if page.status == "superseded"] + list(self.superseded_by))

    def prose(self, page: Page) -> str:
        """The body without code, links and URLs (shared by the content rules, computed once)."""
        text = self._prose.get(page.path)
        if text is None:
            text = self._prose[page.path] = strip_markup(page.body)
        return text

    def words(self, page: Page) -> list[str]:
        """The prose's word tokens, lower case (computed once per page)."""
        words = self._words.get(page.path)
        if words is None:
            words = self._words[page.path] = WORD.findall(self.prose(page).lower())
        return words

    # -- derived maps (built once) ----------------------------------------------------------------
    @cached_property
    def inbound(self) -> dict[str, set[str]]:
        """Resolved target -> pages linking to it (self-links, index.md and log.md not counted)."""
        found: dict[str, set[str]] = {}
        for path, page in self.pages.items():
            if path in SPECIAL_PAGES:
                continue
            for link in page.links:
                if link.resolved and link.resolved != path:
                    found.setdefault(link.resolved, set()).add(path)
        return found

    @cached_property
    def index_listed(self) -> set[str]:
        page = self.pages.get("index.md")
        return {l.resolved for l in page.links if l.resolved} if page else set()

    @cached_property
    def superseded_by(self) -> dict[str, list[str]]:
        """Old page -> the non-superseded pages whose ``supersedes`` resolves to it."""
        claims: dict[str, list[str]] = {}
        for path, page in sorted(self.pages.items()):
            if page.status == "superseded":
                continue
            for link in page.links:
                if link.kind == "frontmatter" and link.key == "supersedes" and link.resolved \
                        and link.resolved != path:
                    claims.setdefault(link.resolved, []).append(path)
        return claims

    @cached_property
    def names(self) -> dict[str, str]:
        """Lower-case title / alias / file stem -> page path (first by path wins)."""
        found: dict[str, str] = {}
        for page in self.wiki_pages():
            stem = page.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            for name in (page.title, stem, *page.aliases):
                key = name.strip().lower()
                if key:
                    found.setdefault(key, page.path)
        return found
