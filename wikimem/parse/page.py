"""Note text -> Page: frontmatter, structure, and the fields the vault contract defines."""
from __future__ import annotations

import re
from typing import Any, Iterable

from ..model import FOLDER_TYPES, PAGE_TYPES, Frontmatter, Link, Page, Tag
from . import frontmatter as fm
from .markdown import analyse, parse_wikilink

_FM_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
STATUSES = ("active", "superseded", "draft")


def default_type(path: str) -> str:
    top = path.split("/", 1)[0] if "/" in path else ""
    return FOLDER_TYPES.get(top, "note")


def stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def _frontmatter_links(data: dict[str, Any], line: int) -> list[Link]:
    links: list[Link] = []

    def visit(key: str, value: Any) -> None:
        if isinstance(value, str):
            for m in _FM_LINK.finditer(value):
                link = parse_wikilink(m.group(1), "frontmatter", line)
                links.append(Link(target=link.target, kind="frontmatter", line=None, display=link.display,
                                  heading=link.heading, block=link.block, key=key))
        elif isinstance(value, list):
            for v in value:
                visit(key, v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(key, v)

    for key, value in data.items():
        visit(str(key), value)
    return links


def _tag_names(value: Any) -> Iterable[str]:
    for item in fm.as_list(value):
        for part in item.replace(",", " ").split():
            name = part.lstrip("#").strip().lower()
            if name and not name.replace("/", "").isdigit():
                yield name


def _date(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def parse_page(path: str, text: str, sha256: str = "") -> Page:
    """Parse a note's decoded text (any line endings) into a Page. Never raises on bad content:
    problems are recorded in ``Page.errors`` (and the frontmatter's ``error``)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    front, body = fm.parse(text)
    data = dict(front.data)
    errors: list[str] = [front.error] if front.error else []
    structure = analyse(body, front.end_line)

    links = list(structure.links) + _frontmatter_links(data, 0)
    tags = list(structure.tags)
    tags.extend(Tag(name, None, "frontmatter") for name in _tag_names(data.get("tags")))

    page_type = str(data.get("type") or default_type(path)).strip().lower()
    if page_type not in PAGE_TYPES:
        errors.append(f"unknown type {page_type!r} (expected one of {', '.join(PAGE_TYPES)})")
    status = str(data.get("status") or "active").strip().lower()
    supersedes = tuple(link.target for link in links if link.kind == "frontmatter" and link.key == "supersedes")
    if not supersedes and data.get("supersedes"):
        supersedes = tuple(s.strip("[]") for s in fm.as_list(data.get("supersedes")))

    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        h1 = next((h for h in structure.headings if h.level == 1), None)
        title = h1.text if h1 else stem(path)
    aliases = tuple(a for a in fm.as_list(data.get("aliases") or data.get("alias")) if a)

    return Page(
        path=path,
        title=title.strip(),
        type=page_type,
        frontmatter=Frontmatter(raw=front.raw, data=data, error=front.error, end_line=front.end_line),
        body=body,
        body_line=front.end_line,
        headings=structure.headings,
        links=tuple(links),
        tags=tuple(tags),
        blocks=structure.blocks,
        spans=structure.spans,
        aliases=aliases,
        status=status,
        supersedes=supersedes,
        created=_date(data.get("created") or data.get("date")),
        updated=_date(data.get("updated") or data.get("modified") or data.get("created") or data.get("date")),
        errors=tuple(errors),
        sha256=sha256,
    )


def page_to_dict(page: Page) -> dict[str, Any]:
    """A JSON-ready view (used by golden tests and ``--json`` output)."""
    return {
        "path": page.path,
        "title": page.title,
        "type": page.type,
        "status": page.status,
        "frontmatter": dict(page.frontmatter.data),
        "frontmatter_error": page.frontmatter.error,
        "headings": [[h.level, h.text, h.line] for h in page.headings],
        "links": [
            {k: v for k, v in {
                "target": l.target, "kind": l.kind, "line": l.line, "display": l.display,
                "heading": list(l.heading) or None, "block": l.block, "key": l.key,
                "resolved": l.resolved, "candidates": list(l.candidates) or None, "anchor_ok": l.anchor_ok,
            }.items() if v is not None}
            for l in page.links
        ],
        "tags": sorted({t.name for t in page.tags}),
        "blocks": [[b.id, b.line] for b in page.blocks],
        "aliases": list(page.aliases),
        "supersedes": list(page.supersedes),
        "errors": list(page.errors),
    }
