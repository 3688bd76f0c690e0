"""The query's operators (query_syntax.py) applied to a search: page conditions as the pages they
admit, text conditions as a check on each hit's chunk, and the listing of a query that has only
conditions (no ranked text), most recent first.

What they read of the vault they ask the manifest (``stores/manifest_search.py``): each note's
facts (``note_facts``) and each page's dates under a filter (``page_recency``).
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

from ..model import Chunk
from .query_syntax import PageFacts, ParsedQuery
from .tuning import MAX_SQL_PATHS


def page_facts(manifest, properties: bool) -> list[PageFacts]:
    """Every note's facts as ``page_matches`` reads them (the frontmatter only when ``properties``)."""
    out = []
    for path, title, tags, data in manifest.note_facts(properties):
        try:
            names = tuple(t for t in json.loads(tags or "[]") if isinstance(t, str))
        except ValueError:
            names = ()
        try:
            fm = json.loads(data) if data else {}
        except ValueError:
            fm = {}
        out.append(PageFacts(path, title or "", names, fm if isinstance(fm, dict) else {}))
    return out


def page_filter(manifest, parsed: ParsedQuery) -> tuple[dict[str, Any], Callable[[str], bool] | None]:
    """The page conditions as filter fields (``pages`` or ``not_pages``, whichever list is shorter,
    when it fits in SQL) or, for a vault too large for either, a check on each candidate's page."""
    if not parsed.on_pages:
        return {}, None
    facts = page_facts(manifest, parsed.needs_properties)
    admitted = {f.path for f in facts if parsed.page_matches(f)}
    return _as_filter(admitted, {f.path for f in facts} - admitted)


def _as_filter(admitted: set[str], ruled_out: set[str]) -> tuple[dict[str, Any], Callable[[str], bool] | None]:
    """``pages`` or ``not_pages``, whichever list is shorter, when it fits in SQL; else a check."""
    if len(admitted) <= MAX_SQL_PATHS and len(admitted) <= len(ruled_out):
        return {"pages": frozenset(admitted)}, None
    if len(ruled_out) <= MAX_SQL_PATHS:
        return {"not_pages": frozenset(ruled_out)}, None
    return {}, admitted.__contains__


def valid_only(more: dict[str, Any], page_ok: Callable[[str], bool] | None, valid: set[str],
               every: set[str]) -> tuple[dict[str, Any], Callable[[str], bool] | None]:
    """The page conditions (``page_filter``'s answer) narrowed to the pages valid at an as-of
    moment (``valid``, out of ``every`` note)."""
    if page_ok is not None:
        return more, lambda path: path in valid and page_ok(path)
    if "pages" in more:
        admitted = set(more["pages"]) & valid
    elif "not_pages" in more:
        admitted = valid - set(more["not_pages"])
    else:
        admitted = set(valid)
    return _as_filter(admitted, every - admitted)


def text_check(parsed: ParsedQuery, manifest=None) -> Callable[[Chunk], bool] | None:
    """The text conditions as a check on a chunk (its heading path counts as one more line); a lone
    ``-word`` is checked against the chunk's whole note (read from ``manifest``, once a note), as
    Obsidian leaves out every note holding the word, not only the chunks that do."""
    if not parsed.on_text:
        return None
    if manifest is None or not parsed.has_excludes:
        return lambda chunk: parsed.text_matches(chunk.text, heading=" > ".join(chunk.heading_path))
    excluded: dict[str, bool] = {}

    def note_out(chunk: Chunk) -> bool:
        if chunk.path not in excluded:
            body = manifest.page_body(chunk.path)
            excluded[chunk.path] = parsed.note_excluded(body if body is not None else chunk.text, chunk.title or "")
        return excluded[chunk.path]

    return lambda chunk: (parsed.text_matches(chunk.text, heading=" > ".join(chunk.heading_path), excludes=False)
                          and not note_out(chunk))


def recent_pages(manifest, filters) -> list[tuple[str, str]]:
    """(path, recency) of every page with a chunk passing ``filters``, newest first: recency is the
    page's ``updated``, else ``created``, else its date (a transcript's), else its file's mtime
    (as an ISO time); ties by path."""
    out = []
    for path, day, mtime_ns in manifest.page_recency(filters):
        when = str(day) if day else dt.datetime.fromtimestamp((mtime_ns or 0) / 1e9, dt.timezone.utc) \
            .strftime("%Y-%m-%dT%H:%M:%S")
        out.append((path, when, mtime_ns or 0))
    out.sort(key=lambda r: r[0])
    out.sort(key=lambda r: (r[1], r[2]), reverse=True)
    return [(path, when) for path, when, _ in out]

