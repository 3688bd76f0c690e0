"""Page reads for agents: one page (or one heading's section) with its frontmatter, backlinks and
supersede chain; paged listings by folder/type/tag; the vault's taxonomy with counts.

A page's text and sha256 are read from disk at call time (the sha256 is what a later
``write_page(expected_sha256=...)`` is checked against). Backlinks, listings and counts come from
the cache's manifest (its named questions over ``files`` and ``edges``), so they are as fresh as the
last build.
"""
from __future__ import annotations

import json
import logging
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..errors import NoteReadError, UsageError
from ..stores.failures import driver_errors
from ..knowledge.names import refuse_unreadable
from ..parse import parse_page
from ..vault.files import rel_parts

if TYPE_CHECKING:
    from ..stores.manifest import Manifest

log = logging.getLogger(__name__)

EXCERPT_CHARS = 300
MAX_BACKLINKS = 200
MAX_LIST = 500
MAX_OFFSET = 10**9  # far past any vault; SQLite takes 64-bit integers only
LINK_EDGES = ("links_to", "embeds")


def _link_target(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def wikilink(path: str, clashes: frozenset[str] = frozenset()) -> str:
    """The link an agent should write to reach ``path``: Obsidian's default (the file name, no
    ``.md``), or the path when another note has the same name (``clashes``: ``name_clashes``), for
    ``[[Dup]]`` would reach the other one."""
    name = _link_target(path.rsplit("/", 1)[-1])
    return f"[[{_link_target(path) if name.casefold() in clashes else name}]]"


def name_clashes(ctx) -> frozenset[str]:
    """Note names (casefolded, no ``.md``) that more than one note has; kept until the file set
    changes (the manifest's links token)."""
    found = manifest(ctx)
    if found is None:
        return frozenset()
    token = found.meta().get("links_token")
    kept = ctx.cache.runtime.kept("name_clashes", token)
    if kept is None:
        counts = Counter(_link_target(p.rsplit("/", 1)[-1]).casefold() for p in found.note_paths())
        kept = frozenset(n for n, c in counts.items() if c > 1)
        ctx.cache.runtime.keep("name_clashes", token, kept)
    return kept


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut at a word boundary near ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def manifest(ctx) -> "Manifest | None":
    """The cache's manifest, or None when there is no usable cache yet."""
    try:
        if ctx.cache.manifest_problem() is not None:
            return None
        return ctx.cache.manifest
    except (*driver_errors(), OSError) as exc:
        log.warning("cache unavailable: %s", exc)
        return None


def note_path(ctx, rel: str) -> str:
    """``rel`` as given, or with ``.md`` added when only that exists (agents often drop it).
    The path is checked to stay inside the vault either way."""
    rel = rel.strip().replace("\\", "/")
    ctx.files.abspath(rel)  # PathEscapeError for "..", absolute paths and symlinks out, as given
    rel = "/".join(rel_parts(rel))  # "./raw/x.md" is raw/x.md: one page, one type
    full = ctx.files.abspath(rel)
    if not full.exists() and not rel.lower().endswith(".md") and ctx.files.abspath(rel + ".md").exists():
        return rel + ".md"
    return rel


def existing_page(ctx, name: str, must_exist: bool = False) -> str:
    """The page ``name`` names, as the CLI's page arguments read it (a path with or without .md, a
    file name, a title or an alias: versions.find_named), for arguments naming a page that must
    exist (read, edit, move, delete). A path that exists, or a name nothing resolves, is returned
    as given (after note_path), so the caller's own errors still speak of it."""
    rel = note_path(ctx, name)
    if ctx.files.abspath(rel).exists():
        return rel
    from ..errors import PageNotFoundError
    from ..knowledge.versions import all_pages, find_named
    try:
        return find_named(ctx, all_pages(ctx), name)
    except PageNotFoundError:
        if must_exist and not ctx.files.abspath(rel).exists():
            raise  # "page not found: 'gzp' (did you mean 'gzip'? ...)", not "gzp: not a note"
        return rel


# -- one page ---------------------------------------------------------------------------------
def _section(lines: list[str], headings, wanted: str) -> tuple[str, list[str]]:
    """The lines under the heading ``wanted`` ("Heading" or a path "H1#H2" / "H1 > H2"), down to
    the next heading of the same or a higher level."""
    start, end, chain = section_span(lines, headings, wanted)
    return "\n".join(lines[start:end]).rstrip("\n") + "\n", chain


def section_span(lines: list[str], headings, wanted: str) -> tuple[int, int, list[str]]:
    """(the heading's line, the line after its section, the heading path) of ``wanted``."""
    exact = wanted.strip().lower()
    if exact and any(h.text.strip().lower() == exact for h in headings):
        parts = [exact]  # a heading's own text first: "C# and F#", "Input -> Output"
    else:
        parts = [p.strip().lstrip("#").strip().lower() for p in re.split(r"#|>", wanted) if p.strip()]
    if not parts:  # empty, or only separators ("#", "> #")
        raise UsageError("empty heading")
    chain: list = []  # ancestors of each heading, in order
    for i, h in enumerate(headings):
        while chain and chain[-1].level >= h.level:
            chain.pop()
        path = [a.text.strip().lower() for a in chain] + [h.text.strip().lower()]
        chain.append(h)
        it = iter(path)
        if path[-1] == parts[-1] and all(p in it for p in parts[:-1]):
            end = next((n.line for n in headings[i + 1:] if n.level <= h.level), len(lines))
            return h.line, end, [a.text for a in chain]
    available = ", ".join(h.text for h in headings) or "the page has no headings"
    raise UsageError(f"no heading {wanted!r} in this page (headings: {available})")


def _supersede_chain(found: "Manifest", path: str) -> dict[str, list[str]]:
    def walk(newer: bool) -> list[str]:
        seen, out, current = {path}, [], path
        while True:
            step = found.supersede_step(current, newer)
            if step is None or step in seen:
                return out
            current = step
            seen.add(current)
            out.append(current)
    older = walk(newer=False)
    newer = walk(newer=True)
    return {"supersedes": older, "superseded_by": newer, "current": newer[-1] if newer else path}


def _backlinks(found: "Manifest", path: str, clashes: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], int]:
    rows = found.backlinks(path, LINK_EDGES)
    return [{"path": src, "title": title or src, "wikilink": wikilink(src, clashes)} for src, title in rows[:MAX_BACKLINKS]], len(rows)


