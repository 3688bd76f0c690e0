"""Obsidian-style link resolution.

Order: exact vault-relative path (a Markdown link's path is also tried relative to its note),
then case-insensitive basename (shortest path wins; a tie is ambiguous and reported), then aliases.
Heading and block anchors are checked against the target page. Unresolved links are kept.
"""
from __future__ import annotations

import posixpath
import re
import unicodedata
from typing import Iterable, Mapping

from ..model import Link, Page

_NOTE_EXT = (".md", ".markdown")
_UNSET = object()
# Obsidian compares a link's heading with the page's headings after turning punctuation (``:`` ``?``
# ``.`` ``/`` ``(`` ``)`` backticks, ``#`` ``|`` ``^`` ``[`` ``]`` ...) into spaces and collapsing
# whitespace, case-insensitively: ``[[FAQ#How large can each remote vault be]]`` finds
# ``### How large can each remote vault be?`` and ``[[Functions#hasTag]]`` finds ``### `hasTag()` ``.
# Any non-word character (Unicode-aware, so CJK letters stay) counts as punctuation, ``_`` too.
_ANCHOR_NORM = re.compile(r"[\W_]+")


def norm_heading(text: str) -> str:
    """A heading (or a link's heading part) as Obsidian compares it."""
    return " ".join(_ANCHOR_NORM.sub(" ", text).split()).lower()



def _strip_note_ext(path: str) -> str:
    low = path.lower()
    for ext in _NOTE_EXT:
        if low.endswith(ext):
            return path[: -len(ext)]
    return path


