"""Writing a compiled section into its page, through the one writer door.

An existing page keeps every byte but its marked ``compiled`` section and two frontmatter keys:
``sources`` (the person's entries stay, first; the entries the last section recorded give way to the
new section's) and ``updated`` (only when something changed: compiling twice writes nothing). A
section a person edited is kept as their text and the new one written above it, with a notice
(parse/generated.py). A new page gets SCHEMA.md's shape for its type (folder, Title-Case name,
``type``, ``sources``, ``created``), an index.md line and, as every write, a log.md line.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..parse import frontmatter as fm
from ..parse import generated
from .extract import SECTION

_LINK = re.compile(r"\[\[[^\]]+\]\]")


@dataclass(frozen=True)
class Composed:
    text: str | None  # None: nothing changes
    notice: str | None = None


def today() -> str:
    return _dt.date.today().isoformat()


def new_page(title: str, kind: str, content: str, entries: list[str], aliases: tuple[str, ...] = ()) -> str:
    front: dict[str, Any] = {"title": title, "type": kind, "created": _dt.date.today(), "updated": _dt.date.today(),
                             "sources": entries, "generated_by": "wikimem"}
    if aliases:  # an acronym the sources define it by (names.py): Obsidian resolves [[TSC]] to this page
        front["aliases"] = list(aliases)
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{head}---\n# {title}\n\n" + generated.render(SECTION, content)


def _owned(old: list, body: str) -> set[str]:
    """The hashed ``sources`` entries of the section's citations (the one about to be replaced, or the
    edited one kept beside the new): the compile's to replace. A person's entries stay."""
    found = generated.find(body, SECTION)
    if found is None:
        return set()
    cited = set(_LINK.findall(found.content))
    return {str(e) for e in old if isinstance(e, str) and " sha256:" in e
            and e.split(" sha256:", 1)[0].strip() in cited}


def update_page(text: str, content: str, entries: list[str]) -> Composed:
    """``text`` (a page's LF text) with its compiled section holding ``content``."""
    front, body = fm.parse(text.replace("\r\n", "\n"))
    if front.error:
        return Composed(None, f"frontmatter unreadable ({front.error}); not compiled")
    if generated.find(body, SECTION) is None and f"wikimem:begin {SECTION}" not in body \
            and f"wikimem:end {SECTION}" not in body:  # never compiled: the section goes below the person's text
        new_body, kept = body.rstrip("\n") + "\n\n" + generated.render(SECTION, content), None
    else:
        new_body, kept = generated.replace(body, SECTION, content)
    old = front.data.get("sources")
    if old is not None and not isinstance(old, (list, str)):  # a person's mapping ({book: ..., url: ...})
        return Composed(None, f"its sources is a {type(old).__name__}, not a list; not compiled (make it a list "
                              "and compile adds its citations beside yours)")  # was replaced, and lost
    old_list = old if isinstance(old, list) else ([old] if isinstance(old, str) else [])
    owned = _owned(old_list, body)
    merged = [e for e in old_list if str(e) not in owned and str(e) not in entries] + entries
    if new_body == body and merged == old_list:
        return Composed(None)
    changes: dict[str, Any] = {"sources": merged, "updated": _dt.date.today()}
    raw = fm.update(front.raw, front.data, changes)
    return Composed(fm.compose(raw, new_body), kept)