def read_page(ctx, rel: str, heading: str | None = None) -> dict[str, Any]:
    """One page as an agent needs it: text (or one section), frontmatter, sha256, backlinks and
    the supersede chain. ``rel``: a path, or a file name, title or alias (``existing_page``)."""
    rel = existing_page(ctx, rel, must_exist=True)
    refuse_unreadable(ctx, rel)  # reads follow the writes' rules: notes only, no dot folders, nothing ignored
    note = ctx.files.read_note(rel)
    page = parse_page(rel, note.text, note.sha256)
    text = note.text.replace("\r\n", "\n")
    lines = text.split("\n")
    section_path: list[str] = []
    if heading:
        content, section_path = _section(lines, page.headings, heading)
    else:
        content = text
    data: dict[str, Any] = {
        "path": rel, "title": page.title, "type": page.type, "status": page.status,
        "wikilink": wikilink(rel, name_clashes(ctx)),
        "sha256": note.sha256, "frontmatter": json.loads(json.dumps(dict(page.frontmatter.data), default=str)),
        "frontmatter_error": page.frontmatter.error, "tags": list(page.tag_names),
        "headings": [{"level": h.level, "text": h.text} for h in page.headings],
        "heading": section_path or None, "content": content,
    }
    found = manifest(ctx)
    if found is None:
        data.update(backlinks=None, backlinks_total=None, versions=None,
                    notice="no cache yet: backlinks and versions need `wikimem index`")
        return data
    data["backlinks"], data["backlinks_total"] = _backlinks(found, rel, name_clashes(ctx))
    data["versions"] = _supersede_chain(found, rel)
    return data


