"""Rewriting the links that point at a page that moved (``move_page``), and only those.

The parser says which links resolved to the old page and on which line (frontmatter links: which
key). On those lines, each written form is rewritten in place, keeping everything around it:
- wikilinks and embeds, ``[[Old]]``, ``[[Old#H]]``, ``![[Old]]``, ``[[Old|shown]]`` and the table form
  ``[[Old\\|shown]]``;
- Markdown links ``[t](Old.md)``, with a title ``[t](Old.md "title")``, in angle brackets
  ``[t](<Old name.md>)``, relative ``[t](./Old.md)`` (written back as the new vault path), %-encoded ``[t](Old%20name.md)``;
- the moved page's own links to itself by name (``[[Old#Old]]`` inside Old).
Left alone: a link that reached the page through an alias (``[[Alias]]`` still names it after the
move: aliases move with the page), a link to a heading of the same page (``[[#H]]``), and anything
inside inline code on that line (fences are not links, so the parser gives no line there).
Generated sections (parse/generated.py) whose text a rewrite changed get their recorded hash
recomputed, so wikimem still owns them and the next write does not keep a stale copy.
"""
from __future__ import annotations

import re
from urllib.parse import quote, unquote

from ..parse import generated

_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def link_target(new: str, was: str, note_paths: list[str]) -> str:
    """How a link written as ``was`` names ``new``: its file name when that is unique (and the link
    was written that way), else its path without ``.md``."""
    stem = new.rsplit("/", 1)[-1][:-3] if new.lower().endswith(".md") else new.rsplit("/", 1)[-1]
    same = [p for p in note_paths if p.rsplit("/", 1)[-1].lower() == new.rsplit("/", 1)[-1].lower()]
    if "/" not in was and same == [new]:
        return stem
    return new[:-3] if new.lower().endswith(".md") else new


def _names_the_file(target: str, old: str) -> bool:
    """Whether a link written ``target`` names ``old`` by its file name or path (not by an alias)."""
    t = unquote(target).strip().lstrip("./").casefold()
    t = t[:-3] if t.endswith(".md") else t
    path = old[:-3].casefold() if old.lower().endswith(".md") else old.casefold()
    return bool(t) and (t == path or t == path.rsplit("/", 1)[-1] or path.endswith("/" + t))


def _outside_code(line: str):
    spans = [m.span() for m in _CODE_SPAN.finditer(line)]
    return lambda pos: not any(a <= pos < b for a, b in spans)


def _rewrite_line(line: str, link, new: str, note_paths: list[str]) -> str:
    free = _outside_code(line)
    if link.kind == "markdown":
        encoded = {link.target, quote(link.target), quote(link.target, safe="/#%")}
        alternatives = "|".join(re.escape(t) for t in sorted(encoded, key=len, reverse=True))
        pattern = re.compile(r"(\]\(\s*)(<)?(\./)?(" + alternatives + r")(?=[#)>\s])")

        def repl(m: re.Match) -> str:
            if not free(m.start()):
                return m.group(0)
            target = new if m.group(2) else quote(new)
            return m.group(1) + (m.group(2) or "") + target  # a vault path: "./" (this folder) would be wrong
        return pattern.sub(repl, line)
    target = link_target(new, link.target, note_paths)
    pattern = re.compile(r"(!?\[\[\s*)(" + re.escape(link.target) + r")(\s*)(?=\\?[#|\]])")

    def repl(m: re.Match) -> str:
        return m.group(1) + target + m.group(3) if free(m.start()) else m.group(0)
    return pattern.sub(repl, line)


def relink(text: str, links, old: str, new: str, note_paths: list[str], body_line: int) -> str:
    """``text`` with every link of ``links`` that resolved to ``old`` by its name pointing at
    ``new``; generated sections it changed keep their ownership."""
    lines = text.split("\n")
    for link in links:
        if link.resolved != old or not link.target or not _names_the_file(link.target, old):
            continue
        rows = range(body_line) if link.line is None else [link.line]
        for i in rows:
            if 0 <= i < len(lines):
                lines[i] = _rewrite_line(lines[i], link, new, note_paths)
    after = "\n".join(lines)
    return generated.refresh_hashes(text, after) if after != text else text
