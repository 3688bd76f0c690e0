"""A page a person names on the command line (or an agent in a tool call), found the way
Obsidian resolves ``[[name]]``: a vault-relative path (``.md`` optional), then the file name
(case-insensitive; the shortest path wins, as for a link), then the title, then an alias.

One rule for every command that takes a page (history, supersede, neighbors, path, parse --page),
so a page is named the same way everywhere. A name that fits several pages equally well is an
error listing them, never a guess.
"""
from __future__ import annotations

import unicodedata
from typing import Iterable, Mapping

from ..errors import AmbiguousPageError, PageNotFoundError
from .resolve import Resolver


def clean_name(name: str) -> str:
    """``./a/b.md``, ``[[b|shown]]``, ``[[b#heading]]`` and ``a\\b`` -> the name they give."""
    wanted = name.strip().replace("\\", "/")
    while wanted.startswith("./"):
        wanted = wanted[2:]
    if wanted.startswith("[[") and wanted.endswith("]]"):
        wanted = wanted[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    return wanted


def find_page(name: str, pages: Mapping[str, tuple[str, Iterable[str]]], what: str = "page") -> str:
    """The path of the page ``name`` names; ``pages`` maps each note's path to (title, aliases).
    Raises PageNotFoundError or AmbiguousPageError (with the candidates)."""
    wanted = clean_name(name)
    if not wanted:
        raise PageNotFoundError(f"{what} not given (an empty name)")
    for candidate in (wanted, wanted + ".md"):
        if candidate in pages:
            return candidate
    if not wanted.isascii():  # typed in the other Unicode form (a macOS file name is decomposed)
        composed = unicodedata.normalize("NFC", wanted)
        forms = {unicodedata.normalize("NFC", path): path for path in sorted(pages, reverse=True)}
        for candidate in (composed, composed + ".md"):
            if candidate in forms:
                return forms[candidate]
        if any(not p.isascii() and not unicodedata.is_normalized("NFC", p) for p in pages):
            pages = {unicodedata.normalize("NFC", path): (unicodedata.normalize("NFC", title or ""),
                                                          tuple(unicodedata.normalize("NFC", a) for a in aliases))
                     for path, (title, aliases) in pages.items()}
            return forms.get(_find(composed, name, pages, what), "")
        wanted = composed
    return _find(wanted, name, pages, what)


def _find(wanted: str, name: str, pages: Mapping[str, tuple[str, Iterable[str]]], what: str) -> str:
    resolver = Resolver(pages, {}, {path: tuple(aliases) for path, (_, aliases) in pages.items()})
    low = unicodedata.normalize("NFC", wanted).lower()
    # a path or file name, as a wikilink finds it (not aliases yet: a title comes before them)
    path_hits = resolver.lower.get(low) or resolver.lower.get(low + ".md")
    if path_hits:
        return path_hits[0]
    found, ties = resolver.lookup(wanted)
    if found is not None and found in resolver.by_name.get(low.rsplit("/", 1)[-1], ()):
        if ties:
            raise _ambiguous(name, ties, what)
        return found
    titles = sorted(path for path, (title, _) in pages.items()
                    if unicodedata.normalize("NFC", (title or "").strip()).lower() == low)
    if len(titles) == 1:
        return titles[0]
    if titles:
        raise _ambiguous(name, tuple(titles), what)
    aliased = sorted(set(resolver.aliases.get(low, ())))
    if len(aliased) == 1:
        return aliased[0]
    if aliased:
        raise _ambiguous(name, tuple(aliased), what)
    near = near_names(low, pages)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
    raise PageNotFoundError(f"{what} not found: {name!r} ({hint}give a vault-relative path, a file name, a title or "
                            "an alias; run `wikimem index` if the page is new)")


def near_names(low: str, pages: Mapping[str, tuple[str, Iterable[str]]], most: int = 3) -> list[str]:
    """Up to ``most`` names of pages (file names, titles, aliases) spelled nearly as ``low`` (a
    typo: "gzp" for gzip), as git suggests a command; a name shared by several pages is given as
    one of their paths, which ``find_page`` takes without doubt."""
    import difflib

    names: dict[str, set[str]] = {}
    for path, (title, aliases) in pages.items():
        stem = path.rsplit("/", 1)[-1]
        stem = stem[:-3] if stem.lower().endswith(".md") else stem
        for shown in (stem, title or "", *aliases):
            if shown.strip():
                names.setdefault(shown.strip(), set()).add(path)
    by_low: dict[str, str] = {}
    for shown in sorted(names):
        by_low.setdefault(shown.lower(), shown)
    wanted = low.rsplit("/", 1)[-1].removesuffix(".md")
    found = []
    for close in difflib.get_close_matches(wanted, list(by_low), n=most, cutoff=0.75):
        shown = by_low[close]
        paths = names[shown]
        pick = shown if len(paths) == 1 else sorted(paths)[0]
        if pick not in found:
            found.append(pick)
    return found


def _ambiguous(name: str, candidates: tuple[str, ...], what: str) -> AmbiguousPageError:
    shown = ", ".join(candidates[:10]) + (f" and {len(candidates) - 10} more" if len(candidates) > 10 else "")
    return AmbiguousPageError(f"{name!r} names several {what}s: {shown}; give the path", candidates)
