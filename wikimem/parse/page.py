"""Note text -> Page: frontmatter, structure, and the fields the vault contract defines."""
from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any, Iterable

from ..model import FOLDER_TYPES, PAGE_TYPES, Frontmatter, Link, Page, Tag
from . import frontmatter as fm
from .markdown import analyse, parse_wikilink

_FM_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
STATUSES = ("active", "superseded", "draft")
DATE_KEYS = ("created", "date", "updated", "modified")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][0-9:.+\-Z ]*)?$")


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


MAX_CHUNK_TURNS = 1000  # chunk_window / chunk_stride above this are a typo, not a wish


def _scalar_text(value: Any) -> str | None:
    """A scalar frontmatter value as text (numbers count: ``aliases: [2024]``); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)) or (isinstance(value, float) and math.isfinite(value)):
        return str(value).strip()
    return None


def _text_list(key: str, value: Any, errors: list[str]) -> list[str]:
    """A string / list / comma-string field -> its strings; anything else (maps, nested lists,
    booleans) is reported and left out."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return fm.as_list(value)
    items = value if isinstance(value, list) else [value]
    good: list[str] = []
    bad = 0
    for item in items:
        if isinstance(item, list) and len(item) == 1 and isinstance(item[0], str):
            item = f"[[{item[0]}]]"  # an unquoted [[Link]] in YAML is a list in a list
        text = _scalar_text(item)
        if text is None:
            bad += item is not None
        elif text:
            good.extend(fm.as_list(text) if isinstance(item, str) else [text])
    if bad:
        errors.append(f"{key}: {bad} value(s) that are not text were ignored (expected a list of strings)")
    return good


def _tag_names(names: Iterable[str]) -> Iterable[str]:
    for item in names:
        for part in item.replace(",", " ").split():
            name = part.lstrip("#").strip().lower()
            if name and not name.replace("/", "").isdigit():
                yield name


def valid_date(value: Any) -> str | None:
    """An ISO date or date-time (what YAML dates become once normalised), as written; None for
    anything else, including dates no calendar has (``2024-02-30``, kept as text by the loader)."""
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        return None
    try:
        _dt.date.fromisoformat(value[:10])
        if len(value) > 10:
            _dt.datetime.fromisoformat(value.replace(" ", "T", 1).replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _dates(data: dict[str, Any], errors: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key in DATE_KEYS:
        value = data.get(key)
        if value is None or value == "":
            continue
        date = valid_date(value)
        if date is None:
            errors.append(f"{key}: {_show(value)} is not a date (expected YYYY-MM-DD); ignored")
        else:
            found[key] = date
    return found


def chunk_turns(value: Any) -> int | None:
    """``chunk_window`` / ``chunk_stride`` as a positive whole number, or None (then the settings
    decide). The chunker and the page parser share this so a bad value is one reported problem."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and 1 <= value <= MAX_CHUNK_TURNS:
        return value
    return None


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _choice(key: str, value: Any, allowed: tuple[str, ...], default: str, errors: list[str]) -> str:
    if value is None or value == "":
        return default
    text = value.strip().lower() if isinstance(value, str) else None
    if text in allowed:
        return text
    errors.append(f"{key}: {_show(value)} is not one of {', '.join(allowed)}; using {default!r}")
    return default


def parse_page(path: str, text: str, sha256: str = "") -> Page:
    """Parse a note's decoded text (any line endings) into a Page. Never raises on bad content:
    problems are recorded in ``Page.errors`` (and the frontmatter's ``error``), and every field
    wikimem interprets falls back to a safe default when its value is not what it should be."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    front, body = fm.parse(text)
    data = dict(front.data)
    errors: list[str] = [front.error] if front.error else []
    structure = analyse(body, front.end_line)

    links = list(structure.links) + _frontmatter_links(data, 0)
    tags = list(structure.tags)
    tags.extend(Tag(name, None, "frontmatter") for name in _tag_names(_text_list("tags", data.get("tags"), errors)))

    page_type = _choice("type", data.get("type"), PAGE_TYPES, default_type(path), errors)
    status = _choice("status", data.get("status"), STATUSES, "active", errors)
    supersedes = tuple(link.target for link in links if link.kind == "frontmatter" and link.key == "supersedes")
    listed = _text_list("supersedes", data.get("supersedes"), errors)
    if not supersedes and listed:
        supersedes = tuple(s.strip("[]") for s in listed if s.strip("[]"))
    for key in ("chunk_window", "chunk_stride"):
        if data.get(key) is not None and chunk_turns(data[key]) is None:
            errors.append(f"{key}: {_show(data[key])} is not a whole number from 1 to {MAX_CHUNK_TURNS}; "
                          "using the settings")

    title = data.get("title")
    if title is not None and _scalar_text(title) is None:
        errors.append(f"title: {_show(title)} is not text; using the first heading or the file name")
    title = _scalar_text(title)
    if not title:
        h1 = next((h for h in structure.headings if h.level == 1), None)
        title = h1.text if h1 else stem(path)
    alias_key = "aliases" if data.get("aliases") else "alias"
    aliases = tuple(_text_list(alias_key, data.get(alias_key), errors))
    dates = _dates(data, errors)

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
        created=dates.get("created") or dates.get("date"),
        updated=dates.get("updated") or dates.get("modified") or dates.get("created") or dates.get("date"),
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
