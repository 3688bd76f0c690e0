"""The query's operators (query_syntax.py) applied to a search: page conditions as the pages they
admit, text conditions as a check on each hit's chunk, and the listing of a query that has only
conditions (no ranked text), most recent first.

The SQL here reads the manifest's ``files`` and ``chunks`` tables; it belongs with the manifest's
other reads (index/manifest.py) once that module's move is done: ``page_facts`` (path, title, tags,
frontmatter of every note) and ``recent_pages`` (each page's date and mtime under a filter).
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

from ..model import Chunk
from .query_syntax import PageFacts, ParsedQuery
from .tuning import MAX_SQL_PATHS


def page_facts(db, properties: bool) -> list[PageFacts]:
    """Every note's facts as ``page_matches`` reads them (the frontmatter only when ``properties``)."""
    front = "json_extract(page, '$.frontmatter.data')" if properties else "NULL"
    out = []
    for path, title, tags, data in db.execute(f"SELECT path, title, tags, {front} FROM files WHERE note=1"):
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


def page_filter(db, parsed: ParsedQuery) -> tuple[dict[str, Any], Callable[[str], bool] | None]:
    """The page conditions as filter fields (``pages`` or ``not_pages``, whichever list is shorter,
    when it fits in SQL) or, for a vault too large for either, a check on each candidate's page."""
    if not parsed.on_pages:
        return {}, None
    facts = page_facts(db, parsed.needs_properties)
    admitted = {f.path for f in facts if parsed.page_matches(f)}
    ruled_out = {f.path for f in facts} - admitted
    if len(admitted) <= MAX_SQL_PATHS and len(admitted) <= len(ruled_out):
        return {"pages": frozenset(admitted)}, None
    if len(ruled_out) <= MAX_SQL_PATHS:
        return {"not_pages": frozenset(ruled_out)}, None
    return {}, admitted.__contains__


def text_check(parsed: ParsedQuery) -> Callable[[Chunk], bool] | None:
    """The text conditions as a check on a chunk (its heading path counts as one more line)."""
    if not parsed.on_text:
        return None
    return lambda chunk: parsed.text_matches(chunk.text, heading=" > ".join(chunk.heading_path))


def recent_pages(db, where: str, args) -> list[tuple[str, str]]:
    """(path, recency) of every page with a chunk passing ``where``, newest first: recency is the
    page's ``updated``, else ``created``, else its date (a transcript's), else its file's mtime
    (as an ISO time); ties by path."""
    rows = db.execute(
        "SELECT c.path, max(coalesce(c.updated, c.created, c.date, '')), f.mtime_ns FROM chunks c "
        f"JOIN files f ON f.path = c.path WHERE 1=1 {where} GROUP BY c.path", list(args)).fetchall()
    out = []
    for path, day, mtime_ns in rows:
        when = str(day) if day else dt.datetime.fromtimestamp((mtime_ns or 0) / 1e9, dt.timezone.utc) \
            .strftime("%Y-%m-%dT%H:%M:%S")
        out.append((path, when, mtime_ns or 0))
    out.sort(key=lambda r: r[0])
    out.sort(key=lambda r: (r[1], r[2]), reverse=True)
    return [(path, when) for path, when, _ in out]


def page_chunk_ids(db, path: str, where: str, args) -> list[str]:
    """The ids of a page's chunks that pass ``where``, in page order."""
    return [r[0] for r in db.execute(f"SELECT c.id FROM chunks c WHERE c.path = ? {where} ORDER BY c.ord",
                                     [path, *args])]


def page_body(db, path: str) -> str | None:
    row = db.execute("SELECT json_extract(page, '$.body') FROM files WHERE path = ?", (path,)).fetchone()
    return row[0] if row and isinstance(row[0], str) else None
