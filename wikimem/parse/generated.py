"""Sections wikimem generates inside pages people also edit (query answers first).

wikimem owns only what it generated and marked; a person's lines around it survive every later
write. A generated section sits between two HTML comments (hidden in Obsidian's reading view):

    <!-- wikimem:begin answer sha256=1f2e3d4c5b6a -->
    ...what wikimem wrote...
    <!-- wikimem:end answer -->

The begin marker records the hash of what wikimem wrote. A later write replaces the section only
while it still holds exactly that; a section a person edited is kept as their text (its markers
removed) and the new section is written just above it, so nothing anyone wrote is lost.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_BEGIN = re.compile(r"^<!-- wikimem:begin (?P<name>[\w-]+)(?: sha256=(?P<sha>[0-9a-f]+))? -->[ \t]*$", re.MULTILINE)
HASH_CHARS = 12


def _digest(content: str) -> str:
    normal = "\n".join(line.rstrip() for line in content.replace("\r\n", "\n").strip("\n").split("\n"))
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:HASH_CHARS]


def render(name: str, content: str) -> str:
    """``content`` as a marked section named ``name`` (ends with a newline)."""
    content = content.strip("\n")
    return f"<!-- wikimem:begin {name} sha256={_digest(content)} -->\n{content}\n<!-- wikimem:end {name} -->\n"


@dataclass(frozen=True)
class Section:
    start: int  # offset of the begin marker
    end: int  # offset just past the end marker's line
    content: str  # what lies between the markers
    recorded: str | None  # the hash the begin marker records

    @property
    def edited(self) -> bool:
        """Changed since wikimem wrote it (or of unknown origin: no hash recorded)."""
        return self.recorded is None or _digest(self.content) != self.recorded


def find(body: str, name: str) -> Section | None:
    """The first section ``name`` of ``body`` with both markers, or None."""
    for begin in _BEGIN.finditer(body):
        if begin.group("name") != name:
            continue
        end_marker = re.compile(rf"^<!-- wikimem:end {re.escape(name)} -->[ \t]*$\n?", re.MULTILINE)
        end = end_marker.search(body, begin.end())
        if end is None:
            return None
        content = body[begin.end():end.start()].strip("\n")
        return Section(begin.start(), end.end(), content, begin.group("sha"))
    return None


def replace(body: str, name: str, content: str, legacy: tuple[int, int] | None = None) -> tuple[str, str | None]:
    """``body`` with section ``name`` holding ``content``, and a notice when a person's edit made
    wikimem write beside it instead of over it. ``legacy``: the span of a section an older version
    generated without markers (replaced as if marked); with neither, the section is appended."""
    fresh = render(name, content)
    found = find(body, name)
    if found is not None and not found.edited:
        return body[:found.start] + fresh + body[found.end:], None
    if found is not None:  # a person edited inside it: their text stays, unmarked, below the new one
        kept = found.content + "\n"
        return (body[:found.start] + fresh + "\n" + kept + body[found.end:],
                f"the generated {name} had been edited by hand; kept that text and wrote the new {name} above it")
    if legacy is not None:
        start, end = legacy
        rest = body[end:]
        return body[:start] + fresh + ("\n" + rest.lstrip("\n") if rest.strip() else ""), None
    return body.rstrip("\n") + ("\n\n" if body.strip() else "") + fresh, None
