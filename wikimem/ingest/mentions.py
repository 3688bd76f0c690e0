"""The wiki pages a source names, for its source page's "Mentions" line.

Any page of the vault can be named, not only entity/concept/comparison pages: an ordinary Obsidian
vault is folders of plain notes with no ``type:``. Left out are raw/ (sources), query, memory and
source pages (answers, agents' facts and other sources are not what a source talks about),
superseded pages, and the structural pages (index.md, log.md, communities.md, SCHEMA.md).

A page is named when the source writes its title or one of its aliases as whole words, in any case.
A name that is short (under 4 characters) or an everyday word ("Home", "Notes", "Ideas", "The"...)
would turn up in any text, so a bare word is not enough for it: the source must link it
(``[[Home]]``, ``[Home](Home.md)``, a link's shown text), or, for a name written in capitals like
"AI" or "RRF", write it exactly so at least twice. The most-named pages come first, at most
``LIMIT`` of them.
"""
from __future__ import annotations

import json
import logging
import re
from collections import Counter

from ..stores.analysis import STOP_WORDS
from ..index.update import update
from ..vault.files import is_raw_path

log = logging.getLogger(__name__)

LIMIT = 20
MIN_LENGTH = 4  # shorter names need more than a bare word
EXCLUDED_TYPES = ("query", "memory", "source")
STRUCTURAL = ("index.md", "log.md", "communities.md", "SCHEMA.md")
# Names a note in an ordinary vault is often given that are also ordinary words.
COMMON_NAMES = frozenset("""
home index inbox notes note ideas idea todo todos tasks task journal diary daily draft drafts misc
archive archives projects project readme welcome start overview summary introduction intro reading
references reference links resources bookmarks meetings meeting people person books book templates
template untitled scratch log changelog faq help about contact blog posts post work personal private
test tests example examples other general random stuff things list lists
""".split())
_LINK_TEXT = re.compile(r"!?\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]|!?\[([^\]]*)\]\(([^)]*)\)")


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _weak(name: str) -> bool:
    words = re.findall(r"\w+", name.casefold())
    short = len(name) < (2 if _HAN.search(name) else MIN_LENGTH)  # 向量检索: four characters, two words
    return short or not words or all(w in STOP_WORDS or w in COMMON_NAMES or w.isdigit() for w in words)


def _capitals(name: str) -> bool:
    """Written in capitals as a name is ("AI", "RRF", "GPT-4"), not just capitalised ("Home", "Go")."""
    return sum(c.isupper() for c in name) >= 2 and not any(c.islower() for c in name)


def _pattern(name: str, flags=re.I) -> re.Pattern[str]:
    """Whole words, any run of spaces between them; Chinese has no spaces between words, so a name
    ending in a Han character may touch the text around it."""
    words = r"\s+".join(re.escape(w) for w in name.split())
    before = "" if _HAN.match(name) else r"(?<!\w)"
    after = "" if _HAN.search(name[-1]) else r"(?!\w)"
    return re.compile(before + words + after, flags)


def _linked_names(text: str) -> set[str]:
    """What the source's own links name: wikilink targets, shown text and Markdown link targets
    (their file name without .md)."""
    names: set[str] = set()
    for m in _LINK_TEXT.finditer(text):
        for part in (m.group(1), m.group(2), m.group(3)):
            if part:
                names.add(" ".join(part.split()).casefold())
        if m.group(4):
            target = m.group(4).split("#", 1)[0].strip().strip("<>").rsplit("/", 1)[-1]
            target = re.sub(r"\.md$", "", target.replace("%20", " "), flags=re.I)
            if target:
                names.add(" ".join(target.split()).casefold())
    names.discard("")
    return names


def _candidates(ctx) -> list[tuple[str, str, list[str]]]:
    """(path, title, aliases) of the pages a source may name, from the cache."""
    rows = ctx.cache.manifest.page_names_and_kinds()
    out = []
    for path, title, aliases, type_, status in rows:
        if (is_raw_path(path) or path in STRUCTURAL or (type_ or "") in EXCLUDED_TYPES
                or (status or "") == "superseded" or not path.lower().endswith((".md", ".markdown"))):
            continue
        try:
            names = [str(a) for a in json.loads(aliases or "[]") if str(a).strip()]
        except (ValueError, TypeError):
            names = []
        out.append((path, str(title or ""), names))
    return out


def wiki_pages(ctx) -> list[tuple[str, str, list[str]]]:
    """``_candidates``; a vault never indexed has no pages in the cache yet, so its lexical side is
    built first (when this process may write the cache). Empty when the cache cannot be read."""
    try:
        pages = _candidates(ctx)
    except Exception:  # noqa: BLE001 - no cache yet
        pages = []
    if not pages:
        try:
            if ctx.cache.writable():
                update(ctx, embed=False, wait=5.0)
            pages = _candidates(ctx)
        except Exception:  # noqa: BLE001 - mentions are a convenience; the cache follows with `wikimem index`
            log.debug("no mentions: the cache could not be read", exc_info=True)
            return []
    return pages


def _link(path: str, title: str, stems: Counter[str]) -> str:
    """``[[stem]]`` (``[[folder/stem]]`` when the file name is not unique), ``|title`` when the
    title is not that, so the link resolves whatever the page's title and shows the title."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    target = stem if stems[stem.casefold()] == 1 else path.rsplit(".", 1)[0]
    return f"[[{target}]]" if title == target or not title else f"[[{target}|{title}]]"


def named_pages(ctx, text: str, limit: int = LIMIT) -> list[str]:
    """Links to the pages ``text`` names, most named first (then by title), at most ``limit``."""
    pages = wiki_pages(ctx)
    body = re.sub(r"```.*?```", " ", text, flags=re.S)
    linked = _linked_names(body)
    shown = _LINK_TEXT.sub(lambda m: f" {m.group(2) or m.group(1) or m.group(3) or ''} ", body)
    stems = Counter(p.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold() for p, _, _ in pages)
    low = shown.casefold()
    words = set(re.findall(r"\w+", low))  # a cheap first test, so a big vault costs set look-ups, not scans
    found: dict[str, tuple[int, str]] = {}
    for path, title, aliases in pages:
        count = 0
        for name in dict.fromkeys([title, *aliases]):
            name = " ".join(name.split())
            first = re.findall(r"\w+", name.casefold())
            if not name or not (name.casefold() in low if _HAN.search(name) else first and set(first) <= words):
                continue
            if not _weak(name):
                count += len(_pattern(name).findall(shown))
            elif name.casefold() in linked:
                count += 1
            elif _capitals(name) and len(exact := _pattern(name, 0).findall(shown)) >= 2:
                count += len(exact)
        if count:
            found[path] = (count, title)
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[1][1].casefold(), kv[0]))
    return [_link(path, title, stems) for path, (_, title) in ranked[:limit]]