# -- listings ---------------------------------------------------------------------------------
def _rows(ctx) -> list[tuple[str, str, str, str, list[str]]]:
    """(path, title, type, status, tags) of every note, from the manifest, else from a scan."""
    found = manifest(ctx)
    if found is not None:
        return [(p, t or p, ty or "note", st or "active", json.loads(tags or "[]"))
                for p, t, ty, st, tags in found.pages_by_path()]
    out = []
    for path, page in sorted(ctx.load().pages.items()):
        out.append((path, page.title, page.type, page.status, list(page.tag_names)))
    return out


def list_pages(ctx, folder: str | None = None, type: str | None = None, tag: str | None = None,
               offset: int = 0, limit: int = 50) -> dict[str, Any]:
    """Notes under ``folder`` / of ``type`` / carrying ``tag`` (or a tag nested under it), sorted
    by path, ``limit`` of them from ``offset``."""
    if offset < 0 or limit < 1:
        raise UsageError("offset must be >= 0 and limit >= 1")
    if offset > MAX_OFFSET:
        raise UsageError(f"offset must be at most {MAX_OFFSET}")
    limit = min(limit, MAX_LIST)
    prefix = folder.strip().strip("/").replace("\\", "/") + "/" if folder and folder.strip("/ ") else ""
    if prefix:
        ctx.files.abspath(prefix.rstrip("/"))  # refuses a folder outside the vault
    want_tag = tag.strip().lstrip("#").lower() if tag else None
    if tag is not None and not want_tag:
        raise UsageError(f"tag {tag!r} has no name (write it as #name or name)")
    found = manifest(ctx)
    if found is not None:
        total, listed = found.page_listing(prefix, type, want_tag, offset, limit)
        rows = [(p, t or p, ty or "note", st or "active", json.loads(tags or "[]")) for p, t, ty, st, tags in listed]
    else:
        matching = [r for r in _rows(ctx)
                    if (not prefix or r[0].startswith(prefix)) and (not type or r[2] == type)
                    and (not want_tag or want_tag in r[4] or any(t.startswith(want_tag + "/") for t in r[4]))]
        total, rows = len(matching), matching[offset:offset + limit]
    clashes = name_clashes(ctx)
    return {
        "total": total, "offset": offset, "limit": limit,
        "next_offset": offset + limit if offset + limit < total else None,
        "pages": [{"path": p, "title": t, "type": ty, "status": st, "tags": tags, "wikilink": wikilink(p, clashes)}
                  for p, t, ty, st, tags in rows],
    }


def taxonomy(ctx) -> dict[str, Any]:
    """Folders, page types and tags with their note counts, and the SCHEMA.md summary."""
    rows = _rows(ctx)
    folders: Counter[str] = Counter()
    for path, *_ in rows:
        parts = path.split("/")[:-1]
        for depth in range(1, min(len(parts), 2) + 1):
            folders["/".join(parts[:depth])] += 1
        if not parts:
            folders["."] += 1
    types = Counter(r[2] for r in rows)
    statuses = Counter(r[3] for r in rows)
    tags = Counter(t for r in rows for t in r[4])
    try:
        schema = ctx.schema()
        summary: dict[str, Any] = schema.to_dict()
        summary["errors"] = list(schema.errors)
    except (NoteReadError, OSError) as exc:
        summary = {"error": str(exc)}
    return {
        "notes": len(rows),
        "folders": dict(sorted(folders.items())),
        "types": dict(sorted(types.items())),
        "statuses": dict(sorted(statuses.items())),
        "tags": dict(sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))),
        "schema": summary,
    }