class Resolver:
    """Built once per build from every file path and the parsed pages."""

    def __init__(self, paths: Iterable[str], pages: Mapping[str, Page],
                 aliases: Mapping[str, Iterable[str]] | None = None):
        """``aliases`` (path -> aliases) adds pages known only from the cache manifest."""
        self.pages = pages
        self._found: dict[tuple[str, str | None], tuple[str | None, tuple[str, ...]]] = {}
        self._anchors: dict[tuple[str, tuple[str, ...], str | None], bool | None] = {}
        self._page_names: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self.exact: dict[str, str] = {}
        self.lower: dict[str, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        self.aliases: dict[str, list[str]] = {}
        # Names that are one name in two Unicode forms (NFC "Café.md" and NFD "Café.md"): macOS keeps
        # one file, Linux two. Case-insensitive keys are NFC, so a link typed in either form finds
        # the page; when both forms exist, the link is ambiguous (WM104) and resolves to the one
        # spelled as the link is, else the NFC one.
        self.twins: dict[str, tuple[str, ...]] = {}
        exact, lower, by_name = self.exact, self.lower, self.by_name
        forms: dict[str, list[str]] = {}
        for path in sorted(paths):  # one pass, few dict operations: this runs over every file on each build
            if not path.isascii():
                nfc = unicodedata.normalize("NFC", path)
                forms.setdefault(nfc.lower(), []).append(path)
                path_key = nfc
            else:
                path_key = path
            low = path_key.lower()
            cut = path_key.rfind("/") + 1
            keys = [(path, low)]
            if low.endswith(_NOTE_EXT):
                stem = path[: -len(".md")] if low.endswith(".md") else path[: -len(".markdown")]
                keys.append((stem, low[: -len(".md")] if low.endswith(".md") else low[: -len(".markdown")]))
            for key, key_low in keys:
                if key not in exact:
                    exact[key] = path
                hits = lower.get(key_low)
                if hits is None:
                    lower[key_low] = [path]
                else:
                    hits.append(path)
                name = key_low[cut:]
                hits = by_name.get(name)
                if hits is None:
                    by_name[name] = [path]
                else:
                    hits.append(path)
        for group in forms.values():
            if len(group) > 1:
                ranked = tuple(sorted(group, key=lambda p: (unicodedata.normalize("NFC", p) != p, p)))
                for p in group:
                    self.twins[p] = ranked
        known = {path: page.aliases for path, page in pages.items()}
        for path, names in (aliases or {}).items():
            known.setdefault(path, tuple(names))
        for path, names in known.items():
            for alias in names:
                self.aliases.setdefault(alias.strip().lower(), []).append(path)

    def with_pages(self, pages: Mapping[str, Page]) -> "Resolver":
        """The same path and alias index (valid while no file is added, removed or renamed and no
        alias changes), checking anchors against ``pages``."""
        new = object.__new__(Resolver)
        new.__dict__.update(self.__dict__, pages=pages, _anchors={}, _page_names={})
        return new

    def lookup(self, target: str, source: str | None = None, relative: bool = False) -> tuple[str | None, tuple[str, ...]]:
        """Return (resolved path or None, ambiguous candidates).

        Memoised: a vault links to each page from many places (10k pages: 73k links, 10k targets).
        The answer depends on the target and, for a relative Markdown link, the source's folder."""
        t = target.strip().replace("\\", "/")
        if not t:
            return source, ()
        key = (t, source.rpartition("/")[0] if relative and source else None)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._lookup(t, source, relative)
        return found

    def _lookup(self, t: str, source: str | None, relative: bool) -> tuple[str | None, tuple[str, ...]]:
        found, ties = self._lookup_name(t, source, relative)
        if found is not None and found in self.twins and not ties:
            twins = self.twins[found]
            exact = t.lstrip("/")
            spelled = [p for p in twins if p == exact or _strip_note_ext(p) == exact
                       or _strip_note_ext(p).rsplit("/", 1)[-1] == exact.rsplit("/", 1)[-1]]
            return (spelled[0] if spelled else twins[0]), twins
        return found, ties

    def _lookup_name(self, t: str, source: str | None, relative: bool) -> tuple[str | None, tuple[str, ...]]:
        if not t.isascii():
            t_key = unicodedata.normalize("NFC", t)
        else:
            t_key = t
        candidates_rel = []
        if relative and source and "/" in source:
            candidates_rel.append(posixpath.normpath(posixpath.join(source.rsplit("/", 1)[0], t)))
        for cand in candidates_rel + [t.lstrip("/")]:
            if cand in self.exact:
                return self.exact[cand], ()
            hits = self.lower.get(unicodedata.normalize("NFC", cand).lower() if not cand.isascii() else cand.lower())
            if hits:
                return hits[0], ()
        name = t_key.rsplit("/", 1)[-1].lower()
        hits = self.by_name.get(name)
        if hits and "/" in t:  # a partial path: [[folder/Page]] matches .../folder/Page
            suffix = "/" + t_key.lower().lstrip("/")
            hits = [h for h in hits if ("/" + _strip_note_ext(unicodedata.normalize("NFC", h)).lower()).endswith(suffix)
                    or ("/" + unicodedata.normalize("NFC", h).lower()).endswith(suffix)]
        if hits:
            uniq = sorted(set(hits), key=lambda p: (p.count("/"), len(p), p))
            best = uniq[0]
            ties = tuple(p for p in uniq if p.count("/") == best.count("/") and len(p) == len(best))
            return best, ties if len(ties) > 1 else ()
        hits = self.aliases.get(t.lower())
        if hits:
            uniq = sorted(set(hits))
            return uniq[0], tuple(uniq) if len(uniq) > 1 else ()
        return None, ()

    def check_anchor(self, link: Link, path: str) -> bool | None:
        page = self.pages.get(path)
        if page is None:
            return None if not (link.heading or link.block) else False
        if link.block:
            return link.block in self._names(path, page)[0]
        if len(link.heading) == 1:
            return norm_heading(link.heading[0]) in self._names(path, page)[1]
        if link.heading:
            wanted = [norm_heading(h) for h in link.heading]
            idx = 0
            level = 0
            for h in page.headings:
                if norm_heading(h.text) == wanted[idx] and (idx == 0 or h.level > level):
                    level = h.level
                    idx += 1
                    if idx == len(wanted):
                        return True
            return False
        return None

    def _names(self, path: str, page: Page) -> tuple[frozenset[str], frozenset[str]]:
        """A page's block ids and normalised headings, as sets made once: 40k links to distinct
        blocks of one page each scanned all its blocks (quadratic in the note)."""
        names = self._page_names.get(path)
        if names is None:
            names = self._page_names[path] = (frozenset(b.id for b in page.blocks),
                                              frozenset(norm_heading(h.text) for h in page.headings))
        return names

    def resolve(self, link: Link, source: str) -> Link:
        resolved, ties = self.lookup(link.target, source, relative=link.kind == "markdown")
        anchor_ok = None
        if resolved is not None and (link.heading or link.block):
            anchor_key = (resolved, link.heading, link.block)
            anchor_ok = self._anchors.get(anchor_key, _UNSET)
            if anchor_ok is _UNSET:
                anchor_ok = self._anchors[anchor_key] = self.check_anchor(link, resolved)
        # dataclasses.replace is ~5x slower than this and runs once per link in the vault
        new = object.__new__(Link)
        new.__dict__.update(link.__dict__, resolved=resolved, candidates=ties, anchor_ok=anchor_ok)
        return new

    def resolve_page(self, page: Page) -> Page:
        new = object.__new__(Page)
        new.__dict__.update(page.__dict__, links=tuple(self.resolve(l, page.path) for l in page.links))
        return new
