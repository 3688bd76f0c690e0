"""Sections wikimem generates inside pages people also edit (query answers, communities.md).

wikimem owns only what it generated and marked; a person's lines around it survive every later
write. A generated section sits between two HTML comments (hidden in Obsidian's reading view):

    <!-- wikimem:begin answer sha256=1f2e3d4c5b6a -->
    ...what wikimem wrote...
    <!-- wikimem:end answer -->

The begin marker records the hash of what wikimem wrote. A later write replaces the section only
while it still holds exactly that; a section a person edited is kept as their text (its markers
removed) and the new section is written just above it, so nothing anyone wrote is lost.

What counts as a section is strict, because everything else is a person's text:
- marker lines count only outside code (fenced or indented blocks, as the Markdown parser sees
  them): markers a person quotes in a code block are their text;
- a section is *intact* when its begin line is followed by its end line with no other marker of
  the same name between them (a lone, doubled or nested marker is not a section);
- of several intact sections of one name (a person pasted a copy), the live one is the one whose
  content still matches its recorded hash; when none does, the first is the one a person edited.
A page with no intact section gets the new one written beside what is there (``replace``), never
over it.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_MARKER = re.compile(r"^<!-- wikimem:(?P<kind>begin|end) (?P<name>[\w-]+)(?: sha256=(?P<sha>[0-9a-f]+))? -->[ \t]*$",
                     re.MULTILINE)
HASH_CHARS = 12


def _digest(content: str) -> str:
    normal = "\n".join(line.rstrip() for line in content.replace("\r\n", "\n").strip("\n").split("\n"))
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:HASH_CHARS]


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _close_fences(content: str) -> str:
    """``content`` with a code fence it leaves open closed: an open fence runs to the end of the
    page, so the end marker (and everything a person wrote below) would be code, the section no
    longer intact, and the next write would have to keep it and write another (an answer quoting
    half a code block did). Only fences at the top level matter: a list item or a quote ends at the
    marker line, and its fence with it."""
    fence = None
    for line in content.split("\n"):
        m = _FENCE_LINE.match(line)
        if not m:
            continue
        if fence is None:
            if not (m.group(1)[0] == "`" and "`" in m.group(2)):  # a backtick fence's info has no backtick
                fence = m.group(1)
        elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
            fence = None
    return f"{content}\n{fence}" if fence else content


def render(name: str, content: str) -> str:
    """``content`` as a marked section named ``name`` (ends with a newline); a code fence it leaves
    open is closed."""
    content = _close_fences(content.strip("\n"))
    return f"<!-- wikimem:begin {name} sha256={_digest(content)} -->\n{content}\n<!-- wikimem:end {name} -->\n"


@dataclass(frozen=True)
class Section:
    start: int  # offset of the begin marker
    end: int  # offset just past the end marker's line
    content: str  # what lies between the markers
    recorded: str | None  # the hash the begin marker records

    @property
    def edited(self) -> bool:
        """Changed since wikimem wrote it, or of unknown origin (no hash recorded) unless empty: an
        empty pair of markers a person placed says where the section goes and holds nothing to keep."""
        if self.recorded is None:
            return bool(self.content.strip())
        return _digest(self.content) != self.recorded


def _code_lines(body: str) -> list[tuple[int, int]]:
    """0-based [start, end) line ranges of the body's code blocks (fenced or indented, at any depth:
    inside a list or a quote too), from the same Markdown parser the links come from."""
    if "```" not in body and "~~~" not in body and "    " not in body and "\t" not in body:
        return []
    from .markdown import markdown

    return [tuple(tok.map) for tok in markdown().parse(body) if tok.type in ("fence", "code_block") and tok.map]


def _markers(body: str):
    """The marker lines of ``body`` outside code, in order."""
    found = list(_MARKER.finditer(body))
    if not found:
        return []
    code = _code_lines(body)
    if not code:
        return found
    out = []
    for m in found:
        line = body.count("\n", 0, m.start())
        if not any(start <= line < end for start, end in code):
            out.append(m)
    return out


def sections(body: str, name: str) -> list[Section]:
    """Every intact section ``name`` of ``body``, in order."""
    mine = [m for m in _markers(body) if m.group("name") == name]
    out = []
    for begin, end in zip(mine, mine[1:]):
        if begin.group("kind") == "begin" and end.group("kind") == "end":
            stop = end.end() + (1 if body[end.end():end.end() + 1] == "\n" else 0)
            out.append(Section(begin.start(), stop, body[begin.end():end.start()].strip("\n"), begin.group("sha")))
    return out


def find(body: str, name: str) -> Section | None:
    """The live section ``name`` of ``body``: the intact one that still holds what wikimem wrote
    (the last such, when a person pasted an exact copy), else the first intact one (edited), else None."""
    found = sections(body, name)
    unedited = [s for s in found if not s.edited]
    if unedited:
        return unedited[-1]
    return found[0] if found else None


def _after_title(body: str) -> int:
    """Where a section written beside a person's text goes: just below the page's first line when
    that is a ``# `` title (after leading blank lines), else at the top."""
    i = len(body) - len(body.lstrip("\n"))
    if body.startswith("# ", i):
        stop = body.find("\n", i)
        return len(body) if stop < 0 else stop + 1
    return 0


def replace(body: str, name: str, content: str) -> tuple[str, str | None]:
    """``body`` with section ``name`` holding ``content``, and a notice when a person's edit made
    wikimem write beside their text instead of over it: a section they edited stays, unmarked,
    below the new one; a page with no intact section (markers removed, changed, only inside code)
    keeps all its lines and gets the new section below its title."""
    fresh = render(name, content)
    found = find(body, name)
    if found is not None and not found.edited:
        return body[:found.start] + fresh + body[found.end:], None
    if found is not None:  # a person edited inside it: their text stays, unmarked, below the new one
        kept = found.content + "\n"
        return (body[:found.start] + fresh + "\n" + kept + body[found.end:],
                f"its {name} section had been edited by hand; kept that text and wrote the new {name} section above it")
    if not body.strip():
        return fresh, None
    at = _after_title(body)
    head, rest = body[:at], body[at:]
    gap = "\n" if head and not head.endswith("\n\n") else ""
    notice = (f"the page has no intact generated {name} section (its markers were removed or changed by hand); "
              f"kept every line of it and wrote the new {name} above them")
    return head + gap + fresh + "\n" + rest.lstrip("\n"), notice


def refresh_hashes(before: str, after: str) -> str:
    """``after`` (``before`` with some text rewritten, e.g. links renamed by a page move) with the
    recorded hash of each section that was live in ``before`` (intact, unedited) recomputed, so a
    section wikimem still owns stays owned after a change that was not a person's. A section a
    person had already edited in ``before`` keeps its old hash (it stays theirs). Sections are
    matched by name and order; when the two texts disagree on a name's sections, that name is left
    as it is."""
    names = {m.group("name") for m in _markers(after)}
    out = after
    for name in sorted(names):
        old, new = sections(before, name), sections(out, name)
        if len(old) != len(new):
            continue
        for was, now in reversed(list(zip(old, new))):  # from the end: offsets before it stay valid
            if was.edited:
                continue
            line_end = out.index("\n", now.start) if "\n" in out[now.start:] else len(out)
            marker = f"<!-- wikimem:begin {name} sha256={_digest(now.content)} -->"
            out = out[:now.start] + marker + out[line_end:]
    return out
